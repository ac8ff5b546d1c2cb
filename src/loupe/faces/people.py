"""Faces and people: scanning, incremental clustering, and naming by people
only (X2).

* :func:`scan` finds the faces of assets not yet scanned by the installed
  detector version (resumable: one ``face_scan`` row per asset, committed in
  batches), skipping tiny pictures and clip art by rule
  (:func:`loupe.faces.detect.skip_reason`), links each face to a name a
  person wrote over it in the file (MWG / Microsoft regions overlapping the
  box, :data:`REGION_OVERLAP`), then clusters the new faces.
* :func:`cluster` is incremental: each face without a person joins the
  person of its nearest clustered face when that face is within
  :data:`SAME_PERSON_DISTANCE`, unless it was said to be "not this person";
  otherwise it opens a new person ("unnamed person #n"). A face carrying a
  region name joins the (visible) person of that name, confirmed (a person
  wrote it); else it opens a person with that name. A name from a file never
  renames a person, and a face placed by its file's name draws another face
  into its person only if everyone who may read its asset may read the
  other's (:data:`loupe.faces.queries.NEAREST_CLUSTERED`; docs/security.md,
  "Names written in files"). Named faces are clustered first.
* Only confirmed faces of named, not hidden people give their asset's search
  document that name (:data:`loupe.document.compile.ASSET_CONFIRMED_PEOPLE`).
  :func:`name` sets a name and confirms every face of the person, and
  recompiles the documents of all its assets in the same transaction, whose
  lexical index triggers keep the search statistics; naming ``None``
  unconfirms and removes the name the same way. Faces that join a named
  person later wait, unconfirmed, until a person confirms them (naming again).

Changes to people (name, merge, split, hide, reject) are for the owner and
admins; lists, faces and crops are for everyone, limited to assets the
viewer may read (:mod:`loupe.faces.queries`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from ..assets.view import open_asset_bytes
from ..document.compile import rebuild_documents
from ..ingest.image import DEFAULT_MAX_PIXELS
from ..terminal import unsafe
from . import detect
from . import queries as q

#: Two dlib descriptors closer than this (Euclidean) are the same person:
#: Davis King's published guidance for dlib_face_recognition_resnet_model_v1
#: ("uses a threshold of 0.6", dlib/examples/dnn_face_recognition_ex.cpp and
#: the dlib blog post of 2017-02-12; face_recognition's default tolerance).
#: Checked on the face_recognition 1.3.0 test portraits (docs/people.md): the
#: same man 0.06-0.44 apart, two different men 0.81-0.88.
SAME_PERSON_DISTANCE = 0.6
#: Nearest clustered faces looked at when a face is clustered.
NEIGHBOURS = 5
#: Intersection over union above which a named region of the file is the
#: detected face (regions drawn by hand are looser than the detector's box;
#: PASCAL VOC's 0.5 is too strict for them).
REGION_OVERLAP = 0.3
#: Assets scanned per transaction (a killed scan loses at most one batch).
SCAN_BATCH = 8
#: Longest accepted person name (characters), also enforced by migration 0022.
MAX_NAME = 200


class PeopleError(ValueError):
    """A bad name, an unknown person or face, or a split that moves nothing."""


def _region_name(box: tuple[float, float, float, float], regions: list[dict[str, Any]]
                 ) -> str | None:
    """The name of the file's region that overlaps ``box`` most (IoU at
    least :data:`REGION_OVERLAP`), or None. A name that a person could not
    type into Loupe (:func:`check_name`: too long, or holding a control,
    direction or invisible character) names nothing: the face is clustered
    as an unnamed one (a file's strings are hostile)."""
    best, name = REGION_OVERLAP, None
    for r in regions:
        o = detect.overlap(box, r)
        if o >= best:
            best, name = o, str(r.get("name") or "").strip() or None
    try:
        return check_name(name)
    except PeopleError:
        return None


#: Intersection over union above which a face found by a new detector version
#: is the face an older version found there (it keeps its person).
SAME_FACE_OVERLAP = 0.5


def _inherit(box: tuple[float, float, float, float],
             old: list[tuple[dict[str, float], int, bool, bool]]
             ) -> tuple[int | None, bool, bool]:
    """``(person_id, confirmed, from_file)`` of the old face at the same
    place, or ``(None, False, False)``."""
    best, out = SAME_FACE_OVERLAP, (None, False, False)
    for region, person_id, confirmed, from_file in old:
        o = detect.overlap(box, region)
        if o >= best:
            best, out = o, (person_id, confirmed, from_file)
    return out


def scan(conn: psycopg.Connection, tenant_id: int, languages: list[str], *,
         progress: Callable[[int, int], None] | None = None, limit: int | None = None,
         max_pixels: int = DEFAULT_MAX_PIXELS) -> dict[str, int]:
    """Find the faces of every asset the installed detector has not scanned
    yet (at most ``limit``), then :func:`cluster` them; resumable.
    :meth:`loupe.Library.faces` is for the owner and admins (AccessError).

    Returns ``{"scanned", "faces", "skipped", "failed", "pending", "people"}``
    (pending: assets still left; people: new people opened).

    Raises:
        loupe.faces.detect.FacesUnavailable: dlib or its models are missing.
    """
    model = detect.load_model()
    detector = model.version
    total = conn.execute(q.PENDING_COUNT, {"tenant_id": tenant_id,
                                           "detector": detector}).fetchone()[0]
    todo = total if limit is None else min(total, limit)
    done = found = skipped = failed = 0
    after = 0
    if progress:
        progress(0, todo)
    while done < todo:
        rows = conn.execute(q.PENDING, {"tenant_id": tenant_id, "after": after,
                                        "detector": detector,
                                        "batch": min(SCAN_BATCH, todo - done)}).fetchall()
        if not rows:
            break
        results = []
        for asset_id, path, _w, _h in rows:
            try:
                fh, path = open_asset_bytes(conn, asset_id)   # the asset's own bytes, never a swapped file
                with fh:
                    im = detect.open_oriented(fh, max_pixels)
                reason = detect.skip_reason(im)
                faces = [] if reason else model.faces(im)
            except Exception as exc:  # one bad file never stops the scan
                reason, faces = f"unreadable: {type(exc).__name__}: {exc}"[:1000], []
                failed += 1
            results.append((asset_id, faces, reason))
        with conn.transaction():
            rescanned = []   # assets that had faces: their confirmed names may change
            for asset_id, faces, reason in results:
                regions = conn.execute(q.ASSET_REGIONS, {"asset_id": asset_id}).fetchone()[0]
                old = [({"x": r[0], "y": r[1], "w": r[2], "h": r[3]}, r[4], r[5], r[6])
                       for r in conn.execute(q.OLD_FACES, {"asset_id": asset_id})]
                conn.execute(q.DELETE_OLD_FACES, {"asset_id": asset_id})
                for f in faces:
                    person_id, confirmed, from_file = _inherit(f.box, old)
                    conn.execute(q.INSERT_FACE, {
                        "person_id": person_id, "confirmed": confirmed, "from_file": from_file,
                        "tenant_id": tenant_id, "asset_id": asset_id, "x": f.box[0],
                        "y": f.box[1], "w": f.box[2], "h": f.box[3],
                        "descriptor": str(f.descriptor), "detector": detector,
                        "size_px": f.size_px, "blur": f.blur, "score": f.score,
                        "crop": f.crop,
                        "region_name": _region_name(f.box, regions)})
                if old:
                    rescanned.append(asset_id)
                conn.execute(q.STORE_SCAN, {"asset_id": asset_id, "tenant_id": tenant_id,
                                            "detector": detector, "faces": len(faces),
                                            "skipped": reason})
                found += len(faces)
                skipped += reason is not None
            for asset_id in rescanned:
                rebuild_documents(conn, tenant_id, asset_id, languages)
        after = rows[-1][0]
        done += len(rows)
        if progress:
            progress(done, todo)
    opened = cluster(conn, tenant_id, languages)
    return {"scanned": done, "faces": found, "skipped": skipped - failed, "failed": failed,
            "pending": total - done, "people": opened}


def cluster(conn: psycopg.Connection, tenant_id: int, languages: list[str]) -> int:
    """Give every face without a person one (see the module doc), in one
    transaction, and recompile the documents of assets whose confirmed names
    changed (faces named by a region of their file). Returns the number of
    people opened."""
    opened = 0
    touched: set[int] = set()
    with conn.transaction():
        for face_id, descriptor, region_name in conn.execute(
                q.UNCLUSTERED, {"tenant_id": tenant_id}).fetchall():
            person_id, confirmed = None, False
            near = conn.execute(q.NEAREST_CLUSTERED, {
                "tenant_id": tenant_id, "descriptor": descriptor,
                "face_id": face_id, "k": NEIGHBOURS}).fetchall()
            # (the session's HNSW iterative scan is relaxed_order: take the minimum)
            best = min(near, key=lambda r: r[1]) if near else None
            nearest = best[0] if best and best[1] < SAME_PERSON_DISTANCE else None
            if region_name:
                # a name from a file never renames a person (else
                # a member's upload renamed the owner's unnamed person, hidden
                # pictures included): it joins the person of that very name,
                # or opens its own
                row = conn.execute(q.PERSON_BY_NAME, {"tenant_id": tenant_id,
                                                      "name": region_name}).fetchone()
                if row is None:
                    row = conn.execute(q.NEW_PERSON, {"tenant_id": tenant_id,
                                                      "name": region_name[:MAX_NAME],
                                                      "named_by": "file"}).fetchone()
                    opened += 1
                person_id, confirmed = row[0], True
            else:
                if nearest is not None:
                    person_id = nearest
                else:
                    person_id = conn.execute(q.NEW_PERSON, {"tenant_id": tenant_id,
                                                            "name": None,
                                                            "named_by": None}).fetchone()[0]
                    opened += 1
            conn.execute(q.ASSIGN_FACE, {"face_id": face_id, "person_id": person_id,
                                         "confirmed": confirmed})
            if confirmed:
                touched.add(conn.execute(q.FACE, {"face_id": face_id,
                                                  "tenant_id": tenant_id}).fetchone()[2])
        for asset_id in sorted(touched):
            rebuild_documents(conn, tenant_id, asset_id, languages)
    return opened


def _person(conn: psycopg.Connection, tenant_id: int, person_id: int) -> tuple:
    row = conn.execute(q.PERSON, {"person_id": person_id, "tenant_id": tenant_id}).fetchone()
    if row is None:
        raise PeopleError(f"no person {person_id} in this library")
    return row


def label(number: int, name: str | None) -> str:
    """What a person is called: its confirmed name, else "unnamed person #n"."""
    return name if name else f"unnamed person #{number}"


def people(conn: psycopg.Connection, tenant_id: int, viewer: dict[str, Any], *,
           hidden: bool = False, limit: int = 500) -> list[dict[str, Any]]:
    """People with at least one face on an asset the viewer may read:
    ``[{"id", "number", "name", "label", "hidden", "assets", "faces",
    "unconfirmed", "cover_face"}]``, named first, then by assets. Counts are
    of readable assets only. ``hidden``: hidden people too (:meth:`loupe.Library.people`
    grants it to the owner and admins only)."""
    rows = conn.execute(q.PEOPLE, {"tenant_id": tenant_id, "hidden": hidden, "limit": limit,
                                   **viewer}).fetchall()
    return [{"id": r[0], "number": r[1], "name": r[2], "label": label(r[1], r[2]),
             "hidden": r[3], "assets": r[4], "faces": r[5], "unconfirmed": r[6],
             "cover_face": r[7]} for r in rows]


def person(conn: psycopg.Connection, tenant_id: int, viewer: dict[str, Any],
           person_id: int) -> dict[str, Any]:
    """One person and its faces on assets the viewer may read.

    Raises:
        PeopleError: no such person, or none of its faces is readable (the
            two are not told apart).
    """
    row = conn.execute(q.PERSON, {"person_id": person_id, "tenant_id": tenant_id}).fetchone()
    faces = [] if row is None else conn.execute(
        q.PERSON_FACES, {"person_id": person_id, "tenant_id": tenant_id, **viewer}).fetchall()
    if not faces:
        raise PeopleError(f"no person {person_id} in this library")
    # a member sees the name only through a confirmed face it may read
    name = row[2] if viewer.get("see_all") or any(f[8] for f in faces) else None
    return {"id": row[0], "number": row[1], "name": name, "label": label(row[1], name),
            "hidden": row[3], "named_by": row[4] if viewer.get("see_all") else None,
            "assets": sorted({f[1] for f in faces}),
            "faces": [{"id": f[0], "asset_id": f[1], "box": [f[2], f[3], f[4], f[5]],
                       "size_px": f[6], "blur": f[7], "score": f[10], "confirmed": f[8],
                       # a file's words: shown to those who see every file
                       "region_name": f[9] if viewer.get("see_all") else None}
                      for f in faces]}


def asset_faces(conn: psycopg.Connection, tenant_id: int, viewer: dict[str, Any],
                asset_id: int) -> list[dict[str, Any]]:
    """The faces of one asset the viewer may read (none when it may not),
    with their people's labels. :meth:`loupe.Library.asset_faces` first
    raises AssetNotFound for an asset that does not exist or is not readable."""
    return [{"id": r[0], "person_id": r[1], "label": label(r[2], r[3]) if r[1] else None,
             "confirmed": r[4], "box": [r[5], r[6], r[7], r[8]]}
            for r in conn.execute(q.ASSET_FACES, {"asset_id": asset_id, "tenant_id": tenant_id,
                                                  **viewer})]


def crop(conn: psycopg.Connection, tenant_id: int, viewer: dict[str, Any],
         face_id: int) -> bytes:
    """A face's JPEG crop.

    Raises:
        PeopleError: no such face, or its asset is not readable by the viewer.
    """
    row = conn.execute(q.FACE_CROP, {"face_id": face_id, "tenant_id": tenant_id,
                                     **viewer}).fetchone()
    if row is None or row[0] is None:
        raise PeopleError(f"no face {face_id} in this library")
    return bytes(row[0])


def _rebuild(conn: psycopg.Connection, tenant_id: int, languages: list[str],
             asset_ids: set[int]) -> None:
    for asset_id in sorted(asset_ids):
        rebuild_documents(conn, tenant_id, asset_id, languages)


def _assets(conn: psycopg.Connection, person_id: int) -> set[int]:
    return {r[0] for r in conn.execute(q.PERSON_ASSETS, {"person_id": person_id})}


def check_name(name: str | None) -> str | None:
    """``name`` stripped, or None to unname.

    Raises:
        PeopleError: empty after stripping, longer than :data:`MAX_NAME`, or
            holding a control, line-separator, direction or invisible
            character (:func:`loupe.terminal.unsafe`, as keywords are
            checked in bulk actions).
    """
    if name is None:
        return None
    name = " ".join(name.split())
    if not name:
        raise PeopleError("a person's name may not be empty")
    if len(name) > MAX_NAME:
        raise PeopleError(f"a person's name is at most {MAX_NAME} characters "
                          f"(this one has {len(name)})")
    if any(unsafe(c) for c in name):
        raise PeopleError("a person's name may not hold control or direction characters")
    return name


def name(conn: psycopg.Connection, tenant_id: int, languages: list[str], person_id: int,
         new_name: str | None, *, by: str) -> dict[str, Any]:
    """Confirm ``new_name`` for a person (or remove its name with None): its
    faces become confirmed (unconfirmed), and every asset holding one gets
    its search documents recompiled — all in one transaction, so the name is
    searchable (or gone) exactly when it commits. Re-naming a person that
    a person already named (a typo fixed, the same name saved again; a name
    from a file does not count) confirms no new face: faces that joined it by clustering since it was named stay
    unconfirmed guesses, so a member never learns the name through them. Returns ``{"id", "label", "assets"}``.

    Raises:
        PeopleError: no such person, or a bad name (:func:`check_name`).
    """
    new_name = check_name(new_name)
    with conn.transaction():
        row = _person(conn, tenant_id, person_id)
        conn.execute(q.SET_NAME, {"person_id": person_id, "name": new_name,
                                  "named_by": by if new_name else None})
        # re-naming: a name a person gave (a name from a file, named_by
        # "file", is no review of the machine's faces)
        if row[2] is not None and row[4] not in (None, "file") and new_name is not None:
            conn.execute(q.RECONFIRM_FACES, {"person_id": person_id})
        else:
            conn.execute(q.CONFIRM_FACES, {"person_id": person_id,
                                           "confirmed": new_name is not None})
        assets = _assets(conn, person_id)
        _rebuild(conn, tenant_id, languages, assets)
    return {"id": person_id, "label": label(row[1], new_name), "assets": len(assets)}


def hide(conn: psycopg.Connection, tenant_id: int, languages: list[str], person_id: int,
         hidden: bool = True) -> dict[str, Any]:
    """Hide a person (left out of lists and search documents) or show it again."""
    with conn.transaction():
        row = _person(conn, tenant_id, person_id)
        conn.execute(q.SET_HIDDEN, {"person_id": person_id, "hidden": hidden})
        assets = _assets(conn, person_id)
        if row[2]:
            _rebuild(conn, tenant_id, languages, assets)
    return {"id": person_id, "label": label(row[1], row[2]), "hidden": hidden}


def merge(conn: psycopg.Connection, tenant_id: int, languages: list[str], src: int,
          dst: int, *, by: str) -> dict[str, Any]:
    """Merge person ``src`` into ``dst``: a person said they are one. The
    result keeps ``dst``'s name, else ``src``'s; when it has one, every face
    is confirmed. ``src``'s "not this person" answers carry over. Documents
    of both people's assets are recompiled in the same transaction.

    Raises:
        PeopleError: unknown person, or ``src == dst``.
    """
    if src == dst:
        raise PeopleError("a person cannot be merged into itself")
    with conn.transaction():
        s, d = _person(conn, tenant_id, src), _person(conn, tenant_id, dst)
        final = d[2] or s[2]
        assets = _assets(conn, src) | _assets(conn, dst)
        conn.execute(q.MOVE_REJECTIONS, {"src": src, "dst": dst})
        conn.execute(q.MOVE_FACES, {"src": src, "dst": dst, "confirmed": final is not None})
        conn.execute(q.DELETE_PERSON, {"person_id": src})
        if final is not None:
            conn.execute(q.SET_NAME, {"person_id": dst, "name": final, "named_by": by})
            conn.execute(q.CONFIRM_FACES, {"person_id": dst, "confirmed": True})
        _rebuild(conn, tenant_id, languages, assets)
    return {"id": dst, "label": label(d[1], final), "assets": len(assets)}


def split(conn: psycopg.Connection, tenant_id: int, languages: list[str], person_id: int,
          face_ids: list[int]) -> dict[str, Any]:
    """Move ``face_ids`` of a person to a new unnamed person (unconfirmed),
    recompiling the documents of their assets in the same transaction.
    Returns ``{"id", "label", "faces"}`` of the new person.

    Raises:
        PeopleError: unknown person, or none of ``face_ids`` is that person's.
    """
    with conn.transaction():
        _person(conn, tenant_id, person_id)
        new_id = conn.execute(q.NEW_PERSON, {"tenant_id": tenant_id, "name": None,
                                             "named_by": None}).fetchone()[0]
        moved = conn.execute(q.MOVE_SOME_FACES, {"src": person_id, "dst": new_id,
                                                 "face_ids": list(face_ids)}).fetchall()
        if not moved:
            raise PeopleError(f"none of faces {face_ids} belongs to person {person_id}")
        conn.execute(q.DROP_EMPTY_PEOPLE, {"tenant_id": tenant_id})
        _rebuild(conn, tenant_id, languages, {r[1] for r in moved})
        number = _person(conn, tenant_id, new_id)[1]
    return {"id": new_id, "label": label(number, None), "faces": len(moved)}


def reject(conn: psycopg.Connection, tenant_id: int, languages: list[str], face_id: int, *,
           by: str) -> dict[str, Any]:
    """"Not this person": the face leaves its person and never joins it
    again (remembered in ``face_rejection``); it is clustered anew at once.
    Returns ``{"face_id", "person_id"}`` (its new person).

    Raises:
        PeopleError: no such face, or it has no person.
    """
    with conn.transaction():
        row = conn.execute(q.FACE, {"face_id": face_id, "tenant_id": tenant_id}).fetchone()
        if row is None or row[1] is None:
            raise PeopleError(f"face {face_id} is not anyone's in this library")
        conn.execute(q.REJECT, {"face_id": face_id, "person_id": row[1], "by": by})
        conn.execute(q.UNASSIGN_FACE, {"face_id": face_id})
        conn.execute(q.DROP_EMPTY_PEOPLE, {"tenant_id": tenant_id})
        rebuild_documents(conn, tenant_id, row[2], languages)
        cluster(conn, tenant_id, languages)
    new = conn.execute(q.FACE, {"face_id": face_id, "tenant_id": tenant_id}).fetchone()
    return {"face_id": face_id, "person_id": new[1]}


def stats(conn: psycopg.Connection, tenant_id: int) -> dict[str, Any]:
    """``{"available", "detector", "reason", "scanned", "skipped", "faces", "people"}``:
    whether face detection is installed (and why not), and the counts."""
    try:
        detector, reason = detect.load_model().version, None
    except detect.FacesUnavailable as exc:
        detector, reason = None, str(exc)
    row = conn.execute(q.STATS, {"tenant_id": tenant_id, "detector": detector}).fetchone()
    return {"available": detector is not None, "detector": detector, "reason": reason,
            "scanned": row[0], "skipped": row[1], "faces": row[2], "people": row[3]}
