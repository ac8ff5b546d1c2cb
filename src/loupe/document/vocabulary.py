"""Controlled vocabularies (S2): reading taxonomy files and storing them.

A vocabulary is a tree of terms. An asset carries a term when one of its
keywords or collection names equals (lower-cased, accents folded) one of the
term's labels or synonyms; its search documents then hold the term and all
its ancestors, the own term weighing most and each step up less (migration
0002: ``vocab_tsv``, decay per step in ``lexical_setting.vocab_decay``). So an
asset tagged ``espresso machine`` is found by ``small appliances`` and by
``kitchen``.

Three file formats are read (chosen by extension):

* **JSON** (``.json``)::

      {"name": "products",
       "terms": [
         {"key": "kitchen", "label": "Kitchen", "labels": {"fr": "Cuisine"}},
         {"key": "small-appliances", "label": "Small appliances", "parent": "kitchen"},
         {"key": "espresso", "label": "Espresso machine", "parent": "small-appliances",
          "synonyms": ["coffee machine"]}]}

  ``label`` is the language-neutral (x-default) label; ``labels`` adds
  per-language ones; ``parent`` names another term's key.

* **CSV** (``.csv``, UTF-8, header row): ``key,parent,label`` plus optional
  ``label_<lang>`` columns and a ``synonyms`` column (``;``-separated).

* **SKOS** (``.ttl``, ``.rdf``, ``.xml``, ``.nt``, ``.jsonld``; read with
  rdflib): every ``skos:Concept``; ``skos:prefLabel`` (per language) are
  labels, ``skos:altLabel`` synonyms, ``skos:broader`` the parent (the first,
  in sorted order, when a concept has several).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb


class VocabularyError(ValueError):
    """A taxonomy file that cannot be imported; the message names the file and term."""


@dataclass
class Term:
    """One term: ``labels`` maps a language code (or ``x-default``) to a label."""

    key: str
    labels: dict[str, str]
    parent: str | None = None
    synonyms: list[str] = field(default_factory=list)


def read_vocabulary(path: str | Path) -> tuple[str, list[Term]]:
    """Read a taxonomy file; return ``(name, terms)`` with parents before children.

    The name is the JSON ``name`` or else the file's stem.

    Raises:
        VocabularyError: unreadable file, unknown extension, a term without a
            key or label, a duplicate key, an unknown parent, or a cycle.
    """
    path = Path(path)
    ext = path.suffix.lower()
    try:
        if ext == ".json":
            name, terms = _read_json(path)
        elif ext == ".csv":
            name, terms = path.stem, _read_csv(path)
        elif ext in (".ttl", ".rdf", ".xml", ".nt", ".jsonld", ".n3"):
            name, terms = path.stem, _read_skos(path)
        else:
            raise VocabularyError(f"{path}: unknown vocabulary format {ext!r} "
                                  "(use .json, .csv or SKOS .ttl/.rdf)")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, csv.Error) as exc:
        raise VocabularyError(f"{path}: cannot read: {exc}") from exc
    return name, _ordered(path, terms)


def _read_json(path: Path) -> tuple[str, list[Term]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("terms"), list):
        raise VocabularyError(f"{path}: expected an object with a 'terms' list")
    terms = []
    for i, t in enumerate(data["terms"]):
        if not isinstance(t, dict):
            raise VocabularyError(f"{path}: term #{i + 1} is not an object")
        labels = dict(t.get("labels") or {})
        if t.get("label"):
            labels["x-default"] = t["label"]
        terms.append(Term(key=str(t.get("key") or ""), labels=labels,
                          parent=t.get("parent") or None,
                          synonyms=[str(s) for s in t.get("synonyms") or []]))
    return str(data.get("name") or path.stem), terms


def _read_csv(path: Path) -> list[Term]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    terms = []
    for row in rows:
        labels = {}
        for col, value in row.items():
            if col and value and value.strip():
                if col == "label":
                    labels["x-default"] = value.strip()
                elif col.startswith("label_"):
                    labels[col[len("label_"):]] = value.strip()
        syn = [s.strip() for s in (row.get("synonyms") or "").split(";") if s.strip()]
        terms.append(Term(key=(row.get("key") or "").strip(), labels=labels,
                          parent=(row.get("parent") or "").strip() or None, synonyms=syn))
    return terms


def _read_skos(path: Path) -> list[Term]:
    import rdflib
    from rdflib.namespace import RDF, SKOS

    graph = rdflib.Graph()
    try:
        graph.parse(str(path))
    except Exception as exc:  # rdflib raises many parser-specific errors
        raise VocabularyError(f"{path}: not a readable RDF file: {exc}") from exc
    terms = []
    for concept in sorted(set(graph.subjects(RDF.type, SKOS.Concept)), key=str):
        labels = {}
        for lit in graph.objects(concept, SKOS.prefLabel):
            labels[getattr(lit, "language", None) or "x-default"] = str(lit)
        synonyms = sorted(str(lit) for lit in graph.objects(concept, SKOS.altLabel))
        broader = sorted(str(b) for b in graph.objects(concept, SKOS.broader))
        terms.append(Term(key=str(concept), labels=labels,
                          parent=broader[0] if broader else None, synonyms=synonyms))
    return terms


def _ordered(path: Path, terms: list[Term]) -> list[Term]:
    """Validate and return terms with every parent before its children."""
    by_key: dict[str, Term] = {}
    for t in terms:
        if not t.key:
            raise VocabularyError(f"{path}: a term has no key")
        if not t.labels:
            raise VocabularyError(f"{path}: term {t.key!r} has no label")
        if t.key in by_key:
            raise VocabularyError(f"{path}: term {t.key!r} appears twice")
        by_key[t.key] = t
    for t in terms:
        if t.parent is not None and t.parent not in by_key:
            raise VocabularyError(f"{path}: term {t.key!r} has unknown parent {t.parent!r}")
    out: list[Term] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(t: Term, chain: list[str]) -> None:
        if state.get(t.key) == 2:
            return
        if state.get(t.key) == 1:
            raise VocabularyError(f"{path}: cycle in parents: {' > '.join(chain + [t.key])}")
        state[t.key] = 1
        if t.parent is not None:
            visit(by_key[t.parent], chain + [t.key])
        state[t.key] = 2
        out.append(t)

    for t in terms:
        visit(t, [])
    return out


# Named SQL of the vocabulary store.
UPSERT_VOCABULARY = """
INSERT INTO vocabulary (tenant_id, name) VALUES (%(tenant_id)s, %(name)s)
ON CONFLICT (tenant_id, name) DO UPDATE SET name = EXCLUDED.name
RETURNING id
"""
DELETE_TERMS = "DELETE FROM vocabulary_term WHERE vocabulary_id = %(vocabulary_id)s"
INSERT_TERM = """
INSERT INTO vocabulary_term (tenant_id, vocabulary_id, key, parent_id, labels, synonyms)
VALUES (%(tenant_id)s, %(vocabulary_id)s, %(key)s, %(parent_id)s, %(labels)s, %(synonyms)s)
RETURNING id
"""
# Every label and synonym, normalised the way asset keywords are.
INSERT_MATCHES = """
INSERT INTO vocabulary_match (tenant_id, label, term_id)
SELECT DISTINCT %(tenant_id)s, loupe_label_norm(x), %(term_id)s
FROM unnest(%(labels)s::text[]) AS x
WHERE loupe_label_norm(x) <> ''
ON CONFLICT DO NOTHING
"""
# The vocabulary terms a set of labels carries, as the CTEs of a WITH
# RECURSIVE statement ending in ``own(term_id)``. Parameters: tenant_id and
# labels (an asset's or one file's keywords and collection names).
#   lab:     the labels, normalised as vocabulary_match's are;
#   cand:    each label's matching terms (label or synonym);
#   anc:     for a label matching several terms, each candidate's ancestors;
#   support: how many of a candidate's ancestors another of the labels names;
#   own:     a label matching one term carries it; a label matching several
#            carries those with the most support, and none when no candidate
#            has any: an ambiguous word alone does not say where it belongs.
# Why: Tux Paint's vocabulary has 23 terms labelled "Cartoon", one under each
# of Bears, Cats, Fruit, Insects…; a ladybug in animals/insects/cartoon/
# carried all 23 with their ancestors, and "bear" found pineapples. With the folder names beside it, "cartoon" is Insects' own.
CARRIED_TERMS = """
lab AS (
    SELECT DISTINCT loupe_label_norm(k) AS label
    FROM unnest(%(labels)s::text[]) AS k
    WHERE loupe_label_norm(k) <> ''
),
cand AS (
    SELECT m.label, m.term_id,
           count(*) OVER (PARTITION BY m.label) AS choices
    FROM vocabulary_match m JOIN lab ON lab.label = m.label
    WHERE m.tenant_id = %(tenant_id)s
),
anc AS (
    SELECT c.label, c.term_id, t.parent_id AS id, 1 AS d
    FROM cand c JOIN vocabulary_term t ON t.id = c.term_id
    WHERE c.choices > 1
    UNION ALL
    SELECT a.label, a.term_id, p.parent_id, a.d + 1
    FROM anc a JOIN vocabulary_term p ON p.id = a.id
    WHERE a.d < 32
),
support AS (
    SELECT a.label, a.term_id, count(DISTINCT a.id) AS n
    FROM anc a
    WHERE EXISTS (SELECT 1 FROM vocabulary_match m JOIN lab ON lab.label = m.label
                  WHERE m.tenant_id = %(tenant_id)s AND m.term_id = a.id
                    AND m.label <> a.label)
    GROUP BY a.label, a.term_id
),
ranked AS (
    SELECT c.term_id, c.choices, coalesce(s.n, 0) AS n,
           max(coalesce(s.n, 0)) OVER (PARTITION BY c.label) AS best
    FROM cand c LEFT JOIN support s ON s.label = c.label AND s.term_id = c.term_id
),
own AS (
    SELECT DISTINCT term_id FROM ranked WHERE choices = 1 OR (n = best AND best > 0)
)"""

# Assets whose documents may change: every asset of the tenant holding a
# keyword or collection name that matches a term, plus those holding a term now.
AFFECTED_ASSETS = """
SELECT DISTINCT a.id FROM asset a
WHERE a.tenant_id = %(tenant_id)s
  AND (EXISTS (SELECT 1 FROM asset_vocabulary av WHERE av.asset_id = a.id)
       OR EXISTS (
           SELECT 1 FROM asset_file f
           LEFT JOIN collection c ON c.id = f.collection_id
           CROSS JOIN LATERAL (
               SELECT jsonb_array_elements_text(coalesce(f.metadata -> 'keywords', '[]'::jsonb))
               UNION ALL
               SELECT unnest(string_to_array(coalesce(c.path, ''), '/'))
           ) AS k(label)
           JOIN vocabulary_match m ON m.tenant_id = a.tenant_id
                                  AND m.label = loupe_label_norm(k.label)
           WHERE f.asset_id = a.id))
ORDER BY a.id
"""


def store_vocabulary(conn: psycopg.Connection, tenant_id: int, name: str,
                     terms: list[Term]) -> int:
    """Replace vocabulary ``name`` of the tenant with ``terms`` (parents first),
    inside the caller's transaction. Returns the vocabulary id."""
    vocab_id = conn.execute(UPSERT_VOCABULARY, {"tenant_id": tenant_id, "name": name}).fetchone()[0]
    conn.execute(DELETE_TERMS, {"vocabulary_id": vocab_id})
    ids: dict[str, int] = {}
    for t in terms:
        term_id = conn.execute(INSERT_TERM, {
            "tenant_id": tenant_id, "vocabulary_id": vocab_id, "key": t.key,
            "parent_id": ids.get(t.parent) if t.parent else None,
            "labels": Jsonb(t.labels), "synonyms": t.synonyms}).fetchone()[0]
        ids[t.key] = term_id
        conn.execute(INSERT_MATCHES, {"tenant_id": tenant_id, "term_id": term_id,
                                      "labels": list(t.labels.values()) + t.synonyms})
    return vocab_id
