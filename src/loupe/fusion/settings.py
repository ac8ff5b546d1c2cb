"""The fusion settings of a tenant (F1, migration 0016): each lane's
weight in reciprocal rank fusion and RRF's rank constant k,

    rrf(d) = Σ_lanes w_lane / (k + rank_lane(d))

defaults w = 1 and k = 60 (plain RRF, Cormack, Clarke and Büttcher, SIGIR
2009). Read and changed here; :class:`loupe.Library` delegates."""

from __future__ import annotations

import math
from typing import Any

import psycopg

from .. import queries as q

#: Bounds of the fusion settings: a weight above 10 or a k above 1000 is a
#: typo rather than a choice (RRF's k ranges over tens; Cormack et al. 2009
#: chose 60).
FUSION_BOUNDS = {"w_lexical": (0.0, 10.0), "w_text": (0.0, 10.0), "w_image": (0.0, 10.0),
                 "rrf_k": (1, 1000)}


def read(conn: psycopg.Connection, tenant_id: int) -> dict[str, Any]:
    """The fusion settings (F1): ``{"w_lexical", "w_text", "w_image"}``
    (floats) and ``"rrf_k"`` (int). rrf(d) = Σ w_lane / (k + rank), defaults
    w 1 and k 60: plain reciprocal rank fusion (Cormack, Clarke and Büttcher,
    SIGIR 2009)."""
    row = conn.execute(q.FUSION_SETTINGS, {"tenant_id": tenant_id}).fetchone()
    return {"w_lexical": float(row[0]), "w_text": float(row[1]), "w_image": float(row[2]),
            "rrf_k": int(row[3])}


def change(conn: psycopg.Connection, tenant_id: int, **changes: Any) -> dict[str, Any]:
    """Store ``changes`` (keys as :func:`read` returns) after checking every
    value, for the next search; returns the settings.

    Raises:
        ValueError: an unknown key, a value that is not a finite number (k:
            an integer), a value outside :data:`FUSION_BOUNDS`, or every
            weight zero.
    """
    current = read(conn, tenant_id)
    unknown = set(changes) - set(current)
    if unknown:
        raise ValueError(f"unknown fusion setting(s): {', '.join(sorted(unknown))}")
    new = {**current, **changes}
    for key, (lo, hi) in FUSION_BOUNDS.items():
        value = new[key]
        if key == "rrf_k" and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"rrf_k must be an integer, not {value!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or not lo <= value <= hi:
            raise ValueError(f"{key} must be a number within [{lo}, {hi}], not {value!r}")
    if new["w_lexical"] + new["w_text"] + new["w_image"] <= 0:
        raise ValueError("at least one of w_lexical, w_text, w_image must be above 0")
    conn.execute(q.SET_FUSION_SETTINGS, {**new, "tenant_id": tenant_id})
    return read(conn, tenant_id)
