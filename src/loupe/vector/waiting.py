"""The notice that assets still wait for vectors of a lane's model, worded
for what the viewer may know (P1). Used by the search pipeline and by the
similar-image lane."""

from __future__ import annotations

import psycopg

from ..access.viewer import Viewer
from . import queries as vq


def waiting_notice(conn: psycopg.Connection, tenant_id: int, viewer: Viewer, lane: str,
                   model_id: int, model: str, missing: int) -> str | None:
    """The notice that assets have no vector of ``model`` in ``lane`` yet,
    or None. ``missing`` (> 0) is the tenant-wide count, hidden assets
    included, so only a viewer who sees every asset is told it; anyone else
    hears that some are missing, and only when one of the assets *it* may
    read in this lane is (:func:`loupe.vector.queries.viewer_waiting`): a
    count would tell a member how many private files were ingested since the
    last embed, and a notice about assets it cannot read that they exist."""
    if viewer.see_all:
        return (f"{lane} lane: {missing:,} asset{'s' if missing != 1 else ''} still "
                f"wait{'' if missing != 1 else 's'} for vectors of {model} (run 'loupe embed')")
    mine = conn.execute(vq.viewer_waiting(lane), {
        "tenant_id": tenant_id, "model_id": model_id, "lane": lane,
        **viewer.params()}).fetchone()[0]
    if not mine:
        return None
    return (f"{lane} lane: some assets still wait for vectors of {model}; this lane "
            f"does not see them yet")
