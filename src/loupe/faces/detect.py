"""Finding faces and describing them, on this machine (X2).

The detector and the descriptor are dlib's (``dlib-bin``, prebuilt wheels of
dlib 19/20, Boost licence) with the model files of the
``face-recognition-models`` package (MIT; the models face_recognition 1.3
uses): the HOG + linear SVM frontal face detector
(``dlib.get_frontal_face_detector``, Dalal & Triggs 2005 features), the
5-point landmark model ``shape_predictor_5_face_landmarks.dat`` to align each
face, and ``dlib_face_recognition_resnet_model_v1.dat``, a ResNet that maps
an aligned face to a 128-d descriptor (Davis King, dlib blog, 2017-02-12,
"High Quality Face Recognition with Deep Metric Learning": 99.38% on LFW;
two descriptors closer than 0.6 in Euclidean distance are the same person).

The ``face_recognition`` package itself is not used: its 1.3.0 release
imports ``face_recognition_models`` through ``pkg_resources``, which
setuptools 81+ no longer ships, and its own dependency on ``dlib`` builds dlib
from source. Loupe calls dlib directly and finds the model files with
``importlib`` (no import of the models package), or in the folder
``LOUPE_FACE_MODELS`` names.

Nothing is downloaded: when dlib or the model files are missing,
:func:`load_model` raises :class:`FacesUnavailable`, whose message says how
to install them, and Loupe works without faces.
"""

from __future__ import annotations

import importlib.util
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps

#: What found and described a face: stored with each face and scan; a new
#: value rescans every asset (faces found again keep their person, see
#: loupe.faces.people.scan). Bump it when the detector, its settings below or
#: the model files change, not for a dlib release that computes the same.
DETECTOR_VERSION = "dlib-hog+resnet_v1/1"
#: Model files, from the face-recognition-models package.
DETECTOR_FILES = ("shape_predictor_5_face_landmarks.dat",
                  "dlib_face_recognition_resnet_model_v1.dat")
#: Environment variable naming a folder that holds :data:`DETECTOR_FILES`.
MODELS_ENV = "LOUPE_FACE_MODELS"
#: Longest side (pixels) a picture is scaled to before detection. With one
#: up-sampling of the HOG pyramid dlib finds faces down to about 40 px, so
#: faces of at least ~3% of the longest side are found; larger pictures only
#: cost time (HOG detection is linear in pixels).
DETECT_SIDE = 1024
#: HOG pyramid up-samplings (face_recognition's default is 1).
UPSAMPLE = 1
#: Pictures whose shorter displayed side is under this are not scanned (tiny:
#: icons, thumbnails; a face there is under the detector's ~40 px minimum).
MIN_SIDE = 80
#: A palette or RGBA picture with at most this many colours in a 64x64
#: reduction is clip art (flat colours), not a photograph, and is not scanned.
CLIPART_MAX_COLOURS = 48
#: Side of the stored face crop (JPEG, quality 85): what the People page shows.
CROP_SIDE = 112
#: Faces kept of one picture (the largest first); a crowd beyond is cut.
MAX_FACES = 100


class FacesUnavailable(RuntimeError):
    """dlib or the face model files are not installed (message says how)."""


@dataclass
class Face:
    """One face: ``box`` = (x, y, w, h) normalised 0..1, top-left origin, on
    the picture as displayed (EXIF orientation applied); ``descriptor`` 128
    floats; ``size_px`` the box's shorter side in the scanned picture's
    pixels; ``score`` the detector's SVM margin (dlib's ``run``; detections
    start at 0, higher is surer); ``blur`` the variance of the Laplacian of its grey crop (Pech-
    Pacheco et al., ICPR 2000: low = blurred); ``crop`` a JPEG."""

    box: tuple[float, float, float, float]
    descriptor: list[float]
    size_px: int
    blur: float
    crop: bytes
    score: float = 0.0


def models_dir() -> Path | None:
    """The folder holding :data:`DETECTOR_FILES`: ``$LOUPE_FACE_MODELS`` if set,
    else the ``face_recognition_models`` package's ``models`` folder, else None."""
    env = os.environ.get(MODELS_ENV)
    if env:
        return Path(env)
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "models"


class FaceModel:
    """dlib's detector, landmark model and descriptor network, loaded once.

    ``version`` is :data:`DETECTOR_VERSION`; ``dlib_version`` dlib's.
    """

    def __init__(self, folder: Path):
        import dlib

        self.detector = dlib.get_frontal_face_detector()
        self.shape = dlib.shape_predictor(str(folder / DETECTOR_FILES[0]))
        self.encoder = dlib.face_recognition_model_v1(str(folder / DETECTOR_FILES[1]))
        self.version = DETECTOR_VERSION
        self.dlib_version = dlib.__version__
        self._dlib = dlib

    def faces(self, im: Image.Image) -> list[Face]:
        """The faces of ``im`` (already oriented), largest first, at most
        :data:`MAX_FACES`."""
        im = im.convert("RGB")
        scale = min(1.0, DETECT_SIDE / max(im.size))
        if scale < 1.0:
            im = im.resize((max(1, round(im.width * scale)), max(1, round(im.height * scale))),
                           Image.Resampling.LANCZOS)
        pixels = np.asarray(im)
        width, height = im.size
        found, scores, _kinds = self.detector.run(pixels, UPSAMPLE, 0.0)
        ranked = sorted(zip(found, scores), key=lambda rs: -rs[0].area())[:MAX_FACES]
        grey = np.asarray(im.convert("L"), dtype=np.float32)
        out = []
        for r, score in ranked:
            x0, y0 = max(0, r.left()), max(0, r.top())
            x1, y1 = min(width, r.right() + 1), min(height, r.bottom() + 1)
            if x1 - x0 < 2 or y1 - y0 < 2:
                continue
            shape = self.shape(pixels, r)
            descriptor = list(self.encoder.compute_face_descriptor(pixels, shape, 1))
            out.append(Face(box=(x0 / width, y0 / height, (x1 - x0) / width,
                                 (y1 - y0) / height),
                            descriptor=[float(v) for v in descriptor],
                            size_px=int(min(x1 - x0, y1 - y0)),
                            blur=laplacian_variance(grey[y0:y1, x0:x1]),
                            crop=_crop(im, x0, y0, x1, y1), score=round(float(score), 3)))
        return out


def laplacian_variance(grey: np.ndarray) -> float:
    """Variance of the 4-neighbour Laplacian of a grey image (float array):
    the usual sharpness measure (Pech-Pacheco et al., ICPR 2000)."""
    if grey.shape[0] < 3 or grey.shape[1] < 3:
        return 0.0
    lap = (grey[1:-1, :-2] + grey[1:-1, 2:] + grey[:-2, 1:-1] + grey[2:, 1:-1]
           - 4 * grey[1:-1, 1:-1])
    return round(float(lap.var()), 3)


def _crop(im: Image.Image, x0: int, y0: int, x1: int, y1: int) -> bytes:
    """A square JPEG of the face with a margin of a quarter of its size."""
    side = max(x1 - x0, y1 - y0)
    cx, cy, half = (x0 + x1) / 2, (y0 + y1) / 2, side * 0.75
    box = (max(0, round(cx - half)), max(0, round(cy - half)),
           min(im.width, round(cx + half)), min(im.height, round(cy + half)))
    crop = im.crop(box)
    crop.thumbnail((CROP_SIDE, CROP_SIDE))
    buf = io.BytesIO()
    crop.save(buf, "JPEG", quality=85)
    return buf.getvalue()


_MODEL: FaceModel | None = None


def load_model() -> FaceModel:
    """The process's :class:`FaceModel` (loaded on first use, ~0.5 s).

    Raises:
        FacesUnavailable: dlib is not installed, or the model files are missing.
    """
    global _MODEL
    if _MODEL is not None:
        return _MODEL
    how = ("install them with: pip install dlib-bin face-recognition-models "
           "(or set LOUPE_FACE_MODELS to a folder holding "
           + " and ".join(DETECTOR_FILES) + ")")
    if importlib.util.find_spec("dlib") is None:
        raise FacesUnavailable(f"face detection is not installed (no dlib): {how}")
    folder = models_dir()
    missing = [f for f in DETECTOR_FILES if folder is None or not (folder / f).is_file()]
    if missing:
        raise FacesUnavailable(f"face models missing ({', '.join(missing)}"
                               f"{' in ' + str(folder) if folder else ''}): {how}")
    _MODEL = FaceModel(folder)  # type: ignore[arg-type]
    return _MODEL


def skip_reason(im: Image.Image) -> str | None:
    """Why a picture is not scanned for faces, by rule, or None.

    Tiny: shorter side under :data:`MIN_SIDE` px. Clip art: a palette ("P")
    picture, or one with an alpha channel, whose 64x64 reduction has at most
    :data:`CLIPART_MAX_COLOURS` colours (flat drawn colours; a photograph
    reduced to 64x64 has thousands)."""
    if min(im.size) < MIN_SIDE:
        return f"tiny: {im.width}x{im.height} px (faces are looked for from {MIN_SIDE} px)"
    if im.mode in ("P", "PA", "RGBA", "LA", "1"):
        small = im.convert("RGBA").resize((64, 64), Image.Resampling.NEAREST)
        colours = small.getcolors(64 * 64) or []
        if len(colours) <= CLIPART_MAX_COLOURS:
            return f"clip art: {len(colours)} colours"
    return None


def open_oriented(path: str, max_pixels: int) -> Image.Image:
    """The picture at ``path`` (a path or an open binary file) as displayed (EXIF orientation applied),
    decoded at a reduced size when the format allows (JPEG draft mode).

    Raises:
        ValueError: over ``max_pixels`` (checked on the header, before decoding).
        OSError: not an image Pillow can read.
    """
    im = Image.open(path)
    if im.width * im.height > max_pixels:
        im.close()
        raise ValueError(f"{im.width}x{im.height} px is over the bound of "
                         f"{max_pixels:,} pixels")
    if im.format == "JPEG":
        im.draft("RGB", (DETECT_SIDE, DETECT_SIDE))
    oriented = ImageOps.exif_transpose(im)
    oriented.load()
    return oriented


def overlap(a: tuple[float, float, float, float], b: dict[str, Any]) -> float:
    """Intersection over union of box ``a`` (x, y, w, h) and region ``b``
    (``{"x", "y", "w", "h"}``), both normalised; 0 when ``b`` has no box."""
    if not all(k in b for k in ("x", "y", "w", "h")):
        return 0.0
    ax1, ay1 = a[0] + a[2], a[1] + a[3]
    bx1, by1 = b["x"] + b["w"], b["y"] + b["h"]
    iw = max(0.0, min(ax1, bx1) - max(a[0], b["x"]))
    ih = max(0.0, min(ay1, by1) - max(a[1], b["y"]))
    inter = iw * ih
    union = a[2] * a[3] + b["w"] * b["h"] - inter
    return inter / union if union > 0 else 0.0
