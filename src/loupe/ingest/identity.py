"""Asset identity (S7): which asset a stored file belongs to, and what
people added that follows it (docs/guide.md, "What ingest reads").

A file continuing a known file (same path, or a move found in this run) keeps
that file's asset; new bytes update the asset in place, fork it off identical
copies, or merge it into the asset that already holds those bytes. What moves
with a file never lets anyone read more than before. Every statement runs
inside the caller's transaction (:meth:`loupe.ingest.pipeline.Ingester._store`).
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg

from . import queries as q
from .metadata import document_ids
from .prepare import Prepared, thumbnail_path

#: What people added that moves with a file to another asset (:meth:`AssetIdentity.inherit`).
ALL_ADDITIONS = (q.INHERIT_GRANTS, q.INHERIT_KEYWORDS, q.INHERIT_MEMBERSHIPS, q.INHERIT_DATES)


class AssetIdentity:
    """The asset-identity rule of one :class:`~loupe.ingest.pipeline.Ingester`.

    Args:
        conn: the ingest's connection.
        tenant_id: the tenant every row is written for.
        home: the library home (an asset records its thumbnail's path below it).
        match_document_ids: continue a missing file by its XMP DocumentID /
            OriginalDocumentID (see :meth:`predecessor`).

    State of the current run: ``claimed``, the missing paths already
    continued by a moved file; per file, ``file_grants`` (principals granted
    the moved file alone, written after its file row) and ``withheld`` (what
    was left behind, for the ingest warning), both reset by the caller before
    :meth:`resolve`.
    """

    def __init__(self, conn: psycopg.Connection, tenant_id: int, home: Path,
                 match_document_ids: bool):
        self.conn = conn
        self.tenant_id = tenant_id
        self.home = home
        self.match_document_ids = match_document_ids
        self.claimed: set[str] = set()
        self.file_grants: list = []
        self.withheld: str | None = None
        # move detection of the current run (see predecessor)
        self._gone_by_asset: dict[int, list[str]] = {}
        self._missing_docs: list[tuple[str, int, str | None, str | None]] | None = None
        self._source_id: int | None = None
        self._gone_set: set[str] = set()
        self._found_paths: set[str] = set()

    def find_missing(self, source_id: int, known: dict[str, tuple], gone: list[str],
                     found_paths: set[str]) -> None:
        """Prepare, for this run, the files a new path may continue: this
        source's files not found by the walk (by asset); the tenant's files with
        an XMP DocumentID whose path is gone from disk are read on first need
        (:meth:`missing_documents`)."""
        self.claimed = set()
        self._gone_by_asset = {}
        for path in gone:
            self._gone_by_asset.setdefault(known[path][1], []).append(path)
        self._source_id = source_id
        self._gone_set = set(gone)
        self._found_paths = found_paths
        self._missing_docs = None

    def missing_documents(self) -> list[tuple[str, int, str | None, str | None]]:
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

    def predecessor(self, p: Prepared, same_bytes_asset: int | None,
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
                if path not in self.claimed:
                    return path, same_bytes_asset
            return None
        if not self.match_document_ids:
            return None
        doc_id, orig_id = document_ids(p.raw)
        if not doc_id and not orig_id:
            return None
        free = [m for m in self.missing_documents() if m[0] not in self.claimed]

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

    def resolve(self, p: Prepared, same_bytes_asset: int | None,
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
        :meth:`inherit`); the old asset goes when it has no file left.

        What people added never lets anyone read more than before: on a merge, when a principal the old asset
        reaches as a whole (asset grant, hand-made collection) does not read
        every file of the other asset, grants and hand-made collections do
        not join it — those principals get a grant on the moved file alone
        (``file_grants``, written after the file row) and keywords
        still join; on a fork, when a reader of the file's folder or of its
        own grants did not read the old asset whole, keywords and hand-made
        collections do not follow the file (grants, which reach only what
        their principals read, still do). ``withheld`` says what was
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
                self.file_grants = wide
                self.withheld = (f"the grants and hand-made collections of asset {pred[1]} "
                                  f"not joined, as they would reach files of asset "
                                  f"{same_bytes_asset} that {len(widens)} of their principals "
                                  f"may not read: those principals are granted this file alone")
                what = (q.INHERIT_KEYWORDS, q.INHERIT_DATES)
            self.inherit(pred[1], same_bytes_asset, last_file=last, what=what)
            return same_bytes_asset, "merged"
        content = {
            **params, "sha": p.sha256, "size": p.found.size,
            "media_type": p.facts.media_type, "width": p.facts.width,
            "height": p.facts.height, "orientation": p.facts.orientation,
            "duration_s": p.facts.duration_s,
            "thumbnail": thumbnail_path(self.home, p.sha256).relative_to(self.home).as_posix(),
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
            return self.resolve(p, same[0], pred)
        asset_id = row[0]
        if pred is not None:
            widens = self.conn.execute(q.FORK_WIDENS, {
                **params, "src": pred[1], "collection_id": collection_id,
                "path": p.found.path}).fetchone()[0]
            what = ALL_ADDITIONS
            if widens:
                self.withheld = (f"the keywords and hand-made collections of asset {pred[1]} "
                                  f"not carried to its new asset {asset_id}: readers of this "
                                  f"file may not read every file of asset {pred[1]}")
                what = (q.INHERIT_GRANTS, q.INHERIT_DATES)
            self.inherit(pred[1], asset_id, last_file=False, what=what)
            return asset_id, "updated"
        return asset_id, "new"

    def inherit(self, src: int, dst: int, *, last_file: bool,
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
