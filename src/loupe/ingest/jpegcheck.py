"""The scans of a JPEG, counted before anything decodes it.

A progressive JPEG is coded in scans, and libjpeg decodes every block again
for each one; nothing limits how many a file holds (libjpeg only warns
"bogus progression"). The fourth attack run (A4) repeated a 95-byte
refinement scan 200 times in a 270 KB, 64 MP file: 28.7 s of server CPU per
upload (each decode about 8.5 s, draft scaling included), linear in the
scan count. libjpeg-turbo answers the same attack with a scan limit
(``TJPARAM_SCANLIMIT``, ``djpeg -maxscans``; see its "Mitigating
denial-of-service attacks" documentation); Loupe counts the scans of the
first frame with a marker walk (ITU-T T.81, Annex B: markers, segment
lengths, and entropy-coded data in which 0xFF is followed by 0x00 or a
restart marker) and refuses more than :data:`MAX_SCANS` before decoding.
libjpeg's standard progressive scripts use 10 scans for colour and 6 for
greyscale; a baseline JPEG has one per component at most.
"""

from __future__ import annotations

import mmap
import os

#: Most scans a JPEG's first frame may have (Loupe's bound; see above).
MAX_SCANS = 100

_SOI, _EOI, _SOS, _TEM = 0xD8, 0xD9, 0xDA, 0x01


def scan_count_problem(fd: int) -> str | None:
    """Why the JPEG open as ``fd`` (read through a read-only memory map; any
    other file is not looked at) is refused before decoding, or None. Never
    raises for a malformed file (the decoder names what is wrong)."""
    try:
        size = os.fstat(fd).st_size
        if size < 4 or os.pread(fd, 2, 0) != b"\xff\xd8":
            return None
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mm:
            return _walk(mm, size)
    except (OSError, ValueError):
        return None


def _walk(mm: mmap.mmap, size: int) -> str | None:
    pos, scans = 2, 0
    while pos + 1 < size:
        if mm[pos] != 0xFF:                      # not at a marker: find the next one
            pos = mm.find(b"\xff", pos)
            if pos < 0:
                return None
            continue
        marker = mm[pos + 1]
        if marker == 0xFF:                       # fill byte
            pos += 1
            continue
        if marker == _EOI:
            return None
        if marker in (_SOI, _TEM) or 0xD0 <= marker <= 0xD7 or marker == 0x00:
            pos += 2
            continue
        if pos + 4 > size:
            return None
        length = int.from_bytes(mm[pos + 2:pos + 4], "big")
        pos += 2 + length
        if marker != _SOS:
            continue
        scans += 1
        if scans > MAX_SCANS:
            return (f"a JPEG of more than {MAX_SCANS} scans (Loupe's bound, checked before "
                    f"decoding: each scan decodes the whole picture again)")
        # the scan's entropy-coded data runs to the next marker: a 0xFF not
        # followed by 0x00 (a stuffed byte), a restart marker or fill
        while True:
            pos = mm.find(b"\xff", pos)
            if pos < 0 or pos + 1 >= size:
                return None
            nxt = mm[pos + 1]
            if nxt == 0x00 or 0xD0 <= nxt <= 0xD7:
                pos += 2
            elif nxt == 0xFF:
                pos += 1
            else:
                break
    return None
