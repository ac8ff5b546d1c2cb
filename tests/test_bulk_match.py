"""Bulk actions state their match rule and, by default, act only on the
assets holding every query term (C6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loupe import Library
from loupe.bulk import ConfirmationRequired

from imaging import make_image, write_sidecar

LOUPE = [sys.executable, "-m", "loupe.cli"]


@pytest.fixture
def lighthouses(lib: Library, photos: Path) -> Library:
    """30 lighthouses; 10 of them at night (5 by file name, 5 by an XMP
    sidecar description written with ExifTool)."""
    for i in range(30):
        name = f"lighthouse-night-{i:02d}.jpg" if i < 5 else f"lighthouse-{i:02d}.jpg"
        img = make_image(photos / name, color=((i * 37) % 256, (i * 11) % 256, 120))
        if 5 <= i < 10:
            write_sidecar(img, "-XMP-dc:Description=The beam at night")
    assert lib.ingest(photos).new_assets == 30
    return lib


def night_ids(lib: Library) -> set[int]:
    return {h.asset_id for h in lib.search("night", limit=100).hits}


def test_bulk_acts_on_assets_holding_every_term(lighthouses: Library):
    lib = lighthouses
    night = night_ids(lib)
    assert len(night) == 10
    ranked = lib.search("lighthouse night", limit=100)
    assert (ranked.total, ranked.verdict) == (30, "complete")   # the search ranks all 30

    preview = lib.bulk("add_keyword", "beacon", query="lighthouse night", dry_run=True)
    assert {k: preview[k] for k in ("match", "matched_all_terms", "matched_any", "count",
                                    "audit_id", "dry_run")} == {
        "match": "all", "matched_all_terms": 10, "matched_any": 30, "count": 0,
        "audit_id": None, "dry_run": True}
    assert lib.search("beacon").total == 0 and lib.audit_log() == []

    out = lib.bulk("add_keyword", "beacon", query="lighthouse night")
    assert (out["match"], out["matched_all_terms"], out["matched_any"], out["count"]) == (
        "all", 10, 30, 10)
    assert {h.asset_id for h in lib.search("beacon", limit=100).hits} == night

    wide = lib.bulk("add_keyword", "coast", query="lighthouse night", any_term=True)
    assert (wide["match"], wide["count"]) == ("any", 30)
    assert lib.search("coast", limit=100).total == 30

    # a one-term query: both rules agree
    one = lib.bulk("add_keyword", "seen", query="night", dry_run=True)
    assert (one["matched_all_terms"], one["matched_any"]) == (10, 10)


def test_confirmation_shows_both_counts(lighthouses: Library):
    lib = lighthouses
    lib.set_lexical_settings(keep_cap=20)          # the lane keeps 20 of 30: truncated
    with pytest.raises(ConfirmationRequired) as info:
        lib.bulk("add_keyword", "beacon", query="lighthouse night")
    exc = info.value
    assert (exc.verdict, exc.reachable, exc.match, exc.matched_all_terms) == (
        "truncated", 20, "all", 10)
    assert "10 of the 20 it reached hold every query term; the action applies to those" \
        in str(exc)
    assert lib.search("beacon").total == 0
    out = lib.bulk("add_keyword", "beacon", query="lighthouse night", confirm=True)
    assert out["count"] == 10 and out["verdict"] == "truncated"


def test_cli_states_the_rule_and_the_counts(lighthouses: Library, db_url, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    base = LOUPE + ["--home", str(home), "--database-url", db_url, "bulk", "add_keyword"]
    out = subprocess.run(base + ["beacon", "-q", "lighthouse night", "--dry-run"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "dry run: add_keyword 'beacon' would apply to 10 assets (result complete, "
        "total 30); nothing changed",
        "match rule: assets holding every query term — 10 hold every term, 30 ranked"]
    out = subprocess.run(base + ["beacon", "-q", "lighthouse night", "--any-term", "--json"],
                         env=env, capture_output=True, text=True, timeout=120)
    body = json.loads(out.stdout)
    assert (body["match"], body["count"], body["matched_all_terms"]) == ("any", 30, 10)


def test_web_bulk_states_the_rule_and_the_counts(lighthouses: Library, db_url, home):
    from fastapi.testclient import TestClient

    from loupe.web import create_app

    lighthouses.create_user("admin", "admin-password", admin=True)
    app = create_app(home, database_url=db_url, pool_size=1)
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "admin", "password": "admin-password"})
        h = {"Authorization": f"Bearer {tok.json()['token']}"}
        r = client.post("/api/bulk", headers=h, json={
            "action": "add_keyword", "value": "beacon", "q": "lighthouse night",
            "dry_run": True})
        assert r.status_code == 200, r.text
        assert {k: r.json()[k] for k in ("match", "matched_all_terms", "matched_any", "count",
                                         "dry_run")} == {
            "match": "all", "matched_all_terms": 10, "matched_any": 30, "count": 0,
            "dry_run": True}
        lighthouses.set_lexical_settings(keep_cap=20)
        r = client.post("/api/bulk", headers=h, json={
            "action": "add_keyword", "value": "beacon", "q": "lighthouse night"})
        assert r.status_code == 409
        assert {k: r.json()[k] for k in ("match", "matched_all_terms", "matched_any")} == {
            "match": "all", "matched_all_terms": 10, "matched_any": 20}
        assert r.json()["rule"] == ("Match rule: only assets holding every query term (10 of "
                                    "the 20 the search ranked).")
        r = client.post("/api/bulk", headers=h, json={
            "action": "add_keyword", "value": "beacon", "q": "lighthouse night",
            "confirm": True})
        assert (r.status_code, r.json()["count"], r.json()["match"]) == (200, 10, "all")
    assert lighthouses.search("beacon").total == 10
