"""Every line the CLI prints is escaped: control characters, escape and OSC
sequences and bidi characters from file names, metadata and error messages
never reach the terminal, and text that looks like rich markup is printed as
written. Real files, real ExifTool, real PostgreSQL, the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from loupe import Library


def test_control_characters_never_reach_the_terminal(db_url: str, home: Path,
                                                           photos: Path):
    """A title with ESC sequences (from a file's metadata) is printed escaped
    by `loupe search` and `loupe show`; a bulk keyword holding a control
    character is refused, and the audit log prints a stored one escaped."""
    import json

    from click.testing import CliRunner
    from imaging import exiftool_write

    from loupe.bulk import BulkError
    from loupe.cli import main
    from loupe.terminal import term as _term

    im = Image.new("RGB", (64, 48), (10, 120, 40))
    im.save(photos / "esc.jpg")
    title = "ansititle \x1b[2J\x1b]0;pwned\x07\x1b[31mRED\r\u202eevil"
    exiftool_write(photos / "esc.jpg", f"-XMP-dc:Title={title}")
    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en"])
        assert lib.ingest(photos).failed == 0
        with pytest.raises(BulkError, match=r"keyword holds the control character '\\r'"):
            lib.bulk("add_keyword", "kw\r\x1b[2K", query="ansititle", confirm=True)
        for bad in ("\u202e", "\u2028", "\u2029"):   # direction and separators too
            with pytest.raises(BulkError, match="control character"):
                lib.bulk("add_to_collection", f"tag{bad}x", query="ansititle", confirm=True)
        # a row stored before this check (or by another writer) is printed escaped
        lib.bulk("add_keyword", "plainkw", query="ansititle", confirm=True)
        lib.conn.execute("UPDATE audit_log SET value = to_jsonb(%s::text)",
                         ("kw\x1b[8mhidden",))
        stored = lib.show(1)["documents"][0]["title"]   # (ExifTool writes ESC and BEL as ".")
    assert stored == "ansititle .[2J.]0;pwned..[31mRED\r\u202eevil"
    assert _term(title) == "ansititle \\x1b[2J\\x1b]0;pwned\\x07\\x1b[31mRED\\r\\u202eevil"
    base = ["--home", str(home), "--database-url", db_url]
    runner = CliRunner()
    out = runner.invoke(main, base + ["search", "ansititle", "--limit", "1"])
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output and "\r" not in out.output and "\u202e" not in out.output
    assert "RED\\r\\u202eevil" in out.output
    out = runner.invoke(main, base + ["show", "1"])
    assert out.exit_code == 0, out.output
    assert "  title: ansititle .[2J.]0;pwned..[31mRED\\r\\u202eevil\n" in out.output
    assert "\x1b" not in out.output.replace("\\x1b", "")
    out = runner.invoke(main, base + ["audit"])
    assert out.exit_code == 0, out.output
    assert "add_keyword kw\\x1b[8mhidden on “ansititle”" in out.output
    assert "\x1b" not in out.output
    assert json.loads(runner.invoke(main, base + ["audit", "--json"]).output)[0]["value"] \
        == "kw\x1b[8mhidden"


def test_an_empty_audit_log_says_so(db_url: str, home: Path):
    """`loupe audit` on a new library printed nothing."""
    from click.testing import CliRunner

    from loupe.cli import main

    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en"])
    out = CliRunner().invoke(main, ["--home", str(home), "--database-url", db_url, "audit"])
    assert (out.exit_code, out.output) == (0, "The audit log is empty: no bulk action and no "
                                              "change to users, groups or grants yet.\n")

def test_every_cli_line_escapes_names(db_url: str, home: Path, photos: Path):
    """Folder and file names with ESC, OSC and bidi characters reach `loupe
    ingest`'s failure lines, `loupe failures` and `loupe collections`: every
    line the CLI prints is escaped (loupe.terminal), not only search, show and
    audit."""
    from click.testing import CliRunner

    from loupe.cli import main

    folder = photos / "esc\x1b[31mdir\u202e"
    folder.mkdir()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(folder / "red.png")
    (folder / "bad\x1b]0;owned\x07.jpg").write_bytes(b"not a picture")
    base = ["--home", str(home), "--database-url", db_url]
    runner = CliRunner()
    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en"])
    outputs = [runner.invoke(main, base + ["ingest", str(photos)]),
               runner.invoke(main, base + ["failures"]),
               runner.invoke(main, base + ["collections"])]
    for out in outputs:
        assert out.exit_code == 0, out.output
        assert not any(c in out.output for c in "\x1b\x07\u202e"), repr(out.output)
    assert "esc\\x1b[31mdir\\u202e/bad\\x1b]0;owned\\x07.jpg" in outputs[0].output
    assert "esc\\x1b[31mdir\\u202e/bad\\x1b]0;owned\\x07.jpg" in outputs[1].output
    assert "esc\\x1b[31mdir\\u202e" in outputs[2].output


def test_a_title_that_looks_like_rich_markup_is_printed_as_written(db_url: str, home: Path,
                                                                    photos: Path):
    """A title "[/] [red]x" made `loupe search` raise rich's MarkupError (the
    table read its cells as markup) and `loupe similar`/`ask` colour what
    followed; every line now prints it as written."""
    from click.testing import CliRunner
    from imaging import exiftool_write

    from loupe.cli import main

    Image.new("RGB", (64, 48), (10, 120, 40)).save(photos / "m.jpg")
    exiftool_write(photos / "m.jpg", "-XMP-dc:Title=markupword [/] [red]x")
    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en"])
        assert lib.ingest(photos).failed == 0
    base = ["--home", str(home), "--database-url", db_url]
    for args in (["search", "markupword"], ["search", "[/]"], ["ask", "markupword"],
                 ["show", "1"]):
        out = CliRunner().invoke(main, base + args)
        assert out.exit_code == 0, (args, out.output, out.exception)
        if args[-1] != "[/]":
            assert "markupword [/] [red]x" in out.output, (args, out.output)

def test_errors_emoji_codes_and_invisible_characters(db_url: str, home: Path,
                                                                 photos: Path):
    from click.testing import CliRunner

    from loupe.bulk import BulkError
    from loupe.cli import main
    from loupe.terminal import term

    assert term("a\u061cb\u200bc\ufeffd\u3164e") == "a\\u061cb\\u200bc\\ufeffd\\u3164e"
    assert term("گل\u200cها 👨\u200d👩") == "گل\u200cها 👨\u200d👩"   # joiners stay
    england = "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"
    assert term(england + " \u0600\u0661") == england + " \u0600\u0661"   # tags, marks
    Image.new("RGB", (64, 48), (10, 120, 40)).save(photos / "x:cross_mark:y.jpg")
    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en"])
        assert lib.ingest(photos).failed == 0
        with pytest.raises(BulkError, match="control character"):
            lib.bulk("add_keyword", "kw\u200bx", query="cross", confirm=True)
    base = ["--home", str(home), "--database-url", db_url]
    out = CliRunner().invoke(main, base + ["show", "1"])
    assert "x:cross_mark:y.jpg" in out.output and "\u274c" not in out.output
    out = CliRunner().invoke(main, base + ["similar", "--file",
                                           str(photos / "gone\x1b[2J.jpg")])
    assert out.exit_code != 0 and "\x1b" not in out.output
    assert "gone\\x1b[2J.jpg" in out.output
