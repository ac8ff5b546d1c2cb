"""The shape of an XMP sidecar, measured before ExifTool reads it.

ExifTool's XMP parser is recursive and its cost grows faster than the
nesting depth: a 153 KB sidecar nested 3,000
elements deep kept one ExifTool busy 61–85 s, after which Python's JSON
decoder hit its recursion limit on the answer and the sidecar's metadata was
silently lost. Loupe now walks a sidecar's XML with lxml's incremental
parser (libxml2: no entity expansion, no network, no DTD loading) through the
descriptor it already holds, counting the depth and the elements, and stops
at the first one past a bound: such a sidecar is not handed to ExifTool, the
image is ingested from its own metadata, and the reason (naming the sidecar
and the bound) is recorded as a warning (``loupe failures``).

Bounds: real XMP is shallow — an MWG face region is nine levels deep
(``x:xmpmeta/rdf:RDF/rdf:Description/mwg-rs:Regions/mwg-rs:RegionList/
rdf:Bag/rdf:li/rdf:Description/mwg-rs:Area``), Lightroom's and Photoshop's
deepest structures about a dozen — so 64 levels leaves room for any tool;
100,000 elements is far over the largest sidecar of the demo library
(hundreds) and takes ExifTool about a second; 16 MiB on disk bounds the rest.
"""

from __future__ import annotations

import os

from lxml import etree

#: Deepest element nesting a sidecar may have (the root element is level 1).
MAX_DEPTH = 64
#: Most elements a sidecar may hold.
MAX_ELEMENTS = 100_000
#: Largest sidecar read, in bytes.
MAX_BYTES = 16 * 1024 * 1024
_CHUNK = 64 * 1024


def _walk(chunks) -> str | None:
    """Feed ``chunks`` (bytes) to a pull parser that expands nothing and
    fetches nothing; ``"depth"`` past :data:`MAX_DEPTH`, ``"elements"`` past
    :data:`MAX_ELEMENTS`, else None (malformed XML and read errors included:
    ExifTool's own reading reports those). Stops at the first bound passed."""
    # resolve_entities/no_network/load_dtd: libxml2 expands nothing, fetches nothing
    # recover: a syntax error (an undefined "&nbsp;") does not end the
    # measurement; the deep part after it is still counted
    # (one entity before a 3,000-deep part switched the check off, and
    # ExifTool's lenient parser then spent over 45 s on 806 bytes)
    parser = etree.XMLPullParser(events=("start", "end"), resolve_entities=False,
                                 no_network=True, load_dtd=False, huge_tree=False,
                                 recover=True)
    depth = elements = 0
    try:
        for chunk in chunks:
            parser.feed(chunk)
            for event, _ in parser.read_events():
                if event == "end":
                    depth -= 1
                    continue
                depth += 1
                elements += 1
                if depth > MAX_DEPTH:
                    return "depth"
                if elements > MAX_ELEMENTS:
                    return "elements"
    except etree.XMLSyntaxError as exc:
        # libxml2's own depth guard (256 levels without huge_tree) ends here too
        if "depth" in str(exc).lower() or "nest" in str(exc).lower():
            return "depth"
        return None
    except (OSError, ValueError):
        return None
    return None


def _pread_chunks(fd: int, size: int):
    pos = 0
    while pos < size:
        chunk = os.pread(fd, _CHUNK, pos)
        if not chunk:
            return
        pos += len(chunk)
        yield chunk


def sidecar_shape_problem(fd: int, name: str) -> str | None:
    """Why the XMP sidecar open as ``fd`` (read with ``os.pread``; the offset
    is left alone) is not handed to ExifTool, or None when its shape is within
    the bounds. ``name`` is how the reason names the file.

    Malformed XML is not judged here (ExifTool's own reading reports it,
    :func:`loupe.ingest.metadata.sidecar_problem`); only depth, element
    count and size, each checked before the work that would exceed it.
    Never raises for a hostile file."""
    try:
        size = os.fstat(fd).st_size
    except OSError:
        return None
    if size > MAX_BYTES:
        return (f"XMP sidecar {name} ignored: {size:,} bytes (at most {MAX_BYTES:,}); "
                f"the image is indexed from its own metadata")
    problem = _walk(_pread_chunks(fd, size))
    if problem == "depth":
        return (f"XMP sidecar {name} ignored: its elements nest more than "
                f"{MAX_DEPTH} levels deep (the bound, checked before ExifTool "
                f"reads it); the image is indexed from its own metadata")
    if problem == "elements":
        return (f"XMP sidecar {name} ignored: more than {MAX_ELEMENTS:,} XML "
                f"elements (the bound, checked before ExifTool reads it); the "
                f"image is indexed from its own metadata")
    return None


def packet_shape_problem(packet: bytes) -> str | None:
    """Why an XMP packet embedded in an image (``packet``: its bytes, already
    bounded by the caller) is not handed to ExifTool, or None: the same
    depth (:data:`MAX_DEPTH`) and element (:data:`MAX_ELEMENTS`) bounds as a
    sidecar's, as a phrase ("its elements nest more than 64 levels deep").
    Measured: a 3,000-deep packet in a PNG's iTXt cost ExifTool over
    50 s per file. Malformed XML is not judged here. Never raises."""
    problem = _walk(packet[pos:pos + _CHUNK] for pos in range(0, len(packet), _CHUNK))
    if problem == "depth":
        return f"its elements nest more than {MAX_DEPTH} levels deep"
    if problem == "elements":
        return f"it holds more than {MAX_ELEMENTS:,} XML elements"
    return None
