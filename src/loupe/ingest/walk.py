"""Finding image files and their XMP sidecars under a folder.

Two sidecar conventions are in use and both are read: ``photo.jpg.xmp``
(darktable, digiKam, ExifTool's own examples) and ``photo.xmp`` (Adobe
Lightroom/Bridge). When both exist the first, more specific one is used.
Hidden files and folders (names starting with ``.``) are skipped.

Nothing is followed: a symbolic link is never resolved (a link planted in a
shared folder must not bring a private file, or one outside the library,
into it), and neither it nor a FIFO, socket or device under an image name is
ever opened (a FIFO would block the ingest forever). Such an entry is still
listed, with ``regular`` false, so that the ingest reports it as a failed
file with its reason; a sidecar that is not a regular file is not used.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .image import EXTENSIONS


@dataclass(frozen=True)
class FoundFile:
    """One image file found by :func:`walk`.

    ``rel_path`` is '/'-separated and relative to the walked root; ``folder``
    is its parent folder ('' at the root). Sizes in bytes, times in ns.
    """

    path: str
    rel_path: str
    folder: str
    size: int
    mtime_ns: int
    sidecar_path: str | None
    sidecar_size: int | None
    sidecar_mtime_ns: int | None
    #: a regular file (not a symbolic link, FIFO, socket or device)
    regular: bool = True


#: Folder levels below the walked root that are walked (the root's own files
#: are level 0). A folder deeper than this is not entered and is reported in
#: ``skipped``: Python 3.11's ``os.walk`` recurses once per level, and a chain
#: of ~1,000 folders (2 KB of path) raised RecursionError and stopped the
#: whole root's ingest at every run. Real libraries nest a
#: handful of levels (year/month/day/event); 64 leaves room for any of them.
MAX_FOLDER_DEPTH = 64


def walk(root: str | Path, *, exclude: list[Path] | None = None,
         skipped: list[str] | None = None) -> list[FoundFile]:
    """Return every image file under ``root`` (recursively), sorted by relative path.

    ``exclude`` lists folders not to descend into (e.g. the library home).
    Folders more than :data:`MAX_FOLDER_DEPTH` levels below ``root`` are not
    entered; their paths are appended to ``skipped`` (when given).

    Raises:
        NotADirectoryError: ``root`` is not a folder.
    """
    root = Path(root).resolve()
    if not root.is_dir():
        raise NotADirectoryError(f"not a folder: {root}")
    excluded = {p.resolve() for p in (exclude or [])}
    found: list[FoundFile] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and Path(dirpath, d).resolve() not in excluded
        )
        if dirnames and len(Path(dirpath).relative_to(root).parts) >= MAX_FOLDER_DEPTH:
            if skipped is not None:
                skipped.extend(os.path.join(dirpath, d) for d in dirnames)
            dirnames[:] = []
        names = set(filenames)
        lower = {n.lower(): n for n in filenames}
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            stem, ext = os.path.splitext(name)
            if ext.lower() not in EXTENSIONS:
                continue
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)   # never follows a link
            except OSError:
                continue  # vanished between listing and stat
            sidecar = None
            for cand in (name + ".xmp", name + ".XMP", stem + ".xmp", stem + ".XMP"):
                if cand in names:
                    sidecar = cand
                    break
            if sidecar is None:
                sidecar = lower.get((name + ".xmp").lower()) or lower.get((stem + ".xmp").lower())
            sc_path = sc_size = sc_mtime = None
            if sidecar is not None:
                sc_path = os.path.join(dirpath, sidecar)
                try:
                    sst = os.lstat(sc_path)
                    if stat.S_ISREG(sst.st_mode):
                        sc_size, sc_mtime = sst.st_size, sst.st_mtime_ns
                    else:
                        sc_path = None   # a link or a special file: not read
                except OSError:
                    sc_path = None
            rel = Path(full).relative_to(root).as_posix()
            folder = Path(rel).parent.as_posix()
            found.append(FoundFile(
                path=full, rel_path=rel, folder="" if folder == "." else folder,
                size=st.st_size, mtime_ns=st.st_mtime_ns,
                sidecar_path=sc_path, sidecar_size=sc_size, sidecar_mtime_ns=sc_mtime,
                regular=stat.S_ISREG(st.st_mode),
            ))
    found.sort(key=lambda f: f.rel_path)
    return found
