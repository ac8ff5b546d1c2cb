"""Source: desktop wallpapers (KDE Plasma, MATE)"""
from __future__ import annotations

import glob
import json
import os
import re
import xml.etree.ElementTree as ET

from .common import Item, LANGS, dedupe, file_mtime, norm_space, safe_name
from .licences import clean_creators, normalise_licence, rights_line
from .credits import Credits, parse_credit_stanzas


# --------------------------------------------------------------------------
# Source: desktop wallpapers (KDE Plasma, MATE)
# --------------------------------------------------------------------------

# Plasma wallpapers that are photographs (the rest are digital artwork);
# the metadata does not say, so this was decided by looking at them.
PLASMA_PHOTOS = {"BytheWater", "ColdRipple", "ColorfulCups", "DarkestHour", "EveningGlow",
                 "FallenLeaf", "Grey", "Kite", "OneStandsOut", "Path", "summer_1am"}


def largest_image(folder: str) -> str | None:
    """The ``WIDTHxHEIGHT.ext`` file with the most pixels (ties: larger file)."""
    best = None
    for path in sorted(glob.glob(os.path.join(folder, "*"))):
        m = re.match(r"(\d+)x(\d+)\.", os.path.basename(path))
        if m:
            key = (int(m.group(1)) * int(m.group(2)), os.path.getsize(path), path)
            best = max(best, key) if best else key
    return best[2] if best else None


def plasma_metadata(folder: str) -> dict:
    """Name (+fr/de/es), authors and licence from metadata.json or .desktop."""
    js = os.path.join(folder, "metadata.json")
    if os.path.exists(js):
        kp = json.load(open(js, encoding="utf-8"))["KPlugin"]
        names = {"x-default": kp.get("Name", "")}
        names |= {lang: kp[f"Name[{lang}]"] for lang in LANGS if kp.get(f"Name[{lang}]")}
        return {"title": names, "authors": [a.get("Name", "") for a in kp.get("Authors", [])],
                "licence": kp.get("License", ""), "description": kp.get("Description", "")}
    entries = {}
    for line in open(os.path.join(folder, "metadata.desktop"), encoding="utf-8"):
        if "=" in line and not line.startswith("#"):
            k, v = line.rstrip("\n").split("=", 1)
            entries.setdefault(k.strip(), v.strip())
    names = {"x-default": entries.get("Name", "")}
    names |= {lang: entries[f"Name[{lang}]"] for lang in LANGS if entries.get(f"Name[{lang}]")}
    return {"title": names, "authors": [entries.get("X-KDE-PluginInfo-Author", "")],
            "licence": entries.get("X-KDE-PluginInfo-License", ""),
            "description": entries.get("Comment", "")}


def collect_plasma(pkg_root: str) -> list:
    """KDE Plasma wallpapers: the largest rendition of each, EXIF+XMP embedded."""
    root = os.path.join(pkg_root, "usr/share/wallpapers")
    items = []
    for wid in sorted(os.listdir(root)):
        folder = os.path.join(root, wid)
        img = largest_image(os.path.join(folder, "contents/images"))
        if not img:
            continue
        meta = plasma_metadata(folder)
        licence, url = normalise_licence(meta["licence"])
        authors = dedupe(meta["authors"])
        ext = os.path.splitext(img)[1].lower()
        items.append(Item(
            source="wallpapers", rel=f"wallpapers/plasma/{safe_name(wid)}{ext}",
            mtime=file_mtime(img), kind="photo" if wid in PLASMA_PHOTOS else "artwork",
            title={k: norm_space(v) for k, v in meta["title"].items() if v},
            description={"x-default": meta["description"]} if meta["description"] else {},
            keywords=["wallpaper", "KDE Plasma"], creators=authors,
            rights=rights_line(", ".join(authors), licence), licence=licence, licence_url=url,
            embed="exif", src_path=img,
            extra={"wallpaper_id": wid, "size": os.path.basename(img).split(".")[0]},
        ))
    return items


def collect_mate(pkg_root: str) -> list:
    """MATE backgrounds: names (+translations), artists and the translators'
    descriptions from the background-properties XML, licences from copyright."""
    xml_dir = os.path.join(pkg_root, "usr/share/mate-background-properties")
    bg_root = os.path.join(pkg_root, "usr/share/backgrounds/mate")
    credits = Credits()
    credits.add(parse_credit_stanzas(open(os.path.join(
        pkg_root, "usr/share/doc/mate-backgrounds/copyright"), encoding="utf-8").read()))
    items = []
    xml_lang = "{http://www.w3.org/XML/1998/namespace}lang"
    for xml_name in sorted(os.listdir(xml_dir)):
        text = open(os.path.join(xml_dir, xml_name), encoding="utf-8").read()
        # comments carry the descriptions; keep them as elements for the parser
        text = re.sub(r"<!--(.*?)-->", lambda m: "<comment>%s</comment>" % m.group(1)
                      .replace("&", "&amp;").replace("<", "&lt;"), text, flags=re.S)
        text = re.sub(r"<!DOCTYPE[^>]*>", "", text)
        for wp in ET.fromstring(text).findall("wallpaper"):
            filename = (wp.findtext("filename") or "").strip()
            if not filename.startswith("/usr/share/backgrounds/mate/"):
                continue
            src = os.path.join(pkg_root, filename.lstrip("/"))
            if not os.path.exists(src):
                continue
            rel_in_pkg = os.path.relpath(src, bg_root)
            title = {}
            for n in wp.findall("name"):
                lang = n.get(xml_lang) or "x-default"
                if lang in ("x-default",) + LANGS and n.text:
                    title.setdefault(lang, norm_space(n.text))
            desc = ""
            for c in wp.findall("comment"):
                m = re.search(r"(This is the name of a desktop background image[^.]*\.)", c.text or "")
                if m:
                    desc = norm_space(m.group(1))
            cred = credits.lookup(rel_in_pkg)
            licence, url = normalise_licence(cred.get("license", ""))
            artists = dedupe((wp.findtext("artist") or "").split(",")) \
                or clean_creators(cred.get("copyright", ""))
            folder = rel_in_pkg.split(os.sep)[0]
            stem, ext = os.path.splitext(os.path.basename(src))
            items.append(Item(
                source="wallpapers",
                rel=f"wallpapers/mate/{safe_name(folder)}/{safe_name(stem)}{ext.lower()}",
                mtime=file_mtime(src), kind="photo" if folder == "nature" else "artwork",
                title=title, description={"x-default": desc} if desc else {},
                keywords=["wallpaper", "MATE", folder], creators=artists,
                rights=rights_line(cred.get("copyright", ", ".join(artists)), licence),
                licence=licence, licence_url=url, embed="exif", src_path=src,
                extra={"mate_path": rel_in_pkg},
            ))
    return items
