"""Distractors for the larger-haystack measurement (E9).

Usage::

    python eval/e9_distractors.py CACHE OUT_DIR LIMIT [MANIFEST]   # CACHE: scripts/build_demo_library.sh's cache

Writes up to LIMIT Open Clip Art PNGs (Debian ``openclipart-png`` / ``-svg``,
extracted in ``CACHE/root/``) that the demo library does not hold (by their
openclipart path, read from ``demo/library.manifest.jsonl`` or MANIFEST, the
demo library's manifest where it was built elsewhere), each with its
real title, description, keywords and creator from the SVG's RDF, chosen by
the demo builder's own rule (public domain, a title, at least two keywords)
and written by its own writer (XMP sidecars), under ``OUT_DIR/distractors/``.
Order: ``sha256("loupe-e9:" + openclipart path)`` — deterministic.
"""
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts/demo"))
from demo_builder.openclipart import collect_openclipart  # noqa: E402
from demo_builder.writer import make_unique, write_library  # noqa: E402


def main(cache: str, out: str, limit: int, manifest: str | None = None) -> None:
    root = os.path.join(cache, "root")
    demo = set()
    for line in open(manifest or REPO / "demo/library.manifest.jsonl", encoding="utf-8"):
        r = json.loads(line)
        if r.get("openclipart_path"):
            demo.add(r["openclipart_path"])
    items = collect_openclipart(os.path.join(root, "openclipart-png"),
                                  os.path.join(root, "openclipart-svg"), 100000)
    items = [it for it in items if it.extra["openclipart_path"] not in demo]
    items.sort(key=lambda it: hashlib.sha256(
        ("loupe-e9:" + it.extra["openclipart_path"]).encode()).hexdigest())
    items = items[:limit]
    for it in items:
        it.rel = "distractors/" + it.rel
        it.source = "distractor"
    make_unique(items)
    recs = write_library(items, os.path.abspath(out), shutil.which("exiftool") or "exiftool")
    print(f"{len(recs)} distractors written to {out}")


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:])
