"""Qt resource bundles (.rcc), Qt translations (.qm) and QML string fields."""
from __future__ import annotations

import os
import re
import struct
import zlib

from .common import LANGS, norm_space


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
