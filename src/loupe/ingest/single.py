"""One file of a folder ingested on its own: the work of one queued ingest
job (:mod:`loupe.jobs`), so that several workers, on several machines, share
a folder's files.

The file is read, checked and stored exactly as a run of its whole folder
(:class:`loupe.ingest.pipeline.Ingester`) would: its asset, documents,
collections and hashes in one transaction, so that a worker killed mid-file
leaves nothing of it, and the job run again stores it whole. A file already
stored with the same size and times is left as it is (the job is
idempotent). What only a run of the whole folder can see is left to one:
files gone from the folder (removed, or continued at a new path).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import queries as q
from .errors import BadFile
from .pipeline import Ingester, IngestSummary
from .walk import found_file


class FileIngester(Ingester):
    """An :class:`~loupe.ingest.pipeline.Ingester` for one file at a time
    (its arguments; give it a started ``exiftool`` reader to keep one
    ExifTool process across files)."""

    def ingest_file(self, root: str | Path, rel_path: str, run_id: int) -> IngestSummary:
        """Ingest file ``rel_path`` ('/'-separated) of folder ``root``,
        recording its problems under ingest run ``run_id``. Returns that
        file's summary: ``files_seen`` 0 when the file is gone (or hidden,
        not an image name), ``unchanged`` 1 when it is stored as it is.

        Raises:
            NotADirectoryError: ``root`` is not a folder.
            ValueError: ``rel_path`` is not a path inside ``root``
                (:func:`loupe.ingest.walk.found_file`).
        """
        root_path = Path(root).expanduser().resolve()
        if not root_path.is_dir():
            raise NotADirectoryError(f"not a folder: {root_path}")
        summary = IngestSummary(run_id=run_id, root=str(root_path))
        f = found_file(root_path, rel_path)
        if f is None:
            return summary
        summary.files_seen = 1
        params = {"tenant_id": self.tenant_id, "root": str(root_path)}
        source_id = self.conn.execute(q.UPSERT_SOURCE, params).fetchone()[0]
        known = self.conn.execute(q.KNOWN_FILE, {**params, "source_id": source_id,
                                                 "path": f.path}).fetchone()
        if known is not None and tuple(known[2:]) == (
                f.size, f.mtime_ns, f.sidecar_path, f.sidecar_size, f.sidecar_mtime_ns):
            summary.unchanged = 1
            return summary
        reader = self._exiftool
        if reader is None:
            raise ValueError("FileIngester needs a started ExifTool reader (exiftool=)")
        with ThreadPoolExecutor(max_workers=1) as pool:
            item = self._prepare_batch([f], reader, pool)[0]
        if isinstance(item, BadFile):
            self._fail(summary, item, known)
        else:
            self._store(source_id, item, known, summary)
        return summary
