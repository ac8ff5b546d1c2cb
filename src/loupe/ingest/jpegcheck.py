"""The scans of a JPEG, counted before anything decodes it.

A progressive JPEG is coded in scans, and libjpeg decodes every block again
for each one; nothing limits how many a file holds (libjpeg only warns
"bogus progression"). A hostile file that repeats a 95-byte
refinement scan 200 times in a 270 KB, 64 MP file costs 28.7 s of server CPU per
upload (each decode about 8.5 s, draft scaling included), linear in the
scan count. libjpeg-turbo answers the same attack with a scan limit
(``TJPARAM_SCANLIMIT``, ``djpeg -maxscans``; see its "Mitigating
denial-of-service attacks" documentation); Loupe counts the scans of the
first frame with a marker walk (ITU-T T.81, Annex B: markers, segment
lengths, and entropy-coded data in which 0xFF is followed by 0x00 or a
restart marker) and refuses more than :data:`MAX_SCANS` before decoding.
libjpeg's standard progressive scripts use 10 scans for colour and 6 for
greyscale; a baseline JPEG has one per component at most.

The same walk counts the metadata segments (APP0-APP15 and COM): ExifTool
reads each one, and nothing else limits their number. With
500,000 empty COM segments (4 bytes each) in a 2 MB, 64x48 JPEG
ExifTool spent 20-43 s and 346 MB on it, and 5 million (20 MB) ran past 45 s
(the per-file upload bound of 200 MiB allows about 50 million). Loupe
refuses more than :data:`MAX_METADATA_SEGMENTS`, the bound it already
applies to a PNG's text and metadata chunks (:mod:`loupe.ingest.pngcheck`), before ExifTool reads the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable

#: Most scans a JPEG's first frame may have (Loupe's bound; see above).
MAX_SCANS = 100

#: Most scans x megapixels (width x height / 10^6 of the frame) a JPEG may
#: have: decoding costs about the same per scan and pixel
#: (100 scans, the bound above, of a 100 MP frame cost 19 s of server CPU per
#: upload, and 6 s per search by picture). 2,000 is twice what libjpeg's
#: standard progressive colour script (10 scans) has at the largest upload
#: (100 MP): a 100 MP file may have 20 scans, a 20 MP one 100.
MAX_SCAN_MEGAPIXELS = 2_000

#: Most metadata segments (APPn markers 0xE0-0xEF and COM, 0xFE) a JPEG may
#: hold: the bound of :data:`loupe.ingest.pngcheck.MAX_METADATA_CHUNKS`
#: (1,000), for the same reason (see above). Real files
#: have a handful: JFIF/Exif, XMP, ICC (split in 64 KB segments), Photoshop
#: IRB, MPF; the largest Extended XMP ExifTool writes (about 16 MB in 64 KB
#: segments) is about 260 of them.
MAX_METADATA_SEGMENTS = 1_000

#: Bytes read from the file at a time by the walk (1 MiB).
BLOCK = 1 << 20

_SOI, _EOI, _SOS, _TEM, _COM = 0xD8, 0xD9, 0xDA, 0x01, 0xFE
#: Start-of-frame markers (T.81 Table B.1: SOF0-SOF15 but DHT, JPG and DAC)
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


class _Reader:
    """The bytes of an open file, read with ``os.pread`` one :data:`BLOCK` at a
    time (never a memory map: a file truncated while a map of it is read
    raises SIGBUS and kills the process). A file that
    ends early (truncated during the walk) simply ends: ``byte`` answers
    None and ``find`` -1 past the bytes that could be read."""

    def __init__(self, fd: int):
        self._fd = fd
        self._start = 0
        self._block = b""

    def _load(self, pos: int) -> bool:
        if not (self._start <= pos < self._start + len(self._block)):
            self._start = pos
            self._block = os.pread(self._fd, BLOCK, pos)
        return pos < self._start + len(self._block)

    def byte(self, pos: int) -> int | None:
        """The byte at ``pos``, or None past the end."""
        if not self._load(pos):
            return None
        return self._block[pos - self._start]

    def find(self, needle: int, pos: int) -> int:
        """The first offset >= ``pos`` holding byte ``needle``, or -1."""
        while self._load(pos):
            i = self._block.find(bytes((needle,)), pos - self._start)
            if i >= 0:
                return self._start + i
            pos = self._start + len(self._block)
        return -1


def scan_count_problem(fd: int) -> str | None:
    """Why the JPEG open as ``fd`` (read with ``os.pread`` in blocks of
    :data:`BLOCK` bytes; any other file is not looked at) is refused before
    decoding and before ExifTool reads it, or None: more than
    :data:`MAX_SCANS` scans, more than :data:`MAX_SCAN_MEGAPIXELS` scans x
    megapixels (the frame's pixels from its SOF segment), or more than
    :data:`MAX_METADATA_SEGMENTS` metadata segments. Never raises for a malformed or shrinking file (the
    decoder names what is wrong)."""
    try:
        size = os.fstat(fd).st_size
        if size < 4 or os.pread(fd, 2, 0) != b"\xff\xd8":
            return None
        return _walk(_Reader(fd))
    except (OSError, ValueError):
        return None


def walk_segments(fd: int, segment: Callable[[int, Callable[[], bytes]], bool]) -> None:
    """Call ``segment(marker, payload)`` for each marker segment of the JPEG
    open as ``fd`` (any other file is not looked at), in file order, scans'
    entropy-coded data skipped; ``payload()`` reads the segment's bytes after
    its length field (at most 65,533). The walk stops when ``segment``
    answers False, and at the bounds of :func:`scan_count_problem` (which the
    ingest checks first). Never raises for a malformed or shrinking file."""
    try:
        if os.fstat(fd).st_size >= 4 and os.pread(fd, 2, 0) == b"\xff\xd8":
            _walk(_Reader(fd), segment, fd)
    except (OSError, ValueError):
        return


def _walk(data: _Reader, segment=None, fd: int | None = None) -> str | None:
    """The scan- and segment-count walk of ITU-T T.81 Annex B over ``data``
    from offset 2 (after SOI); stops at EOI, at the end of the bytes, or past
    a bound (:data:`MAX_SCANS`, :data:`MAX_SCAN_MEGAPIXELS`,
    :data:`MAX_METADATA_SEGMENTS`), or when ``segment`` (see
    :func:`walk_segments`; ``fd`` is read for its payloads) answers False."""
    pos, scans, segments, pixels = 2, 0, 0, 0
    while True:
        b = data.byte(pos)
        if b is None:
            return None
        if b != 0xFF:                            # not at a marker: find the next one
            pos = data.find(0xFF, pos)
            if pos < 0:
                return None
            continue
        marker = data.byte(pos + 1)
        if marker is None or marker == _EOI:
            return None
        if marker == 0xFF:                       # fill byte
            pos += 1
            continue
        if marker in (_SOI, _TEM) or 0xD0 <= marker <= 0xD7 or marker == 0x00:
            pos += 2
            continue
        hi, lo = data.byte(pos + 2), data.byte(pos + 3)
        if hi is None or lo is None:
            return None
        if marker in _SOF:      # length(2) precision(1) height(2) width(2)
            dims = [data.byte(pos + i) for i in (5, 6, 7, 8)]
            if None in dims:
                return None
            pixels = max(pixels, (dims[0] << 8 | dims[1]) * (dims[2] << 8 | dims[3]))
        if segment is not None:
            at, length = pos + 4, max((hi << 8 | lo) - 2, 0)
            if not segment(marker, lambda: os.pread(fd, length, at)):
                return None
        pos += 2 + (hi << 8 | lo)
        if 0xE0 <= marker <= 0xEF or marker == _COM:
            segments += 1
            if segments > MAX_METADATA_SEGMENTS:
                return (f"a JPEG of more than {MAX_METADATA_SEGMENTS:,} metadata segments "
                        f"(APPn and COM; Loupe's bound, checked before ExifTool reads them)")
        if marker != _SOS:
            continue
        scans += 1
        if scans > MAX_SCANS:
            return (f"a JPEG of more than {MAX_SCANS} scans (Loupe's bound, checked before "
                    f"decoding: each scan decodes the whole picture again)")
        if scans * pixels > MAX_SCAN_MEGAPIXELS * 1_000_000:
            return (f"a JPEG of {pixels:,} pixels with more than "
                    f"{MAX_SCAN_MEGAPIXELS * 1_000_000 // pixels} scans (at most "
                    f"{MAX_SCAN_MEGAPIXELS:,} scans x megapixels, Loupe's bound, checked before "
                    f"decoding: each scan decodes the whole picture again)")
        # the scan's entropy-coded data runs to the next marker: a 0xFF not
        # followed by 0x00 (a stuffed byte), a restart marker or fill
        while True:
            pos = data.find(0xFF, pos)
            if pos < 0:
                return None
            nxt = data.byte(pos + 1)
            if nxt is None:
                return None
            if nxt == 0x00 or 0xD0 <= nxt <= 0xD7:
                pos += 2
            elif nxt == 0xFF:
                pos += 1
            else:
                break
