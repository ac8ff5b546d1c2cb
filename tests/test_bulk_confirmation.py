"""A bulk confirmation is a contract: the confirming request carries the
set it confirmed (COUNT:DIGEST of the asset ids), and when what the action
would change is no longer that set, nothing is applied and the answer
asks again with the new count — through the API and the web form."""

from __future__ import annotations

from pathlib import Path

from loupe import Library
from loupe.bulk.actions import ConfirmationRequired, confirmation_of
from test_web_api import fresh_site  # noqa: F401 - the fixture
from weblib import page_csrf, web_login


def test_the_confirmation_is_the_count_and_a_digest_of_the_ids():
    assert confirmation_of([3, 1, 2]) == confirmation_of([1, 2, 3, 3])
    assert confirmation_of([1, 2, 3]).startswith("3:")
    # the same count, another set: another confirmation
    assert confirmation_of([1, 2, 4]) != confirmation_of([1, 2, 3])


def _drop_first_hit(lib: Library, photos: Path) -> None:
    """Remove the file of the first "sunset" hit from disk and ingest: the
    reachable ten are then another ten."""
    first = lib.search("sunset", limit=1).hits[0].path
    Path(first).unlink()
    lib.ingest(photos)


def test_a_changed_set_is_not_applied_and_is_asked_again(fresh_site, db_url, home,  # noqa: F811
                                                         tmp_path):
    client, _ids, auth = fresh_site
    photos = tmp_path / "photos"
    with Library.open(home, database_url=db_url) as lib:
        lib.set_lexical_settings(keep_cap=10)
    h = auth("admin")
    ask = {"action": "add_keyword", "value": "goldenhour", "q": "sunset"}
    r = client.post("/api/bulk", json=ask, headers=h)
    assert r.status_code == 409
    first = r.json()["confirmation"]
    assert (first.split(":")[0], r.json()["count"], r.json()["changed"]) == ("10", 10, False)
    with Library.open(home, database_url=db_url) as lib:
        _drop_first_hit(lib, photos)
    # the confirmed ten are not the ten it would change now: nothing applied
    r = client.post("/api/bulk", json={**ask, "confirm": True, "confirmation": first},
                    headers=h)
    assert r.status_code == 409, r.text
    second = r.json()["confirmation"]
    assert r.json()["changed"] is True and second != first and second.startswith("10:")
    assert r.json()["detail"].startswith("The result changed since you confirmed it: the "
                                         "action would now change 10 assets. Not applied yet:")
    assert client.get("/api/search", params={"q": "goldenhour"}, headers=h).json()["total"] == 0
    # confirming the new set applies it, to exactly those ten
    r = client.post("/api/bulk", json={**ask, "confirm": True, "confirmation": second},
                    headers=h)
    assert r.status_code == 200 and r.json()["count"] == 10
    assert r.json()["confirmation"] == second
    with Library.open(home, database_url=db_url) as lib:
        kept = [row[0] for row in lib.conn.execute(
            "SELECT asset_id FROM asset_keyword WHERE keyword = 'goldenhour'")]
    assert confirmation_of(kept) == second


def test_the_web_form_carries_what_was_confirmed(fresh_site, db_url, home,  # noqa: F811
                                                 tmp_path):
    client, _ids, _auth = fresh_site
    photos = tmp_path / "photos"
    with Library.open(home, database_url=db_url) as lib:
        lib.set_lexical_settings(keep_cap=10)
    assert web_login(client, "admin", "admin-password").status_code == 303
    csrf = page_csrf(client)
    form = {"action": "add_keyword", "value": "dusk", "q": "sunset", "csrf_token": csrf}
    r = client.post("/bulk", data=form)
    assert r.status_code == 409
    import re
    shown = re.search(r'name="confirmation" value="([^"]+)"', r.text).group(1)
    assert shown.startswith("10:")
    with Library.open(home, database_url=db_url) as lib:
        _drop_first_hit(lib, photos)
    r = client.post("/bulk", data={**form, "confirm": "yes", "confirmation": shown})
    assert r.status_code == 409 and "The result changed since you confirmed it" in r.text
    again = re.search(r'name="confirmation" value="([^"]+)"', r.text).group(1)
    assert again != shown
    r = client.post("/bulk", data={**form, "confirm": "yes", "confirmation": again})
    assert r.status_code == 200 and "applied to 10 assets" in r.text


def test_the_library_asks_again_when_the_confirmed_set_changed(lib, photos):
    from weblib import build_photos

    lib.ingest(build_photos(photos))
    lib.set_lexical_settings(keep_cap=10)
    try:
        lib.bulk("add_keyword", "x", query="sunset")
        raise AssertionError("a truncated result needs a confirmation")
    except ConfirmationRequired as exc:
        token = exc.confirmation
    _drop_first_hit(lib, photos)
    try:
        lib.bulk("add_keyword", "x", query="sunset", confirm=True, confirmation=token)
        raise AssertionError("a changed set must be asked again")
    except ConfirmationRequired as exc:
        assert exc.changed and exc.confirmation != token
    assert lib.conn.execute("SELECT count(*) FROM asset_keyword").fetchone()[0] == 0


def _cli(home: Path, db_url: str, *args: str):
    """``loupe bulk ARGS`` as the owner runs it, in this process (click's runner)."""
    from click.testing import CliRunner

    from loupe.cli import main

    return CliRunner().invoke(main, ["--home", str(home), "--database-url", db_url, "bulk",
                                     *args])


def _keyworded(home: Path, db_url: str, keyword: str) -> list[int]:
    with Library.open(home, database_url=db_url) as lib:
        return sorted(row[0] for row in lib.conn.execute(
            "SELECT asset_id FROM asset_keyword WHERE keyword = %s", (keyword,)))


def test_the_command_line_refuses_with_the_confirmation_and_applies_only_that_set(
        fresh_site, db_url, home):  # noqa: F811
    import json
    import re

    with Library.open(home, database_url=db_url) as lib:
        lib.set_lexical_settings(keep_cap=10)
        reached = confirmation_of(h.asset_id for h in lib.search("sunset", limit=100).hits)
    assert reached.startswith("10:")
    ask = ("add_keyword", "goldenhour", "-q", "sunset")
    refused = _cli(home, db_url, *ask)
    assert refused.exit_code == 1 and refused.stdout == ""
    assert refused.stderr.startswith("Error: not applied: the result is truncated: ")
    assert refused.stderr.rstrip().endswith(
        f"The action would change 10 assets (confirmation {reached}). To apply it to exactly "
        f"those, repeat the command with --confirm {reached}")
    as_json = _cli(home, db_url, *ask, "--json")
    body = json.loads(as_json.stdout)
    assert as_json.exit_code == 1
    assert (body["confirmation_required"], body["changed"], body["count"],
            body["confirmation"], body["verdict"]) == (True, False, 10, reached, "truncated")
    # a confirmation is the set, not a yes: anything else is refused before any search
    for bad in ("yes", "10", "10:XYZ", reached + "0", "\x1b[2J10:" + reached[3:]):
        wrong = _cli(home, db_url, *ask, "--confirm", bad)
        assert wrong.exit_code == 2 and "takes the COUNT:DIGEST" in wrong.stderr, bad
        assert "\x1b" not in wrong.stderr
    yes = _cli(home, db_url, *ask, "--yes")
    assert yes.exit_code == 2 and "--yes confirms nothing" in yes.stderr
    assert _keyworded(home, db_url, "goldenhour") == []
    done = _cli(home, db_url, *ask, "--confirm", reached)
    assert done.exit_code == 0, done.output
    assert re.fullmatch(r"Add keyword “goldenhour”: applied to 10 assets \(result truncated, "
                        r"total 30; audit #\d+\)", done.stdout.splitlines()[0])
    assert confirmation_of(_keyworded(home, db_url, "goldenhour")) == reached


def test_a_members_upload_after_the_dry_run_changes_the_set_and_nothing_is_applied(
        fresh_site, db_url, home, tmp_path):  # noqa: F811
    from imaging import make_image

    client, ids, auth = fresh_site
    sunsets = [i for stem, i in ids.items() if "sunset" in stem]
    first = confirmation_of(sunsets)
    assert first.startswith("30:")
    ask = ("add_keyword", "goldenhour", "-q", "sunset")
    dry = _cli(home, db_url, *ask, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.splitlines() == [
        "dry run: Add keyword “goldenhour”: would apply to 30 assets (result complete, "
        "total 30); nothing changed",
        "match rule: assets holding every query term — 30 hold every term, 30 ranked",
        f"The action would change 30 assets (confirmation {first}). To apply it to exactly "
        f"those, repeat the command without --dry-run, with --confirm {first}"]
    # bob, a member, uploads one more sunset between the dry run and the confirmation
    data = make_image(tmp_path / "up" / "harbour-sunset.jpg", color=(7, 77, 177)).read_bytes()
    r = client.post("/api/upload", headers=auth("bob"),
                    files=[("files", ("harbour-sunset.jpg", data, "image/jpeg"))])
    assert (r.status_code, r.json()["stored"]) == (200, 1), r.text
    with Library.open(home, database_url=db_url) as lib:
        now = [h.asset_id for h in lib.search("sunset", limit=100).hits]
    second = confirmation_of(now)
    assert second.startswith("31:") and set(sunsets) < set(now)
    changed = _cli(home, db_url, *ask, "--confirm", first)
    assert changed.exit_code == 1 and changed.stdout == ""
    assert changed.stderr.splitlines() == [
        "Error: not applied: the result changed since you confirmed it.",
        f"The action would change 31 assets (confirmation {second}). To apply it to exactly "
        f"those, repeat the command with --confirm {second}"]
    assert _keyworded(home, db_url, "goldenhour") == []
    with Library.open(home, database_url=db_url) as lib:
        assert [r["action"] for r in lib.audit_log() if r.get("query")] == []
    done = _cli(home, db_url, *ask, "--confirm", second)
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("Add keyword “goldenhour”: applied to 31 assets (result "
                                  "complete, total 31; audit #")
    assert _keyworded(home, db_url, "goldenhour") == sorted(now)
