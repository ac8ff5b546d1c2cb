"""Search by image over HTTP (X1): ``GET /api/assets/{id}/similar``,
``POST /api/similar`` with an upload, and the asset page's "More like this",
each seen through the user's permissions."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from loupe import Library
from loupe.web import create_app

FIXTURES = Path(__file__).parent / "fixtures" / "similar"


@pytest.fixture
def site(db_url: str, home: Path, photos: Path):
    """chelsea + its q60 re-encode + its 50% resize + coffee; ``alice`` may
    read the original and coffee only; ``admin`` reads everything."""
    shutil.copy(FIXTURES / "chelsea.jpg", photos / "cat.jpg")
    im = Image.open(FIXTURES / "chelsea.jpg")
    im.save(photos / "cat-q60.jpg", quality=60)
    im.resize((im.width // 2, im.height // 2)).save(photos / "cat-half.png")
    shutil.copy(FIXTURES / "coffee.jpg", photos / "coffee.jpg")
    with Library.open(home, database_url=db_url) as lib:
        lib.ingest(photos)
        ids = {Path(r[0]).stem: r[1] for r in lib.conn.execute(
            "SELECT rel_path, asset_id FROM asset_file")}
        lib.create_user("admin", "admin-password", admin=True)
        lib.create_user("alice", "alice-password")
        lib.grant("alice", asset_id=ids["cat"])
        lib.grant("alice", asset_id=ids["coffee"])
    app = create_app(home, database_url=db_url)
    with TestClient(app) as client:
        auth = {u: {"Authorization": "Bearer " + client.post(
            "/api/tokens", json={"name": u, "password": f"{u}-password"}).json()["token"]}
            for u in ("admin", "alice")}
        yield client, ids, auth


def test_similar_to_an_asset(site):
    client, ids, auth = site
    r = client.get(f"/api/assets/{ids['cat']}/similar", headers=auth["admin"])
    assert r.status_code == 200
    out = r.json()
    assert sorted(h["asset_id"] for h in out["hits"]) == sorted([ids["cat-q60"], ids["cat-half"]])
    assert (out["total"], out["verdict"], out["radius"]) == (2, "complete", 10)
    assert {h["thumbnail_url"] for h in out["hits"]} == {
        f"/api/assets/{ids['cat-q60']}/thumbnail", f"/api/assets/{ids['cat-half']}/thumbnail"}
    assert client.get(f"/api/assets/{ids['cat']}/similar?radius=16",
                      headers=auth["admin"]).status_code == 422


def test_a_member_never_learns_of_hidden_near_duplicates(site):
    client, ids, auth = site
    out = client.get(f"/api/assets/{ids['cat']}/similar", headers=auth["alice"]).json()
    assert (out["total"], out["hits"], out["verdict"]) == (0, [], "complete")
    hidden = [str(ids["cat-q60"]), str(ids["cat-half"])]
    # asking about a hidden asset is answered like a missing one
    r = client.get(f"/api/assets/{ids['cat-q60']}/similar", headers=auth["alice"])
    missing = client.get("/api/assets/999999/similar", headers=auth["alice"])
    assert (r.status_code, r.json()) == (missing.status_code, missing.json()) == (
        404, {"detail": "no such asset"})
    # the upload of a copy finds the visible original only
    im = Image.open(FIXTURES / "chelsea.jpg")
    import io

    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=70)
    r = client.post("/api/similar", files={"file": ("mine.jpg", buf.getvalue(), "image/jpeg")},
                    headers=auth["alice"])
    assert [h["asset_id"] for h in r.json()["hits"]] == [ids["cat"]] and r.json()["total"] == 1
    page = client.get(f"/assets/{ids['cat']}/similar", headers=auth["alice"])
    assert page.status_code == 200
    links = re.findall(r'href="/assets/(\d+)"', page.text)
    assert not set(links) & set(hidden)
    assert "thumbnail" not in page.text or not any(f"/api/assets/{h}/" in page.text for h in hidden)


def test_upload_finds_the_original_first_and_is_not_ingested(site, home: Path, db_url: str):
    client, ids, auth = site
    import io

    im = Image.open(FIXTURES / "chelsea.jpg")
    buf = io.BytesIO()
    im.resize((im.width // 2, im.height // 2)).save(buf, "JPEG", quality=60)
    r = client.post("/api/similar", files={"file": ("copy.jpg", buf.getvalue(), "image/jpeg")},
                    headers=auth["admin"])
    assert r.status_code == 200
    out = r.json()
    assert out["query"] == "upload copy.jpg"
    assert {h["asset_id"] for h in out["hits"]} == {ids["cat"], ids["cat-q60"], ids["cat-half"]}
    with Library.open(home, database_url=db_url) as lib:
        assert lib.stats()["assets"] == 4


def test_an_upload_that_is_not_an_image_is_a_415_with_the_reason(site):
    client, ids, auth = site
    r = client.post("/api/similar", files={"file": ("notes.jpg", b"just some words", "image/jpeg")},
                    headers=auth["admin"])
    assert r.status_code == 415
    detail = r.json()["detail"]
    assert detail.startswith("notes.jpg: not an image") and "/tmp" not in detail
    r = client.post("/api/similar", files={"file": ("empty.png", b"", "image/png")},
                    headers=auth["admin"])
    assert r.status_code == 415 and "empty" in r.json()["detail"]


def test_the_asset_page_links_to_more_like_this(site):
    client, ids, auth = site
    page = client.get(f"/assets/{ids['cat']}", headers=auth["admin"])
    assert f'href="/assets/{ids["cat"]}/similar"' in page.text and "More like this" in page.text
    more = client.get(f"/assets/{ids['cat']}/similar", headers=auth["admin"])
    assert more.status_code == 200
    assert sorted(int(x) for x in re.findall(r'href="/assets/(\d+)" data-rank', more.text)) == \
        sorted([ids["cat-q60"], ids["cat-half"]])
    assert 'data-verdict="complete"' in more.text


def test_a_decompression_bomb_is_refused_from_its_header(site):
    """A 9000 x 9000 PNG of 80 KB (81 MP, under the 100 MP upload ceiling):
    413 naming its pixels and the bound, read from the header — nothing
    decoded (before: decoded in full three times; the decoding alone grew
    the peak RSS by 251 MiB, measured with getrusage). A 6000 x 5000 JPEG is
    decoded at 1/8 scale and searched."""
    import io

    from test_web_security import _peak_rss

    client, ids, auth = site
    buf = io.BytesIO()
    Image.new("L", (9000, 9000), 0).save(buf, "PNG", compress_level=9)
    assert len(buf.getvalue()) < 200_000
    r, peak = _peak_rss(lambda: client.post(
        "/api/similar", files={"file": ("bomb.png", buf.getvalue(), "image/png")},
        headers=auth["alice"]))
    assert r.status_code == 413
    assert r.json()["detail"] == (
        "bomb.png: 9000x9000 = 81,000,000 pixels is over the limit of 25,000,000 pixels for "
        "a PNG picture to search by (decoded in full; a JPEG is decoded at reduced scale)")
    print(f"\nbomb PNG: peak RSS growth {peak / 2**20:.0f} MiB")
    assert peak < 40 * 2**20
    # over the upload ceiling (any format): refused from the header too
    buf = io.BytesIO()
    Image.new("L", (12000, 9000), 0).save(buf, "PNG", compress_level=9)
    r = client.post("/api/similar", files={"file": ("huge.png", buf.getvalue(), "image/png")},
                    headers=auth["alice"])
    assert r.status_code == 413 and r.json()["detail"] == (
        "huge.png: 12000x9000 = 108,000,000 pixels is over the limit of 100,000,000 pixels "
        "for a picture to search by")
    # a large JPEG: reduced decoding, searched
    buf = io.BytesIO()
    Image.open(FIXTURES / "chelsea.jpg").convert("RGB").resize((6000, 5000)).save(
        buf, "JPEG", quality=70)
    r, peak = _peak_rss(lambda: client.post(
        "/api/similar", files={"file": ("big.jpg", buf.getvalue(), "image/jpeg")},
        headers=auth["alice"]))
    assert r.status_code == 200, r.text
    assert ids["cat"] in {h["asset_id"] for h in r.json()["hits"]}
    print(f"30 MP JPEG: peak RSS growth {peak / 2**20:.0f} MiB")
