"""Shape and size words from the picture's size as displayed.

* orientation: ``panorama`` when the long side is at least :data:`PANORAMA`
  times the short one (2:1, the usual lower bound of a panoramic format:
  e.g. Wikipedia "Panoramic photography", formats 2:1 and wider);
  ``square`` when the sides differ by at most :data:`SQUARE_TOL` (5 %);
  else ``portrait`` (taller) or ``landscape`` (wider).
* size class by pixel count (longest side for icons): ``icon`` when the
  longest side is at most 128 px (the largest common icon sizes are 16-128:
  freedesktop Icon Theme Specification, Windows ICO, Apple iconset up to
  128 @1x), ``small`` under 0.3 megapixels (below 640x480), ``large`` from
  4 megapixels (a 2560x1600 wallpaper, a 4 MP camera), else ``medium``.
"""

from __future__ import annotations

PANORAMA = 2.0
SQUARE_TOL = 0.05
ICON_SIDE = 128
SMALL_PIXELS = 300_000
LARGE_PIXELS = 4_000_000


def orientation(width: int, height: int) -> str:
    """``portrait``, ``landscape``, ``square`` or ``panorama`` for a size as
    displayed (pixels; both > 0)."""
    long, short = max(width, height), max(1, min(width, height))
    if long / short >= PANORAMA:
        return "panorama"
    if long <= short * (1 + SQUARE_TOL):
        return "square"
    return "portrait" if height > width else "landscape"


def size_class(width: int, height: int) -> str:
    """``icon``, ``small``, ``medium`` or ``large`` (see the module docstring)."""
    if max(width, height) <= ICON_SIDE:
        return "icon"
    pixels = width * height
    if pixels < SMALL_PIXELS:
        return "small"
    return "large" if pixels >= LARGE_PIXELS else "medium"
