"""Embedding jobs: compute the vectors a lane is missing, in batches, each
batch in its own transaction (a killed job loses at most one batch and
re-running finishes it). Switching a lane to another model leaves the old
vectors in place and searchable for their own model until the new ones are
written: a query only ever meets vectors of the model that encoded it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import psycopg
from PIL import Image

from ..assets.view import open_asset_bytes
from ..models.embedders import Embedder
from . import queries as q
from .embedtext import Budget, embedding_text, text_hash

BATCH = 32


@dataclass
class EmbedSummary:
    """Vectors written per lane, and assets whose pixels could not be read.
    ``replaced``: vectors removed first because the model's content changed
    (V3); ``content_sha256``: the fingerprint of the model that wrote them."""

    lane: str
    model: str
    written: int = 0
    unchanged: int = 0
    failed: list[tuple[int, str]] = field(default_factory=list)
    replaced: int = 0
    content_sha256: str | None = None


def _open_image(conn: psycopg.Connection, asset_id: int, size: int = 512) -> Image.Image:
    """The pixels of asset ``asset_id``, decoded (JPEG at a reduced DCT scale
    near ``size``), from a file that still holds its bytes
    (:func:`loupe.assets.view.open_asset_bytes`: never a link, a FIFO or
    a file changed since the ingest).

    Raises:
        loupe.assets.view.NoVerifiedFile: no file holds the asset's bytes.
        OSError: Pillow cannot decode them.
    """
    fh, _path = open_asset_bytes(conn, asset_id)
    with fh:
        im = Image.open(fh)
        if im.format == "JPEG":
            im.draft("RGB", (size, size))
        im.load()
    return im


def embed_images(conn: psycopg.Connection, tenant_id: int, model_id: int, name: str,
                 embedder: Embedder, *, lane: str = "image",
                 progress: Callable[[int], None] | None = None) -> EmbedSummary:
    """Write image vectors (pixels only, V7) for every asset of the tenant that
    has none for this model and lane."""
    out = EmbedSummary(lane, name)
    failed: set[int] = set()
    while True:
        rows = [r for r in conn.execute(q.PENDING_IMAGES, {
            "tenant_id": tenant_id, "model_id": model_id, "lane": lane,
            "batch": BATCH + len(failed)}).fetchall() if r[0] not in failed][:BATCH]
        if not rows:
            return out
        images, ids = [], []
        for asset_id, path in rows:
            try:
                images.append(_open_image(conn, asset_id))
                ids.append(asset_id)
            except Exception as exc:  # a file changed or vanished since ingest
                failed.add(asset_id)
                out.failed.append((asset_id, f"{path}: {exc}"))
        if not images:
            continue
        vectors = embedder.encode_images(images)
        with conn.transaction():
            for asset_id, vec in zip(ids, vectors):
                conn.execute(q.UPSERT_VECTOR, {"asset_id": asset_id, "tenant_id": tenant_id,
                                               "model_id": model_id, "lane": lane,
                                               "embedding": vec, "source_hash": None})
        out.written += len(ids)
        if progress:
            progress(out.written)


def embed_texts(conn: psycopg.Connection, tenant_id: int, model_id: int, name: str,
                embedder: Embedder, lang: str, *, lane: str = "text",
                budget: Budget = Budget(), machine_words: bool = True,
                progress: Callable[[int], None] | None = None) -> EmbedSummary:
    """Write text vectors of the budgeted embedding text (S5) of each asset's
    ``lang`` document, with the model's document prefix (V2); vectors whose
    text is unchanged are kept. ``machine_words``: whether the document's
    machine words are part of the text — the text lane's are; the
    caption variant (measurement of human metadata, the leak check) passes
    False."""
    out = EmbedSummary(lane, name)
    after = 0
    cols = ("title", "description", "keywords", "vocabulary", "collections", "location",
            "people", "creator", "ocr")
    while True:
        rows = conn.execute(q.TEXT_DOCUMENTS, {
            "tenant_id": tenant_id, "lang": lang, "model_id": model_id, "lane": lane,
            "after": after, "batch": 256}).fetchall()
        if not rows:
            return out
        after = rows[-1][0]
        todo = []
        for r in rows:
            doc = dict(zip(cols, r[1:10]))
            if machine_words:
                doc["machine"] = r[11] or ""
            text = embedding_text(doc, budget)
            h = text_hash(text)
            if r[10] is not None and bytes(r[10]) == h:
                out.unchanged += 1
            else:
                todo.append((r[0], text, h))
        for i in range(0, len(todo), BATCH):
            chunk = todo[i:i + BATCH]
            vectors = embedder.encode_texts([t for _, t, _ in chunk], task="document")
            with conn.transaction():
                for (asset_id, _, h), vec in zip(chunk, vectors):
                    conn.execute(q.UPSERT_VECTOR, {"asset_id": asset_id, "tenant_id": tenant_id,
                                                   "model_id": model_id, "lane": lane,
                                                   "embedding": np.asarray(vec, np.float32),
                                                   "source_hash": h})
            out.written += len(chunk)
            if progress:
                progress(out.written)


# The "both" variant (E4): l2_normalize(image + caption) of each asset that
# has both vectors of the model, computed by pgvector in one statement.
BOTH_VARIANT = """
INSERT INTO asset_vector (asset_id, tenant_id, model_id, lane, embedding)
SELECT i.asset_id, i.tenant_id, i.model_id, 'both', l2_normalize(i.embedding + c.embedding)
FROM asset_vector i
JOIN asset_vector c ON c.asset_id = i.asset_id AND c.model_id = i.model_id AND c.lane = 'caption'
WHERE i.tenant_id = %(tenant_id)s AND i.model_id = %(model_id)s AND i.lane = 'image'
ON CONFLICT (asset_id, model_id, lane) DO UPDATE SET embedding = EXCLUDED.embedding,
                                                     created_at = now()
"""


def build_variants(conn: psycopg.Connection, tenant_id: int, model_id: int, name: str,
                   embedder: Embedder, lang: str) -> dict[str, int]:
    """Build the index variants of seed 000's ablation (V7, E4) for one
    image-text model: ``image`` (pixels only), ``caption`` (the embedding
    text through the same model's text encoder) and ``both`` (normalised sum).
    These are for measurement: production search uses the image lane only.
    Returns the vectors written per variant."""
    img = embed_images(conn, tenant_id, model_id, name, embedder, lane="image")
    cap = embed_texts(conn, tenant_id, model_id, name, embedder, lang, lane="caption",
                      machine_words=False)
    with conn.transaction():
        both = conn.execute(BOTH_VARIANT, {"tenant_id": tenant_id, "model_id": model_id}).rowcount
    return {"image": img.written, "caption": cap.written, "both": both}
