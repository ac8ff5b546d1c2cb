"""Source: Open Clip Art Library"""
from __future__ import annotations

import collections
import hashlib
import os
import xml.etree.ElementTree as ET

from .common import Item, dedupe, file_mtime, norm_space, safe_name
from .licences import normalise_licence, rights_line


# --------------------------------------------------------------------------
# Source: Open Clip Art Library
# --------------------------------------------------------------------------

SVG_NS = {"dc": "http://purl.org/dc/elements/1.1/", "cc": "http://web.resource.org/cc/",
          "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#"}
OPENCLIPART_SKIP = {"unsorted", "special", "logos", "buttons"}


def openclipart_svg_metadata(svg_path: str) -> dict | None:
    """Title, description, keywords, creator and licence from the SVG's RDF."""
    try:
        root = ET.parse(svg_path).getroot()
    except ET.ParseError:
        return None
    work = root.find(".//cc:Work", SVG_NS)
    if work is None or next(root.iter("{http://www.w3.org/2000/svg}image"), None) is not None:
        return None  # no metadata, or built on a bitmap (often a missing linked file)

    def txt(path):
        el = work.find(path, SVG_NS)
        return norm_space(el.text) if el is not None and el.text else ""

    lic = work.find("cc:license", SVG_NS)
    return {
        "title": txt("dc:title"),
        "description": txt("dc:description"),
        "keywords": dedupe(li.text or "" for li in work.findall("dc:subject/rdf:Bag/rdf:li", SVG_NS)),
        "creator": txt("dc:creator/cc:Agent/dc:title"),
        "licence_url": lic.get("{%s}resource" % SVG_NS["rdf"], "") if lic is not None else "",
    }


def collect_openclipart(png_pkg: str, svg_pkg: str, per_category: int) -> list:
    """A deterministic subset of Open Clip Art PNGs, metadata from the SVGs.

    For each top-level category (skipping unsorted/special/logos/buttons),
    candidates are sorted by the SHA-256 of their relative path and the
    first ``per_category`` public-domain ones with a title and at least two
    keywords are kept.  Symlinked duplicates are ignored.
    """
    png_root = os.path.join(png_pkg, "usr/share/openclipart/png")
    svg_root = os.path.join(svg_pkg, "usr/share/openclipart/svg")
    by_cat = collections.defaultdict(list)
    for dirpath, dirnames, filenames in os.walk(png_root):
        dirnames.sort()
        for fn in sorted(filenames):
            path = os.path.join(dirpath, fn)
            if fn.endswith(".png") and not os.path.islink(path):
                rel = os.path.relpath(path, png_root)
                by_cat[rel.split(os.sep)[0]].append(rel)
    items = []
    for cat in sorted(by_cat):
        if cat in OPENCLIPART_SKIP:
            continue
        chosen = 0
        for rel in sorted(by_cat[cat], key=lambda r: hashlib.sha256(r.encode()).hexdigest()):
            if chosen >= per_category:
                break
            meta = openclipart_svg_metadata(os.path.join(svg_root, rel[:-4] + ".svg"))
            if not meta or not meta["title"] or len(meta["keywords"]) < 2:
                continue
            licence, url = normalise_licence(
                "public domain" if "publicdomain" in meta["licence_url"].lower() else meta["licence_url"])
            if licence != "public-domain":
                continue
            chosen += 1
            parts = rel.split(os.sep)
            items.append(Item(
                source="clipart",
                rel="/".join(["clipart"] + [safe_name(p) for p in parts[:-1]]
                             + [safe_name(parts[-1][:-4]) + ".png"]),
                mtime=file_mtime(os.path.join(png_root, rel)), kind="clipart",
                title={"x-default": meta["title"]},
                description={"x-default": meta["description"]} if meta["description"] else {},
                keywords=meta["keywords"],
                creators=[meta["creator"]] if meta["creator"] else [],
                rights=rights_line(meta["creator"], "public domain"),
                licence=licence, licence_url=url,
                source_url="http://www.openclipart.org",
                src_path=os.path.join(png_root, rel),
                extra={"openclipart_path": rel, "licence_as_stated": meta["licence_url"]},
            ))
    return items
