"""CPU time of the per-file pixel work of ingest, before and after the
decode-once change, interleaved file by file so that the machine's load
weighs on every variant alike.

Usage:
    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/pixel_work_cpu.py FOLDER [--methods 4,2]
    .venv/bin/python benchmarks/pixel_work_cpu.py --smoke    # seconds: benchmarks/ingest.py's folder

For each image under FOLDER (sidecars skipped), on one thread, measured with
``time.thread_time`` (CPU seconds of this thread):

- ``before``: what ingest did up to commit 4090c2c — SHA-256; decode and
  WebP thumbnail (method 4); the perceptual hashes decoding the file again
  (``imagehash`` converting it to greyscale once per hash); the machine words
  decoding it a third time;
- ``after mM``: SHA-256; :func:`loupe.ingest.image.decode_image` with the
  thumbnail at WebP method M; hashes and machine words on the decoded pixels
  (:meth:`~loupe.ingest.image.DecodedImage.same_as_decoding`).

Prints ms per file for each variant and the thumbnail bytes per file. The
ExifTool read, metadata and database work are not included
(``benchmarks/ingest_cpu.py`` measures the whole ingest).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

from PIL import Image

from loupe.ingest import image, perceptual
from loupe.ingest.image import decode_image, inspect_image, sha256_file
from loupe.pixels import analyse


def _old_hash(path: str, fh) -> None:
    """The hashes as commit 4090c2c computed them: a fresh decode, RGB, and
    greyscale conversion inside each of phash and dhash."""
    import imagehash
    from PIL import ImageOps

    fh.seek(0)
    with Image.open(fh) as im:
        if im.format == "JPEG":
            im.draft("RGB", (perceptual.DECODE_SIDE, perceptual.DECODE_SIDE))
        frame = ImageOps.exif_transpose(im)
        if frame.mode not in ("RGB", "L"):
            frame = frame.convert("RGB")
        imagehash.phash(frame, hash_size=8)
        imagehash.dhash(frame, hash_size=8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--smoke", action="store_true",
                    help="seconds: the generated folder of benchmarks/ingest.py --smoke")
    ap.add_argument("--methods", default="4,2", help="WebP methods of the 'after' variants")
    args = ap.parse_args()
    if args.smoke:
        import sys
        sys.path.insert(0, str(Path(__file__).parent))
        from ingest import smoke_library
        with tempfile.TemporaryDirectory(prefix="loupe-pixcpu-smoke-") as tmp:
            folder = smoke_library(Path(tmp))
            (folder / "city" / "broken.jpg").unlink()   # pixels only: no bad file here
            run(folder, [int(m) for m in args.methods.split(",")])
        return
    if args.folder is None:
        ap.error("give a folder, or --smoke")
    run(args.folder, [int(m) for m in args.methods.split(",")])


def run(folder: Path, methods: list[int]) -> None:
    """Measure and print (see the module docstring)."""
    files = sorted(str(p) for p in folder.rglob("*")
                   if p.is_file() and not p.name.endswith(".xmp"))
    cpu: dict[str, float] = {}
    size: dict[str, int] = {}
    tick = time.thread_time
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="loupe-pixcpu-") as tmp:
        thumb = Path(tmp) / "t.webp"
        for f in files:
            with open(f, "rb") as fh:
                t = tick()
                sha256_file(f, fh)
                image.THUMBNAIL_WEBP_METHOD = 4
                inspect_image(f, thumb, fileobj=fh)
                _old_hash(f, fh)
                analyse.analyse_file(f, fh)
                cpu["before"] = cpu.get("before", 0.0) + tick() - t
                size["before"] = size.get("before", 0) + thumb.stat().st_size
                thumb.unlink()
                for m in methods:
                    key = f"after m{m}"
                    image.THUMBNAIL_WEBP_METHOD = m
                    t = tick()
                    sha256_file(f, fh)
                    with decode_image(f, thumb, fileobj=fh) as d:
                        perceptual.hash_file(f, fh, d)
                        analyse.analyse_file(f, fh, d)
                    cpu[key] = cpu.get(key, 0.0) + tick() - t
                    size[key] = size.get(key, 0) + thumb.stat().st_size
                    thumb.unlink()
    n = len(files)
    print(f"{n} files under {folder}")
    for key in cpu:
        print(f"{key:10s} {1000 * cpu[key] / n:6.2f} ms CPU per file, thumbnail "
              f"{size[key] / n / 1024:5.1f} KiB per file")


if __name__ == "__main__":
    main()
