"""Where models run, once per process (SPEC N6).

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

ONNX Runtime sessions may be run from several threads at once (its
documentation: ``InferenceSession.run`` is thread-safe).
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .embedders import Embedder

PROVIDERS_ENV = "LOUPE_ORT_PROVIDERS"
THREADS_ENV = "LOUPE_ORT_THREADS"
CACHE_ENV = "LOUPE_MODEL_CACHE"


def providers() -> list[str]:
    """The execution providers sessions are opened with, in preference order:
    those of ``LOUPE_ORT_PROVIDERS`` this onnxruntime has, CPU always last."""
    import onnxruntime as ort

    wanted = [p.strip() for p in os.environ.get(PROVIDERS_ENV, "").split(",") if p.strip()]
    have = set(ort.get_available_providers())
    out = [p for p in wanted if p in have and p != "CPUExecutionProvider"]
    return out + ["CPUExecutionProvider"]


def threads() -> int:
    """Intra-op threads per session from ``LOUPE_ORT_THREADS`` (0: ONNX Runtime decides).

    Raises:
        ValueError: not a whole number >= 0.
    """
    raw = os.environ.get(THREADS_ENV, "0").strip() or "0"
    if not raw.isdigit():
        raise ValueError(f"{THREADS_ENV}={raw!r}: expected a whole number >= 0")
    return int(raw)


def session(path: Path):
    """An ``onnxruntime.InferenceSession`` for the model file ``path`` with the
    process's providers and thread counts.

    Raises:
        loupe.models.embedders.ModelError: the file is missing or ONNX Runtime
            cannot load it (the message names the file).
    """
    import onnxruntime as ort

    from .embedders import ModelError

    path = Path(path)
    if not path.is_file():
        raise ModelError(f"missing model file {path}")
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = threads()
    opts.inter_op_num_threads = 1
    try:
        return ort.InferenceSession(str(path), sess_options=opts, providers=providers())
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ModelError(f"cannot load {path}: {exc}") from exc


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
        from .embedders import load_embedder

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
