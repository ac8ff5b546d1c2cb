"""Search by image on the web (X1): ``GET /api/assets/{id}/similar``,
``POST /api/similar`` (an uploaded picture, not ingested) and the "More like
this" page. Every answer goes through the user's :meth:`Library.as_user`
view: a hidden asset is never a result, never counted, and asking for one
is a 404 like an asset that does not exist."""

from __future__ import annotations

import os
import threading
import tempfile
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, HTTPException, Query, Request, UploadFile
from fastapi.responses import HTMLResponse

from ..library import AssetNotFound, Library
from ..similar.queries import MAX_RADIUS
from ..similar.search import (DEFAULT_RADIUS, NotAnImage, PictureTooLarge, SimilarError,
                              SimilarResult)
from .auth import UserLib
from .service import _relative_paths, shows_server_paths
from .uploads import safe_filename
from .pages import _render

api_router = APIRouter(prefix="/api", tags=["api"])
page_router = APIRouter(include_in_schema=False)
Radius = Annotated[int, Query(ge=0, le=MAX_RADIUS,
                              description="Hamming radius in bits of the 64-bit pHash")]
Limit = Annotated[int, Query(ge=1, le=200)]
Offset = Annotated[int, Query(ge=0, le=1_000_000)]

#: One picture decoded at a time by POST /api/similar (memory bound per
#: process; the app's ``gates.decode`` makes sure no request of one app
#: ever waits for it in a worker thread).
_DECODE_SLOT = threading.Lock()


async def decode_slot(request: Request) -> AsyncIterator[None]:
    """FastAPI dependency: the decode slot of ``POST /api/similar``
    (``app.state.gates.decode``), waited for on the event loop *before* the
    request takes a worker thread or a pooled Library, at most
    ``WebLimits.slot_wait_s`` (then :class:`~loupe.web.admission.Busy`: 503
    with ``Retry-After``). Before, a request took its Library and then
    waited for the slot in a worker thread: 16 pictures at once made every
    other user wait 20 s."""
    async with request.app.state.gates.decode.slot():
        yield


def payload(res: SimilarResult, lib: Library | None = None) -> dict[str, Any]:
    """The API shape: the library's result with its line in words
    (``verdict_text``, :meth:`SimilarResult.sentence`, as ``loupe similar``
    prints it) and each hit's thumbnail URL; a
    member (``lib`` given, not the owner or an admin) sees each path relative
    to the folder it was ingested from, like everywhere else."""
    out = res.as_dict()
    out["verdict_text"] = res.sentence()
    rel = None
    if lib is not None and not shows_server_paths(lib):
        rel = _relative_paths(lib, [h["path"] for h in out["hits"] if h.get("path")])
    for h in out["hits"]:
        h["thumbnail_url"] = f"/api/assets/{h['asset_id']}/thumbnail"
        if rel is not None and h.get("path"):
            h["path"] = rel.get(h["path"], h["path"].rsplit("/", 1)[-1])
    return out


def similar_to_asset(lib: Library, asset_id: int, radius: int, limit: int,
                     offset: int) -> SimilarResult:
    """``lib.similar(asset_id)`` with a hidden or missing asset as a 404."""
    if not 0 < asset_id < 2**63:
        raise HTTPException(404, "no such asset")
    try:
        return lib.similar(asset_id, radius=radius, limit=limit, offset=offset)
    except AssetNotFound:
        raise HTTPException(404, "no such asset") from None
    except SimilarError as exc:
        raise HTTPException(400, str(exc)) from exc


@api_router.get("/assets/{asset_id}/similar",
                responses={400: {"description": "Bad input"},
                           404: {"description": "No such asset visible to this user"}})
def asset_similar(asset_id: int, lib: UserLib, radius: Radius = DEFAULT_RADIUS,
                  limit: Limit = 24, offset: Offset = 0) -> dict:
    """Assets like this one: near-duplicates within ``radius`` bits of its
    perceptual hash (exact, so ``verdict`` is ``complete`` when every asset
    is hashed), fused with the image lane's nearest vectors when an image
    model is installed (``lanes``, ``notices`` say which)."""
    return payload(similar_to_asset(lib, asset_id, radius, limit, offset), lib)


@api_router.post("/similar",
                 responses={400: {"description": "Bad input"},
                            413: {"description": "The file is too large"},
                            503: {"description": "The decode slot stayed busy: wait "
                                                 "Retry-After seconds"},
                            415: {"description": "The file is not an image Loupe can read"}})
def upload_similar(_slot: Annotated[None, Depends(decode_slot)], lib: UserLib, request: Request,
                   file: Annotated[UploadFile, File(description="an image file")],
                   radius: Radius = DEFAULT_RADIUS, limit: Limit = 24,
                   offset: Offset = 0) -> dict:
    """Assets like an uploaded picture. The file is read, hashed and
    discarded: it is not ingested. Bounds (``loupe serve`` limits), each
    checked before the work it guards: the body at most
    ``similar_max_bytes`` (413, before it is read past the bound); width x
    height read from the header at most ``upload_max_pixels``, and at most
    ``similar_max_pixels`` unless a JPEG (decoded at reduced scale): 413
    naming the pixel count and the bound, nothing decoded. Not an image: 415
    with the reason. One picture is handled at a time (:func:`decode_slot`,
    waited for before a worker thread or database connection is taken; 503
    with ``Retry-After`` after ``slot_wait_s``)."""
    name = safe_filename(file.filename) if file.filename else "upload"
    limits = request.app.state.limits
    fd, tmp = tempfile.mkstemp(prefix="loupe-similar-")
    try:
        written = 0
        with os.fdopen(fd, "wb") as out:
            while chunk := file.file.read(1 << 20):
                written += len(chunk)
                if written > limits.similar_max_bytes:
                    raise HTTPException(413, f"{name} is over {limits.similar_max_bytes:,} "
                                             f"bytes, the limit for a picture to search by")
                out.write(chunk)
        # the pixel bounds come from the header, before decoding; then one
        # decode at a time across requests (a 150-megapixel PNG of 0.4 MB
        # took ~1 GB to decode; three at once took the server to 4 GB)
        try:
            with _DECODE_SLOT:
                res = lib.similar(file=tmp, radius=radius, limit=limit, offset=offset,
                                  max_pixels=limits.upload_max_pixels,
                                  full_decode_pixels=limits.similar_max_pixels)
        except PictureTooLarge as exc:
            raise HTTPException(413, str(exc).replace(tmp, name)) from exc
        except NotAnImage as exc:
            raise HTTPException(415, str(exc).replace(tmp, name)) from exc
        except SimilarError as exc:
            raise HTTPException(400, str(exc).replace(tmp, name)) from exc
    finally:
        os.unlink(tmp)
    res.query = f"upload {name}"
    return payload(res, lib)


@page_router.get("/assets/{asset_id}/similar", response_class=HTMLResponse)
def similar_page(request: Request, asset_id: int, lib: UserLib,
                 radius: Radius = DEFAULT_RADIUS) -> HTMLResponse:
    """The "More like this" page of an asset: its near-duplicates and look-alikes."""
    try:
        res = similar_to_asset(lib, asset_id, radius, 48, 0)
    except HTTPException:
        return _render(request, "error.html", status=404, title="Not found",
                       message=f"There is no asset {asset_id} you can see.")
    return _render(request, "similar.html", asset_id=asset_id, result=payload(res, lib))
