"""Source: Tux Paint stamps"""
from __future__ import annotations

import os
import re

from PIL import Image

from .common import Item, LANGS, dedupe, file_mtime, humanise, norm_space, safe_name
from .licences import clean_creators, normalise_licence, rights_line
from .credits import parse_credit_stanzas


# --------------------------------------------------------------------------
# Source: Tux Paint stamps
# --------------------------------------------------------------------------


def tuxpaint_is_photo(png_path: str) -> bool:
    """Heuristic: a photo cut-out spreads its opaque pixels over many colours.

    Clip art is drawn with flat fills, so its 16 most frequent colours cover
    a large share of the opaque pixels; photo cut-outs stay under 30 %.
    (Checked by eye on contact sheets: a handful of errors among ~780.)
    """
    with Image.open(png_path) as im:
        im = im.convert("RGBA")
        colours = im.getcolors(im.width * im.height) or []
    opaque = sorted((c for c, rgba in colours if rgba[3] > 250), reverse=True)
    total = sum(opaque)
    return bool(total) and sum(opaque[:16]) / total < 0.30


def parse_tuxpaint_caption(txt_path: str) -> dict:
    """First line = English caption; ``fr.utf8=...`` lines = translations."""
    with open(txt_path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().splitlines()
    out = {"x-default": norm_space(lines[0]) if lines else ""}
    for line in lines[1:]:
        m = re.match(r"^([a-z]{2,3})\.utf8=(.*)$", line)
        if m and m.group(1) in LANGS and m.group(1) not in out and m.group(2).strip():
            out[m.group(1)] = norm_space(m.group(2))
    return out


def collect_tuxpaint(pkg_root: str) -> list:
    """Tux Paint stamps: PNG stamps that have a ``<name>.txt`` caption.

    Title = the stamp's file name in words; description = the caption with
    its fr/de/es translations; keywords = the category folders.  SVG-only
    stamps are skipped (Pillow cannot render SVG); a PNG that also has an
    SVG twin, or lives in a ``cartoon`` folder, is clip art; otherwise the
    colour heuristic decides between photo cut-out and clip art.
    """
    root = os.path.join(pkg_root, "usr/share/tuxpaint/stamps")
    lic_stanzas = parse_credit_stanzas(open(os.path.join(
        pkg_root, "usr/share/doc/tuxpaint-stamps-default/copyright"), encoding="utf-8").read())
    main = next((s for s in lic_stanzas if s["files"] == ["*"]), {})
    licence, url = normalise_licence(main.get("license", "GPL-2"))
    items = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            if not fn.endswith(".png"):
                continue
            stem = fn[:-4]
            txt = os.path.join(dirpath, stem + ".txt")
            if not os.path.exists(txt):
                continue  # mirrored variants (foo_mirror.png) have no caption
            png = os.path.join(dirpath, fn)
            reldir = os.path.relpath(dirpath, root)
            parts = [] if reldir == "." else reldir.split(os.sep)
            clipart = os.path.exists(os.path.join(dirpath, stem + ".svg")) or "cartoon" in parts
            kind = "clipart" if clipart or not tuxpaint_is_photo(png) else "photo"
            items.append(Item(
                source="tuxpaint",
                rel="/".join(["tuxpaint"] + [safe_name(p) for p in parts] + [safe_name(stem) + ".png"]),
                mtime=file_mtime(png), kind=kind,
                title={"x-default": humanise(stem)},
                description=parse_tuxpaint_caption(txt),
                keywords=dedupe(p.replace("_", " ") for p in parts),
                creators=clean_creators(main.get("copyright", "")),
                rights=rights_line(main.get("copyright", ""), licence),
                licence=licence, licence_url=url,
                src_path=png,
                extra={"stamp": "/".join(parts + [stem])},
            ))
    return items
