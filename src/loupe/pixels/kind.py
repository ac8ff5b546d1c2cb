"""The kind of picture from measurable cues (no learned model).

Cues, measured on a copy of at most 128 px a side taken with nearest-
neighbour sampling (so flat areas stay exactly flat and sensor noise stays
noise), over the opaque pixels:

* ``flat``: share of the subject's pixels (the background left out, see
  colours.py) equal (every channel within 2 levels) to their right and
  lower neighbours. Drawn pictures (clip art, line art,
  screenshots) are made of flat areas; photographs carry sensor noise and
  smooth gradients, so few of their pixels equal their neighbours
  (the "number of colours / smoothness" features of Athitsos, Swain and
  Frankel, "Distinguishing Photographs and Graphics on the World Wide
  Web", 1997).
* ``colours``: distinct colours (4 bits a channel) per 1,000 pixels;
  ``top8``: share of the 8 most frequent of them (graphics use few colours).
* ``white``/``dark``: shares of near-white (L* ≥ 90, C* < 10) and dark
  (L* < 35) pixels; ``monochrome`` (no hue, see colours.py).
* ``edges``: share of pixels whose gradient (largest channel difference to
  the right or lower neighbour) exceeds 48 levels.
* the alpha channel (a transparent background), the size (icon) and the
  shape of the page (document).

Rules, in order (thresholds set by looking at the demo library's cues; its
confusion table is in eval/results/2026-12-01-machine-words.md):

1. ``icon``: longest side ≤ 128 px (shape.py) and not photo-like
   (flat ≥ FLAT_PHOTO).
2. ``lineart``: monochrome, flat over the whole picture (``flat_all``;
   thin strokes have few equal neighbours) ≥ 0.6, mostly white (≥ 0.5)
   with dark strokes (white + dark ≥ 0.85, and dark ≥ 0.01: some strokes
   at all; rules version 5 — white shapes alone on a transparent ground,
   such as the demo's MATE abstract wallpapers, are not drawings).
3. ``document``: not lineart, near-white ≥ 0.6, little hue (monochrome or
   C* < 10 on 95 %), page-shaped (long/short 1.25-1.5) and ≥ 800 px tall.
4. ``screenshot``: opaque, a common screen size (list below), flat ≥ 0.7
   and edges ≥ 0.03 (windows, text and borders; a wallpaper of the same
   size has smooth gradients and few edges).
5. ``clipart``: flat ≥ FLAT_CLIPART, or a transparent background with
   flat ≥ FLAT_CUTOUT_CLIPART and few colours.
6. ``photo``: flat < FLAT_PHOTO.
7. ``illustration``: the rest (drawn or rendered art with gradients).
"""

from __future__ import annotations

import numpy as np

KINDS = ("photo", "illustration", "clipart", "lineart", "screenshot", "document", "icon")

FLAT_CLIPART = 0.55
FLAT_CUTOUT_CLIPART = 0.35
FLAT_PHOTO = 0.25
TOP8_CLIPART = 0.6
#: Share of dark pixels (L* < 35) line art needs: its strokes.
LINE_DARK = 0.01

#: Common screen sizes (width x height; StatCounter's usual desktop and
#: laptop resolutions), either way round.
SCREENS = {(1920, 1080), (1366, 768), (1536, 864), (1440, 900), (1280, 720), (1600, 900),
           (2560, 1440), (1280, 800), (1680, 1050), (1920, 1200), (2560, 1600), (1280, 1024),
           (1024, 768), (3840, 2160), (2880, 1800), (800, 600)}


def cues(rgba: np.ndarray, lab: np.ndarray, subject: np.ndarray | None = None) -> dict[str, float]:
    """The cues (see the module docstring) of a small RGBA picture (h, w, 4)
    with its Lab colours (h, w, 3). ``subject``: boolean (h, w) mask of the
    subject (colours.py); ``flat`` is measured on it when it holds at least
    5 % of the picture, so that a photo on a plain white background is not
    taken for a drawing. Values are rounded to 3 decimals."""
    rgb = rgba[..., :3].astype(np.int16)
    opaque = rgba[..., 3] >= 128
    n = max(1, int(opaque.sum()))
    dx = np.abs(np.diff(rgb, axis=1)).max(axis=-1)[:-1, :]
    dy = np.abs(np.diff(rgb, axis=0)).max(axis=-1)[:, :-1]
    both = opaque[:-1, :-1] & opaque[1:, :-1] & opaque[:-1, 1:]
    m = max(1, int(both.sum()))
    edges = float(((np.maximum(dx, dy) > 48) & both).sum()) / m
    inner = both
    if subject is not None and subject.mean() >= 0.05:
        inner = both & subject[:-1, :-1]
    flat = float(((dx <= 2) & (dy <= 2) & inner).sum()) / max(1, int(inner.sum()))
    flat_all = float(((dx <= 2) & (dy <= 2) & both).sum()) / m
    q = (rgb[opaque] >> 4).astype(np.int32)
    codes = q[:, 0] * 256 + q[:, 1] * 16 + q[:, 2]
    counts = np.sort(np.bincount(codes, minlength=4096))[::-1] if len(codes) else np.zeros(1)
    L = lab[..., 0][opaque]
    C = np.hypot(lab[..., 1], lab[..., 2])[opaque]
    return {k: round(float(v), 3) for k, v in {
        "flat": flat, "flat_all": flat_all, "edges": edges,
        "colours": 1000.0 * float((counts > 0).sum()) / n,
        "top8": float(counts[:8].sum()) / n,
        "white": float(((L >= 90) & (C < 10)).mean()) if len(L) else 0.0,
        "dark": float((L < 35).mean()) if len(L) else 0.0,
        "grey": float((C < 10).mean()) if len(C) else 0.0,
        "alpha": 1.0 - float(opaque.mean()),
    }.items()}


def decide(c: dict[str, float], *, width: int, height: int, background: str,
           size_class: str) -> str:
    """The kind (one of :data:`KINDS`) from cues ``c`` (:func:`cues`), the
    size as displayed and the background (colours.py), by the rules of the
    module docstring."""
    if size_class == "icon" and c["flat"] >= FLAT_PHOTO:
        return "icon"  # a tiny photo stays a photo (its size class says tiny)
    mono = c["grey"] >= 0.98
    if mono and c.get("flat_all", c["flat"]) >= 0.6 and c["white"] >= 0.5 \
            and c["dark"] >= LINE_DARK and c["white"] + c["dark"] >= 0.85:
        return "lineart"
    long, short = max(width, height), max(1, min(width, height))
    if (c["white"] >= 0.6 and c["grey"] >= 0.95 and 1.25 <= long / short <= 1.5
            and height >= 800 and height > width):
        return "document"
    if c["alpha"] < 0.01 and ((width, height) in SCREENS or (height, width) in SCREENS) \
            and c["flat"] >= 0.7 and c["edges"] >= 0.03:
        return "screenshot"
    if c["flat"] >= FLAT_CLIPART or (background == "transparent" and c["flat"] >= FLAT_CUTOUT_CLIPART
                                     and c["top8"] >= TOP8_CLIPART):
        return "clipart"
    if c["flat"] < FLAT_PHOTO:
        return "photo"
    return "illustration"
