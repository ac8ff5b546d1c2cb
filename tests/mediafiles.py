"""Real camera RAW (DNG) and video files with known content, written for the
tests: DNG through tifffile (the layout LibRaw reads: a CFA sub-image, DNG
tags), videos through PyAV (FFmpeg's encoders)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import av
import numpy as np
import tifffile
from PIL import Image

#: DNG tags (code, type, count, value) every test DNG carries: DNGVersion
#: 1.4, DNGBackwardVersion 1.2, Make, Model, UniqueCameraModel,
#: ColorMatrix1 (identity), CalibrationIlluminant1 (D65), AsShotNeutral.
_DNG_TAGS = [(50706, "B", 4, (1, 4, 0, 0), True), (50707, "B", 4, (1, 2, 0, 0), True),
             (50721, "2i", 9, (1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1), True),
             (50778, "H", 1, 21, True), (50728, "2I", 3, (1, 1, 1, 1, 1, 1), True)]


def make_dng(path: Path, *, size: tuple[int, int] = (256, 192), preview: tuple[int, int] | None
             = None, preview_rgb: tuple[int, int, int] = (0, 0, 220), make: str = "Loupe",
             model: str = "Test Camera", jpeg_preview: bool = False) -> Path:
    """Write a DNG of a ``size`` (width, height) RGGB sensor holding a 12-bit
    gradient; with ``preview`` (width, height) it also carries a preview of
    one colour in its first directory (the layout of a camera's DNG: preview
    first, the sensor data in a sub-directory): 8-bit RGB, or with
    ``jpeg_preview`` a baseline JPEG (what cameras embed), put in place of the
    RGB strip (tifffile writes JPEG only with imagecodecs: the directory's
    Compression, PhotometricInterpretation and StripByteCounts are then set
    to 7, 6 and the JPEG's length)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    raw = ((xx * 16 + yy * 4) & 4095).astype(np.uint16)
    ident = [(271, "s", 0, make, True), (272, "s", 0, model, True),
             (50708, "s", 0, f"{make} {model}", True)]
    cfa = [(33421, "H", 2, (2, 2), True), (33422, "B", 4, (0, 1, 1, 2), True),
           (50717, "I", 1, 4095, True)]
    with tifffile.TiffWriter(path) as tw:
        if preview is not None:
            prev = np.empty((preview[1], preview[0], 3), np.uint8)
            prev[...] = preview_rgb
            tw.write(prev, photometric="rgb", subfiletype=1, subifds=1,
                     extratags=_DNG_TAGS + ident)
            tw.write(raw, photometric=32803, subfiletype=0, extratags=cfa)
        else:
            jpeg_preview = False
            tw.write(raw, photometric=32803, subfiletype=0, extratags=_DNG_TAGS + ident + cfa)
    if jpeg_preview:
        _jpeg_in_first_strip(path, preview_rgb)
    return path


def _jpeg_in_first_strip(path: Path, rgb: tuple[int, int, int]) -> None:
    """Replace the first directory's one uncompressed RGB strip by a JPEG of
    the same size and colour (tags patched in place; little-endian, as
    tifffile writes)."""
    with tifffile.TiffFile(path) as tf:
        tags = tf.pages[0].tags
        w, h = tags["ImageWidth"].value, tags["ImageLength"].value
        (strip,) = tags["StripOffsets"].value
        spots = [(tags["Compression"].valueoffset, "<H", 7),
                 (tags["PhotometricInterpretation"].valueoffset, "<H", 6)]
        counts = tags["StripByteCounts"]
        fmt = {3: "<H", 4: "<I", 16: "<Q"}[int(counts.dtype)]
        (room,) = counts.value
    buf = io.BytesIO()
    Image.new("RGB", (w, h), rgb).save(buf, "JPEG", quality=95)
    jpeg = buf.getvalue()
    assert len(jpeg) <= room, "the JPEG must fit in the RGB strip it replaces"
    with open(path, "r+b") as fh:
        for where, f, value in spots + [(counts.valueoffset, fmt, len(jpeg))]:
            fh.seek(where)
            fh.write(struct.pack(f, value))
        fh.seek(strip)
        fh.write(jpeg)


def make_video(path: Path, *, codec: str = "mpeg4", container: str | None = None,
               frames: int = 30, size: tuple[int, int] = (160, 120), fps: int = 10) -> Path:
    """Write a ``frames``-frame video of ``size`` at ``fps`` frames a second;
    frame ``i`` is one colour, red ``8 * i`` modulo 256 (so the poster frame taken is
    known), green 100."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = av.open(str(path), "w", format=container)
    stream = out.add_stream(codec, rate=fps)
    stream.width, stream.height = size
    stream.pix_fmt = "yuv420p"
    for i in range(frames):
        a = np.zeros((size[1], size[0], 3), np.uint8)
        a[..., 0] = 8 * i % 256
        a[..., 1] = 100
        for packet in stream.encode(av.VideoFrame.from_ndarray(a, format="rgb24")):
            out.mux(packet)
    for packet in stream.encode():
        out.mux(packet)
    out.close()
    return path
