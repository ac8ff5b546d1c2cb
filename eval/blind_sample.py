"""Draw the blind-query sample of the demo library and make its pixels-only copies.

Usage:
    .venv/bin/python eval/blind_sample.py demo/library OUT_DIR

Reads ``demo/library.manifest.jsonl`` (built by ``scripts/build_demo_library.sh``),
keeps one row per distinct picture (content hash), and draws a fixed number of
pictures from each stratum (source × kind, table ``PER_STRATUM``) in the order
of ``sha256("loupe-blind-2026:" + content hash)`` — deterministic, no other
randomness. Each drawn picture is written to ``OUT_DIR/pics/pNNN.png``:
EXIF orientation applied, converted to RGB(A) PNG, at most 1,024 px on its long
side, with no metadata chunk, under an opaque name whose number follows the
draw order (not the source, folder or title). For viewing, a picture under
320 px on its long side is enlarged (nearest neighbour) to about 320 px, and
transparency is shown as the usual grey checkerboard; ``OUT_DIR/sizes.txt``
gives each picture's original pixel size and whether it has transparency
(pixel facts a viewer of the original would see). ``OUT_DIR/key.jsonl`` maps each
opaque name to its library path, content hash, stratum and split; writers and
judges are never shown it.

Split (E3: tune on one split, report on the other): by picture, never by
query — ``tune`` when the first byte of the draw hash is even, else ``test``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from PIL import Image, ImageOps

PER_STRATUM = {
    ("clipart", "clipart"): 14, ("food", "photo"): 24, ("gcompris", "artwork"): 6,
    ("gcompris", "clipart"): 14, ("gcompris", "photo"): 18, ("scikit-image", "clipart"): 4,
    ("scikit-image", "photo"): 8, ("tuxpaint", "clipart"): 18, ("tuxpaint", "photo"): 16,
    ("wallpapers", "artwork"): 8, ("wallpapers", "photo"): 6,
}
SALT = "loupe-blind-2026:"
MAX_SIDE = 1024
MIN_SIDE = 320


def for_viewing(im: Image.Image) -> Image.Image:
    """EXIF-oriented, at most MAX_SIDE, small pictures enlarged, alpha on a checkerboard."""
    im = ImageOps.exif_transpose(im)
    alpha = "A" in im.getbands() or "transparency" in im.info
    im = im.convert("RGBA" if alpha else "RGB")
    im.thumbnail((MAX_SIDE, MAX_SIDE))
    if max(im.size) < MIN_SIDE:
        k = max(1, MIN_SIDE // max(im.size))
        im = im.resize((im.width * k, im.height * k), Image.NEAREST)
    if alpha:
        board = Image.new("RGBA", im.size, (255, 255, 255, 255))
        cell = 8
        for y in range(0, im.height, cell):
            for x in range((y // cell) % 2 * cell, im.width, 2 * cell):
                board.paste((204, 204, 204, 255), (x, y, x + cell, y + cell))
        im = Image.alpha_composite(board, im).convert("RGB")
    return im


def draw(manifest: Path) -> list[dict]:
    """The drawn manifest rows, in draw order, each with ``draw`` (hex) and ``split``."""
    rows, seen = [], set()
    for line in manifest.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["sha256"] not in seen:
            seen.add(r["sha256"])
            rows.append(r)
    for r in rows:
        r["draw"] = hashlib.sha256((SALT + r["sha256"]).encode()).hexdigest()
        r["split"] = "tune" if int(r["draw"][:2], 16) % 2 == 0 else "test"
    picked = []
    for (source, kind), n in PER_STRATUM.items():
        pool = sorted((r for r in rows if (r["source"], r["kind"]) == (source, kind)),
                      key=lambda r: r["draw"])
        picked += pool[:n]
    return sorted(picked, key=lambda r: r["draw"])


def main() -> None:
    library, out = Path(sys.argv[1]), Path(sys.argv[2])
    picked = draw(library.parent / (library.name + ".manifest.jsonl"))
    (out / "pics").mkdir(parents=True, exist_ok=True)
    with open(out / "key.jsonl", "w", encoding="utf-8") as key, \
            open(out / "sizes.txt", "w", encoding="utf-8") as sizes:
        for i, r in enumerate(picked, 1):
            name = f"p{i:03d}"
            with Image.open(library / r["path"]) as im:
                w, h = ImageOps.exif_transpose(im).size
                alpha = "A" in im.getbands() or "transparency" in im.info
                for_viewing(im).save(out / "pics" / f"{name}.png")
            sizes.write(f"{name} {w}x{h}{' transparent' if alpha else ''}\n")
            key.write(json.dumps({"pic": name, "path": r["path"], "sha256": r["sha256"],
                                  "source": r["source"], "kind": r["kind"],
                                  "split": r["split"]}) + "\n")
    print(f"{len(picked)} pictures in {out / 'pics'}; key in {out / 'key.jsonl'}")


if __name__ == "__main__":
    main()
