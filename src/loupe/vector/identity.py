"""A model's identity is its content (V3).

A model row (``embedding_model``) records the fingerprint of the model its
vectors were computed with (:func:`loupe.models.registry.fingerprint`). When
the folder under that name now holds other content (a different model, or
the same one with other prefixes or width), the stored vectors belong to a
model that no longer exists:

* a search leaves the lane out, with a notice, instead of comparing a query
  vector of the new model with document vectors of the old one
  (:func:`changed`);
* ``loupe embed`` / ``loupe models use`` remove those vectors, record the
  new fingerprint (and width, rebuilding the HNSW indexes when it changed)
  and compute the vectors again (:func:`adopt`).
"""

from __future__ import annotations

import psycopg

from . import queries as q


def changed(stored: str | None, current: str) -> bool:
    """Whether vectors stored for fingerprint ``stored`` must not meet query
    vectors of ``current``. ``None`` (vectors from before fingerprints were
    recorded) cannot be proven different and is not."""
    return stored is not None and stored != current


def short(sha: str | None) -> str:
    """The first 12 hex digits of a fingerprint, as notices show it."""
    return (sha or "unrecorded")[:12]


def adopt(conn: psycopg.Connection, model_id: int, *, content: str, kind: str,
          dims: int) -> int | None:
    """Make model row ``model_id`` stand for ``content`` (a fingerprint).

    Returns None when it already did (or had no fingerprint yet: it is
    recorded), else the number of vectors removed because they were
    computed by the previous content. The removal, the new fingerprint and
    width and the rebuilt HNSW indexes are one transaction.
    """
    with conn.transaction():
        stored, old_dims = conn.execute(q.MODEL_CONTENT, {"model_id": model_id}).fetchone()
        if stored == content:
            return None
        removed = None
        if stored is not None or dims != old_dims:   # (another width: another model)
            removed = conn.execute(q.DELETE_MODEL_VECTORS, {"model_id": model_id}).rowcount
        conn.execute(q.SET_MODEL_CONTENT, {"model_id": model_id, "content": content,
                                           "kind": kind, "dims": dims})
        if dims != old_dims:
            lanes = [r[0] for r in conn.execute(q.MODEL_LANES, {"model_id": model_id})]
            for lane in q.LANES:
                conn.execute(q.drop_hnsw_index(model_id, lane))
            for lane in lanes:
                conn.execute(q.hnsw_index(model_id, lane, dims))
    return removed
