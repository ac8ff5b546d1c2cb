"""Decoding, checking and thumbnailing one image file (Pillow, pillow-heif).

Everything here works on one path and either returns :class:`ImageFacts` or
raises :class:`~loupe.ingest.errors.BadFile` with a reason a person can act on.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from PIL import Image, ImageOps, UnidentifiedImageError

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
#: Bytes a decoded pixel takes, by Pillow mode (the mode's nominal size:
#: bands x bytes a band); a mode not listed counts 4, the most of any.
MODE_BYTES = {"1": 1, "L": 1, "P": 1, "LA": 2, "La": 2, "PA": 2, "I;16": 2, "I;16L": 2,
              "I;16B": 2, "I;16N": 2, "RGB": 3, "YCbCr": 3, "LAB": 3, "HSV": 3,
              "RGBA": 4, "RGBa": 4, "RGBX": 4, "CMYK": 4, "I": 4, "F": 4}
#: Decoded bytes allowed per pixel of the pixel bound: an image may decode to
#: at most ``max_pixels x 3`` bytes, what ``max_pixels`` of RGB take. The
#: pixel bound alone let a 730 KB deflate TIFF of 100 MP in mode F (32-bit
#: float, 4 bytes a pixel) grow the server by 1,240 MiB (attack run 6, C8);
#: so a 100 MP RGB file is read as before, while F, I, RGBA, CMYK files may
#: have 75 MP and 16-bit greyscale 150 MP (still at most ``max_pixels``).
BYTES_PER_BOUND_PIXEL = 3


def decoded_bytes(mode: str, width: int, height: int) -> int:
    """Bytes ``width`` x ``height`` pixels of Pillow ``mode`` decode to
    (:data:`MODE_BYTES`)."""
    return width * height * MODE_BYTES.get(mode, 4)


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
    (attack run 4, A1: a PDF named .jpg whose metadata stream inflated to
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
    of decoding the file again (issue 15: three decodes a file were about a
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
        size = os.fstat(fileobj.fileno()).st_size if fileobj else os.path.getsize(path)
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
    need = decoded_bytes(im.mode, width, height)
    if need > max_pixels * BYTES_PER_BOUND_PIXEL:
        raise BadFile(
            path, "too_large",
            f"{width}x{height} pixels of mode {im.mode} decode to {need:,} bytes "
            f"({MODE_BYTES.get(im.mode, 4)} a pixel), over the limit of "
            f"{max_pixels * BYTES_PER_BOUND_PIXEL:,} bytes ({max_pixels:,} pixels x "
            f"{BYTES_PER_BOUND_PIXEL} bytes, decompression bomb guard): not decoded")
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
        _write_thumbnail(path, im, thumbnail_path, thumbnail_size)
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


def _write_thumbnail(path: str, im: Image.Image, out: Path, size: int) -> None:
    try:
        frame = ImageOps.exif_transpose(im)
        if frame.mode not in ("RGB", "RGBA"):
            frame = frame.convert("RGBA" if "A" in frame.getbands() or frame.mode == "P" else "RGB")
        frame.thumbnail((size, size), Image.Resampling.LANCZOS)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
        frame.save(tmp, "WEBP", quality=THUMBNAIL_QUALITY, method=THUMBNAIL_WEBP_METHOD)
        os.replace(tmp, out)
    except (OSError, ValueError) as exc:
        raise BadFile(path, "corrupt", f"cannot make a thumbnail: {exc}") from exc
