"""Export a sentence-transformers text model to ONNX, once.

A ``sentence-transformers`` model folder is run with ONNX Runtime like every
other kind: this module, the only one that imports torch, writes
``<folder>/loupe-onnx/`` when the model is installed (``loupe models
install`` encodes a sample, which exports), or on first use of a model
installed before::

    model.onnx       the Transformer module: input_ids, attention_mask
                     [, token_type_ids] (int64, N x L) -> last_hidden_state (N, L, D)
    tokenizer.json   the model's fast tokenizer
    config.json      max_seq_length, do_lower_case, pooling ("mean", "cls" or
                     "max"), normalize, input names, padding and truncation

:class:`loupe.models.embedders.SentenceTransformerText` then tokenizes with
``tokenizers``, runs the session and pools in numpy, as the
sentence-transformers modules Transformer → Pooling → Normalize do. The
export checks itself: the ONNX path must give sentence-transformers' own
vectors to 1e-5 on sample texts (a long one truncated, a batch of mixed
lengths) or it is discarded with an error.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .errors import ModelError

EXPORT_DIR = "loupe-onnx"
#: Largest difference allowed between the ONNX path's vectors and
#: sentence-transformers' own ("the same vectors to 1e-5").
TOLERANCE = 1e-5
_SAMPLES = ["a red kettle on a wooden table", "Fall foliage", "x",
            "a long caption " * 200,  # past max_seq_length: truncated
            "Ein Wasserkocher in der Küche — ünïcödé, 東京 2026!"]
_POOLING = ("mean", "cls", "max")


def export(folder: Path, read_export: Callable[[Path, list[str]], np.ndarray]) -> Path:
    """Write ``folder/loupe-onnx`` for the sentence-transformers model in
    ``folder`` and return it (kept as is when already there). ``read_export``
    encodes texts with an export folder as Loupe runs it
    (:meth:`loupe.models.embedders.SentenceTransformerText.run_export`): the
    export is kept only when its vectors match sentence-transformers' own.

    Raises:
        ModelError: torch or sentence-transformers missing, a module other
            than Transformer, Pooling (mean, cls or max) and Normalize, or an
            export whose vectors differ from sentence-transformers' by more
            than :data:`TOLERANCE`.
    """
    folder = Path(folder)
    target = folder / EXPORT_DIR
    if (target / "model.onnx").is_file():
        return target
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise ModelError(f"{folder}: exporting a sentence-transformers model to ONNX needs torch, "
                         f"transformers and sentence-transformers ({exc})") from exc
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        st = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    except Exception as exc:
        raise ModelError(f"cannot load sentence-transformers model {folder}: {exc}") from exc
    mods = list(st)
    names = [type(m).__name__ for m in mods]
    if not names or names[0] != "Transformer" or "Pooling" not in names[1:2] or \
            any(n != "Normalize" for n in names[2:]):
        raise ModelError(f"{folder}: modules {' -> '.join(names)}: Loupe runs Transformer -> "
                         "Pooling [-> Normalize] sentence-transformers models only")
    trans, pool = mods[0], mods[1]
    pcfg = pool.get_config_dict()
    mode = pcfg.get("pooling_mode")
    if mode not in _POOLING or pcfg.get("include_prompt") is False:
        raise ModelError(f"{folder}: pooling {pcfg}: Loupe supports {', '.join(_POOLING)} "
                         "pooling over every token")
    tok = trans.tokenizer
    if not getattr(tok, "is_fast", False):
        raise ModelError(f"{folder}: no fast (tokenizers) tokenizer to run without transformers")
    inputs = [n for n in ("input_ids", "attention_mask", "token_type_ids")
              if n in tok.model_input_names]
    cfg = {"max_seq_length": int(st.max_seq_length),
           "do_lower_case": bool(getattr(trans, "do_lower_case", False)),
           "pooling": mode, "normalize": len(names) > 2, "inputs": inputs,
           "pad_token": tok.pad_token, "pad_id": int(tok.pad_token_id or 0),
           "pad_type_id": int(getattr(tok, "pad_token_type_id", 0) or 0),
           "padding_side": tok.padding_side, "truncation_side": tok.truncation_side}

    try:
        first = json.loads((folder / "modules.json").read_text(encoding="utf-8"))[0]
        path = folder / str(first.get("path") or "")
    except (OSError, ValueError, LookupError, AttributeError):
        path = folder
    try:
        model = AutoModel.from_pretrained(str(path), attn_implementation="eager")
    except Exception:
        model = trans.auto_model  # a layout AutoModel cannot read alone
    model.eval()

    class Hidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            return self.m(**dict(zip(inputs, args))).last_hidden_state

    tmp = Path(tempfile.mkdtemp(prefix=EXPORT_DIR + ".", dir=folder))
    try:
        ids = torch.ones(2, 7, dtype=torch.long)
        dyn = {0: "N", 1: "L"}
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes are not the user's business
            torch.onnx.export(Hidden(model), tuple(ids if n != "token_type_ids" else
                                                   torch.zeros_like(ids) for n in inputs),
                              str(tmp / "model.onnx"), input_names=inputs,
                              output_names=["last_hidden_state"], opset_version=17,
                              dynamo=False, dynamic_axes={**{n: dyn for n in inputs},
                                                          "last_hidden_state": dyn})
        tok.backend_tokenizer.save(str(tmp / "tokenizer.json"))
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
        _check(st, tmp, folder, read_export)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "model.onnx").is_file():  # not another process's export
                raise
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"cannot export {folder} to ONNX: {type(exc).__name__}: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _check(st, export_dir: Path, folder: Path,
           read_export: Callable[[Path, list[str]], np.ndarray]) -> None:
    ours = read_export(export_dir, _SAMPLES)
    theirs = st.encode(_SAMPLES, convert_to_numpy=True, normalize_embeddings=True,
                       show_progress_bar=False).astype(np.float32)
    diff = float(np.max(np.abs(ours - theirs)))
    if not diff <= TOLERANCE:
        raise ModelError(f"{folder}: the ONNX export's vectors differ from sentence-transformers' "
                         f"by {diff:.2e} (> {TOLERANCE:g}); not installed")
