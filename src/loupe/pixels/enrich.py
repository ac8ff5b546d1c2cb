"""``loupe enrich``: compute the machine words that assets are missing.

Missing means no ``asset_machine`` row, a row of an older rule version
(:data:`loupe.pixels.analyse.VERSION`), or — when OCR is on for the library
— a row whose OCR never ran. One transaction per asset (facts + rebuilt
search documents), assets in id order: an interrupted run keeps what it
finished and the next run goes on from what is still missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from ..assets.view import NoVerifiedFile, open_asset_bytes
from ..document.compile import rebuild_documents
from ..faces import queries as faces_q
from . import ocr as ocr_mod
from . import queries as q
from .analyse import VERSION, MachineFacts, analyse_file
from .store import store


def settings(conn: psycopg.Connection, tenant_id: int) -> dict:
    """The tenant's enrichment settings: ``{"ocr", "ocr_budget_ms", "ocr_min_score"}``."""
    row = conn.execute(q.MACHINE_SETTINGS, {"tenant_id": tenant_id}).fetchone()
    return {"ocr": bool(row[0]), "ocr_budget_ms": int(row[1]), "ocr_min_score": float(row[2])}


def change_settings(conn: psycopg.Connection, tenant_id: int, **changes: Any) -> dict:
    """Change ``ocr`` (bool), ``ocr_budget_ms`` (whole number within
    100-60,000) or ``ocr_min_score`` (0-1); returns the settings now stored.
    OCR turned on makes OCR "missing" for every asset at the next
    :func:`enrich`.

    Raises:
        ValueError: an unknown key or a value out of its bound (named).
    """
    new = {**settings(conn, tenant_id), **changes}
    if set(new) != {"ocr", "ocr_budget_ms", "ocr_min_score"}:
        raise ValueError(f"unknown machine setting(s): {sorted(set(changes) - set(new))}")
    if not isinstance(new["ocr"], bool):
        raise ValueError(f"ocr must be true or false, not {new['ocr']!r}")
    if not (isinstance(new["ocr_budget_ms"], int) and 100 <= new["ocr_budget_ms"] <= 60000):
        raise ValueError(f"ocr_budget_ms = {new['ocr_budget_ms']!r} is out of range: "
                         f"it must be a whole number within 100 and 60,000")
    if not 0 <= float(new["ocr_min_score"]) <= 1:
        raise ValueError(f"ocr_min_score = {new['ocr_min_score']!r} is out of range: "
                         f"it must be within 0 and 1")
    conn.execute(q.SET_MACHINE_SETTINGS, {**new, "tenant_id": tenant_id})
    return settings(conn, tenant_id)


def facts_for(path: str, opts: dict, fileobj=None, decoded=None) -> MachineFacts:
    """Facts of the image at ``path`` (read from ``fileobj`` when given) with
    OCR as ``opts`` (settings) say. ``decoded``: the ingest's decoded image
    (:func:`loupe.pixels.analyse.analyse_file`). Never raises (a failure is
    the facts' ``error`` or an OCR note in cues)."""
    facts = analyse_file(path, fileobj, decoded)
    if opts["ocr"] and facts.error is None:
        if ocr_mod.likely_text(facts.kind, facts.cues):
            try:
                text, ms, complete = ocr_mod.read_text(path, budget_ms=opts["ocr_budget_ms"],
                                                       min_score=opts["ocr_min_score"],
                                                       fileobj=fileobj)
                facts.ocr_text, facts.ocr_ms = text, ms
                facts.ocr_lang = ocr_mod.OCR_LANG
                if not complete:
                    facts.cues["ocr_budget_hit"] = True
            except Exception as exc:  # OCR trouble never fails the asset
                facts.ocr_text = ""
                facts.cues["ocr_error"] = f"{type(exc).__name__}: {exc}"[:300]
        else:
            facts.ocr_text, facts.ocr_lang, facts.ocr_ms = "", ocr_mod.OCR_LANG, 0
    return facts


def enrich(conn: psycopg.Connection, tenant_id: int, languages: list[str], *,
           progress: Callable[[int, int], None] | None = None, batch: int = 64) -> dict:
    """Compute missing machine facts (machine words) of the tenant's assets
    and rebuild their documents; resumable (what is done stays done).

    The pixels are read from a file that still holds the asset's bytes
    (:func:`loupe.assets.view.open_asset_bytes`), never by path: an asset
    none of whose files does (a file replaced, linked or removed since the
    ingest) is skipped and stays pending until the next ingest. When some file of it is there but holds other bytes (or is a
    link, or not a regular file) — not when its files are only missing or
    unreadable, as under an unmounted source — its stored facts,
    when of an older rule version (such as
    every row after migration 0028), are removed with the words they gave
    its documents, its vectors, its faces and its perceptual hash (each
    computed again by its own pass once a file holds the asset's bytes):
    they may come from bytes that were not
    its own, and nothing can check them now (a link planted before the fix kept the private scan's OCR text,
    then its text vector). Facts of the current version were computed from
    verified bytes and stay. When a recomputation changes an asset's machine
    words, its text-lane vectors (which embedded the old words) are removed
    for the next ``loupe embed`` to compute. Returns ``{"computed",
    "warnings", "ocr_read", "pending", "skipped", "skipped_reasons"}``:
    ``skipped`` counts those assets, ``skipped_reasons`` names the first 20,
    one line each."""
    opts = settings(conn, tenant_id)
    params = {"tenant_id": tenant_id, "version": VERSION, "ocr": opts["ocr"]}
    total = conn.execute(q.COUNT_MISSING, params).fetchone()[0]
    done = warnings = read = 0
    skipped: list[str] = []
    after = 0
    if progress:
        progress(0, total)
    while True:
        ids = [r[0] for r in conn.execute(q.MISSING, {**params, "after": after,
                                                      "batch": batch}).fetchall()]
        if not ids:
            break
        for asset_id in ids:
            after = asset_id
            try:
                fh, path = open_asset_bytes(conn, asset_id)
            except NoVerifiedFile as exc:
                dropped = 0
                # facts from bytes that cannot be checked go — on evidence
                # only: a file merely missing or unreadable now keeps them
                with conn.transaction():
                    if exc.evidence:
                        dropped = conn.execute(q.DROP_STALE_FACTS, {
                            "asset_id": asset_id, "version": VERSION}).rowcount
                    if dropped:
                        for stmt in (q.DROP_ASSET_VECTORS, q.DROP_ASSET_FACES,
                                     q.DROP_ASSET_FACE_SCANS, q.DROP_ASSET_HASH):
                            conn.execute(stmt, {"asset_id": asset_id})
                        conn.execute(faces_q.DROP_EMPTY_PEOPLE, {"tenant_id": tenant_id})
                        rebuild_documents(conn, tenant_id, asset_id, languages)
                skipped.append(str(exc) + ("; its facts of an older version were removed"
                                           if dropped else ""))
                continue
            with fh:
                facts = facts_for(path, opts, fileobj=fh)
            with conn.transaction():
                words = conn.execute(q.MACHINE_WORDS_OF, {"asset_id": asset_id}).fetchall()
                store(conn, tenant_id, asset_id, facts)
                rebuild_documents(conn, tenant_id, asset_id, languages)
                if conn.execute(q.MACHINE_WORDS_OF, {"asset_id": asset_id}).fetchall() != words:
                    # its text vectors embedded the words it had: computed
                    # again by the next 'loupe embed', never searched stale
                    conn.execute(q.DROP_TEXT_VECTORS, {"asset_id": asset_id})
            done += 1
            warnings += facts.error is not None
            read += bool(facts.ocr_text)
            if progress:
                progress(done, total)
    pending = conn.execute(q.COUNT_MISSING, params).fetchone()[0]
    return {"computed": done, "warnings": warnings, "ocr_read": read, "pending": pending,
            "skipped": len(skipped), "skipped_reasons": skipped[:20]}
