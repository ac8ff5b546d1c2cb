"""Dominant colours and the background, from a small copy of the pixels.

Method:

1. Background: the border ring (the outer :data:`BORDER` of each side). It is
   ``transparent`` when at least half of the ring is transparent (alpha <
   128) and at least :data:`MIN_ALPHA_SHARE` of the picture is; else, with
   the ring's opaque pixels in CIE Lab, ``uniform`` when at least
   :data:`UNIFORM_SHARE` of them lie within ΔE*ab :data:`UNIFORM_DE` of
   their median (ΔE*ab 10 is a clearly visible but small difference: the
   CIE76 just-noticeable difference is about 2.3, Sharma 2003), refined to
   ``white`` (median L* ≥ 90, C* < 10) or ``black`` (L* < 22); otherwise
   ``scene``.
2. Cut-out: the subject stands on a transparent or uniform background that
   is neither almost all of the picture nor too little of it (between
   :data:`CUTOUT_MIN_BG` and :data:`CUTOUT_MAX_BG` of its pixels), and it
   stands inside the frame: at most :data:`CUTOUT_MAX_RING` of the border
   ring is subject and its bounding box leaves a margin (≥ 2 % of the
   side) on at least two sides (lines or a pattern running off the edges
   are not a cut-out; a product standing on the bottom edge still is).
3. Subject colours: the pixels that are not background (opaque ones; those
   farther than ΔE 12 from a uniform background), clustered by k-means in
   CIE Lab (Lloyd's algorithm by SciPy from farthest-point seeds, :func:`kmeans`, k ≤ 5, deterministic), each centre named from the palette (:mod:`loupe.pixels.palette`);
   names holding at least :data:`MIN_SHARE` of the subject's pixels are
   kept, dominant first, at most :data:`MAX_COLOURS`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .palette import name_lab

BORDER = 0.06
MIN_ALPHA_SHARE = 0.05
UNIFORM_SHARE = 0.85
UNIFORM_DE = 10.0
SUBJECT_DE = 12.0
CUTOUT_MIN_BG = 0.15
CUTOUT_MAX_BG = 0.97
CUTOUT_MAX_RING = 0.05
CUTOUT_MARGIN = 0.02
MIN_SHARE = 0.12
MAX_COLOURS = 3
K = 5
#: Most pixels given to k-means (a fixed stride sample beyond).
SAMPLE = 1200


@dataclass
class ColourFacts:
    """What :func:`analyse_colours` finds: ``background`` (transparent,
    white, black, uniform, scene), ``cutout``, ``background_colour`` (a
    palette name or None), subject ``colours`` (palette names, dominant
    first) with their ``shares`` (0-1), ``monochrome`` (every opaque pixel
    within C* < 10), and ``bg_share`` (share of the picture that is
    background)."""

    background: str
    cutout: bool
    background_colour: str | None
    colours: list[str]
    shares: list[float]
    monochrome: bool
    bg_share: float
    subject: np.ndarray | None = None  # boolean (h, w): the subject's pixels


def to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB uint8 array (..., 3) to CIE Lab D65 (``skimage.color.rgb2lab``)."""
    from skimage.color import rgb2lab

    flat = rgb.reshape(-1, 1, 3).astype(np.float64) / 255.0
    return rgb2lab(flat).reshape(rgb.shape[:-1] + (3,))


def ring_mask(h: int, w: int) -> np.ndarray:
    """Boolean (h, w) mask of the border ring."""
    bh, bw = max(1, round(h * BORDER)), max(1, round(w * BORDER))
    m = np.zeros((h, w), dtype=bool)
    m[:bh, :] = m[-bh:, :] = True
    m[:, :bw] = m[:, -bw:] = True
    return m


def kmeans(x: np.ndarray, k: int, iterations: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """k-means on points ``x`` (n, d), deterministic: farthest-point seeds
    from the point nearest the mean (Gonzalez, "Clustering to minimize the
    maximum intercluster distance", TCS 38, 1985), then ``iterations`` rounds
    of Lloyd's algorithm by SciPy (:func:`scipy.cluster.vq.kmeans2`, seeds
    given as a matrix, so no random start). Returns ``(centres (m, d),
    counts (m,))`` with m ≤ k (empty clusters dropped).

    SciPy's rather than scikit-learn's ``KMeans``: the latter costs about
    0.3 s a call on a busy 2-core machine (thread-pool start-up), and the
    ingest has 40 ms an asset (≥ 25 assets/s).
    """
    import warnings

    from scipy.cluster.vq import kmeans2

    x = np.asarray(x, dtype=np.float64)
    first = int(np.argmin(((x - x.mean(axis=0)) ** 2).sum(axis=1)))
    centres = [x[first]]
    d2 = ((x - centres[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        i = int(np.argmax(d2))
        if d2[i] <= 1e-9:
            break
        centres.append(x[i])
        d2 = np.minimum(d2, ((x - x[i]) ** 2).sum(axis=1))
    with warnings.catch_warnings():  # an emptied cluster keeps its seed; dropped below
        warnings.simplefilter("ignore", UserWarning)
        c, labels = kmeans2(x, np.array(centres), iter=iterations, minit="matrix",
                            missing="warn")
    counts = np.bincount(labels, minlength=len(c))
    keep = counts > 0
    return c[keep], counts[keep]


def dominant(lab: np.ndarray) -> tuple[list[str], list[float]]:
    """Palette names of the k-means clusters of Lab pixels (n, 3) with their
    shares, merged by name, dominant first, those ≥ MIN_SHARE (≤ MAX_COLOURS)."""
    if len(lab) == 0:
        return [], []
    if len(lab) > SAMPLE:
        lab = lab[:: max(1, len(lab) // SAMPLE)]
    centres, counts = kmeans(lab, K)
    shares: dict[str, float] = {}
    for name, n in zip(name_lab(centres), counts):
        shares[name] = shares.get(name, 0.0) + float(n) / len(lab)
    ranked = sorted(shares.items(), key=lambda kv: (-kv[1], kv[0]))
    kept = [(n, s) for n, s in ranked if s >= MIN_SHARE][:MAX_COLOURS] or ranked[:1]
    return [n for n, _ in kept], [round(s, 3) for _, s in kept]


def _margins(subject: np.ndarray) -> int:
    """On how many of the four sides the subject's bounding box leaves a
    margin of at least :data:`CUTOUT_MARGIN` of the side."""
    rows, cols = np.flatnonzero(subject.any(axis=1)), np.flatnonzero(subject.any(axis=0))
    if len(rows) == 0:
        return 0
    h, w = subject.shape
    mh, mw = max(1, round(h * CUTOUT_MARGIN)), max(1, round(w * CUTOUT_MARGIN))
    return (int(rows[0] >= mh) + int(rows[-1] < h - mh) + int(cols[0] >= mw)
            + int(cols[-1] < w - mw))


def analyse_colours(rgba: np.ndarray, lab: np.ndarray) -> ColourFacts:
    """Background, cut-out and colours of a small RGBA picture.

    Args:
        rgba: uint8 array (h, w, 4).
        lab: its colours in CIE Lab (h, w, 3) (alpha ignored).
    """
    h, w = rgba.shape[:2]
    alpha = rgba[..., 3]
    opaque = alpha >= 128
    ring = ring_mask(h, w)
    chroma = np.hypot(lab[..., 1], lab[..., 2])
    monochrome = bool(opaque.any() and np.mean(chroma[opaque] < 10.0) >= 0.98)
    transparent_share = float(1.0 - opaque.mean())
    bg_colour = None
    if transparent_share >= MIN_ALPHA_SHARE and np.mean(~opaque[ring]) >= 0.5:
        background, bg_mask = "transparent", ~opaque
    else:
        ring_lab = lab[ring & opaque]
        if len(ring_lab) == 0:
            ring_lab = lab[ring]
        med = np.median(ring_lab, axis=0)
        near = np.linalg.norm(ring_lab - med, axis=1) <= UNIFORM_DE
        if near.mean() >= UNIFORM_SHARE:
            c = float(np.hypot(med[1], med[2]))
            background = ("white" if med[0] >= 90 and c < 10 else
                          "black" if med[0] < 22 else "uniform")
            bg_colour = name_lab(med[None, :])[0]
            bg_mask = (np.linalg.norm(lab - med, axis=-1) <= SUBJECT_DE) | ~opaque
        else:
            background, bg_mask = "scene", np.zeros((h, w), dtype=bool)
    bg_share = float(bg_mask.mean())
    ring_subject = float(1.0 - bg_mask[ring].mean())
    cutout = (background != "scene" and CUTOUT_MIN_BG <= bg_share <= CUTOUT_MAX_BG
              and ring_subject <= CUTOUT_MAX_RING and _margins(~bg_mask) >= 2)
    subject = lab[~bg_mask & opaque]
    if len(subject) < max(4, 0.01 * h * w):  # no subject apart: the picture's own colours
        subject = lab[opaque] if opaque.any() else lab.reshape(-1, 3)
    colours, shares = dominant(subject.reshape(-1, 3))
    return ColourFacts(background, cutout, bg_colour, colours, shares, monochrome, bg_share,
                       ~bg_mask & opaque)
