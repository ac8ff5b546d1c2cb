"""File and folder names are hostile (N5): whoever can put a file in an
ingested folder, or upload one, names it. No name may reach ExifTool's
``-stay_open`` argument stream as anything but one file argument (a file named
``a.jpg⏎-if⏎system(...)⏎#x.jpg`` ran a command as the ingest user).

Every test runs the real ExifTool on real images; a canary file proves that no
injected command ran."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from imaging import exiftool_write, make_image

from loupe import Library
from loupe.ingest.exiftool_reader import ExifToolReader, display_path, plain_argument

INJECT = 'system("touch CANARY") or 1'

# name (relative to the photos folder) -> title embedded in that file
HOSTILE: dict[str, str] = {
    f"a.jpg\n-if\n{INJECT}\n#x.jpg": "newline if",
    f"b.jpg\r-if\r{INJECT}\r#.jpg": "carriage return",
    "c.jpg\n-execute\n-if\n" + INJECT + "\n#.jpg": "newline execute",
    "-if.jpg": "leading dash if",
    "-@.jpg": "leading dash at",
    "-execute.jpg": "leading dash execute",
    "-b.jpg": "leading dash b",
    "#comment.jpg": "hash",
    """q'"$(touch CANARY)`touch CANARY`.jpg""": "quotes",
    "L" * 240 + ".jpg": "very long",
    "holiday photo.jpg": "spaces",
    " lead.jpg": "leading space",
    "trail /inside.jpg": "folder with a trailing space",
    "sep\u2028line.jpg": "line separator",
    f"dir\n-if\n{INJECT}\n#/inside.jpg": "newline folder",
    "-@/inside.jpg": "dash folder",
}
NOT_UTF8 = b"bad\xff\xfe name.jpg"


def _tree(photos: Path) -> dict[str, str]:
    """Write normal.jpg and every hostile name (each a distinct image with its own
    title, embedded while the file still had a plain name). Returns path -> title."""
    expected = {}
    colours = iter(range(10, 250, 12))
    items = [("normal.jpg", "plain normal")] + list(HOSTILE.items())
    for i, (name, title) in enumerate(items):
        plain = make_image(photos / f"plain{i}.jpg", color=(next(colours), 90, 30))
        exiftool_write(plain, f"-XMP-dc:Title={title}")
        target = photos / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(plain, target)
        expected[str(target)] = title
    bad = make_image(photos / "plain_bad.jpg", color=(5, 250, 5))
    exiftool_write(bad, "-XMP-dc:Title=not utf8")
    os.rename(bad, os.path.join(os.fsencode(photos), NOT_UTF8))
    return expected


def _titles(lib: Library) -> dict[str, str]:
    """path -> title of every file the library holds."""
    out = {}
    for (asset_id,) in lib.conn.execute("SELECT id FROM asset WHERE tenant_id = %s",
                                        (lib.tenant_id,)):
        for f in lib.show(asset_id)["files"]:
            out[f["path"]] = f["metadata"]["title"]["x-default"]
    return out


def test_hostile_names_run_nothing_and_are_read_as_themselves(
        lib: Library, photos: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    expected = _tree(photos)
    monkeypatch.chdir(tmp_path)          # ExifTool's working folder: where "touch" would write

    summary = lib.ingest(photos)

    assert list(tmp_path.rglob("CANARY*")) == []
    assert summary.files_seen == len(HOSTILE) + 2
    assert summary.new_assets == len(HOSTILE) + 1
    bad_shown = display_path(os.fsdecode(os.path.join(os.fsencode(photos), NOT_UTF8)))
    assert [(f.path, f.kind) for f in summary.failures] == [(bad_shown, "name")]
    assert "not valid UTF-8" in summary.failures[0].reason
    assert bad_shown.endswith("bad\\xff\\xfe name.jpg")
    # every other file was read, each with its own metadata (not a neighbour's)
    assert _titles(lib) == expected
    assert summary.warnings == []


def test_reader_reads_unsafe_names_through_an_alias(photos: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch):
    _tree(photos)
    monkeypatch.chdir(tmp_path)
    newline = str(photos / f"a.jpg\n-if\n{INJECT}\n#x.jpg")
    not_utf8 = os.fsdecode(os.path.join(os.fsencode(photos), NOT_UTF8))
    dash_rel = "-if.jpg"
    monkeypatch.chdir(photos)            # a relative name starting with a dash
    with ExifToolReader() as reader:
        raw = reader.read([newline, not_utf8, dash_rel, str(photos / "normal.jpg")])
        alias_dir = reader._alias_dir
        assert alias_dir is not None and (os.stat(alias_dir).st_mode & 0o777) == 0o700
        assert os.listdir(alias_dir) == []   # aliases live only during one read
    assert not os.path.exists(alias_dir)
    assert list(tmp_path.rglob("CANARY*")) == []
    assert raw[newline]["XMP-dc:Title"] == "newline if"
    assert raw[newline]["SourceFile"] == newline
    assert raw[newline]["System:FileName"] == f"a.jpg\n-if\n{INJECT}\n#x.jpg"
    assert raw[newline]["System:Directory"] == str(photos)
    assert raw[not_utf8]["XMP-dc:Title"] == "not utf8"
    assert raw[not_utf8]["System:FileName"] == "bad\\xff\\xfe name.jpg"
    assert raw[dash_rel]["XMP-dc:Title"] == "leading dash if"
    assert raw[str(photos / "normal.jpg")]["XMP-dc:Title"] == "plain normal"


def test_only_regular_files_reach_exiftool(photos: Path, tmp_path: Path):
    (photos / "folder.jpg").mkdir()
    (photos / "link.jpg").symlink_to(tmp_path)
    with ExifToolReader() as reader:
        raw = reader.read([str(photos / "folder.jpg"), str(photos / "link.jpg"),
                           str(photos / "missing.jpg")])
    assert raw[str(photos / "folder.jpg")] == {"ExifTool:Error": "not a regular file"}
    assert raw[str(photos / "link.jpg")] == {"ExifTool:Error": "not a regular file"}
    assert raw[str(photos / "missing.jpg")] == {
        "ExifTool:Error": "cannot open the file: No such file or directory"}


@pytest.mark.parametrize("arg, plain", [
    ("/photos/a.jpg", True),
    ("/photos/été 2024/ß.jpg", True),
    ("/photos/-@.jpg", True),                 # absolute: never an option
    ("-@.jpg", False),
    ("photos/a.jpg", False),
    ("/photos/a.jpg\n-if", False),
    ("/photos/a\r.jpg", False),
    ("/photos/a.jpg ", False),
    ("/photos/a\u2028.jpg", False),
    ("/photos/a\udcff.jpg", False),           # a byte that is not UTF-8
    ("/photos/\x1b[31m.jpg", False),
])
def test_plain_argument(arg: str, plain: bool):
    assert plain_argument(arg) is plain
