"""People on the web (X2): the REST API (``/api/people``,
``/api/faces/{id}/crop``) and the People pages. Everything goes through the
user's :meth:`Library.as_user` view: a member sees only people with a face on
an asset it may read, counts of those assets only, and a crop of a face on
an asset it may not read is a 404 like a face that does not exist. Naming,
merging, splitting, hiding and "not this person" are for admins (403)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

from ..access.users import AccessError
from ..faces.people import MAX_NAME, PeopleError
from ..library import AssetNotFound, Library
from .auth import user_library
from .pages import _render

api_router = APIRouter(prefix="/api", tags=["api"])
page_router = APIRouter(include_in_schema=False)
UserLib = Annotated[Library, Depends(user_library)]
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Bad input"}, 403: {"description": "Not an admin"},
    404: {"description": "No such person or face visible to this user"}}
#: Faces moved by one split (a request bound, checked before any work).
MAX_SPLIT = 1000


class NameIn(BaseModel):
    """``name``: the confirmed name, or null to remove it."""
    name: str | None = Field(default=None, max_length=MAX_NAME * 4)


class MergeIn(BaseModel):
    into: int = Field(ge=1, lt=2**63)


FaceId = Annotated[int, Field(ge=1, lt=2**63)]


class SplitIn(BaseModel):
    faces: list[FaceId] = Field(min_length=1, max_length=MAX_SPLIT)


class HideIn(BaseModel):
    hidden: bool = True


def _call(fn):
    """Run a people call: 404 for an unknown (or unreadable) person or face,
    400 for bad input, 403 for a member asking for a change."""
    try:
        return fn()
    except AccessError as exc:
        raise HTTPException(403, str(exc)) from exc
    except AssetNotFound:
        raise HTTPException(404, "no such asset") from None
    except PeopleError as exc:
        raise HTTPException(404 if str(exc).startswith(("no person", "no face", "face "))
                            else 400, str(exc)) from exc


def _with_urls(p: dict[str, Any]) -> dict[str, Any]:
    out = dict(p)
    if out.get("cover_face"):
        out["cover_url"] = f"/api/faces/{out['cover_face']}/crop"
    for f in out["faces"] if isinstance(out.get("faces"), list) else []:
        f["crop_url"] = f"/api/faces/{f['id']}/crop"
    return out


def _id(value: int) -> int:
    if not 0 < value < 2**63:
        raise HTTPException(404, "no such person or face")
    return value


@api_router.get("/people", responses=ERRORS)
def people_list(lib: UserLib, hidden: bool = False) -> list[dict]:
    """People with faces on assets this user may read (named first), with
    counts of those assets only and a cover crop URL."""
    return [_with_urls(p) for p in lib.people(hidden=hidden)]


@api_router.get("/people/{person_id}", responses=ERRORS)
def person_show(person_id: int, lib: UserLib) -> dict:
    """One person: its faces (with crop URLs) and assets this user may read."""
    return _with_urls(_call(lambda: lib.person(_id(person_id))))


@api_router.get("/assets/{asset_id}/faces", responses=ERRORS)
def asset_faces(asset_id: int, lib: UserLib) -> list[dict]:
    """The faces of one asset: box (normalised x, y, w, h on the picture as
    displayed), person id and label ("unnamed person #n" until a person names
    it), confirmed, crop URL. 404 when the asset is not visible to this user."""
    return [{**f, "crop_url": f"/api/faces/{f['id']}/crop"}
            for f in _call(lambda: lib.asset_faces(_id(asset_id)))]


@api_router.get("/faces/{face_id}/crop", response_class=Response, responses=ERRORS)
def face_crop(face_id: int, lib: UserLib) -> Response:
    """A face's JPEG crop (404 when its asset is not visible to this user)."""
    data = _call(lambda: lib.face_crop(_id(face_id)))
    return Response(data, media_type="image/jpeg",
                    headers={"Cache-Control": "private, max-age=300"})


@api_router.post("/people/{person_id}/name", responses=ERRORS)
def person_name(person_id: int, body: NameIn, lib: UserLib) -> dict:
    """Confirm a name (null: remove it); searchable on every picture of the
    person when this answers. Admins only."""
    return _call(lambda: lib.name_person(_id(person_id), body.name))


@api_router.post("/people/{person_id}/merge", responses=ERRORS)
def person_merge(person_id: int, body: MergeIn, lib: UserLib) -> dict:
    """Merge this person into ``into``. Admins only."""
    return _call(lambda: lib.merge_people(_id(person_id), body.into))


@api_router.post("/people/{person_id}/split", responses=ERRORS)
def person_split(person_id: int, body: SplitIn, lib: UserLib) -> dict:
    """Move ``faces`` of this person to a new unnamed person. Admins only."""
    return _call(lambda: lib.split_person(_id(person_id), body.faces))


@api_router.post("/people/{person_id}/hide", responses=ERRORS)
def person_hide(person_id: int, body: HideIn, lib: UserLib) -> dict:
    """Hide (or show again) a person. Admins only."""
    return _call(lambda: lib.hide_person(_id(person_id), body.hidden))


@api_router.post("/faces/{face_id}/reject", responses=ERRORS)
def face_reject(face_id: int, lib: UserLib) -> dict:
    """"Not this person": the face leaves its person for good. Admins only."""
    return _call(lambda: lib.reject_face(_id(face_id)))


# -- pages ------------------------------------------------------------------------------

def _admin(lib: Library) -> bool:
    return lib.viewer.see_all


@page_router.get("/people", response_class=HTMLResponse)
def people_page(request: Request, lib: UserLib) -> HTMLResponse:
    return _render(request, "people.html", people=[_with_urls(p) for p in lib.people()],
                   admin=_admin(lib), faces=lib.faces_status() if _admin(lib) else None)


@page_router.get("/people/{person_id}", response_class=HTMLResponse)
def person_page(request: Request, person_id: int, lib: UserLib) -> HTMLResponse:
    person = _with_urls(_call(lambda: lib.person(_id(person_id))))
    others = [p for p in lib.people() if p["id"] != person_id] if _admin(lib) else []
    return _render(request, "person.html", person=person, others=others, admin=_admin(lib))


def _back(person_id: int) -> RedirectResponse:
    return RedirectResponse(f"/people/{person_id}", status_code=303)


@page_router.post("/people/{person_id}/name")
def person_name_form(person_id: int, lib: UserLib,
                     name: Annotated[str, Form(max_length=MAX_NAME * 4)] = "",
                     back: Annotated[str, Form(max_length=10)] = "person"):
    _call(lambda: lib.name_person(_id(person_id), name if name.strip() else None))
    return RedirectResponse("/people", status_code=303) if back == "list" else _back(person_id)


@page_router.post("/people/{person_id}/merge")
def person_merge_form(person_id: int, lib: UserLib, into: Annotated[int, Form()]):
    _call(lambda: lib.merge_people(_id(person_id), _id(into)))
    return _back(into)


@page_router.post("/people/{person_id}/split")
def person_split_form(person_id: int, lib: UserLib,
                      face: Annotated[list[int] | None, Form()] = None):
    faces = face or []
    if not faces or len(faces) > MAX_SPLIT or not all(0 < f < 2**63 for f in faces):
        raise HTTPException(400, f"choose 1 to {MAX_SPLIT} faces to split off")
    out = _call(lambda: lib.split_person(_id(person_id), faces))
    return _back(out["id"])


@page_router.post("/people/{person_id}/hide")
def person_hide_form(person_id: int, lib: UserLib,
                     hidden: Annotated[str, Form(max_length=5)] = "true"):
    _call(lambda: lib.hide_person(_id(person_id), hidden == "true"))
    return RedirectResponse("/people", status_code=303)


@page_router.post("/faces/{face_id}/reject")
def face_reject_form(face_id: int, lib: UserLib, person: Annotated[int, Form()]):
    _call(lambda: lib.reject_face(_id(face_id)))
    return _back(person) if _people_has(lib, person) else RedirectResponse("/people", 303)


def _people_has(lib: Library, person_id: int) -> bool:
    try:
        lib.person(person_id)
        return True
    except PeopleError:
        return False
