"""Camera RAW (LibRaw, through ``rawpy``) and video (FFmpeg's libraries,
through ``av``) opened as Pillow images, so that every stage that reads
pixels — the ingest's decode, thumbnail, perceptual hashes and machine
words, and the later passes (``loupe embed``, ``loupe faces``, ``loupe
enrich``) that open an asset's private copy with ``Image.open`` — reads them
the same way, under the same pixel and memory bounds
(:func:`loupe.ingest.image.decode_image`).

What a RAW file shows is its **embedded preview** (the camera's own JPEG,
or an uncompressed RGB preview), decoded by Pillow; only a RAW without any
preview is demosaiced by LibRaw, at half size (each 2x2 block of the sensor
one pixel: a quarter of the work and memory of a full decode, still larger
than any thumbnail or model input). Its width and height are those of the
picture decoded, its orientation LibRaw's (``flip``) as an EXIF value.

What a video shows is its **poster frame**: the first frame at or after a
tenth of its length (at most :data:`POSTER_AT_S` seconds in), found by
decoding at most :data:`MAX_POSTER_FRAMES` frames from the key frame before
it. Its width and height are the video stream's, its duration the
container's (``info["duration_s"]``), its rotation (a phone's display
matrix) an EXIF orientation.

Bounds, all checked before the work they bound:

* the file's bytes: the caller's bound (``MAX_FILE_BYTES``) holds, as both
  libraries read a whole private copy;
* pixels: ``info["decode_pixels"]`` is what the decode allocates at most
  (a RAW's full sensor for a demosaic, a video frame's size), checked by the
  ingest against its ceiling before :meth:`load`; a RAW's sensor is also
  checked against :data:`MAX_SENSOR_PIXELS` when it is opened;
* frames: a poster frame is never searched past :data:`MAX_POSTER_FRAMES`
  decoded frames; a video stream of more than :data:`MAX_STREAMS` streams
  is refused;
* time: PyAV reads through a timeout-free file object, so the frame bound
  is the time bound: at most :data:`MAX_POSTER_FRAMES` frames decoded.
"""

from __future__ import annotations

import io
from typing import Any

from PIL import Image, ImageFile, TiffImagePlugin

try:  # optional heavy dependencies: without them these files are refused as unsupported
    import rawpy
except Exception:  # pragma: no cover - depends on the wheel
    rawpy = None
try:
    import av
except Exception:  # pragma: no cover - depends on the wheel
    av = None

#: RAW extensions read through LibRaw.
RAW_EXTENSIONS = {".cr2", ".cr3", ".nef", ".arw", ".dng", ".raf", ".orf", ".rw2"}
#: Video extensions read through FFmpeg's libraries.
VIDEO_EXTENSIONS = {".mp4", ".mov", ".m4v", ".mkv", ".webm", ".avi"}

#: The most sensor pixels a RAW may have to be opened (about 6 times a
#: 100 MP medium-format sensor); its demosaic is further held to the
#: ingest's own pixel ceiling through ``info["decode_pixels"]``.
MAX_SENSOR_PIXELS = 600_000_000
#: Frames decoded at most to find a video's poster frame (from the key frame
#: before it): a long group of pictures gets its key frame instead.
MAX_POSTER_FRAMES = 300
#: Seconds into a video its poster frame is taken at most (a tenth of its
#: length when shorter): past a fade-in, near the start.
POSTER_AT_S = 1.0
#: Streams a video container may hold (a file of thousands of streams costs
#: FFmpeg memory for each before any frame is decoded).
MAX_STREAMS = 64

#: LibRaw's ``flip`` -> EXIF orientation (LibRaw ``imgdata.sizes.flip``:
#: 0 none, 3 half turn, 5 quarter turn counter-clockwise, 6 clockwise).
FLIP_TO_ORIENTATION = {0: 1, 3: 3, 5: 8, 6: 6}
#: A video's rotation in degrees (display matrix) -> EXIF orientation.
ROTATION_TO_ORIENTATION = {0: 1, 90: 6, -270: 6, 180: 3, -180: 3, 270: 8, -90: 8}

#: Media types by the RAW kind :func:`raw_kind` names.
RAW_MEDIA_TYPES = {"cr2": "image/x-canon-cr2", "cr3": "image/x-canon-cr3",
                   "nef": "image/x-nikon-nef", "arw": "image/x-sony-arw",
                   "dng": "image/x-adobe-dng", "raf": "image/x-fuji-raf",
                   "orf": "image/x-olympus-orf", "rw2": "image/x-panasonic-rw2",
                   "raw": "image/x-raw"}
#: Media types of videos by container (``video_kind``).
VIDEO_MEDIA_TYPES = {"mp4": "video/mp4", "mov": "video/quicktime", "m4v": "video/x-m4v",
                     "mkv": "video/x-matroska", "webm": "video/webm", "avi": "video/x-msvideo"}

#: ISO-BMFF brands that are still pictures (HEIF, AVIF, JPEG XL) or a RAW
#: (Canon CR3): never opened as a video.
_STILL_BRANDS = {b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1",
                 b"avif", b"avis", b"jxl ", b"crx "}
_QT_ATOMS = {b"moov", b"mdat", b"wide", b"free", b"skip", b"pnot"}


def raw_kind(head: bytes) -> str | None:
    """The RAW kind a file's first bytes name without doubt (``cr2``,
    ``cr3``, ``raf``, ``orf``, ``rw2``), ``"tiff"`` for a TIFF that may be a
    RAW (DNG, NEF, ARW: decided by its first directory, :func:`_tiff_raw_kind`),
    else None. ``head``: at least 16 bytes."""
    if head.startswith(b"FUJIFILMCCD-RAW"):
        return "raf"
    if head[4:12] == b"ftypcrx ":
        return "cr3"
    if head[:4] in (b"IIRO", b"IIRS", b"MMOR"):
        return "orf"
    if head[:4] == b"IIU\x00":
        return "rw2"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "cr2" if head[8:10] == b"CR" else "tiff"
    return None


def video_kind(head: bytes) -> str | None:
    """The container a file's first bytes name (``mp4``, ``mov``, ``m4v``,
    ``mkv``, ``webm``, ``avi``), else None. ISO-BMFF files whose brand is a
    still picture or a RAW (:data:`_STILL_BRANDS`) are not videos."""
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "webm" if b"webm" in head[:64] else "mkv"
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return "avi"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in _STILL_BRANDS:
            return None
        return {b"qt  ": "mov", b"M4V ": "m4v", b"M4VH": "m4v", b"M4VP": "m4v"}.get(brand, "mp4")
    if head[4:8] in _QT_ATOMS:
        return "mov"
    return None


def _tiff_raw_kind(fp: Any, head: bytes) -> str | None:
    """``dng``, ``nef``, ``arw`` or ``raw`` for a TIFF whose first directory
    says it is a camera RAW (DNGVersion; or a maker's RAW layout: a Make and
    sub-directories), else None (a plain TIFF: Pillow's TIFF plugin reads it).
    Reads the first directory only, through Pillow's TIFF directory reader."""
    try:
        ifd = TiffImagePlugin.ImageFileDirectory_v2(head[:8])
        fp.seek(ifd.next)
        ifd.load(fp)
    except Exception:  # noqa: BLE001 - a broken directory: not a RAW this plugin reads
        return None
    if 50706 in ifd:           # DNGVersion
        return "dng"
    make = str(ifd.get(271, "")).strip().upper()
    if 330 in ifd and make:    # SubIFDs + Make: a maker's RAW
        if make.startswith("NIKON"):
            return "nef"
        if make.startswith("SONY"):
            return "arw"
        return "raw"
    return None


def _accept_raw(prefix: bytes) -> bool:
    return rawpy is not None and raw_kind(prefix) is not None


def _accept_video(prefix: bytes) -> bool:
    return av is not None and video_kind(prefix) is not None


def _exif_orientation(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


class RawImageFile(ImageFile.ImageFile):
    """A camera RAW as Pillow sees it: its embedded preview, or (no preview)
    LibRaw's half-size demosaic. ``info``: ``media_type``, ``raw_kind``,
    ``decode_pixels`` (pixels the decode allocates at most), ``exif``
    (orientation)."""

    format = "RAW"
    format_description = "camera RAW (LibRaw)"

    def _open(self) -> None:
        head = self.fp.read(16)
        kind = raw_kind(head)
        if kind == "tiff":
            kind = _tiff_raw_kind(self.fp, head)
        if kind is None:
            raise SyntaxError("not a camera RAW")
        self.fp.seek(0)
        data = self.fp.read()
        try:
            raw = rawpy.imread(io.BytesIO(data))
        except Exception as exc:  # noqa: BLE001 - LibRaw's own refusal
            raise SyntaxError(f"LibRaw cannot read it: {exc}") from exc
        sizes = raw.sizes
        sensor = sizes.raw_width * sizes.raw_height
        if sensor <= 0 or sensor > MAX_SENSOR_PIXELS:
            raw.close()
            raise SyntaxError(f"a {sizes.raw_width}x{sizes.raw_height} sensor is outside "
                              f"1..{MAX_SENSOR_PIXELS:,} pixels")
        self._raw = raw
        self._preview: Image.Image | None = None
        preview = None
        try:
            thumb = raw.extract_thumb()
        except Exception:  # noqa: BLE001 - no preview (LibRawNoThumbnailError) or a broken one
            thumb = None
        if thumb is not None and thumb.format == rawpy.ThumbFormat.JPEG:
            try:
                preview = Image.open(io.BytesIO(bytes(thumb.data)))
                if preview.format != "JPEG":
                    preview = None
            except Exception:  # noqa: BLE001 - an unreadable preview: demosaic instead
                preview = None
        elif thumb is not None and thumb.format == rawpy.ThumbFormat.BITMAP:
            arr = thumb.data
            if getattr(arr, "ndim", 0) == 3 and arr.shape[2] == 3 and arr.dtype.name == "uint8":
                preview = Image.fromarray(arr, "RGB")
        if preview is not None:
            self._preview = preview
            self._size = preview.size
            self.info["decode_pixels"] = preview.size[0] * preview.size[1]
            self.info["raw_source"] = "preview"
        else:
            # half size: each 2x2 sensor block one pixel; LibRaw still holds
            # the whole sensor (16 bits) and its 4-channel image
            self._size = (max(1, sizes.iwidth // 2), max(1, sizes.iheight // 2))
            self.info["decode_pixels"] = sensor
            self.info["raw_source"] = "demosaic"
        self._mode = "RGB"
        self.info["raw_kind"] = kind
        self.info["media_type"] = RAW_MEDIA_TYPES[kind]
        self.info["exif"] = _exif_orientation(FLIP_TO_ORIENTATION.get(sizes.flip, 1))
        self.tile = []

    def load(self) -> Any:
        if self._im is not None and self.im is not None:
            return Image.Image.load(self)
        try:
            if self._preview is not None:
                self._preview.load()
                frame = self._preview.convert("RGB") if self._preview.mode != "RGB" \
                    else self._preview
            else:
                rgb = self._raw.postprocess(half_size=True, user_flip=0, output_bps=8,
                                            use_camera_wb=True)
                frame = Image.fromarray(rgb, "RGB")
        except Exception as exc:  # noqa: BLE001 - LibRaw's or the preview's decode error
            raise OSError(f"cannot decode the RAW file: {exc}") from exc
        finally:
            self._release()
        if frame.size != self.size:
            frame = frame.resize(self.size)
        self.im = frame.im
        self._mode = frame.mode
        return Image.Image.load(self)

    def _release(self) -> None:
        raw, self._raw = getattr(self, "_raw", None), None
        if raw is not None:
            raw.close()

    def _close_fp(self) -> None:  # Pillow calls it from close()
        self._release()
        super()._close_fp()


def _rotation(stream: Any) -> int:
    """Degrees a video's container says it is turned (its ``rotate`` tag),
    0 when none."""
    try:
        rot = stream.metadata.get("rotate")
        return int(float(rot)) % 360 if rot is not None else 0
    except (TypeError, ValueError):
        return 0


class VideoImageFile(ImageFile.ImageFile):
    """A video as Pillow sees it: its poster frame. ``info``: ``media_type``,
    ``duration_s``, ``decode_pixels``, ``video_codec``, ``exif``
    (orientation from its rotation)."""

    format = "VIDEO"
    format_description = "video (FFmpeg)"

    def _open(self) -> None:
        head = self.fp.read(64)
        kind = video_kind(head)
        if kind is None:
            raise SyntaxError("not a video")
        self.fp.seek(0)
        try:
            container = av.open(self.fp, mode="r")
        except Exception as exc:  # noqa: BLE001 - FFmpeg's refusal
            raise SyntaxError(f"FFmpeg cannot read it: {exc}") from exc
        try:
            if len(container.streams) > MAX_STREAMS:
                raise SyntaxError(f"{len(container.streams)} streams, over the limit of "
                                  f"{MAX_STREAMS}")
            if not container.streams.video:
                raise SyntaxError("no video stream")
            stream = container.streams.video[0]
            width, height = stream.codec_context.width, stream.codec_context.height
            if width <= 0 or height <= 0:
                raise SyntaxError(f"invalid frame size {width}x{height}")
        except BaseException:
            container.close()
            raise
        self._container = container
        duration = None
        if container.duration is not None and container.duration > 0:
            duration = container.duration / av.time_base
        elif stream.duration and stream.time_base:
            duration = float(stream.duration * stream.time_base)
        self._size = (width, height)
        self._mode = "RGB"
        self.info.update({"media_type": VIDEO_MEDIA_TYPES[kind], "video_kind": kind,
                          "duration_s": duration, "decode_pixels": width * height,
                          "video_codec": stream.codec_context.name})
        self.info["exif"] = _exif_orientation(ROTATION_TO_ORIENTATION.get(_rotation(stream), 1))
        self.tile = []

    def load(self) -> Any:
        if self._im is not None and self.im is not None:
            return Image.Image.load(self)
        container = self._container
        try:
            frame = self._poster(container)
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001 - FFmpeg's decode error
            raise OSError(f"cannot decode the video: {exc}") from exc
        finally:
            self._release()
        if frame is None:
            raise OSError(f"no frame decoded in the first {MAX_POSTER_FRAMES} frames")
        if frame.size != self.size:
            frame = frame.resize(self.size)
        self.im = frame.im
        self._mode = frame.mode
        return Image.Image.load(self)

    def _poster(self, container: Any) -> Image.Image | None:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        duration = self.info.get("duration_s") or 0.0
        at = min(POSTER_AT_S, duration / 10) if duration else 0.0
        target = None
        if at > 0 and stream.time_base:
            target = int(at / stream.time_base)
            try:
                container.seek(target, stream=stream, backward=True, any_frame=False)
            except Exception:  # noqa: BLE001 - not seekable: the first frame
                target = None
        first = None
        for n, frame in enumerate(container.decode(stream)):
            if n >= MAX_POSTER_FRAMES:
                break
            if first is None:
                first = frame
            if target is None or frame.pts is None or frame.pts >= target:
                return frame.to_image()
            first = frame
        return first.to_image() if first is not None else None

    def _release(self) -> None:
        c, self._container = getattr(self, "_container", None), None
        if c is not None:
            c.close()

    def _close_fp(self) -> None:  # Pillow calls it from close()
        self._release()
        super()._close_fp()


def register() -> None:
    """Register both plugins with Pillow, ahead of its TIFF plugin (a DNG,
    NEF or ARW is a TIFF whose first directory is only a small preview) and
    of any other (an MP4's ``ftyp`` box would otherwise meet the HEIF
    plugin's test). Idempotent."""
    for cls, accept in ((RawImageFile, _accept_raw), (VideoImageFile, _accept_video)):
        Image.register_open(cls.format, cls, accept)
        Image.ID.remove(cls.format)
        Image.ID.insert(0, cls.format)


register()
