"""Where, when (with its zone) and with what a picture was taken, read at
ingest from real files written by ExifTool: coordinates and offline place
words, capture time in its order of sources, rating, label, camera, lens and
exposure (docs/formats.md)."""

from __future__ import annotations

from pathlib import Path

from imaging import exiftool_write, make_image
from mediafiles import make_video

from loupe import Library
from loupe.ingest.capture import SOURCE_ORDER, parse_date, parse_offset
from loupe.ingest.places import haversine_km, place_of, zone_of

SALT_LAKE = ("-GPSLatitude=40.7608", "-GPSLatitudeRef=N", "-GPSLongitude=111.8910",
             "-GPSLongitudeRef=W")
LISBON = ("-GPSLatitude=38.7223", "-GPSLatitudeRef=N", "-GPSLongitude=9.1393",
          "-GPSLongitudeRef=W")


def _file(lib: Library, name: str) -> tuple:
    return lib.conn.execute(
        "SELECT f.metadata, f.gps_lat, f.gps_lon, f.rating, f.captured, f.captured_at, "
        "       f.country FROM asset_file f WHERE f.rel_path = %s", (name,)).fetchone()


def test_dates_and_offsets_parse_as_written():
    from datetime import datetime
    assert parse_date("2024:06:02 00:30:00") == (datetime(2024, 6, 2, 0, 30), None)
    assert parse_date("2024-06-02T00:30:00+01:00") == (datetime(2024, 6, 2, 0, 30), 60)
    assert parse_date("2024:06:01 23:30:00Z") == (datetime(2024, 6, 1, 23, 30), 0)
    assert parse_date("0000:00:00 00:00:00") is None
    assert parse_date("2024:13:01 00:00:00") is None
    assert (parse_offset("-04:00"), parse_offset("+0530"), parse_offset("+15:00")) == \
        (-240, 330, None)
    assert SOURCE_ORDER == ("DateTimeOriginal", "DateCreated", "CreateDate", "GPSDateTime",
                            "QuickTime:CreationDate", "QuickTime:CreateDate")


def test_places_and_zones_are_found_offline():
    salt = place_of(40.7608, -111.8910)
    assert (salt.city, salt.state, salt.country, salt.country_code) == \
        ("Salt Lake City", "Utah", "United States", "US")
    assert place_of(0.0, 0.0) is None            # no fix
    assert place_of(-48.0, -130.0) is None       # the South Pacific: no town within 50 km
    assert zone_of(38.7223, -9.1393) == "Europe/Lisbon"
    assert round(haversine_km(38.7223, -9.1393, 40.4168, -3.7038)) == 502   # Lisbon-Madrid, 502.4 km


def test_a_picture_with_only_coordinates_is_found_by_its_place(lib: Library, photos: Path):
    img = make_image(photos / "img_0001.jpg")
    exiftool_write(img, *SALT_LAKE, "-GPSAltitude=1288", "-GPSAltitudeRef=0",
                   "-GPSImgDirection=270.5")
    make_image(photos / "img_0002.jpg", color=(1, 2, 3))
    lib.ingest(photos)
    md, lat, lon, *_rest, country = _file(lib, "img_0001.jpg")
    assert md["gps"] == {"lat": 40.7608, "lon": -111.891, "alt": 1288.0, "direction": 270.5}
    assert (md["place"]["city"], md["place"]["state"], md["place"]["country"]) == \
        ("Salt Lake City", "Utah", "United States")
    assert (lat, lon, country) == (40.7608, -111.891, "United States")
    for query in ("utah", "salt lake", "united states"):
        assert [h.title for h in lib.search(query).hits] == ["img_0001.jpg"], query


def test_capture_time_keeps_its_zone_in_the_order_of_sources(lib: Library, photos: Path):
    # 23:30 at -04:00 and 00:30 at +02:00 the next day: 22:30 apart in wall
    # clock, 4 h 00 apart... in true time 03:30 UTC and 22:30 UTC the day before
    late = make_image(photos / "late.jpg")
    exiftool_write(late, "-DateTimeOriginal=2024:06:01 23:30:00", "-OffsetTimeOriginal=-04:00")
    early = make_image(photos / "early.jpg", color=(1, 2, 3))
    exiftool_write(early, "-DateTimeOriginal=2024:06:02 00:30:00", "-OffsetTimeOriginal=+02:00")
    gps_only = make_image(photos / "gps-only.jpg", color=(4, 5, 6))
    exiftool_write(gps_only, *LISBON, "-GPSDateStamp=2024:01:15", "-GPSTimeStamp=23:30:00")
    both = make_image(photos / "both.jpg", color=(7, 8, 9))
    exiftool_write(both, *LISBON, "-DateTimeOriginal=2024:06:03 10:00:00",
                   "-GPSDateStamp=2024:06:03", "-GPSTimeStamp=01:00:00")
    create = make_image(photos / "create.jpg", color=(10, 11, 12))
    exiftool_write(create, "-CreateDate=2024:06:04 08:00:00", "-GPSDateStamp=2024:06:04",
                   "-GPSTimeStamp=01:00:00")
    clip = make_video(photos / "clip.mov", frames=5)
    exiftool_write(clip, "-QuickTime:CreateDate=2024:06:05 21:15:00")
    summary = lib.ingest(photos)
    assert summary.failed == 0
    got = {name: _file(lib, name) for name in
           ("late.jpg", "early.jpg", "gps-only.jpg", "both.jpg", "create.jpg", "clip.mov")}
    cap = {n: {k: v for k, v in r[0]["captured"].items() if k != "instant"} for n, r in got.items()}
    assert cap["late.jpg"] == {"local": "2024:06:01 23:30:00", "offset_min": -240,
                               "offset_from": "file", "source": "DateTimeOriginal"}
    assert cap["early.jpg"] == {"local": "2024:06:02 00:30:00", "offset_min": 120,
                                "offset_from": "file", "source": "DateTimeOriginal"}
    # GPSDateTime (UTC) is the only date: Lisbon's zone (winter: +00:00) from its coordinates
    assert cap["gps-only.jpg"] == {"local": "2024:01:15 23:30:00", "offset_min": 0,
                                   "offset_from": "coordinates", "source": "GPSDateTime",
                                   "zone": "Europe/Lisbon"}
    # DateTimeOriginal wins over GPSDateTime; its offset from Lisbon's summer zone
    assert cap["both.jpg"] == {"local": "2024:06:03 10:00:00", "offset_min": 60,
                               "offset_from": "coordinates", "source": "DateTimeOriginal",
                               "zone": "Europe/Lisbon"}
    assert cap["create.jpg"]["source"] == "CreateDate"
    assert cap["clip.mov"] == {"local": "2024:06:05 21:15:00", "offset_min": 0,
                               "offset_from": "file", "source": "QuickTime:CreateDate"}
    # the wall clock decides the day; the instant orders across zones
    assert str(got["late.jpg"][4])[:19] == "2024-06-01 23:30:00"
    assert got["late.jpg"][5].isoformat() == "2024-06-02T03:30:00+00:00"
    assert got["early.jpg"][5].isoformat() == "2024-06-01T22:30:00+00:00"
    assert got["early.jpg"][5] < got["late.jpg"][5] and got["early.jpg"][4] > got["late.jpg"][4]
    assert got["gps-only.jpg"][0]["date_taken"] == "2024:01:15 23:30:00"


def test_rating_label_camera_lens_and_exposure_are_read(lib: Library, photos: Path):
    img = make_image(photos / "shot.jpg")
    exiftool_write(img, "-Make=Canon", "-Model=Canon EOS R5", "-LensModel=RF24-105mm F4 L IS USM",
                   "-FocalLength=50", "-FNumber=4", "-ISO=400", "-ExposureTime=0.004",
                   "-XMP:Rating=4", "-XMP:Label=Red")
    nikon = make_image(photos / "nikon.jpg", color=(1, 2, 3))
    exiftool_write(nikon, "-Make=NIKON CORPORATION", "-Model=NIKON D850", "-XMP:Rating=-1")
    sony = make_image(photos / "sony.jpg", color=(4, 5, 6))
    exiftool_write(sony, "-Make=SONY", "-Model=ILCE-7M3")
    lib.ingest(photos)
    md, *_x, rating, _c, _ca, _co = _file(lib, "shot.jpg")
    assert (md["camera"], md["lens"], md["rating"], md["label"], rating) == \
        ("Canon EOS R5", "RF24-105mm F4 L IS USM", 4, "Red", 4)
    assert md["exposure"] == {"focal_mm": 50.0, "aperture": 4.0, "iso": 400,
                              "exposure_s": 0.004}
    assert (_file(lib, "nikon.jpg")[0]["camera"], _file(lib, "nikon.jpg")[3]) == \
        ("NIKON D850", -1)
    assert _file(lib, "sony.jpg")[0]["camera"] == "SONY ILCE-7M3"
    # camera and lens names are words of the document
    assert [h.title for h in lib.search("eos r5").hits] == ["shot.jpg"]
    assert [h.title for h in lib.search("rf24").hits] == ["shot.jpg"]
