"""Search by image (X1): how well pHash survives common edits, and how fast
multi-index hashing (MIH) is against a linear Hamming scan.

Usage:
    .venv/bin/python benchmarks/similar.py --transforms DIR   # the transform table
    .venv/bin/python benchmarks/similar.py --hashes 100000    # MIH vs linear scan
    .venv/bin/python benchmarks/similar.py --duplicates 20000  # loupe duplicates' cost
    .venv/bin/python benchmarks/similar.py --smoke            # all, tiny, in seconds

``--transforms DIR`` reads every JPEG/PNG under DIR (files with the same
bytes counted once) as originals and applies seven edits to each: JPEG
re-encode at quality 60, resize to 50%, crop 5% per side, grayscale, a text
watermark, a 3-degree rotation, a horizontal flip. For each radius it reports
the recall of the original (the edited copy's pHash within the radius of its
original's) and the false-positive rate: the share of pairs of *different*
originals within the radius (every pair, or --pairs sampled ones). It also
reports rank-1 accuracy (the original is the nearest of all originals, ties
counted against) and the same recall for dHash, for comparison.

``--hashes N`` loads N hashes into Loupe's asset_phash table (``random``:
uniform 64-bit; ``clustered``: 1,000 centres, members Binomial(64, 1/16) bits from their
centre), builds the four sub-hash indexes (the build cost), then times the
MIH statement (loupe.similar.queries.SIMILAR) and the linear scan
(SIMILAR_LINEAR) for --queries queries at radius 3, 10 and 15, reporting
p50/p95 in ms and the ratio. Queries are members perturbed by a few bits.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import math
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import imagehash
from PIL import Image, ImageDraw, ImageFont, ImageOps

from loupe.ingest.perceptual import hamming, hash_image, to_signed


def pct(values, p):
    values = sorted(values)
    return values[max(0, min(len(values) - 1, math.ceil(p / 100 * len(values)) - 1))]


# -- the transform suite ---------------------------------------------------------

def _jpeg(im: Image.Image, quality: int) -> Image.Image:
    import io

    buf = io.BytesIO()
    im.convert("RGB").save(buf, "JPEG", quality=quality)
    buf.seek(0)
    out = Image.open(buf)
    out.load()
    return out


def _watermark(im: Image.Image) -> Image.Image:
    out = im.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    size = max(10, out.height // 12)
    try:
        font = ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType
        font = ImageFont.load_default()
    draw.text((out.width // 20, out.height - 2 * size), "© Loupe Agency 2026", fill=(255, 255, 255),
              font=font, stroke_width=max(1, size // 12), stroke_fill=(0, 0, 0))
    return out


TRANSFORMS = {
    "jpeg_q60": lambda im: _jpeg(im, 60),
    "resize_50": lambda im: im.resize((max(1, im.width // 2), max(1, im.height // 2)),
                                      Image.Resampling.LANCZOS),
    "crop_5pct": lambda im: im.crop((im.width // 20, im.height // 20,
                                     im.width - im.width // 20, im.height - im.height // 20)),
    "grayscale": lambda im: ImageOps.grayscale(im),
    "watermark": _watermark,
    "rotate_3deg": lambda im: im.convert("RGB").rotate(3, resample=Image.Resampling.BICUBIC),
    "flip": lambda im: ImageOps.mirror(im),
}


def load_originals(folder: Path) -> list[tuple[str, Image.Image]]:
    seen, out = set(), []
    for p in sorted(folder.rglob("*")):
        if p.suffix.lower() not in {".jpg", ".jpeg", ".png"} or not p.is_file():
            continue
        digest = hashlib.sha256(p.read_bytes()).digest()
        if digest in seen:
            continue
        seen.add(digest)
        im = Image.open(p)
        im = ImageOps.exif_transpose(im).convert("RGB")
        out.append((p.name, im))
    return out


def run_transforms(folder: Path, radii: list[int], pairs: int | None) -> None:
    originals = load_originals(folder)
    n = len(originals)
    print(f"{n} distinct originals from {folder}")
    t0 = time.perf_counter()
    ph = [hash_image(im).phash for _, im in originals]
    dh = [to_signed(int(str(imagehash.dhash(im)), 16)) for _, im in originals]
    dist = {name: [] for name in TRANSFORMS}
    ddist = {name: [] for name in TRANSFORMS}
    rank1 = {name: 0 for name in TRANSFORMS}
    for i, (_, im) in enumerate(originals):
        for name, fn in TRANSFORMS.items():
            t = fn(im)
            h = hash_image(t)
            d = hamming(h.phash, ph[i])
            dist[name].append(d)
            ddist[name].append(hamming(h.dhash, dh[i]))
            if all(hamming(h.phash, ph[j]) > d for j in range(n) if j != i):
                rank1[name] += 1
    all_pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if pairs and pairs < len(all_pairs):
        all_pairs = random.Random(1).sample(all_pairs, pairs)
    neg = [hamming(ph[i], ph[j]) for i, j in all_pairs]
    dneg = [hamming(dh[i], dh[j]) for i, j in all_pairs]
    print(f"hashed {n} originals x {len(TRANSFORMS)} edits in {time.perf_counter() - t0:.1f} s; "
          f"{len(neg):,} pairs of different originals")
    head = "| edit | " + " | ".join(f"recall r≤{r}" for r in radii) + " | rank-1 | median bits | dHash recall r≤10 |"
    print(head)
    print("|" + "---|" * (len(radii) + 4))
    for name in TRANSFORMS:
        ds = dist[name]
        row = [f"{sum(d <= r for d in ds) / n:.3f}" for r in radii]
        print(f"| {name} | " + " | ".join(row) + f" | {rank1[name] / n:.3f} | "
              f"{statistics.median(ds):.0f} | {sum(d <= 10 for d in ddist[name]) / n:.3f} |")
    row = [f"{sum(d <= r for d in neg) / len(neg):.5f}" for r in radii]
    print("| **false positives** (different originals) | " + " | ".join(row)
          + f" | | {statistics.median(neg):.0f} | {sum(d <= 10 for d in dneg) / len(dneg):.5f} |")
    near = sorted(neg)[:5]
    print(f"closest pairs of different originals: {near} bits")


# -- MIH against a linear scan ----------------------------------------------------

def run_speed(n: int, queries: int, database_url: str | None, kinds: list[str]) -> None:
    from loupe import Library
    from loupe.similar import queries as sq

    tmp = Path(tempfile.mkdtemp(prefix="loupe-sim-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    lib = Library.open(tmp / "home", database_url=database_url, create=True)
    conn, t = lib.conn, lib.tenant_id
    conn.execute("""
        CREATE OR REPLACE FUNCTION pg_temp.loupe_random64() RETURNS bigint LANGUAGE sql VOLATILE
        RETURN (floor(random() * 4294967296)::bigint << 32) # floor(random() * 4294967296)::bigint
    """)
    viewer = {"see_all": True, "principals": []}
    for kind in kinds:
        conn.execute("DELETE FROM asset WHERE tenant_id = %s", (t,))
        conn.execute("DROP INDEX IF EXISTS asset_phash_p0_idx, asset_phash_p1_idx, "
                     "asset_phash_p2_idx, asset_phash_p3_idx")
        started = time.perf_counter()
        with conn.transaction():
            conn.execute("SELECT setseed(0.5)")
            conn.execute("""
                INSERT INTO asset (tenant_id, content_sha256, byte_size, media_type, width, height)
                SELECT %(t)s, int8send(g), 1, 'image/jpeg', 1, 1 FROM generate_series(1, %(n)s) g
            """, {"t": t, "n": n})
            if kind == "random":
                conn.execute("""
                    INSERT INTO asset_phash (asset_id, tenant_id, phash, dhash)
                    SELECT id, %(t)s, (floor(random() * 4294967296)::bigint << 32)
                                      # floor(random() * 4294967296)::bigint, 0
                    FROM asset WHERE tenant_id = %(t)s
                """, {"t": t})
            else:  # members of 1,000 clusters: the centre XOR a sparse random mask
                # (the AND of four uniform 64-bit words: each bit set with
                # probability 1/16, so members lie Binomial(64, 1/16) bits
                # from their centre, 4 on average)
                conn.execute("""
                    CREATE TEMP TABLE centre ON COMMIT DROP AS
                    SELECT k, (floor(random() * 4294967296)::bigint << 32)
                              # floor(random() * 4294967296)::bigint AS h
                    FROM generate_series(0, 999) k
                """)
                conn.execute("""
                    INSERT INTO asset_phash (asset_id, tenant_id, phash, dhash)
                    SELECT a.id, %(t)s, c.h # (pg_temp.loupe_random64() & pg_temp.loupe_random64()
                                               & pg_temp.loupe_random64() & pg_temp.loupe_random64()), 0
                    FROM asset a JOIN centre c ON c.k = a.id %% 1000
                    WHERE a.tenant_id = %(t)s
                """, {"t": t})
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        for i in range(4):
            conn.execute(f"CREATE INDEX asset_phash_p{i}_idx ON asset_phash (tenant_id, p{i})")
        build_s = time.perf_counter() - started
        conn.execute("ANALYZE asset_phash")
        sample = [r[0] for r in conn.execute(
            "SELECT phash FROM asset_phash ORDER BY asset_id %% 7919, asset_id LIMIT %s", (queries,))]
        rng = random.Random(3)
        probes = [to_signed((h & (2**64 - 1)) ^ sum(1 << b for b in rng.sample(range(64), 2)))
                  for h in sample]
        print(f"\n{kind}: {n:,} hashes loaded in {load_s:.1f} s, four sub-hash indexes built "
              f"in {build_s:.1f} s")
        print("| radius | MIH p50 ms | MIH p95 ms | linear p50 ms | linear p95 ms | ratio (p50) | hits/query |")
        print("|---|---|---|---|---|---|---|")
        for radius in (3, 10, 15):
            mih, lin, found = [], [], []
            for h in probes:
                s = time.perf_counter()
                rows = conn.execute(sq.SIMILAR, {
                    "tenant_id": t, "hash": h, "bits": radius // 4, "radius": radius,
                    "exclude": None, "limit": 100_000, "offset": 0, **viewer}).fetchall()
                mih.append((time.perf_counter() - s) * 1000)
                s = time.perf_counter()
                lrows = conn.execute(sq.SIMILAR_LINEAR, {
                    "tenant_id": t, "hash": h, "radius": radius, "limit": 100_000}).fetchall()
                lin.append((time.perf_counter() - s) * 1000)
                assert [r[:2] for r in rows] == [tuple(r) for r in lrows], "MIH != linear"
                found.append(len(rows))
            print(f"| {radius} | {pct(mih, 50):.2f} | {pct(mih, 95):.2f} | {pct(lin, 50):.1f} | "
                  f"{pct(lin, 95):.1f} | {pct(lin, 50) / pct(mih, 50):.1f}x | "
                  f"{statistics.mean(found):.1f} |")
    lib.close()


def run_duplicates(n: int, database_url: str | None) -> None:
    """Time ``duplicate_groups`` (NEAR_PAIRS + union-find) over n random hashes."""
    from loupe import Library
    from loupe.similar.search import duplicate_groups

    tmp = Path(tempfile.mkdtemp(prefix="loupe-dup-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    lib = Library.open(tmp / "home", database_url=database_url, create=True)
    with lib.conn.transaction():
        lib.conn.execute("SELECT setseed(0.42)")
        lib.conn.execute("""
            INSERT INTO asset (tenant_id, content_sha256, byte_size, media_type, width, height)
            SELECT %(t)s, int8send(g), 1, 'image/jpeg', 1, 1 FROM generate_series(1, %(n)s) g
        """, {"t": lib.tenant_id, "n": n})
        lib.conn.execute("""
            INSERT INTO asset_phash (asset_id, tenant_id, phash, dhash)
            SELECT id, %(t)s, (floor(random() * 4294967296)::bigint << 32)
                              # floor(random() * 4294967296)::bigint, 0
            FROM asset WHERE tenant_id = %(t)s
        """, {"t": lib.tenant_id})
    lib.conn.execute("ANALYZE asset_phash")
    for radius in (3, 10):
        started = time.perf_counter()
        groups = duplicate_groups(lib.conn, lib.tenant_id, radius=radius,
                                  viewer={"see_all": True, "principals": []})
        print(f"duplicates: {n:,} random hashes, radius {radius}: {len(groups)} groups "
              f"in {time.perf_counter() - started:.1f} s")
    lib.close()


def smoke_images(folder: Path) -> None:
    """Six generated pictures (shapes on gradients) for --smoke."""
    rng = random.Random(5)
    for k in range(6):
        im = Image.new("RGB", (160, 120), (rng.randrange(256), rng.randrange(256), 90))
        d = ImageDraw.Draw(im)
        for _ in range(8):
            x, y = rng.randrange(160), rng.randrange(120)
            d.ellipse((x, y, x + rng.randrange(20, 70), y + rng.randrange(20, 60)),
                      fill=(rng.randrange(256), rng.randrange(256), rng.randrange(256)))
        im.save(folder / f"s{k}.png")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--transforms", type=Path, metavar="DIR")
    ap.add_argument("--radii", default="4,6,8,10,12,14")
    ap.add_argument("--pairs", type=int, help="sample this many pairs of different originals")
    ap.add_argument("--hashes", type=int)
    ap.add_argument("--kinds", default="random,clustered")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--duplicates", type=int, metavar="N",
                    help="time loupe duplicates over N random hashes")
    ap.add_argument("--database-url")
    ap.add_argument("--smoke", action="store_true", help="tiny run of both parts (seconds)")
    args = ap.parse_args()
    radii = [int(r) for r in args.radii.split(",")]
    if args.smoke:
        folder = Path(tempfile.mkdtemp(prefix="loupe-sim-img-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        smoke_images(folder)
        run_transforms(folder, radii, None)
        run_speed(2_000, 10, args.database_url, ["random", "clustered"])
        run_duplicates(2_000, args.database_url)
        return
    if args.transforms:
        run_transforms(args.transforms, radii, args.pairs)
    if args.hashes:
        run_speed(args.hashes, args.queries, args.database_url, args.kinds.split(","))
    if args.duplicates:
        run_duplicates(args.duplicates, args.database_url)
    if not (args.transforms or args.hashes or args.duplicates):
        ap.error("give --transforms DIR, --hashes N, --duplicates N or --smoke")


if __name__ == "__main__":
    main()
