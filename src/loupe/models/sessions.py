"""ONNX Runtime sessions: the one place that chooses execution providers
(``LOUPE_ORT_PROVIDERS``) and thread counts (``LOUPE_ORT_THREADS``) — see
:mod:`loupe.models.runtime`, which re-exports these names. Imports only
:mod:`.errors` from Loupe; onnxruntime is imported where a session opens.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ModelError

PROVIDERS_ENV = "LOUPE_ORT_PROVIDERS"
THREADS_ENV = "LOUPE_ORT_THREADS"


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
        loupe.models.errors.ModelError: the file is missing or ONNX Runtime
            cannot load it (the message names the file).
    """
    import onnxruntime as ort

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
