"""What the API and the pages share: each function takes a user-bound
:class:`loupe.Library` and turns the library's answers (and errors) into
plain dicts, or into :class:`fastapi.HTTPException` with a reason (4xx, never
a 500 for bad input)."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from fastapi import HTTPException

from ..access.users import AccessError
from ..bulk.actions import ConfirmationRequired, by_match_rule
from ..library import AssetNotFound, Library, SearchResult
from . import queries as wq
from .background import in_words
from .words import bulk_sentence, explain_code, verdict_sentence

#: Document fields "why it matched" looks in, in display order.
WHY_FIELDS = ("title", "keywords", "description", "collections", "filename", "location",
              "creator", "copyright", "vocabulary")


def run_search(lib: Library, q: str, *, scope: str | list[str] | None, lang: str | None,
               limit: int,
               offset: int, filters: Any = None, facets: bool = False) -> SearchResult:
    """``lib.search`` with bad input (unknown scope or language, over-long
    query, a bad filter tree) turned into a 400."""
    try:
        return lib.search(q, lang=lang, limit=limit, offset=offset, scope=scope,
                          filters=filters, facets=facets)
    except AssetNotFound as exc:
        raise HTTPException(404, str(exc)) from exc
    except (ValueError, LookupError) as exc:
        raise HTTPException(400, str(exc)) from exc


def why_payload(lib: Library, asset_id: int, q: str, *, scope: str | list[str] | None,
                lang: str | None, filters: Any = None) -> dict[str, Any]:
    """``lib.why`` for the web: why the asset is or is not in the results
    of ``q`` (C7).

    Raises:
        HTTPException 404: no such asset, or not visible to the user (the
            same answer). HTTPException 400: bad input, as :func:`run_search`.
    """
    if not 0 < asset_id < 2**63:
        raise HTTPException(404, "no such asset")
    try:
        return lib.why(asset_id, q, lang=lang, scope=scope, filters=filters)
    except AssetNotFound:
        raise HTTPException(404, "no such asset") from None
    except (ValueError, LookupError) as exc:
        raise HTTPException(400, str(exc)) from exc


def _relative_paths(lib: Library, paths: list[str]) -> dict[str, str]:
    """``{absolute path: path relative to its ingested folder}`` for files of
    the tenant; a path Loupe does not know maps to its last component only."""
    rel = {p: p.rsplit("/", 1)[-1] for p in paths}
    rel.update(dict(lib.conn.execute(wq.RELATIVE_PATHS, {"tenant_id": lib.tenant_id,
                                                         "paths": list(paths)}).fetchall()))
    return rel


def shows_server_paths(lib: Library) -> bool:
    """Whether the viewer may see absolute server paths (the owner and
    admins); members see paths relative to the ingested folder."""
    return lib.viewer.see_all


def search_payload(res: SearchResult, scope: str | list[str] | None,
                   lib: Library | None = None) -> dict[str, Any]:
    """The API shape of a result: the library's fields, the verdict in plain
    words and each hit's thumbnail URL. With ``lib`` of a member, each hit's
    path is relative to its ingested folder (see :func:`shows_server_paths`)."""
    out = res.as_dict()
    if lib is not None and not shows_server_paths(lib) and (out["hits"] or out["related"]):
        rel = _relative_paths(lib, [h["path"] for h in out["hits"] + out["related"]])
        for h in out["hits"] + out["related"]:
            h["path"] = rel[h["path"]]
    out["scope"] = scope
    out["verdict_text"] = verdict_sentence(res.query, res.total, res.total_exact, res.verdict,
                                           res.reachable, res.corrections, res.meaning_only)
    if not res.query.strip() and res.total == 0:
        out["verdict_text"] = "Nothing passes the filter."
    for h in out["hits"] + out["related"]:
        h["thumbnail_url"] = f"/api/assets/{h['asset_id']}/thumbnail"
        h["why"] = explain_code(h["rank"], h["bonus"], h["explain"])
    return out


def _visible(lib: Library, asset_id: int) -> dict[str, Any]:
    if not 0 < asset_id < 2**63:
        raise HTTPException(404, "no such asset")
    try:
        return lib.show(asset_id)
    except AssetNotFound:
        raise HTTPException(404, "no such asset") from None


def asset_payload(lib: Library, asset_id: int) -> dict[str, Any]:
    """``lib.show`` for the web: server paths of thumbnails replaced by URLs;
    a member sees file and sidecar paths relative to their ingested folder.

    Raises:
        HTTPException 404: no such asset, or not visible to the user (the
            same answer, so that existence does not leak).
    """
    a = _visible(lib, asset_id)
    if not shows_server_paths(lib) and a["files"]:
        rel = _relative_paths(lib, [f["path"] for f in a["files"]])
        for f in a["files"]:
            folder = rel[f["path"]].rpartition("/")[0]
            if f["sidecar"]:
                name = f["sidecar"].rsplit("/", 1)[-1]
                f["sidecar"] = f"{folder}/{name}" if folder else name
            f["path"] = rel[f["path"]]
    a["thumbnail"] = f"/api/assets/{asset_id}/thumbnail" if a.get("thumbnail") else None
    a["original"] = f"/api/assets/{asset_id}/original"
    a["collections"] = sorted({f["collection"] for f in a["files"] if f["collection"]})
    return a


def thumbnail_path(lib: Library, asset_id: int) -> Path:
    """The thumbnail file of a visible asset (404 otherwise, or when it has none;
    its media type follows from its suffix)."""
    if not 0 < asset_id < 2**63:
        raise HTTPException(404, "no such asset")
    try:
        path = Path(lib.thumbnail(asset_id))
    except AssetNotFound:
        raise HTTPException(404, "no such asset") from None
    if not path.is_file():
        raise HTTPException(404, "this asset has no thumbnail")
    return path


def open_original_file(lib: Library, asset_id: int) -> tuple[Any, Path, str]:
    """``(open binary file, path, media type)`` of a visible asset's original,
    checked to hold the asset's bytes (:meth:`loupe.Library.open_original`):
    serve the returned file object, never the path (a file swapped
    for a symbolic link after ingest must not be followed). 404 otherwise."""
    if not 0 < asset_id < 2**63:
        raise HTTPException(404, "no such asset")
    try:
        fh, path = lib.open_original(asset_id)
    except AssetNotFound:
        raise HTTPException(404, "no such asset") from None
    return fh, path, mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def why_matched(lib: Library, asset: dict[str, Any], q: str, lang: str | None) -> list[dict]:
    """For each term the query searches, the fields of the asset's search
    document (in ``lang``) that hold it, as the analyzer sees both sides:
    ``[{"term", "fields": [...]}]``. Empty for an empty query."""
    if not q.strip():
        return []
    try:
        terms = lib.analyze(q, lang=lang, query=True)
    except ValueError:
        return []
    lang = lang or lib.languages()[0]
    doc = next((d for d in asset.get("documents", []) if d["lang"] == lang), None)
    if doc is None:
        return [{"term": t, "fields": []} for t in terms]
    field_terms: dict[str, set[str]] = {}
    for name in WHY_FIELDS:
        value = doc.get(name)
        if isinstance(value, (list, tuple)):
            value = " ".join(str(v) for v in value)
        if value:
            field_terms[name] = set(lib.analyze(str(value), lang=lang))
    machine = (asset.get("machine") or {}).get("words", {}).get(lang)
    if machine:  # the pixels' words, shown apart as "machine: ..."
        field_terms["machine"] = set(lib.analyze(machine, lang=lang))
    return [{"term": t, "fields": [f for f in WHY_FIELDS if t in field_terms.get(f, ())]
             + ([f"machine: {machine}"] if t in field_terms.get("machine", ()) else [])}
            for t in terms]


def run_bulk(lib: Library, action: str, value: str | None, *, q: str,
             scope: str | list[str] | None, lang: str | None, confirm: bool,
             any_term: bool = False, dry_run: bool = False,
             filters: Any = None, confirmation: str | None = None) -> dict[str, Any]:
    """``lib.bulk`` for the web. When the verdict needs a confirmation the
    answer is ``{"confirmation_required": True, "verdict", "total",
    "total_exact", "confirmation", "changed", "message"}`` and nothing
    changed; otherwise the library's answer plus ``message``.

    A confirmation is a contract: ``confirm`` counts only with the
    ``confirmation`` the previous answer gave ("COUNT:DIGEST" of the set,
    :func:`loupe.bulk.actions.confirmation_of`); the action then applies
    only if the set is still that one, else the answer asks again with the
    new count (``changed``). ``confirm`` without it confirms nothing.

    Raises:
        HTTPException 400: bad value (e.g. not an ISO date), unknown scope.
        HTTPException 403: the user is a member (bulk actions are for admins).
    """
    try:
        out = lib.bulk(action, value, query=q, scope=scope, lang=lang,
                       confirm=confirm and bool(confirmation), any_term=any_term,
                       dry_run=dry_run, filters=filters, confirmation=confirmation or None)
    except ConfirmationRequired as exc:
        words = verdict_sentence(q, exc.total, exc.total_exact, exc.verdict, exc.reachable)
        count = int((exc.confirmation or "0:").split(":", 1)[0])
        changed = (f"The result changed since you confirmed it: the action would now change "
                   f"{count:,} asset{'s' if count != 1 else ''}. " if exc.changed else "")
        return {"confirmation_required": True, "verdict": exc.verdict, "total": exc.total,
                "total_exact": exc.total_exact, "reachable": exc.reachable,
                "match": exc.match, "matched_all_terms": exc.matched_all_terms,
                "confirmation": exc.confirmation, "changed": exc.changed, "count": count,
                "rule_text": rule_sentence(exc.match, exc.matched_all_terms or 0,
                                           exc.reachable),
                "message": f"{changed}Not applied yet: {words} Confirm to apply it to "
                           f"{_applies_to(exc.match, exc.matched_all_terms or 0, exc.reachable)}."}
    except AccessError as exc:
        raise HTTPException(403, str(exc)) from exc
    except (ValueError, LookupError) as exc:
        raise HTTPException(400, str(exc)) from exc
    count = (by_match_rule(out["match"], out["matched_all_terms"], out["matched_any"])
             if out["dry_run"] else out["count"])
    return {**out, "message": bulk_sentence(action, value, count, dry_run=out["dry_run"]),
            "rule_text": rule_sentence(out["match"], out["matched_all_terms"],
                                       out["matched_any"])}


def _applies_to(match: str, every: int, reached: int) -> str:
    """The assets a confirmed action would change, as the confirmation
    states them: the match rule's count, not the rows the search reached (it
    had said "the 201 results" for an action that changes 7)."""
    if match == "any":
        return f"the {reached:,} result{'s' if reached != 1 else ''} the search can reach"
    return (f"the {every:,} asset{'s' if every != 1 else ''} of the {reached:,} the search "
            f"can reach that hold every query term")


def rule_sentence(match: str, every: int, ranked: int) -> str:
    """The bulk match rule in words, with both counts."""
    if match == "any":
        return (f"Match rule: every asset the search ranked ({ranked:,}; {every:,} of them "
                f"hold every query term).")
    return (f"Match rule: only assets holding every query term ({every:,} of the "
            f"{ranked:,} the search ranked).")


#: Model kinds that can serve each vector lane (see loupe.models.embedders).
LANE_KINDS = {"image": {"clip-onnx", "nomic-onnx"},
              "text": {"clip-onnx", "nomic-onnx", "sentence-transformers"}}


def lane_status(lib: Library) -> list[dict[str, Any]]:
    """One entry per lane: ``{"lane", "on", "model", "text"}``; an off lane's
    text says how to turn it on (which command, or which kind of model to
    install when none installed can serve it)."""
    models = lib.models()
    by_lane = {lane: m["name"] for m in models for lane in m["lanes"]}
    out = [{"lane": "lexical", "on": True, "model": None,
            "text": "word search on: titles, keywords, descriptions and other metadata (BM25F)"}]
    for lane, what, kind in (("image", "image search", "an OpenCLIP export (Immich's layout)"),
                             ("text", "meaning search over the metadata text",
                              "a sentence-transformers folder")):
        able = [m["name"] for m in models if m["kind"] in LANE_KINDS[lane]]
        if lane in by_lane:
            text = f"{what} on: model {by_lane[lane]}"
        elif able:
            text = (f"{what} off: no model serves the {lane} lane — run 'loupe models use "
                    f"{able[0]} --lane {lane}' (installed and able: {', '.join(able)})")
        else:
            text = (f"{what} off: no {lane} model installed — install {kind} with "
                    f"'loupe models install FOLDER --name NAME', then "
                    f"'loupe models use NAME --lane {lane}'")
        out.append({"lane": lane, "on": lane in by_lane, "model": by_lane.get(lane),
                    "text": text})
    return out


def status_payload(lib: Library, background: dict[str, Any] | None = None) -> dict[str, Any]:
    """Lanes for everyone; for admins also vectors waiting, library counts,
    the last 10 ingest runs and the latest run's problems (paths and counts
    of the whole tenant are not shown to members), and ``background``: the
    server's background work (:meth:`loupe.web.background.BackgroundWork.state`),
    or None when the server leaves that work to the commands."""
    user = lib.user
    admin = user is None or bool(user.get("admin"))
    out: dict[str, Any] = {"lanes": lane_status(lib), "admin": admin}
    if not admin:
        return out
    runs = []
    for rid, root, started, finished, summary, problems in lib.conn.execute(
            wq.INGEST_RUNS, {"tenant_id": lib.tenant_id, "limit": 10}):
        s = summary or {}
        runs.append({"id": rid, "root": root, "started_at": started.isoformat(),
                     "finished_at": finished.isoformat() if finished else None,
                     "state": "finished" if finished else "running or interrupted",
                     "files_seen": s.get("files_seen"), "new_assets": s.get("new_assets"),
                     "failed": s.get("failed"), "skipped": s.get("skipped"),
                     "problems": problems})
    out.update({"background": background, "background_text": in_words(background),
                "vectors_waiting": lib.vectors_waiting(), "stats": lib.stats(),
                "ingest_runs": runs, "failures": lib.failures()})
    return out
