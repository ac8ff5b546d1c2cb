"""Names of people that a person wrote into the files (X2):
MWG face regions, IPTC Extension PersonInImage, Microsoft Photo regions,
digiKam and Lightroom people tags — read from real files written by the real
ExifTool, and found by search through the document's ``people`` field."""

from __future__ import annotations

from pathlib import Path

from imaging import exiftool_write, make_image, write_sidecar

from loupe.ingest.exiftool_reader import ExifToolReader
from loupe.ingest.metadata import normalize
from loupe.ingest.metadata_bounds import bound_fields

MWG = ("-XMP-mwg-rs:RegionInfo={AppliedToDimensions={W=200,H=100,Unit=pixel},"
       "RegionList=[{Area={X=0.25,Y=0.5,W=0.2,H=0.4,Unit=normalized},Type=Face,"
       "Name=Jane Okonkwo-Doe},"
       "{Area={X=0.75,Y=0.5,W=0.2,H=0.4,Unit=normalized},Type=Pet,Name=Rex},"
       "{Area={X=150,Y=20,W=20,H=20,Unit=pixel},Type=Face,Name=Ana Lima},"
       "{Area={X=0.5,Y=0.5,W=0.1,H=0.1,Unit=normalized},Type=Face}]}")


def read(path: Path) -> dict:
    with ExifToolReader() as reader:
        return normalize(reader.read([str(path)])[str(path)])


def test_mwg_face_regions_with_names_and_areas(photos: Path):
    img = make_image(photos / "mwg.jpg", size=(200, 100))
    exiftool_write(img, MWG)
    md = read(img)
    # the pet and the unnamed face are not people; the pixel area is normalised
    assert md["people"] == ["Jane Okonkwo-Doe", "Ana Lima"]
    assert md["regions"] == [
        {"name": "Jane Okonkwo-Doe", "x": 0.15, "y": 0.3, "w": 0.2, "h": 0.4, "source": "mwg"},
        {"name": "Ana Lima", "x": 0.7, "y": 0.1, "w": 0.1, "h": 0.2, "source": "mwg"},
    ]


def test_person_in_image_microsoft_digikam_and_lightroom(photos: Path):
    img = make_image(photos / "many.jpg")
    exiftool_write(img, "-XMP-iptcExt:PersonInImage=Bo Chen",
                   "-XMP-iptcExt:PersonInImage=Ana Lima",
                   "-XMP-MP:RegionInfoMP={Regions=[{PersonDisplayName=Carl Berg,"
                   "Rectangle=0.1|, 0.2|, 0.3|, 0.4}]}",
                   "-XMP-digiKam:TagsList=People/Family/Dora Ek",
                   "-XMP-digiKam:TagsList=People/Unknown",
                   "-XMP-digiKam:TagsList=Places/Paris",
                   "-XMP-lr:HierarchicalSubject=People|Eve Fox",
                   "-XMP-lr:HierarchicalSubject=People|bo chen")
    md = read(img)
    assert md["people"] == ["Carl Berg", "Bo Chen", "Ana Lima", "Dora Ek", "Eve Fox"]
    assert md["regions"] == [{"name": "Carl Berg", "x": 0.1, "y": 0.2, "w": 0.3, "h": 0.4,
                              "source": "mp"}]


def test_a_file_without_people_has_no_people_field(photos: Path):
    img = make_image(photos / "plain.jpg")
    exiftool_write(img, "-XMP-dc:Title=Harbour", "-XMP-digiKam:TagsList=Places/Porto")
    assert "people" not in read(img) and "regions" not in read(img)


def test_hostile_region_areas_keep_the_name_and_drop_the_box(photos: Path):
    img = make_image(photos / "odd.jpg")
    exiftool_write(img, "-XMP-mwg-rs:RegionInfo={RegionList=[{Area={X=5,Y=5,W=0.1,H=0.1,"
                        "Unit=normalized},Type=Face,Name=Far Away},"
                        "{Area={X=0.5,Y=0.5,W=0.2,H=0.2,Unit=pixel},Type=Face,Name=No Dims}]}")
    md = read(img)
    assert md["regions"] == [{"name": "Far Away", "source": "mwg"},
                             {"name": "No Dims", "source": "mwg"}]


def test_regions_are_bounded_with_a_reason():
    md = {"regions": [{"name": f"P{i}", "source": "mwg"} for i in range(250)]}
    out, reasons = bound_fields(md)
    assert len(out["regions"]) == 200
    assert reasons == ["regions: 200 of 250 named regions kept (the bound is 200 regions)"]


def test_person_in_image_is_found_by_surname(lib, photos: Path):
    """The issue's new-user check: before, the people field was always empty."""
    img = make_image(photos / "team/offsite.jpg")
    exiftool_write(img, "-XMP-dc:Title=Team offsite",
                   "-XMP-iptcExt:PersonInImage=Ingrid Vasquez-Oyelaran")
    other = make_image(photos / "team/harbour.jpg", color=(10, 90, 200))
    write_sidecar(other, "-XMP-mwg-rs:RegionInfo={RegionList=[{Area={X=0.5,Y=0.5,W=0.2,"
                         "H=0.2,Unit=normalized},Type=Face,Name=Tomasz Wrzesniewski}]}")
    lib.ingest(photos)
    res = lib.search("Oyelaran")
    assert (res.total, [h.title for h in res.hits]) == (1, ["Team offsite"])
    res = lib.search("wrzesniewski")
    assert res.total == 1 and res.hits[0].path.endswith("team/harbour.jpg")
    doc = lib.conn.execute("SELECT people FROM search_document d JOIN asset_file f "
                           "ON f.asset_id = d.asset_id WHERE f.rel_path = 'team/offsite.jpg'"
                           ).fetchone()
    assert doc == ("Ingrid Vasquez-Oyelaran",)


def test_files_ingested_before_names_were_read_are_backfilled(lib, photos: Path):
    """A library from before migration 0022: metadata without people, raw
    ExifTool output read without -struct (flattened MWG lists)."""
    import json
    import subprocess

    from loupe.document.compile import rebuild_documents
    from loupe.faces.backfill import backfill_people

    img = make_image(photos / "old.jpg", size=(200, 100))
    exiftool_write(img, "-XMP-mwg-rs:RegionInfo={RegionList=[{Area={X=0.25,Y=0.5,W=0.2,H=0.4,"
                        "Unit=normalized},Type=Face,Name=Jane Okonkwo-Doe},{Area={X=0.75,Y=0.5,"
                        "W=0.2,H=0.4,Unit=normalized},Type=Pet,Name=Rex}]}",
                   "-XMP-dc:Title=Old picture")
    # flattened lists that do not line up (an unnamed region) are not paired
    odd = make_image(photos / "odd.jpg", size=(200, 100), color=(5, 5, 5))
    exiftool_write(odd, MWG)
    pin = make_image(photos / "pin.jpg", color=(1, 2, 3))
    exiftool_write(pin, "-XMP-iptcExt:PersonInImage=Bo Chen")
    lib.ingest(photos)
    for path in (img, pin, odd):
        flat = json.loads(subprocess.run(["exiftool", "-j", "-G1", "-a", "-n", str(path)],
                                         capture_output=True, check=True).stdout)[0]
        asset = lib.conn.execute(
            "UPDATE asset_file SET metadata = metadata - 'people' - 'regions', "
            "raw_metadata = jsonb_build_object('file', %s::jsonb) WHERE path = %s "
            "RETURNING asset_id", (json.dumps(flat), str(path))).fetchone()[0]
        rebuild_documents(lib.conn, lib.tenant_id, asset, lib.languages())
    assert lib.search("Okonkwo").total == 0 and lib.search("Chen").total == 0
    assert backfill_people(lib.conn) == 2
    assert [h.title for h in lib.search("Okonkwo").hits] == ["Old picture"]
    assert lib.search("Chen").total == 1
    # the pet region (Type=Pet) is still no person
    assert lib.search("Rex").total == 0
    assert lib.search("Lima").total == 0     # odd.jpg: its lists do not line up
    assert backfill_people(lib.conn) == 0    # done once
