"""Why the text lane's HNSW walk misses what an exact scan finds (E9).

Usage (from the repository root, on a COPY of a home: ``--reindex``,
``--dedup`` and ``--grant-all`` change it)::

    PYTHONPATH=$PWD/src python eval/e9_hnsw.py HOME QUERYSET.jsonl OUT.json \\
        [--grant-all] [--reindex] [--dedup] [--quick]

For every query of the set (the 195 blind test queries of ``eval/e9/``), the
text lane's statement (the production :func:`loupe.vector.queries.vector_cte`
as ``loupe eval run SET text`` runs it, with ``exact_max`` 0 so that the walk
is measured whatever the lane's size) is run once as an **exact** scan (index
scans disabled for the statement: a sequential scan of the lane's vectors
and a sort) and then under each setting below, one thing varied at a time
from the session's defaults (``hnsw.ef_search`` 400, ``hnsw.iterative_scan``
relaxed_order, the owner, the installed cut-off, ``vec_cap`` 10):

* the walk forced (sequential scans, bitmap scans and sorts off), where the
  planner would rather scan and sort (it does at 1,852 vectors);
* ``ef_search`` 40 / 100 / 1000 (1000 also forced);
* ``iterative_scan`` off / strict_order (also forced);
* ``vec_cap`` 200 (what the hybrid's text lane keeps) — its first 10 rows;
* no cut-off (``maxd`` 2) instead of the installed one;
* other viewers, with the read test inside the walk: the demo's ``guest``
  (granted a few assets) and, with ``--grant-all``, a member granted every
  asset (so the exact answer is the owner's), each also forced and forced
  with strict_order.

For each: recall of HNSW against exact (|HNSW top 10 ∩ exact top 10| /
|exact top 10|, mean over queries), queries whose top 10 differs, the known
item's recall@10 with each, the queries that lose it, and the statement's
mean / p95 latency (ms, wall clock: read it against the load). Beside them:
the lane's vectors, how many are byte-identical to another one (groups and
sizes), how many pairs lie within cosine distance 1e-6 / 0.01, and the
index's size. ``--reindex`` first runs ``REINDEX INDEX`` on the lane's
partial index (the graph built at once instead of by incremental inserts).
``--quick``: only the default setting (and the forced walk). ``--dedup``: also
the walk over one row per distinct vector (:func:`dedup`; creates the table
``e9_distinct_vec`` in the home). ``--grant-all``: also a member granted every
asset (created in the home), beside the demo's ``guest``.

Writes ``OUT.json`` (per setting the figures above and per query the two
top-10 lists as asset ids) and prints a table.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def _unit(m) -> np.ndarray:
    m = np.asarray(m, np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def duplicates(conn, tenant_id: int, model_id: int) -> dict:
    """The lane's vectors: count, byte-identical groups, near-identical pairs."""
    rows = conn.execute("SELECT asset_id, embedding::text FROM asset_vector WHERE tenant_id = %s"
                        " AND model_id = %s AND lane = 'text' ORDER BY asset_id",
                        (tenant_id, model_id)).fetchall()
    groups: dict[str, list[int]] = {}
    for a, e in rows:
        groups.setdefault(e, []).append(a)
    sizes = sorted((len(g) for g in groups.values() if len(g) > 1), reverse=True)
    x = _unit([json.loads(e) for _a, e in rows]).astype(np.float32)
    near6 = near2 = 0
    for s in range(0, len(x), 2000):
        d = 1.0 - x[s:s + 2000] @ x.T
        for i in range(d.shape[0]):
            d[i, :s + i + 1] = 9  # each unordered pair once, never with itself
        near6 += int((d <= 1e-6).sum())
        near2 += int((d <= 0.01).sum())
    return {"vectors": len(rows), "distinct": len(groups),
            "in_identical_groups": sum(sizes), "identical_groups": len(sizes),
            "largest_groups": sizes[:10], "pairs_within_1e-6": near6,
            "pairs_within_0.01": near2}


def dedup(conn, tid: int, model_id: int, dims: int, queries: list, qv: list, cfg: dict,
          lists: dict, sha: dict) -> dict:
    """The walk over one row per DISTINCT vector (a table of this home, its own
    HNSW index with Loupe's m and ef_construction, built at once), each hit
    expanded to every asset holding that vector (ties by asset id), against
    the exact lists of the default setting (``lists``: per query
    ``{"exact": [...]}``)."""
    import psycopg

    from loupe.models import registry
    from loupe.vector import queries as vq

    t0 = time.perf_counter()
    conn.execute("DROP TABLE IF EXISTS e9_distinct_vec")
    conn.execute(psycopg.sql.SQL(
        "CREATE TABLE e9_distinct_vec AS SELECT embedding::vector({d}) AS e, "
        "array_agg(asset_id ORDER BY asset_id) AS assets FROM asset_vector "
        "WHERE tenant_id = %s AND model_id = %s AND lane = 'text' GROUP BY 1").format(
            d=psycopg.sql.Literal(dims)), (tid, model_id))
    conn.execute(psycopg.sql.SQL(
        "CREATE INDEX e9_distinct_vec_hnsw ON e9_distinct_vec USING hnsw (e vector_cosine_ops) "
        "WITH (m = {m}, ef_construction = {efc})").format(
            m=psycopg.sql.Literal(vq.HNSW_M), efc=psycopg.sql.Literal(vq.HNSW_EF_CONSTRUCTION)))
    conn.execute("ANALYZE e9_distinct_vec")
    build = time.perf_counter() - t0
    n = conn.execute("SELECT count(*) FROM e9_distinct_vec").fetchone()[0]
    stmt = psycopg.sql.SQL(
        "SELECT a, d FROM (SELECT assets, e <=> %(q)s::vector({d}) AS d FROM e9_distinct_vec "
        "ORDER BY e <=> %(q)s::vector({d}) LIMIT 10) w, unnest(w.assets) a "
        "WHERE d <= %(maxd)s ORDER BY d, a LIMIT 10").format(d=psycopg.sql.Literal(dims))
    rec, lost, differ, known = [], [], 0, []
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        used = "e9_distinct_vec_hnsw" in "\n".join(r[0] for r in conn.execute(
            psycopg.sql.SQL("EXPLAIN ") + stmt, {"q": qv[0], "maxd": 2.0}))
        for x, v in zip(queries, qv):
            maxd = registry.threshold_for(cfg, len(x["text"].split()))
            got = [a for a, _d in conn.execute(stmt, {"q": v, "maxd": float(maxd)})]
            want = lists[x["id"]]["exact"]
            truth = {t["sha256"] for t in x["truth"]}
            if want:
                rec.append(len(set(got) & set(want)) / len(want))
            differ += got != want
            kg = any(sha[a] in truth for a in got)
            known.append(kg)
            if any(sha[a] in truth for a in want) and not kg:
                lost.append(x["id"])
    out = {"distinct_vectors": n, "build_s": build, "walk_used": used,
           "recall_vs_exact": statistics.fmean(rec), "queries_differing": differ,
           "known_recall": statistics.fmean(known), "known_lost": lost}
    print(f"| the walk over {n} distinct vectors (expanded to their assets) | "
          f"{'HNSW' if used else 'scan'} | {out['recall_vs_exact']:.3f} | {differ} | "
          f"{out['known_recall']:.3f} | {len(lost)} | (built in {build:.1f} s) |", flush=True)
    return out


def main(argv: list[str]) -> int:
    import psycopg

    from loupe.library import Library
    from loupe.models import registry
    from loupe.vector import queries as vq

    flags = {a for a in argv if a.startswith("--")}
    home, qpath, out = [a for a in argv if not a.startswith("--")]
    lib = Library.open(home)
    conn, tid = lib.conn, lib.tenant_id
    try:
        lanes = {lane: (mid, name, dims) for lane, mid, name, _k, dims, *_ in conn.execute(
            vq.LANE_MODELS, {"tenant_id": tid})}
        model_id, model, dims = lanes["text"]
        index = f"asset_vector_hnsw_{model_id}_text"
        if "--reindex" in flags:
            t0 = time.perf_counter()
            conn.execute(psycopg.sql.SQL("REINDEX INDEX {}").format(psycopg.sql.Identifier(index)))
            print(f"REINDEX {index}: {time.perf_counter() - t0:.1f} s", flush=True)
        conn.execute("ANALYZE asset_vector")
        cfg = registry.get_model(lib.home, model).config
        queries = [json.loads(line) for line in Path(qpath).read_text(encoding="utf-8").splitlines()
                   if line.strip() and not line.startswith("#")]
        qv = registry.embedder(lib.home, model).encode_texts([x["text"] for x in queries],
                                                             task="query")
        qv = [np.asarray(v, np.float32) for v in qv]
        sha = dict(conn.execute("SELECT id, encode(content_sha256, 'hex') FROM asset "
                                "WHERE tenant_id = %s", (tid,)).fetchall())
        # the viewers: the owner; the demo's guest (granted a few assets); with
        # --grant-all a member granted every asset (created in this home), so
        # that the answer is the owner's and only the test inside the walk differs
        viewers = {"owner": {"see_all": True, "principals": []}}
        guest = conn.execute("SELECT id FROM principal WHERE tenant_id = %s AND name = 'guest'",
                             (tid,)).fetchone()
        if guest:
            viewers["guest"] = {"see_all": False, "principals": [guest[0]]}
        if "--grant-all" in flags:
            everyone = conn.execute("SELECT id FROM principal WHERE tenant_id = %s AND "
                                    "name = 'e9-everything'", (tid,)).fetchone()
            if not everyone:
                with conn.transaction():
                    everyone = conn.execute(
                        "INSERT INTO principal (tenant_id, kind, name) VALUES "
                        "(%s, 'user', 'e9-everything') RETURNING id", (tid,)).fetchone()
                    conn.execute("ALTER TABLE asset_grant DISABLE TRIGGER asset_grant_readers")
                    conn.execute("INSERT INTO asset_grant (asset_id, principal_id) SELECT id, %s "
                                 "FROM asset WHERE tenant_id = %s", (everyone[0], tid))
                    conn.execute("ALTER TABLE asset_grant ENABLE TRIGGER asset_grant_readers")
                    conn.execute("UPDATE asset SET readers = loupe_asset_readers(id), "
                                 "doc_readers = CASE WHEN doc_readers IS NULL THEN NULL ELSE "
                                 "doc_readers || %s::bigint END WHERE tenant_id = %s",
                                 (everyone[0], tid))
                conn.execute("VACUUM ANALYZE asset")
            viewers["everything"] = {"see_all": False, "principals": [everyone[0]]}
        readable = {w: conn.execute(
            "SELECT count(*) FROM asset_vector v JOIN asset a ON a.id = v.asset_id "
            "WHERE v.tenant_id = %(t)s AND v.model_id = %(m)s AND v.lane = 'text' AND "
            "(%(see_all)s OR loupe_can_read(coalesce(a.doc_readers, a.readers), a.embargo_until,"
            " a.rights_expire_at, false, %(principals)s::bigint[]))",
            {"t": tid, "m": model_id, **p}).fetchone()[0] for w, p in viewers.items()}
        # the lane's statement as `loupe eval run SET text` runs it, with the
        # walk whatever the lane's size (exact_max 0: the exact scan of
        # small lanes off), so that the walk itself is measured
        stmt = psycopg.sql.SQL("WITH ") + vq.vector_cte(
            "variant", model_id, "text", dims, exact_max=0) + psycopg.sql.SQL(
            "\nSELECT asset_id, dist, rank FROM vec_variant ORDER BY rank")
        dup = duplicates(conn, tid, model_id)
        size = conn.execute("SELECT pg_relation_size(%s::regclass)", (index,)).fetchone()[0]

        def run(ef: int, it: str, cap: int, who: str, nocut: bool, force: bool, exact: bool):
            """Top-10 lists and latencies (ms) of every query under one setting,
            and whether the planner used the lane's HNSW index."""
            lists, times = [], []
            viewer = viewers[who]
            with conn.transaction():
                conn.execute(psycopg.sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                    psycopg.sql.Literal(ef)))
                conn.execute(psycopg.sql.SQL("SET LOCAL hnsw.iterative_scan = {}").format(
                    psycopg.sql.Literal(it)))
                if exact:
                    conn.execute("SET LOCAL enable_indexscan = off")
                elif force:  # the walk even where the planner would scan and sort
                    conn.execute("SET LOCAL enable_seqscan = off")
                    conn.execute("SET LOCAL enable_bitmapscan = off")
                    conn.execute("SET LOCAL enable_sort = off")
                used = index in "\n".join(r[0] for r in conn.execute(
                    psycopg.sql.SQL("EXPLAIN ") + stmt,
                    {**viewer, "tenant_id": tid, "vec_cap": cap, "qv_variant": qv[0],
                     "maxd_variant": 2.0}))
                for x, v in zip(queries, qv):
                    maxd = 2.0 if nocut else registry.threshold_for(cfg, len(x["text"].split()))
                    t0 = time.perf_counter()
                    rows = conn.execute(stmt, {**viewer, "tenant_id": tid, "vec_cap": cap,
                                               "qv_variant": v,
                                               "maxd_variant": float(maxd)}).fetchall()
                    times.append((time.perf_counter() - t0) * 1000)
                    lists.append([a for a, _d, _r in rows][:10])
            return lists, times, used

        def known(lists):
            return [any(sha[a] in {t["sha256"] for t in x["truth"]} for a in hs)
                    for x, hs in zip(queries, lists)]

        base = {"ef": 400, "it": "relaxed_order", "cap": 10, "who": "owner", "nocut": False,
                "force": False}
        settings = [("default (ef 400, relaxed_order, cap 10, owner)", {}),
                    ("the walk forced (seq scans off)", {"force": True})]
        if "--quick" not in flags:
            settings += [("ef_search 40", {"ef": 40}), ("ef_search 100", {"ef": 100}),
                         ("ef_search 1000", {"ef": 1000}),
                         ("iterative_scan off", {"it": "off"}),
                         ("iterative_scan strict_order", {"it": "strict_order"}),
                         ("vec_cap 200 (the hybrid's)", {"cap": 200}),
                         ("no cut-off (maxd 2)", {"nocut": True}),
                         ("ef_search 1000, strict_order, cap 200",
                          {"ef": 1000, "it": "strict_order", "cap": 200}),
                         ("forced walk, ef_search 1000", {"force": True, "ef": 1000}),
                         ("forced walk, strict_order", {"force": True, "it": "strict_order"}),
                         ("forced walk, iterative_scan off", {"force": True, "it": "off"})]
            for who in viewers:
                if who != "owner":
                    settings += [(f"viewer {who} ({readable[who]} readable vectors)",
                                  {"who": who}),
                                 (f"viewer {who}, forced walk", {"who": who, "force": True}),
                                 (f"viewer {who}, forced walk, strict_order",
                                  {"who": who, "force": True, "it": "strict_order"})]
        exact_cache: dict[tuple, tuple] = {}
        result = {"home": home, "model": model, "dims": dims, "index": index,
                  "index_bytes": size, "reindexed": "--reindex" in flags,
                  "viewers": viewers, "readable_vectors": readable,
                  "duplicates": dup, "settings": []}
        print(f"{home}: {dup['vectors']} text vectors, {dup['distinct']} distinct; "
              f"{dup['in_identical_groups']} in {dup['identical_groups']} identical groups "
              f"(largest {dup['largest_groups']}); pairs within 1e-6: {dup['pairs_within_1e-6']},"
              f" within 0.01: {dup['pairs_within_0.01']}; index {size / 1e6:.1f} MB", flush=True)
        print("| setting | plan | HNSW vs exact, recall of the top 10 | queries differing | "
              "known item recall@10 HNSW / exact | known items lost | ms mean / p95 HNSW | "
              "ms mean exact |")
        print("|---|---|---|---|---|---|---|---|")
        for label, change in settings:
            s = {**base, **change}
            ekey = (s["cap"], s["who"], s["nocut"])
            if ekey not in exact_cache:
                exact_cache[ekey] = run(s["ef"], s["it"], s["cap"], s["who"], s["nocut"],
                                        False, True)
            elists, etimes, _ = exact_cache[ekey]
            hlists, htimes, used = run(s["ef"], s["it"], s["cap"], s["who"], s["nocut"],
                                       s["force"], False)
            rec = [len(set(h) & set(e)) / len(e) for h, e in zip(hlists, elists) if e]
            differ = sum(h != e for h, e in zip(hlists, elists))
            kh, ke = known(hlists), known(elists)
            lost = [x["id"] for x, a, b in zip(queries, kh, ke) if b and not a]
            gained = [x["id"] for x, a, b in zip(queries, kh, ke) if a and not b]
            row = {"setting": label, **s, "hnsw_used": used,
                   "recall_vs_exact": statistics.fmean(rec),
                   "queries_differing": differ, "known_hnsw": statistics.fmean(kh),
                   "known_exact": statistics.fmean(ke), "known_lost": lost,
                   "known_gained": gained,
                   "ms_mean": statistics.fmean(htimes),
                   "ms_p95": sorted(htimes)[int(0.95 * len(htimes)) - 1],
                   "ms_mean_exact": statistics.fmean(etimes),
                   "lists": {x["id"]: {"hnsw": h, "exact": e}
                             for x, h, e in zip(queries, hlists, elists)}}
            result["settings"].append(row)
            print(f"| {label} | {'HNSW' if used else 'scan'} | {row['recall_vs_exact']:.3f} | "
                  f"{differ} | "
                  f"{row['known_hnsw']:.3f} / {row['known_exact']:.3f} | {len(lost)} "
                  f"(+{len(gained)}) | {row['ms_mean']:.1f} / {row['ms_p95']:.1f} | "
                  f"{row['ms_mean_exact']:.1f} |", flush=True)
        if "--dedup" in flags:
            result["dedup"] = dedup(conn, tid, model_id, dims, queries, qv, cfg,
                                    result["settings"][0]["lists"], sha)
        Path(out).write_text(json.dumps(result, indent=1))
    finally:
        lib.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
