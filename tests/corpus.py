"""Helpers that store search documents directly (assets without files), for
tests of ranking that do not need pixels."""

from __future__ import annotations

from loupe import Library
from loupe.document.compile import FIELDS, UPSERT_DOCUMENT
from loupe.document.languages import ts_config


def add_document(lib: Library, asset_id: int, fields: dict[str, str], lang: str = "en") -> None:
    """Store a search document for a bare asset row (created if missing)."""
    lib.conn.execute(
        "INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type, width, height)"
        " VALUES (%s, %s, %s, 1, 'image/jpeg', 1, 1) ON CONFLICT DO NOTHING",
        (asset_id, lib.tenant_id, asset_id.to_bytes(32, "big")))
    params = {name: "" for name in FIELDS}
    params.update(fields)
    params.update(asset_id=asset_id, tenant_id=lib.tenant_id, lang=lang, cfg=ts_config(lang))
    lib.conn.execute(UPSERT_DOCUMENT, params)
