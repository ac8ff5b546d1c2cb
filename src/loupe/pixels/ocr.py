"""Text in the image: OCR with RapidOCR (``rapidocr-onnxruntime`` 1.4.4).

The package ships its three ONNX models inside the wheel
(``rapidocr_onnxruntime/models/``: PP-OCRv4 text detection, PP-OCRv4
recognition, PP-OCR mobile v2 direction classifier; PaddleOCR, Apache-2.0):
nothing is downloaded at run time (tests/test_machine_ocr.py checks the
model files are on disk and runs with sockets refused). The recognition model is
PaddleOCR's ``ch`` model: simplified Chinese characters plus Latin letters,
digits and punctuation, so the OCR language is stated as ``zh+en``
(:data:`OCR_LANG`); words in French, German or Spanish come out letter by
letter without their accents guaranteed.

Per library (``loupe enrich --ocr on|off``, table ``machine_setting``) and
off by default: on this machine's CPU it costs about 0.3-2 s an image
(docs/machine-words.md). It runs only on images likely to hold text
(:func:`likely_text`), within a time budget per asset (checked before each
text line is recognised: lines past the budget are skipped and the run says
so), and drops lines whose recognition score is below ``min_score``.
"""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np

#: The recognition model's language (PaddleOCR ``ch``: Chinese + Latin).
OCR_LANG = "zh+en"
#: Longest side the image is given to the detector at (bounds the work).
MAX_SIDE = 1280
#: Edge share (kind.py cue) from which a photo or picture may hold text.
EDGE_GATE = 0.06

_ENGINE: Any = None


def engine() -> Any:
    """The process's RapidOCR engine (loaded once, models from the wheel)."""
    global _ENGINE
    if _ENGINE is None:
        from rapidocr_onnxruntime import RapidOCR

        _ENGINE = RapidOCR(print_verbose=False)
    return _ENGINE


def likely_text(kind: str | None, cues: dict[str, Any]) -> bool:
    """Whether an image is worth reading: a document or screenshot, or any
    picture with many sharp edges (letters are dense edges:
    edges ≥ :data:`EDGE_GATE`), except icons."""
    if kind in ("document", "screenshot"):
        return True
    if kind == "icon":
        return False
    return float(cues.get("edges", 0.0)) >= EDGE_GATE


_WORD = re.compile(r"\w[\w'’-]*", re.UNICODE)


def read_text(path: str, *, budget_ms: int = 3000, min_score: float = 0.7) -> tuple[str, int, bool]:
    """Words read in the image at ``path``: ``(text, milliseconds, complete)``.

    Lines whose recognition score is below ``min_score`` are dropped, and
    so are one-letter Latin tokens (noise). ``complete`` is False when the
    budget stopped the reading before every detected line was read.

    Raises:
        OSError, ValueError: the image cannot be decoded.
    """
    from PIL import Image

    t0 = time.monotonic()
    with Image.open(path) as im:
        im.seek(0)
        im = im.convert("RGB")
        im.thumbnail((MAX_SIDE, MAX_SIDE))
        arr = np.asarray(im)[..., ::-1].copy()  # RGB -> BGR, as OpenCV reads
    eng = engine()
    boxes, _ = eng(arr, use_det=True, use_cls=False, use_rec=False)
    lines: list[str] = []
    complete = True
    for box in sorted(boxes or [], key=lambda b: (min(p[1] for p in b), min(p[0] for p in b))):
        if (time.monotonic() - t0) * 1000 > budget_ms:
            complete = False
            break
        pts = np.array(box)
        x0, y0 = np.maximum(pts.min(axis=0).astype(int), 0)
        x1, y1 = pts.max(axis=0).astype(int)
        crop = arr[y0:y1 + 1, x0:x1 + 1]
        if crop.shape[0] < 4 or crop.shape[1] < 4:
            continue
        res, _ = eng(crop, use_det=False, use_cls=False, use_rec=True)
        for text, score in res or []:
            if float(score) >= min_score and text.strip():
                lines.append(text.strip())
    words = [w for line in lines for w in _WORD.findall(line)
             if len(w) > 1 or not w.isascii()]
    return " ".join(words), int((time.monotonic() - t0) * 1000), complete
