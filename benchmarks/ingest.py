"""Ingest throughput and peak memory on a real library (the ingest throughput target).

Usage:
    .venv/bin/python benchmarks/ingest.py DEMO_DIR [--workers N] [--database-url URL]
    .venv/bin/python benchmarks/ingest.py --smoke     # seconds: a generated folder (CI)

Ingests DEMO_DIR into a fresh library home (embedded PostgreSQL unless a URL is
given), then re-runs the ingest to measure the incremental (nothing changed)
path. As a peer in the same process it runs the bare per-file work with no
database at all — ExifTool read (batch mode), SHA-256, full decode and
thumbnail — so the ratio shows what storing assets and search documents costs.

Prints assets/s, files/s, the ratio to the peer, and peak resident memory of
this process and of its child processes (ExifTool). The PostgreSQL server is a
separate daemon; its settings are PostgreSQL's defaults (shared_buffers 128 MB).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from loupe import Library
from loupe.db.server import stop_embedded
from loupe.ingest.image import inspect_image, sha256_file
from loupe.ingest.exiftool_reader import ExifToolReader
from loupe.ingest.metadata import normalize
from loupe.ingest.pipeline import BATCH_SIZE
from loupe.ingest.walk import walk


def peer_run(root: Path, thumbs: Path, workers: int) -> tuple[int, float]:
    """The same file work as ingest, without a database. Returns (files, seconds)."""
    files = walk(root)
    start = time.perf_counter()
    with ExifToolReader() as reader, ThreadPoolExecutor(workers) as pool:
        for i in range(0, len(files), BATCH_SIZE):
            batch = files[i:i + BATCH_SIZE]
            paths = [f.path for f in batch] + [f.sidecar_path for f in batch if f.sidecar_path]
            raw = reader.read(paths)

            def work(f, raw=raw):
                try:
                    sha = sha256_file(f.path).hex()
                    inspect_image(f.path, thumbs / sha[:2] / f"{sha}.webp")
                    normalize(raw.get(f.path, {}))
                except Exception:
                    pass

            list(pool.map(work, batch))
    return len(files), time.perf_counter() - start


def smoke_library(folder: Path, n: int = 40) -> Path:
    """n small JPEG/PNG images in two folders, every fourth with an XMP sidecar,
    one corrupt file: the paths a real ingest takes, in seconds."""
    from PIL import Image

    for i in range(n):
        sub = folder / ("beach" if i % 2 else "city")
        sub.mkdir(parents=True, exist_ok=True)
        ext = "png" if i % 3 == 0 else "jpg"
        Image.new("RGB", (64 + i, 48), (i * 6 % 256, 90, 200 - i)).save(sub / f"photo_{i}.{ext}")
        if i % 4 == 0:
            (sub / f"photo_{i}.{ext}.xmp").write_text(
                '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
                'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
                'xmlns:dc="http://purl.org/dc/elements/1.1/"><rdf:Description rdf:about="">'
                f'<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Sunset number {i}</rdf:li>'
                '</rdf:Alt></dc:title></rdf:Description></rdf:RDF></x:xmpmeta>')
    (folder / "city" / "broken.jpg").write_bytes(b"not a jpeg")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("library", type=Path, nargs="?")
    ap.add_argument("--smoke", action="store_true",
                    help="seconds: a generated folder of 40 images with sidecars (CI runs this)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--database-url", default=None)
    ap.add_argument("--languages", default="en", help="library languages, e.g. en,fr,de,es")
    args = ap.parse_args()
    workers = args.workers or min(4, os.cpu_count() or 1)
    tmp = Path(tempfile.mkdtemp(prefix="loupe-bench-"))
    if args.smoke:
        args.library = smoke_library(tmp / "smoke")
    elif args.library is None:
        ap.error("give a library folder, or --smoke")
    try:
        n_files, peer_s = peer_run(args.library, tmp / "peer-thumbs", workers)
        with Library.open(tmp / "home", database_url=args.database_url, create=True) as lib:
            lib.init(languages=args.languages.split(","))
            t0 = time.perf_counter()
            first = lib.ingest(args.library)
            first_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            second = lib.ingest(args.library)
            second_s = time.perf_counter() - t0
            stats = lib.stats()
        stored = first.new_assets + first.duplicates + first.updated
        print(f"library: {args.library}  files: {n_files}  workers: {workers}  "
              f"cores: {os.cpu_count()}  languages: {args.languages}")
        print(f"first ingest:  {first.new_assets} assets + {first.duplicates} duplicate paths, "
              f"{first.failed} failed, in {first_s:.1f} s -> {first.new_assets / first_s:.1f} assets/s, "
              f"{stored / first_s:.1f} files/s")
        print(f"peer (no database, same file work): {n_files} files in {peer_s:.1f} s -> "
              f"{n_files / peer_s:.1f} files/s; Loupe/peer time ratio {first_s / peer_s:.2f}")
        print(f"re-ingest, nothing changed: {second.unchanged} unchanged in {second_s:.2f} s")
        print(f"documents: {stats['documents']}")
        self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak RSS: this process {self_mb:.0f} MiB, largest child (ExifTool) {child_mb:.0f} MiB")
    finally:
        # the embedded server stopped before its folder goes: the exit hook
        # cannot stop a server whose data folder is gone (it outlived the run)
        if (tmp / "home" / "pgdata" / "postmaster.pid").exists():
            stop_embedded(tmp / "home" / "pgdata", force=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
