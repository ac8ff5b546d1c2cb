"""Compressed metadata chunks of a PNG, measured before anything inflates them.

A PNG's ``zTXt``, ``iTXt`` (compressed) and ``iCCP`` chunks hold zlib streams.
ExifTool inflates them whole and has no limit, so a 0.5 MB file whose one
text chunk inflates to 512 MiB cost the ingest gigabytes.
Pillow bounds the same chunks (``PIL.PngImagePlugin.MAX_TEXT_CHUNK`` per
chunk, ``MAX_TEXT_MEMORY`` for a file); Loupe applies Pillow's bounds before
ExifTool sees the file, inflating at most one byte past the bound
(``zlib.decompressobj().decompress(data, max_length)``). Chunk layout:
PNG specification (W3C, 3rd edition), §11.3.3.
"""

from __future__ import annotations

import os
import struct
import zlib

from PIL import PngImagePlugin

from .xmpcheck import packet_shape_problem

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Inflated bytes allowed for one compressed chunk: Pillow's own bound
#: (1 MiB in Pillow 11).
MAX_CHUNK = PngImagePlugin.MAX_TEXT_CHUNK
#: Inflated bytes allowed for all of a file's compressed chunks: 8 MiB,
#: Loupe's bound, under Pillow's 64 MiB (``MAX_TEXT_MEMORY``): 60 chunks of
#: 1 MiB each passed Pillow's bounds and stored 62 MiB of metadata per file
#:; real XMP and ICC profiles are far smaller.
MAX_TOTAL = min(PngImagePlugin.MAX_TEXT_MEMORY, 8 * 1024 * 1024)
#: A compressed chunk larger than this on disk is refused without reading it.
MAX_STORED_CHUNK = 16 * 1024 * 1024
#: Most text and metadata chunks (tEXt, zTXt, iTXt, iCCP, eXIf, zxIf) in one
#: file, and most chunks of any kind: a million empty zTXt chunks (23 MB)
#: kept ExifTool busy 102 s. A 200 MiB PNG written in
#: 8 KiB IDAT chunks has about 25,600 chunks.
MAX_METADATA_CHUNKS = 1_000
MAX_CHUNKS = 100_000


#: Chunks whose data ExifTool may inflate (its PNG.pm: ProcessPNG_Compressed
#: for zTXt and iCCP, ProcessPNG_iTXt, ProcessPNG_eXIf for "compressed
#: EXIF"; zxIf is the same proposal under its own name).
COMPRESSED_KINDS = (b"zTXt", b"iTXt", b"iCCP", b"eXIf", b"zxIf")


def _payload(kind: bytes, data: bytes) -> bytes | None:
    """The zlib stream of a chunk's data, or None when it holds none."""
    if kind in (b"eXIf", b"zxIf"):
        # PNG.pm ProcessPNG_eXIf: data starting with \0 is compressed EXIF,
        # its stream after 5 bytes
        return data[5:] if data[:1] == b"\x00" else None
    name_end = data.find(b"\x00")
    if name_end < 0:
        return None
    if kind in (b"zTXt", b"iCCP"):      # name \0 method(1) stream
        return data[name_end + 2:]
    # iTXt: keyword \0 compressed-flag(1) method(1) language \0 translated \0 text;
    # ExifTool inflates for ANY non-zero flag (PNG.pm: "$compressed and ..."),
    # not only the specification's 1
    if len(data) < name_end + 3 or data[name_end + 1] == 0:
        return None
    rest = data[name_end + 3:]
    lang_end = rest.find(b"\x00")
    trans_end = rest.find(b"\x00", lang_end + 1) if lang_end >= 0 else -1
    return rest[trans_end + 1:] if trans_end >= 0 else None


#: Text chunks ExifTool reads as XMP when their keyword is
#: :data:`XMP_KEYWORD` (PNG.pm; Adobe's XMP specification part 3 names iTXt).
XMP_KINDS = (b"tEXt", b"zTXt", b"iTXt")
XMP_KEYWORD = b"XML:com.adobe.xmp"


#: ImageMagick's "raw profile" keywords ExifTool also reads XMP from (PNG.pm
#: ProcessProfile: hex text after a type line and a length line; the APP1
#: one holds a JPEG APP1 segment, XMP after :data:`XMP_APP1_HEADER`).
#: Measured: a 1,973-byte PNG with a 3,000-deep packet under
#: "Raw profile type xmp" kept ExifTool busy past 45 s, unmeasured.
RAW_PROFILE_KEYWORDS = (b"Raw profile type xmp", b"Raw profile type APP1")
XMP_APP1_HEADER = b"http://ns.adobe.com/xap/1.0/\x00"


def _text(kind: bytes, data: bytes, keyword: bytes) -> bytes | None:
    """The text of a tEXt, zTXt or iTXt chunk whose keyword is ``keyword``
    (inflated to at most :data:`MAX_CHUNK` + 1 bytes when compressed), or None."""
    if not data.startswith(keyword + b"\x00"):
        return None
    if kind == b"tEXt":
        return data[len(keyword) + 1:]
    stream = _payload(kind, data)
    if stream is None:          # an uncompressed iTXt: the text after 3 NUL-ended fields
        rest = data[len(keyword) + 3:]
        lang_end = rest.find(b"\x00")
        trans_end = rest.find(b"\x00", lang_end + 1) if lang_end >= 0 else -1
        return rest[trans_end + 1:] if trans_end >= 0 else None
    try:
        return zlib.decompressobj().decompress(stream, MAX_CHUNK + 1)
    except zlib.error:
        return None


def _raw_profile(text: bytes) -> bytes | None:
    """The bytes of an ImageMagick raw profile ("\\nTYPE\\n   LENGTH\\nHEX..."):
    the hex digits after the third line, decoded (odd or stray characters
    skipped, as ExifTool's ``pack('H*')`` after removing white space)."""
    parts = text.split(b"\n", 3)
    if len(parts) < 4:
        return None
    digits = bytes(c for c in parts[3] if c in b"0123456789abcdefABCDEF")
    try:
        return bytes.fromhex(digits[:len(digits) // 2 * 2].decode("ascii"))
    except ValueError:
        return None


def _xmp_packet(kind: bytes, data: bytes) -> bytes | None:
    """The XMP packet a text chunk holds (inflated to at most
    :data:`MAX_CHUNK` + 1 bytes when compressed): under :data:`XMP_KEYWORD`,
    or hex-encoded under one of :data:`RAW_PROFILE_KEYWORDS`; None for any
    other keyword or a stream that does not inflate."""
    text = _text(kind, data, XMP_KEYWORD)
    if text is not None:
        return text
    for keyword in RAW_PROFILE_KEYWORDS:
        text = _text(kind, data, keyword)
        if text is not None:
            raw = _raw_profile(text)
            if raw is not None and keyword.endswith(b"APP1"):
                return raw[len(XMP_APP1_HEADER):] if raw.startswith(XMP_APP1_HEADER) else None
            return raw
    return None


def compressed_chunk_problem(fd: int) -> str | None:
    """Why the PNG open as ``fd`` (read with ``os.pread``; any other file is
    not looked at) has compressed metadata Loupe will not inflate, or None.

    Every chunk to the end of the file is walked — ExifTool reads chunks past
    ``IEND`` too ("trailer") —; a stream that is not valid zlib is skipped
    (ExifTool cannot inflate it either) and the walk goes on (a bomb after ``IEND``, after a broken first chunk, in an iTXt with
    flag 2, or in a compressed eXIf chunk passed). Never raises for a
    malformed file (other checks name what is wrong)."""
    try:
        size = os.fstat(fd).st_size
        if os.pread(fd, 8, 0) != PNG_SIGNATURE:
            return None
        pos, total, chunks, metadata = 8, 0, 0, 0
        while pos + 8 <= size:
            length, kind = struct.unpack(">I4s", os.pread(fd, 8, pos))
            chunks += 1
            if kind in COMPRESSED_KINDS or kind == b"tEXt":
                metadata += 1
            if metadata > MAX_METADATA_CHUNKS:
                return (f"more than {MAX_METADATA_CHUNKS:,} text and metadata chunks "
                        f"(Loupe's bound, applied before ExifTool)")
            if chunks > MAX_CHUNKS:
                return f"more than {MAX_CHUNKS:,} chunks (Loupe's bound, applied before ExifTool)"
            if kind in XMP_KINDS and length <= MAX_STORED_CHUNK:
                data = os.pread(fd, length, pos + 8)
                if (packet := _xmp_packet(kind, data)) is not None:
                    if (why := packet_shape_problem(packet)):
                        return (f"an XMP packet embedded in a {kind.decode()} chunk: {why} "
                                f"(Loupe's bound, applied before ExifTool)")
            if kind in COMPRESSED_KINDS:
                if length > MAX_STORED_CHUNK:
                    return (f"a compressed {kind.decode()} metadata chunk of {length:,} bytes "
                            f"(at most {MAX_STORED_CHUNK:,})")
                stream = _payload(kind, os.pread(fd, length, pos + 8))
                if stream:
                    try:
                        out = zlib.decompressobj().decompress(stream, MAX_CHUNK + 1)
                    except zlib.error:
                        out = b""   # not inflatable: ExifTool gets nothing from it either
                    if len(out) > MAX_CHUNK:
                        return (f"a compressed {kind.decode()} metadata chunk inflates past "
                                f"{MAX_CHUNK:,} bytes (Pillow's bound, applied before ExifTool)")
                    total += len(out)
                    if total > MAX_TOTAL:
                        return (f"compressed metadata chunks inflate past {MAX_TOTAL:,} bytes "
                                f"in all (Loupe's bound, applied before ExifTool)")
            pos += 12 + length
    except (OSError, struct.error):
        return None
    return None
