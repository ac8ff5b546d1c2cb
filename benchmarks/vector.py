"""The vector lane and the hybrid query against exact search and numpy brute force.

Usage:
    .venv/bin/python benchmarks/vector.py --vectors 100000 [--queries 200] [--dims 512]
    .venv/bin/python benchmarks/vector.py --throughput   # ViT-B/32-shaped image encoder
    .venv/bin/python benchmarks/vector.py --smoke        # seconds: every path, tiny sizes (CI)

Builds N synthetic, clustered unit vectors (``--dims`` wide; 1,000 Gaussian
clusters, so that near neighbours are plentiful, as in a real library) as
image-lane vectors of a registered model, with an HNSW index (pgvector,
cosine, Loupe's m 16, ef_construction 128), and a search document per asset (short
Zipfian texts, for the hybrid query). Queries are perturbed cluster members.

Reports, in the same run:
* recall@10 of the HNSW lane against exact search (the same SQL with index
  scans disabled, i.e. an exact scan of the model's vectors);
* p50/p95 latency of the vector lane alone (ANN, top 200) and of the full
  hybrid statement (lexical lane + vector lane + RRF, via loupe.fusion);
* p50/p95 of the exact scan (the lane's statement, top 200, index scans off);
* p50/p95 of a numpy brute-force scan over the same vectors in memory
  (rclip's method) and the ratio;
* all of it twice: as the owner (sees everything) and as a member granted
  every other asset (real asset grants), since the permission test sits
  inside the HNSW scan (pgvector's iterative scan); the exact scan and the
  brute force are restricted to what that viewer may read.

``--throughput`` measures image-lane embedding speed of a ViT-B/32-shaped
network (random weights, as allowed for speed) exported to ONNX in Immich's
layout and run through Loupe's own ClipOnnx embedder, in images/s on this CPU.
"""

from __future__ import annotations

import argparse
import atexit
import math
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def pct(values, p):
    values = sorted(values)
    return values[max(0, min(len(values) - 1, math.ceil(p / 100 * len(values)) - 1))]


def clustered(n: int, dims: int, rng: np.random.Generator, n_clusters: int = 1000,
              spread: str = "low-rank"):
    """Unit vectors around ``n_clusters`` random centres.

    ``low-rank`` (default): each cluster varies along its own 32 random
    directions (plus a little isotropic noise), as embedding spaces do — their
    intrinsic dimension is far below their width. ``isotropic``: Gaussian
    noise in all ``dims`` directions, a worst case where every cluster member
    is nearly equidistant and approximate search is hardest.
    """
    centres = rng.standard_normal((n_clusters, dims)).astype(np.float32)
    labels = rng.integers(0, n_clusters, n)
    if spread == "isotropic":
        x = centres[labels] + 0.35 * rng.standard_normal((n, dims)).astype(np.float32)
    else:
        bases = rng.standard_normal((n_clusters, 32, dims)).astype(np.float32)
        x = np.empty((n, dims), dtype=np.float32)
        for s in range(0, n, 20_000):  # in chunks: bases[labels] is 64 KiB a vector
            lab = labels[s:s + 20_000]
            coef = rng.standard_normal((len(lab), 32)).astype(np.float32)
            x[s:s + len(lab)] = (centres[lab] + 0.6 * np.einsum("nk,nkd->nd", coef, bases[lab])
                                 / np.sqrt(32)
                                 + 0.05 * rng.standard_normal((len(lab), dims)).astype(np.float32))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, centres, labels


def run_lane_benchmark(args) -> None:
    from loupe import Library
    from loupe.fusion.run import fused_search
    from loupe.fusion.search import VectorLane
    from loupe.lexical.search import QueryTerms
    from loupe.vector import queries as vq

    rng = np.random.default_rng(5)
    if args.home:
        home = Path(args.home)
    else:
        tmp = Path(tempfile.mkdtemp(prefix="loupe-vec-"))
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        home = tmp / "home"
    x, centres, labels = clustered(args.vectors, args.dims, rng, spread=args.spread)
    words = [f"w{k}" for k in range(2000)]
    zipf = 1.0 / np.arange(1, len(words) + 1)
    zipf /= zipf.sum()
    # --home keeps the loaded library: a second run with the same sizes reuses
    # it (same seed, so the same vectors and queries) and skips load and build.
    marker = home / f"bench-vector-{args.vectors}-{args.dims}-{args.spread}.ready"
    if marker.exists():
        lib = Library.open(home, database_url=args.database_url)
        for i in range(args.vectors):  # the same draws as the load, for the same queries
            rng.choice(words, size=8, p=zipf)
        model_id = lib.conn.execute("SELECT id FROM embedding_model WHERE name = 'bench'"
                                    ).fetchone()[0]
        member = lib.conn.execute("SELECT id FROM principal WHERE name = 'bench-member'"
                                  ).fetchone()[0]
        print(f"vectors: {args.vectors:,} x {args.dims} dims, 1,000 clusters ({args.spread}); "
              f"reusing the library loaded in {home} ({marker.read_text().strip()}); "
              f"cores {os.cpu_count()}")
        run_queries(args, lib, rng, x, words, model_id, member)
        return
    lib = Library.open(home, database_url=args.database_url, create=True)
    t0 = time.perf_counter()
    with lib.conn.transaction():
        lib.conn.execute("SELECT set_config('loupe.bulk', 'on', true)")
        model_id = lib.conn.execute(vq.REGISTER_MODEL, {"name": "bench", "kind": "clip-onnx",
                                                        "dims": args.dims, "content": None}).fetchone()[0]
        lib.conn.execute(vq.SET_LANE_MODEL, {"tenant_id": lib.tenant_id, "lane": "image",
                                            "model_id": model_id})
        with lib.conn.cursor().copy(
                "COPY asset (id, tenant_id, content_sha256, byte_size, media_type, width, height)"
                " FROM STDIN") as cp:
            for i in range(args.vectors):
                cp.write_row((i + 1, lib.tenant_id, (i + 1).to_bytes(32, "big"), 1,
                              "image/jpeg", 1, 1))
        with lib.conn.cursor().copy("COPY asset_vector (asset_id, tenant_id, model_id, lane, "
                                    "embedding) FROM STDIN") as cp:
            for i in range(args.vectors):
                cp.write_row((i + 1, lib.tenant_id, model_id, "image",
                              "[" + ",".join(f"{v:.6f}" for v in x[i]) + "]"))
        lib.conn.execute("CREATE TEMP TABLE bench_text (id bigint, body text) ON COMMIT DROP")
        with lib.conn.cursor().copy("COPY bench_text (id, body) FROM STDIN") as cp:
            for i in range(args.vectors):
                body = " ".join(rng.choice(words, size=8, p=zipf))
                cp.write_row((i + 1, body))
        lib.conn.execute("""
            INSERT INTO search_document (asset_id, tenant_id, lang, ts_config, description,
                                         phrase_text, tsv, doc_len)
            SELECT id, %(t)s, 'en', 'loupe_english', body, loupe_phrase_norm(body), x.tsv,
                   loupe_tsv_len(x.tsv)
            FROM bench_text CROSS JOIN LATERAL (SELECT loupe_document_tsv('loupe_english', '', '',
                 '', body, '', '', '', '', '', '', '') AS tsv) x
        """, {"t": lib.tenant_id})
        lib.conn.execute("SELECT loupe_reindex_lexical(%s, 'en')", (lib.tenant_id,))
    load_s = time.perf_counter() - t0
    lib.conn.execute("SET maintenance_work_mem = '2GB'")
    lib.conn.execute("SET max_parallel_maintenance_workers = 1")
    t0 = time.perf_counter()
    lib.conn.execute(vq.hnsw_index(model_id, "image", args.dims))
    build_s = time.perf_counter() - t0
    lib.conn.execute("VACUUM ANALYZE")
    print(f"vectors: {args.vectors:,} x {args.dims} dims, 1,000 clusters ({args.spread}); "
          f"load {load_s:.1f} s, "
          f"HNSW build {build_s:.1f} s; cores {os.cpu_count()}")

    # A member granted every other asset (real grants; readers computed by the
    # library's own loupe_asset_readers, set-wise rather than row by row).
    with lib.conn.transaction():
        member = lib.conn.execute(
            "INSERT INTO principal (tenant_id, kind, name) VALUES (%s, 'user', 'bench-member')"
            " RETURNING id", (lib.tenant_id,)).fetchone()[0]
        lib.conn.execute("ALTER TABLE asset_grant DISABLE TRIGGER asset_grant_readers")
        lib.conn.execute("INSERT INTO asset_grant (tenant_id, asset_id, principal_id)"
                         " SELECT tenant_id, id, %s FROM asset WHERE tenant_id = %s AND id %% 2 = 0",
                         (member, lib.tenant_id))
        lib.conn.execute("ALTER TABLE asset_grant ENABLE TRIGGER asset_grant_readers")
        lib.conn.execute("UPDATE asset SET readers = loupe_asset_readers(id)"
                         " WHERE tenant_id = %s AND id %% 2 = 0", (lib.tenant_id,))
    lib.conn.execute("VACUUM ANALYZE asset")
    if args.home:
        marker.write_text(f"load {load_s:.1f} s, HNSW build {build_s:.1f} s\n")
    run_queries(args, lib, rng, x, words, model_id, member)


def run_queries(args, lib, rng, x, words, model_id, member) -> None:
    """The measured part: recall and latency as the owner and as the member."""
    from loupe.fusion.run import fused_search
    from loupe.fusion.search import VectorLane
    from loupe.lexical.search import QueryTerms
    from loupe.vector import queries as vq

    viewers = [("owner", {"see_all": True, "principals": []}, np.ones(args.vectors, bool)),
               ("member (half the library granted)", {"see_all": False, "principals": [member]},
                (np.arange(1, args.vectors + 1) % 2) == 0)]

    queries = []
    for _ in range(args.queries):
        i = int(rng.integers(0, args.vectors))
        q = x[i] + 0.02 * rng.standard_normal(args.dims).astype(np.float32)
        queries.append(q / np.linalg.norm(q))
    hybrid_texts = [" ".join(rng.choice(words[:200], size=int(rng.integers(2, 4))))
                    for _ in queries]
    lane_sql = vq.vector_cte("image", model_id, "image", args.dims)
    from psycopg import sql

    stmt = sql.SQL("WITH ") + lane_sql + sql.SQL(" SELECT asset_id FROM vec_image ORDER BY rank")
    sweep = (100, 400) if args.smoke else (100, 200, 400, 800, 1000)

    for label, who, visible in viewers:
        print(f"--- as the {label}: {int(visible.sum()):,} readable vectors")

        def lane(q, cap=200, who=who):
            return [r[0] for r in lib.conn.execute(
                stmt, {"tenant_id": lib.tenant_id, "vec_cap": cap, "qv_image": q,
                       "maxd_image": 2.0, **who})]

        # exact: the same statement, same viewer, with plain index scans off,
        # so the HNSW index is not used (a scan of the model's vectors the
        # viewer may read). Bitmap scans stay on: HNSW cannot serve one, and
        # the member's permission test looks each vector's asset up by its
        # primary key through one (with both off it scanned the asset table
        # once per vector: 10^10 rows at 100k)
        lib.conn.execute("SET enable_indexscan = off")
        exact_res = [lane(q, 10) for q in queries]
        # the exact scan's own cost at the lane's cap (top 200): what an
        # exact lane below a size threshold pays
        ex_t = []
        for q in queries:
            t = time.perf_counter()
            lane(q)
            ex_t.append((time.perf_counter() - t) * 1000)
        lib.conn.execute("RESET enable_indexscan")
        print("hnsw.ef_search sweep (recall@10 against the exact scan, vector lane latency):")
        for ef in sweep:
            lib.conn.execute(vq.hnsw_session(ef)[0])
            for q in queries[:10]:
                lane(q)
            ts, res = [], []
            for q in queries:
                t = time.perf_counter()
                res.append(lane(q))
                ts.append((time.perf_counter() - t) * 1000)
            rec = statistics.mean(len(set(a[:10]) & set(e)) / 10 for a, e in zip(res, exact_res))
            print(f"  ef_search {ef:>5}: recall@10 {rec:.3f}, p50 {pct(ts, 50):6.2f} ms, "
                  f"p95 {pct(ts, 95):6.2f} ms")
        lib.conn.execute(vq.hnsw_session()[0])  # Loupe's default for what follows
        print(f"with Loupe's default ef_search {vq.HNSW_EF_SEARCH}:")
        for q in queries[:10]:
            lane(q)
        plan = "\n".join(r[0] for r in lib.conn.execute(
            sql.SQL("EXPLAIN ") + stmt, {"tenant_id": lib.tenant_id, "vec_cap": 200,
                                         "qv_image": queries[0], "maxd_image": 2.0, **who}))
        print(f"vector lane plan uses its HNSW index: "
              f"{f'asset_vector_hnsw_{model_id}_image' in plan}")
        ann_t, ann_res = [], []
        for q in queries:
            t = time.perf_counter()
            ann_res.append(lane(q))
            ann_t.append((time.perf_counter() - t) * 1000)
        recall = statistics.mean(len(set(a[:10]) & set(e)) / 10
                                 for a, e in zip(ann_res, exact_res))

        # numpy brute force (rclip's method) over the vectors this viewer may
        # read, all in memory, one matrix product
        xv, ids = x[visible], np.flatnonzero(visible) + 1
        np_t, np_res = [], []
        for q in queries:
            t = time.perf_counter()
            sims = xv @ q
            top = np.argpartition(-sims, 10)[:10]
            np_res.append(ids[top[np.argsort(-sims[top])]].tolist())
            np_t.append((time.perf_counter() - t) * 1000)
        np_recall = statistics.mean(len(set(a) & set(e)) / 10 for a, e in zip(np_res, exact_res))

        # the full hybrid statement: lexical lane + vector lane + RRF, as this viewer
        hy_t = []
        for q, text in zip(queries, hybrid_texts):
            terms = lib.analyze(text, query=True)
            params = {"tenant_id": lib.tenant_id, **QueryTerms.single("en", terms).params(),
                      "query": text, "raw_cap": 3000, "keep_cap": 1000, "limit": 20,
                      "offset": 0, "fallback": False, "one_word": False, **who}
            vl = VectorLane("image", "image", model_id, "bench", args.dims, 2.0, q)
            t = time.perf_counter()
            fused_search(lib.conn, params, [vl])
            hy_t.append((time.perf_counter() - t) * 1000)

        print(f"recall@10 HNSW vs exact: {recall:.3f}   "
              f"(numpy brute force vs exact: {np_recall:.3f})")
        print(f"vector lane (HNSW, top 200)  p50 {pct(ann_t, 50):7.2f} ms  "
              f"p95 {pct(ann_t, 95):7.2f} ms")
        print(f"hybrid statement (lexical + vector + RRF)  p50 {pct(hy_t, 50):7.2f} ms  "
              f"p95 {pct(hy_t, 95):7.2f} ms")
        print(f"exact scan (index scans off, top 200)  p50 {pct(ex_t, 50):7.2f} ms  "
              f"p95 {pct(ex_t, 95):7.2f} ms")
        print(f"numpy brute force (top 10, in memory)  p50 {pct(np_t, 50):7.2f} ms  "
              f"p95 {pct(np_t, 95):7.2f} ms")
        print(f"ratio vector lane / numpy p95: {pct(ann_t, 95) / pct(np_t, 95):.2f}")
    lib.close()


def run_throughput(args) -> None:
    """ViT-B/32-shaped image tower (width 768, 12 layers, 12 heads, patch 32,
    224 px, 512-d output) with random weights, exported to ONNX in Immich's
    layout and run through Loupe's ClipOnnx embedder."""
    import json

    import torch
    from PIL import Image

    from loupe.models.embedders import ClipOnnx

    tmp = Path(tempfile.mkdtemp(prefix="loupe-vit-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)

    class ViT(torch.nn.Module):
        def __init__(self, width=768, layers=12, heads=12, patch=32, size=224, out=512):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, width, patch, patch, bias=False)
            n = (size // patch) ** 2
            self.cls = torch.nn.Parameter(torch.randn(1, 1, width) * 0.02)
            self.pos = torch.nn.Parameter(torch.randn(1, n + 1, width) * 0.02)
            layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, activation="gelu",
                                                     batch_first=True, norm_first=True)
            self.blocks = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.ln = torch.nn.LayerNorm(width)
            self.proj = torch.nn.Linear(width, out, bias=False)

        def forward(self, image):
            x = self.conv(image).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            x = self.blocks(x)
            return self.proj(self.ln(x[:, 0]))

    model = (ViT(width=64, layers=1, heads=2) if args.smoke else ViT()).eval()
    folder = tmp / "vit-b-32"
    (folder / "visual").mkdir(parents=True)
    (folder / "textual").mkdir()
    torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), str(folder / "visual" / "model.onnx"),
                      input_names=["image"], output_names=["embedding"],
                      dynamic_axes={"image": {0: "N"}}, opset_version=17, dynamo=False)
    (folder / "config.json").write_text(json.dumps({"embed_dim": 512,
                                                   "text_cfg": {"context_length": 77}}))
    (folder / "visual" / "preprocess_cfg.json").write_text(json.dumps({
        "size": 224, "mode": "RGB", "mean": [0.48145466, 0.4578275, 0.40821073],
        "std": [0.26862954, 0.26130258, 0.27577711], "interpolation": "bicubic",
        "resize_mode": "shortest"}))
    emb = ClipOnnx(folder, {"kind": "clip-onnx", "dims": 512})
    rng = np.random.default_rng(1)
    images = [Image.fromarray(rng.integers(0, 255, (480, 640, 3), dtype=np.uint8))
              for _ in range(8 if args.smoke else 64)]
    emb.encode_images(images[:8])
    for batch in ((1, 8) if args.smoke else (1, 8, 32)):
        t = time.perf_counter()
        n = 0
        for i in range(0, len(images), batch):
            emb.encode_images(images[i:i + batch])
            n += len(images[i:i + batch])
        dt = time.perf_counter() - t
        print(f"ViT-B/32-shaped image encoder via ClipOnnx, batch {batch:>2}: "
              f"{n / dt:.1f} images/s ({os.cpu_count()} cores, onnxruntime CPU)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vectors", type=int, default=100_000)
    ap.add_argument("--dims", type=int, default=512)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--database-url")
    ap.add_argument("--home", help="keep the loaded library in this folder; a later run with the "
                                   "same --vectors/--dims/--spread reuses it (no load, no build)")
    ap.add_argument("--throughput", action="store_true")
    ap.add_argument("--spread", choices=["low-rank", "isotropic"], default="low-rank")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes, every code path (CI runs this so the benchmark keeps running)")
    args = ap.parse_args()
    if args.smoke:
        args.vectors, args.queries, args.dims = 3000, 12, 64
    if args.smoke:
        run_lane_benchmark(args)
        run_throughput(args)
    elif args.throughput:
        run_throughput(args)
    else:
        run_lane_benchmark(args)


if __name__ == "__main__":
    main()
