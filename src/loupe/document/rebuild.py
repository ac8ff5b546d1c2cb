"""Tenant-wide changes that rebuild search documents, each in one
transaction with the documents it changes: the library languages, and an
imported vocabulary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from .. import queries as q
from .compile import rebuild_documents
from .languages import validate_languages
from .vocabulary import AFFECTED_ASSETS, read_vocabulary, store_vocabulary


def languages(conn: psycopg.Connection, tenant_id: int) -> list[str]:
    """The tenant's library languages, first = default query language."""
    return list(conn.execute(q.TENANT_LANGUAGES, {"tenant_id": tenant_id}).fetchone()[0])


def set_languages(conn: psycopg.Connection, tenant_id: int, langs: list[str]) -> None:
    """Make ``langs`` the library languages (one search document per asset
    per language; the list replaces the previous one, first = default query
    language): every asset's documents rebuilt for them, the statistics of
    languages left out dropped. Nothing is done when they are the current ones.

    Raises:
        ValueError: an empty list or an unknown code
            (:func:`loupe.document.languages.validate_languages`).
    """
    langs = validate_languages(langs)
    if langs == languages(conn, tenant_id):
        return
    with conn.transaction():
        conn.execute(q.SET_LANGUAGES, {"tenant_id": tenant_id, "langs": langs})
        for (asset_id,) in conn.execute(q.ASSET_IDS, {"tenant_id": tenant_id}).fetchall():
            rebuild_documents(conn, tenant_id, asset_id, langs)
        conn.execute(q.DROP_LANGUAGE_STATS, {"tenant_id": tenant_id, "langs": langs})


def import_vocabulary(conn: psycopg.Connection, tenant_id: int, langs: list[str],
                      path: str | Path, name: str | None = None, *,
                      progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Import (or replace) the controlled vocabulary in file ``path`` (JSON,
    CSV or SKOS; named ``name``, else as the file says;
    :func:`loupe.document.vocabulary.read_vocabulary`) and rebuild, in
    ``langs``, the documents of the assets tagged before or after, all in one
    transaction. ``progress(done, total)``: assets whose documents were
    rebuilt, of those to rebuild, after each.

    Returns ``{"vocabulary", "terms", "assets_tagged", "documents_rebuilt"}``.

    Raises:
        loupe.document.vocabulary.VocabularyError: the file cannot be imported.
    """
    vocab_name, terms = read_vocabulary(path)
    vocab_name = name or vocab_name
    params = {"tenant_id": tenant_id}
    with conn.transaction():
        before = {r[0] for r in conn.execute(q.ASSETS_WITH_VOCABULARY, params)}
        vocab_id = store_vocabulary(conn, tenant_id, vocab_name, terms)
        after = {r[0] for r in conn.execute(AFFECTED_ASSETS, params)}
        todo = sorted(before | after)
        rebuilt = 0
        for done, asset_id in enumerate(todo, 1):
            rebuilt += rebuild_documents(conn, tenant_id, asset_id, langs)
            if progress:
                progress(done, len(todo))
        tagged = conn.execute(q.VOCABULARY_ASSETS, {"vocabulary_id": vocab_id}).fetchone()[0]
    return {"vocabulary": vocab_name, "terms": len(terms), "assets_tagged": tagged,
            "documents_rebuilt": rebuilt}


def vocabularies(conn: psycopg.Connection, tenant_id: int) -> list[dict[str, Any]]:
    """The tenant's vocabularies: ``{"vocabulary", "terms", "assets_tagged"}``."""
    return [{"vocabulary": r[0], "terms": r[1], "assets_tagged": r[2]}
            for r in conn.execute(q.VOCABULARIES, {"tenant_id": tenant_id})]
