"""The model registry: model folders under ``<home>/models/<name>/``.

A model is a folder in one of the layouts of :mod:`loupe.models.embedders`,
plus Loupe's own ``loupe-model.json`` beside the model's files, written at
install time and editable::

    {"name": "minilm", "kind": "sentence-transformers", "dims": 384,
     "thresholds": {"1": 0.35, "2": 0.42, "3-5": 0.45, "6-10": 0.48, "11+": 0.40},
     "thresholds_provenance": {"3-5": {"set": "demo-blind-tune", "split": "tune",
                                       "metric": "...", "date": "2026-12-01"}, ...},
     "prefixes": {"query": "", "document": ""},
     "content": {"sha256": "...", "files": {"model.onnx": [size, mtime_ns], ...}}}

``thresholds`` are the largest cosine distance a vector match may have, by
query length in words (V4); the defaults are seed 002's, measured there
for nomic-embed v1.5 — they belong to a model and should be calibrated for
each one from judged queries. ``thresholds_provenance`` says, per band, where
the value came from (:func:`set_thresholds`); a band without a record holds
the value written at install time.

``content`` records the model's identity (:func:`fingerprint`): the sha256
of its files, with their sizes and modification times so that an unchanged
folder is not hashed again. A folder replaced by another model under the
same name gets another fingerprint: its vectors are no longer compared
with new query vectors, and ``loupe embed`` computes them again.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import shutil
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .embedders import Embedder, ModelError, NomicOnnx, detect_kind, load_embedder
from ..document.languages import normalize_lang
from . import runtime

CONFIG_FILE = "loupe-model.json"
#: Seed 002's maximum cosine distances by query word count (1, 2, 3–5, 6–10, >10).
DEFAULT_THRESHOLDS = {"1": 0.35, "2": 0.42, "3-5": 0.45, "6-10": 0.48, "11+": 0.40}
#: nomic-embed v1.5's task prefixes (its model card); other kinds need none.
NOMIC_PREFIXES = {"query": "search_query: ", "document": "search_document: "}


@dataclass
class ModelInfo:
    """An installed model: its folder and its ``loupe-model.json``."""

    name: str
    folder: Path
    config: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.config["kind"]

    @property
    def dims(self) -> int:
        return int(self.config["dims"])

    def embedder(self) -> Embedder:
        return load_embedder(self.folder, self.config)


def model_languages(info: ModelInfo) -> frozenset[str] | None:
    """The languages a model reads, as ISO 639-1 codes, from the model's own
    files: ``"languages"`` in its ``loupe-model.json`` when set, else the
    ``language`` field of its model card (the YAML front matter of the
    folder's ``README.md``, Hugging Face's model-card metadata, read by
    ``huggingface_hub.metadata_load``; all-MiniLM-L6-v2 says ``en``). None
    when neither says (or the card cannot be read): the model is taken to
    read any language."""
    langs = info.config.get("languages")
    if langs is None:
        card = info.folder / "README.md"
        try:
            langs = _card_languages(str(card), card.stat().st_mtime_ns)
        except OSError:
            return None
    if isinstance(langs, str):
        langs = [langs]
    if not langs or not all(isinstance(x, str) for x in langs):
        return None
    return frozenset(normalize_lang(x) for x in langs)


@functools.lru_cache(maxsize=32)
def _card_languages(path: str, mtime_ns: int) -> Any:
    """The ``language`` field of a model card's metadata (read once per
    file version), or None."""
    try:
        from huggingface_hub import metadata_load

        return (metadata_load(path) or {}).get("language")
    except Exception:  # noqa: BLE001 — no card reader or a malformed card: unknown
        return None


def threshold_for(config: dict[str, Any], n_words: int) -> float:
    """The model's maximum cosine distance for a query of ``n_words`` words (V4).

    Raises:
        ModelError: the threshold in loupe-model.json (edited by hand) is not
            a number within (0, 2], the range of a cosine distance.
    """
    t = {**DEFAULT_THRESHOLDS, **(config.get("thresholds") or {})}
    key = ("1" if n_words <= 1 else "2" if n_words == 2 else "3-5" if n_words <= 5
           else "6-10" if n_words <= 10 else "11+")
    value = t.get(key)
    try:
        ok = not isinstance(value, bool) and 0 < float(value) <= 2
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ModelError(f"{config.get('name', 'the model')}: threshold {key}={value!r} in "
                         f"{CONFIG_FILE} is not a cosine distance within (0, 2]: fix it with "
                         f"'loupe models thresholds'")
    return float(value)


#: Bytes read at a time when hashing a model's files.
_CHUNK = 1 << 20
#: Per-process memo of content fingerprints: folder -> (files' stat, sha256).
_FINGERPRINTS: dict[str, tuple[tuple[dict[str, list[int]], str], str]] = {}


def _file_stats(folder: Path) -> dict[str, list[int]]:
    """``{relative path: [size, mtime_ns]}`` of the model's files, except
    ``loupe-model.json`` (thresholds are edited there; they change no vector)
    and ``loupe-onnx/`` (Loupe's own ONNX export of a sentence-transformers
    model, derived from the other files and checked against them to 1e-5 when
    written: writing it on first use must not read as another model)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if rel.parts and rel.parts[0] == "loupe-onnx":
            continue
        if p.is_file() and p.name != CONFIG_FILE:
            st = p.stat()
            out[p.relative_to(folder).as_posix()] = [st.st_size, st.st_mtime_ns]
    return out


def _vector_config(config: dict[str, Any]) -> str:
    """What in loupe-model.json changes a vector: the kind, the width, the prefixes."""
    return json.dumps({k: config.get(k) for k in ("kind", "dims", "prefixes")}, sort_keys=True)


def _hash_content(folder: Path, files: dict[str, list[int]], config: dict[str, Any]) -> str:
    h = hashlib.sha256()
    h.update(_vector_config(config).encode())
    for rel in files:
        h.update(b"\0" + rel.encode("utf-8", "surrogateescape") + b"\0")
        with open(folder / rel, "rb") as fh:
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                h.update(chunk)
    return h.hexdigest()


def fingerprint(model: ModelInfo) -> str:
    """The model's identity: the sha256 (hex) of its files' paths and bytes
    and of the parts of ``loupe-model.json`` that change vectors (kind, dims,
    prefixes) — its content, not its name (V3).

    Cheap when nothing changed: the files' sizes and modification times are
    compared with those recorded (at install, in ``loupe-model.json`` under
    ``content``, and in this process); only when they differ are the files
    hashed again (and the record rewritten when the folder is writable).

    Raises:
        ModelError: the model's files cannot be read.
    """
    try:
        files = _file_stats(model.folder)
        vcfg = _vector_config(model.config)
        key = str(model.folder.resolve())
        memo = _FINGERPRINTS.get(key)
        if memo and memo[0] == (files, vcfg):
            return memo[1]
        stored = model.config.get("content") or {}
        recorded = (stored.get("files") == files and stored.get("config") == vcfg
                    and stored.get("sha256"))
        sha = stored["sha256"] if recorded else _hash_content(model.folder, files, model.config)
    except OSError as exc:
        raise ModelError(f"{model.name}: cannot read the model's files: {exc}") from exc
    _FINGERPRINTS[key] = ((files, vcfg), sha)
    if not recorded:
        model.config["content"] = {"sha256": sha, "config": vcfg, "files": files}
        try:
            (model.folder / CONFIG_FILE).write_text(json.dumps(model.config, indent=2) + "\n",
                                                    encoding="utf-8")
        except OSError:
            pass  # a read-only model folder: hashed again by the next process
    return sha


#: The fields of a threshold's provenance record (V4): the query
#: set whose judged runs chose it, the split of that set, the metric or
#: criterion, and the date (YYYY-MM-DD) it was chosen.
PROVENANCE_FIELDS = ("set", "split", "metric", "date")
#: Longest provenance value accepted (characters).
PROVENANCE_MAX = 200


def check_provenance(provenance: dict[str, str]) -> dict[str, str]:
    """A threshold provenance record, checked: exactly the keys of
    :data:`PROVENANCE_FIELDS`, each a non-empty single-line string of at most
    :data:`PROVENANCE_MAX` characters, ``date`` as YYYY-MM-DD.

    Raises:
        ValueError: a missing or unknown key, or a bad value (named).
    """
    keys = set(provenance)
    if keys != set(PROVENANCE_FIELDS):
        raise ValueError(f"threshold provenance needs exactly {', '.join(PROVENANCE_FIELDS)} "
                         f"(missing: {', '.join(sorted(set(PROVENANCE_FIELDS) - keys)) or '-'}; "
                         f"unknown: {', '.join(sorted(keys - set(PROVENANCE_FIELDS))) or '-'})")
    out = {}
    for key in PROVENANCE_FIELDS:
        value = provenance[key]
        if not isinstance(value, str) or not value.strip() or len(value) > PROVENANCE_MAX \
                or any(c in value for c in "\r\n\t"):
            raise ValueError(f"threshold provenance {key}={value!r}: a single line of 1 to "
                             f"{PROVENANCE_MAX} characters")
        out[key] = value.strip()
    try:
        datetime.date.fromisoformat(out["date"])
    except ValueError:
        raise ValueError(f"threshold provenance date={out['date']!r}: use YYYY-MM-DD") from None
    return out


def thresholds(home: Path, name: str) -> dict[str, float]:
    """Model ``name``'s distance thresholds by query length (keys ``1``,
    ``2``, ``3-5``, ``6-10``, ``11+``; cosine distances): its
    loupe-model.json's over :data:`DEFAULT_THRESHOLDS`.

    Raises:
        ModelError: no such model.
    """
    cfg = get_model(home, name).config
    return {k: float(v) for k, v in {**DEFAULT_THRESHOLDS, **(cfg.get("thresholds") or {})}.items()}


def thresholds_provenance(home: Path, name: str) -> dict[str, dict[str, str] | None]:
    """Where each of model ``name``'s thresholds came from: band → the record
    :func:`set_thresholds` wrote, or None for a value written at install time.

    Raises:
        ModelError: no such model.
    """
    prov = get_model(home, name).config.get("thresholds_provenance") or {}
    return {k: (dict(prov[k]) if isinstance(prov.get(k), dict) else None)
            for k in DEFAULT_THRESHOLDS}


def set_thresholds(home: Path, name: str, thresholds: dict[str, float],
                   provenance: dict[str, str] | None = None) -> dict[str, float]:
    """Merge ``thresholds`` into the model's loupe-model.json; return all of them.

    Each band set here gets a provenance record in ``thresholds_provenance``
    (band → record): ``provenance`` (checked by :func:`check_provenance`:
    the query set, split, metric and date that chose the value) or, without
    one, ``{"set": "by hand", "date": today}`` — a value set by hand never
    keeps the record of the value it replaced. Bands not set keep theirs.

    Raises:
        ModelError: no such model. ValueError: unknown key, a value outside
            (0, 2], or a bad provenance record.
    """
    model = get_model(home, name)
    for key, value in thresholds.items():
        if key not in DEFAULT_THRESHOLDS:
            raise ValueError(f"unknown threshold {key!r}: use {', '.join(DEFAULT_THRESHOLDS)}")
        if not 0 < float(value) <= 2:
            raise ValueError(f"threshold {key}={value} outside (0, 2] (cosine distance)")
    record = (check_provenance(provenance) if provenance is not None else
              {"set": "by hand", "date": datetime.date.today().isoformat()})
    current = {**DEFAULT_THRESHOLDS, **(model.config.get("thresholds") or {})}
    current.update({k: float(v) for k, v in thresholds.items()})
    model.config["thresholds"] = current
    prov = dict(model.config.get("thresholds_provenance") or {})
    prov.update({k: dict(record) for k in thresholds})
    model.config["thresholds_provenance"] = prov
    (model.folder / CONFIG_FILE).write_text(json.dumps(model.config, indent=2) + "\n",
                                            encoding="utf-8")
    return current


def set_answerability(home: Path, name: str, max_distance: float, min_known: float,
                      provenance: dict[str, str] | None = None) -> dict[str, Any]:
    """Write the model's answerability cut-offs (V8,
    :mod:`loupe.search.answer`) into its loupe-model.json and return them:
    ``{"max_distance", "min_known", "provenance"}`` — the nearest
    neighbour's largest cosine distance, in [0, 2], and the least share of
    the query's words the library must know, in [0, 1], for rows no query
    word matched to count; the provenance as for :func:`set_thresholds`.

    Raises:
        ModelError: no such model. ValueError: a value out of range or a bad
            provenance record.
    """
    model = get_model(home, name)
    if not 0 <= float(max_distance) <= 2:
        raise ValueError(f"max_distance {max_distance} outside [0, 2] (cosine distance)")
    if not 0 <= float(min_known) <= 1:
        raise ValueError(f"min_known {min_known} outside [0, 1] (a share of the query's words)")
    record = (check_provenance(provenance) if provenance is not None else
              {"set": "by hand", "date": datetime.date.today().isoformat()})
    model.config["answerability"] = {"max_distance": float(max_distance),
                                     "min_known": float(min_known), "provenance": record}
    (model.folder / CONFIG_FILE).write_text(json.dumps(model.config, indent=2) + "\n",
                                            encoding="utf-8")
    return dict(model.config["answerability"])


def embedder(home: Path, name: str) -> Embedder:
    """The embedder of installed model ``name``, loaded once per process
    (:func:`loupe.models.runtime.cached_embedder`) and loaded again when the
    folder's content changed (its fingerprint is part of the cache key, V3).

    Raises:
        ModelError: no such model, or it cannot be loaded.
    """
    m = get_model(home, name)
    return runtime.cached_embedder(m.folder, {**m.config, "fingerprint": fingerprint(m)})


def models_dir(home: Path) -> Path:
    return Path(home) / "models"


def get_model(home: Path, name: str) -> ModelInfo:
    """Raises ModelError when no model of that name is installed."""
    folder = models_dir(home) / name
    cfg_path = folder / CONFIG_FILE
    if not cfg_path.is_file():
        raise ModelError(f"no model named {name!r} is installed in {models_dir(home)} "
                         "(see 'loupe models list')")
    return ModelInfo(name, folder, json.loads(cfg_path.read_text(encoding="utf-8")))


def list_models(home: Path) -> list[ModelInfo]:
    root = models_dir(home)
    if not root.is_dir():
        return []
    return [get_model(home, p.name) for p in sorted(root.iterdir())
            if (p / CONFIG_FILE).is_file()]


def _unpack(source: Path, into: Path) -> Path:
    """A model folder from a folder or an archive (.tar, .tar.gz, .tgz, .zip)."""
    if source.is_dir():
        return source
    if zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as zf:
            zf.extractall(into)
    elif tarfile.is_tarfile(source):
        with tarfile.open(source) as tf:
            tf.extractall(into, filter="data")
    else:
        raise ModelError(f"{source}: neither a folder nor a .zip/.tar archive")
    entries = [p for p in into.iterdir()]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else into


def install(home: Path, source: str | Path, *, name: str | None = None) -> ModelInfo:
    """Install a model from a local folder or archive, then verify it.

    The folder is copied to ``<home>/models/<name>``; ``loupe-model.json`` is
    kept if the source has one, else written with the kind detected, the
    vector width measured by encoding, and default thresholds and prefixes.

    Raises:
        ModelError: unknown layout, a model that does not load or run, or a
            name already installed.
    """
    source = Path(source).expanduser()
    if not source.exists():
        raise ModelError(f"{source}: no such folder or archive (to download from the model "
                         "hub, use 'loupe models download REPO_ID')")
    with tempfile.TemporaryDirectory() as tmp:
        folder = _unpack(source, Path(tmp))
        kind = detect_kind(folder)
        name = name or (source.name.split(".")[0] if not source.is_dir() else source.name)
        target = models_dir(home) / name
        if target.exists():
            raise ModelError(f"a model named {name!r} is already installed ({target})")
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(target.name + ".installing")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(folder, staging)
    cfg_path = staging / CONFIG_FILE
    if cfg_path.is_file():
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    else:
        config = {"kind": kind, "dims": 0, "thresholds": dict(DEFAULT_THRESHOLDS),
                  "prefixes": dict(NOMIC_PREFIXES) if kind == NomicOnnx.kind else {}}
    config["name"] = name
    try:
        if not config.get("dims"):
            config["dims"] = _measure_dims(staging, config)
        config.pop("content", None)     # recorded anew for the files as installed
        cfg_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        verify(ModelInfo(name, staging, config))
    except Exception:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    staging.rename(target)
    info = ModelInfo(name, target, config)
    fingerprint(info)               # the model's identity, recorded at install (V3)
    return info


def _measure_dims(folder: Path, config: dict[str, Any]) -> int:
    emb = load_embedder(folder, {**config, "dims": 0})
    if "text" in emb.modalities:
        return int(emb.encode_texts(["a photo"], task="query").shape[1])
    return int(emb.encode_images([Image.new("RGB", (32, 32), (128, 128, 128))]).shape[1])


def verify(model: ModelInfo) -> dict[str, Any]:
    """Load the model and encode a sample text and image: each must give one
    finite, unit-length row of the declared width.

    Returns ``{"name", "kind", "dims", "text", "image", "seconds"}`` where
    text/image are True (checked) or None (the model has no such encoder).

    Raises:
        ModelError: the model fails to load or returns a wrong vector.
    """
    t0 = time.perf_counter()
    emb = model.embedder()
    out: dict[str, Any] = {"name": model.name, "kind": model.kind, "dims": model.dims,
                           "text": None, "image": None}
    checks = []
    if "text" in emb.modalities:
        checks.append(("text", emb.encode_texts(["a red kettle on a wooden table"], task="query")))
    if "image" in emb.modalities:
        checks.append(("image", emb.encode_images([Image.new("RGB", (64, 48), (200, 30, 30))])))
    for what, vec in checks:
        if vec.shape != (1, model.dims):
            raise ModelError(f"{model.name}: {what} encoder returned shape {vec.shape}, "
                             f"expected (1, {model.dims})")
        if not np.all(np.isfinite(vec)) or abs(float(np.linalg.norm(vec)) - 1.0) > 1e-3:
            raise ModelError(f"{model.name}: {what} encoder returned a non-finite or "
                             "non-normalisable vector")
        out[what] = True
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def download(home: Path, repo_id: str, *, name: str | None = None) -> ModelInfo:
    """Download a model folder from the Hugging Face hub, then install it.

    Raises:
        ModelError: huggingface_hub is missing, or the hub cannot be reached
            (this machine may be offline: download the folder elsewhere and
            use ``loupe models install FOLDER``).
    """
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise ModelError("downloading needs the huggingface_hub package "
                         "(pip install huggingface_hub)") from exc
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = snapshot_download(repo_id=repo_id, local_dir=tmp, etag_timeout=10)
        except Exception as exc:
            raise ModelError(
                f"cannot download {repo_id!r} from the model hub: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else 'no answer'}. If this machine is "
                "offline, download the model elsewhere and run 'loupe models install FOLDER'"
            ) from exc
        return install(home, path, name=name or repo_id.rsplit("/", 1)[-1])
