"""Helpers that make real image files with known pixels and metadata for tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from PIL import Image


def make_image(path: Path, *, size: tuple[int, int] = (64, 48), color=(200, 40, 40),
               fmt: str | None = None, **save_kwargs) -> Path:
    """Write a solid-colour image (plus a gradient so files differ by colour)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    im = Image.new("RGB", size, color)
    for x in range(size[0]):
        im.putpixel((x, 0), (x % 256, color[1], color[2]))
    im.save(path, fmt, **save_kwargs)
    return path


def exiftool_write(path: Path, *tags: str) -> None:
    """Embed tags in ``path`` with the real ExifTool (``-GROUP:TAG=VALUE`` strings)."""
    subprocess.run(["exiftool", "-q", "-m", "-overwrite_original", *tags, str(path)],
                   check=True, capture_output=True)


def write_sidecar(image: Path, *tags: str, name: str | None = None) -> Path:
    """Create an XMP sidecar (``image.ext.xmp`` by default) holding ``tags``."""
    out = image.parent / (name or image.name + ".xmp")
    if out.exists():
        out.unlink()
    # Writing to a .xmp file that does not exist makes ExifTool create it.
    subprocess.run(["exiftool", "-q", "-m", *tags, str(out)], check=True, capture_output=True)
    return out
