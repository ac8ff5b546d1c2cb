"""The ingest pipeline: walk → read metadata → hash, decode, thumbnail → store (S6, N3, P2).

Guarantees:

* Each file's change (new asset, new path of a known asset, changed or removed
  file) is written in **one transaction** together with the asset's rebuilt
  search documents, so an asset is searchable exactly when it is visible, and
  a killed ingest leaves only whole assets behind. Re-running finishes the job.
* One bad file never stops the run: it is recorded in ``ingest_failure`` with
  its path, a kind and a reason, counted in the summary, and the run goes on.
* Re-running is incremental: a file whose size and modification time (and
  those of its sidecar) are unchanged is skipped without being read.
* An asset keeps its id, and what people added to it, when its file is edited
  at the same path or moved (S7; the rule: :meth:`Ingester._resolve_asset`).
* One ingest of a folder at a time per tenant (an advisory lock); a second one
  waits for the first.
* Metadata fields are cut to the bounds of :mod:`loupe.ingest.metadata_bounds` before
  they are stored, each cut recorded as a ``too_long`` warning.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ..document.compile import rebuild_documents
from . import perceptual
from ..pixels import analyse as machine_analyse
from ..pixels import enrich as machine_enrich
from ..pixels import store as machine_store
from . import queries as q
from .errors import BadFile
from .jpegcheck import scan_count_problem
from .pngcheck import compressed_chunk_problem
from .structcheck import metadata_structure_problem
from .xmpcheck import sidecar_shape_problem
from .image import (DEFAULT_MAX_PIXELS, MAX_FILE_BYTES, ImageFacts, decode_image, hashed_copy,
                    unrecognised)
from .exiftool_reader import ExifToolReader, check_budget, check_readable, display_path
from .metadata import document_ids, merge, normalize, sidecar_problem
from .metadata_bounds import HOLD_NOTE, bound_fields, bound_raw, distinct_words
from .walk import MAX_FOLDER_DEPTH, FoundFile, walk

#: Files read by ExifTool in one batch call.
BATCH_SIZE = 48
#: Largest decompression-bomb ceiling an ingest accepts (pixels): a billion
#: pixels decode to 3 GB of RGB.
MAX_PIXELS_LIMIT = 1_000_000_000


def check_max_pixels(max_pixels: Any) -> None:
    """``max_pixels`` (None: the default) checked before an ingest starts.

    Raises:
        ValueError: not a whole number within 1 and :data:`MAX_PIXELS_LIMIT`.
    """
    if max_pixels is not None and (isinstance(max_pixels, bool)
                                   or not isinstance(max_pixels, int)
                                   or not 1 <= max_pixels <= MAX_PIXELS_LIMIT):
        raise ValueError(f"max_pixels = {max_pixels!r} is out of range: it must be within "
                         f"1 and {MAX_PIXELS_LIMIT:,}")


def ingest(conn: psycopg.Connection, tenant_id: int, home: Path, path: str | Path, *,
           progress: ProgressFn | None = None, max_pixels: int | None = None,
           on_wait: Callable[[str], None] | None = None) -> IngestSummary:
    """What :meth:`loupe.Library.ingest` does: every image under ``path``
    ingested by an :class:`Ingester` (:meth:`Ingester.ingest`; while another
    ingest of the same folder runs, it waits for it, telling ``on_wait``).
    ``max_pixels``: the decompression-bomb ceiling (width x height), default
    150,000,000, at most :data:`MAX_PIXELS_LIMIT`, checked before any work.

    Raises:
        NotADirectoryError: ``path`` is not a folder.
        ValueError: ``max_pixels`` out of its range (:func:`check_max_pixels`).
    """
    check_max_pixels(max_pixels)
    kwargs = {"max_pixels": max_pixels} if max_pixels else {}
    return Ingester(conn, tenant_id, home, **kwargs).ingest(path, progress=progress,
                                                            on_wait=on_wait)


@dataclass
class Failure:
    """A file that could not be ingested: path, kind (see ``BadFile.KINDS``) and reason."""

    path: str
    kind: str
    reason: str


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



#: What people added that moves with a file to another asset (:meth:`Ingester._inherit`).
ALL_ADDITIONS = (q.INHERIT_GRANTS, q.INHERIT_KEYWORDS, q.INHERIT_MEMBERSHIPS, q.INHERIT_DATES)

@dataclass
class IngestSummary:
    """Counts of one ingest run. ``seconds`` is wall time; every count is of files
    except ``new_assets`` and ``removed_assets``. ``updated``: known files whose
    bytes or metadata changed (their asset kept, see :class:`Ingester`);
    ``moved``: files found at a new path that continue an asset whose old path
    is gone (same bytes, or the same XMP DocumentID)."""

    run_id: int
    root: str
    files_seen: int = 0
    new_assets: int = 0
    duplicates: int = 0
    updated: int = 0
    moved: int = 0
    unchanged: int = 0
    removed_files: int = 0
    removed_assets: int = 0
    failures: list[Failure] = field(default_factory=list)
    warnings: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    #: with ``never_join``: files read and checked like any other whose bytes
    #: already were an asset, so they were not stored (paths)
    left_known: list[str] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.failures)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "root": self.root, "files_seen": self.files_seen,
            "new_assets": self.new_assets, "duplicates": self.duplicates,
            "updated": self.updated, "moved": self.moved, "unchanged": self.unchanged,
            "removed_files": self.removed_files, "removed_assets": self.removed_assets,
            "failed": self.failed,
            "failures": [f.__dict__ for f in self.failures],
            "warnings": [w.__dict__ for w in self.warnings],
            "seconds": round(self.seconds, 3),
        }


@dataclass
class _Prepared:
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


ProgressFn = Callable[[int, int], None]


class Ingester:
    """Ingest folders into one tenant's library.

    Args:
        conn: an autocommit connection (each asset gets its own transaction).
        tenant_id: the tenant every row is written for.
        home: the library home; thumbnails go to ``home/thumbnails``.
        max_pixels: decompression-bomb ceiling, width x height.
        workers: threads decoding images in parallel (Pillow releases the GIL).
        match_document_ids: recognise a moved-and-edited file by its XMP
            DocumentID / OriginalDocumentID (only when the new file's folder
            grants no one who could not read the old file). Off for uploads:
            an uploader names its file's DocumentID, so an upload never
            continues another file's asset.
        max_words: refuse (kind ``too_many_words``) a file whose name and
            metadata hold more distinct words than this
            (:func:`loupe.ingest.metadata_bounds.distinct_words`), before anything
            of it is stored; None (the default): no bound. Uploads set it
            (``WebLimits.upload_max_words``): every word is a term of the
            index in each library language, about 1.5 KB of database each,
            which no byte quota of the upload folder saw.
        never_join: a file whose bytes already are an asset is read and
            checked like a new one (metadata, the word bound, pixels) and then
            not stored: listed in ``IngestSummary.left_known``, for the
            caller to remove. A member's upload sets it, so a known file
            meets exactly the refusals a new one would and never attaches to
            an asset of others (F3: the word bound ran only for
            new bytes, and a 400-word sidecar told known bytes from new).
    """

    def __init__(self, conn: psycopg.Connection, tenant_id: int, home: Path, *,
                 max_pixels: int = DEFAULT_MAX_PIXELS, workers: int | None = None,
                 exiftool: ExifToolReader | None = None, match_document_ids: bool = True,
                 max_words: int | None = None, never_join: bool = False):
        self.conn = conn
        self.max_words = max_words
        self.never_join = never_join
        self.match_document_ids = match_document_ids
        self.tenant_id = tenant_id
        self.home = Path(home)
        self.max_pixels = max_pixels
        self.workers = workers or min(4, os.cpu_count() or 1)
        self._exiftool = exiftool
        row = conn.execute(q.TENANT_LANGUAGES, {"tenant_id": tenant_id}).fetchone()
        if row is None:
            raise ValueError(f"no tenant with id {tenant_id}")
        self.languages: list[str] = list(row[0])
        self._collections: dict[tuple[int, str], int] = {}
        #: machine words: OCR on or off for this library, its budget
        self.machine_opts = machine_enrich.settings(conn, tenant_id)
        # move detection of the current run (see _predecessor)
        self._gone_by_asset: dict[int, list[str]] = {}
        self._missing_docs: list[tuple[str, int, str | None, str | None]] | None = None
        self._source_id: int | None = None
        self._gone_set: set[str] = set()
        self._found_paths: set[str] = set()
        self._claimed: set[str] = set()

    # -- public ---------------------------------------------------------------

    def ingest(self, root: str | Path, progress: ProgressFn | None = None,
               on_wait: Callable[[str], None] | None = None) -> IngestSummary:
        """Ingest every image under ``root``; return the run's summary.

        One ingest of a folder runs at a time per tenant: another one started
        meanwhile waits for it (calling ``on_wait`` with a sentence saying so),
        then skips what the first one stored.

        Raises:
            NotADirectoryError: ``root`` is not a folder.
        """
        root_path = Path(root).expanduser().resolve()
        if not root_path.is_dir():
            raise NotADirectoryError(f"not a folder: {root_path}")
        key = {"tenant_id": self.tenant_id, "root": str(root_path)}
        if not self.conn.execute(q.TRY_LOCK_INGEST, key).fetchone()[0]:
            if on_wait:
                on_wait(f"waiting for another ingest of {root_path} to finish")
            self.conn.execute(q.LOCK_INGEST, key)
        try:
            return self._ingest(root_path, progress)
        finally:
            if not self.conn.closed and not self.conn.broken:
                self.conn.execute(q.UNLOCK_INGEST, key)

    def _ingest(self, root_path: Path, progress: ProgressFn | None) -> IngestSummary:
        started = time.monotonic()
        source_id = self.conn.execute(
            q.UPSERT_SOURCE, {"tenant_id": self.tenant_id, "root": str(root_path)}).fetchone()[0]
        run_id = self.conn.execute(
            q.START_RUN, {"tenant_id": self.tenant_id, "source_id": source_id}).fetchone()[0]
        summary = IngestSummary(run_id=run_id, root=str(root_path))
        self._collections.clear()

        too_deep: list[str] = []
        found = walk(root_path, exclude=[self.home], skipped=too_deep)
        for folder in too_deep:     # reported, the rest goes on
            shown = display_path(folder)
            reason = (f"folder not walked: more than {MAX_FOLDER_DEPTH} levels below "
                      f"{display_path(str(root_path))} (Loupe's bound on folder depth); "
                      f"its files are not ingested")
            summary.warnings.append(Failure(shown, "walk", reason))
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": run_id, "tenant_id": self.tenant_id, "path": shown,
                "kind": "walk", "reason": reason, "severity": "warning"})
        summary.files_seen = len(found)
        known = {r[0]: r for r in self.conn.execute(
            q.KNOWN_FILES, {"tenant_id": self.tenant_id, "source_id": source_id})}
        todo: list[FoundFile] = []
        for f in found:
            k = known.get(f.path)
            if k is not None and (k[2], k[3], k[4], k[5], k[6]) == (
                    f.size, f.mtime_ns, f.sidecar_path, f.sidecar_size, f.sidecar_mtime_ns):
                summary.unchanged += 1
            else:
                todo.append(f)
        found_paths = {f.path for f in found}
        gone = sorted(set(known) - found_paths)
        self._find_missing(source_id, known, gone, found_paths)
        total = len(todo) + len(gone)
        done = 0
        if progress:
            progress(0, total)

        own_reader = self._exiftool is None
        reader = self._exiftool or ExifToolReader()
        try:
            reader.start()
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                for start in range(0, len(todo), BATCH_SIZE):
                    batch = todo[start:start + BATCH_SIZE]
                    prepared = self._prepare_batch(batch, reader, pool)
                    for f, item in zip(batch, prepared):
                        if isinstance(item, BadFile):
                            self._fail(summary, item, known.get(f.path))
                        else:
                            self._store(source_id, item, known.get(f.path), summary)
                        done += 1
                        if progress:
                            progress(done, total)
        finally:
            if own_reader:
                reader.close()

        for path in gone:
            if path in self._claimed:  # continued by a moved file
                done += 1
                continue
            self._remove_file(known[path][1], path, summary)
            done += 1
            if progress:
                progress(done, total)
        self.conn.execute(q.PRUNE_COLLECTIONS, {"tenant_id": self.tenant_id, "source_id": source_id})
        summary.seconds = time.monotonic() - started
        self.conn.execute(q.FINISH_RUN, {"run_id": run_id, "summary": Jsonb(summary.as_dict())})
        return summary

    # -- stages ---------------------------------------------------------------

    def _prepare_batch(self, batch: list[FoundFile], reader: ExifToolReader,
                       pool: ThreadPoolExecutor) -> list[_Prepared | BadFile]:
        """Open each file (and sidecar) once, without following a link; hand
        ExifTool those descriptors (``/proc/PID/fd/N``), then hash, decode and
        hash the pixels from the same descriptor: every read sees one file,
        whatever its path names meanwhile."""
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
            return list(pool.map(lambda f: bombs.get(f.path) or self._prepare(
                f, raw_by_path, fds.get(f.path)), batch))
        finally:
            for fd in fds.values():
                os.close(fd)

    def _prepare(self, f: FoundFile, raw_by_path: dict[str, dict[str, Any]],
                 fd: int | None = None) -> _Prepared | BadFile:
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
            thumb = self._thumbnail_path(sha)
            # decoded once: the thumbnail, the hashes and the machine words
            # read these pixels (a JPEG is decoded again only at another scale)
            decoded = decode_image(f.path, thumb, max_pixels=self.max_pixels, fileobj=copy)
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
            if self.max_words is not None:   # the index an upload adds is bounded too
                words = distinct_words(metadata, f.rel_path)
                if words > self.max_words:
                    return BadFile(f.path, "too_many_words",
                                   f"{words:,} distinct words in its name and metadata, over "
                                   f"the limit of {self.max_words:,} per uploaded image (each "
                                   f"word is indexed in every library language): shorten its "
                                   f"title, description or keywords")
            # what is stored of ExifTool's answer is bounded too
            for key, label in (("file", f.path), ("sidecar", f.sidecar_path)):
                if key in raw_all:
                    note = raw_all[key].get(HOLD_NOTE)   # cut as read (bounded memory)
                    raw_all[key], cut = bound_raw(raw_all[key], str(label))
                    truncated = [*truncated, *([f"{label}: {note}"] if note else []), *cut]
            hashes = perceptual.hash_file(f.path, copy, decoded)
            machine = machine_enrich.facts_for(f.path, self.machine_opts, copy, decoded)
            if _same_regular_file(f) != before or _identity(os.fstat(fd)) != before:
                return BadFile(f.path, "not_regular", "the file changed into something else "
                                                      "during the ingest: not stored")
            return _Prepared(f, sha, facts, metadata, raw_all, warning, truncated, hashes,
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

    def _thumbnail_path(self, sha: bytes) -> Path:
        hexd = sha.hex()
        return self.home / "thumbnails" / hexd[:2] / f"{hexd}.webp"

    def _collection_id(self, source_id: int, folder: str) -> int | None:
        """Ensure the collection chain for ``folder`` exists (in the current transaction)."""
        if not folder:
            return None
        parent: int | None = None
        parts = folder.split("/")
        for i in range(len(parts)):
            path = "/".join(parts[: i + 1])
            cid = self._collections.get((source_id, path))
            if cid is None:
                cid = self.conn.execute(q.UPSERT_COLLECTION, {
                    "tenant_id": self.tenant_id, "source_id": source_id, "parent_id": parent,
                    "name": parts[i], "path": path}).fetchone()[0]
            parent = cid
        return parent

    def _store(self, source_id: int, p: _Prepared, known: tuple | None,
               summary: IngestSummary) -> None:
        f = p.found
        params = {"tenant_id": self.tenant_id}
        pred: tuple[str, int] | None = (f.path, known[1]) if known is not None else None
        moved = False
        if self.never_join and self.conn.execute(q.ASSET_BY_HASH, {
                **params, "sha": p.sha256}).fetchone() is not None:
            summary.left_known.append(f.path)
            return
        try:
            with self.conn.transaction():
                coll_id = self._collection_id(source_id, f.folder)
                row = self.conn.execute(q.LOCK_ASSET_BY_HASH, {**params, "sha": p.sha256}).fetchone()
                if pred is None:
                    pred = self._predecessor(p, row[0] if row else None, coll_id)
                    moved = pred is not None
                self._file_grants, self._withheld = [], None
                asset_id, outcome = self._resolve_asset(p, row[0] if row else None, pred, coll_id)
                if moved:
                    self.conn.execute(q.DELETE_FILE, {**params, "path": pred[0]})
                self.conn.execute(q.UPSERT_FILE, {
                    **params, "asset_id": asset_id, "source_id": source_id,
                    "collection_id": coll_id, "path": f.path, "rel_path": f.rel_path,
                    "size": f.size, "mtime_ns": f.mtime_ns, "sidecar_path": f.sidecar_path,
                    "sidecar_size": f.sidecar_size, "sidecar_mtime_ns": f.sidecar_mtime_ns,
                    "metadata": Jsonb(p.metadata), "raw": Jsonb(p.raw),
                })
                if self._file_grants:
                    self.conn.execute(q.FILE_GRANTS_FOR, {**params, "path": f.path,
                                                          "principals": self._file_grants})
                machine_store.store(self.conn, self.tenant_id, asset_id, p.machine)
                rebuild_documents(self.conn, self.tenant_id, asset_id, self.languages)
                perceptual.store(self.conn, self.tenant_id, asset_id, p.hashes)
                if pred is not None and pred[1] != asset_id:
                    self._release_asset(pred[1], summary)
        except psycopg.Error as exc:
            self._collections.clear()  # ids created in the rolled-back transaction are gone
            self._fail(summary, BadFile(f.path, "io", f"database rejected the file: {exc}"), None)
            return
        if coll_id is not None:
            self._remember_collections(source_id, f.folder)
        if p.warning:
            summary.warnings.append(Failure(f.path, "sidecar", p.warning))
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": summary.run_id, "tenant_id": self.tenant_id, "path": f.path,
                "kind": "sidecar", "reason": p.warning, "severity": "warning"})
        if isinstance(p.hashes, str):
            summary.warnings.append(Failure(f.path, "phash", p.hashes))
        if p.machine is not None and p.machine.error:
            summary.warnings.append(Failure(f.path, "machine", p.machine.error))
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": summary.run_id, "tenant_id": self.tenant_id, "path": f.path,
                "kind": "machine", "reason": p.machine.error, "severity": "warning"})
        for reason in p.truncated:
            summary.warnings.append(Failure(f.path, "too_long", reason))
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": summary.run_id, "tenant_id": self.tenant_id, "path": f.path,
                "kind": "too_long", "reason": reason, "severity": "warning"})
        if outcome == "merged":
            joined = ("keywords joined; the later embargo and the earlier rights expiry "
                      f"kept; {self._withheld}" if self._withheld else
                      "grants, keywords and hand-made collections joined; the later "
                      "embargo and the earlier rights expiry kept")
            reason = f"its bytes are now those of asset {asset_id}: merged into it ({joined})"
            summary.warnings.append(Failure(f.path, "merged", reason))
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": summary.run_id, "tenant_id": self.tenant_id, "path": f.path,
                "kind": "merged", "reason": reason, "severity": "warning"})
        elif self._withheld:
            summary.warnings.append(Failure(f.path, "not_joined", self._withheld))
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": summary.run_id, "tenant_id": self.tenant_id, "path": f.path,
                "kind": "not_joined", "reason": self._withheld, "severity": "warning"})
        if moved:
            assert pred is not None
            self._claimed.add(pred[0])
            summary.moved += 1
        elif outcome == "new":
            summary.new_assets += 1
        elif outcome == "duplicate":
            summary.duplicates += 1
        else:
            summary.updated += 1

    # -- asset identity (S7) -----------------------------------------------

    def _find_missing(self, source_id: int, known: dict[str, tuple], gone: list[str],
                      found_paths: set[str]) -> None:
        """Prepare, for this run, the files a new path may continue: this
        source's files not found by the walk (by asset); the tenant's files with
        an XMP DocumentID whose path is gone from disk are read on first need
        (:meth:`_missing_documents`)."""
        self._claimed = set()
        self._gone_by_asset = {}
        for path in gone:
            self._gone_by_asset.setdefault(known[path][1], []).append(path)
        self._source_id = source_id
        self._gone_set = set(gone)
        self._found_paths = found_paths
        self._missing_docs = None

    def _missing_documents(self) -> list[tuple[str, int, str | None, str | None]]:
        """``(path, asset_id, DocumentID, OriginalDocumentID)`` of the tenant's
        files that carry an XMP document id and are gone: not found by this
        run's walk of their source, or (other sources) not on disk. Read once
        per run, and only when a file with new bytes at a new path carries an
        id (a plain incremental run never reads the metadata of every file)."""
        if self._missing_docs is None:
            self._missing_docs = []
            for path, asset_id, src, doc_id, orig_id in self.conn.execute(
                    q.DOCUMENT_IDS, {"tenant_id": self.tenant_id}):
                if path in self._gone_set or (
                        src != self._source_id and path not in self._found_paths
                        and not os.path.exists(path)):
                    self._missing_docs.append((path, asset_id, doc_id, orig_id))
            self._missing_docs.sort()
        return self._missing_docs

    def _predecessor(self, p: _Prepared, same_bytes_asset: int | None,
                     collection_id: int | None = None) -> tuple[str, int] | None:
        """The known file (path, asset id) that a file at a new path continues, if any.

        * Same bytes as an asset one of whose files in this source is gone: a
          move (the asset's id is kept either way; this only reports it as such).
        * Other bytes: a missing file with the same XMP DocumentID, else the one
          missing file with the same OriginalDocumentID — only with
          ``match_document_ids``, and only a missing file that every reader
          of the new file's folder (``collection_id``) could read
          (``DOCUMENT_ID_CONTINUATION_ALLOWED``): a DocumentID is chosen by
          whoever writes the file, so it must not hand an asset's grants,
          keywords and collections to readers who had none of it.
        Every missing file is continued at most once per run.
        """
        if same_bytes_asset is not None:
            for path in self._gone_by_asset.get(same_bytes_asset, []):
                if path not in self._claimed:
                    return path, same_bytes_asset
            return None
        if not self.match_document_ids:
            return None
        doc_id, orig_id = document_ids(p.raw)
        if not doc_id and not orig_id:
            return None
        free = [m for m in self._missing_documents() if m[0] not in self._claimed]

        def allowed(path: str) -> bool:
            row = self.conn.execute(q.DOCUMENT_ID_CONTINUATION_ALLOWED, {
                "tenant_id": self.tenant_id, "collection_id": collection_id,
                "path": path}).fetchone()
            return bool(row and row[0])

        if doc_id:
            for path, asset_id, d, _ in free:
                if d == doc_id and allowed(path):
                    return path, asset_id
        if orig_id:
            same = [(path, asset_id) for path, asset_id, _, o in free if o == orig_id]
            if len(same) == 1 and allowed(same[0][0]):
                return same[0]
        return None

    def _resolve_asset(self, p: _Prepared, same_bytes_asset: int | None,
                       pred: tuple[str, int] | None,
                       collection_id: int | None = None) -> tuple[int, str]:
        """The asset a stored file belongs to, and the outcome: ``new``,
        ``duplicate``, ``updated`` or ``merged`` (inside the caller's transaction).

        The asset-identity rule (S7; docs/guide.md "What ingest reads"): a file
        continuing a known file (same path, or a move) keeps that file's asset.
        With new bytes the asset's content columns are updated in place and its
        pixel vectors dropped (recomputed by the next embed) — unless the asset
        has other files (identical copies elsewhere): then the copies keep it and
        the changed file gets a new asset that inherits what people added. When
        the new bytes are those of another existing asset, the file joins that
        asset, which inherits what people added to the old one (see
        :meth:`_inherit`); the old asset goes when it has no file left.

        What people added never lets anyone read more than before: on a merge, when a principal the old asset
        reaches as a whole (asset grant, hand-made collection) does not read
        every file of the other asset, grants and hand-made collections do
        not join it — those principals get a grant on the moved file alone
        (``self._file_grants``, written after the file row) and keywords
        still join; on a fork, when a reader of the file's folder or of its
        own grants did not read the old asset whole, keywords and hand-made
        collections do not follow the file (grants, which reach only what
        their principals read, still do). ``self._withheld`` says what was
        left behind, for the ingest warning.
        """
        params = {"tenant_id": self.tenant_id}
        if same_bytes_asset is not None:
            if pred is None:
                return same_bytes_asset, "duplicate"
            if pred[1] == same_bytes_asset:
                return same_bytes_asset, "updated"
            self.conn.execute(q.LOCK_ASSET, {**params, "asset_id": pred[1]})
            last = self.conn.execute(q.COUNT_OTHER_FILES, {
                "asset_id": pred[1], "path": pred[0]}).fetchone()[0] == 0
            widens, wide = self.conn.execute(q.MERGE_WIDENS, {
                "src": pred[1], "dst": same_bytes_asset}).fetchone()
            what = ALL_ADDITIONS
            if widens:
                self._file_grants = wide
                self._withheld = (f"the grants and hand-made collections of asset {pred[1]} "
                                  f"not joined, as they would reach files of asset "
                                  f"{same_bytes_asset} that {len(widens)} of their principals "
                                  f"may not read: those principals are granted this file alone")
                what = (q.INHERIT_KEYWORDS, q.INHERIT_DATES)
            self._inherit(pred[1], same_bytes_asset, last_file=last, what=what)
            return same_bytes_asset, "merged"
        content = {
            **params, "sha": p.sha256, "size": p.found.size,
            "media_type": p.facts.media_type, "width": p.facts.width,
            "height": p.facts.height, "orientation": p.facts.orientation,
            "thumbnail": self._thumbnail_path(p.sha256).relative_to(self.home).as_posix(),
        }
        if pred is not None:
            self.conn.execute(q.LOCK_ASSET, {**params, "asset_id": pred[1]})
            others = self.conn.execute(q.COUNT_OTHER_FILES, {
                "asset_id": pred[1], "path": pred[0]}).fetchone()[0]
            if others == 0:
                self.conn.execute(q.UPDATE_ASSET_CONTENT, {**content, "asset_id": pred[1]})
                self.conn.execute(q.DROP_PIXEL_VECTORS, {"asset_id": pred[1]})
                return pred[1], "updated"
        row = self.conn.execute(q.INSERT_ASSET, content).fetchone()
        if row is None:  # another ingest stored these bytes meanwhile: join that asset
            same = self.conn.execute(q.LOCK_ASSET_BY_HASH, {**params, "sha": p.sha256}).fetchone()
            return self._resolve_asset(p, same[0], pred)
        asset_id = row[0]
        if pred is not None:
            widens = self.conn.execute(q.FORK_WIDENS, {
                **params, "src": pred[1], "collection_id": collection_id,
                "path": p.found.path}).fetchone()[0]
            what = ALL_ADDITIONS
            if widens:
                self._withheld = (f"the keywords and hand-made collections of asset {pred[1]} "
                                  f"not carried to its new asset {asset_id}: readers of this "
                                  f"file may not read every file of asset {pred[1]}")
                what = (q.INHERIT_GRANTS, q.INHERIT_DATES)
            self._inherit(pred[1], asset_id, last_file=False, what=what)
            return asset_id, "updated"
        return asset_id, "new"

    def _inherit(self, src: int, dst: int, *, last_file: bool,
                 what: tuple[str, ...] = ALL_ADDITIONS) -> None:
        """Give asset ``dst`` what people added to asset ``src``: grants, bulk
        keywords, hand-made collection memberships (union), the later embargo
        and the earlier rights expiry (``what``: the statements, all by
        default; the restrictions are always among them). With ``last_file``
        (``src`` is about to go) its evaluation run hits and pool items move
        to ``dst`` as well."""
        ids = {"src": src, "dst": dst}
        for stmt in what:
            self.conn.execute(stmt, ids)
        if last_file:
            self.conn.execute(q.MOVE_EVAL_HITS, ids)
            self.conn.execute(q.MOVE_EVAL_ITEMS, ids)

    def _remember_collections(self, source_id: int, folder: str) -> None:
        for row in self.conn.execute(q.COLLECTION_CHAIN, {
                "tenant_id": self.tenant_id, "source_id": source_id, "path": folder}):
            self._collections[(source_id, row[1])] = row[0]

    def _release_asset(self, asset_id: int, summary: IngestSummary) -> None:
        """After a file left ``asset_id``: delete the asset if it has no file left,
        else rebuild its documents (inside the caller's transaction)."""
        left = self.conn.execute(q.COUNT_FILES, {"asset_id": asset_id}).fetchone()[0]
        if left == 0:
            self.conn.execute(q.DELETE_ASSET, {"asset_id": asset_id, "tenant_id": self.tenant_id})
            summary.removed_assets += 1
        else:
            rebuild_documents(self.conn, self.tenant_id, asset_id, self.languages)

    def _remove_file(self, asset_id: int, path: str, summary: IngestSummary) -> None:
        with self.conn.transaction():
            self.conn.execute(q.DELETE_FILE, {"tenant_id": self.tenant_id, "path": path})
            self._release_asset(asset_id, summary)
        summary.removed_files += 1

    def _fail(self, summary: IngestSummary, err: BadFile, known: tuple | None) -> None:
        """Record a failure. A known file that now fails (caught mid-write by an
        exporter, emptied, damaged) keeps its asset as last read — its id and what
        people added to it (S7) — until it reads again: its stored size and
        time still differ, so the next run retries it; deleting the file removes
        it as usual."""
        reason = err.reason
        if known is not None:
            reason += (f" (asset {known[1]} keeps its previous version until the file "
                       f"can be read again)")
        summary.failures.append(Failure(err.path, err.kind, reason))
        with self.conn.transaction():
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": summary.run_id, "tenant_id": self.tenant_id, "path": err.path,
                "kind": err.kind, "reason": reason, "severity": "error"})
