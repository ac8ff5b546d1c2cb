"""Everyday actions around search: bulk actions that take a keyword or a
collection away again (audited like the others), bulk outcomes in words,
the uploader named in the audit log of its upload's grants, and the icon."""

from __future__ import annotations

import pytest

from imaging import exiftool_write, make_image
from loupe.bulk import BulkError
from loupe.bulk.words import bulk_sentence
from test_web_api import fresh_site  # noqa: F401 (fixture)


@pytest.fixture
def cats(lib, photos):
    """Three cats and a dog, ingested."""
    for i in range(1, 4):
        make_image(photos / f"cat-{i:02d}.jpg", color=(10 * i, 200, 30))
    make_image(photos / "dog-01.jpg", color=(30, 10, 200))
    lib.ingest(photos)
    return lib


def test_remove_keyword_takes_back_what_add_keyword_added_and_is_audited(cats):
    lib = cats
    assert lib.bulk("add_keyword", "Feline", query="cat")["count"] == 3
    assert lib.search("feline").total == 3
    out = lib.bulk("remove_keyword", "feline", query="cat 01")
    assert (out["count"], out["action"], out["value"]) == (1, "remove_keyword", "feline")
    assert lib.search("feline").total == 2
    assert lib.search("", filters={"keyword": "feline"}).total == 2
    row = lib.audit_log(1)[0]
    assert (row["action"], row["value"], row["query"], row["count"], row["actor"]) == \
        ("remove_keyword", "feline", "cat 01", 1, "owner")


def test_remove_from_collection_takes_assets_out_of_a_hand_made_collection(cats):
    lib = cats
    assert lib.bulk("add_to_collection", "best", query="cat")["count"] == 3
    assert lib.search("", filters={"collection": "best"}).total == 3
    out = lib.bulk("remove_from_collection", "best", query="cat 02")
    assert out["count"] == 1
    assert lib.search("", filters={"collection": "best"}).total == 2
    assert lib.audit_log(1)[0]["action"] == "remove_from_collection"
    # a collection that does not exist is an error, and nothing is logged
    with pytest.raises(BulkError, match="no hand-made collection 'worst'"):
        lib.bulk("remove_from_collection", "worst", query="cat")
    assert lib.audit_log(1)[0]["id"] == out["audit_id"]


def test_bulk_outcomes_are_said_in_words():
    assert bulk_sentence("set_embargo", None, 3) == "Set embargo until (cleared): applied to 3 assets."
    assert bulk_sentence("remove_keyword", "feline", 1) == \
        "Remove keyword “feline”: applied to 1 asset."
    assert bulk_sentence("remove_from_collection", "best", 2, dry_run=True) == \
        "Remove from collection “best”: would apply to 2 assets; nothing changed."


def test_the_web_bulk_form_offers_the_removals(fresh_site):  # noqa: F811
    client, _ids, auth = fresh_site
    page = client.get("/?q=cat", headers=auth("admin")).text
    assert '<option value="remove_keyword">Remove keyword</option>' in page
    assert '<option value="remove_from_collection">Remove from collection</option>' in page
    client.post("/api/bulk", json={"action": "add_keyword", "value": "feline", "q": "cat"},
                headers=auth("admin"))
    out = client.post("/api/bulk", json={"action": "remove_keyword", "value": "feline",
                                         "q": "cat"}, headers=auth("admin")).json()
    assert out["message"] == "Remove keyword “feline”: applied to 3 assets."


def test_an_uploads_grants_name_the_uploader_in_the_audit_log(fresh_site, tmp_path):  # noqa: F811
    client, _ids, auth = fresh_site
    png = make_image(tmp_path / "up" / "ferry.png", color=(1, 2, 3)).read_bytes()
    r = client.post("/api/upload", files=[("files", ("ferry.png", png, "image/png"))],
                    headers=auth("bob"))
    assert r.status_code == 200, r.text
    rows = client.get("/api/audit", headers=auth("admin")).json()
    grant = next(r for r in rows if r["action"] == "grant")
    assert (grant["actor"], grant["target"]) == ("bob", "bob")
    assert grant["value"]["path"].endswith("/ferry.png")


def test_the_app_has_an_icon(fresh_site):  # noqa: F811
    client, _ids, auth = fresh_site
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in \
        client.get("/login").text
    for path in ("/static/favicon.svg", "/favicon.ico"):
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
        assert r.content.startswith(b"<svg")


def test_the_server_computes_an_uploads_vectors_by_itself(db_url, home, tmp_path):
    """With background work on, an upload's vectors arrive without anyone
    running 'loupe embed', and the status says what the work did."""
    import time

    from fastapi.testclient import TestClient

    from loupe import Library
    from loupe.web import create_app
    from test_web_api import populate
    from tinymodels import build_clip

    populate(home, db_url, tmp_path / "photos")
    with Library.open(home, database_url=db_url) as lib:
        lib.install_model(build_clip(tmp_path / "models" / "tiny-clip"))
        lib.use_model("tiny-clip", "image")
        assets = lib.stats()["assets"]
        assert lib.vectors_waiting() == {"image": assets}
    app = create_app(home, database_url=db_url, pool_size=2, background_every_s=0.5)
    with TestClient(app) as client:
        tok = {u: {"Authorization": "Bearer " + client.post(
            "/api/tokens", json={"name": u, "password": f"{u}-password"}).json()["token"]}
            for u in ("admin", "bob")}

        def drained() -> dict:
            for _ in range(240):
                s = client.get("/api/status", headers=tok["admin"]).json()
                if not s["vectors_waiting"] and s["background"]["passes"] and \
                        s["background"]["task"] is None:
                    return s
                time.sleep(0.25)
            raise AssertionError(f"still waiting: {s}")
        s = drained()
        png = make_image(tmp_path / "up" / "red-kettle.png", color=(250, 5, 5)).read_bytes()
        # a picture with a name written over a face (MWG region), and no face detection asked for
        crew = make_image(tmp_path / "up" / "crew.jpg", size=(200, 150))
        exiftool_write(crew, "-XMP-mwg-rs:RegionInfo={RegionList=[{Area={X=0.3,Y=0.4,W=0.2,"
                             "H=0.3,Unit=normalized},Type=Face,Name=Eileen Collins}]}")
        r = client.post("/api/upload", files=[("files", ("red-kettle.png", png, "image/png")),
                                              ("files", ("crew.jpg", crew.read_bytes(),
                                                         "image/jpeg"))], headers=tok["bob"])
        assert r.status_code == 200 and r.json()["stored"] == 2, r.text
        s = drained()
        for _ in range(120):   # (the pass after the upload's wakes it reads the names)
            people = [p["label"] for p in client.get("/api/people", headers=tok["bob"]).json()]
            if people:
                break
            time.sleep(0.25)
        assert people == ["Eileen Collins"]
        assert s["background_text"].startswith("Waiting for work; the last pass ended ")
        # members are not shown the tenant's work
        assert client.get("/api/status", headers=tok["bob"]).json().get("background") is None
    with Library.open(home, database_url=db_url) as lib:
        assert lib.vectors_waiting() == {}
        n = lib.conn.execute("SELECT count(*) FROM asset_vector").fetchone()[0]
        assert n == assets + 2
