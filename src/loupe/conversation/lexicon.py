"""Cue words and value words of the conversational compiler, English and French.

Every table maps a phrase (a tuple of lower-cased tokens, as produced by
:func:`loupe.conversation.parse.tokenize`) to a predicate of the filter-tree
contract (notes/roster.md, "Shared contracts"), or lists the words of one role.
Values follow the contract: English palette colour names, ``kind``,
``orientation`` and ``background`` enumerations, lower-case file formats.
Source of the mappings: written for this project (docs/conversation.md,
"Lexicon"); "black and white" maps to the palette name ``grey`` because the
contract's colour predicate only knew palette names; since migration
0025 they are the predicate ``{"monochrome": true}``, decided from
the pixels (loupe.pixels.monochrome).
"""
from __future__ import annotations

from functools import lru_cache

# -- predicates reached by one phrase, always (unambiguous words) -------------
def _forms(words: str, predicate: dict) -> dict[tuple[str, ...], dict]:
    return {tuple(w.split()): predicate for w in words.split("|")}


COLOURS: dict[str, str] = {
    # English
    "red": "red", "orange": "orange", "yellow": "yellow", "green": "green", "blue": "blue",
    "purple": "purple", "violet": "purple", "pink": "pink", "brown": "brown", "black": "black",
    "white": "white", "grey": "grey", "gray": "grey", "beige": "beige",
    # French (all genders and numbers); "rose" is left out: it is also the flower
    "rouge": "red", "rouges": "red", "oranges": "orange", "jaune": "yellow", "jaunes": "yellow",
    "vert": "green", "verte": "green", "verts": "green", "vertes": "green",
    "bleu": "blue", "bleue": "blue", "bleus": "blue", "bleues": "blue",
    "violette": "purple", "violets": "purple", "violettes": "purple",
    "marron": "brown", "marrons": "brown", "brun": "brown", "brune": "brown", "bruns": "brown",
    "brunes": "brown", "noir": "black", "noire": "black", "noirs": "black", "noires": "black",
    "blanc": "white", "blanche": "white", "blancs": "white", "blanches": "white",
    "gris": "grey", "grise": "grey", "grises": "grey", "beiges": "beige",
    # the rest of the machine-words palette (loupe.pixels.palette);
    # "olive" and "lime" alone are left out: they are also fruit
    "maroon": "maroon", "gold": "gold", "golden": "gold", "teal": "teal", "turquoise": "turquoise",
    "navy": "navy", "magenta": "magenta", "bordeaux": "maroon", "doré": "gold", "dorée": "gold",
    "dorés": "gold", "dorées": "gold", "turquoises": "turquoise", "magentas": "magenta",
}

PHRASES: dict[tuple[str, ...], dict] = {}
for _w, _c in COLOURS.items():
    PHRASES[(_w,)] = {"colour": _c}
# "-ish" and French "-âtre" / "-té" forms of the colour names
for _w, _c in (("reddish", "red"), ("bluish", "blue"), ("blueish", "blue"), ("greenish", "green"),
               ("yellowish", "yellow"), ("pinkish", "pink"), ("purplish", "purple"),
               ("brownish", "brown"), ("greyish", "grey"), ("grayish", "grey"), ("orangey", "orange"),
               ("orangish", "orange"), ("blackish", "black"), ("whitish", "white"),
               ("rougeâtre", "red"), ("rougeâtres", "red"), ("bleuté", "blue"), ("bleutée", "blue"),
               ("bleutés", "blue"), ("bleutées", "blue"), ("verdâtre", "green"),
               ("verdâtres", "green"), ("jaunâtre", "yellow"), ("jaunâtres", "yellow"),
               ("grisâtre", "grey"), ("grisâtres", "grey"), ("rosé", "pink"), ("rosée", "pink"),
               ("rosés", "pink"), ("rosées", "pink"), ("orangé", "orange"), ("orangée", "orange"),
               ("orangés", "orange"), ("orangées", "orange")):
    PHRASES[(_w,)] = {"colour": _c}
PHRASES.update(_forms("black and white|black & white|black-and-white|b&w|b/w|monochrome|monochromes|"
                      "monochromatic|greyscale|grayscale|grey-scale|gray-scale|in black and white|"
                      "noir et blanc|noir & blanc|noirs et blancs|noir-et-blanc|en noir et blanc|"
                      "en n&b|n&b|en niveaux de gris|niveaux de gris|monochrome|monochromes",
                      {"monochrome": True}))
PHRASES.update(_forms("in colour|in color|en couleur|en couleurs|full colour|full color|full-colour|"
                      "full-color",
                      {"not": {"monochrome": True}}))
PHRASES.update(_forms("en rose|couleur rose", {"colour": "pink"}))
for _w, _c in COLOURS.items():       # "en orange", "in red", "couleur jaune"
    for _p in (("en", _w), ("in", _w), ("couleur", _w), ("coloured", _w), ("colored", _w)):
        PHRASES.setdefault(_p, {"colour": _c})
# a dominant colour said with a modifier: "mostly blue", "à dominante orange", "in shades of red"
for _w, _c in COLOURS.items():
    for _p in (f"mostly {_w}", f"mainly {_w}", f"predominantly {_w}", f"largely {_w}",
               f"dominated by {_w}", f"in shades of {_w}", f"shades of {_w}", f"{_w} tones",
               f"{_w} toned", f"{_w}-toned", f"{_w} hues", f"{_w}-dominant", f"{_w} dominant",
               f"{_w} coloured", f"{_w}-coloured", f"{_w} colored", f"{_w}-colored",
               f"colour {_w}", f"color {_w}", f"à dominante {_w}", f"dominante {_w}",
               f"à dominance {_w}", f"dans les tons {_w}", f"aux tons {_w}", f"tons {_w}",
               f"dans des tons {_w}", f"aux teintes {_w}", f"teintes {_w}",
               f"surtout {_w}", f"majoritairement {_w}", f"principalement {_w}",
               f"dans les {_w}", f"de couleur {_w}", f"couleur {_w}", f"en {_w}"):
        PHRASES.setdefault(tuple(_p.split()), {"colour": _c})
PHRASES.update(_forms("navy blue|bleu marine", {"colour": "navy"}))
PHRASES.update(_forms("bleu canard", {"colour": "teal"}))
PHRASES.update(_forms("lime green|vert citron|vert lime", {"colour": "lime"}))
PHRASES.update(_forms("olive green|vert olive", {"colour": "olive"}))
# kind
PHRASES.update(_forms("illustration|illustrations|drawing|drawings|dessin|dessins|illustrated|hand-drawn|"
                      "hand drawn|dessiné à la main|dessinées à la main|dessinés à la main",
                      {"kind": "illustration"}))
PHRASES.update(_forms("clipart|cliparts|clip art|clip-art|clip arts", {"kind": "clipart"}))
PHRASES.update(_forms("line art|lineart|line drawing|line drawings|dessin au trait|dessins au trait",
                      {"kind": "lineart"}))
PHRASES.update(_forms("screenshot|screenshots|screen capture|screen captures|capture d' écran|"
                      "captures d' écran", {"kind": "screenshot"}))
PHRASES.update(_forms("document|documents|scan|scans|scanned documents|documents scannés",
                      {"kind": "document"}))
PHRASES.update(_forms("icon|icons|icône|icônes|icone|icones", {"kind": "icon"}))
# orientation (unambiguous forms)
PHRASES.update(_forms("vertical|verticale|verticales|verticaux|à la verticale|en hauteur",
                      {"orientation": "portrait"}))
PHRASES.update(_forms("horizontal|horizontale|horizontales|horizontaux|à l' horizontale|en largeur",
                      {"orientation": "landscape"}))
PHRASES.update(_forms("square|squares|carré|carrée|carrés|carrées|square format|format carré",
                      {"orientation": "square"}))
PHRASES.update(_forms("panorama|panoramas|panoramic|panoramique|panoramiques", {"orientation": "panorama"}))
# "vertical format", "format horizontal", "in square format", "orientation verticale"...
for _o, _words in (("portrait", "vertical|verticale|verticales|verticaux"),
                   ("landscape", "horizontal|horizontale|horizontales|horizontaux"),
                   ("square", "square|carré|carrée|carrés|carrées"),
                   ("panorama", "panoramic|panoramique|panoramiques|panorama")):
    for _w in _words.split("|"):
        for _p in (f"{_w} format", f"format {_w}", f"in {_w} format", f"en format {_w}",
                   f"au format {_w}", f"{_w} orientation", f"orientation {_w}",
                   f"in {_w} orientation", f"en orientation {_w}", f"{_w} ones", f"{_w} shots",
                   f"{_w} images", f"{_w} pictures", f"{_w} photos"):
            PHRASES.setdefault(tuple(_p.split()), {"orientation": _o})
PHRASES.update(_forms("en orientation portrait|orientation portrait|portrait orientation",
                      {"orientation": "portrait"}))
PHRASES.update(_forms("en orientation paysage|orientation paysage|landscape orientation",
                      {"orientation": "landscape"}))
for _o, _words in (("portrait", ("portrait", "portraits")), ("landscape", ("landscape", "landscapes", "paysage", "paysages"))):
    for _w in _words:
        for _p in ((_w, "format"), ("format", _w), ("in", _w), ("en", _w), (_w, "orientation"),
                   (_w, "mode"), (_w, "ones"), (_w, "one"), ("in", _w, "format"),
                   ("en", "format", _w), ("au", "format", _w), ("in", _w, "orientation")):
            PHRASES[_p] = {"orientation": _o}
    for _w in (_o, _o + "s") if _o == "portrait" else ("landscape", "landscapes"):
        for _suffix in ("oriented", "orientation", "format", "mode", "shaped", "style"):
            PHRASES[(f"{_w}-{_suffix}",)] = {"orientation": _o}
for _o, _w in (("portrait", "tall"), ("landscape", "wide"), ("portrait", "upright")):
    for _p in (f"{_w} ones", f"{_w} images", f"{_w} pictures", f"{_w} shots", f"{_w} photos",
               f"{_w} format", f"{_w} one"):
        PHRASES.setdefault(tuple(_p.split()), {"orientation": _o})
for _o, _words in (("portrait", ("portrait",)), ("landscape", ("landscape", "paysage"))):
    for _w in _words:
        for _p in (("in", _w, "mode"), ("en", "mode", _w), ("en", _w), ("in", _w, "view")):
            PHRASES.setdefault(_p, {"orientation": _o})
for _o, _w in (("portrait", "vertically"), ("portrait", "upright"), ("landscape", "horizontally"),
               ("landscape", "wide")):
    for _p in ((_w, "oriented"), (f"{_w}-oriented",), (_w, "framed"), (f"{_w}-framed",)):
        PHRASES[_p] = {"orientation": _o}
PHRASES.update(_forms("taller than wide", {"orientation": "portrait"}))
PHRASES.update(_forms("wider than tall|widescreen", {"orientation": "landscape"}))
# single-valued fields: "a and b" of one of them is a or b (an asset has one format, one date...)
ONE_VALUE = {"captured", "added", "kind", "orientation", "background", "media_type", "format",
             "cutout", "monochrome", "country", "location", "creator"}
# background and cut-out
for _name, _words in (("white", "white|blanc"), ("black", "black|noir"),
                      ("transparent", "transparent"), ("uniform", "plain|uniform|uni")):
    for _w in _words.split("|"):
        for _p in (f"{_w} background", f"{_w} backgrounds", f"on a {_w} background",
                   f"on {_w} background", f"against a {_w} background", f"with a {_w} background",
                   f"fond {_w}", f"sur fond {_w}", f"sur un fond {_w}", f"avec un fond {_w}",
                   f"{_w}-background", f"{_w}-backgrounds", f"{_w}-background ones",
                   f"on a {_w}-background"):
            PHRASES[tuple(_p.split())] = {"background": _name}
PHRASES.update(_forms("transparent|transparents|transparente|transparentes|sans fond|"
                      "with no background|with transparency|no background|fond transparent|"
                      "à fond transparent|avec transparence", {"background": "transparent"}))
for _name, _words in (("white", "white|blanc"), ("black", "black|noir"), ("uniform", "plain|uni")):
    for _w in _words.split("|"):
        for _p in (f"{_w} backdrop", f"on a {_w} backdrop", f"on {_w} backdrop",
                   f"against a {_w} backdrop", f"{_w} backdrops", f"à fond {_w}",
                   f"en fond {_w}", f"avec fond {_w}", f"on {_w}"):
            PHRASES.setdefault(tuple(_p.split()), {"background": _name})
PHRASES.update(_forms("cut-out|cut-outs|cutout|cutouts|cut out|cut outs|isolated|détouré|détourée|"
                      "détourés|détourées|détourage", {"cutout": True}))
# format and media type (a media type is matched by pattern in parse.py)
for _f, _words in (("png", "png|pngs"), ("jpeg", "jpg|jpgs|jpeg|jpegs"), ("gif", "gif|gifs"),
                   ("tiff", "tif|tiff|tiffs"), ("webp", "webp"), ("heic", "heic"), ("bmp", "bmp"),
                   # formats Loupe does not read are still read as the format asked for: the
                   # turn then says the filter cannot be applied, rather than guessing a place
                   ("heif", "heif"), ("svg", "svg|svgs"), ("avif", "avif")):
    for _w in _words.split("|"):
        for _p in (_w, f"{_w} files", f"{_w} file", f"en {_w}", f"au format {_w}", f"in {_w}",
                   f"fichiers {_w}", f"{_w} format", f"format {_w}"):
            PHRASES[tuple(_p.split())] = {"format": _f}
        for _p in (f"in {_w} format", f"as {_w}", f"as {_w} files", f"en format {_w}",
                   f"sous forme de {_w}", f"{_w} only", f"{_w} images", f"{_w} pictures",
                   f"images {_w}", f"{_w}s"):
            PHRASES.setdefault(tuple(_p.split()), {"format": _f})
# rights
PHRASES.update(_forms("embargo|embargoes|embargos|embargoed|under embargo|sous embargo|en embargo", {"rights": "embargoed"}))
PHRASES.update(_forms("expired|has expired|licence has expired|license has expired|"
                      "whose licence has expired|whose license has expired|with expired licences|"
                      "expiré|expirée|expirés|expirées|a expiré|dont la licence a expiré|"
                      "licence expirée|droits expirés", {"rights": "expired"}))
# "whose rights have expired", "dont les droits ont expiré": subject + verb + participle
for _subj in ("rights", "right", "licence", "license", "licences", "licenses", "usage rights",
              "droits", "droit", "licence", "licences", "droits d' usage"):
    for _lead in ("", "whose ", "with ", "dont les ", "dont la ", "dont le ", "les ", "la ", "le ", "the "):
        for _verb in ("have expired", "has expired", "expired", "are expired", "is expired", "ont expiré",
                      "a expiré", "est expirée", "sont expirés", "sont expirées", "expirés", "expirée",
                      "expirées", "échus", "échue", "échues", "périmés", "périmée"):
            PHRASES[tuple(f"{_lead}{_subj} {_verb}".split())] = {"rights": "expired"}
PHRASES.update(_forms("sous licence expirée|avec licence expirée|à licence expirée|expired rights|expired licence|expired license|expired licences|"
                      "expired licenses|expired usage rights|with expired rights|"
                      "with an expired licence|with an expired license|licences expirées|"
                      "avec une licence expirée|avec des droits expirés", {"rights": "expired"}))
PHRASES.update(_forms("out of licence|out of license|no longer licensed|licence expirée|"
                      "hors licence|plus sous licence", {"rights": "expired"}))

# -- words that need a restrictive or negative cue to be a predicate ------------
AMBIGUOUS: dict[str, dict] = {
    "photo": {"kind": "photo"}, "photos": {"kind": "photo"}, "photograph": {"kind": "photo"},
    "photographs": {"kind": "photo"}, "photographie": {"kind": "photo"},
    "photographies": {"kind": "photo"},
    "portrait": {"orientation": "portrait"}, "portraits": {"orientation": "portrait"},
    "landscape": {"orientation": "landscape"}, "landscapes": {"orientation": "landscape"},
    "paysage": {"orientation": "landscape"}, "paysages": {"orientation": "landscape"},
}

# -- cue words -----------------------------------------------------------------
RESTRICT = {"only", "just", "seulement", "uniquement", "juste", "que", "exclusively",
            # "keep the red ones" / "garde les rouges": keeping is narrowing
            "keep", "garde", "gardez", "garder", "conserve", "conserver", "conservez", "narrow",
            "restrict", "limit", "restreins", "limite", "filtre", "filter"}
RESTRICT_PHRASES = {tuple(p.split()) for p in (
    "stick to|stick with|keep to|focus on|concentrate on|show only|show me only|"
    "make it|make that|make those|make them|make it just|"
    "narrow it to|limit it to|restrict it to|cut it down to|narrow them to|limit them to|"
    "narrow down to|narrow it down to|narrow to|restrict to|limit to|filter to|filter by|"
    "keep only|nothing but|none but|what about|how about|and what about|et pour|"
    "et si on prend|quid de|et côté|rien que|limite à|limite aux|restreins à|restreins aux").split("|")}
NEGATE = {"not", "without", "except", "excluding", "exclude", "minus", "no", "pas", "sans", "sauf",
          "hormis", "excepté", "exceptés", "exceptées", "remove", "drop", "hide", "enlève", "enlever",
          "retire", "retirer", "exclus", "exclure", "ni",
          # removal verbs: an unknown one used to fall back to replace
          "removing", "omit", "omitting", "skip", "skipping", "discard", "ditch", "lose", "eliminate",
          "delete", "nix", "enlevez", "enlève-moi", "retirez",
          "retire-moi", "vire", "virer", "virez", "vire-moi", "supprime", "supprimer", "supprimez",
          "ôte", "ôter", "ôtez", "élimine", "éliminer", "éliminez", "excluez", "exclue", "cache",
          "cacher", "cachez", "masque", "masquer", "masquez", "écarte", "écarter", "écartez",
          "dégage", "dégager", "jette", "jeter", "hiding", "excepting", "barring", "excluant", "hors",
          "écartant", "enlevant", "retirant", "aren't", "isn't", "weren't", "wasn't", "doesn't"}
# function words of more than one token, dropped from the text ("tout ce qui a été photographié")
FILLER_PHRASES = {tuple(p.split()) for p in (
    "je préfère|je préférerais|i prefer|i'd prefer|i would prefer|préfère|mets|mettez|"
    "pas les autres|not the others|not the rest|none of the others|"
    "no wait|oh wait|wait|non attends|attends|sorry|pardon|oops|"
    "switch to|switch over to|change to|go to|passe en|passe à|passons à|passe aux|"
    "à la place|au lieu de ça|in its place|part of|that are part of|which are part of|"
    "font partie de|fait partie de|qui font partie de|belonging to|belong to|"
    "change that to|change it to|"
    "a été|ont été|ont été prises|a été prise|ce qui|ce que|tout ce qui|that were|that was|"
    "which were|which was|that have been|which have been|have been|has been|were taken|"
    "was taken|ones that|ones which|those that|those which|qui ont été|qui a été").split("|")}

# "forget that, ...": a new search, whatever follows (the words are dropped)
REPLACE_PHRASES = {tuple(p.split()) for p in (
    "forget that|forget it|forget all that|forget everything|start over|start again|"
    "new search|never mind|scratch that|let's start over|oublie ça|oublie tout|oublions ça|"
    "laisse tomber|recommence|recommençons|on recommence|nouvelle recherche|autre chose").split("|")}
# multi-word removal phrases, longest first; "plus de" / "ne ... plus" are read in parse.py
NEGATE_PHRASES = {tuple(p.split()) for p in (
    "get rid of|getting rid of|leave out|leave off|take out|take away|filter out|weed out|cross out|"
    "throw out|rule out|strip out|no more|not any|none of|but not|other than|apart from the|"
    "don't want|do not want|don't need|do not need|don't show|do not show|don't include|"
    "do not include|don't like|no longer|not interested in|i don't want|i do not want|"
    "we don't want|without any|except for|with the exception of|anything but|"
    "nothing|none|rien|aucune|aucun|à part|en dehors des|en dehors de|à l' exception de|"
    "à l' exception des|je ne veux pas|je ne veux plus|ne veux pas|ne veux plus|je ne veux pas de|"
    "en excluant|en enlevant|en retirant|en écartant|en dehors de|"
    "ne montre pas|ne montre plus|fais disparaître|fait disparaître|débarrasse-moi de|"
    "débarrasse-toi de|laisse de côté|mets de côté|on enlève|on retire|on vire|on oublie"
).split("|")}
# answers to the previous turn, alone before a comma: "no, just the yellow ones" is no removal
ANSWER_WORDS = {"no", "non", "nope", "nah", "yes", "oui", "yeah", "yep", "ok", "okay", "d'accord",
                "bon", "hmm", "well", "ah", "oh"}
# determiners after which an unknown leading word reads as a command verb ("nuke the cut-outs")
DETERMINERS = {"the", "all", "those", "these", "any", "les", "la", "le", "l'", "des", "ces", "tous",
               "toutes", "cette", "ce", "cet"}
# quantifiers that say nothing under a negation ("exclude anything by X", "exclus tout ce qui")
NEG_FILLERS = {"anything", "everything", "all", "any", "every", "stuff", "things", "thing", "those",
               "tout", "toutes", "tous", "ce", "ceux", "celles", "qui", "est", "sont", "ça", "cela",
               "that", "which", "is", "are", "was", "were", "what", "les", "des", "de", "d'", "the"}
# function words that are not worth reporting when they are all a negation left unread
NEG_LEFTOVERS = {"from", "in", "at", "of", "by", "on", "to", "for", "with", "de", "du", "des", "d'",
                 "à", "au", "aux", "en", "par", "dans", "sur", "pour", "avec", "ones", "one", "any",
                 "more", "plus", "le", "la", "l'", "les", "un", "une", "a", "an", "the"}
ADD = {"also", "too", "aussi", "également", "add", "ajoute", "ajouter", "plus", "include", "adding",
       "ajoutez", "rajoute", "rajoutez", "inclus", "inclure", "incluez", "additionally", "besides"}
ADD_PHRASES = {tuple(p.split()) for p in (
    "as well|en plus|as well as|and also|along with|together with|in addition|in addition to|"
    "on top of that|throw in|bring in|bring back|put back|mix in|de plus|ainsi que|remets|"
    "remettez|et aussi|avec en plus|ajoute aussi|rajoute aussi").split("|")}
CONNECT_OR = {"or", "ou"}
CONNECT = {"and", "et", "but", "mais", "&"}
ADDED_CUES = {"added", "uploaded", "uploads", "upload", "imported", "ajouté", "ajoutée", "ajoutés",
              "ajoutées", "importé", "importée", "importés", "importées", "téléversé", "téléversées",
              "téléversés"}
CREATOR_STRONG = {("shot", "by"), ("taken", "by"), ("photographed", "by"), ("created", "by"),
                  ("made", "by"), ("drawn", "by"), ("prises", "par"), ("prise", "par"), ("pris", "par"),
                  ("photographiées", "par"), ("photographiés", "par"), ("réalisées", "par"),
                  ("réalisés", "par"), ("faites", "par"), ("photographié", "par"),
                  ("photographiée", "par"), ("photographiés", "par"), ("pris", "en", "photo", "par"),
                  ("prises", "en", "photo", "par"), ("réalisé", "par"), ("réalisée", "par"),
                  ("fait", "par"), ("faite", "par"), ("faits", "par"), ("signé", "par"),
                  ("signées", "par"), ("signés", "par"), ("signée", "par"), ("dessiné", "par"),
                  ("dessinées", "par"), ("dessinés", "par"), ("créé", "par"), ("créées", "par"),
                  ("créés", "par"), ("credited", "to"), ("photographed", "by"), ("captured", "by"),
                  ("snapped", "by"), ("authored", "by"), ("illustrated", "by"), ("designed", "by"),
                  ("painted", "by")}
CREATOR_CUES = {"by", "par"}
# French "signé X" without "par": the common way to credit a work to its author ("une photo
# signée Doisneau", "un film signé Varda"), so a creator, read only before a capitalised name
# ("signées à la main" is a literal signature and stays text). English needs "signed by".
CREATOR_SIGNED = {"signé", "signée", "signés", "signées"}
# verbs after a name that make it the creator: "the ones that Maria took", "celles que Léa a prises"
CREATOR_VERBS = {"took", "shot", "photographed", "snapped", "made", "drew", "created", "taken",
                 "prises", "prise", "pris", "faites", "photographiées", "réalisées", "dessinées"}
CREATOR_ANAPHOR = {"ceux", "celles", "celle", "celui",   # "celles de Jean Dupont"
                   "est", "sont"}                         # "tout ce qui est de Bob Stone"
PERSON_CUES = {"with", "featuring", "showing", "avec", "starring", "depicting", "feature", "features",
               "représentent", "représente", "représentant", "montrant",
               "depict", "depicts", "shows"}
PERSON_PHRASES = {tuple(p.split()) for p in (
    "où apparaît|où apparaissent|où figure|où figurent|où l' on voit|où on voit|sur lesquelles on voit|"
    "sur lesquels on voit|qui montrent|qui montre|in which we see|where we see|that show|that shows|"
    "which show|with the person|avec la personne").split("|")}
PLACE_CUES = {"in", "from", "at", "à", "au", "aux", "en", "de", "d'", "du", "near", "près"}
KEYWORD_CUES = {("with", "the", "tag"), ("with", "tag"), ("avec", "le", "tag"),
                ("avec", "l'", "étiquette"), ("étiquette",), ("avec", "le", "mot", "clé"),
                ("mot", "clé"), ("keyworded",), ("labelled", "as"), ("labeled", "as"),
                ("marquées",), ("marqués",), ("taggées",), ("taggés",), ("taguées", "avec"),
                ("tagged",), ("tagged", "with"), ("tagged", "as"), ("labelled",), ("labeled",),
                ("keyword",), ("with", "the", "keyword"), ("with", "keyword"), ("étiquetées",),
                ("étiquetés",), ("étiquetée",), ("étiqueté",), ("taguées",), ("tagués",),
                ("mot-clé",), ("mot-clef",), ("avec", "le", "mot-clé"), ("avec", "le", "mot-clef"),
                ("le", "mot-clé"), ("keywords",), ("with", "the", "keywords"), ("with", "keywords"),
                ("tags",), ("with", "the", "tags"), ("with", "tags"), ("tag",), ("tagged", "with", "the"),
                ("tagged", "with", "the", "keyword"), ("avec", "les", "mots-clés"), ("mots-clés",),
                ("avec", "les", "tags"), ("avec", "le", "mot", "clef"), ("mot", "clef"),
                ("whose", "keyword"), ("whose", "tag"), ("dont", "le", "mot-clé"),
                ("étiquettées",), ("taggées", "avec"), ("marquées", "avec")}
COLLECTION_NOUNS = {"collection", "album", "shoot", "folder", "series", "set", "séance", "dossier",
                    "reportage", "shooting", "série"}
COLLECTION_LEAD = {"in", "from", "within", "dans", "de", "du", "d'", "the", "la", "le", "l'", "my", "our",
                   "mon", "ma", "mes", "notre", "nos", "this", "that", "cette", "ce"}
# first words of multi-word place names ("pictures of New York" is a place, "of Ana Silva" a person)
PLACE_PREFIXES = {"new", "san", "santa", "santo", "são", "sao", "saint", "sainte", "st", "ste", "los",
                  "las", "la", "le", "les", "el", "port", "porto", "mont", "mount", "lake", "cape",
                  "rio", "fort", "north", "south", "east", "west", "upper", "lower", "great", "costa",
                  "isla", "île", "ile", "val", "bad", "hong", "kuala", "buenos", "abu", "tel", "ciudad"}
# nouns that name a field of the filter: followed by one word no table reads, both are unparsed
FIELD_NOUNS = {"licence", "license", "licences", "licenses", "rights", "droits", "colour", "color",
               "couleur", "couleurs", "colours", "colors", "format", "orientation", "kind",
               "genre"}
# verbs of taking a picture, before "in <month>" ("shot in Febtember" is a date, mistyped)
DATE_VERBS = {"shot", "taken", "captured", "photographed", "made", "snapped", "created", "dated",
              "prises", "prise", "pris", "photographiées", "photographiés", "faites", "réalisées",
              "datées", "datant"}
# generic nouns of an image search, before "of"/"de" + a name
IMAGE_NOUNS = {"photos", "photo", "pictures", "picture", "images", "image", "pics", "pic", "shots",
               "photographs", "photographies", "clichés", "cliché", "portraits", "snaps"}
NAME_PARTICLES = {"de", "da", "van", "von", "der", "den", "du", "di", "la", "le", "del", "dos", "y"}
EXPIRING = {tuple(f"{s}{v} {b}".split()) for s in ("", "licence ", "license ", "rights ",
                                                   "licences ", "licenses ", "the licence ",
                                                   "the license ", "the rights ", "usage rights ",
                                                   "les licences ", "dont les licences ",
                                                   "droits ", "la licence ", "les droits ",
                                                   "whose licence ", "whose rights ",
                                                   "dont la licence ", "dont les droits ")
            for v in ("expiring", "expire", "expires", "expirent", "expirant", "expirera",
                      "expireront", "ending", "ends", "run out", "runs out")
            for b in ("before", "avant", "by", "prior to", "avant le")} | {("expiring", "before"), ("expire", "before"), ("that", "expire", "before"),
            ("expires", "before"), ("qui", "expirent", "avant"), ("expirant", "avant"),
            ("qui", "expire", "avant")}
REPLACE_WORDS = {"instead", "plutôt", "actually", "now", "maintenant", "rather", "finalement",
                 "alternatively", "otherwise", "sinon"}
ANAPHORA = {"ones", "those", "these", "them", "celles", "ceux", "celle", "celui", "which", "that",
            "qui", "dont", "parmi", "among", "celles-ci", "ceux-ci", "celles-là", "ceux-là",
            "celle-ci", "celui-ci"}

FILLERS = {
    # English request words, determiners, generic nouns of an image search
    "show", "me", "find", "give", "get", "search", "for", "i", "want", "need", "looking", "look",
    "please", "can", "could", "you", "the", "a", "an", "some", "all", "ones", "one", "those",
    "these", "them", "that", "which", "are", "is", "pictures", "picture", "images", "image",
    "pics", "pic", "photos", "photo", "photographs", "photograph", "shots", "shot", "of", "with",
    "files", "file", "taken", "captured", "actually", "now", "instead", "rather", "among", "like",
    "only", "just", "also", "too", "whose", "any", "what", "was", "were", "finalement",
    "alternatively", "otherwise", "sinon", "anything", "everything", "something", "i'm", "im", "we're", "let's", "let", "us",
    "see", "we", "would", "like", "have", "got", "do", "there", "here", "my", "our", "your",
    "'s", "ok", "okay", "right", "hmm", "datent", "datant", "dating", "dated", "daté", "datées", "well", "so", "thanks", "again", "more", "ones", "shots", "snaps",
    "things", "items", "bien", "where", "i'd", "id", "i'll", "we'd", "it",
    "photographs", "ne", "n'",
    # verbs of origin and having: "tout ce qui vient de Chine", "celles qui ont le mot-clé X"
    "vient", "viennent", "vienne", "venant", "provient", "proviennent", "come", "comes", "coming", "ont", "possèdent", "portent",
    "have", "has", "having", "yes", "oui", "si",
    # French
    "montre", "montre-moi", "moi", "trouve", "trouve-moi", "cherche", "je", "veux", "voudrais",
    "voir", "donne", "donne-moi", "les", "des", "la", "le", "l'", "un", "une", "du", "de", "d'",
    "celles", "ceux", "celle", "celui", "photographies", "clichés", "cliché", "fichiers",
    "fichier", "qui", "sont", "est", "avec", "prises", "pris", "prise", "plutôt", "maintenant",
    "parmi", "dont", "aussi", "seulement", "uniquement", "juste", "montrez", "montrez-moi",
    "affiche", "affiche-moi", "affichez", "trouvez", "cherchez", "voudrais", "aimerais",
    "j'", "j", "voici", "voilà", "bon", "alors", "ok", "d'accord", "merci", "photos", "vues",
    "nos", "mes", "vos", "ces", "nous", "a-t-il", "celles-ci", "ceux-ci", "celles-là", "ceux-là",
    "celle-ci", "celui-ci", "tout", "tous", "toutes",
}

# ages: "more than 5 years old" is captured before clock - 5 years; "less than 3 days old" since
AGE_CUES = {("more", "than"): "before", ("over",): "before", ("plus", "de"): "before",
            ("de", "plus", "de"): "before", ("older", "than"): "before", ("less", "than"): "since",
            ("under",): "since", ("moins", "de"): "since", ("de", "moins", "de"): "since",
            ("younger", "than"): "since", ("newer", "than"): "since", ("within",): "since"}
# date cues of more than one word (parse.m_date): the range they take of the date after them
DATE_CUE_PHRASES = {
    ("prior", "to"): "before", ("earlier", "than"): "before", ("older", "than"): "before",
    ("up", "to"): "until", ("up", "until"): "until", ("no", "later", "than"): "until",
    ("later", "than"): "after", ("newer", "than"): "after", ("more", "recent", "than"): "after",
    ("à", "partir", "de"): "since", ("à", "partir", "d'"): "since", ("starting", "from"): "since",
    ("starting",): "since", ("onwards", "from"): "since", ("plus", "récentes", "que"): "after",
    ("plus", "anciennes", "que"): "before", ("antérieures", "à"): "before",
    ("postérieures", "à"): "after", ("jusqu'", "à"): "until", ("jusqu'", "en"): "until",
}

FULL_MONTHS = {   # a month named alone ("since January") is a date only after a date cue
    "january": 1, "february": 2, "march": 3, "april": 4, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "janvier": 1, "février": 2,
    "fevrier": 2, "mars": 3, "avril": 4, "mai": 5, "juin": 6, "juillet": 7, "août": 8, "aout": 8,
    "septembre": 9, "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12,
}

MONTHS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "janvier", "février", "fevrier", "mars", "avril", "mai", "juin",
    "juillet", "août", "aout", "septembre", "octobre", "novembre", "décembre", "decembre",
}


@lru_cache(maxsize=1)
def countries() -> dict[str, str]:
    """Lower-cased English and French country names -> English ISO 3166 name.

    Source: ``pycountry`` (ISO 3166-1 and its French translation catalogue);
    the English value is ``common_name`` when ISO gives one, else ``name``.
    """
    import gettext

    import pycountry

    fr = gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=["fr"], fallback=True)
    out: dict[str, str] = {}
    for c in pycountry.countries:
        english = getattr(c, "common_name", None) or c.name
        for n in (c.name, english, getattr(c, "official_name", None)):
            if n:
                out[n.lower()] = english
                out[fr.gettext(n).lower()] = english
    # common names ISO does not list (the value is still the ISO English name)
    for alias, iso in (("uk", "united kingdom"), ("u.k", "united kingdom"), ("britain", "united kingdom"),
                       ("great britain", "united kingdom"), ("grande-bretagne", "united kingdom"),
                       ("usa", "united states"), ("u.s.a", "united states"), ("u.s", "united states"),
                       ("the united states", "united states"), ("états unis", "united states"),
                       ("etats-unis", "united states"), ("etats unis", "united states"),
                       ("russia", "russian federation"), ("russie", "russian federation"),
                       ("turkey", "türkiye"), ("holland", "netherlands"), ("hollande", "netherlands"),
                       ("the netherlands", "netherlands"), ("the uk", "united kingdom"),
                       ("the usa", "united states"), ("the us", "united states")):
        if iso in out:
            out.setdefault(alias, out[iso])
    return out
