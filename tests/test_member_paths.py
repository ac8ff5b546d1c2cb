"""Members see paths relative to the ingested folder, never the server's
absolute paths; the owner and admins see full paths."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from imaging import make_image, write_sidecar

from loupe import Library
from loupe.web import create_app
from loupe.web.auth import SESSION_COOKIE, issue_token


def test_members_see_relative_paths_admins_full_ones(lib: Library, photos: Path,
                                                     db_url: str, home: Path):
    img = make_image(photos / "travel" / "lisbon" / "tram.jpg")
    write_sidecar(img, "-XMP-dc:Title=Yellow tram")
    lib.ingest(photos)
    lib.create_user("admin", "admin-password", admin=True)
    lib.create_user("alice", "alice-password")
    lib.grant("alice", collection="travel")
    asset_id = lib.search("tram").hits[0].asset_id

    with TestClient(create_app(home, database_url=db_url, pool_size=1)) as client:
        def bearer(name):
            return {"Authorization": "Bearer " + client.post(
                "/api/tokens", json={"name": name, "password": f"{name}-password"}).json()["token"]}

        alice, admin = bearer("alice"), bearer("admin")
        files = client.get(f"/api/assets/{asset_id}", headers=alice).json()["files"]
        assert [(f["path"], f["sidecar"]) for f in files] == [
            ("travel/lisbon/tram.jpg", "travel/lisbon/tram.jpg.xmp")]
        hits = client.get("/api/search", params={"q": "tram"}, headers=alice).json()["hits"]
        assert [h["path"] for h in hits] == ["travel/lisbon/tram.jpg"]

        files = client.get(f"/api/assets/{asset_id}", headers=admin).json()["files"]
        assert [(f["path"], f["sidecar"]) for f in files] == [
            (str(img), str(img) + ".xmp")]
        hits = client.get("/api/search", params={"q": "tram"}, headers=admin).json()["hits"]
        assert [h["path"] for h in hits] == [str(img)]

        session = issue_token(lib, lib.as_user("alice").user["id"], "session")["token"]
        client.cookies.set(SESSION_COOKIE, session)
        page = client.get(f"/assets/{asset_id}")
        assert page.status_code == 200 and "<li>travel/lisbon/tram.jpg</li>" in page.text
        for url in (f"/assets/{asset_id}", "/?q=tram"):
            page = client.get(url)
            assert page.status_code == 200 and "Yellow tram" in page.text, url
            assert str(photos) not in page.text, url
