"""Hostile XMP is bounded before ExifTool works on it (a 153 KB sidecar nested 3,000 levels deep kept ExifTool busy 61-85 s per
upload, and its metadata was lost without a word). Real files written by
Pillow, real ExifTool, real embedded PostgreSQL, the real web app."""

from __future__ import annotations

import time
from pathlib import Path

from PIL import Image, PngImagePlugin

from loupe import Library
from loupe.ingest import exiftool_reader

HEAD = ('<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" '
        'xmlns:ex="http://example.com/ex/">'
        '<dc:title><rdf:Alt><rdf:li xml:lang="x-default">{title}</rdf:li></rdf:Alt></dc:title>')
TAIL = '</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>'
MAX_DEPTH, MAX_ELEMENTS = 64, 100_000      # loupe.ingest.xmpcheck's bounds


def deep_xmp(depth: int, title: str) -> str:
    """The attack's sidecar: a title, then ``depth`` nested resources."""
    body = '<ex:f rdf:parseType="Resource"><ex:g>' * depth + "x" + "</ex:g></ex:f>" * depth
    return HEAD.format(title=title) + body + TAIL


#: Levels of an embedded packet that ExifTool 12.57 takes far longer than the
#: tests' per-call bounds (2–4 s) to parse on any machine: 4,000 levels took
#: 21 s on an idle core (1,150, a JPEG segment's most, only 1.8 s: too close
#: to the bounds to be slow everywhere).
SLOW_LEVELS = 4000


def wide_xmp(count: int, title: str) -> str:
    return HEAD.format(title=title) + "<ex:w>x</ex:w>" * count + TAIL


def test_a_deep_or_huge_sidecar_is_refused_before_exiftool_and_reported(
        lib: Library, photos: Path):
    for name, colour in (("deep.jpg", (200, 10, 10)), ("wide.jpg", (10, 200, 10)),
                         ("fine.jpg", (10, 10, 200))):
        Image.new("RGB", (16, 16), colour).save(photos / name)
    (photos / "deep.jpg.xmp").write_text(deep_xmp(3000, "zanzibar"))
    (photos / "wide.jpg.xmp").write_text(wide_xmp(MAX_ELEMENTS + 10, "wide sidecar"))
    # a sidecar at the depth bound is read as before
    (photos / "fine.jpg.xmp").write_text(deep_xmp((MAX_DEPTH - 6) // 2, "harbour crane"))
    started = time.monotonic()
    summary = lib.ingest(photos)
    took = time.monotonic() - started
    assert (summary.new_assets, summary.failed) == (3, 0)
    assert took < 20, took                       # before: about a minute of ExifTool
    reasons = {Path(w.path).name: w.reason for w in summary.warnings if w.kind == "sidecar"}
    assert set(reasons) == {"deep.jpg", "wide.jpg"}
    assert reasons["deep.jpg"] == (
        f"XMP sidecar {photos / 'deep.jpg.xmp'} ignored: its elements nest more than 64 "
        "levels deep (the bound, checked before ExifTool reads it); the image is indexed "
        "from its own metadata")
    assert reasons["wide.jpg"] == (
        f"XMP sidecar {photos / 'wide.jpg.xmp'} ignored: more than 100,000 XML elements "
        "(the bound, checked before ExifTool reads it); the image is indexed from its own "
        "metadata")
    # recorded for `loupe failures`, never silently dropped
    recorded = {Path(f["path"]).name: f for f in lib.failures()}
    assert recorded["deep.jpg"]["kind"] == "sidecar" and "64 levels" in recorded["deep.jpg"]["reason"]
    assert [h.title for h in lib.search("harbour crane").hits] == ["harbour crane"]
    assert lib.search("zanzibar").total == 0      # the refused sidecar's title


def test_a_slow_exiftool_call_is_stopped_and_the_ingest_goes_on(
        lib: Library, photos: Path, monkeypatch):
    """XMP embedded in a WebP (its ``XMP `` chunk; here 4,000 levels) is
    ExifTool's to parse (a PNG's packet is measured before ExifTool and
    so is a JPEG's); one call is bounded in
    time (``READ_TIMEOUT_S``, 2 s here)."""
    monkeypatch.setattr(exiftool_reader, "READ_TIMEOUT_S", 2.0, raising=False)
    Image.new("RGB", (16, 16), (1, 2, 3)).save(
        photos / "slow.webp", xmp=deep_xmp(SLOW_LEVELS, "deep embedded").encode())
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", HEAD.format(title="lighthouse keeper") + TAIL)
    Image.new("RGB", (16, 16), (3, 2, 1)).save(photos / "fine.png", pnginfo=info)
    started = time.monotonic()
    summary = lib.ingest(photos)
    took = time.monotonic() - started
    assert (summary.new_assets, summary.failed) == (1, 1)
    assert took < 15, took                       # the batch (2 s), then each file alone
    [failure] = lib.failures()
    assert Path(failure["path"]).name == "slow.webp" and failure["kind"] == "metadata"
    assert failure["reason"] == ("ExifTool could not read the metadata: ExifTool took more "
                                 "than 2 s to read this file (the bound per call): stopped")
    assert [h.title for h in lib.search("lighthouse keeper").hits] == ["lighthouse keeper"]


def test_a_members_deep_sidecar_is_named_in_the_upload_reply(tmp_path, db_url, home):
    """The same bound on an upload: the reply names the sidecar and the bound,
    the image is stored, and the answer is the same whether its bytes were new."""
    import io

    from fastapi.testclient import TestClient

    from loupe.web.app import create_app

    with Library.open(home, database_url=db_url) as owner:
        owner.create_user("bob", "bob-password")
    app = create_app(home, database_url=db_url, pool_size=2)
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        bob = {"Authorization": f"Bearer {tok.json()['token']}"}
        buf = io.BytesIO()
        Image.new("RGB", (16, 16), (90, 30, 60)).save(buf, "JPEG")
        started = time.monotonic()
        r = client.post("/api/upload", headers=bob, files=[
            ("files", ("deep.jpg", buf.getvalue(), "image/jpeg")),
            ("files", ("deep.jpg.xmp", deep_xmp(3000, "deep sidecar").encode(),
                       "application/rdf+xml"))])
        assert time.monotonic() - started < 20
        assert r.status_code == 200, r.text
        out = {k: v for k, v in r.json().items() if k != "folder"}
        assert out == {"files_seen": 1, "stored": 1, "failed": 0, "failures": [
            {"file": "deep.jpg.xmp",
             "reason": "XMP sidecar deep.jpg.xmp ignored: its elements nest more than 64 "
                       "levels deep (the bound, checked before ExifTool reads it); the "
                       "image is indexed from its own metadata"}]}


def test_a_deep_xmp_packet_embedded_in_a_png_is_refused_before_exiftool(
        lib: Library, photos: Path):
    """A 3,000-deep packet in a PNG's iTXt (108 KB)
    kept ExifTool busy over 50 s per file; the sidecar bounds now apply to
    a PNG's embedded packet (iTXt, compressed or not, zTXt, tEXt) before
    ExifTool reads it. A packet within the bound is read as before."""
    for name, text, zipped in (("deep.png", deep_xmp(3000, "deep embedded"), False),
                               ("deepz.png", deep_xmp(3000, "deep zipped"), True),
                               ("wide.png", HEAD.format(title="wide") + "<ex:w/>" * (
                                   MAX_ELEMENTS + 10) + TAIL, True),
                               ("fine.png", deep_xmp((MAX_DEPTH - 6) // 2, "harbour crane"),
                                False)):
        info = PngImagePlugin.PngInfo()
        info.add_itxt("XML:com.adobe.xmp", text, zip=zipped)
        Image.new("RGB", (16, 16), (len(name), 2, 3)).save(photos / name, pnginfo=info)
    started = time.monotonic()
    summary = lib.ingest(photos)
    assert time.monotonic() - started < 20        # before: minutes of ExifTool
    assert (summary.new_assets, summary.failed) == (1, 3)
    reasons = {Path(f["path"]).name: (f["kind"], f["reason"]) for f in lib.failures()
               if f["kind"] == "metadata"}
    deep = ("metadata", "an XMP packet embedded in a iTXt chunk: its elements nest more than "
            "64 levels deep (Loupe's bound, applied before ExifTool): not read")
    assert reasons == {"deep.png": deep, "deepz.png": deep, "wide.png": (
        "metadata", "an XMP packet embedded in a iTXt chunk: it holds more than 100,000 XML "
        "elements (Loupe's bound, applied before ExifTool): not read")}
    assert [h.title for h in lib.search("harbour crane").hits] == ["harbour crane"]
