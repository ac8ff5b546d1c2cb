"""What one ingest run reports: its counts, failures, warnings and skipped
files (:class:`IngestSummary`), and the progress callback's shape.

Kept apart from the pipeline so that the facade and a one-file ingest can name a run's outcome without importing the stages that
produce it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: ``progress(done, total)``: files handled so far and files to handle.
ProgressFn = Callable[[int, int], None]


@dataclass
class Failure:
    """A file that could not be ingested: path, kind (see ``BadFile.KINDS``) and reason."""

    path: str
    kind: str
    reason: str


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
    #: files under the root the ingest does not read, with the reason (kind
    #: ``unsupported``): a format Loupe does not read, a sidecar no picture
    #: claims. Not counted in ``files_seen`` (the files handed to the ingest)
    skipped: list[Failure] = field(default_factory=list)

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
            "skipped": len(self.skipped),
            "skipped_files": [s.__dict__ for s in self.skipped],
            "seconds": round(self.seconds, 3),
        }
