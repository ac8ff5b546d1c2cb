"""Reading one file for the ingest: checks before ExifTool, hashes, decode,
thumbnail, metadata and capture fields, bounded — everything short of the
database (:func:`prepare_batch`, :func:`prepare_file`).

Each file (and its sidecar) is opened once without following a link; every
read goes through that descriptor, and the file must be the same regular file
before and after the reads, so an entry swapped during an ingest is never
stored. A problem becomes a :class:`~loupe.ingest.errors.BadFile` returned in
the file's place, never an exception that stops the batch.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..pixels import analyse as machine_analyse
from ..pixels import enrich as machine_enrich
from . import perceptual
from .capture import capture_fields
from .errors import BadFile
from .exiftool_reader import ExifToolReader, check_budget, check_readable, display_path
from .image import MAX_FILE_BYTES, ImageFacts, decode_image, hashed_copy, unrecognised
from .jpegcheck import scan_count_problem
from .metadata import merge, normalize, sidecar_problem
from .metadata_bounds import HOLD_NOTE, bound_fields, bound_raw, distinct_words
from .pngcheck import compressed_chunk_problem
from .structcheck import metadata_structure_problem
from .walk import FoundFile
from .xmpcheck import sidecar_shape_problem


@dataclass
class Prepared:
    """One file read and checked, ready to store: its walk entry, SHA-256,
    decoded facts, bounded metadata and raw ExifTool answer, and what the
    store records as warnings."""

    found: FoundFile
    sha256: bytes
    facts: ImageFacts
    metadata: dict[str, Any]
    raw: dict[str, Any]
    warning: str | None = None
    #: fields cut to the bounds of loupe.ingest.metadata_bounds (warnings, kind too_long)
    truncated: list[str] = field(default_factory=list)
    hashes: perceptual.PerceptualHashes | str | None = None  # str: why there are none
    #: machine facts from the pixels; ``error`` set: a warning
    machine: machine_analyse.MachineFacts | None = None


def _same_regular_file(f: FoundFile) -> tuple[int, int, int, int] | None:
    """``(device, inode, size, mtime_ns)`` of ``f.path`` when it is still the
    regular file the walk found (not a link, FIFO or device; same size and
    modification time), else None. Checked before and after the reads of a
    file so that an entry swapped during an ingest is not stored."""
    try:
        st = os.lstat(f.path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size != f.size or st.st_mtime_ns != f.mtime_ns:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _identity(st: os.stat_result) -> tuple[int, int, int, int] | None:
    """``(device, inode, size, mtime_ns)`` of a regular file's stat, else None."""
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _open_no_follow(path: str) -> int | None:
    """A read-only descriptor of ``path`` opened without following a final
    symbolic link and without blocking on a FIFO (``O_NOFOLLOW |
    O_NONBLOCK``), or None when it cannot be opened so."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None


def thumbnail_path(home: Path, sha: bytes) -> Path:
    """Where the thumbnail of the bytes with SHA-256 ``sha`` lives under the
    library ``home``: ``thumbnails/<first two hex digits>/<hex>.webp``."""
    hexd = sha.hex()
    return home / "thumbnails" / hexd[:2] / f"{hexd}.webp"


def prepare_batch(batch: list[FoundFile], reader: ExifToolReader, pool: ThreadPoolExecutor,
                  prepare_one: Callable[[FoundFile, dict[str, dict[str, Any]], int | None],
                                        Prepared | BadFile]) -> list[Prepared | BadFile]:
    """Open each file (and sidecar) once, without following a link; hand
    ExifTool those descriptors (``/proc/PID/fd/N``), then hash, decode and
    hash the pixels from the same descriptor: every read sees one file,
    whatever its path names meanwhile.

    ``prepare_one(f, raw_by_path, fd)`` reads one file on ``pool``
    (:func:`prepare_file` with the ingest's settings). Returns one item per
    file of ``batch``, in its order: the file read, or why it was refused.
    The descriptors are closed when the batch ends."""
    fds: dict[str, int] = {}
    try:
        bombs: dict[str, BadFile] = {}
        refused: dict[str, dict[str, str]] = {}
        for f in batch:
            if not f.regular:
                continue
            for path in (f.path, f.sidecar_path):
                if path and (fd := _open_no_follow(path)) is not None:
                    fds[path] = fd
            # compressed PNG metadata bounded before ExifTool inflates it
            if f.path in fds and (why := compressed_chunk_problem(fds[f.path])):
                bombs[f.path] = BadFile(f.path, "metadata", why + ": not read")
                os.close(fds.pop(f.path))
            # a JPEG's scans counted before anything decodes it, and its
            # metadata segments before ExifTool reads them (both bound CPU per upload)
            if f.path in fds and (why := scan_count_problem(fds[f.path])):
                bombs[f.path] = BadFile(f.path, "too_large", why)
                os.close(fds.pop(f.path))
            # a GIF's extension blocks, a TIFF's IFDs and a JPEG's XMP
            # packets measured before ExifTool reads them
            if f.path in fds and (why := metadata_structure_problem(fds[f.path])):
                bombs[f.path] = BadFile(f.path, "metadata", why + ": not read")
                os.close(fds.pop(f.path))
            # not an image (a PDF named .jpg): refused before ExifTool
            # reads and inflates it
            if f.path in fds:
                fh = os.fdopen(os.dup(fds[f.path]), "rb")
                try:
                    refused_file = unrecognised(f.path, fh)
                finally:
                    fh.close()
                if refused_file is not None:
                    bombs[f.path] = refused_file
                    os.close(fds.pop(f.path))
            # a sidecar's XML depth and size bounded before ExifTool parses it
            if (f.sidecar_path in fds and
                    (why := sidecar_shape_problem(fds[f.sidecar_path], f.sidecar_path))):
                refused[f.sidecar_path] = {"Loupe:Refused": why}
                os.close(fds.pop(f.sidecar_path))
        paths = ([f.path for f in batch if f.path in fds]
                 + [f.sidecar_path for f in batch
                    if f.path in fds and f.sidecar_path in fds])
        raw_by_path = {**reader.read(paths, fds={p: fds[p] for p in paths if p in fds}),
                       **refused}
        return list(pool.map(lambda f: bombs.get(f.path) or prepare_one(
            f, raw_by_path, fds.get(f.path)), batch))
    finally:
        for fd in fds.values():
            os.close(fd)


def prepare_file(f: FoundFile, raw_by_path: dict[str, dict[str, Any]], fd: int | None, *,
                 home: Path, max_pixels: int, max_words: int | None,
                 machine_opts: dict) -> Prepared | BadFile:
    """Read one file found by the walk through its open descriptor ``fd``
    (None: it could not be opened): ``raw_by_path`` holds ExifTool's answers
    by path (the file's and its sidecar's). ``home``: the library home (the
    thumbnail is written under it); ``max_pixels``: the decompression-bomb
    ceiling (width x height); ``max_words``: the distinct-word bound (None:
    none); ``machine_opts``: the library's machine-word settings
    (:func:`loupe.pixels.enrich.settings`).

    Returns the file read, or a :class:`BadFile` saying why not (never raises
    for the file's own problems; an unexpected error is kind ``corrupt``)."""
    shown = display_path(f.path)
    if shown != f.path:  # bytes that are not UTF-8: PostgreSQL text cannot hold the path
        return BadFile(shown, "name", "the path is not valid UTF-8 (the bytes shown as "
                                      "\\xNN): rename the file or folder to ingest it")
    if not f.regular:
        return BadFile(f.path, "not_regular",
                       "a symbolic link, FIFO, socket or device, not a file: Loupe never "
                       "follows or opens one (put the image itself in the folder)")
    # the entry may have been swapped (for a link, a FIFO) since the walk:
    # the same regular file before and after every read, or nothing stored
    before = _same_regular_file(f)
    if before is None or fd is None or _identity(os.fstat(fd)) != before:
        return BadFile(f.path, "not_regular", "the file changed into something else (a "
                                              "link, FIFO or other file) during the ingest")
    fh = os.fdopen(fd, "rb", closefd=False)
    decoded = copy = None
    try:
        check_budget(f.path, raw_by_path.get(f.path, {}))   # nothing decoded past it
        # hashed as copied: every decode below reads the copy, so the
        # pixels are those of the bytes whose SHA-256 the asset records
        # (rewritten in place between two reads)
        if f.size > MAX_FILE_BYTES:
            raise BadFile(f.path, "too_large", f"{f.size:,} bytes, over the limit of "
                                               f"{MAX_FILE_BYTES:,} bytes a picture file may "
                                               f"have: not read")
        try:   # never more than the walk's size: a file growing meanwhile is refused
            got = hashed_copy(fh, max_bytes=f.size)
        except OSError as exc:
            raise BadFile(f.path, "io", f"cannot read or copy the file (a full temporary "
                                        f"directory?): {exc.strerror or exc}") from exc
        if got is None or got[2] != f.size:   # the size recorded is the size hashed
            if got is not None:
                got[0].close()
            raise BadFile(f.path, "not_regular", "the file changed size during the ingest: "
                                                 "not stored")
        copy, sha, _n = got
        thumb = thumbnail_path(home, sha)
        # decoded once: the thumbnail, the hashes and the machine words
        # read these pixels (a JPEG is decoded again only at another scale)
        decoded = decode_image(f.path, thumb, max_pixels=max_pixels, fileobj=copy)
        facts = decoded.facts
        raw = raw_by_path.get(f.path, {})
        check_readable(f.path, raw)
        embedded = normalize(raw)
        sidecar_md = None
        warning = None
        raw_all: dict[str, Any] = {"file": raw}
        if f.sidecar_path:
            sraw = raw_by_path.get(f.sidecar_path, {})
            warning = sidecar_problem(f.sidecar_path, sraw)
            if warning is None:
                sidecar_md = normalize(sraw)
                raw_all["sidecar"] = sraw
        metadata, truncated = bound_fields(merge(embedded, sidecar_md))
        # where, when (with its zone) and with what: bounded as read
        captured = capture_fields(raw, raw_all.get("sidecar"))
        metadata.update(captured)
        if "captured" in captured:   # the day filters' wall clock (docs/formats.md)
            metadata["date_taken"] = captured["captured"]["local"]
        if max_words is not None:   # the index an upload adds is bounded too
            words = distinct_words(metadata, f.rel_path)
            if words > max_words:
                return BadFile(f.path, "too_many_words",
                               f"{words:,} distinct words in its name and metadata, over "
                               f"the limit of {max_words:,} per uploaded image (each "
                               f"word is indexed in every library language): shorten its "
                               f"title, description or keywords")
        # what is stored of ExifTool's answer is bounded too
        for key, label in (("file", f.path), ("sidecar", f.sidecar_path)):
            if key in raw_all:
                note = raw_all[key].get(HOLD_NOTE)   # cut as read (bounded memory)
                raw_all[key], cut = bound_raw(raw_all[key], str(label))
                truncated = [*truncated, *([f"{label}: {note}"] if note else []), *cut]
        hashes = perceptual.hash_file(f.path, copy, decoded)
        machine = machine_enrich.facts_for(f.path, machine_opts, copy, decoded)
        if _same_regular_file(f) != before or _identity(os.fstat(fd)) != before:
            return BadFile(f.path, "not_regular", "the file changed into something else "
                                                  "during the ingest: not stored")
        return Prepared(f, sha, facts, metadata, raw_all, warning, truncated, hashes,
                         machine)
    except BadFile as exc:
        return exc
    except Exception as exc:  # an unexpected failure stays confined to its file
        return BadFile(f.path, "corrupt", f"unexpected error: {type(exc).__name__}: {exc}")
    finally:
        if decoded is not None:
            decoded.close()
        if copy is not None:
            copy.close()
        fh.close()   # the descriptor stays open (closefd=False) until the batch ends
