"""Conversational search over HTTP (X4): /api/conversations in process
(FastAPI TestClient) on the web fixture library (tests/weblib.py), and the
/ask page's editable chips in headless Debian chromium."""

from __future__ import annotations


import pytest
from fastapi.testclient import TestClient

from loupe.web import create_app
from test_web_api import populate


@pytest.fixture
def site(db_url, home, tmp_path):
    populate(home, db_url, tmp_path / "photos")
    app = create_app(home, database_url=db_url, pool_size=2)
    with TestClient(app) as client:
        def auth(user: str) -> dict[str, str]:
            tok = client.post("/api/tokens", json={"name": user, "password": f"{user}-password"})
            return {"Authorization": f"Bearer {tok.json()['token']}"}
        yield client, auth


def test_three_turns_over_the_api_with_chips_and_the_search_verdict(site):
    client, auth = site
    admin = auth("admin")
    r = client.post("/api/conversations", json={"sentence": "animals"}, headers=admin)
    assert r.status_code == 200, r.text
    first = r.json()
    cid = first["conversation"]
    assert first["turn"] == {"intent": "replace", "filter": None, "text": "animals",
                             "unparsed": [], "message": None}
    assert first["search"]["total"] == 5 and first["search"]["verdict"] == "complete"
    assert first["dropped"] == []      # no conversation of this user had to make room
    r = client.post(f"/api/conversations/{cid}/turns", json={"sentence": "only png"}, headers=admin)
    second = r.json()
    assert (second["turn"]["intent"], second["state"]["filter"]) == ("refine", {"format": "png"})
    assert second["chips"] == [{"k": 0, "label": "format png", "shown": "format png", "field": "format",
                                "negated": False, "value": "png", "editable": True}]
    assert second["search"]["total"] == 2
    assert sorted(h["title"] for h in second["search"]["hits"]) == ["dog-01.png", "dog-02.png"]
    r = client.post(f"/api/conversations/{cid}/turns", json={"sentence": "also jpg"}, headers=admin)
    third = r.json()
    assert third["state"]["filter"] == {"any": [{"format": "png"}, {"format": "jpeg"}]}
    assert third["search"]["total"] == 5 and third["search"]["verdict"] == "complete"
    # a chip edited by hand
    r = client.put(f"/api/conversations/{cid}/state",
                   json={"filter": {"format": "jpeg"}, "text": "animals"}, headers=admin)
    assert r.json()["search"]["total"] == 3
    r = client.put(f"/api/conversations/{cid}/state",
                   json={"filter": {"format": "bmp-ish"}, "text": "animals"}, headers=admin)
    assert r.status_code == 400 and "format" in r.json()["detail"]
    assert [h["sentence"] for h in client.get(f"/api/conversations/{cid}",
                                              headers=admin).json()["history"]] == \
        ["animals", "only png", "also jpg", None]


def test_a_conversation_is_its_users_alone_over_the_api(site):
    client, auth = site
    alice, bob, admin = auth("alice"), auth("bob"), auth("admin")
    cid = client.post("/api/conversations", json={"sentence": "bridge"},
                      headers=alice).json()["conversation"]
    for other in (bob, admin):
        assert client.get(f"/api/conversations/{cid}", headers=other).status_code == 404
        assert client.post(f"/api/conversations/{cid}/turns", json={"sentence": "x"},
                           headers=other).status_code == 404
        assert client.put(f"/api/conversations/{cid}/state", json={"filter": None},
                          headers=other).status_code == 404
        assert client.delete(f"/api/conversations/{cid}", headers=other).status_code == 404
        assert client.get("/api/conversations", headers=other).json() == []
    assert [c["id"] for c in client.get("/api/conversations", headers=alice).json()] == [cid]
    # bob's own conversation searches only what bob may read (nothing)
    r = client.post("/api/conversations", json={"sentence": "bridge"}, headers=bob).json()
    assert r["search"]["total"] == 0
    r = client.post("/api/conversations", json={"sentence": "x" * 1001}, headers=alice)
    assert r.status_code == 422
    assert client.delete(f"/api/conversations/{cid}", headers=alice).status_code == 204


def test_a_turn_past_the_state_bounds_is_a_400_and_stores_nothing(site):
    """A member's conversation cannot grow past the filter bounds."""
    client, auth = site
    bob = auth("bob")
    tags = " and ".join(f"tagged t{k}" for k in range(39))
    cid = client.post("/api/conversations", json={"sentence": f"only {tags}"},
                      headers=bob).json()["conversation"]
    more = " and ".join(f"tagged u{k}" for k in range(39))
    r = client.post(f"/api/conversations/{cid}/turns", json={"sentence": f"only {more}"},
                    headers=bob)
    assert r.status_code == 400
    assert r.json()["detail"].startswith(f"conversation {cid}: its filter would break a bound "
                                         "(filter $.all[64]: more than 64 predicates")
    got = client.get(f"/api/conversations/{cid}", headers=bob).json()
    assert got["turns"] == 1 and len(got["state"]["filter"]["all"]) == 39
