"""Tiny real ONNX models in the layouts Loupe reads (Immich's OpenCLIP export
and a nomic-embed v1.5 style pair), built with the ``onnx`` package.

Their 4-dimensional space is readable by hand: axis 0 = red, 1 = green,
2 = blue, 3 = "kettle". The visual model averages each normalised colour
channel, clips it at 0 (ReLU) and maps R, G, B to axes 0, 1, 2, so a red
picture lands on the word "red". ``swap=True`` builds a second model of the
same width whose text encoder puts "red" on the green axis: same width,
another space (V3).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

VOCAB = ["<pad>", "<unk>", "red", "green", "blue", "kettle", "a", "photo", "of",
         "search_query", "search_document", ":"]
DIMS = 4


def word_vectors(swap: bool = False) -> np.ndarray:
    e = np.zeros((len(VOCAB), DIMS), dtype=np.float32)
    e[VOCAB.index("<unk>")] = [0.05, 0.05, 0.05, 0.05]
    e[VOCAB.index("red")] = [0, 1, 0, 0] if swap else [1, 0, 0, 0]
    e[VOCAB.index("green")] = [1, 0, 0, 0] if swap else [0, 1, 0, 0]
    e[VOCAB.index("blue")] = [0, 0, 1, 0]
    e[VOCAB.index("kettle")] = [0, 0, 0, 1]
    for w in ("a", "photo", "of"):
        e[VOCAB.index(w)] = [0.02, 0.02, 0.02, 0.02]
    e[VOCAB.index("search_query")] = [0, 0, 0, 0.3]
    e[VOCAB.index("search_document")] = [0, 0, 0.3, 0]
    return e


def save_tokenizer(path: Path) -> None:
    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))


def _save(graph, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def visual_graph(input_name: str, out_rank3: bool = False):
    """(N, 3, H, W) -> mean per channel -> ReLU -> x W -> (N, 4) [or (N, 1, 4)]."""
    w = np.zeros((3, DIMS), dtype=np.float32)
    w[0, 0] = w[1, 1] = w[2, 2] = 1.0
    nodes = [
        helper.make_node("ReduceMean", [input_name], ["m"], axes=[2, 3], keepdims=0),
        helper.make_node("Relu", ["m"], ["r"]),
        helper.make_node("MatMul", ["r", "W"], ["emb" if not out_rank3 else "e2"]),
    ]
    if out_rank3:
        nodes.append(helper.make_node("Unsqueeze", ["e2", "axis1"], ["emb"]))
    inits = [numpy_helper.from_array(w, "W")]
    if out_rank3:
        inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"))
    out_shape = ["N", DIMS] if not out_rank3 else ["N", 1, DIMS]
    return helper.make_graph(
        nodes, "visual",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, out_shape)], inits)


PREPROCESS = {"size": 8, "mode": "RGB", "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5],
              "interpolation": "bicubic", "resize_mode": "shortest", "fill_color": 0}


def build_clip(folder: Path, *, swap: bool = False, context_length: int = 8) -> Path:
    """An Immich-layout OpenCLIP export: config.json, visual/, textual/."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "embed_dim": DIMS, "vision_cfg": {"image_size": 8},
        "text_cfg": {"context_length": context_length, "vocab_size": len(VOCAB)}}))
    (folder / "visual").mkdir(exist_ok=True)
    (folder / "visual" / "preprocess_cfg.json").write_text(json.dumps(PREPROCESS))
    _save(visual_graph("image"), folder / "visual" / "model.onnx")
    text = helper.make_graph(
        [helper.make_node("Cast", ["text"], ["ids"], to=TensorProto.INT64),
         helper.make_node("Gather", ["E", "ids"], ["g"], axis=0),
         helper.make_node("ReduceSum", ["g", "axis1"], ["emb"], keepdims=0)],
        "textual",
        [helper.make_tensor_value_info("text", TensorProto.INT32, ["N", context_length])],
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["N", DIMS])],
        [numpy_helper.from_array(word_vectors(swap), "E"),
         numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1")])
    _save(text, folder / "textual" / "model.onnx")
    save_tokenizer(folder / "textual" / "tokenizer.json")
    (folder / "textual" / "tokenizer_config.json").write_text(json.dumps({"pad_token": "<pad>"}))
    return folder


def build_nomic(folder: Path) -> Path:
    """A nomic-embed v1.5 style pair: text/ (last_hidden_state, mean pooled by
    Loupe) and vision/ (CLS token)."""
    text = helper.make_graph(
        [helper.make_node("Gather", ["E", "input_ids"], ["last_hidden_state"], axis=0)],
        "text",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N", "L"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["N", "L"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["N", "L", DIMS])],
        [numpy_helper.from_array(word_vectors(), "E")])
    _save(text, folder / "text" / "model.onnx")
    save_tokenizer(folder / "text" / "tokenizer.json")
    _save(visual_graph("pixel_values", out_rank3=True), folder / "vision" / "model.onnx")
    (folder / "vision" / "preprocess_cfg.json").write_text(json.dumps(PREPROCESS))
    return folder
