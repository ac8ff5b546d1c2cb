"""Ingest decodes a file once (throughput: decoding was most of the per-file work): the perceptual hashes
and the machine words computed on the pixels the thumbnail was made from are
exactly those of a fresh decode, for every format and mode ingest meets; a
JPEG whose DCT scale differs is decoded again."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
import skimage
from PIL import Image

from loupe.ingest import perceptual
from loupe.ingest.image import decode_image, inspect_image, jpeg_draft_scale
from loupe.pixels import analyse

SKIMAGE_DATA = Path(os.path.dirname(skimage.__file__)) / "data"
FIXTURES = Path(__file__).parent / "fixtures" / "similar"


@pytest.mark.parametrize("size", [(1, 1), (300, 200), (767, 2000), (1535, 1536), (1536, 1536),
                                  (3071, 4000), (3072, 3072), (6144, 6200), (20000, 5000)])
@pytest.mark.parametrize("request_side", [256, 512, 768])
def test_jpeg_draft_scale_is_pillows(size, request_side):
    buf = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buf, "JPEG")
    im = Image.open(buf)
    im._size = size            # the header only: draft reads nothing but the size
    im.tile = [im.tile[0]._replace(extents=(0, 0, *size))]
    im.draft("RGB", (request_side, request_side))
    assert im.decoderconfig[0] == jpeg_draft_scale(size, request_side)


def _files(tmp: Path) -> dict[str, Path]:
    """Real and made pictures of every mode ingest meets."""
    out = {n: SKIMAGE_DATA / n for n in ("logo.png", "camera.png", "chelsea.png", "horse.png",
                                        "retina.jpg", "rocket.jpg",
                                        "no_time_for_that_tiny.gif", "page.png")}
    out["chelsea.jpg"] = FIXTURES / "chelsea.jpg"
    rng = np.random.default_rng(15)
    big = Image.fromarray(rng.integers(0, 255, (1700, 2300, 3), dtype=np.uint8))
    exif = Image.Exif()
    exif[0x0112] = 6
    big.save(tmp / "big_rotated.jpg", quality=85, exif=exif)
    big.resize((1200, 900)).save(tmp / "mid_rotated.jpg", exif=exif)
    big.resize((700, 500)).convert("CMYK").save(tmp / "cmyk.jpg")
    Image.fromarray((rng.integers(0, 65535, (90, 120))).astype(np.uint16)).save(tmp / "g16.png")
    pal = Image.new("P", (64, 48), 1)
    pal.putpalette([255, 255, 255, 200, 0, 0] + [0] * 762)
    pal.paste(0, (10, 10, 40, 30))
    pal.save(tmp / "pal_alpha.png", transparency=1)
    Image.new("RGB", (1, 1), (3, 4, 5)).save(tmp / "one.png")
    Image.new("RGBA", (200, 100), (0, 128, 0, 128)).save(tmp / "rgba.webp")
    big.resize((300, 200)).save(tmp / "two_pages.tif", save_all=True,
                                append_images=[Image.new("RGB", (50, 50), (0, 0, 255))])
    for name in ("big_rotated.jpg", "mid_rotated.jpg", "cmyk.jpg", "g16.png", "pal_alpha.png",
                 "one.png", "rgba.webp", "two_pages.tif"):
        out[name] = tmp / name
    return out


def test_hashes_and_machine_words_of_the_decoded_image_are_a_fresh_decodes(tmp_path: Path):
    files = _files(tmp_path)
    reused = []
    for name, path in files.items():
        with open(path, "rb") as fh:
            fresh_hash = perceptual.hash_file(str(path), fh)
            fresh_facts = analyse.analyse_file(str(path), fh)
            with decode_image(str(path), tmp_path / f"{name}.webp", fileobj=fh) as d:
                before = d.image.tobytes()
                assert perceptual.hash_file(str(path), fh, d) == fresh_hash, name
                assert analyse.analyse_file(str(path), fh, d) == fresh_facts, name
                assert d.image.tobytes() == before, name     # the shared pixels unchanged
                reused.append((name, d.same_as_decoding(analyse.SIDE * 2) is not None,
                               d.same_as_decoding(perceptual.DECODE_SIDE) is not None))
        assert isinstance(fresh_hash, perceptual.PerceptualHashes), name
        assert fresh_facts.error is None and fresh_facts.kind, name
    got = {n: (m, h) for n, m, h in reused}
    # every non-JPEG is reused; a JPEG only when no decode is reduced
    # (DCT scales of the thumbnail / machine words / hashes decodes)
    assert got["big_rotated.jpg"] == (False, False)   # 2300x1700: 2 / 4 / 2
    assert got["mid_rotated.jpg"] == (False, True)    # 1200x900: 1 / 2 / 1
    assert got["retina.jpg"] == (False, False)        # 1411x1411: 1 / 4 / 2
    assert got["chelsea.jpg"] == (True, True)
    assert got["cmyk.jpg"] == (True, True)
    assert all(got[n] == (True, True) for n in got if not n.endswith(".jpg"))


def test_closing_the_decoded_image_leaves_the_callers_file_open(tmp_path: Path):
    path = SKIMAGE_DATA / "coffee.png"
    with open(path, "rb") as fh:
        with decode_image(str(path), None, fileobj=fh) as d:
            assert d.facts.width == 600 and d.facts.media_type == "image/png"
        fh.seek(0)
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
        assert inspect_image(str(path), None, fileobj=fh).height == 400
        assert not fh.closed


def test_the_thumbnail_is_a_webp_of_the_oriented_picture(tmp_path: Path):
    with open(SKIMAGE_DATA / "rocket.jpg", "rb") as fh:
        thumb = tmp_path / "t.webp"
        with decode_image("rocket.jpg", thumb, fileobj=fh) as d:
            assert (d.facts.width, d.facts.height) == (640, 427)
        with Image.open(thumb) as t:
            assert t.format == "WEBP" and t.size == (384, 256)


def test_a_palette_with_byte_transparency_hashes_without_pillows_warning(tmp_path: Path):
    """A palette PNG whose transparency is a byte string (Open Clip Art's
    stars) made Pillow warn on the console at every ingest; the grey copy
    the hashes use now goes through RGBA, which has the same luma."""
    import warnings

    im = Image.new("P", (64, 48))
    im.putpalette([v for i in range(256) for v in (i, 255 - i, (7 * i) % 256)])
    im.paste(10, (0, 0, 64, 48))
    im.paste(200, (16, 12, 48, 36))
    im.info["transparency"] = bytes([0] * 10 + [255] * 246)
    im.save(tmp_path / "star.png", transparency=im.info["transparency"])
    src = Image.open(tmp_path / "star.png")
    assert src.mode == "P" and isinstance(src.info["transparency"], bytes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old_grey = Image.open(tmp_path / "star.png").convert("L")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = perceptual.hash_file(str(tmp_path / "star.png"))
    assert np.array_equal(np.asarray(old_grey),
                          np.asarray(Image.open(tmp_path / "star.png").convert("RGBA").convert("L")))
    want = perceptual.hash_image(old_grey)
    assert (got.phash, got.dhash) == (want.phash, want.dhash)
