"""The demo builder's parsers (scripts/demo/demo_builder), without the
downloaded sources: Qt resource bundles and translations built here byte by
byte from their documented layouts, credit stanzas as Debian and GCompris
write them, licence statements as the sources spell them."""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "demo"))

from demo_builder.common import humanise, safe_name  # noqa: E402
from demo_builder.credits import Credits, parse_credit_stanzas  # noqa: E402
from demo_builder.licences import (clean_creators, normalise_licence, rights_line,  # noqa: E402
                                   wikimedia_title)
from demo_builder.qt import QM_MAGIC, js_unescape, qml_fields, read_qm, read_rcc  # noqa: E402


# -- Qt resource bundles (.rcc) ------------------------------------------------------

def rcc(version: int, tree: dict, compress: set = frozenset(), zstd: set = frozenset()) -> bytes:
    """A Qt binary resource file holding ``tree`` ({name: bytes | {subtree}}),
    laid out as Qt's rcc writes it: nodes breadth first, each directory's
    children contiguous; names u16 length + u32 hash + UTF-16BE; data u32
    size + bytes (qCompress: u32 uncompressed size + zlib stream)."""
    names, name_off = bytearray(), {}
    data = bytearray()
    nodes: list[bytes] = []
    extra = b"" if version == 1 else struct.pack(">Q", 0)   # last-modified
    queue = [("", tree, "")]
    order = [("", tree, "")]
    while queue:                      # breadth first: every node's index
        _, node, path = queue.pop(0)
        if isinstance(node, dict):
            for name in sorted(node):
                entry = (name, node[name], f"{path}/{name}" if path else name)
                order.append(entry)
                queue.append(entry)

    def name_offset(name: str) -> int:
        if name not in name_off:
            name_off[name] = len(names)
            enc = name.encode("utf-16-be")
            names.extend(struct.pack(">HI", len(name), 0) + enc)
        return name_off[name]

    index = {id(n): i for i, (_, n, _) in enumerate(order)}
    for i, (name, node, path) in enumerate(order):
        off = name_offset(name) if i else 0
        if isinstance(node, dict):
            first = index[id(node[sorted(node)[0]])] if node else 0
            nodes.append(struct.pack(">IHII", off, 2, len(node), first) + extra)
        else:
            flags = 1 if path in compress else 4 if path in zstd else 0
            blob = struct.pack(">I", len(node)) + zlib.compress(node) if flags == 1 else node
            nodes.append(struct.pack(">IHHHI", off, flags, 0, 1, len(data)) + extra)
            data.extend(struct.pack(">I", len(blob)) + blob)
    head = 20 + (4 if version >= 3 else 0)
    tree_off = head
    tree_bytes = b"".join(nodes)
    data_off = tree_off + len(tree_bytes)
    names_off = data_off + len(data)
    out = b"qres" + struct.pack(">IIII", version, tree_off, data_off, names_off)
    if version >= 3:
        out += struct.pack(">I", 0)
    return out + tree_bytes + bytes(data) + bytes(names)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_read_rcc_returns_every_file_by_path(tmp_path: Path, version: int):
    tree = {"gcompris": {"src": {"activities": {
        "hexagon": {"resource": {"board.qml": b'"title": qsTr("Hexagon")'}},
        "louis-braille": {"resource": {"chart.svg": b"<svg/>" * 50,
                                       "night.webp": b"RIFF\x00webp"}}}}},
        "top.txt": "é".encode()}
    path = tmp_path / "data.rcc"
    chart = "gcompris/src/activities/louis-braille/resource/chart.svg"
    raw = rcc(version, tree, compress={chart})
    assert b"<svg/>" * 50 not in raw and zlib.compress(b"<svg/>" * 50) in raw
    path.write_bytes(raw)
    assert read_rcc(str(path)) == {
        "gcompris/src/activities/hexagon/resource/board.qml": b'"title": qsTr("Hexagon")',
        "gcompris/src/activities/louis-braille/resource/chart.svg": b"<svg/>" * 50,
        "gcompris/src/activities/louis-braille/resource/night.webp": b"RIFF\x00webp",
        "top.txt": "é".encode(),
    }


def test_read_rcc_refuses_other_files_and_zstd_entries(tmp_path: Path):
    bad = tmp_path / "x.rcc"
    bad.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    with pytest.raises(ValueError, match="not a Qt resource file"):
        read_rcc(str(bad))
    z = tmp_path / "z.rcc"
    z.write_bytes(rcc(2, {"a": {"b.png": b"zz"}}, zstd={"a/b.png"}))
    with pytest.raises(ValueError, match="zstd-compressed entry a/b.png"):
        read_rcc(str(z))


# -- Qt translations (.qm) ------------------------------------------------------------

def qm_field(tag: int, value: bytes | None) -> bytes:
    if value is None:
        return bytes([tag]) + b"\xff\xff\xff\xff"
    return bytes([tag]) + struct.pack(">I", len(value)) + value


def qm(records: list[list[bytes]]) -> bytes:
    """A .qm file: magic, a hashes section (0x42, skipped), the messages
    section (0x69) of tagged records, each closed by tag 1."""
    msgs = b"".join(b"".join(r) + b"\x01" for r in records)
    return (QM_MAGIC + b"\x42" + struct.pack(">I", 8) + b"\x00" * 8
            + b"\x69" + struct.pack(">I", len(msgs)) + msgs)


def test_read_qm_maps_context_and_source_to_the_first_translation(tmp_path: Path):
    path = tmp_path / "gcompris_fr.qm"
    path.write_bytes(qm([
        [qm_field(3, "Lion".encode("utf-16-be")), qm_field(8, b"animal"),
         qm_field(6, b"Lion"), qm_field(7, b"Animals")],
        # an obsolete u32 field (tag 5) is skipped; a later duplicate loses
        [b"\x05" + b"\x00\x00\x00\x07", qm_field(3, "Tigre".encode("utf-16-be")),
         qm_field(6, b"Tiger"), qm_field(7, b"Animals")],
        [qm_field(3, "Tigresse".encode("utf-16-be")), qm_field(6, b"Tiger"),
         qm_field(7, b"Animals")],
        # no translation (null string): left out
        [qm_field(3, None), qm_field(6, b"Zebra"), qm_field(7, b"Animals")],
        [qm_field(3, "Fleuve".encode("utf-16-be")), qm_field(6, "Rivière?".encode())],
    ]))
    assert read_qm(str(path)) == {("Animals", "Lion"): "Lion", ("Animals", "Tiger"): "Tigre",
                                  ("", "Rivière?"): "Fleuve"}


def test_read_qm_refuses_a_file_without_the_magic(tmp_path: Path):
    path = tmp_path / "x.qm"
    path.write_bytes(b"\x00" * 32)
    with pytest.raises(ValueError, match="not a Qt .qm file"):
        read_qm(str(path))


def test_qml_fields_and_js_escapes():
    block = r'''{ "image": "res/lion.webp", text: qsTr("The \"king\"\nof beasts"),
                  "title": qsTr("Li\u00f3n") }'''
    assert qml_fields(block) == {"text": 'The "king" of beasts', "title": "Lión",
                                 "image": "res/lion.webp"}
    assert js_unescape(r"a\tb\\c") == "a b\\c"


# -- credit stanzas ---------------------------------------------------------------------

DEP5 = """\
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tuxpaint-stamps

Files: *
Copyright: 2002-2024 Tux Paint developers
License: GPL-2+

Files: stamps/animals/cats/tiger.png
       stamps/animals/cats/lion.*
Copyright: 2009 Jane Doe <jane@example.org>
License: CC-BY-SA-3.0
Comment: photo cut-out
 by Jane

Files: stamps/nothing.png
Source: https://example.org
"""

README = """\
lion.webp
tiger.jpg
Copyright: Wikimedia user Kay
Licence: CC BY 2.0
Source: https://commons.wikimedia.org/wiki/File:Lion_waiting.jpg
Comments: cropped
"""


def test_parse_credit_stanzas_reads_dep5_and_loose_readme_stanzas():
    assert parse_credit_stanzas(DEP5) == [
        {"files": ["*"], "copyright": "2002-2024 Tux Paint developers", "license": "GPL-2+"},
        {"files": ["stamps/animals/cats/tiger.png", "stamps/animals/cats/lion.*"],
         "copyright": "2009 Jane Doe <jane@example.org>", "license": "CC-BY-SA-3.0",
         "comment": "photo cut-out\nby Jane"},
    ]   # the last stanza has neither copyright nor licence
    assert parse_credit_stanzas(README) == [
        {"files": ["lion.webp", "tiger.jpg"], "copyright": "Wikimedia user Kay",
         "license": "CC BY 2.0",
         "source": "https://commons.wikimedia.org/wiki/File:Lion_waiting.jpg",
         "comment": "cropped"}]


def test_credits_lookup_last_match_wins_extensions_ignored_catch_all_skipped():
    credits = Credits()
    credits.add(parse_credit_stanzas(DEP5))
    credits.add(parse_credit_stanzas(README), prefix="stamps/animals/cats/")
    assert credits.lookup("stamps/animals/cats/tiger.webp")["copyright"] == "Wikimedia user Kay"
    assert credits.lookup("stamps/animals/cats/lion.png")["copyright"] == "Wikimedia user Kay"
    assert credits.lookup("stamps/plants/rose.png") == {}   # "*" names the code's authors


# -- licences and rights ------------------------------------------------------------------

@pytest.mark.parametrize("text, want", [
    ("CC BY-SA 3.0", ("CC-BY-SA-3.0", "https://creativecommons.org/licenses/by-sa/3.0/")),
    ("cc-by-nc-nd-4.0.", ("CC-BY-NC-ND-4.0", "https://creativecommons.org/licenses/by-nc-nd/4.0/")),
    ("CC0", ("CC0-1.0", "https://creativecommons.org/publicdomain/zero/1.0/")),
    ("Public Domain", ("public-domain", "https://creativecommons.org/publicdomain/mark/1.0/")),
    ("PD", ("public-domain", "https://creativecommons.org/publicdomain/mark/1.0/")),
    ("GPL-2+", ("GPL-2.0-or-later", "https://www.gnu.org/licenses/old-licenses/gpl-2.0.html")),
    ("GPLv3", ("GPL-3.0", "https://www.gnu.org/licenses/gpl-3.0.html")),
    ("LGPL-2.0-or-later", ("LGPL-2.0-or-later", "https://www.gnu.org/licenses/lgpl-2.0.html")),
    ("MIT", ("MIT", "https://opensource.org/licenses/MIT")),
    ("Free Art  License.", ("Free Art License", "")),
])
def test_normalise_licence(text: str, want: tuple[str, str]):
    assert normalise_licence(text) == want


def test_rights_line_and_creators_drop_addresses_years_and_signs():
    assert rights_line("2009 Jane Doe <jane@example.org>", "CC-BY-SA-3.0") == \
        "© 2009 Jane Doe. Licence: CC-BY-SA-3.0"
    assert rights_line("Copyright (c) Kay", "") == "Copyright (c) Kay"
    assert clean_creators("© 2009-2011 Jane Doe <jane@example.org>\n(c) by Kay, 2020\nNone\n"
                          "jane doe") == ["Jane Doe", "Kay"]


def test_names_titles_and_file_names():
    assert wikimedia_title("https://commons.wikimedia.org/wiki/File:Grand_Coulee_Dam_spillway.jpg") \
        == "Grand Coulee Dam spillway"
    assert safe_name("Brinjal - all varieties & Co") == "brinjal_all_varieties_and_co"
    assert safe_name("goldenTemple.WEBP") == "golden_temple.webp"
    assert safe_name("***") == "image"
    assert humanise("tiger_sumatran2") == "Tiger sumatran"
