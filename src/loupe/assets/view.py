"""One asset as the viewer may see it (P1): its row, record, thumbnail and
original file, and the collections it can read.

Every function takes the connection, the tenant and the viewer's statement
parameters (:meth:`loupe.access.viewer.Viewer.params`); an asset that does
not exist and one the viewer may not read give the same
:class:`AssetNotFound`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import psycopg

from .. import queries as q
from ..access.viewer import Viewer
from ..ingest.image import displayed_size, hashed_copy
from ..pixels.store import load
from ..pixels.words import machine_text

#: Columns of :data:`loupe.queries.ASSET`, in order.
ASSET_COLUMNS = ["id", "sha256", "byte_size", "media_type", "width", "height", "orientation",
                 "thumbnail", "created_at", "updated_at", "embargo_until", "rights_expire_at"]
_DATES = ("created_at", "updated_at", "embargo_until", "rights_expire_at")


class AssetNotFound(LookupError):
    """Raised when an asset id does not exist in the current tenant."""


def asset_row(conn: psycopg.Connection, tenant_id: int, tenant: str, viewer: Viewer,
              asset_id: int) -> tuple:
    """The asset's row (:data:`ASSET_COLUMNS`).

    Raises:
        AssetNotFound: no such asset in the tenant, or not readable by ``viewer``.
    """
    row = conn.execute(q.ASSET, {"tenant_id": tenant_id, "asset_id": asset_id,
                                 **viewer.params()}).fetchone()
    if row is None:
        # the same answer for "does not exist" and "not yours to see" (P1)
        raise AssetNotFound(f"no asset {asset_id} in tenant {tenant!r}")
    return row


def asset_record(conn: psycopg.Connection, home: Path, tenant_id: int, row: tuple,
                 viewer: Viewer, languages: list[str]) -> dict[str, Any]:
    """Everything stored about the asset of ``row`` (from :func:`asset_row`):
    its columns (dates as ISO 8601, sha256 as hex, thumbnail as an absolute
    path), ``width``/``height`` as displayed (EXIF orientation applied: 5..8
    turn the picture a quarter), ``stored_width``/``stored_height``, and
    ``files`` (``{"path", "collection", "sidecar", "metadata"}``),
    ``documents`` (one per language) and ``machine`` (:func:`machine_facts`)
    as the viewer may read them; for a viewer who does not see everything,
    ``created_at``, ``updated_at`` and ``machine.computed_at`` are None
    (they may be a hidden copy's). :meth:`loupe.Library.show` takes ``row``
    from :func:`asset_row`, which raises AssetNotFound for an asset that does
    not exist in the tenant or that the viewer may not read (the two are not
    told apart)."""
    asset = dict(zip(ASSET_COLUMNS, row))
    params = {"tenant_id": tenant_id, "asset_id": asset["id"], **viewer.params()}
    asset["stored_width"], asset["stored_height"] = asset["width"], asset["height"]
    asset["width"], asset["height"] = displayed_size(asset["width"], asset["height"],
                                                     asset["orientation"])
    asset["sha256"] = bytes(asset["sha256"]).hex()
    asset["thumbnail"] = str(home / asset["thumbnail"]) if asset["thumbnail"] else None
    for key in _DATES:
        asset[key] = asset[key].isoformat() if asset[key] else None
    asset["files"] = [{"path": r[0], "collection": r[1], "sidecar": r[2], "metadata": r[3]}
                      for r in conn.execute(q.ASSET_FILES, params)]
    asset["documents"] = [
        {"lang": r[0], "title": r[1], "description": r[2], "keywords": r[3],
         "collections": r[4], "filename": r[5], "creator": r[6], "copyright": r[7],
         "location": r[8], "doc_len": r[9], "vocabulary": r[10]}
        for r in conn.execute(q.ASSET_DOCUMENTS, params)]
    asset["machine"] = machine_facts(conn, asset["id"], languages)
    if not viewer.see_all:
        # the asset's own times are those of whichever copy came first or
        # last, a copy the viewer may not read among them (a hidden byte-copy
        # ingested later moved updated_at and machine.computed_at; one
        # ingested first set created_at): a viewer who does not see every
        # file is shown none of them, whether or not such a copy exists
        asset["created_at"] = asset["updated_at"] = None
        if asset["machine"] is not None:
            asset["machine"]["computed_at"] = None
    return asset


def machine_facts(conn: psycopg.Connection, asset_id: int,
                  languages: list[str]) -> dict[str, Any] | None:
    """The machine facts of an asset (its pixels: the same in every file;
    :func:`loupe.pixels.store.load`) with their words per library language
    (``words``: language → text), or None when none were computed."""
    facts = load(conn, asset_id)
    if facts is None:
        return None
    facts["computed_at"] = facts["computed_at"].isoformat()
    facts["words"] = {lang: machine_text(facts, lang) for lang in languages}
    return facts


def thumbnail_path(home: Path, row: tuple) -> Path:
    """The thumbnail file of the asset of ``row`` (WebP, longest side 384 px).

    Raises:
        AssetNotFound: the asset has no thumbnail, or its file is gone (and,
            from :func:`asset_row`, no such asset or not readable).
    """
    thumb = row[ASSET_COLUMNS.index("thumbnail")]
    if not thumb or not (home / thumb).is_file():
        raise AssetNotFound(f"asset {row[0]} has no thumbnail")
    return home / thumb


def _open_regular(path: str, size: int) -> tuple[BinaryIO | None, str]:
    """``(file, "ok")``: ``path`` opened for reading when no component of it
    is a symbolic link (a stored path is canonical), it opens without
    following a link (``O_NOFOLLOW``) nor blocking (``O_NONBLOCK``), and it
    is a regular file of ``size`` bytes; else ``(None, why)``: ``"missing"``
    (no such file or folder), ``"other"`` (a link on the way, not a regular
    file, another size) or ``"error"`` (it could not be opened). The check
    holds for the returned descriptor only: read it, not the path."""
    try:
        if os.path.realpath(path) != path:
            return None, "other"
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, "missing"
    except NotADirectoryError:
        return None, "other"
    except OSError as exc:   # ELOOP: a link at the end; else an I/O problem
        return None, "other" if exc.errno == errno.ELOOP else "error"
    fh = os.fdopen(fd, "rb")
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size != size:
        fh.close()
        return None, "other"
    return fh, "ok"


def open_verified(path: str, sha256: bytes, size: int) -> BinaryIO | None:
    """``path`` opened for reading at offset 0 if it still holds the bytes
    ``sha256`` of ``size`` bytes (:func:`_open_regular`, then its SHA-256
    read through the same descriptor), else None. Read the returned
    descriptor, not the path."""
    fh, _why = _open_regular(path, size)
    if fh is None:
        return None
    if hashlib.file_digest(fh, "sha256").digest() == sha256:
        fh.seek(0)
        return fh
    fh.close()
    return None


def open_original(conn: psycopg.Connection, tenant_id: int, viewer: Viewer,
                  row: tuple) -> tuple[BinaryIO, Path]:
    """The first file (by path, among those ``viewer`` may read) of the asset
    of ``row`` that still holds its bytes (:func:`open_verified`), opened:
    ``(binary file object at offset 0, path)``. A file replaced by a link or
    by other bytes since the ingest is never served: read what is returned,
    not the path (:meth:`loupe.Library.original` gives only the path, checked
    the same way, then closed).

    Raises:
        AssetNotFound: no file of it on disk holds its bytes any more (and,
            from :func:`asset_row`, no such asset or not readable).
    """
    sha, size = bytes(row[1]), row[2]
    for f in conn.execute(q.ASSET_FILES, {"tenant_id": tenant_id, "asset_id": row[0],
                                          **viewer.params()}):
        fh = open_verified(f[0], sha, size)
        if fh is not None:
            return fh, Path(f[0])
    raise AssetNotFound(f"asset {row[0]}: no file of it on disk holds its bytes any more")


def collections(conn: psycopg.Connection, tenant_id: int, viewer: Viewer) -> list[dict[str, Any]]:
    """Collections the viewer can read something in, with their asset counts
    (sub-collections included): ``{"id", "path", "parent_id", "hand_made",
    "assets", "full_path"}``; ``full_path`` (source root + path) is None for
    hand-made ones and for a member, who sees no server path."""
    return [{"id": r[0], "path": r[1], "parent_id": r[2], "hand_made": r[3],
             "assets": r[4], "full_path": r[5] if viewer.see_all else None}
            for r in conn.execute(q.COLLECTIONS, {"tenant_id": tenant_id, **viewer.params()})]


def stats(conn: psycopg.Connection, tenant_id: int) -> dict[str, Any]:
    """Counts of the tenant's ``assets``, ``files``, ``collections`` and
    ``documents`` (language → count); :meth:`loupe.Library.stats` adds
    ``tenant`` and ``languages``."""
    row = conn.execute(q.STATS, {"tenant_id": tenant_id}).fetchone()
    docs = {r[0]: r[1] for r in conn.execute(q.DOC_COUNTS, {"tenant_id": tenant_id})}
    return {"assets": row[0], "files": row[1], "collections": row[2], "documents": docs}


def failures(conn: psycopg.Connection, tenant_id: int, run_id: int | None) -> list[dict[str, Any]]:
    """Problems of ingest run ``run_id`` (None: the latest): ``{"run_id",
    "path", "kind", "reason", "severity"}``, ``severity`` ``error`` (file not
    ingested), ``warning`` (ingested with a problem) or ``skipped`` (a file
    under the folder that Loupe does not read: kind ``unsupported``, the
    reason says why, e.g. "not a supported format: .psd")."""
    rows = conn.execute(q.FAILURES, {"tenant_id": tenant_id, "run_id": run_id})
    return [{"run_id": r[0], "path": r[1], "kind": r[2], "reason": r[3], "severity": r[4]}
            for r in rows]


def copy_checked(path: str, sha256: bytes, size: int) -> tuple[BinaryIO | None, str]:
    """``(copy, "ok")`` when ``path`` holds the bytes ``sha256`` of ``size``
    bytes, else ``(None, why)``: ``"missing"`` (no such file or folder),
    ``"other"`` (a link on the way, not a regular file, or other bytes:
    evidence that the file is not the asset's any more) or ``"error"`` (it
    could not be read or copied: a full temporary directory, an I/O error).

    Read once, through one descriptor (:func:`_open_regular`), hashed as it
    is copied (:func:`loupe.ingest.image.hashed_copy`): the caller decodes
    the copy, never the file, so a write to the file after the check changes
    nothing it reads. The caller closes the copy."""
    fh, why = _open_regular(path, size)
    if fh is None:
        return None, why
    with fh:
        try:
            got = hashed_copy(fh, max_bytes=size)
        except OSError:
            return None, "error"
    if got is None:
        return None, "other"
    copy, digest, n = got
    if n == size and digest == sha256:
        return copy, "ok"
    copy.close()
    return None, "other"


class NoVerifiedFile(LookupError):
    """No file of an asset on disk still holds the asset's bytes (the
    message names the asset and why): a back-fill pass skips it and says so.
    ``evidence``: some file of it exists but is a link, not a regular file,
    or holds other bytes, or the bytes are not the picture the ingest
    decoded — so what was computed from it before may not be the asset's;
    False when its files are only missing or could not be read (a source not
    mounted, a full temporary directory)."""

    def __init__(self, message: str, evidence: bool = True):
        super().__init__(message)
        self.evidence = evidence


def open_asset_bytes(conn: psycopg.Connection, asset_id: int) -> tuple[BinaryIO, str]:
    """A private copy of the bytes of the first file (by relative path) of
    asset ``asset_id`` that still holds the asset's bytes
    (:func:`copy_checked`: no link followed, no FIFO opened, a regular file
    of the asset's size and SHA-256), at offset 0: ``(binary file object,
    path)``. Every pass that reads pixels
    after the ingest (``loupe enrich``, ``loupe embed``, ``loupe faces``,
    the perceptual-hash back-fill) reads them here, never by path: a file
    swapped for a link, a FIFO, a pixel bomb or other bytes since the ingest
    is never read, and a write to the file after the check never reaches
    the copy, so what the pass stores on the asset comes from the asset's own
    bytes, which passed the ingest's pixel ceiling. Their header must give the width and height the
    ingest decoded, read before any decode: an asset whose SHA-256 was taken
    of other bytes than it decoded (a file rewritten between an older ingest's hash and
    its decode) never gets a pixel bomb decoded. The caller closes the file.

    Raises:
        NoVerifiedFile: the asset is gone, or none of its files holds its bytes.
    """
    from PIL import Image

    row = conn.execute(q.ASSET_BYTES, {"asset_id": asset_id}).fetchone()
    if row is None:
        raise NoVerifiedFile(f"asset {asset_id} no longer exists")
    sha, size, width, height = bytes(row[0]), row[1], row[2], row[3]
    paths = [r[0] for r in conn.execute(q.ASSET_ALL_FILES, {"asset_id": asset_id})]
    seen = set()
    for path in paths:
        fh, why = copy_checked(path, sha, size)
        seen.add(why)
        if fh is None:
            continue
        try:   # the header, before any decode: the size the ingest decoded
            with Image.open(fh) as im:
                shape = im.size
        except Exception as exc:  # noqa: BLE001 - any header Pillow refuses
            fh.close()
            raise NoVerifiedFile(f"asset {asset_id}: its bytes no longer open as an image "
                                 f"({type(exc).__name__})") from exc
        if shape != (width, height):
            fh.close()
            raise NoVerifiedFile(f"asset {asset_id}: its bytes hold a {shape[0]}x{shape[1]} "
                                 f"picture, not the {width}x{height} its ingest decoded, and "
                                 f"a new ingest of the same bytes keeps that record: move the "
                                 f"file out of the library, run 'loupe ingest', then put it "
                                 f"back and ingest again")
        fh.seek(0)
        return fh, path
    if "other" in seen:
        raise NoVerifiedFile(f"asset {asset_id}: none of its {len(paths)} file(s) on disk holds "
                             f"its bytes any more (changed, replaced or removed since the "
                             f"ingest; run 'loupe ingest' again)")
    raise NoVerifiedFile(f"asset {asset_id}: none of its {len(paths)} file(s) could be read "
                         f"now ({'missing' if seen <= {'missing'} else 'a read or copy failed'}"
                         f"; a source not mounted, or a full temporary directory?): nothing "
                         f"was changed", evidence=False)
