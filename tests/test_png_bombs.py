"""Compressed PNG metadata is bounded before ExifTool inflates it (issue 11,
attack run 3, F12: a 0.5 MB PNG whose one zTXt chunk inflated to 512 MiB
cost the ingest gigabytes). Real files written by Pillow, real ExifTool."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, PngImagePlugin

from loupe import Library
from loupe.ingest.pngcheck import MAX_CHUNK


def png_with_text(path: Path, text: str, *, compressed: bool = True) -> Path:
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", text, zip=compressed)
    Image.new("RGB", (8, 8), (200, 30, 30)).save(path, pnginfo=info)
    return path


def test_a_png_whose_text_inflates_past_the_bound_is_refused_and_the_rest_ingested(
        lib: Library, photos: Path):
    bomb = png_with_text(photos / "bomb.png", "A" * (8 * MAX_CHUNK))
    assert bomb.stat().st_size < 64 * 1024          # small on disk
    png_with_text(photos / "fine.png", "harbour at dawn " * 100)
    summary = lib.ingest(photos)
    assert summary.new_assets == 1 and summary.failed == 1
    [failure] = lib.failures()
    assert failure["path"].endswith("bomb.png") and failure["kind"] == "metadata"
    assert "inflates past 1,048,576 bytes" in failure["reason"]
    assert [h.title or h.path.rsplit("/", 1)[-1] for h in lib.search("fine").hits] == ["fine.png"]
