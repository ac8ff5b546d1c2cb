"""Text in the image through OCR: RapidOCR's models ship inside
its wheel and nothing is fetched at run time; a rendered word is read and
found by search once OCR is switched on for the library; a blank image
gives no words."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from loupe import Library
from loupe.pixels import ocr

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")  # Debian fonts-dejavu-core
pytestmark = pytest.mark.skipif(not FONT.exists(), reason=f"{FONT} (fonts-dejavu-core) missing")


def _text_image(path: Path, text: str) -> Path:
    font = ImageFont.truetype(str(FONT), 64)
    im = Image.new("RGB", (760, 200), "white")
    ImageDraw.Draw(im).text((30, 50), text, font=font, fill="black")
    im.save(path)
    return path


def test_models_are_in_the_wheel_and_nothing_is_fetched(tmp_path: Path, monkeypatch):
    import rapidocr_onnxruntime

    models = Path(rapidocr_onnxruntime.__file__).parent / "models"
    assert sorted(p.name for p in models.glob("*.onnx")) == [
        "ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx",
        "ch_ppocr_mobile_v2.0_cls_infer.onnx"]

    def refused(*args, **kwargs):
        raise OSError("network refused by the test")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket, "create_connection", refused)
    text, ms, complete = ocr.read_text(str(_text_image(tmp_path / "t.png", "HARBOUR 2026")))
    assert (text, complete) == ("HARBOUR 2026", True)
    blank = tmp_path / "blank.png"
    Image.new("RGB", (760, 200), "white").save(blank)
    assert ocr.read_text(str(blank))[0] == ""


def test_ocr_words_are_searchable_when_switched_on(lib: Library, photos: Path):
    _text_image(photos / "sign.png", "LIGHTHOUSE")
    Image.new("RGB", (760, 200), "white").save(photos / "blank.png")
    lib.init(languages=["en"])
    assert lib.machine_settings()["ocr"] is False            # off by default
    lib.ingest(photos)
    assert lib.search("lighthouse").total == 0
    assert lib.set_machine_settings(ocr=True)["ocr"] is True
    assert lib.enrich()["ocr_read"] == 1                     # the existing assets, read now
    res = lib.search("lighthouse")
    assert res.total == 1 and res.hits[0].path.endswith("sign.png")
    facts = lib.show(res.hits[0].asset_id)["machine"]
    assert (facts["ocr_text"], facts["ocr_lang"]) == ("LIGHTHOUSE", "zh+en")
    blank = lib.conn.execute("SELECT m.ocr_text FROM asset_machine m JOIN asset_file f "
                             "ON f.asset_id = m.asset_id WHERE f.rel_path = 'blank.png'").fetchone()
    assert blank == ("",)
    with pytest.raises(ValueError, match="ocr_budget_ms = 50 is out of range"):
        lib.set_machine_settings(ocr_budget_ms=50)
