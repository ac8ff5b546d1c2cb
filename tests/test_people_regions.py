"""Names written in files become people without a detector: a named face
region (MWG) of a file is a confirmed face of the person of that name — its
box, a crop from it, no descriptor — with detection off, and where the
detector misses the face; a detected face under the region stays the only
face there. Real files (Pillow, ExifTool), real database."""

from __future__ import annotations

from pathlib import Path

import pytest

from imaging import exiftool_write, make_image
from loupe.faces.regions import region_box

FACES = Path(__file__).parent / "fixtures" / "faces"
# obama2.jpg's face as dlib finds it (x, y, w, h, normalised; tests/test_people.py)
OBAMA2 = (0.268, 0.24, 0.431, 0.228)


def _region(path: Path, *regions: tuple[str, tuple[float, float, float, float]]) -> Path:
    """Write MWG face regions (centre + size, as MWG stores them) into ``path``."""
    items = ",".join("{Area={" f"X={x + w / 2:.3f},Y={y + h / 2:.3f},W={w:.3f},H={h:.3f},"
                     f"Unit=normalized}},Type=Face,Name={name}}}"
                     for name, (x, y, w, h) in regions)
    exiftool_write(path, f"-XMP-mwg-rs:RegionInfo={{RegionList=[{items}]}}")
    return path


def test_a_region_box_is_checked_and_clipped():
    assert region_box({"name": "Jane Doe", "x": 0.9, "y": 0.1, "w": 0.2, "h": 0.3}) == \
        ((0.9, 0.1, 0.1, 0.3), "Jane Doe")
    for bad in ({"name": "Jane", "x": 1.2, "y": 0, "w": 0.1, "h": 0.1},     # outside
                {"name": "Jane", "x": 0.1, "y": 0.1, "w": 0, "h": 0.1},     # no area
                {"name": "Jane\u202e", "x": 0.1, "y": 0.1, "w": 0.1, "h": 0.1},  # direction
                {"name": "", "x": 0.1, "y": 0.1, "w": 0.1, "h": 0.1},
                {"name": "Jane", "x": "nan", "y": 0.1, "w": 0.1, "h": 0.1},
                {"name": "Jane", "y": 0.1, "w": 0.1, "h": 0.1}, "Jane"):
        assert region_box(bad) is None, bad


def test_names_in_files_become_people_without_detection(lib, photos):
    _region(make_image(photos / "shuttle" / "crew.jpg", size=(400, 300)),
                  ("Eileen Collins", (0.1, 0.2, 0.25, 0.3)), ("Ghost", (0.5, 0.2, 0.0, 0.2)))
    make_image(photos / "other" / "plain.jpg", size=(80, 60))
    lib.ingest(photos)
    lib.create_user("alice", "alice-password")
    lib.grant("alice", collection="other")
    assert lib.file_names_to_people() == {"assets": 1, "faces": 1, "people": 1}
    [person] = lib.people()
    assert (person["label"], person["assets"]) == ("Eileen Collins", 1)
    [face] = lib.person(person["id"])["faces"]
    assert lib.face_crop(face["id"])[:2] == b"\xff\xd8"   # a JPEG cut from the region
    row = lib.conn.execute("SELECT box_x, box_y, box_w, box_h, confirmed, from_file, detector, "
                           "descriptor IS NULL, size_px FROM face").fetchone()
    assert row == pytest.approx((0.1, 0.2, 0.25, 0.3, True, True, "file region", True, 90),
                                abs=1e-3)
    res = lib.search("", filters={"person": "Eileen Collins"})
    assert (res.total, res.hits[0].title) == (1, "crew.jpg")
    assert lib.search("collins").total == 1
    # read once: nothing new the second time
    assert lib.file_names_to_people() == {"assets": 0, "faces": 0, "people": 0}
    # a member who may not read the picture learns no name
    assert lib.as_user("alice").people() == []


def test_a_detected_face_under_a_region_is_the_only_face_and_a_missed_one_is_kept(lib, photos):
    from loupe.faces import detect

    try:
        detect.load_model()
    except detect.FacesUnavailable as exc:
        pytest.skip(str(exc))
    pic = photos / "obama2.jpg"
    pic.write_bytes((FACES / "obama2.jpg").read_bytes())
    # one region over the face dlib finds, one over the background it does not
    _region(pic, ("Barack Obama", OBAMA2), ("Michelle Obama", (0.02, 0.75, 0.15, 0.2)))
    lib.ingest(photos)
    out = lib.faces()
    assert (out["faces"], out["regions"]["faces"]) == (1, 1)
    faces = lib.conn.execute("SELECT detector <> 'file region', region_name, confirmed FROM face "
                             "ORDER BY region_name").fetchall()
    assert faces == [(True, "Barack Obama", True), (False, "Michelle Obama", True)]
    assert sorted(p["label"] for p in lib.people()) == ["Barack Obama", "Michelle Obama"]
    assert lib.search("", filters={"person": "Michelle Obama"}).total == 1
