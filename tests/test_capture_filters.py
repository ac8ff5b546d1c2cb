"""Filters and facets on where, when and with what pictures were taken, as the
owner and as a member: near a point, in a box, by country and city, rating,
colour label, camera and lens, with exact counts, and the day decided in the
picture's local time (docs/formats.md, docs/filters.md)."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest
from imaging import exiftool_write, make_image
from psycopg.conninfo import make_conninfo

from loupe import Library
from loupe.filters.compile import near_box
from loupe.filters.options import tree_from_options
from loupe.filters.tree import FilterError, parse, rating_option
from loupe.ingest.places import haversine_km

LISBON = (38.7223, -9.1393)
#: stem -> (folder, latitude, longitude or None, tags)
FILES = {
    # Lisbon centre and Belém (6 km west), Porto (274 km north), Salt Lake City
    "lx1": ("shoot", 38.7223, -9.1393, ["-XMP:Rating=5", "-XMP:Label=Red", "-Make=Canon",
                                        "-Model=Canon EOS R5", "-LensModel=RF50mm F1.2 L USM",
                                        "-DateTimeOriginal=2024:06:01 23:30:00",
                                        "-OffsetTimeOriginal=+01:00"]),
    "lx2": ("shoot", 38.6970, -9.2064, ["-XMP:Rating=4", "-XMP:Label=Green", "-Make=Canon",
                                        "-Model=Canon EOS R5",
                                        "-DateTimeOriginal=2024:06:02 00:30:00",
                                        "-OffsetTimeOriginal=+01:00"]),
    "po1": ("shoot", 41.1496, -8.6110, ["-XMP:Rating=3", "-Make=NIKON CORPORATION",
                                        "-Model=NIKON D850"]),
    "sl1": ("private", 40.7608, -111.8910, ["-XMP:Rating=5", "-XMP:Label=Red", "-Make=Canon",
                                            "-Model=Canon EOS R5"]),
    "no1": ("shoot", None, None, ["-XMP:Rating=-1"]),
}


@pytest.fixture(scope="module")
def glib(pg_admin_url, template_db, tmp_path_factory):
    """Member ``mia`` reads shoot/ (not private/, which holds sl1)."""
    name = "loupe_g_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    root = tmp_path_factory.mktemp("gphotos")
    for i, (stem, (folder, lat, lon, tags)) in enumerate(FILES.items()):
        path = make_image(root / folder / f"{stem}.jpg", color=(40 * i, 90, 30))
        gps = [] if lat is None else [
            f"-GPSLatitude={abs(lat)}", f"-GPSLatitudeRef={'N' if lat >= 0 else 'S'}",
            f"-GPSLongitude={abs(lon)}", f"-GPSLongitudeRef={'E' if lon >= 0 else 'W'}"]
        exiftool_write(path, *gps, *tags)
    lib = Library.open(tmp_path_factory.mktemp("ghome"), database_url=make_conninfo(
        pg_admin_url, dbname=name))
    assert lib.ingest(root).new_assets == 5
    lib.create_user("mia", "mia-password-1")
    lib.grant("mia", collection="shoot")
    yield lib
    lib.close()
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def stems(res) -> set[str]:
    return {Path(h.path).stem for h in res.hits}


def found(lib: Library, tree) -> tuple[set[str], int]:
    res = lib.search("", filters=tree, limit=50)
    return stems(res), res.total


def test_options_read_as_a_person_writes_them():
    assert rating_option("4+") == {"min": 4}
    assert rating_option("3") == 3
    assert rating_option("2-4") == {"min": 2, "max": 4}
    assert rating_option("rejected") == -1
    with pytest.raises(FilterError, match="not a rating"):
        rating_option("six")
    tree = tree_from_options({"near": "38.72,-9.14", "within": "5", "rating": "4+",
                              "camera": ["Canon EOS R5"], "bbox": "38,-10,39,-9"})
    assert tree.to_json() == {"all": [{"camera": "Canon EOS R5"}, {"rating": {"min": 4}},
                                      {"near": {"lat": 38.72, "lon": -9.14, "km": 5.0}},
                                      {"bbox": {"south": 38.0, "west": -10.0, "north": 39.0,
                                                "east": -9.0}}]}
    with pytest.raises(FilterError, match="--within"):
        tree_from_options({"within": "5"})
    with pytest.raises(FilterError, match=r"\$\.near\.lat"):
        parse({"near": {"lat": 91, "lon": 0, "km": 1}})


def test_the_box_of_a_distance_holds_every_point_within_it():
    for lat, lon, km in ((38.7, -9.1, 10), (70.0, 179.9, 300), (-33.9, 151.2, 2500),
                         (0.0, 0.0, 1)):
        box = near_box(lat, lon, km)
        for bearing in range(0, 360, 5):
            # the point at km along each bearing (destination on the sphere)
            import math
            r, b = km / 6371.0088, math.radians(bearing)
            p1, l1 = math.radians(lat), math.radians(lon)
            p2 = math.asin(math.sin(p1) * math.cos(r) + math.cos(p1) * math.sin(r) * math.cos(b))
            l2 = l1 + math.atan2(math.sin(b) * math.sin(r) * math.cos(p1),
                                 math.cos(r) - math.sin(p1) * math.sin(p2))
            plat, plon = math.degrees(p2), (math.degrees(l2) + 540) % 360 - 180
            assert abs(haversine_km(lat, lon, plat, plon) - km) < 1e-6 * km + 1e-9
            assert box["south"] <= plat <= box["north"], (lat, lon, km, bearing)
            if box["west"] <= box["east"]:
                assert box["west"] <= plon <= box["east"], (lat, lon, km, bearing)
            else:
                assert plon >= box["west"] or plon <= box["east"], (lat, lon, km, bearing)


def test_near_and_box_filters_count_exactly_as_owner_and_member(glib: Library):
    near = {"near": {"lat": LISBON[0], "lon": LISBON[1], "km": 10}}
    assert found(glib, near) == ({"lx1", "lx2"}, 2)
    assert found(glib, {"near": {"lat": LISBON[0], "lon": LISBON[1], "km": 5}}) == ({"lx1"}, 1)
    assert found(glib, {"near": {"lat": LISBON[0], "lon": LISBON[1], "km": 300}}) == \
        ({"lx1", "lx2", "po1"}, 3)
    box = {"bbox": {"south": 30, "west": -120, "north": 45, "east": -100}}
    assert found(glib, box) == ({"sl1"}, 1)
    assert found(glib.as_user("mia"), box) == (set(), 0)        # sl1 is private
    world = {"bbox": {"south": -90, "west": -180, "north": 90, "east": 180}}
    assert found(glib, world) == ({"lx1", "lx2", "po1", "sl1"}, 4)
    assert found(glib.as_user("mia"), world) == ({"lx1", "lx2", "po1"}, 3)
    # across the 180th meridian: west 170, east -100 holds Salt Lake City (-111.9)
    assert found(glib, {"bbox": {"south": 30, "west": 170, "north": 45, "east": -100}}) == \
        ({"sl1"}, 1)


def test_place_rating_label_camera_and_lens_filters_as_owner_and_member(glib: Library):
    mia = glib.as_user("mia")
    assert found(glib, {"country": "Portugal"}) == ({"lx1", "lx2", "po1"}, 3)
    assert found(glib, {"country": "united states"}) == ({"sl1"}, 1)
    assert found(mia, {"country": "united states"}) == (set(), 0)
    assert found(glib, {"city": "porto"}) == ({"po1"}, 1)
    assert found(glib, {"rating": {"min": 4}}) == ({"lx1", "lx2", "sl1"}, 3)
    assert found(mia, {"rating": {"min": 4}}) == ({"lx1", "lx2"}, 2)
    assert found(glib, {"rating": 5}) == ({"lx1", "sl1"}, 2)
    assert found(glib, {"rating": -1}) == ({"no1"}, 1)
    assert found(glib, {"label": "red"}) == ({"lx1", "sl1"}, 2)
    assert found(mia, {"label": "red"}) == ({"lx1"}, 1)
    assert found(glib, {"camera": "canon eos r5"}) == ({"lx1", "lx2", "sl1"}, 3)
    assert found(glib, {"camera": "NIKON D850"}) == ({"po1"}, 1)
    assert found(glib, {"lens": "RF50mm F1.2 L USM"}) == ({"lx1"}, 1)
    assert found(glib, {"all": [{"camera": "Canon EOS R5"}, {"rating": {"min": 5}},
                                {"not": {"country": "Portugal"}}]}) == ({"sl1"}, 1)
    # a picture with coordinates only is found by its place's words
    assert stems(glib.search("utah")) == {"sl1"} and stems(mia.search("utah")) == set()


def test_facets_by_place_rating_label_camera_and_lens(glib: Library):
    def counts(f, facet):
        return {v["key"]: v["count"] for v in f["facets"][facet]}

    f = glib.search("", filters={"rating": {"min": -1}}, facets=True).facets
    assert f["exact"] is True
    assert counts(f, "country") == {"portugal": 3, "united states": 1}
    assert counts(f, "rating") == {"5": 2, "4": 1, "3": 1, "-1": 1}
    assert counts(f, "label") == {"red": 2, "green": 1}
    assert counts(f, "camera") == {"canon eos r5": 3, "nikon d850": 1}
    assert counts(f, "lens") == {"rf50mm f1.2 l usm": 1}
    assert counts(f, "make") == {"canon": 3, "nikon": 1}
    assert counts(f, "city")["salt lake city"] == 1
    rating5 = next(v for v in f["facets"]["rating"] if v["key"] == "5")
    assert rating5["filter"] == {"rating": 5}
    m = glib.as_user("mia").search("", filters={"rating": {"min": -1}}, facets=True).facets
    assert counts(m, "country") == {"portugal": 3}
    assert counts(m, "camera") == {"canon eos r5": 2, "nikon d850": 1}
    assert counts(m, "label") == {"red": 1, "green": 1}


def test_the_day_is_decided_in_the_pictures_local_time(glib: Library):
    # lx1 23:30 on 1 June and lx2 00:30 on 2 June, both at +01:00
    day = {"captured": {"from": "2024-06-01", "to": "2024-06-02"}}
    assert found(glib, day) == ({"lx1"}, 1)
    assert found(glib, {"captured": {"from": "2024-06-02", "to": "2024-06-03"}}) == ({"lx2"}, 1)


def test_the_new_filters_read_as_words():
    from loupe.filters.words import sentence

    assert sentence({"all": [{"rating": {"min": 4}}, {"camera": "Canon EOS R5"},
                             {"near": {"lat": 38.72, "lon": -9.14, "km": 5}},
                             {"not": {"rating": -1}}, {"label": "Red"}]}) == \
        ("rated 4 stars or more, camera “Canon EOS R5”, within 5 km of 38.72, -9.14, "
         "not rejected, label “Red”")
    assert sentence({"rating": {"min": 2, "max": 4}}) == "rated 2–4 stars"
    assert sentence({"bbox": {"south": 38, "west": -10, "north": 39, "east": -9}}) == \
        "between latitudes 38 and 39 and longitudes -10 and -9"


def test_an_instant_range_reads_the_true_instant(glib: Library):
    # lx1 23:30 +01:00 = 22:30 UTC on 1 June; lx2 00:30 +01:00 = 23:30 UTC
    assert found(glib, {"instant": {"from": "2024-06-01T22:00:00Z",
                                    "to": "2024-06-01T23:00:00Z"}}) == ({"lx1"}, 1)
    assert found(glib, {"instant": {"from": "2024-06-02T01:00:00+02:00"}}) == ({"lx2"}, 1)
    with pytest.raises(FilterError, match="has no offset"):
        parse({"instant": {"from": "2024-06-01T22:00:00"}})


def test_a_sentence_asks_for_stars_and_a_camera_maker(glib: Library):
    from datetime import datetime, timezone

    clock = datetime(2026, 1, 1, tzinfo=timezone.utc)
    out = glib.ask("my five-star shots from the Canon", clock=clock)
    assert out["state"]["filter"] == {"all": [{"rating": 5}, {"make": "Canon"}]}
    assert out["state"]["text"] == ""
    assert {Path(h["path"]).stem for h in out["search"]["hits"]} == {"lx1", "sl1"}
    assert out["search"]["total"] == 2
    mia = glib.as_user("mia").ask("my five-star shots from the Canon", clock=clock)
    assert mia["search"]["total"] == 1
    more = glib.ask("pictures rated 4 stars or more shot on a Nikon", clock=clock)
    assert more["state"]["filter"] == {"all": [{"rating": {"min": 4}}, {"make": "Nikon"}]}
    assert more["search"]["total"] == 0          # po1, the Nikon, has 3 stars
    assert found(glib, {"make": "nikon"}) == ({"po1"}, 1)


def test_bulk_rating_and_label_replace_the_files_own_for_viewers_of_the_whole_asset(
        lib: Library, photos: Path):
    harbour = make_image(photos / "shoot" / "harbour.jpg", color=(10, 120, 200))
    exiftool_write(harbour, "-XMP:Rating=2", "-XMP:Label=Red")
    (photos / "private").mkdir()
    (photos / "private" / "harbour-copy.jpg").write_bytes(harbour.read_bytes())
    other = make_image(photos / "shoot" / "bridge.jpg", color=(200, 120, 10))
    exiftool_write(other, "-XMP:Rating=3")
    assert lib.ingest(photos).new_assets == 2
    lib.create_user("mia", "mia-password-1")
    lib.grant("mia", collection="shoot")          # one of harbour's two files
    done = lib.bulk("set_rating", "5", query="harbour")
    assert (done["count"], done["value"]) == (1, 5)
    assert lib.bulk("set_label", "Purple", query="harbour")["count"] == 1
    mia = lib.as_user("mia")
    owner5 = lib.search("", filters={"rating": 5}, limit=10)
    assert (owner5.total, len({h.asset_id for h in owner5.hits})) == (1, 1)
    assert found(lib, {"rating": 2})[1] == 0
    assert found(lib, {"label": "purple"})[1] == 1 and found(lib, {"label": "red"})[1] == 0
    # mia reads one file of harbour: she sees that file's own rating and label
    assert found(mia, {"rating": 5}) == (set(), 0)
    assert found(mia, {"rating": 2}) == ({"harbour"}, 1)
    assert found(mia, {"label": "red"}) == ({"harbour"}, 1)
    assert found(mia, {"label": "purple"}) == (set(), 0)

    def counts(f, facet):
        return {v["key"]: v["count"] for v in f["facets"][facet]}

    f = lib.search("", filters={"rating": {"min": -1}}, facets=True).facets
    assert (counts(f, "rating"), counts(f, "label")) == ({"5": 1, "3": 1}, {"purple": 1})
    m = mia.search("", filters={"rating": {"min": -1}}, facets=True).facets
    assert (counts(m, "rating"), counts(m, "label")) == ({"2": 1, "3": 1}, {"red": 1})
    assert [e["action"] for e in lib.audit_log()][:2] == ["set_label", "set_rating"]
    # cleared: the files' own again
    assert lib.bulk("set_rating", "", query="harbour")["count"] == 1
    assert found(lib, {"rating": 2})[1] == 1


def test_cli_search_takes_place_rating_and_gear_options(glib: Library):
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    out = subprocess.run([sys.executable, "-m", "loupe.cli", "--home", str(glib.home),
                          "--database-url", glib.conn.info.dsn, "search", "",
                          "--near", "38.7223,-9.1393", "--within", "10", "--rating", "4+",
                          "--make", "Canon", "--json"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert {Path(h["path"]).stem for h in res["hits"]} == {"lx1", "lx2"} and res["total"] == 2
    assert res["filter"] == {"all": [{"make": "Canon"}, {"rating": {"min": 4}},
                                     {"near": {"lat": 38.7223, "lon": -9.1393, "km": 10.0}}]}
