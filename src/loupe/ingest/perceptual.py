"""Perceptual hashes of one image (X1): the ingest hook and the backfill.

Hashing is commodity: ``imagehash.phash`` (64-bit DCT hash: 32x32 greyscale,
8x8 lowest frequencies, each bit = coefficient above the median; Zauner,
"Implementation and Benchmarking of Perceptual Image Hash Functions", 2010)
and ``imagehash.dhash`` (64-bit gradient hash, N. Krawetz, "Kind of Like
That", 2013). Both are taken on the EXIF-oriented image, so a rotated-by-tag
file and the same pixels rotated for real hash alike.

A file whose hash cannot be computed is never a failed ingest: the caller
records a warning and the asset is stored without a hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from .image import TRANSPOSE, exif_orientation

#: Longest side an image is decoded at before hashing (JPEG DCT scaling
#: via ``draft``). pHash works on a 32x32 reduction, so this loses nothing
#: and bounds the cost of very large files.
DECODE_SIDE = 512

_MASK64 = (1 << 64) - 1

# (an asset deleted meanwhile, e.g. by an ingest during a backfill, is skipped)
STORE = """
INSERT INTO asset_phash (asset_id, tenant_id, phash, dhash, error)
SELECT a.id, a.tenant_id, %(phash)s, %(dhash)s, %(error)s
FROM asset a WHERE a.id = %(asset_id)s AND a.tenant_id = %(tenant_id)s
ON CONFLICT (tenant_id, asset_id) DO UPDATE
SET phash = EXCLUDED.phash, dhash = EXCLUDED.dhash, error = EXCLUDED.error, computed_at = now()
"""


@dataclass(frozen=True)
class PerceptualHashes:
    """An image's 64-bit pHash and dHash as signed integers (PostgreSQL
    ``bigint``; the 64 bits are those of the unsigned hash)."""

    phash: int
    dhash: int


def to_signed(u: int) -> int:
    """The unsigned 64-bit ``u`` as the signed integer with the same bits."""
    u &= _MASK64
    return u - (1 << 64) if u >= 1 << 63 else u


def hamming(a: int, b: int) -> int:
    """Hamming distance (0..64) of two 64-bit hashes, signed or unsigned."""
    return ((a ^ b) & _MASK64).bit_count()


#: Modes whose conversion straight to greyscale ("L") gives the same bytes
#: as through RGB (what ``hash_image`` did before; checked mode by mode in
#: tests/test_decode_memory.py): converted directly, without a full-size RGB copy.
#: YCbCr (its Y is not the RGB luma) and the rest still go through RGB.
DIRECT_GREY = frozenset({"1", "L", "P", "PA", "LA", "RGB", "RGBA", "RGBX", "CMYK", "HSV",
                         "I;16", "I;16L", "I;16B", "I;16N", "I", "F"})


def hash_image(im) -> PerceptualHashes:
    """The hashes of an opened PIL image (EXIF orientation applied here; the
    image itself is not changed).

    The same hashes as ``imagehash.phash`` / ``dhash`` of
    ``ImageOps.exif_transpose(im)`` converted to RGB, computed with at most
    two greyscale copies (1 byte a pixel each) beside the decoded image: the
    image is converted to greyscale first (:data:`DIRECT_GREY`), then turned,
    then reduced to the hashes' sizes with imagehash's own filter (LANCZOS),
    which imagehash's own resize then leaves as it is. Before, three
    full-size copies (``exif_transpose``'s, RGB's at 4 bytes a pixel,
    imagehash's greyscale) took a 100 MP LA PNG to +1.14 GB.

    Raises:
        OSError, ValueError: the pixels cannot be decoded.
    """
    import imagehash
    from PIL import Image

    if im.format == "JPEG":
        im.draft("RGB", (DECODE_SIDE, DECODE_SIDE))
    im.load()
    method = TRANSPOSE.get(exif_orientation(im))
    if im.mode == "L":
        grey = im
    elif im.mode == "P" and "transparency" in im.info:
        # the same luma as P -> L, without Pillow's warning that a palette's
        # transparency given in bytes wants RGBA first (it reached the console)
        grey = im.convert("RGBA").convert("L")
    elif im.mode in DIRECT_GREY:
        grey = im.convert("L")
    else:
        grey = im.convert("RGB").convert("L")
    if method is not None:
        grey = grey.transpose(method)
    lanczos = Image.Resampling.LANCZOS
    ph = imagehash.phash(grey.resize((32, 32), lanczos), hash_size=8)
    dh = imagehash.dhash(grey.resize((9, 8), lanczos), hash_size=8)
    return PerceptualHashes(to_signed(int(str(ph), 16)), to_signed(int(str(dh), 16)))


def hash_file(path: str, fileobj: Any = None, decoded: Any = None) -> PerceptualHashes | str:
    """The hashes of the image at ``path`` (read from ``fileobj``, an open
    binary file, when given), or a reason (str) why there are none. Never
    raises for a bad file (ingest goes on with a warning).

    ``decoded``: the file's :class:`~loupe.ingest.image.DecodedImage`; its
    pixels are hashed when decoding again would give the same ones (every
    format but a JPEG whose DCT scale differs), so the hashes never depend on
    whether it was given."""
    from PIL import Image

    try:
        im = decoded.same_as_decoding(DECODE_SIDE) if decoded is not None else None
        if im is not None:
            return hash_image(im)
        if fileobj is not None:
            fileobj.seek(0)
        with Image.open(fileobj if fileobj is not None else path) as im:
            return hash_image(im)
    except Exception as exc:  # any decoder failure is a warning, not a failed file
        return f"no perceptual hash: {type(exc).__name__}: {exc}"


def store(conn: psycopg.Connection, tenant_id: int, asset_id: int,
          hashes: PerceptualHashes | str | None) -> None:
    """Write an asset's hashes (or the reason it has none); ``None`` writes nothing."""
    if hashes is None:
        return
    if isinstance(hashes, str):
        row = {"phash": None, "dhash": None, "error": hashes[:1000]}
    else:
        row = {"phash": hashes.phash, "dhash": hashes.dhash, "error": None}
    conn.execute(STORE, {"asset_id": asset_id, "tenant_id": tenant_id, **row})
