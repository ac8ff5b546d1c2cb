"""Image preprocessing exactly as an OpenCLIP ``preprocess_cfg.json`` says.

The keys (OpenCLIP's ``PreprocessCfg``, as Immich exports them)::

    {"size": 224 | [224, 224], "mode": "RGB", "mean": [..3], "std": [..3],
     "interpolation": "bicubic" | "bilinear" | "nearest",
     "resize_mode": "shortest" | "longest" | "squash", "fill_color": 0}

* ``shortest`` (OpenCLIP's default): resize so the shorter side equals the
  target, keeping the aspect ratio, then centre-crop to the target size;
* ``longest``: resize so the longer side equals the target, then pad to the
  target size with ``fill_color``, centred;
* ``squash``: resize to the target size, ignoring the aspect ratio.

Then pixels become float32 in [0, 1], are normalised per channel with
``(x - mean) / std``, and laid out as ``(3, H, W)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageOps

_INTERPOLATION = {
    "bicubic": Image.Resampling.BICUBIC,
    "bilinear": Image.Resampling.BILINEAR,
    "nearest": Image.Resampling.NEAREST,
    "lanczos": Image.Resampling.LANCZOS,
}


@dataclass(frozen=True)
class PreprocessConfig:
    """A parsed ``preprocess_cfg.json``. ``size`` is (height, width) in pixels."""

    size: tuple[int, int]
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    interpolation: str = "bicubic"
    resize_mode: str = "shortest"
    fill_color: int = 0
    mode: str = "RGB"

    @classmethod
    def from_dict(cls, cfg: dict) -> "PreprocessConfig":
        """Raises ValueError for a missing key or an unknown mode."""
        try:
            size = cfg["size"]
            size = (int(size), int(size)) if isinstance(size, (int, float)) else (int(size[0]), int(size[1]))
            out = cls(size=size, mean=tuple(float(x) for x in cfg["mean"]),
                      std=tuple(float(x) for x in cfg["std"]),
                      interpolation=cfg.get("interpolation", "bicubic"),
                      resize_mode=cfg.get("resize_mode", "shortest"),
                      fill_color=int(cfg.get("fill_color", 0)), mode=cfg.get("mode", "RGB"))
        except (KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"preprocess config lacks or mistypes a key: {exc}") from exc
        if out.interpolation not in _INTERPOLATION:
            raise ValueError(f"unknown interpolation {out.interpolation!r}")
        if out.resize_mode not in ("shortest", "longest", "squash"):
            raise ValueError(f"unknown resize_mode {out.resize_mode!r}")
        return out


def preprocess(image: Image.Image, cfg: PreprocessConfig) -> np.ndarray:
    """Return the model input for one image: float32 array of shape (3, H, W).

    EXIF orientation is applied first, so the model sees the picture upright.
    """
    im = ImageOps.exif_transpose(image).convert(cfg.mode)
    th, tw = cfg.size
    resample = _INTERPOLATION[cfg.interpolation]
    w, h = im.size
    if cfg.resize_mode == "squash":
        im = im.resize((tw, th), resample)
    elif cfg.resize_mode == "shortest":
        scale = max(tw / w, th / h)
        nw, nh = max(tw, round(w * scale)), max(th, round(h * scale))
        im = im.resize((nw, nh), resample)
        left, top = (nw - tw) // 2, (nh - th) // 2
        im = im.crop((left, top, left + tw, top + th))
    else:  # longest
        scale = min(tw / w, th / h)
        nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
        im = im.resize((nw, nh), resample)
        canvas = Image.new(cfg.mode, (tw, th), (cfg.fill_color,) * len(cfg.mode))
        canvas.paste(im, ((tw - nw) // 2, (th - nh) // 2))
        im = canvas
    x = np.asarray(im, dtype=np.float32) / 255.0          # (H, W, 3)
    x = (x - np.asarray(cfg.mean, np.float32)) / np.asarray(cfg.std, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))      # (3, H, W)
