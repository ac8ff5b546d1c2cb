"""Query-set files (E1–E3) and TREC qrels/run files.

A query set is a JSON Lines file, one query per line (UTF-8)::

    {"id": "b01", "text": "red square on a blue background",
     "provenance": "blind", "register": "objects",
     "strata": {"category": "shapes"},
     "truth": [{"path": "shapes/red-on-blue.png", "grade": 2}]}

``id``        unique in the file (string; numbers are turned into strings).
``text``      the query as a user would type it (non-empty).
``provenance`` ``blind`` — written by someone who saw only the pixels — or
              ``caption-derived`` — a paraphrase of an asset's caption, the
              positive control of the leak check (E2, E4).
``register``  ``objects`` (visible objects and arrangement), ``style``
              (style or mood) or ``question`` (E2).
``strata``    optional object of label → value (category, image type,
              text-in-image …; E3): every figure is also reported per value.
``truth``     optional agreed ground truth: assets named by ``path`` (the file
              path relative to the ingested folder) or ``sha256`` (the content
              hash, hex), each with a ``grade`` 0/1/2 (default 2). Both
              survive a re-ingest; asset ids need not.

Lines that are empty or start with ``#`` are skipped. TREC files follow
trec_eval: qrels ``qid 0 docno grade``, runs ``qid Q0 docno rank score tag``.
Loupe writes an asset's docno as its content sha256 (hex), which is stable
across re-ingests and says nothing about the picture.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PROVENANCES = ("blind", "caption-derived")
REGISTERS = ("objects", "style", "question")


class QuerySetError(ValueError):
    """A query-set or TREC file that cannot be read; the message names the line."""


@dataclass
class Query:
    """One evaluation query (see the module docstring for the fields)."""

    id: str
    text: str
    provenance: str
    register: str
    strata: dict[str, str] = field(default_factory=dict)
    truth: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not d["strata"]:
            d.pop("strata")
        if not d["truth"]:
            d.pop("truth")
        return d


def parse_query(obj: Any, where: str = "query") -> Query:
    """Validate one decoded JSON object into a :class:`Query`.

    Raises:
        QuerySetError: a missing or invalid field (the message says which).
    """
    if not isinstance(obj, dict):
        raise QuerySetError(f"{where}: expected a JSON object")
    unknown = set(obj) - {"id", "text", "provenance", "register", "strata", "truth"}
    if unknown:
        raise QuerySetError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    qid = obj.get("id")
    if isinstance(qid, (int, float)) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or not qid.strip() or any(c.isspace() for c in qid):
        raise QuerySetError(f"{where}: 'id' must be a non-empty string without spaces")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        raise QuerySetError(f"{where} ({qid}): 'text' must be a non-empty string")
    prov = obj.get("provenance")
    if prov not in PROVENANCES:
        raise QuerySetError(f"{where} ({qid}): 'provenance' must be one of "
                            f"{', '.join(PROVENANCES)}, not {prov!r}")
    reg = obj.get("register")
    if reg not in REGISTERS:
        raise QuerySetError(f"{where} ({qid}): 'register' must be one of "
                            f"{', '.join(REGISTERS)}, not {reg!r}")
    strata = obj.get("strata") or {}
    if not isinstance(strata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in strata.items()):
        raise QuerySetError(f"{where} ({qid}): 'strata' must map labels to string values")
    truth = []
    for ref in obj.get("truth") or []:
        if not isinstance(ref, dict) or (("path" in ref) == ("sha256" in ref)):
            raise QuerySetError(f"{where} ({qid}): each 'truth' entry needs exactly one of "
                                "'path' or 'sha256'")
        grade = ref.get("grade", 2)
        if grade not in (0, 1, 2) or isinstance(grade, bool):
            raise QuerySetError(f"{where} ({qid}): truth grade must be 0, 1 or 2")
        if "path" in ref:
            if not isinstance(ref["path"], str) or not ref["path"] or ref["path"].startswith("/"):
                raise QuerySetError(f"{where} ({qid}): truth 'path' must be relative to the "
                                    "ingested folder")
            truth.append({"path": ref["path"], "grade": grade})
        else:
            h = str(ref["sha256"]).lower()
            if len(h) != 64 or any(c not in "0123456789abcdef" for c in h):
                raise QuerySetError(f"{where} ({qid}): truth 'sha256' must be 64 hex digits")
            truth.append({"sha256": h, "grade": grade})
    return Query(qid, text.strip(), prov, reg, dict(strata), truth)


def read_queries(path: str | Path) -> list[Query]:
    """Read a JSONL query set.

    Raises:
        QuerySetError: invalid JSON, an invalid query, a duplicate id or no query.
        FileNotFoundError: no such file.
    """
    path = Path(path)
    out: list[Query] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuerySetError(f"{path}:{n}: not JSON: {exc.msg}") from exc
        q = parse_query(obj, f"{path}:{n}")
        if q.id in seen:
            raise QuerySetError(f"{path}:{n}: duplicate id {q.id!r}")
        seen.add(q.id)
        out.append(q)
    if not out:
        raise QuerySetError(f"{path}: no queries")
    return out


def write_queries(queries: list[Query], path: str | Path) -> None:
    """Write queries as JSONL (the format :func:`read_queries` reads)."""
    Path(path).write_text("".join(json.dumps(q.as_dict(), ensure_ascii=False) + "\n"
                                  for q in queries), encoding="utf-8")


def write_qrels(qrels: dict[str, dict[str, int]], path: str | Path) -> None:
    """Write qrels ``{qid: {docno: grade}}`` in TREC format (``qid 0 docno grade``)."""
    lines = [f"{q} 0 {d} {g}\n" for q in sorted(qrels) for d, g in sorted(qrels[q].items())]
    Path(path).write_text("".join(lines), encoding="utf-8")


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read TREC qrels. Raises QuerySetError on a malformed line."""
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise QuerySetError(f"{path}:{n}: expected 'qid 0 docno grade'")
        try:
            out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
        except ValueError as exc:
            raise QuerySetError(f"{path}:{n}: grade must be an integer") from exc
    return out


def write_run(run: dict[str, list[tuple[str, float]]], path: str | Path, tag: str) -> None:
    """Write a run ``{qid: [(docno, score), …]}`` (best first) in TREC format."""
    lines = [f"{q} Q0 {d} {i} {s:.6f} {tag}\n"
             for q in sorted(run) for i, (d, s) in enumerate(run[q], 1)]
    Path(path).write_text("".join(lines), encoding="utf-8")


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a TREC run as ``{qid: {docno: score}}``. Raises QuerySetError."""
    out: dict[str, dict[str, float]] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise QuerySetError(f"{path}:{n}: expected 'qid Q0 docno rank score tag'")
        try:
            out.setdefault(parts[0], {})[parts[2]] = float(parts[4])
        except ValueError as exc:
            raise QuerySetError(f"{path}:{n}: score must be a number") from exc
    return out
