"""Uploads through the web app: a file's name made safe, the user's upload
folder, the quota (bytes, files and the search terms an upload adds), the
files staged and checked before anything is ingested, and their ingest by
the library's owner."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fastapi import HTTPException, UploadFile

from ..library import Library
from . import queries as wq
from ..ingest.image import EXTENSIONS
from ..ingest.exiftool_reader import ExifToolReader
from ..ingest.pipeline import Ingester
from ..ingest.xmpcheck import sidecar_shape_problem
from .auth import lend_user_library
from .security import WebLimits


#: Upload limits: files per request and bytes per file.
MAX_UPLOAD_FILES = 200
MAX_UPLOAD_BYTES = 200 * 1024 * 1024
#: Bytes of the upload quota one search term of an uploaded image costs (per
#: language): each is a lexicon row, a posting and their index entries.
#: Measured (benchmarks/upload_index_cost.py, docs/security.md, "Index growth from uploads"): 610-840
#: bytes of database per term and language; charged as 1 KiB.
INDEX_BYTES_PER_TERM = 1024


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]+")


def safe_filename(name: str | None) -> str:
    """The last path component of an uploaded file name, with characters
    outside ``[A-Za-z0-9._ -]`` replaced by ``_``.

    Raises:
        HTTPException 400: empty, hidden (leading dot) or ``..``.
    """
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = _SAFE_NAME.sub("_", base).strip()[:200]
    if not base or base.startswith("."):
        raise HTTPException(400, f"unusable file name {name!r}")
    return base


_PLAIN_USER = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


def upload_folder_name(user: str | None) -> str:
    """The folder under ``HOME/uploads/`` of ``user``'s uploads (None: the
    owner, ``owner``): a one-to-one map, so that no two users share a folder
    and its quota. A user name of ASCII letters, digits, ``.``, ``_``, ``-``
    (not starting with ``.``, at most 100 characters, not ``owner``) is its
    own folder; any other is folded to those characters, followed by ``@``
    and the first 16 hex digits of its SHA-256 (``@`` never appears in a
    name kept as is). Before, ``bob@x`` and ``bob_x`` both wrote to
    ``uploads/bob_x/`` and spent one quota."""
    if user is None:
        return "owner"
    if _PLAIN_USER.fullmatch(user) and user != "owner":
        return user
    folded = _SAFE_NAME.sub("_", user).replace(" ", "_").lstrip(".")[:100] or "user"
    return f"{folded}@{hashlib.sha256(user.encode('utf-8')).hexdigest()[:16]}"


def _usage(folder: Path) -> tuple[int, int]:
    """``(bytes, files)`` under a user's upload folder (0, 0 when absent).

    Another request of the same user may remove a file or a whole upload
    folder while this one counts (a refused upload is deleted): what
    vanishes is not counted, and the walk goes on (two
    concurrent uploads answered 500 with FileNotFoundError). Symbolic links
    are not followed (the server writes none)."""
    size = count = 0
    stack = [folder]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    size += entry.stat(follow_symlinks=False).st_size
                    count += 1
            except FileNotFoundError:
                continue
    return size, count


def _sidecars(folder: Path, name: str) -> list[Path]:
    """The sidecars of ``name`` in ``folder`` (both conventions of
    :mod:`loupe.ingest.walk`: ``photo.jpg.xmp`` and ``photo.xmp``)."""
    stem = name.rsplit(".", 1)[0]
    wanted = {(name + ".xmp").lower(), (stem + ".xmp").lower()}
    return [p for p in folder.iterdir() if p.name.lower() in wanted]


def _pixels(path: Path) -> int | None:
    """Width x height from the image header, without decoding the pixels
    (None when Pillow recognises no image: the ingest then says why)."""
    from PIL import Image  # noqa: PLC0415

    try:
        with Image.open(path) as im:
            return im.size[0] * im.size[1]
    except Exception:  # noqa: BLE001 - any unreadable header: the ingest reports it per file
        return None


def upload(request: Any, files: list[UploadFile],
           limits: WebLimits | None = None) -> dict[str, Any]:
    """Write ``files`` to a fresh folder ``HOME/uploads/<user>/<UTC time>-<random>/``,
    ingest it (one image decoded at a time), and grant the files it stored
    as new assets to the uploader, as files (a file grant, migration 0027:
    never the whole asset, so a private file of the same bytes ingested
    later stays the owner's). Granting is the server's policy, not something a member
    may do: it runs as the owner.

    The request holds a pooled Library (``loupe.web.auth.lend_user_library``)
    only while it authenticates, checks the quota and writes and checks the
    files; ExifTool, the decoding and the ingest run on a Library opened for
    this upload outside the pool (``LibraryPool.outside``, a few at once),
    so another user's search is not queued behind them.

    Rules (docs/security.md, "Uploads"), for every uploader:

    * a file over ``limits.upload_max_pixels``, or past the request's
      ``limits.upload_pixel_budget``, is refused from its header, before it
      is decoded; a file that is not an image or sidecar type, or that the
      ingest refuses (among its reasons: more than
      ``limits.upload_max_words`` distinct words in its name and metadata), is refused too; refused files are removed from
      disk, a refused image with its sidecars;
    * the user's upload folder holds at most ``limits.upload_quota_bytes``
      and ``limits.upload_quota_files`` (413 naming the file and the bound;
      nothing of that request is kept); the bytes count, beside the files,
      :data:`INDEX_BYTES_PER_TERM` per search term (and language) that the
      user's uploaded images add to the index.

    For a member (not an admin), an upload only ever creates new assets: a
    file whose bytes already are an asset of the tenant (whether or not the
    member may read it) is not ingested and is removed with its sidecars, so
    it never attaches to, nor changes the metadata of, an asset of others;
    and the reply is the same as for a new file: ``{"folder", "files_seen",
    "stored", "failed", "failures": [{"file", "reason"}]}`` — no asset ids,
    no ingest counts, nothing that says whether the bytes were known. An
    admin (who may read everything) gets ``{"folder", "ingest",
    "asset_ids", "already_in_library", "refused": [{"file", "reason"}]}``
    (failure and warning paths as file names only, ``ingest.root`` relative
    to the home). No reply names a server folder.

    Raises:
        HTTPException 400: no files, or a bad file name; 413: too many files,
            one over :data:`MAX_UPLOAD_BYTES`, or over the user's quota.
    """
    limits = limits or WebLimits()
    with lend_user_library(request) as lib:
        staged = _stage_upload(lib, request.state.principal, files, limits)
    with ExitStack() as stack:
        try:
            own = stack.enter_context(request.app.state.pool.outside())
        except BaseException:
            shutil.rmtree(staged.folder, ignore_errors=True)    # never left on disk unread
            raise
        return _ingest_upload(own, staged, limits)


@dataclass
class _Staged:
    """An upload written to disk and checked, ready to ingest."""

    home: Path
    folder: Path
    digests: dict[str, bytes]
    refused: list[dict[str, str]]
    member: bool
    user_name: str | None
    prefixes: list[str]

    def unpathed(self, text: str) -> str:
        """A reason without the server's folders (a library's message may
        name the file by its full path)."""
        for prefix in self.prefixes:
            text = text.replace(prefix, "")
        return text

    def refuse(self, name: str, reason: str) -> None:
        (self.folder / name).unlink(missing_ok=True)
        self.refused.append({"file": name, "reason": self.unpathed(reason)})


def _stage_upload(lib: Library, principal: Any, files: list[UploadFile],
                  limits: WebLimits) -> _Staged:
    """The part of :func:`upload` that needs the user's pooled Library:
    quota, writing, types, sidecar shapes, pixels from the headers, and (for
    a member) the known-bytes rule."""
    if not files:
        raise HTTPException(400, "no files in the upload")
    if len(files) > MAX_UPLOAD_FILES:
        raise HTTPException(413, f"at most {MAX_UPLOAD_FILES} files per upload")
    names = [safe_filename(f.filename) for f in files]
    user = lib.user
    member = user is not None and not user.get("admin")
    user_dir = upload_folder_name(principal.name if principal else None)
    root = lib.home / "uploads" / user_dir
    used_bytes, used_files = _usage(root)
    index_terms = 0
    if user is not None and user.get("id") is not None:   # the index it costs
        index_terms = lib.conn.execute(wq.UPLOAD_INDEX_TERMS, {
            "user_id": user["id"], "tenant_id": lib.tenant_id,
            "prefix": str(root.resolve()) + "/"}).fetchone()[0]
        used_bytes += index_terms * INDEX_BYTES_PER_TERM
    if used_files + len(files) > limits.upload_quota_files:
        raise HTTPException(413, f"upload quota: {len(files)} more file(s) would make "
                                 f"{used_files + len(files):,} files, over your quota of "
                                 f"{limits.upload_quota_files:,} files")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = root / f"{stamp}-{secrets.token_hex(3)}"
    folder.mkdir(parents=True)
    digests: dict[str, bytes] = {}
    try:
        seen: dict[str, int] = {}
        total = used_bytes
        for f, name in zip(files, names):
            if name in seen:  # two files of the same name: keep both
                seen[name] += 1
                stem, dot, ext = name.rpartition(".")
                name = f"{stem}-{seen[name]}.{ext}" if dot else f"{name}-{seen[name]}"
            seen.setdefault(name, 0)
            written = 0
            digest = hashlib.sha256()
            with open(folder / name, "wb") as out:
                while chunk := f.file.read(1 << 20):
                    written += len(chunk)
                    total += len(chunk)
                    if written > MAX_UPLOAD_BYTES:
                        raise HTTPException(413, f"{name} is over {MAX_UPLOAD_BYTES:,} bytes")
                    if total > limits.upload_quota_bytes:
                        raised = (f" (counting the {index_terms:,} search terms your uploads "
                                  f"add to the index, {INDEX_BYTES_PER_TERM:,} bytes each)"
                                  if index_terms else "")
                        raise HTTPException(413, f"upload quota: {name} would bring your uploads "
                                                 f"over your quota of "
                                                 f"{limits.upload_quota_bytes:,} bytes{raised}")
                    digest.update(chunk)
                    out.write(chunk)
            digests[name] = digest.digest()
    except HTTPException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    refused: list[dict[str, str]] = []
    prefixes = sorted({str(folder) + "/", str(folder.resolve()) + "/",
                       str(lib.home) + "/", str(lib.home.resolve()) + "/"}, key=len, reverse=True)
    staged = _Staged(lib.home, folder, digests, refused, member,
                     user["name"] if user else None, prefixes)
    refuse = staged.refuse

    # types first (anything else would stay on disk unread), then pixels from
    # the headers, in upload order, before anything is decoded
    images = [n for n in digests if Path(n).suffix.lower() in EXTENSIONS]
    for name in digests:
        suffix = Path(name).suffix.lower()
        if suffix not in EXTENSIONS and suffix != ".xmp":
            refuse(name, f"not an image or sidecar file type ({suffix or 'no extension'})")
    # a sidecar's XML depth, element count and size, before ExifTool parses
    # it: refused by name (for every uploader, whether its image is new or
    # known, so the reply says nothing of the library), the image goes on
    for name in digests:
        if Path(name).suffix.lower() == ".xmp" and (folder / name).exists():
            fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                why = sidecar_shape_problem(fd, name)
            finally:
                os.close(fd)
            if why:
                refuse(name, why)
    budget = limits.upload_pixel_budget
    for name in list(images):
        px = _pixels(folder / name)
        if px is None:
            continue
        if px > limits.upload_max_pixels:
            refuse(name, f"{px:,} pixels is over the limit of {limits.upload_max_pixels:,} "
                         f"pixels per uploaded image")
        elif px > budget:
            refuse(name, f"{px:,} pixels is over what is left ({budget:,}) of the budget of "
                         f"{limits.upload_pixel_budget:,} pixels per upload")
        else:
            budget -= px
            continue
        images.remove(name)
    # a member's file whose bytes already are an asset goes through the
    # ingest's checks like a new one (the word bound among them) and is then
    # left out and removed (never_join: a link or a name outside the upload folder is not followed)
    return staged


def _ingest_upload(owner: Library, staged: _Staged, limits: WebLimits) -> dict[str, Any]:
    """The part of :func:`upload` after the checks, on ``owner`` (the
    unrestricted Library opened for this upload outside the pool): the
    ingest, the grants, the reply."""
    folder, digests, member = staged.folder, staged.digests, staged.member
    refused, refuse, unpathed = staged.refused, staged.refuse, staged.unpathed
    # one ExifTool time budget for the whole request, every batch included
    #
    with ExifToolReader(budget_s=limits.upload_exiftool_budget_s) as reader:
        ingester = Ingester(owner.conn, owner.tenant_id, owner.home,
                            max_pixels=limits.upload_max_pixels, workers=1,
                            match_document_ids=False, exiftool=reader,
                            max_words=limits.upload_max_words, never_join=member)
        summary = ingester.ingest(folder)
    for known in summary.left_known:   # never attach to (or change) another's asset
        path = Path(known)
        for side in _sidecars(folder, path.name):
            side.unlink(missing_ok=True)
        (folder / path.name).unlink(missing_ok=True)
    for failure in summary.failures:   # refused by the ingest: not kept, nor its sidecars
        path = Path(failure.path)
        if path.parent == folder.resolve() or path.parent == folder:
            refuse(path.name, failure.reason)
            if path.suffix.lower() in EXTENSIONS:
                for side in _sidecars(folder, path.name):
                    side.unlink(missing_ok=True)
    rows = owner.conn.execute(wq.RUN_ASSETS, {"tenant_id": owner.tenant_id,
                                              "run_id": summary.run_id}).fetchall()
    new_ids = [r[0] for r in rows if r[1]]
    existing_ids = [r[0] for r in rows if not r[1]]
    if member:
        # granted as its files, never as its assets: a private file with the
        # same bytes ingested later joins the asset without reaching the
        # member (migration 0027)
        for (path,) in owner.conn.execute(wq.RUN_NEW_FILES, {
                "tenant_id": owner.tenant_id, "run_id": summary.run_id}).fetchall():
            owner.grant(staged.user_name, path=path)
        refused_names = {r["file"] for r in refused}
        seen_images = [n for n in digests if Path(n).suffix.lower() in EXTENSIONS]
        return {"folder": str(folder.relative_to(staged.home)), "files_seen": len(seen_images),
                "stored": sum(n not in refused_names for n in seen_images),
                "failed": sum(n in refused_names for n in seen_images),
                "failures": refused}
    # file names only, and the folder relative to the home: no server path
    # in a reply
    ingest = summary.as_dict()
    ingest["root"] = str(folder.relative_to(staged.home))
    for key in ("failures", "warnings"):
        ingest[key] = [{**f, "path": Path(f["path"]).name, "reason": unpathed(f["reason"])}
                       for f in ingest[key]]
    return {"folder": str(folder.relative_to(staged.home)), "ingest": ingest,
            "asset_ids": new_ids + existing_ids, "already_in_library": len(existing_ids),
            "refused": refused}
