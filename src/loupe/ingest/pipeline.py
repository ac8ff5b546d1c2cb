"""The ingest pipeline: walk → read metadata → hash, decode, thumbnail → store (SPEC S6, N3, P2).

Guarantees:

* Each file's change (new asset, new path of a known asset, changed or removed
  file) is written in **one transaction** together with the asset's rebuilt
  search documents, so an asset is searchable exactly when it is visible, and
  a killed ingest leaves only whole assets behind. Re-running finishes the job.
* One bad file never stops the run: it is recorded in ``ingest_failure`` with
  its path, a kind and a reason, counted in the summary, and the run goes on.
* Re-running is incremental: a file whose size and modification time (and
  those of its sidecar) are unchanged is skipped without being read.
"""

from __future__ import annotations

import os
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
from . import queries as q
from .errors import BadFile
from .image import DEFAULT_MAX_PIXELS, ImageFacts, inspect_image, sha256_file
from .metadata import ExifToolReader, check_readable, merge, normalize, sidecar_problem
from .walk import FoundFile, walk

#: Files read by ExifTool in one batch call.
BATCH_SIZE = 48


@dataclass
class Failure:
    """A file that could not be ingested: path, kind (see ``BadFile.KINDS``) and reason."""

    path: str
    kind: str
    reason: str


@dataclass
class IngestSummary:
    """Counts of one ingest run. ``seconds`` is wall time; every count is of files
    except ``new_assets`` and ``removed_assets``."""

    run_id: int
    root: str
    files_seen: int = 0
    new_assets: int = 0
    duplicates: int = 0
    updated: int = 0
    unchanged: int = 0
    removed_files: int = 0
    removed_assets: int = 0
    failures: list[Failure] = field(default_factory=list)
    warnings: list[Failure] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return len(self.failures)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "root": self.root, "files_seen": self.files_seen,
            "new_assets": self.new_assets, "duplicates": self.duplicates,
            "updated": self.updated, "unchanged": self.unchanged,
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
    hashes: perceptual.PerceptualHashes | str | None = None  # str: why there are none


ProgressFn = Callable[[int, int], None]


class Ingester:
    """Ingest folders into one tenant's library.

    Args:
        conn: an autocommit connection (each asset gets its own transaction).
        tenant_id: the tenant every row is written for.
        home: the library home; thumbnails go to ``home/thumbnails``.
        max_pixels: decompression-bomb ceiling, width x height.
        workers: threads decoding images in parallel (Pillow releases the GIL).
    """

    def __init__(self, conn: psycopg.Connection, tenant_id: int, home: Path, *,
                 max_pixels: int = DEFAULT_MAX_PIXELS, workers: int | None = None,
                 exiftool: ExifToolReader | None = None):
        self.conn = conn
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

    # -- public ---------------------------------------------------------------

    def ingest(self, root: str | Path, progress: ProgressFn | None = None) -> IngestSummary:
        """Ingest every image under ``root``; return the run's summary.

        Raises:
            NotADirectoryError: ``root`` is not a folder.
        """
        started = time.monotonic()
        root_path = Path(root).expanduser().resolve()
        if not root_path.is_dir():
            raise NotADirectoryError(f"not a folder: {root_path}")
        source_id = self.conn.execute(
            q.UPSERT_SOURCE, {"tenant_id": self.tenant_id, "root": str(root_path)}).fetchone()[0]
        run_id = self.conn.execute(
            q.START_RUN, {"tenant_id": self.tenant_id, "source_id": source_id}).fetchone()[0]
        summary = IngestSummary(run_id=run_id, root=str(root_path))
        self._collections.clear()

        found = walk(root_path, exclude=[self.home])
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
        gone = sorted(set(known) - {f.path for f in found})
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
        paths = [f.path for f in batch] + [f.sidecar_path for f in batch if f.sidecar_path]
        raw_by_path = reader.read(paths)
        return list(pool.map(lambda f: self._prepare(f, raw_by_path), batch))

    def _prepare(self, f: FoundFile, raw_by_path: dict[str, dict[str, Any]]) -> _Prepared | BadFile:
        try:
            sha = sha256_file(f.path)
            thumb = self._thumbnail_path(sha)
            facts = inspect_image(f.path, thumb, max_pixels=self.max_pixels)
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
            return _Prepared(f, sha, facts, merge(embedded, sidecar_md), raw_all, warning,
                             perceptual.hash_file(f.path))
        except BadFile as exc:
            return exc
        except Exception as exc:  # an unexpected failure stays confined to its file
            return BadFile(f.path, "corrupt", f"unexpected error: {type(exc).__name__}: {exc}")

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
        try:
            with self.conn.transaction():
                coll_id = self._collection_id(source_id, f.folder)
                row = self.conn.execute(q.LOCK_ASSET_BY_HASH, {**params, "sha": p.sha256}).fetchone()
                if row is None:
                    asset_id = self.conn.execute(q.INSERT_ASSET, {
                        **params, "sha": p.sha256, "size": f.size,
                        "media_type": p.facts.media_type, "width": p.facts.width,
                        "height": p.facts.height, "orientation": p.facts.orientation,
                        "thumbnail": self._thumbnail_path(p.sha256).relative_to(self.home).as_posix(),
                    }).fetchone()[0]
                    outcome = "new"
                else:
                    asset_id = row[0]
                    outcome = "updated" if known is not None and known[1] == asset_id else "duplicate"
                self.conn.execute(q.UPSERT_FILE, {
                    **params, "asset_id": asset_id, "source_id": source_id,
                    "collection_id": coll_id, "path": f.path, "rel_path": f.rel_path,
                    "size": f.size, "mtime_ns": f.mtime_ns, "sidecar_path": f.sidecar_path,
                    "sidecar_size": f.sidecar_size, "sidecar_mtime_ns": f.sidecar_mtime_ns,
                    "metadata": Jsonb(p.metadata), "raw": Jsonb(p.raw),
                })
                rebuild_documents(self.conn, self.tenant_id, asset_id, self.languages)
                perceptual.store(self.conn, self.tenant_id, asset_id, p.hashes)
                if known is not None and known[1] != asset_id:
                    self._release_asset(known[1], summary)
                    outcome = "updated"
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
        if outcome == "new":
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
        with self.conn.transaction():
            self.conn.execute(q.DELETE_FILE, {"tenant_id": self.tenant_id, "path": path})
            self._release_asset(asset_id, summary)
        summary.removed_files += 1

    def _fail(self, summary: IngestSummary, err: BadFile, known: tuple | None) -> None:
        """Record a failure; a known file that now fails no longer describes its asset."""
        summary.failures.append(Failure(err.path, err.kind, err.reason))
        with self.conn.transaction():
            if known is not None:
                self.conn.execute(q.DELETE_FILE, {"tenant_id": self.tenant_id, "path": err.path})
                self._release_asset(known[1], summary)
                summary.removed_files += 1
            self.conn.execute(q.RECORD_FAILURE, {
                "run_id": summary.run_id, "tenant_id": self.tenant_id, "path": err.path,
                "kind": err.kind, "reason": err.reason, "severity": "error"})
