"""The metadata structure of a GIF, a TIFF and a JPEG, measured before ExifTool reads it.

A flood of JPEG COM segments is bounded by a JPEG-only count
(:mod:`loupe.ingest.jpegcheck`); the same class of flood exists
in the other containers ExifTool walks, each held only by the 30 s time bound
of one ExifTool call:

- **GIF extension blocks**: ExifTool (``GIF.pm``) reads every extension block
  before the trailer and records each comment as a tag of its own (500 KB of
  comment extensions: 13.5 s of ExifTool);
- **TIFF IFD chains**: ExifTool (``Exif.pm``) follows every "next IFD" link and
  every sub-IFD pointer and reads every entry (a 1.8 MB chain: 32 s);
- **XMP packets inside a JPEG** (APP1, and Extended XMP across APP1
  segments): the same recursive XMP parser the sidecar bounds protect
  (:mod:`loupe.ingest.xmpcheck`; a 66 KB packet nested 1,800 deep after an
  undefined ``&nbsp;``: 10.8 s).

:func:`metadata_structure_problem` walks these structures with ``os.pread`` in
bounded steps and answers why a file is not handed to ExifTool. The walks
are our own, small, because the library readers do not fit: Pillow's
``GifImagePlugin`` reads (and concatenates) every comment before the first
frame on open, with no bound, and its ``TiffImagePlugin`` reads each
directory's values whole; neither stops at a count. The XMP packets found are
measured by :func:`loupe.ingest.xmpcheck.packet_shape_problem` (lxml's pull
parser, nothing expanded or fetched). Layouts: GIF89a specification (W3C
CompuServe, 1990) sections 17-27; TIFF 6.0 section 2 and BigTIFF (64-bit
offsets, 20-byte entries); ITU-T T.81 Annex B and Adobe's XMP specification
part 3, 1.1.3 (Extended XMP in JPEG).

Bounds (Loupe's; each far over any real file, see ``docs/security.md``):
:data:`MAX_GIF_EXTENSIONS` metadata extensions (comment, plain text,
application; the PNG and JPEG metadata bound), :data:`MAX_GIF_BLOCKS` blocks
of any kind (frames and their graphic controls included; PNG's chunk bound),
:data:`MAX_IFDS` TIFF directories, :data:`MAX_IFD_ENTRIES` entries in all.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

from .xmpcheck import MAX_BYTES as MAX_XMP_BYTES
from .xmpcheck import packet_shape_problem
from .jpegcheck import walk_segments

#: Most metadata extension blocks (comment 0xFE, plain text 0x01, application
#: 0xFF and unknown labels) a GIF may hold before its trailer: the bound a PNG
#: has for its text chunks and a JPEG for its APPn/COM segments. Real GIFs
#: hold a handful (a NETSCAPE loop block, an XMP block, a comment).
MAX_GIF_EXTENSIONS = 1_000
#: Most blocks of any kind (image descriptors and graphic control extensions
#: included: one each per frame) a GIF may hold: PNG's chunk bound. A long
#: animation holds a few thousand frames.
MAX_GIF_BLOCKS = 100_000
#: Most image file directories (IFDs) a TIFF may hold, in its chain and under
#: its SubIFD, Exif, GPS and Interoperability pointers together. A camera raw
#: or a pyramidal TIFF holds a few dozen; a multi-page scan one per page.
MAX_IFDS = 1_000
#: Most directory entries of all its IFDs together (a real IFD holds 10-60;
#: ExifTool took about 44 us of CPU an entry, 5.3 s for 120,000).
MAX_IFD_ENTRIES = 30_000

_Read = Callable[[int, int], bytes]

#: TIFF tags whose values are offsets of further IFDs ExifTool reads
#: (SubIFDs, ExifIFD, GPSInfo, InteropIFD).
_IFD_POINTERS = frozenset({330, 34665, 34853, 40965})
#: TIFF tag holding an XMP packet (XMLPacket, type BYTE or UNDEFINED).
_XMP_TAG = 700
#: Field types whose values are 4- or 8-byte offsets (LONG, IFD, LONG8, IFD8).
_OFFSET_TYPES = {4: 4, 13: 4, 16: 8, 18: 8}

XMP_APP1 = b"http://ns.adobe.com/xap/1.0/\x00"
EXTENDED_XMP_APP1 = b"http://ns.adobe.com/xmp/extension/\x00"
EXIF_APP1 = b"Exif\x00\x00"


def _bounded(why: str) -> str:
    return f"{why} (Loupe's bound, checked before ExifTool reads them)"


def metadata_structure_problem(fd: int) -> str | None:
    """Why the file open as ``fd`` (read with ``os.pread``; the offset is left
    alone) is not handed to ExifTool, or None. Looks at a GIF (its extension
    blocks), a TIFF (its IFDs and their entries, and its XMP packet) and a
    JPEG (its XMP and Extended XMP packets, and the TIFF structure of its Exif
    segment); any other file is not looked at. The answer is a phrase naming
    the bound ("a GIF of more than 1,000 metadata extension blocks (...)").
    Never raises for a malformed or shrinking file: a walk that runs out of
    bytes ends (the decoder names what is wrong)."""
    try:
        head = os.pread(fd, 4, 0)
        read: _Read = lambda off, n: os.pread(fd, n, off)   # noqa: E731
        if head[:3] == b"GIF":
            return _gif(read)
        if head in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
            why = _tiff(read)
            return f"a TIFF {why}" if why else None
        if head[:2] == b"\xff\xd8":
            return _jpeg(fd)
    except (OSError, ValueError, OverflowError, struct.error):   # an offset past 2**63 too
        return None
    return None


# -- GIF ----------------------------------------------------------------------

def _sub_blocks(read: _Read, pos: int, keep: bool) -> tuple[int, bytes | None]:
    """Skip (or, with ``keep``, collect up to :data:`MAX_XMP_BYTES` + 1 bytes
    of, length bytes included as ExifTool's XMP reading keeps them) the data
    sub-blocks from ``pos``; answers the offset after the terminator (-1 when
    the file ends first) and the bytes kept."""
    kept = bytearray() if keep else None
    while True:
        n = read(pos, 1)
        if not n:
            return -1, None
        if n[0] == 0:
            return pos + 1, bytes(kept) if kept is not None else None
        if kept is not None and len(kept) <= MAX_XMP_BYTES:
            kept += n + read(pos + 1, n[0])
        pos += 1 + n[0]


def _gif(read: _Read) -> str | None:
    """The GIF walk of ``GIF.pm``: header, logical screen, global colour
    table, then blocks to the first that is neither an image (0x2C) nor an
    extension (0x21)."""
    screen = read(6, 7)
    if len(screen) < 7:
        return None
    pos = 13 + (3 * (2 << (screen[4] & 7)) if screen[4] & 0x80 else 0)
    blocks = extensions = 0
    while True:
        intro = read(pos, 2)
        if len(intro) < 2 or intro[0] not in (0x21, 0x2C):
            return None
        blocks += 1
        if blocks > MAX_GIF_BLOCKS:
            return _bounded(f"a GIF of more than {MAX_GIF_BLOCKS:,} blocks")
        if intro[0] == 0x2C:                       # image: descriptor, colour table, LZW data
            desc = read(pos + 1, 9)
            if len(desc) < 9:
                return None
            pos += 10 + (3 * (2 << (desc[8] & 7)) if desc[8] & 0x80 else 0) + 1
            pos, _ = _sub_blocks(read, pos, False)
        else:
            label = intro[1]
            if label != 0xF9:                      # all but the graphic control extension
                extensions += 1
                if extensions > MAX_GIF_EXTENSIONS:
                    return _bounded(f"a GIF of more than {MAX_GIF_EXTENSIONS:,} metadata "
                                    f"extension blocks (comment, plain text, application)")
            first = read(pos + 2, 12)
            is_xmp = label == 0xFF and first == b"\x0bXMP DataXMP"
            pos, data = _sub_blocks(read, pos + 2 + (12 if is_xmp else 0), is_xmp)
            if data is not None:
                if len(data) > MAX_XMP_BYTES:
                    return _bounded(f"a GIF whose XMP packet is over {MAX_XMP_BYTES:,} bytes")
                if (why := packet_shape_problem(data)):
                    return _bounded(f"a GIF whose XMP packet: {why}")
        if pos < 0:
            return None


# -- TIFF ---------------------------------------------------------------------

def _tiff(read: _Read) -> str | None:
    """The IFDs of a classic or Big TIFF whose header is at offset 0 of
    ``read``: each directory's "next" link and its SubIFD, Exif, GPS and
    Interop pointers, followed breadth-first. A directory already visited (a
    loop) is not read again, as ExifTool does not; an offset past the end
    ends that branch. The phrase follows "a TIFF" ("whose IFDs ..."), or None."""
    head = read(0, 16)
    endian = "<" if head[:2] == b"II" else ">"
    big = head[2:4] in (b"+\x00", b"\x00+")
    if big:
        first = struct.unpack(endian + "Q", head[8:16])[0]
        count_fmt, count_size, entry_size, off_fmt, off_size = "Q", 8, 20, "Q", 8
    else:
        first = struct.unpack(endian + "I", head[4:8])[0]
        count_fmt, count_size, entry_size, off_fmt, off_size = "H", 2, 12, "I", 4
    todo, seen, entries = [first], set(), 0
    while todo:
        ifd = todo.pop()
        if ifd == 0 or ifd in seen:
            continue
        seen.add(ifd)
        if len(seen) > MAX_IFDS:
            return _bounded(f"of more than {MAX_IFDS:,} image file directories (IFDs)")
        raw = read(ifd, count_size)
        if len(raw) < count_size:
            continue
        n = struct.unpack(endian + count_fmt, raw)[0]
        entries += n
        if entries > MAX_IFD_ENTRIES:
            return _bounded(f"of more than {MAX_IFD_ENTRIES:,} IFD entries")
        table = read(ifd + count_size, n * entry_size + off_size)
        for i in range(min(n, len(table) // entry_size)):
            e = table[i * entry_size:(i + 1) * entry_size]
            tag, kind = struct.unpack(endian + "HH", e[:4])
            if big:
                count, value = struct.unpack(endian + "Q8s", e[4:20])
            else:
                count, value = struct.unpack(endian + "I4s", e[4:12])
            if tag in _IFD_POINTERS and kind in _OFFSET_TYPES:
                size = _OFFSET_TYPES[kind]
                data = value if count * size <= len(value) else read(
                    struct.unpack(endian + off_fmt, value)[0], min(count, MAX_IFDS + 1) * size)
                fmt = endian + ("I" if size == 4 else "Q")
                todo.extend(struct.unpack_from(fmt, data, j * size)[0]
                            for j in range(len(data) // size))
            elif tag == _XMP_TAG and kind in (1, 7):
                if count > MAX_XMP_BYTES:
                    return _bounded(f"whose XMP packet is over {MAX_XMP_BYTES:,} bytes")
                packet = value[:count] if count <= len(value) else read(
                    struct.unpack(endian + off_fmt, value)[0], count)
                if (why := packet_shape_problem(packet)):
                    return _bounded(f"whose XMP packet: {why}")
        tail = table[n * entry_size:n * entry_size + off_size]
        if len(tail) == off_size:
            todo.append(struct.unpack(endian + off_fmt, tail)[0])
    return None


# -- JPEG ---------------------------------------------------------------------

def _jpeg(fd: int) -> str | None:
    """The JPEG's APP1 segments (found by :mod:`loupe.ingest.jpegcheck`'s
    marker walk, which skips entropy-coded data): each XMP packet measured,
    Extended XMP reassembled per GUID in offset order and measured, and the
    Exif segment's TIFF structure walked."""
    extended: dict[bytes, list[tuple[int, bytes]]] = {}
    problem: list[str] = []

    def segment(marker: int, payload: Callable[[], bytes]) -> bool:
        if marker != 0xE1:
            return True
        data = payload()
        if data.startswith(XMP_APP1):
            if (why := packet_shape_problem(data[len(XMP_APP1):])):
                problem.append(_bounded(f"a JPEG whose XMP packet: {why}"))
        elif data.startswith(EXTENDED_XMP_APP1) and len(data) >= len(EXTENDED_XMP_APP1) + 40:
            at = len(EXTENDED_XMP_APP1)
            offset = struct.unpack(">I", data[at + 36:at + 40])[0]
            extended.setdefault(data[at:at + 32], []).append((offset, data[at + 40:]))
        elif data.startswith(EXIF_APP1):
            tiff = data[len(EXIF_APP1):]
            if tiff[:4] in (b"II*\x00", b"MM\x00*"):
                why = _tiff(lambda off, n: tiff[off:off + n])
                if why:
                    problem.append(f"a JPEG whose Exif segment holds a TIFF {why}")
        return not problem

    walk_segments(fd, segment)
    if problem:
        return problem[0]
    for parts in extended.values():
        packet = b"".join(chunk for _, chunk in sorted(parts, key=lambda p: p[0]))
        if (why := packet_shape_problem(packet)):
            return _bounded(f"a JPEG whose Extended XMP packet: {why}")
    return None
