"""Writing and reading an asset's machine facts (``asset_machine``, 0019)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from . import queries as q
from .analyse import MachineFacts
from .words import machine_text


def store(conn: psycopg.Connection, tenant_id: int, asset_id: int,
          facts: MachineFacts | None) -> None:
    """Write an asset's facts inside the caller's transaction (``None``
    writes nothing). Facts without an OCR run keep the OCR text stored."""
    if facts is None:
        return
    row = facts.as_row()
    row["cues"] = Jsonb(row["cues"])
    conn.execute(q.UPSERT_MACHINE, {**row, "asset_id": asset_id, "tenant_id": tenant_id,
                                    "keep_ocr": facts.ocr_text is None})


def load(conn: psycopg.Connection, asset_id: int) -> dict[str, Any] | None:
    """An asset's facts as a dict of ``asset_machine`` columns, or None."""
    row = conn.execute(q.ASSET_MACHINE, {"asset_id": asset_id}).fetchone()
    return dict(zip(q.MACHINE_COLUMNS, row)) if row else None


def machine_texts(conn: psycopg.Connection, asset_id: int, languages: list[str]) -> dict[str, str]:
    """The machine words of an asset per language (``{lang: text}``; '' each
    when it has no facts)."""
    facts = load(conn, asset_id)
    return {lang: machine_text(facts, lang) for lang in languages}
