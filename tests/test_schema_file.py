"""src/loupe/db/schema.sql is today's schema: the checked-in file equals a fresh
generation from the migrations (``python -m loupe.db.schema`` regenerates it),
and the generation drops what changes from run to run."""

from __future__ import annotations

import difflib

from loupe.db.schema import SCHEMA_FILE, generate, normalise


def test_schema_file_matches_the_migrations(pg_admin_url):
    fresh = generate(pg_admin_url)
    checked_in = SCHEMA_FILE.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(checked_in.splitlines(True), fresh.splitlines(True),
                                        "schema.sql (checked in)", "schema.sql (migrations)",
                                        n=1))
    assert checked_in == fresh, ("src/loupe/db/schema.sql is stale: run "
                                 "`python -m loupe.db.schema`\n" + diff[:4000])
    assert "CREATE TABLE public.asset (" in fresh


def test_normalise_drops_the_banner_settings_and_restrict_key():
    dump = ("--\n-- PostgreSQL database dump\n--\n\n"
            "\\restrict Zq8m3\n\n"
            "-- Dumped from database version 18.1\n-- Dumped by pg_dump version 18.1\n\n"
            "SET statement_timeout = 0;\n"
            "SELECT pg_catalog.set_config('search_path', '', false);\n\n\n\n"
            "CREATE TABLE public.t (\n    id integer   \n);\n\n"
            "\\unrestrict Zq8m3\n")
    out = normalise(dump)
    body = out.split("\n", 4)[4]
    assert body == "CREATE TABLE public.t (\n    id integer\n);\n"
