"""Names people wrote in files ingested before Loupe read them.

An ingest skips unchanged files, so files ingested before migration 0022
would never have their ``PersonInImage``, MWG / Microsoft region names or
People tags read. Their ExifTool output is kept in ``asset_file.raw_metadata``
(``{"file": ..., "sidecar": ...}``, read without ``-struct``): on the first
open after 0022, :func:`backfill_people` reads the names from it
(:func:`loupe.ingest.metadata.people_fields`, which pairs flattened MWG
region lists only when they line up; no areas from that form), stores them
in the file's normalised metadata, and recompiles its asset's documents.
"""

from __future__ import annotations

import json

import psycopg

from ..document.compile import rebuild_documents
from ..ingest.metadata import people_fields
from ..ingest.metadata_bounds import bound_fields

# Files whose raw metadata holds a field naming people, and no "people" yet.
CANDIDATES = """
SELECT f.id, f.tenant_id, f.asset_id, f.raw_metadata, t.languages
FROM asset_file f JOIN tenant t ON t.id = f.tenant_id
WHERE NOT (f.metadata ? 'people')
  AND f.raw_metadata::text ~ '(iptcExt:PersonInImage|mwg-rs:Region|XMP-MP:Region|digiKam:TagsList|lr:HierarchicalSubject)'
ORDER BY f.id
"""
SET_PEOPLE = """
UPDATE asset_file SET metadata = metadata || %(people)s::jsonb WHERE id = %(file_id)s
"""


def backfill_people(conn: psycopg.Connection) -> int:
    """Add ``people`` to the metadata of files that name people in their raw
    ExifTool output, and recompile their assets' documents (one transaction
    per asset). Returns the number of files updated."""
    updated = 0
    for file_id, tenant_id, asset_id, raw, languages in conn.execute(CANDIDATES).fetchall():
        parts = [raw.get("file") or {}, raw.get("sidecar") or {}]
        people: list[str] = []
        for part in parts[::-1]:          # the sidecar's names win, like merge()
            people = people_fields(part)[0]
            if people:
                break
        if not people:
            continue
        bounded, _ = bound_fields({"people": people})
        with conn.transaction():
            conn.execute(SET_PEOPLE, {"file_id": file_id,
                                      "people": json.dumps({"people": bounded["people"]})})
            rebuild_documents(conn, tenant_id, asset_id, list(languages))
        updated += 1
    return updated
