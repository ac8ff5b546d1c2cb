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


#: Why a sidecar beside a picture is not read: the picture reads its more
#: specific sidecar (``photo.jpg.xmp`` over ``photo.xmp``).
SECOND_SIDECAR = "a second XMP sidecar of a picture that reads its other one: not read"


def unsupported_reason(name: str) -> str:
    """Why the walk does not hand the file ``name`` (a file name, no folder)
    to the ingest: ``"not a supported format: .psd"``, ``"not a supported
    format: no file extension"``, or, for an XMP sidecar no picture of its
    folder claims, ``"an XMP sidecar with no supported picture beside it"``.
    The extension is shown lower-case and cut to 16 characters (a file name
    is hostile input)."""
    ext = os.path.splitext(name)[1].lower()
    if ext == ".xmp":
        return "an XMP sidecar with no supported picture beside it"
    if not ext or ext == ".":
        return "not a supported format: no file extension"
    shown = ext if len(ext) <= 16 else ext[:16] + "…"
    return f"not a supported format: {shown}"


def walk(root: str | Path, *, exclude: list[Path] | None = None,
         skipped: list[str] | None = None,
         unsupported: list[tuple[str, str]] | None = None) -> list[FoundFile]:
    """Return every image file under ``root`` (recursively), sorted by relative path.

    ``exclude`` lists folders not to descend into (e.g. the library home).
    Folders more than :data:`MAX_FOLDER_DEPTH` levels below ``root`` are not
    entered; their paths are appended to ``skipped`` (when given).
    Every other file the walk sees and does not return (a format Loupe does
    not read, a sidecar no picture claims) is appended to ``unsupported``
    (when given) as ``(path, reason)`` (:func:`unsupported_reason`), sorted
    by path: nothing under ``root`` is passed over in silence but hidden
    files and folders and the excluded folders.

    Raises:
        NotADirectoryError: ``root`` is not a folder.
    """
    root = Path(root).resolve()
    if not root.is_dir():
        raise NotADirectoryError(f"not a folder: {root}")
    excluded = {p.resolve() for p in (exclude or [])}
    found: list[FoundFile] = []
    passed: list[tuple[str, str]] = []
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
        claimed: set[str] = set()   # sidecars some picture of this folder reads
        pictures: set[str] = set()  # names (lower-case) of this folder's pictures and stems
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            stem, ext = os.path.splitext(name)
            if ext.lower() not in EXTENSIONS:
                if ext.lower() != ".xmp":
                    passed.append((os.path.join(dirpath, name), unsupported_reason(name)))
                continue
            pictures.update((name.lower(), stem.lower()))
            sidecar = _sidecar_name(name, names, lower)
            if sidecar is not None:
                claimed.add(sidecar)
            f = _describe(root, dirpath, name, names, lower)
            if f is not None:
                found.append(f)
        for name in filenames:
            if (not name.startswith(".") and os.path.splitext(name)[1].lower() == ".xmp"
                    and name not in claimed):
                why = (SECOND_SIDECAR if name[:-4].lower() in pictures
                       else unsupported_reason(name))
                passed.append((os.path.join(dirpath, name), why))
    found.sort(key=lambda f: f.rel_path)
    if unsupported is not None:
        unsupported.extend(sorted(passed))
    return found


def _sidecar_name(name: str, names: set[str], lower: dict[str, str]) -> str | None:
    """The XMP sidecar of picture ``name`` among its folder's ``names``
    (``lower``: by lower-case name): ``name.xmp`` before ``stem.xmp``, the
    exact case before any other; None when it has none."""
    stem = os.path.splitext(name)[0]
    for cand in (name + ".xmp", name + ".XMP", stem + ".xmp", stem + ".XMP"):
        if cand in names:
            return cand
    return lower.get((name + ".xmp").lower()) or lower.get((stem + ".xmp").lower())


def _describe(root: Path, dirpath: str, name: str, names: set[str],
              lower: dict[str, str]) -> FoundFile | None:
    """The :class:`FoundFile` of ``name`` in folder ``dirpath`` (whose file
    names are ``names``; ``lower``: by lower-case name), or None when it is
    hidden, not an image name, or vanished."""
    if name.startswith("."):
        return None
    stem, ext = os.path.splitext(name)
    if ext.lower() not in EXTENSIONS:
        return None
    full = os.path.join(dirpath, name)
    try:
        st = os.lstat(full)   # never follows a link
    except OSError:
        return None  # vanished between listing and stat
    sidecar = _sidecar_name(name, names, lower)
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
    return FoundFile(
        path=full, rel_path=rel, folder="" if folder == "." else folder,
        size=st.st_size, mtime_ns=st.st_mtime_ns,
        sidecar_path=sc_path, sidecar_size=sc_size, sidecar_mtime_ns=sc_mtime,
        regular=stat.S_ISREG(st.st_mode),
    )


def found_file(root: str | Path, rel_path: str) -> FoundFile | None:
    """The :class:`FoundFile` that :func:`walk` of ``root`` lists for
    ``rel_path`` ('/'-separated, relative to ``root``), read now; None when
    the file is gone, hidden (itself or a folder on its way) or not an
    image name. No link is followed: a folder on the way that is a link
    (which :func:`walk` never enters) gives None.

    Raises:
        ValueError: ``rel_path`` is absolute, empty or climbs out of ``root``
            (``..``): a queued job's path is read from the database.
    """
    root = Path(root).resolve()
    parts = rel_path.split("/")
    if not rel_path or rel_path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a path inside the folder: {rel_path!r}")
    if any(p.startswith(".") for p in parts) or "\0" in rel_path:
        return None
    dirpath = root
    for part in parts[:-1]:
        dirpath = dirpath / part
        try:
            if not stat.S_ISDIR(os.lstat(dirpath).st_mode):
                return None
        except OSError:
            return None
    try:
        filenames = os.listdir(dirpath)
    except OSError:
        return None
    if parts[-1] not in filenames:
        return None
    return _describe(root, str(dirpath), parts[-1], set(filenames),
                     {n.lower(): n for n in filenames})
