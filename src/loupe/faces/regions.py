"""Names written in files become people without a detector (migration
0047): each named face region of a file (MWG / Microsoft regions, read at
ingest into ``metadata["regions"]``) that no face of the asset covers
becomes a face of its own — the region's box, a crop cut from it, no
descriptor — and :func:`loupe.faces.people.cluster` puts it in the person
of that name, confirmed by the file (``from_file``), as it does for a
detected face under a named region. So with face detection off, or where
the detector misses the face (a profile, a small face), the name a person
wrote is still a person, and ``--person NAME`` finds the picture.

A detector's scan of the asset later replaces these faces (the detected face
under the region keeps its name) and reads the regions again, so a region
the detector missed is kept as a region face. A region's values are a
file's, hence hostile: a box outside [0, 1] or without area, or a name a
person could not type into Loupe (:func:`loupe.faces.people.check_name`),
makes no face."""

from __future__ import annotations

from typing import Any

import psycopg

from ..assets.view import open_asset_bytes
from ..ingest.image import DEFAULT_MAX_PIXELS
from . import detect
from . import queries as q
from .people import REGION_DETECTOR, REGION_OVERLAP, PeopleError, check_name, cluster

#: The pseudo-detector of faces from file regions (``face.detector`` and the
#: ``face_scan`` row that says an asset's regions were read).
DETECTOR = REGION_DETECTOR
#: Assets read per batch (one transaction each).
BATCH = 32


def region_box(region: Any) -> tuple[tuple[float, float, float, float], str] | None:
    """``((x, y, w, h), name)`` of a named region of a file, normalised,
    top-left, clipped to the picture; None when it is not a usable face
    region (no name a person could type, no box, no area inside the picture).

        >>> region_box({"name": " Jane Doe ", "x": 0.9, "y": 0.1, "w": 0.2, "h": 0.3})
        ((0.9, 0.1, 0.1, 0.3), 'Jane Doe')
    """
    if not isinstance(region, dict):
        return None
    try:
        name = check_name(str(region.get("name") or "").strip() or None)
        x, y, w, h = (float(region[k]) for k in ("x", "y", "w", "h"))
    except (PeopleError, KeyError, TypeError, ValueError):
        return None
    if name is None or not all(v == v and abs(v) < 10 for v in (x, y, w, h)):   # NaN, huge
        return None
    x0, y0 = max(0.0, x), max(0.0, y)
    x1, y1 = min(1.0, x + w), min(1.0, y + h)
    if x1 - x0 <= 1e-4 or y1 - y0 <= 1e-4:
        return None
    r = lambda v: round(v, 6)  # noqa: E731
    return (r(x0), r(y0), r(x1 - x0), r(y1 - y0)), name


def _crop(conn: psycopg.Connection, asset_id: int,
          boxes: list[tuple[float, float, float, float]], max_pixels: int
          ) -> tuple[list[bytes | None], list[int]]:
    """The JPEG crop and the shorter side in pixels of each box, from the
    asset's own bytes (None and 0 when they cannot be read)."""
    try:
        fh, _path = open_asset_bytes(conn, asset_id)
        with fh:
            im = detect.open_oriented(fh, max_pixels)
    except Exception:  # noqa: BLE001 - an unreadable file: the faces without crops
        return [None] * len(boxes), [0] * len(boxes)
    crops, sizes = [], []
    for x, y, w, h in boxes:
        x0, y0 = round(x * im.width), round(y * im.height)
        x1, y1 = max(x0 + 1, round((x + w) * im.width)), max(y0 + 1, round((y + h) * im.height))
        crops.append(detect._crop(im, x0, y0, x1, y1))
        sizes.append(min(x1 - x0, y1 - y0))
    return crops, sizes


def faces_from_regions(conn: psycopg.Connection, tenant_id: int, languages: list[str], *,
                       max_pixels: int = DEFAULT_MAX_PIXELS) -> dict[str, int]:
    """Read the named face regions of every asset whose regions were not
    read yet, add a face for each region no face of the asset covers (IoU
    below :data:`loupe.faces.people.REGION_OVERLAP`), then cluster (each
    joins, confirmed, the visible person of its name, or opens one);
    resumable. Returns ``{"assets", "faces", "people"}``: assets read, faces
    added, people opened."""
    after = assets = added = 0
    while True:
        rows = conn.execute(q.ASSETS_WITH_REGIONS, {"tenant_id": tenant_id, "after": after,
                                                    "detector": DETECTOR, "batch": BATCH}
                            ).fetchall()
        if not rows:
            break
        for asset_id, regions, known in rows:
            after = asset_id
            named = [b for b in (region_box(r) for r in regions or []) if b]
            new = [(box, name) for box, name in named
                   if all(detect.overlap(box, k) < REGION_OVERLAP for k in known)]
            crops, sizes = _crop(conn, asset_id, [b for b, _ in new], max_pixels) if new \
                else ([], [])
            with conn.transaction():
                for (box, name), crop, size in zip(new, crops, sizes):
                    conn.execute(q.INSERT_FACE, {
                        "person_id": None, "confirmed": False, "from_file": False,
                        "tenant_id": tenant_id, "asset_id": asset_id, "x": box[0], "y": box[1],
                        "w": box[2], "h": box[3], "descriptor": None, "detector": DETECTOR,
                        "size_px": size, "blur": 0.0, "score": 0.0, "crop": crop,
                        "region_name": name})
                conn.execute(q.STORE_SCAN, {"asset_id": asset_id, "tenant_id": tenant_id,
                                            "detector": DETECTOR, "faces": len(new),
                                            "skipped": None})
            assets += 1
            added += len(new)
    opened = cluster(conn, tenant_id, languages)
    return {"assets": assets, "faces": added, "people": opened}
