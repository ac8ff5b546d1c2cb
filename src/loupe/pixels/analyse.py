"""Machine facts of one image: decode a small copy once, then colours,
background, kind, shape and size (OCR apart, see ocr.py).

Decoding is Pillow's: JPEG is decoded at reduced scale (``draft``), the EXIF
orientation applied, the first frame of an animation taken, palette images
with a transparent index and CMYK converted to RGBA, 16-bit greyscale scaled
to 8 bits. A picture that cannot be read gives a reason (``error``) and no
facts: a warning, never a failed ingest.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from . import colours as colour_mod
from . import kind as kind_mod
from . import shape
from ..ingest.image import TRANSPOSE

#: Version of the rules: rows of an older version are recomputed by
#: ``loupe enrich`` (the facts and the documents' words). 1: the
#: first rules; 2: aspect cue ("wide"), synonyms in the word lists; 3:
#: flatness measured on the subject only, tiny photos stay photos; 4: the
#: words people type for style ("sketch", "pictogram" and
#: their translations; "line-art" with its catenated form); 5: line art
#: needs dark strokes (kind.py rule 2).
VERSION = 5
#: Longest side of the copy the cues and colours are measured on.
SIDE = 128
#: Close-up: a photo whose centre (middle third) is at least this many
#: times sharper than its border ring (variance of a 4-neighbour Laplacian,
#: the usual focus measure: Pech-Pacheco et al., "Diatom autofocusing in
#: brightfield microscopy", ICPR 2000) — a sharp subject before a soft
#: background.
CLOSEUP_RATIO = 4.0


@dataclass
class MachineFacts:
    """What the pixels say of one asset (columns of ``asset_machine``)."""

    kind: str | None = None
    orientation: str | None = None
    size_class: str | None = None
    background: str | None = None
    cutout: bool | None = None
    colours: list[str] = field(default_factory=list)
    colour_shares: list[float] = field(default_factory=list)
    background_colour: str | None = None
    monochrome: bool | None = None
    closeup: bool | None = None
    ocr_text: str | None = None
    ocr_lang: str | None = None
    ocr_ms: int | None = None
    cues: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    version: int = VERSION

    def as_row(self) -> dict[str, Any]:
        """The row for :data:`loupe.pixels.queries.UPSERT_MACHINE`."""
        return asdict(self)


def _to_rgba(im) -> Any:
    """An 8-bit RGBA copy of any Pillow image mode."""
    from PIL import Image

    if im.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        a = np.asarray(im, dtype=np.float64)
        top = 65535.0 if a.max(initial=0) > 255 else 255.0
        im = Image.fromarray(np.clip(a * (255.0 / top), 0, 255).astype(np.uint8), "L")
    if im.mode == "P" and "transparency" in im.info:
        im = im.convert("RGBA")
    return im.convert("RGBA") if im.mode != "RGBA" else im


def _laplacian_var(grey: np.ndarray) -> float:
    if grey.shape[0] < 3 or grey.shape[1] < 3:
        return 0.0
    lap = (4 * grey[1:-1, 1:-1] - grey[:-2, 1:-1] - grey[2:, 1:-1]
           - grey[1:-1, :-2] - grey[1:-1, 2:])
    return float(lap.var())


def closeup(grey: np.ndarray) -> tuple[bool, float]:
    """(close-up?, sharpness ratio centre / border) of a greyscale array."""
    h, w = grey.shape
    centre = grey[h // 3: 2 * h // 3, w // 3: 2 * w // 3]
    ring = colour_mod.ring_mask(h, w)
    border_parts = [grey[: max(3, h // 6), :], grey[-max(3, h // 6):, :]]
    b = float(np.mean([_laplacian_var(p) for p in border_parts])) if ring.any() else 0.0
    c = _laplacian_var(centre)
    ratio = c / b if b > 1e-6 else (99.0 if c > 1 else 0.0)
    return ratio >= CLOSEUP_RATIO and c > 20.0, round(min(ratio, 99.0), 2)


def thumbnail_size(size: tuple[int, int], side: int) -> tuple[int, int]:
    """The size ``Image.thumbnail((side, side))`` gives an image of ``size``
    (Pillow's aspect rounding, copied: PIL/Image.py ``preserve_aspect_ratio``)."""
    import math

    w, h = size
    if side >= w and side >= h:
        return size
    x = y = side
    aspect = w / h

    def round_aspect(number: float, key) -> int:
        return max(min(math.floor(number), math.ceil(number), key=key), 1)

    if x / y >= aspect:
        x = round_aspect(y * aspect, key=lambda n: abs(aspect - n / y))
    else:
        y = round_aspect(x / aspect, key=lambda n: 0 if n == 0 else abs(aspect - x / n))
    return x, y


def analyse_image(im) -> MachineFacts:
    """Machine facts of an opened Pillow image (its first frame).

    Raises:
        OSError, ValueError: the pixels cannot be decoded.
    """
    from PIL import Image, ImageOps

    try:
        im.seek(0)
    except EOFError:
        pass
    w0, h0 = im.size
    exif_o = 1
    if im.format in ("JPEG", "TIFF", "WEBP", "HEIF", "MPO"):  # PNG's getexif decodes it all
        try:
            exif_o = int(im.getexif().get(0x0112, 1) or 1)
        except Exception:
            exif_o = 1
    width, height = (h0, w0) if exif_o in (5, 6, 7, 8) else (w0, h0)
    if im.format == "JPEG":
        im.draft("RGB", (SIDE * 2, SIDE * 2))
    method = TRANSPOSE.get(exif_o) if im.format != "JPEG" else None
    if method is not None and max(w0, h0) > SIDE and im.mode not in (
            "I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        # shrunk to the final size, then turned: no full-size turned copy
        #; nearest neighbour picks the same pixels
        fw, fh = thumbnail_size((width, height), SIDE)
        frame = im.resize((fh, fw) if exif_o in (5, 6, 7, 8) else (fw, fh),
                          Image.Resampling.NEAREST).transpose(method)
    else:
        frame = ImageOps.exif_transpose(im) if exif_o != 1 else im
    if frame.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        # shrink before _to_rgba's float conversion: a 36 MP 16-bit picture
        # as float64 is 288 MB and more
        scale = max(frame.size) / SIDE
        if scale > 1:
            frame = frame.resize((max(1, round(frame.width / scale)),
                                  max(1, round(frame.height / scale))), Image.Resampling.NEAREST)
    elif im.format != "JPEG" and frame is im:
        # to the final size first, then to RGBA: the same pixels (nearest
        # neighbour picks them; the conversion is per pixel), without a
        # full-size RGBA copy (+4 bytes a pixel)
        final = thumbnail_size(frame.size, SIDE)
        if final != frame.size:
            frame = frame.resize(final, Image.Resampling.NEAREST)
    rgba = _to_rgba(frame)
    if rgba is im:
        # never shrink the caller's image (the ingest's decoded pixels), nor
        # copy it (a 150 MP RGBA picture is 600 MB): a second Image object
        # over the same pixels, whose core thumbnail() replaces, not changes
        im.load()
        rgba = im._new(im.im)
    rgba.thumbnail((SIDE, SIDE), Image.Resampling.NEAREST)
    arr = np.asarray(rgba, dtype=np.uint8)
    lab = colour_mod.to_lab(arr[..., :3])
    cf = colour_mod.analyse_colours(arr, lab)
    size = shape.size_class(width, height)
    c = kind_mod.cues(arr, lab, cf.subject)
    kind = kind_mod.decide(c, width=width, height=height, background=cf.background,
                           size_class=size)
    close, ratio = closeup(lab[..., 0])
    c["sharp_ratio"] = ratio
    c["aspect"] = round(width / max(1, height), 3)
    return MachineFacts(
        kind=kind, orientation=shape.orientation(width, height), size_class=size,
        background=cf.background, cutout=cf.cutout, colours=cf.colours,
        colour_shares=cf.shares, background_colour=cf.background_colour,
        monochrome=cf.monochrome, closeup=bool(close and kind == "photo"),
        cues=c | {"bg_share": round(cf.bg_share, 3)})


def analyse_file(path: str, fileobj=None, decoded=None) -> MachineFacts:
    """Machine facts of the image at ``path`` (read from ``fileobj``, an open
    binary file, when given: the ingest's one descriptor). Never raises: a
    picture that cannot be read gives facts with ``error`` set (a warning for
    the ingest).

    ``decoded``: the file's :class:`~loupe.ingest.image.DecodedImage`; its
    pixels are read when decoding again would give the same ones (every
    format but a JPEG whose DCT scale differs), so the facts never depend on
    whether it was given."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            # Pillow's advice to convert palette images with transparency to
            # RGBA: _to_rgba does; the warning would only clutter the ingest
            warnings.simplefilter("ignore", UserWarning)
            im = decoded.same_as_decoding(SIDE * 2) if decoded is not None else None
            if im is not None:
                return analyse_image(im)
            if fileobj is not None:
                fileobj.seek(0)
            with Image.open(fileobj if fileobj is not None else path) as im:
                return analyse_image(im)
    except Exception as exc:  # any decoder failure is a warning, not a failed file
        return MachineFacts(error=f"no machine words: {type(exc).__name__}: {exc}"[:1000])
