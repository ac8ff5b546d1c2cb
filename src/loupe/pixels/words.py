"""Machine facts as words of the search document, in each library language.

The words are what a person would type for what the pixels show: the kind
("photo photograph", "line art line drawing"), the background ("white
background"), the cut-out ("cut-out isolated"), black and white, close-up,
the colours, the shape and size. Word lists exist for en, fr, de, es, it and
pt (written by hand: the everyday word a bilingual dictionary gives, not
machine-translated; colour names in palette.py); another library language
gets the English words. Orientation is written as "vertical"/"horizontal"
(not "portrait"/"landscape", which name subjects: a query for a mountain
landscape must not match every wide picture).

These words go to the search document's machine field group only
(``search_document.machine``, migration 0019), never to the title, the
phrase forms, the text lane, the caption variant or any file.
"""

from __future__ import annotations

from typing import Any

from .palette import colour_words

#: Width / height from which a horizontal picture is also "wide" (16:10 = 1.6
#: and wider: the widescreen formats, e.g. 16:9).
WIDE = 1.6

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "photo": "photo photograph", "illustration": "illustration drawing artwork painting",
        "clipart": "clip art clipart graphic cartoon", "lineart": "line-art line drawing sketch",
        "screenshot": "screenshot screen capture", "document": "document scan",
        "icon": "icon pictogram",
        "bg.transparent": "transparent background", "bg.white": "white background",
        "bg.black": "black background", "bg.uniform": "plain background",
        "bg": "{c} background", "cutout": "cut-out isolated",
        "monochrome": "black and white monochrome grayscale greyscale",
        "closeup": "close-up macro blurred background", "wide": "wide widescreen",
        "panorama": "panorama panoramic", "square": "square", "portrait": "vertical",
        "landscape": "horizontal", "size.icon": "tiny", "size.small": "small",
        "size.large": "large high resolution", "text": "text",
    },
    "fr": {
        "photo": "photo photographie", "illustration": "illustration dessin peinture",
        "clipart": "clipart image graphique dessin", "lineart": "dessin au trait croquis",
        "screenshot": "capture d'écran", "document": "document scan numérisation",
        "icon": "icône pictogramme",
        "bg.transparent": "fond transparent", "bg.white": "fond blanc",
        "bg.black": "fond noir", "bg.uniform": "fond uni", "bg": "fond {c}",
        "cutout": "détouré isolé", "monochrome": "noir et blanc monochrome niveaux de gris",
        "closeup": "gros plan macro arrière-plan flou", "wide": "format large",
        "panorama": "panorama panoramique", "square": "carré",
        "portrait": "vertical", "landscape": "horizontal", "size.icon": "minuscule",
        "size.small": "petit", "size.large": "grand haute résolution", "text": "texte",
    },
    "de": {
        "photo": "Foto Fotografie", "illustration": "Illustration Zeichnung Gemälde",
        "clipart": "Clipart Grafik Cartoon", "lineart": "Strichzeichnung Linienzeichnung Skizze",
        "screenshot": "Bildschirmfoto Screenshot", "document": "Dokument Scan",
        "icon": "Symbol Icon Piktogramm",
        "bg.transparent": "transparenter Hintergrund", "bg.white": "weißer Hintergrund",
        "bg.black": "schwarzer Hintergrund", "bg.uniform": "einfarbiger Hintergrund",
        "bg": "Hintergrund {c}", "cutout": "freigestellt isoliert",
        "monochrome": "schwarzweiß monochrom Graustufen",
        "closeup": "Nahaufnahme Makro unscharfer Hintergrund", "wide": "Breitbild",
        "panorama": "Panorama", "square": "quadratisch", "portrait": "Hochformat",
        "landscape": "Querformat", "size.icon": "winzig", "size.small": "klein",
        "size.large": "groß hochauflösend", "text": "Text",
    },
    "es": {
        "photo": "foto fotografía", "illustration": "ilustración dibujo pintura",
        "clipart": "clipart gráfico dibujo", "lineart": "dibujo lineal boceto",
        "screenshot": "captura de pantalla", "document": "documento escaneo",
        "icon": "icono pictograma",
        "bg.transparent": "fondo transparente", "bg.white": "fondo blanco",
        "bg.black": "fondo negro", "bg.uniform": "fondo liso", "bg": "fondo {c}",
        "cutout": "recortado aislado", "monochrome": "blanco y negro monocromo escala de grises",
        "closeup": "primer plano macro fondo desenfocado", "wide": "formato ancho",
        "panorama": "panorama panorámica",
        "square": "cuadrado", "portrait": "vertical", "landscape": "horizontal",
        "size.icon": "diminuto", "size.small": "pequeño", "size.large": "grande alta resolución",
        "text": "texto",
    },
    "it": {
        "photo": "foto fotografia", "illustration": "illustrazione disegno dipinto",
        "clipart": "clipart grafica fumetto", "lineart": "disegno al tratto schizzo",
        "screenshot": "schermata screenshot", "document": "documento scansione",
        "icon": "icona pittogramma",
        "bg.transparent": "sfondo trasparente", "bg.white": "sfondo bianco",
        "bg.black": "sfondo nero", "bg.uniform": "sfondo uniforme", "bg": "sfondo {c}",
        "cutout": "scontornato isolato", "monochrome": "bianco e nero monocromatico scala di grigi",
        "closeup": "primo piano macro sfondo sfocato", "wide": "formato largo",
        "panorama": "panorama panoramica",
        "square": "quadrato", "portrait": "verticale", "landscape": "orizzontale",
        "size.icon": "minuscolo", "size.small": "piccolo", "size.large": "grande alta risoluzione",
        "text": "testo",
    },
    "pt": {
        "photo": "foto fotografia", "illustration": "ilustração desenho pintura",
        "clipart": "clipart gráfico desenho animado", "lineart": "desenho de linha esboço",
        "screenshot": "captura de tela", "document": "documento digitalização",
        "icon": "ícone pictograma",
        "bg.transparent": "fundo transparente", "bg.white": "fundo branco",
        "bg.black": "fundo preto", "bg.uniform": "fundo liso", "bg": "fundo {c}",
        "cutout": "recortado isolado", "monochrome": "preto e branco monocromático escala de cinza",
        "closeup": "close-up primeiro plano macro fundo desfocado", "wide": "formato largo",
        "panorama": "panorama panorâmica",
        "square": "quadrado", "portrait": "vertical", "landscape": "horizontal",
        "size.icon": "minúsculo", "size.small": "pequeno", "size.large": "grande alta resolução",
        "text": "texto",
    },
}


def machine_text(facts: dict[str, Any] | None, lang: str) -> str:
    """The machine words of an asset in ``lang`` (primary subtag; English
    when the language has no list), parts separated by " · "; '' when
    there are no facts.

    ``facts`` holds the columns of ``asset_machine`` (kind, orientation,
    size_class, background, cutout, colours, background_colour, monochrome,
    closeup, ocr_text).
    """
    if not facts:
        return ""
    w = WORDS.get(lang, WORDS["en"])
    parts: list[str] = []
    if facts.get("kind"):
        parts.append(w[facts["kind"]])
    for name in facts.get("colours") or []:
        parts.append(colour_words(name, lang))
    if facts.get("monochrome"):
        parts.append(w["monochrome"])
    bg = facts.get("background")
    if bg and bg != "scene":
        parts.append(w[f"bg.{bg}"])
        if bg == "uniform" and facts.get("background_colour"):
            parts.append(w["bg"].format(c=colour_words(facts["background_colour"], lang)))
    if facts.get("cutout"):
        parts.append(w["cutout"])
    if facts.get("closeup"):
        parts.append(w["closeup"])
    if facts.get("orientation"):
        parts.append(w[facts["orientation"]])
        aspect = (facts.get("cues") or {}).get("aspect") or 0
        if facts["orientation"] == "landscape" and aspect >= WIDE:
            parts.append(w["wide"])
    size = facts.get("size_class")
    if size in ("icon", "small", "large"):
        parts.append(w[f"size.{size}"])
    ocr = (facts.get("ocr_text") or "").strip()
    if ocr:
        parts.append(ocr)
    return " · ".join(parts)
