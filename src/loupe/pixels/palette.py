"""The named colour palette of machine words: 20 everyday names, each with
reference colours, and the name of each in the library languages.

Reference colours: the sRGB values of the CSS named colours (W3C, *CSS Color
Module Level 4*, section 6.1 "Named Colors"), several per name so that a
name covers its usual range (``brown`` is CSS brown, saddlebrown, sienna and
chocolate). A colour is named by the nearest reference in CIE Lab (D65)
under the CIEDE2000 difference (Sharma, Wu and Dalal, "The CIEDE2000
Color-Difference Formula", 2005; ``skimage.color.deltaE_ciede2000``), after
the achromatic test of :func:`name_lab` (black, white, grey have no hue).

Translations (``NAMES``): the everyday word for each colour in French,
German, Spanish, Italian and Portuguese, written by hand as the common
headword of a bilingual dictionary (not machine-translated). A library
language without a list here uses the English words.
"""

from __future__ import annotations

import numpy as np

#: The palette in display order; the English names are the identifiers
#: stored in ``asset_machine.colours`` and used by filters.
PALETTE = ("black", "white", "grey", "red", "maroon", "orange", "yellow", "gold", "olive",
           "lime", "green", "teal", "turquoise", "blue", "navy", "purple", "pink", "magenta",
           "brown", "beige")

#: CSS Color 4 named colours (hex sRGB) standing for each chromatic name.
REFERENCES: dict[str, tuple[str, ...]] = {
    "red": ("#FF0000", "#DC143C", "#B22222", "#FF4500"),
    "maroon": ("#800000", "#8B0000"),
    "orange": ("#FFA500", "#FF8C00", "#FF7F50"),
    "yellow": ("#FFFF00", "#FFFFE0", "#F0E68C"),
    "gold": ("#FFD700", "#DAA520"),
    "olive": ("#808000", "#6B8E23", "#556B2F"),
    "lime": ("#00FF00", "#7CFC00", "#9ACD32", "#ADFF2F"),
    "green": ("#008000", "#228B22", "#2E8B57", "#3CB371", "#006400", "#90EE90"),
    "teal": ("#008080", "#008B8B", "#5F9EA0"),
    "turquoise": ("#40E0D0", "#00CED1", "#48D1CC", "#00FFFF", "#AFEEEE"),
    "blue": ("#0000FF", "#4169E1", "#1E90FF", "#4682B4", "#87CEEB", "#6495ED", "#ADD8E6"),
    "navy": ("#000080", "#191970", "#00008B"),
    "purple": ("#800080", "#8A2BE2", "#9370DB", "#4B0082", "#EE82EE", "#DA70D6", "#663399"),
    "pink": ("#FFC0CB", "#FF69B4", "#FFB6C1", "#DB7093", "#FF1493"),
    "magenta": ("#FF00FF", "#C71585"),
    "brown": ("#A52A2A", "#8B4513", "#A0522D", "#D2691E", "#CD853F"),
    "beige": ("#F5F5DC", "#D2B48C", "#F5DEB3", "#DEB887", "#FFE4C4"),
}

#: Achromatic test (CIE Lab): chroma C* = sqrt(a*^2 + b*^2) below this is
#: no hue; then L* below BLACK_L is black, above WHITE_L white, else grey.
#: Chosen so that CSS gray (#808080, C* 0) is grey and CSS silver (#C0C0C0)
#: is grey, CSS whitesmoke (#F5F5F5, L* 96.5) white.
ACHROMATIC_C = 10.0
BLACK_L = 22.0
WHITE_L = 90.0

#: The colour names per language (en identifiers first).
NAMES: dict[str, dict[str, str]] = {
    "en": {n: n for n in PALETTE} | {"grey": "grey gray"},
    "fr": {"black": "noir", "white": "blanc", "grey": "gris", "red": "rouge",
           "maroon": "bordeaux", "orange": "orange", "yellow": "jaune", "gold": "doré",
           "olive": "olive", "lime": "vert citron", "green": "vert", "teal": "bleu canard",
           "turquoise": "turquoise", "blue": "bleu", "navy": "bleu marine", "purple": "violet",
           "pink": "rose", "magenta": "magenta", "brown": "marron brun", "beige": "beige"},
    "de": {"black": "schwarz", "white": "weiß", "grey": "grau", "red": "rot",
           "maroon": "weinrot", "orange": "orange", "yellow": "gelb", "gold": "gold golden",
           "olive": "oliv olivgrün", "lime": "hellgrün", "green": "grün", "teal": "petrol",
           "turquoise": "türkis", "blue": "blau", "navy": "marineblau", "purple": "lila violett",
           "pink": "rosa pink", "magenta": "magenta", "brown": "braun", "beige": "beige"},
    "es": {"black": "negro", "white": "blanco", "grey": "gris", "red": "rojo",
           "maroon": "granate", "orange": "naranja", "yellow": "amarillo", "gold": "dorado",
           "olive": "verde oliva", "lime": "verde lima", "green": "verde",
           "teal": "verde azulado", "turquoise": "turquesa", "blue": "azul",
           "navy": "azul marino", "purple": "morado violeta", "pink": "rosa",
           "magenta": "magenta", "brown": "marrón", "beige": "beige"},
    "it": {"black": "nero", "white": "bianco", "grey": "grigio", "red": "rosso",
           "maroon": "bordeaux", "orange": "arancione", "yellow": "giallo", "gold": "oro dorato",
           "olive": "verde oliva", "lime": "verde lime", "green": "verde",
           "teal": "verde acqua", "turquoise": "turchese", "blue": "blu azzurro",
           "navy": "blu navy", "purple": "viola", "pink": "rosa", "magenta": "magenta",
           "brown": "marrone", "beige": "beige"},
    "pt": {"black": "preto", "white": "branco", "grey": "cinza", "red": "vermelho",
           "maroon": "bordô", "orange": "laranja", "yellow": "amarelo", "gold": "dourado",
           "olive": "verde-oliva", "lime": "verde-limão", "green": "verde",
           "teal": "verde-azulado", "turquoise": "turquesa", "blue": "azul",
           "navy": "azul-marinho", "purple": "roxo", "pink": "rosa", "magenta": "magenta",
           "brown": "marrom castanho", "beige": "bege"},
}


def _hex_rgb(h: str) -> tuple[float, float, float]:
    return tuple(int(h[i:i + 2], 16) / 255.0 for i in (1, 3, 5))  # type: ignore[return-value]


_REF_NAMES: list[str] = []
_REF_LAB: np.ndarray | None = None


def _references() -> tuple[list[str], np.ndarray]:
    global _REF_LAB
    if _REF_LAB is None:
        from skimage.color import rgb2lab

        rgb = []
        for name, hexes in REFERENCES.items():
            for h in hexes:
                _REF_NAMES.append(name)
                rgb.append(_hex_rgb(h))
        _REF_LAB = rgb2lab(np.array(rgb, dtype=np.float64)[None, :, :])[0]
    return _REF_NAMES, _REF_LAB


def name_lab(lab: np.ndarray) -> list[str]:
    """Palette names (English identifiers) of CIE Lab colours.

    Args:
        lab: array of shape (n, 3), L* in [0, 100].
    Returns:
        n names from :data:`PALETTE`.
    """
    from skimage.color import deltaE_ciede2000

    names, refs = _references()
    lab = np.asarray(lab, dtype=np.float64).reshape(-1, 3)
    out: list[str] = []
    for L, a, b in lab:
        c = float(np.hypot(a, b))
        if c < ACHROMATIC_C:
            out.append("black" if L < BLACK_L else "white" if L > WHITE_L else "grey")
            continue
        d = deltaE_ciede2000(np.broadcast_to(np.array([L, a, b]), refs.shape), refs)
        out.append(names[int(np.argmin(d))])
    return out


def colour_words(name: str, lang: str) -> str:
    """The word(s) for palette colour ``name`` in ``lang`` (English when the
    language has no list)."""
    return NAMES.get(lang, NAMES["en"]).get(name, name)
