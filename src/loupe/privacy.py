"""Library files are private to the user running Loupe (N5).

A library home holds the database, uploads, thumbnails (small copies of every
image, hidden ones included), models and logs. Nobody but the user running
Loupe may read them: Loupe creates its folders 0700 and its files 0600, by
narrowing the process umask (never widening it: bits a stricter umask already
masks stay masked), and it never widens the permissions of a folder it did not
create (see :mod:`loupe.db.server` for the embedded server started as root).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Masks every group and other permission bit: folders 0700, files 0600.
PRIVATE_UMASK = 0o077
#: Folders of a home that Loupe creates and fills (tightened when found open).
LIBRARY_FOLDERS = ("thumbnails", "uploads", "models", "logs")


def private_umask() -> int:
    """Narrow this process's umask to at least :data:`PRIVATE_UMASK`; returns the new one."""
    new = os.umask(0) | PRIVATE_UMASK
    os.umask(new)
    return new


def private_home(home: Path) -> None:
    """Create ``home`` (and any missing parent) as 0700 folders; a home that
    exists keeps its mode (Loupe did not create it), but the library folders
    inside it (:data:`LIBRARY_FOLDERS`, made by Loupe) lose any group and other
    permission they had (libraries made before this rule).

    Raises:
        OSError: a folder cannot be created.
    """
    private_umask()
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in LIBRARY_FOLDERS:
        folder = home / name
        try:
            st = folder.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o077 and st.st_uid == os.geteuid():
            os.chmod(folder, stat.S_IMODE(st.st_mode) & 0o700)
