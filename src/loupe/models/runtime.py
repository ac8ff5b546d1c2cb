"""Where models run, once per process.

Two things every model kind shares live here and nowhere else:

* :func:`session` opens an ONNX Runtime inference session. It is the one
  place that chooses execution providers (``LOUPE_ORT_PROVIDERS``, a comma
  list such as ``CUDAExecutionProvider,CPUExecutionProvider``; providers this
  onnxruntime build lacks are skipped; default CPU) and thread counts
  (``LOUPE_ORT_THREADS``: intra-op threads per session, default 0 = ONNX
  Runtime's own choice, one per physical core).
* :func:`cached_embedder` keeps the loaded embedders of this process, keyed
  by model folder and its ``loupe-model.json``, least recently used first out
  beyond ``LOUPE_MODEL_CACHE`` models (default 4): every Library of a process
  (the web app's pool, ``as_user`` views, the evaluation instrument's
  read-only copies) shares one copy of each model, as the Immich
  machine-learning service keeps one per process.
* :data:`ENCODER_HEALTH` and :data:`QUERY_VECTORS`: the query encoders'
  recent failures (V6) and recent query vectors, per process beside the
  models they come from.

ONNX Runtime sessions may be run from several threads at once (its
documentation: ``InferenceSession.run`` is thread-safe).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .embedders import Embedder, load_embedder
from .sessions import PROVIDERS_ENV as PROVIDERS_ENV  # re-exported
from .sessions import THREADS_ENV as THREADS_ENV
from .sessions import providers as providers
from .sessions import session as session
from .sessions import threads as threads
from ..lexical.settings import env_setting

if TYPE_CHECKING:
    import numpy as np

CACHE_ENV = "LOUPE_MODEL_CACHE"


class ModelCache:
    """Loaded embedders of one process, least recently used evicted first.

    Args:
        size: how many models to keep (>= 1).
    """

    def __init__(self, size: int):
        self.size = max(1, int(size))
        self._items: OrderedDict[tuple[str, str], Embedder] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, folder: Path, config: dict[str, Any]) -> "Embedder":
        """The embedder of the model in ``folder`` described by ``config``
        (its ``loupe-model.json``), loaded on first use. A config changed in
        what the encoder reads (kind, prefixes, lengths...) is another entry
        (the old one ages out); its distance thresholds and their provenance
        are not read by the encoder, and changing them loads nothing again."""
        encoder_cfg = {k: v for k, v in config.items()
                       if k not in ("thresholds", "thresholds_provenance")}
        key = (str(Path(folder).resolve()), json.dumps(encoder_cfg, sort_keys=True, default=str))
        with self._lock:
            emb = self._items.get(key)
            if emb is not None:
                self._items.move_to_end(key)
                return emb
        emb = load_embedder(Path(folder), config)  # outside the lock: may read files
        with self._lock:
            emb = self._items.setdefault(key, emb)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return emb

    def forget(self, folder: Path) -> None:
        """Drop every entry of ``folder`` (a model installed again under its name)."""
        where = str(Path(folder).resolve())
        with self._lock:
            for key in [k for k in self._items if k[0] == where]:
                del self._items[key]

    def __len__(self) -> int:
        return len(self._items)


def _cache_size() -> int:
    raw = os.environ.get(CACHE_ENV, "4").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else 4


#: The process's model cache.
MODELS = ModelCache(_cache_size())


def cached_embedder(folder: Path, config: dict[str, Any]) -> "Embedder":
    """The process-wide embedder of a model folder (see :class:`ModelCache`)."""
    return MODELS.get(folder, config)


# -- the query encoders' state, per process (V6) --------------------------------------

#: Seconds a failed query encoder is left alone (V6).
FAILURE_TTL = 30.0


class EncoderHealth:
    """Remembers failed query encoders for ``ttl`` seconds (V6), so a broken
    encoder is not called on every keystroke. ``attempts`` counts real calls.
    ``clock`` returns seconds (default ``time.monotonic``)."""

    def __init__(self, ttl: float = FAILURE_TTL, clock=time.monotonic):
        self.ttl = ttl
        self.clock = clock
        self.failed: dict[str, tuple[float, str]] = {}
        self.attempts: dict[str, int] = {}

    def encode(self, model: str, fn) -> tuple["np.ndarray | None", str | None]:
        """Run ``fn()`` unless ``model`` failed less than ``ttl`` seconds ago.

        Returns ``(vector, None)`` or ``(None, reason)``.
        """
        since = self.failed.get(model)
        if since is not None and self.clock() - since[0] < self.ttl:
            return None, since[1]
        self.attempts[model] = self.attempts.get(model, 0) + 1
        try:
            vec = fn()
        except Exception as exc:
            reason = f"query encoder of model {model!r} failed: {exc}"
            self.failed[model] = (self.clock(), reason)
            return None, reason
        self.failed.pop(model, None)
        return vec, None


class QueryVectorCache:
    """The last ``size`` query vectors, by (library home, model name, query
    text): paging, instant search and bulk actions repeat a query, and a
    text encoder on CPU costs more than the statement (benchmarks/RESULTS.md,
    HTTP search: 66 % of request time in MiniLM). Entries of a model are
    dropped when it is installed again (:meth:`forget`) or when its folder's
    content changed (:meth:`vector`). Thread-safe.
    ``LOUPE_QUERY_VECTOR_CACHE`` sets the size of the process's cache (0: off)."""

    def __init__(self, size: int = 2048):
        self.size = size
        self._items: OrderedDict[tuple[str, str, str], "np.ndarray"] = OrderedDict()
        self._contents: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self.hits = 0

    def __contains__(self, key: tuple[str, str, str]) -> bool:
        with self._lock:
            return key in self._items

    def get(self, key: tuple[str, str, str], compute) -> "np.ndarray":
        """The cached vector for ``key``, else ``compute()`` (stored if it
        returns; its exceptions propagate and nothing is stored). A cache of
        size 0 always computes."""
        if self.size <= 0:
            return compute()
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
        vec = compute()
        with self._lock:
            self._items[key] = vec
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return vec

    def vector(self, home: str, model: str, content: str, query: str, compute) -> "np.ndarray":
        """The query vector of ``query`` by ``model`` of library ``home``
        whose folder holds ``content`` (its fingerprint, V3): vectors cached
        for another content of that name are dropped first."""
        with self._lock:
            stale = self._contents.get((home, model)) != content
            self._contents[(home, model)] = content
        if stale:
            self.forget(home, model)
        return self.get((home, model, query), compute)

    def forget(self, home: str, model: str) -> None:
        """Drop every vector of ``model`` in library ``home``."""
        with self._lock:
            for key in [k for k in self._items if k[0] == home and k[1] == model]:
                del self._items[key]


def _query_cache_size() -> int:
    return env_setting("LOUPE_QUERY_VECTOR_CACHE", strict=False)


#: The process's query-encoder failures and recent query vectors, shared by
#: every Library of the process like :data:`MODELS`.
ENCODER_HEALTH = EncoderHealth()
QUERY_VECTORS = QueryVectorCache(_query_cache_size())


def forget_model(home: Path, name: str, folder: Path) -> None:
    """Forget what this process holds of model ``name`` of library ``home``
    (in ``folder``): its loaded embedder and its cached query vectors."""
    MODELS.forget(folder)
    QUERY_VECTORS.forget(str(home), name)
