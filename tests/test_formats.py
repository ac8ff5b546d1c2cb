"""AVIF, JPEG XL, camera RAW (DNG through LibRaw) and video (MP4, MOV, M4V,
MKV, WebM, AVI through FFmpeg's libraries) ingested like any picture: a
thumbnail, perceptual hashes and machine words each, their dimensions and a
video's duration, under the same pixel bounds (docs/formats.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from imaging import make_image
from mediafiles import make_dng, make_video
from PIL import Image, features

from loupe import Library
from loupe.ingest import formats
from loupe.ingest.formats import raw_kind, video_kind


def _rows(lib: Library) -> list[tuple]:
    return lib.conn.execute(
        "SELECT f.rel_path, a.media_type, a.width, a.height, a.duration_s, a.thumbnail, "
        "       p.phash IS NOT NULL, m.error IS NULL AND m.kind IS NOT NULL "
        "FROM asset a JOIN asset_file f ON f.asset_id = a.id "
        "LEFT JOIN asset_phash p ON p.asset_id = a.id "
        "LEFT JOIN asset_machine m ON m.asset_id = a.id "
        "WHERE a.tenant_id = %s ORDER BY f.rel_path", (lib.tenant_id,)).fetchall()


def test_pillow_reads_avif():
    assert features.check("avif")


def test_every_format_is_ingested_with_thumbnail_hashes_and_machine_words(lib: Library,
                                                                          photos: Path):
    make_image(photos / "a.avif", size=(50, 40), color=(200, 10, 10))
    make_image(photos / "b.jxl", size=(52, 40), color=(10, 200, 10), fmt="JXL")
    make_dng(photos / "c-sensor.dng", size=(256, 192))
    make_dng(photos / "d-preview.dng", size=(256, 192), preview=(100, 75))
    for i, (name, codec, container) in enumerate([
            ("e.mp4", "mpeg4", None), ("f.mov", "mpeg4", None), ("g.m4v", "mpeg4", "ipod"),
            ("h.mkv", "mpeg4", None), ("i.webm", "libvpx-vp9", None), ("j.avi", "mpeg4", None)]):
        make_video(photos / name, codec=codec, container=container, frames=20 + i)
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed, summary.skipped) == (10, 0, [])
    rows = _rows(lib)
    assert [r[:5] for r in rows] == [
        ("a.avif", "image/avif", 50, 40, None),
        ("b.jxl", "image/jxl", 52, 40, None),
        ("c-sensor.dng", "image/x-adobe-dng", 128, 96, None),   # half-size demosaic
        ("d-preview.dng", "image/x-adobe-dng", 100, 75, None),  # its preview, not decoded
        ("e.mp4", "video/mp4", 160, 120, 2.0),
        ("f.mov", "video/quicktime", 160, 120, 2.1),
        ("g.m4v", "video/x-m4v", 160, 120, 2.2),
        ("h.mkv", "video/x-matroska", 160, 120, 2.3),
        ("i.webm", "video/webm", 160, 120, 2.4),
        ("j.avi", "video/x-msvideo", 160, 120, 2.5),
    ]
    for rel, *_rest, thumb, phash, machine in rows:
        assert (phash, machine) == (True, True), rel
        with Image.open(lib.home / thumb) as im:
            assert im.format == "WEBP" and max(im.size) == min(384, max(_rest[1:3])), rel
    # the preview is what the RAW shows: blue, as written
    thumb = next(r[5] for r in rows if r[0] == "d-preview.dng")
    with Image.open(lib.home / thumb) as im:
        r, g, b = im.convert("RGB").getpixel((50, 37))
        assert b > 180 and r < 40 and g < 40
    # the files are found by their names, like any picture
    assert [h.title for h in lib.search("preview").hits] == ["d-preview.dng"]


def test_a_raw_shows_its_embedded_jpeg_preview(photos: Path):
    path = make_dng(photos / "cam.dng", size=(256, 192), preview=(160, 120),
                    preview_rgb=(200, 30, 30), jpeg_preview=True)
    with Image.open(path) as im:
        assert (im.format, im.size, im.info["raw_source"]) == ("RAW", (160, 120), "preview")
        r, g, b = im.convert("RGB").getpixel((80, 60))
    assert r > 180 and g < 60 and b < 60
    plain = make_dng(photos / "plain.dng", size=(256, 192))
    with Image.open(plain) as im:
        assert (im.size, im.info["raw_source"]) == ((128, 96), "demosaic")


def test_a_video_shows_its_frame_a_tenth_in(photos: Path):
    """Frame ``i`` is red ``8 i``: a 3 s video at 10 frames a second shows
    frame 3 (0.3 s in), not its first."""
    path = make_video(photos / "clip.mp4", frames=30)
    with Image.open(path) as im:
        assert (im.format, im.size, im.info["duration_s"]) == ("VIDEO", (160, 120), 3.0)
        red = im.convert("RGB").getpixel((80, 60))[0]
    assert abs(red - 24) <= 6


def test_the_pixel_ceiling_holds_before_any_decode(lib: Library, photos: Path):
    make_dng(photos / "sensor.dng", size=(256, 192))           # 49,152 sensor pixels
    make_dng(photos / "preview.dng", size=(256, 192), preview=(100, 75))
    make_video(photos / "clip.mp4", size=(320, 240), frames=5)
    make_image(photos / "small.jpg", size=(60, 40))
    lib.conn.execute("SELECT 1")
    from loupe.ingest.pipeline import Ingester

    summary = Ingester(lib.conn, lib.tenant_id, lib.home, max_pixels=40_000).ingest(photos)
    assert sorted((Path(f.path).name, f.kind) for f in summary.failures) == [
        ("clip.mp4", "too_large"), ("sensor.dng", "too_large")]
    why = {Path(f.path).name: f.reason for f in summary.failures}
    assert why["sensor.dng"].startswith("its decode works on 49,152 pixels (a RAW's sensor), "
                                        "over the limit of 40,000")
    assert why["clip.mp4"].startswith("320x240 = 76,800 pixels exceeds the limit of 40,000")
    assert summary.new_assets == 2   # the preview (7,500 pixels) and the JPEG


def test_a_poster_frame_is_never_searched_past_its_frame_bound(photos: Path,
                                                               monkeypatch: pytest.MonkeyPatch):
    path = make_video(photos / "clip.mp4", frames=30)
    monkeypatch.setattr(formats, "MAX_POSTER_FRAMES", 0)
    with Image.open(path) as im, pytest.raises(OSError, match="no frame decoded in the first 0"):
        im.load()


def test_the_first_bytes_name_the_kind():
    assert raw_kind(b"FUJIFILMCCD-RAW 0201") == "raf"
    assert raw_kind(b"\x00\x00\x00\x18ftypcrx \x00\x00") == "cr3"
    assert raw_kind(b"IIRO\x08\x00\x00\x00") == "orf"
    assert raw_kind(b"IIU\x00\x08\x00\x00\x00") == "rw2"
    assert raw_kind(b"II*\x00\x10\x00\x00\x00CR\x02\x00") == "cr2"
    assert raw_kind(b"II*\x00\x08\x00\x00\x00\x00\x00") == "tiff"
    assert raw_kind(b"\xff\xd8\xff\xe0") is None
    assert video_kind(b"\x00\x00\x00\x1cftypisom") == "mp4"
    assert video_kind(b"\x00\x00\x00\x14ftypqt  ") == "mov"
    assert video_kind(b"\x00\x00\x00\x1cftypheic") is None      # a HEIC picture
    assert video_kind(b"\x00\x00\x00\x1cftypavif") is None      # an AVIF picture
    assert video_kind(b"\x00\x00\x00\x18ftypcrx ") is None      # a Canon CR3
    assert video_kind(b"RIFF\x00\x00\x00\x00AVI LIST") == "avi"
    assert video_kind(b"RIFF\x00\x00\x00\x00WEBPVP8 ") is None  # a WebP picture


def test_a_plain_tiff_is_still_a_tiff(lib: Library, photos: Path):
    make_image(photos / "scan.tif", size=(43, 30), fmt="TIFF")
    lib.ingest(photos)
    assert [r[1:4] for r in _rows(lib)] == [("image/tiff", 43, 30)]


def test_a_raw_to_search_by_is_bounded_by_its_sensor(photos: Path):
    from loupe.similar.search import PictureTooLarge, _file_hash

    path = make_dng(photos / "sensor.dng", size=(256, 192))     # 49,152 sensor pixels
    with pytest.raises(PictureTooLarge, match="128x96 from a sensor of 49,152 pixels is over "
                                              "the limit of 40,000"):
        _file_hash(str(path), max_pixels=40_000)
    phash, _image = _file_hash(str(path), max_pixels=60_000)
    assert isinstance(phash, int)
