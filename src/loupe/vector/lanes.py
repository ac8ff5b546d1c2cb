"""A tenant's vector lanes and the models that serve them (V1–V7): which
model serves which lane, switching a lane to a model, computing the vectors
a lane is missing, and the evaluation's variant vector sets.

A model row (``model``) stands for one content (:mod:`loupe.vector.identity`):
before vectors are written, the folder's current fingerprint is adopted,
removing the vectors another content wrote (V3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from ..models import registry
from ..models.embedders import ModelError
from . import identity, queries as q
from .embed import EmbedSummary, build_variants, embed_images, embed_texts

#: Lanes a tenant can give a model, and what the model must encode for each.
LANE_NEEDS = {"image": {"image", "text"}, "text": {"text"}}
#: The vector sets the evaluation builds over an image-text model (E4).
VARIANTS = ("image", "caption", "both")


def lane_models(conn: psycopg.Connection, tenant_id: int) -> list[tuple]:
    """One row per active lane: ``(lane, model_id, name, kind, dims,
    vectors, assets, stored_content)`` (:data:`loupe.vector.queries.LANE_MODELS`)."""
    return conn.execute(q.LANE_MODELS, {"tenant_id": tenant_id}).fetchall()


def waiting(conn: psycopg.Connection, tenant_id: int) -> dict[str, int]:
    """Assets without a vector of their lane's active model: lane → count
    (lanes with none waiting left out)."""
    return {r[0]: r[6] - r[5] for r in lane_models(conn, tenant_id) if r[6] > r[5]}


def installed(conn: psycopg.Connection, home: Path, tenant_id: int) -> list[dict[str, Any]]:
    """Installed models with the tenant's lanes each serves: ``{"name",
    "kind", "dims", "folder", "lanes"}``."""
    active = {r[2]: r[0] for r in lane_models(conn, tenant_id)}
    return [{"name": m.name, "kind": m.kind, "dims": m.dims, "folder": str(m.folder),
             "lanes": [lane for name, lane in active.items() if name == m.name]}
            for m in registry.list_models(home)]


def register(conn: psycopg.Connection, info: registry.ModelInfo) -> tuple[int, str]:
    """The model row of ``info`` (created if new): ``(model_id, content
    fingerprint)``; then :func:`adopt` it (outside the caller's transaction)."""
    content = registry.fingerprint(info)
    model_id = conn.execute(q.REGISTER_MODEL, {
        "name": info.name, "kind": info.kind, "dims": info.dims,
        "content": content}).fetchone()[0]
    return model_id, content


def adopt(conn: psycopg.Connection, info: registry.ModelInfo, model_id: int) -> int | None:
    """Record the folder's content for ``model_id``; the vectors a previous
    content computed are removed (returns how many, or None when unchanged)."""
    return identity.adopt(conn, model_id, content=registry.fingerprint(info),
                          kind=info.kind, dims=info.dims)


def use(conn: psycopg.Connection, home: Path, tenant_id: int, name: str,
        lane: str) -> dict[str, Any]:
    """Make ``name`` the model of the tenant's ``lane`` and create its HNSW
    index: ``{"lane", "model", "dims", "content_sha256"[, "vectors_removed"]}``.
    Its vectors are computed by :func:`embed` (``loupe embed``).

    Raises:
        ValueError: a lane other than image/text.
        ModelError: unknown model, or one that cannot encode what the lane needs.
    """
    if lane not in LANE_NEEDS:
        raise ValueError("lane must be 'image' or 'text'")
    model = registry.get_model(home, name)
    emb = model.embedder()
    if not LANE_NEEDS[lane] <= emb.modalities:
        raise ModelError(f"{name} ({model.kind}) cannot serve the {lane} lane: it encodes "
                         f"{', '.join(sorted(emb.modalities))} only")
    with conn.transaction():
        model_id, content = register(conn, model)
        conn.execute(q.SET_LANE_MODEL, {"tenant_id": tenant_id, "lane": lane,
                                        "model_id": model_id})
    removed = adopt(conn, model, model_id)
    conn.execute(q.hnsw_index(model_id, lane, model.dims))
    out = {"lane": lane, "model": name, "dims": model.dims, "content_sha256": content}
    if removed is not None:
        out["vectors_removed"] = removed
    return out


def variants(conn: psycopg.Connection, home: Path, tenant_id: int, name: str,
             lang: str) -> dict[str, int]:
    """The :data:`VARIANTS` vector sets ("image", "caption" and "both") of
    image-text model ``name`` over the tenant's assets, captions in ``lang``,
    for the evaluation instrument (V7, E4;
    :func:`loupe.vector.embed.build_variants`).

    Raises:
        ModelError: unknown model, or one that does not encode both images and text.
    """
    info = registry.get_model(home, name)
    emb = registry.embedder(home, name)
    if not {"image", "text"} <= emb.modalities:
        raise ModelError(f"{name} does not encode both images and text")
    with conn.transaction():
        model_id, _ = register(conn, info)
    adopt(conn, info, model_id)
    for variant in VARIANTS:
        conn.execute(q.hnsw_index(model_id, variant, info.dims))
    return build_variants(conn, tenant_id, model_id, name, emb, lang)


def embed(conn: psycopg.Connection, home: Path, tenant_id: int, lang: str, *,
          lane: str | None = None, progress=None) -> list[EmbedSummary]:
    """Compute the vectors the tenant's active lanes (or ``lane``) are
    missing: pixels for the image lane, the budgeted embedding text in
    ``lang`` for the text lane. A model whose folder now holds other content
    (V3) has its vectors removed first (every tenant's) and computed again;
    ``replaced`` counts them. One summary per lane."""
    out = []
    for ln, model_id, name, *_ in lane_models(conn, tenant_id):
        if lane and ln != lane:
            continue
        info = registry.get_model(home, name)
        removed = adopt(conn, info, model_id)
        emb = registry.embedder(home, name)
        if ln == "image":
            summary = embed_images(conn, tenant_id, model_id, name, emb, progress=progress)
        else:
            summary = embed_texts(conn, tenant_id, model_id, name, emb, lang, progress=progress)
        summary.content_sha256 = registry.fingerprint(info)
        summary.replaced = removed or 0
        out.append(summary)
    return out
