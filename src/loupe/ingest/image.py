"""Decoding, checking and thumbnailing one image file (Pillow, pillow-heif).

Everything here works on one path and either returns :class:`ImageFacts` or
raises :class:`~loupe.ingest.errors.BadFile` with a reason a person can act on.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from PIL import Image, UnidentifiedImageError

from .errors import BadFile

try:  # HEIC/HEIF support is a plugin; without it HEIC files are reported as unsupported.
    import pillow_heif

    pillow_heif.register_heif_opener()
    HEIF_AVAILABLE = True
except Exception:  # pragma: no cover - depends on the wheel
    HEIF_AVAILABLE = False

# Extensions walked by ingest, and the Pillow formats accepted for them.
EXTENSIONS = {".jpg", ".jpeg", ".jpe", ".png", ".webp", ".tif", ".tiff", ".gif", ".heic", ".heif"}
FORMATS = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "TIFF": "image/tiff",
           "GIF": "image/gif", "HEIF": "image/heic", "MPO": "image/jpeg"}

#: Default ceiling on decoded pixels (width x height). Above it a file is
#: refused as a decompression bomb instead of being decoded. 150 MP admits
#: the largest common camera files (e.g. 100 MP medium format) with room.
DEFAULT_MAX_PIXELS = 150_000_000
#: Bytes a decoded pixel takes in memory, by Pillow mode: what Pillow
#: really allocates (``Storage.c``: every mode of two or more bands, and the
#: 32-bit ``I`` and ``F``, is stored at 4 bytes a pixel; "1", "L" and "P" at
#: 1; the 16-bit greyscale modes at 2), measured as RSS growth per pixel of
#: ``Image.new`` in a fresh process (tests/test_decode_memory.py). The bound used
#: to count a mode's nominal bytes (LA 2, RGB 3), so a 100 MP LA PNG passed
#: as 200 MB and took 400 MB to decode. A mode not listed
#: counts 4, the most of any.
MODE_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16L": 2, "I;16B": 2, "I;16N": 2,
              "LA": 4, "La": 4, "PA": 4, "RGB": 4, "RGBA": 4, "RGBa": 4, "RGBX": 4,
              "CMYK": 4, "YCbCr": 4, "LAB": 4, "HSV": 4, "I": 4, "F": 4}
#: Bytes per pixel the stages after the decode add at most, beside the
#: decoded image they all read (:func:`working_bytes`): the perceptual hash
#: makes one greyscale copy (1) and its EXIF-oriented transposition (1);
#: the thumbnail and the machine words work on an image first shrunk from
#: the decoded one (a fraction of a byte). Before, each stage made
#: full-size copies of its own (``exif_transpose`` copies even when there is
#: nothing to turn; a conversion to RGB or RGBA, 4 bytes a pixel; Pillow's
#: premultiplied copy of LA and RGBA before resampling, 4 more): a 100 MP
#: LA PNG grew the server by 1.14 GB in the hash stage.
STAGE_BYTES = 2
#: Working bytes allowed per pixel of the pixel bound: an image may take at
#: most ``max_pixels x 6`` bytes (decoded + later stages), what ``max_pixels``
#: of RGB take (4 + 2): so every mode is held to what an RGB image of the
#: bound costs, and 16-bit greyscale, L and P images reach the pixel bound
#: itself. The bound used to be 3 nominal bytes a pixel.
BYTES_PER_BOUND_PIXEL = MODE_BYTES["RGB"] + STAGE_BYTES


def decoded_bytes(mode: str, width: int, height: int) -> int:
    """Bytes Pillow allocates for ``width`` x ``height`` decoded pixels of
    ``mode`` (:data:`MODE_BYTES`)."""
    return width * height * MODE_BYTES.get(mode, 4)


def working_bytes(mode: str, width: int, height: int) -> int:
    """The most memory the ingest of one image of ``mode`` takes at once, in
    bytes: the decoded image plus :data:`STAGE_BYTES` a pixel for the later
    stages (measured per stage in tests/test_decode_memory.py)."""
    return decoded_bytes(mode, width, height) + width * height * STAGE_BYTES


#: EXIF orientation (tag 0x0112) -> the transposition that shows the image
#: upright (as ``PIL.ImageOps.exif_transpose`` does); 1 and others: none.
TRANSPOSE = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180,
             4: Image.Transpose.FLIP_TOP_BOTTOM, 5: Image.Transpose.TRANSPOSE,
             6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
             8: Image.Transpose.ROTATE_90}


def exif_orientation(im: Image.Image) -> int:
    """The EXIF orientation of an opened image as ``exif_transpose`` reads
    it (1 when absent or unreadable)."""
    try:
        return int(im.getexif().get(0x0112, 1) or 1)
    except Exception:  # noqa: BLE001 - a broken EXIF block: upright
        return 1


#: Modes :meth:`PIL.Image.Image.reduce` averages without a full-size copy
#: (it premultiplies LA and RGBA into a copy first; "1", "P" and the 16-bit
#: greyscale modes it refuses).
_REDUCE_MODES = frozenset({"L", "RGB", "RGBX", "CMYK", "I", "F"})


def shrunk(im: Image.Image, side: int) -> Image.Image:
    """``im`` (loaded) made smaller before any full-size conversion: by the
    largest whole factor that leaves its longest side at least ``2 x side``
    (box averaging, or nearest neighbour for modes averaging would copy or
    cannot do). ``im`` itself when no factor of 2 or more fits: small images
    are resampled exactly as before."""
    k = max(im.size) // (2 * side)
    if k < 2:
        return im
    if im.mode in _REDUCE_MODES:
        return im.reduce(k)
    w, h = im.size
    return im.resize((-(-w // k), -(-h // k)), Image.Resampling.NEAREST)


#: Longest side of stored thumbnails, in pixels.
THUMBNAIL_SIZE = 384
#: WebP encoding of thumbnails: lossy quality (0-100) and libwebp's effort
#: ``method`` (0 fastest .. 6 smallest).
THUMBNAIL_QUALITY = 80
THUMBNAIL_WEBP_METHOD = 2

# Loupe applies its own, configurable pixel ceiling (above) between reading
# the header and decoding, so Pillow's fixed global one is switched off:
# otherwise it would refuse some files under Loupe's limit with another message.
Image.MAX_IMAGE_PIXELS = None


@dataclass(frozen=True)
class ImageFacts:
    """What ingest learns from the pixels of one file.

    ``width``/``height`` are the stored pixel dimensions (before EXIF
    orientation is applied); ``orientation`` is the EXIF value 1..8.
    """

    media_type: str
    width: int
    height: int
    orientation: int


def displayed_size(width: int, height: int, orientation: int) -> tuple[int, int]:
    """``(width, height)`` of stored pixels as displayed under EXIF ``orientation``.

    EXIF 2.32 (CIPA DC-008), tag 0x0112: values 5..8 transpose the picture
    (a quarter turn, with or without a mirror), so its sides swap; 1..4 keep
    them (identity, mirrors, half turn). Any other value counts as 1.
    """
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)


#: Bytes of a private copy (:func:`hashed_copy`) kept in memory; a larger
#: file's copy is spooled to an unlinked temporary file.
COPY_IN_MEMORY = 64 << 20

#: The largest file the ingest reads (bytes), checked on the file's size
#: before it is hashed and copied: a picture within the pixel ceiling
#: (150 megapixels by default) needs less even uncompressed at 16 bits per
#: channel (900 MB), while a sparse file of any apparent size costs its writer
#: nothing and filled the temporary directory with its copy.
MAX_FILE_BYTES = 1 << 30


def hashed_copy(fileobj: BinaryIO, max_bytes: int | None = None
                ) -> tuple[BinaryIO, bytes, int] | None:
    """A private copy of ``fileobj``'s bytes from its start, with their
    SHA-256 digest and count, read once: ``(copy at offset 0, digest,
    bytes)``. Whoever decodes the copy decodes exactly the bytes hashed — a
    write to the file after this changes nothing in the copy (a file
    rewritten in place between the hash
    and the decode, which read it again). In memory up to
    :data:`COPY_IN_MEMORY` bytes, else in an unlinked temporary file; the
    caller closes it. None (nothing kept) when the file holds more than
    ``max_bytes``.

    Raises:
        OSError: the file cannot be read.
    """
    fileobj.seek(0)
    out = tempfile.SpooledTemporaryFile(max_size=COPY_IN_MEMORY)
    h, n = hashlib.sha256(), 0
    while chunk := fileobj.read(1 << 20):
        n += len(chunk)
        if max_bytes is not None and n > max_bytes:
            out.close()
            return None
        h.update(chunk)
        out.write(chunk)
    out.seek(0)
    return out, h.digest(), n


def sha256_file(path: str, fileobj: BinaryIO | None = None) -> bytes:
    """Return the SHA-256 digest (32 bytes) of a file's bytes, read in chunks
    (from ``fileobj``, from its start, when given; ``path`` names it).

    Raises:
        BadFile: kind ``io`` when the file cannot be read.
    """
    try:
        if fileobj is not None:
            fileobj.seek(0)
            return hashlib.file_digest(fileobj, "sha256").digest()
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").digest()
    except OSError as exc:
        raise BadFile(path, "io", f"cannot read file: {exc.strerror or exc}") from exc


def unrecognised(path: str, fileobj: BinaryIO) -> BadFile | None:
    """The refusal :func:`inspect_image` would give for a file Pillow does
    not recognise as an image (read from ``fileobj``'s header only, from its
    start; the offset is restored), or None (an image, or a problem the full
    inspection names). Run before ExifTool reads the file: ExifTool reads
    PDFs and other documents by their magic bytes and inflates their streams
    (a PDF named .jpg whose metadata stream inflated to
    100 MiB)."""
    try:
        fileobj.seek(0)
        if not fileobj.read(1):
            return None
        fileobj.seek(0)
        with Image.open(fileobj):
            return None
    except UnidentifiedImageError:
        magic = _image_signature(path, fileobj)
        if magic:
            return BadFile(path, "corrupt",
                           f"corrupt image: starts like a {magic} file but cannot be decoded")
        return BadFile(path, "not_image", "not an image: no image format recognised in its bytes")
    except Exception:
        return None
    finally:
        try:
            fileobj.seek(0)
        except (OSError, ValueError):
            pass


def jpeg_draft_scale(size: tuple[int, int], request: int) -> int:
    """The DCT scale denominator (1, 2, 4 or 8) Pillow's JPEG decoder uses
    for ``im.draft(mode, (request, request))`` on a picture of ``size``
    (width, height): the largest of 8, 4, 2, 1 not above
    ``min(width // request, height // request)`` (``JpegImagePlugin.draft``;
    ``tests/test_decode_once.py`` checks it against Pillow itself)."""
    most = min(size[0] // request, size[1] // request)
    return next((s for s in (8, 4, 2, 1) if most >= s), 1)


class DecodedImage:
    """An image :func:`decode_image` decoded (first frame), kept open so that
    the perceptual hashes and the machine words read the same pixels instead
    of decoding the file again (three decodes a file were about a
    third of the ingest's Python time).

    ``facts``: what :func:`inspect_image` returns. ``image``: the loaded
    Pillow image, stored orientation (EXIF not applied), a JPEG at the DCT
    scale its thumbnail asked for. Use it as a context manager, or call
    :meth:`close`.
    """

    def __init__(self, facts: ImageFacts, image: Image.Image, original_size: tuple[int, int],
                 draft_request: int | None, owns_file: bool):
        self.facts = facts
        self.image = image
        self._owns_file = owns_file
        self._original_size = original_size
        self._draft_request = draft_request

    def same_as_decoding(self, request: int | None) -> Image.Image | None:
        """The decoded image when decoding the file again with
        ``draft("RGB", (request, request))`` (JPEG only; ``None``: no draft)
        would give the same pixels and the same size, else ``None`` (the
        caller decodes the file itself). Other formats have no draft: always
        the same. A JPEG: when neither decode is reduced (DCT scale 1 both)."""
        if self.image.format != "JPEG":
            return self.image
        mine = (jpeg_draft_scale(self._original_size, self._draft_request)
                if self._draft_request else 1)
        theirs = jpeg_draft_scale(self._original_size, request) if request else 1
        return self.image if mine == theirs == 1 else None

    def close(self) -> None:
        """Release the decoded pixels (and the file when it was opened by
        path; a file object the caller gave stays open)."""
        if self._owns_file:
            self.image.close()
        else:   # ImageFile.close would close the caller's file object too
            Image.Image.close(self.image)

    def __enter__(self) -> "DecodedImage":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def inspect_image(path: str, thumbnail_path: Path | None, *,
                  max_pixels: int = DEFAULT_MAX_PIXELS,
                  thumbnail_size: int = THUMBNAIL_SIZE,
                  fileobj: BinaryIO | None = None) -> ImageFacts:
    """Check that ``path`` is a decodable image and write its thumbnail.

    The whole image is decoded (so truncation and corruption are caught here,
    not later in a thumbnail request). The thumbnail is a WebP whose longest
    side is ``thumbnail_size`` pixels, with EXIF orientation applied; it is
    written atomically (temporary file + rename) when ``thumbnail_path`` is given
    and does not exist yet (thumbnails are named by content hash).
    ``fileobj``: the file, already open (ingest reads every file through one
    descriptor); ``path`` then only names it in errors.

    Raises:
        BadFile: kinds ``empty``, ``not_image``, ``unsupported``, ``too_large``,
            ``truncated``, ``corrupt`` or ``io``.
    """
    with decode_image(path, thumbnail_path, max_pixels=max_pixels,
                      thumbnail_size=thumbnail_size, fileobj=fileobj) as decoded:
        return decoded.facts


def decode_image(path: str, thumbnail_path: Path | None, *,
                 max_pixels: int = DEFAULT_MAX_PIXELS,
                 thumbnail_size: int = THUMBNAIL_SIZE,
                 fileobj: BinaryIO | None = None) -> DecodedImage:
    """:func:`inspect_image`, keeping the decoded pixels: returns a
    :class:`DecodedImage` the caller closes (the same checks, thumbnail and
    errors; ``BadFile`` raised leaves nothing open)."""
    try:
        # the size by seeking, not fstat(fileno()): a SpooledTemporaryFile
        # (hashed_copy) would move to disk for fileno
        size = fileobj.seek(0, os.SEEK_END) if fileobj else os.path.getsize(path)
        if fileobj is not None:
            fileobj.seek(0)
    except OSError as exc:
        raise BadFile(path, "io", f"cannot read file: {exc.strerror or exc}") from exc
    if size == 0:
        raise BadFile(path, "empty", "empty file (0 bytes)")
    try:
        im = Image.open(fileobj if fileobj is not None else path)
    except UnidentifiedImageError as exc:
        magic = _image_signature(path, fileobj)
        if magic:
            raise BadFile(path, "corrupt",
                          f"corrupt image: starts like a {magic} file but cannot be decoded") from exc
        raise BadFile(path, "not_image", "not an image: no image format recognised in its bytes") from exc
    except Image.DecompressionBombError as exc:
        raise BadFile(path, "too_large", f"refused as a decompression bomb: {exc}") from exc
    except (PermissionError, FileNotFoundError, IsADirectoryError) as exc:
        raise BadFile(path, "io", f"cannot read file: {exc.strerror or exc}") from exc
    except OSError as exc:
        kind = "truncated" if "truncat" in str(exc).lower() else "corrupt"
        raise BadFile(path, kind, f"{kind} image: {exc}") from exc
    except (ValueError, SyntaxError) as exc:
        raise BadFile(path, "corrupt", f"corrupt image header: {exc}") from exc
    try:
        return _decode(path, im, thumbnail_path, max_pixels, thumbnail_size, fileobj is None)
    except BaseException:
        if fileobj is None:
            im.close()
        else:
            Image.Image.close(im)
        raise


def _decode(path: str, im: Image.Image, thumbnail_path: Path | None, max_pixels: int,
            thumbnail_size: int, owns_file: bool) -> DecodedImage:
    fmt = im.format or "?"
    if fmt not in FORMATS:
        raise BadFile(path, "unsupported", f"unsupported image format {fmt}")
    width, height = im.size
    if width <= 0 or height <= 0:
        raise BadFile(path, "corrupt", f"invalid dimensions {width}x{height}")
    if width * height > max_pixels:
        raise BadFile(
            path, "too_large",
            f"{width}x{height} = {width * height:,} pixels exceeds the limit of "
            f"{max_pixels:,} (decompression bomb guard)")
    need = working_bytes(im.mode, width, height)
    if need > max_pixels * BYTES_PER_BOUND_PIXEL:
        raise BadFile(
            path, "too_large",
            f"{width}x{height} pixels of mode {im.mode} take {need:,} bytes to ingest "
            f"({MODE_BYTES.get(im.mode, 4)} a pixel decoded + {STAGE_BYTES} for the later "
            f"stages), over the limit of {max_pixels * BYTES_PER_BOUND_PIXEL:,} bytes "
            f"({max_pixels:,} pixels x {BYTES_PER_BOUND_PIXEL} bytes, what RGB takes; "
            f"decompression bomb guard): not decoded")
    try:
        orientation = int(im.getexif().get(0x0112, 1) or 1)
    except Exception:
        orientation = 1
    if not 1 <= orientation <= 8:
        orientation = 1
    draft_request = None
    try:
        if fmt == "JPEG":
            # Decode at a reduced scale when the thumbnail allows it (DCT scaling).
            draft_request = thumbnail_size * 2
            im.draft("RGB", (draft_request, draft_request))
        im.load()
    except OSError as exc:
        msg = str(exc)
        if "truncated" in msg.lower():
            raise BadFile(path, "truncated", f"truncated image: {msg}") from exc
        raise BadFile(path, "corrupt", f"cannot decode image: {msg}") from exc
    except (ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise BadFile(path, "corrupt", f"cannot decode image: {exc}") from exc
    if thumbnail_path is not None and not thumbnail_path.exists():
        _write_thumbnail(path, im, thumbnail_path, thumbnail_size, orientation)
    return DecodedImage(ImageFacts(FORMATS[fmt], width, height, orientation), im,
                        (width, height), draft_request, owns_file)


# Leading bytes of the accepted formats (offset, bytes, name).
_SIGNATURES = [(0, b"\xff\xd8\xff", "JPEG"), (0, b"\x89PNG\r\n\x1a\n", "PNG"),
               (0, b"GIF87a", "GIF"), (0, b"GIF89a", "GIF"), (8, b"WEBP", "WebP"),
               (0, b"II*\x00", "TIFF"), (0, b"MM\x00*", "TIFF"), (4, b"ftypheic", "HEIC"),
               (4, b"ftypheix", "HEIC"), (4, b"ftypmif1", "HEIF")]


def _image_signature(path: str, fileobj: BinaryIO | None = None) -> str | None:
    """Name of the image format whose signature the file starts with, if any."""
    try:
        if fileobj is not None:
            fileobj.seek(0)
            head = fileobj.read(16)
        else:
            with open(path, "rb") as fh:
                head = fh.read(16)
    except OSError:
        return None
    for offset, sig, name in _SIGNATURES:
        if head[offset:offset + len(sig)] == sig:
            return name
    return None


def _write_thumbnail(path: str, im: Image.Image, out: Path, size: int,
                     orientation: int = 1) -> None:
    # shrunk first, then turned and converted: no full-size copy of the
    # decoded image
    try:
        frame = shrunk(im, size)
        method = TRANSPOSE.get(orientation)
        if method is not None:
            frame = frame.transpose(method)
        if frame.mode not in ("RGB", "RGBA"):
            frame = frame.convert("RGBA" if "A" in frame.getbands() or frame.mode == "P" else "RGB")
        if frame is im:
            # never shrink the decoded image in place: the hashes and the
            # machine words read it next (decode once); a second Image over
            # the same pixels, whose core thumbnail() replaces
            frame = im._new(im.im)
        frame.thumbnail((size, size), Image.Resampling.LANCZOS)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
        frame.save(tmp, "WEBP", quality=THUMBNAIL_QUALITY, method=THUMBNAIL_WEBP_METHOD)
        os.replace(tmp, out)
    except (OSError, ValueError) as exc:
        raise BadFile(path, "corrupt", f"cannot make a thumbnail: {exc}") from exc
