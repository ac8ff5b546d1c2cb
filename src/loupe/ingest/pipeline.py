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
  at the same path or moved (S7; the rule: :mod:`loupe.ingest.identity`).
* One ingest of a folder at a time per tenant (an advisory lock); a second one
  waits for the first.
* Metadata fields are cut to the bounds of :mod:`loupe.ingest.metadata_bounds` before
  they are stored, each cut recorded as a ``too_long`` warning.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ..db.retry import RETRYABLE, retrying
from ..document.compile import lock_assets, rebuild_documents
from ..pixels import enrich as machine_enrich
from ..pixels import store as machine_store
from . import perceptual
from . import queries as q
from .errors import BadFile
from .exiftool_reader import ExifToolReader, display_path
from .identity import AssetIdentity
from .image import DEFAULT_MAX_PIXELS
from .prepare import Prepared, prepare_batch, prepare_file
from .summary import Failure, IngestSummary, ProgressFn
from .walk import MAX_FOLDER_DEPTH, FoundFile, walk

#: The ingest's interface: other modules read these names from here (the
#: pixel ceiling's default and the run's summary types included).
__all__ = ["BATCH_SIZE", "DEFAULT_MAX_PIXELS", "MAX_PIXELS_LIMIT", "Failure", "IngestSummary",
           "Ingester", "ProgressFn", "check_max_pixels", "ingest"]

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
        #: asset identity (S7): which asset each stored file belongs to
        self._identity = AssetIdentity(conn, tenant_id, self.home, match_document_ids)

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
        passed: list[tuple[str, str]] = []
        found = walk(root_path, exclude=[self.home], skipped=too_deep, unsupported=passed)
        for path, reason in passed:   # nothing passed over in silence
            summary.skipped.append(Failure(display_path(path), "unsupported", reason))
        if summary.skipped:
            with self.conn.cursor() as cur:
                cur.executemany(q.RECORD_FAILURE, [{
                    "run_id": run_id, "tenant_id": self.tenant_id, "path": s.path,
                    "kind": s.kind, "reason": s.reason, "severity": "skipped"}
                    for s in summary.skipped])
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
        self._identity.find_missing(source_id, known, gone, found_paths)
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
            if path in self._identity.claimed:  # continued by a moved file
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
                       pool: ThreadPoolExecutor) -> list[Prepared | BadFile]:
        """Each file of ``batch`` read (:func:`loupe.ingest.prepare.prepare_batch`)."""
        return prepare_batch(batch, reader, pool, self._prepare)

    def _prepare(self, f: FoundFile, raw_by_path: dict[str, dict[str, Any]],
                 fd: int | None = None) -> Prepared | BadFile:
        """One file read with this ingest's settings
        (:func:`loupe.ingest.prepare.prepare_file`)."""
        return prepare_file(f, raw_by_path, fd, home=self.home, max_pixels=self.max_pixels,
                            max_words=self.max_words, machine_opts=self.machine_opts)

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

    def _store(self, source_id: int, p: Prepared, known: tuple | None,
               summary: IngestSummary) -> None:
        f = p.found
        params = {"tenant_id": self.tenant_id}
        pred: tuple[str, int] | None = (f.path, known[1]) if known is not None else None
        moved = False
        if self.never_join and self.conn.execute(q.ASSET_BY_HASH, {
                **params, "sha": p.sha256}).fetchone() is not None:
            summary.left_known.append(f.path)
            return
        pred0, removed0 = pred, summary.removed_assets
        ident = self._identity

        def attempt() -> tuple[int | None, int, str]:
            # one try of the file's transaction; run again from its start
            # when PostgreSQL aborts it for a deadlock (loupe.db.retry)
            nonlocal pred, moved
            pred, moved, summary.removed_assets = pred0, False, removed0
            try:
                with self.conn.transaction():
                    coll_id = self._collection_id(source_id, f.folder)
                    row = self.conn.execute(q.LOCK_ASSET_BY_HASH,
                                            {**params, "sha": p.sha256}).fetchone()
                    if pred is None:
                        pred = self._identity.predecessor(p, row[0] if row else None, coll_id)
                        moved = pred is not None
                    ident.file_grants, ident.withheld = [], None
                    asset_id, outcome = ident.resolve(p, row[0] if row else None, pred, coll_id)
                    if moved:
                        self.conn.execute(q.DELETE_FILE, {**params, "path": pred[0]})
                    self.conn.execute(q.UPSERT_FILE, {
                        **params, "asset_id": asset_id, "source_id": source_id,
                        "collection_id": coll_id, "path": f.path, "rel_path": f.rel_path,
                        "size": f.size, "mtime_ns": f.mtime_ns, "sidecar_path": f.sidecar_path,
                        "sidecar_size": f.sidecar_size, "sidecar_mtime_ns": f.sidecar_mtime_ns,
                        "metadata": Jsonb(p.metadata), "raw": Jsonb(p.raw),
                    })
                    if ident.file_grants:
                        self.conn.execute(q.FILE_GRANTS_FOR, {**params, "path": f.path,
                                                              "principals": ident.file_grants})
                    machine_store.store(self.conn, self.tenant_id, asset_id, p.machine)
                    rebuild_documents(self.conn, self.tenant_id, asset_id, self.languages)
                    perceptual.store(self.conn, self.tenant_id, asset_id, p.hashes)
                    if pred is not None and pred[1] != asset_id:
                        self._release_asset(pred[1], summary)
            except RETRYABLE:
                self._collections.clear()   # ids created in the rolled-back transaction
                raise
            return coll_id, asset_id, outcome

        try:
            coll_id, asset_id, outcome = retrying(self.conn, attempt)
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
                      f"kept; {ident.withheld}" if ident.withheld else
                      "grants, keywords and hand-made collections joined; the later "
                      "embargo and the earlier rights expiry kept")
            reason = f"its bytes are now those of asset {asset_id}: merged into it ({joined})"
            summary.warnings.append(Failure(f.path, "merged", reason))
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": summary.run_id, "tenant_id": self.tenant_id, "path": f.path,
                "kind": "merged", "reason": reason, "severity": "warning"})
        elif ident.withheld:
            summary.warnings.append(Failure(f.path, "not_joined", ident.withheld))
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": summary.run_id, "tenant_id": self.tenant_id, "path": f.path,
                "kind": "not_joined", "reason": ident.withheld, "severity": "warning"})
        if moved:
            assert pred is not None
            ident.claimed.add(pred[0])
            summary.moved += 1
        elif outcome == "new":
            summary.new_assets += 1
        elif outcome == "duplicate":
            summary.duplicates += 1
        else:
            summary.updated += 1

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
        removed0 = summary.removed_assets

        def attempt() -> None:
            summary.removed_assets = removed0
            with self.conn.transaction():
                # the asset first (the global order of document writers):
                # a bulk action or a naming on it finishes before its file
                # goes, or waits and then leaves the deleted asset out
                lock_assets(self.conn, self.tenant_id, [asset_id])
                self.conn.execute(q.DELETE_FILE, {"tenant_id": self.tenant_id, "path": path})
                self._release_asset(asset_id, summary)
        retrying(self.conn, attempt)
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
