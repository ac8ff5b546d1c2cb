"""Writes eval/conversation/corpus.jsonl from the hand-written cases below.

This file is only a compact way of typing the corpus (Python literals are shorter
than JSON); every expected value below was written by hand, before the parser
existed (commit order shows it).  Run: python eval/conversation/write_corpus.py
"""
import json
from pathlib import Path

HEADER = {
    "header": (
        "Conversational-search corpus (SPEC X4, issue 17 part 2). Written by the 'ask' engineer "
        "on 2026-12-01 between 00:40 and 01:05 UTC, BEFORE the parser (src/loupe/conversation/) "
        "was written. Each case: the sentence, its language, the state left by the previous "
        "turn (null = first turn), the expected turn result (intent, filter, text, unparsed, "
        "contradiction) and the expected conversation state after the turn. Fixed clock for "
        "every relative date: 2026-06-15T12:00:00Z (a Monday); date ranges are half-open "
        "[from, to) in UTC, per the filter-tree contract in notes/roster.md. Conventions "
        "decided before the parser: see docs/conversation.md 'Corpus conventions'. "
        "Corrections after the parser was written: 2026-12-01 ~04:10 UTC (ask2, issue 17 row 2): "
        "the convention for 'black and white' / 'noir et blanc' changed from colour grey to the new "
        "predicate {monochrome: true}; en-011, en-118, fr-011 and fr-114 were changed accordingly; "
        "~04:05 UTC (ask2, row 3): quantifiers ('everything', 'tout') are no longer free text, "
        "en-010 and fr-010 changed accordingly; nothing else."
    ),
    "clock": "2026-06-15T12:00:00+00:00",
    "conventions": (
        "filter = what the sentence was understood to say (for a contradiction too); "
        "contradiction = the turn returns a message and leaves the state unchanged; "
        "remove: filter is the set taken out, state gains {not: filter}; "
        "add: the new predicate joins a same-field top-level conjunct by any, else any[previous, new]; "
        "refine: conjunction, a single-valued field (dates, kind, orientation, background, format, "
        "media type) replaces its old value; a turn with no free text after a previous turn refines; "
        "'black and white' = {monochrome: true} (colour grey before 2026-12-01 04:10); country values are English ISO 3166 names; "
        "fillers (show me, the, pictures, photos without a cue, of, with, de, des...) are dropped from text; "
        "so are quantifiers (anything, everything, tout) since 2026-12-01 04:05; "
        "unparsed lists negated free text and cue phrases whose value could not be read."
    ),
}

CASES = []


def case(cid, lang, sentence, intent, flt, text="", *, prev=None, unparsed=(),
         contradiction=False, state=None, note=""):
    """prev/state: (filter, text).  state defaults to the turn itself (replace)."""
    if state is None:
        assert intent == "replace" or contradiction, cid
        state = prev if contradiction else (flt, text)
    CASES.append({
        "id": cid, "lang": lang, "sentence": sentence,
        "previous": None if prev is None else {"filter": prev[0], "text": prev[1]},
        "expected": {"intent": intent, "filter": flt, "text": text,
                     "unparsed": list(unparsed), "contradiction": contradiction},
        "state": {"filter": state[0], "text": state[1]},
        **({"note": note} if note else {}),
    })


def A(*nodes):
    return {"all": list(nodes)}


def O(*nodes):
    return {"any": list(nodes)}


def N(node):
    return {"not": node}


def col(c):
    return {"colour": c}


def cap(f=None, t=None):
    d = {}
    if f: d["from"] = f
    if t: d["to"] = t
    return {"captured": d}


def add(f=None, t=None):
    d = {}
    if f: d["from"] = f
    if t: d["to"] = t
    return {"added": d}


def kind(k): return {"kind": k}
def ori(o): return {"orientation": o}
def bg(b): return {"background": b}
CUT = {"cutout": True}
def cre(c): return {"creator": c}
def kw(k): return {"keyword": k}
def coll(c): return {"collection": c}
def fmt(f): return {"format": f}
def mt(m): return {"media_type": m}
def country(c): return {"country": c}
def loc(c): return {"location": c}
def person(p): return {"person": p}
def rights(r): return {"rights": r}
MONO = {"monochrome": True}


Y2019 = cap("2019-01-01", "2020-01-01")

# ---------------------------------------------------------------- English, first turns
case("en-001", "en", "red flowers", "replace", col("red"), "flowers")
case("en-002", "en", "show me pictures of boats", "replace", None, "boats")
case("en-003", "en", "sunsets from 2019", "replace", Y2019, "sunsets")
case("en-004", "en", "beaches in 2019", "replace", Y2019, "beaches")
case("en-005", "en", "harbour photos taken in March 2019", "replace",
     cap("2019-03-01", "2019-04-01"), "harbour")
case("en-006", "en", "photos by Jane Doe", "replace", cre("Jane Doe"))
case("en-007", "en", "portraits shot by anne de vries", "replace", cre("anne de vries"), "portraits",
     note="'portraits' without a restrictive cue stays free text; strong cue 'shot by' accepts a lower-case name")
case("en-008", "en", "images tagged harbour", "replace", kw("harbour"))
case("en-009", "en", 'pictures tagged "sea view"', "replace", kw("sea view"))
case("en-010", "en", "everything in the Lisbon collection", "replace", coll("Lisbon"), "")
case("en-011", "en", "only the portraits from the Lisbon shoot, not the black and white ones", "replace",
     A(ori("portrait"), coll("Lisbon"), N(MONO)), "",
     note="seed 002's sentence; 'black and white' is the monochrome predicate")
case("en-012", "en", "PNG files with a transparent background", "replace", A(fmt("png"), bg("transparent")))
case("en-013", "en", "image/tiff scans", "replace", A(mt("image/tiff"), kind("document")))
case("en-014", "en", "illustrations of cats", "replace", kind("illustration"), "cats")
case("en-015", "en", "clip art of a car", "replace", kind("clipart"), "car")
case("en-016", "en", "line art birds", "replace", kind("lineart"), "birds")
case("en-017", "en", "screenshots of the login page", "replace", kind("screenshot"), "login page")
case("en-018", "en", "icons", "replace", kind("icon"))
case("en-019", "en", "only photos of dogs", "replace", kind("photo"), "dogs")
case("en-020", "en", "vertical pictures of trees", "replace", ori("portrait"), "trees")
case("en-021", "en", "horizontal banners", "replace", ori("landscape"), "banners")
case("en-022", "en", "square logos", "replace", ori("square"), "logos",
     note="'square' directly before a noun is the orientation")
case("en-023", "en", "panoramas of the city", "replace", ori("panorama"), "city")
case("en-024", "en", "products on a white background", "replace", bg("white"), "products")
case("en-025", "en", "cut-outs of shoes", "replace", CUT, "shoes")
case("en-026", "en", "isolated bottles on a black background", "replace", A(CUT, bg("black")), "bottles")
case("en-027", "en", "photos taken in Portugal", "replace", country("Portugal"))
case("en-028", "en", "street scenes in Lisbon", "replace", loc("Lisbon"), "street scenes")
case("en-029", "en", "pictures with Marie Curie", "replace", person("Marie Curie"))
case("en-030", "en", "embargoed images", "replace", rights("embargoed"))
case("en-031", "en", "assets whose licence has expired", "replace", rights("expired"), "assets")
case("en-032", "en", "licences expiring before March 2027", "replace",
     rights({"expiring_before": "2027-03-01"}), "licences")
case("en-033", "en", "flowers added last week", "replace", add("2026-06-08", "2026-06-15"), "flowers")
case("en-034", "en", "photos from last month", "replace", cap("2026-05-01", "2026-06-01"))
case("en-035", "en", "pictures taken this year", "replace", cap("2026-01-01", "2027-01-01"))
case("en-036", "en", "snow from last year", "replace", cap("2025-01-01", "2026-01-01"), "snow")
case("en-037", "en", "images added yesterday", "replace", add("2026-06-14", "2026-06-15"))
case("en-038", "en", "uploads from the last 30 days", "replace", add("2026-05-16", "2026-06-16"), "",
     note="'uploads' is an added-date cue")
case("en-039", "en", "concert photos since 2020", "replace", cap("2020-01-01"), "concert")
case("en-040", "en", "maps before 1990", "replace", cap(None, "1990-01-01"), "maps")
case("en-041", "en", "events between 2018 and 2020", "replace", cap("2018-01-01", "2021-01-01"), "events")
case("en-042", "en", "the harbour on 14 July 2019", "replace", cap("2019-07-14", "2019-07-15"), "harbour")
case("en-043", "en", "pictures from 2021-05-03", "replace", cap("2021-05-03", "2021-05-04"))
case("en-044", "en", "red or blue cars", "replace", O(col("red"), col("blue")), "cars")
case("en-045", "en", "green and yellow flags", "replace", A(col("green"), col("yellow")), "flags")
case("en-046", "en", "boats not by John Smith", "replace", N(cre("John Smith")), "boats")
case("en-047", "en", "logos without the icons", "replace", N(kind("icon")), "logos")
case("en-048", "en", "dogs but not the cut-outs", "replace", N(CUT), "dogs")
case("en-049", "en", "flowers by the sea", "replace", None, "flowers by sea",
     note="'by' + lower-case words is ordinary text; filler 'the' dropped")
case("en-050", "en", "SS26-HERO-03", "replace", None, "SS26-HERO-03")
case("en-051", "en", "4471-RD red", "replace", col("red"), "4471-RD")
case("en-052", "en", "a dog on a skateboard", "replace", None, "dog on skateboard")
case("en-053", "en", "cats not dogs", "replace", None, "cats", unparsed=["not dogs"],
     note="negated free text cannot be a predicate: reported, not searched for")
case("en-054", "en", "gray jpg photos from Spain", "replace", A(col("grey"), fmt("jpeg"), country("Spain")))
case("en-055", "en", "pictures from Lisbon by Jane Doe in 2019 tagged tram", "replace",
     A(loc("Lisbon"), cre("Jane Doe"), Y2019, kw("tram")))
case("en-056", "en", "photos from 3 days ago", "replace", cap("2026-06-12", "2026-06-13"))
case("en-057", "en", "only red, not red", "replace", A(col("red"), N(col("red"))), "", contradiction=True, state=(None, ""),
     note="contradictory sentence: clear message, state unchanged")
case("en-058", "en", "landscapes with mountains", "replace", None, "landscapes mountains",
     note="'landscapes' without a restrictive cue is scenery, free text")
case("en-059", "en", "purple pink and brown", "replace", A(col("purple"), col("pink"), col("brown")))
case("en-060", "en", "mountains in landscape format", "replace", ori("landscape"), "mountains")

# ---------------------------------------------------------------- English, later turns
F = (None, "flowers")
FR_ = (col("red"), "flowers")
case("en-101", "en", "only the red ones", "refine", col("red"), prev=F, state=(col("red"), "flowers"))
case("en-102", "en", "not the cut-outs", "remove", CUT, prev=FR_,
     state=(A(col("red"), N(CUT)), "flowers"), note="three-turn seed example, turn 3")
case("en-103", "en", "also the yellow ones", "add", col("yellow"), prev=FR_,
     state=(O(col("red"), col("yellow")), "flowers"))
case("en-104", "en", "from 2019", "refine", Y2019, prev=F, state=(Y2019, "flowers"),
     note="a turn made only of constraints narrows the previous one")
case("en-105", "en", "actually from 2020", "refine", cap("2020-01-01", "2021-01-01"),
     prev=(A(col("red"), Y2019), "flowers"),
     state=(A(col("red"), cap("2020-01-01", "2021-01-01")), "flowers"),
     note="single-valued field: the new date replaces the old one")
case("en-106", "en", "boats", "replace", None, "boats", prev=FR_)
case("en-107", "en", "now show me boats instead", "replace", None, "boats", prev=FR_)
case("en-108", "en", "not red", "remove", col("red"), prev=FR_, contradiction=True,
     note="removing what the state requires leaves nothing: message, state unchanged")
case("en-109", "en", "just the landscape ones", "refine", ori("landscape"), prev=F,
     state=(ori("landscape"), "flowers"))
case("en-110", "en", "only the portraits", "refine", ori("portrait"), prev=(ori("landscape"), "beach"),
     state=(ori("portrait"), "beach"))
case("en-111", "en", "without the ones by Jane Doe", "remove", cre("Jane Doe"), prev=FR_,
     state=(A(col("red"), N(cre("Jane Doe"))), "flowers"))
case("en-112", "en", "exclude the embargoed ones", "remove", rights("embargoed"), prev=F,
     state=(N(rights("embargoed")), "flowers"))
case("en-113", "en", "also pictures by John Smith", "add", cre("John Smith"), prev=(cre("Jane Doe"), "boats"),
     state=(O(cre("Jane Doe"), cre("John Smith")), "boats"))
case("en-114", "en", "and those from 2018 too", "add", cap("2018-01-01", "2019-01-01"), prev=(Y2019, "snow"),
     state=(O(Y2019, cap("2018-01-01", "2019-01-01")), "snow"))
case("en-115", "en", "only the ones with dogs", "refine", None, "dogs", prev=(None, "beach"),
     state=(None, "beach dogs"))
case("en-116", "en", "which are on a white background", "refine", bg("white"), prev=(CUT, "shoes"),
     state=(A(CUT, bg("white")), "shoes"))
case("en-117", "en", "in Portugal", "refine", country("Portugal"), prev=(None, "tiles"),
     state=(country("Portugal"), "tiles"))
case("en-118", "en", "not the black and white ones", "remove", MONO, prev=(None, "portraits"),
     state=(N(MONO), "portraits"))
case("en-119", "en", "only the photos", "refine", kind("photo"), prev=(kind("illustration"), "cats"),
     state=(kind("photo"), "cats"))
case("en-120", "en", "remove the screenshots", "remove", kind("screenshot"), prev=(None, "login"),
     state=(N(kind("screenshot")), "login"))
case("en-121", "en", "also the blue ones", "add", col("blue"), prev=(A(col("red"), N(CUT)), "flowers"),
     state=(A(O(col("red"), col("blue")), N(CUT)), "flowers"),
     note="add: joins the same-field conjunct by OR, keeps the other conjuncts")
case("en-122", "en", "only those added this month", "refine", add("2026-06-01", "2026-07-01"), prev=F,
     state=(add("2026-06-01", "2026-07-01"), "flowers"))
case("en-123", "en", "only png", "refine", fmt("png"), prev=(None, "logo"), state=(fmt("png"), "logo"))
case("en-124", "en", "square ones only", "refine", ori("square"), prev=(None, "avatars"),
     state=(ori("square"), "avatars"))
case("en-125", "en", "from the Summer 2024 collection", "refine", coll("Summer 2024"), prev=(None, "beach"),
     state=(coll("Summer 2024"), "beach"))
case("en-126", "en", "the expired ones", "refine", rights("expired"), prev=(None, "logos"),
     state=(rights("expired"), "logos"))
case("en-127", "en", "only the ones with Ada Lovelace", "refine", person("Ada Lovelace"), prev=(None, "lecture"),
     state=(person("Ada Lovelace"), "lecture"))
case("en-128", "en", "drop the ones tagged draft", "remove", kw("draft"), prev=(None, "poster"),
     state=(N(kw("draft")), "poster"))
case("en-129", "en", "not from Spain", "remove", country("Spain"), prev=(country("Spain"), "beach"),
     contradiction=True)
case("en-130", "en", "only the ones taken yesterday", "refine", cap("2026-06-14", "2026-06-15"),
     prev=(None, "party"), state=(cap("2026-06-14", "2026-06-15"), "party"))

# ---------------------------------------------------------------- French, first turns
case("fr-001", "fr", "des fleurs rouges", "replace", col("red"), "fleurs")
case("fr-002", "fr", "montre-moi des photos de bateaux", "replace", None, "bateaux")
case("fr-003", "fr", "couchers de soleil en 2019", "replace", Y2019, "couchers soleil",
     note="'de' before a lower-case word is filler")
case("fr-004", "fr", "le port en mars 2019", "replace", cap("2019-03-01", "2019-04-01"), "port")
case("fr-005", "fr", "photos de 2019", "replace", Y2019)
case("fr-006", "fr", "les photos prises par Jean Dupont", "replace", cre("Jean Dupont"))
case("fr-007", "fr", "images par Marie-Claire Martin", "replace", cre("Marie-Claire Martin"))
case("fr-008", "fr", "images étiquetées port", "replace", kw("port"))
case("fr-009", "fr", "photos avec le mot-clé « vue mer »", "replace", kw("vue mer"))
case("fr-010", "fr", "tout dans la collection Lisbonne", "replace", coll("Lisbonne"), "")
case("fr-011", "fr", "seulement les portraits de la séance Lisbonne, sauf les noir et blanc", "replace",
     A(ori("portrait"), coll("Lisbonne"), N(MONO)))
case("fr-012", "fr", "fichiers PNG sur fond transparent", "replace", A(fmt("png"), bg("transparent")))
case("fr-013", "fr", "illustrations de chats", "replace", kind("illustration"), "chats")
case("fr-014", "fr", "dessins au trait d'oiseaux", "replace", kind("lineart"), "oiseaux",
     note="elided d' is filler")
case("fr-015", "fr", "captures d'écran de la page de connexion", "replace", kind("screenshot"),
     "page connexion")
case("fr-016", "fr", "des icônes", "replace", kind("icon"))
case("fr-017", "fr", "uniquement des photos de chiens", "replace", kind("photo"), "chiens")
case("fr-018", "fr", "arbres à la verticale", "replace", ori("portrait"), "arbres")
case("fr-019", "fr", "bannières horizontales", "replace", ori("landscape"), "bannières")
case("fr-020", "fr", "logos carrés", "replace", ori("square"), "logos")
case("fr-021", "fr", "panoramas de la ville", "replace", ori("panorama"), "ville")
case("fr-022", "fr", "produits sur fond blanc", "replace", bg("white"), "produits")
case("fr-023", "fr", "chaussures détourées", "replace", CUT, "chaussures")
case("fr-024", "fr", "bouteilles sur fond noir", "replace", bg("black"), "bouteilles")
case("fr-025", "fr", "photos prises au Portugal", "replace", country("Portugal"))
case("fr-026", "fr", "scènes de rue à Lisbonne", "replace", loc("Lisbonne"), "scènes rue")
case("fr-027", "fr", "photos en Espagne", "replace", country("Spain"),
     note="country names are given in English (canonical ISO 3166 short name)")
case("fr-028", "fr", "photos avec Marie Curie", "replace", person("Marie Curie"))
case("fr-029", "fr", "images sous embargo", "replace", rights("embargoed"))
case("fr-030", "fr", "images dont la licence a expiré", "replace", rights("expired"))
case("fr-031", "fr", "licences qui expirent avant mars 2027", "replace",
     rights({"expiring_before": "2027-03-01"}), "licences")
case("fr-032", "fr", "fleurs ajoutées la semaine dernière", "replace", add("2026-06-08", "2026-06-15"), "fleurs")
case("fr-033", "fr", "photos du mois dernier", "replace", cap("2026-05-01", "2026-06-01"))
case("fr-034", "fr", "photos prises cette année", "replace", cap("2026-01-01", "2027-01-01"))
case("fr-035", "fr", "neige de l'année dernière", "replace", cap("2025-01-01", "2026-01-01"), "neige")
case("fr-036", "fr", "images ajoutées hier", "replace", add("2026-06-14", "2026-06-15"))
case("fr-037", "fr", "concerts depuis 2020", "replace", cap("2020-01-01"), "concerts")
case("fr-038", "fr", "cartes avant 1990", "replace", cap(None, "1990-01-01"), "cartes")
case("fr-039", "fr", "événements entre 2018 et 2020", "replace", cap("2018-01-01", "2021-01-01"), "événements")
case("fr-040", "fr", "le port le 14 juillet 2019", "replace", cap("2019-07-14", "2019-07-15"), "port")
case("fr-041", "fr", "voitures rouges ou bleues", "replace", O(col("red"), col("blue")), "voitures")
case("fr-042", "fr", "drapeaux verts et jaunes", "replace", A(col("green"), col("yellow")), "drapeaux")
case("fr-043", "fr", "bateaux sauf ceux de Jean Dupont", "replace", N(cre("Jean Dupont")), "bateaux",
     note="after 'ceux/celles de', a capitalised name is the creator")
case("fr-044", "fr", "logos sans les icônes", "replace", N(kind("icon")), "logos")
case("fr-045", "fr", "chiens mais pas les détourés", "replace", N(CUT), "chiens")
case("fr-046", "fr", "des roses rouges", "replace", col("red"), "roses",
     note="'roses' is the flower here (noun after a determiner)")
case("fr-047", "fr", "un chien sur un skateboard", "replace", None, "chien sur skateboard")
case("fr-048", "fr", "chats pas chiens", "replace", None, "chats", unparsed=["pas chiens"])
case("fr-049", "fr", "photos grises en jpeg d'Italie", "replace", A(col("grey"), fmt("jpeg"), country("Italy")))
case("fr-050", "fr", "seulement rouge, pas rouge", "replace", A(col("red"), N(col("red"))), "", contradiction=True, state=(None, ""))
case("fr-051", "fr", "photos d'il y a 3 jours", "replace", cap("2026-06-12", "2026-06-13"))
case("fr-052", "fr", "paysages de montagne", "replace", None, "paysages montagne",
     note="'paysages' without a cue is scenery, free text")
case("fr-053", "fr", "montagnes en format paysage", "replace", ori("landscape"), "montagnes")
case("fr-054", "fr", "images ajoutées ces 30 derniers jours", "replace", add("2026-05-16", "2026-06-16"))
case("fr-055", "fr", "images au format image/webp", "replace", mt("image/webp"))

# ---------------------------------------------------------------- French, later turns
FF = (None, "fleurs")
FFR = (col("red"), "fleurs")
case("fr-101", "fr", "seulement les rouges", "refine", col("red"), prev=FF, state=(col("red"), "fleurs"))
case("fr-102", "fr", "sauf les détourées", "remove", CUT, prev=FFR, state=(A(col("red"), N(CUT)), "fleurs"))
case("fr-103", "fr", "aussi les jaunes", "add", col("yellow"), prev=FFR,
     state=(O(col("red"), col("yellow")), "fleurs"))
case("fr-104", "fr", "de 2019", "refine", Y2019, prev=FF, state=(Y2019, "fleurs"))
case("fr-105", "fr", "plutôt en 2020", "refine", cap("2020-01-01", "2021-01-01"),
     prev=(A(col("red"), Y2019), "fleurs"),
     state=(A(col("red"), cap("2020-01-01", "2021-01-01")), "fleurs"))
case("fr-106", "fr", "des bateaux", "replace", None, "bateaux", prev=FFR)
case("fr-107", "fr", "pas les rouges", "remove", col("red"), prev=FFR, contradiction=True)
case("fr-108", "fr", "uniquement celles en format paysage", "refine", ori("landscape"), prev=FF,
     state=(ori("landscape"), "fleurs"))
case("fr-109", "fr", "enlève celles de Jean Dupont", "remove", cre("Jean Dupont"), prev=FFR,
     state=(A(col("red"), N(cre("Jean Dupont"))), "fleurs"))
case("fr-110", "fr", "sauf celles sous embargo", "remove", rights("embargoed"), prev=FF,
     state=(N(rights("embargoed")), "fleurs"))
case("fr-111", "fr", "ajoute celles de 2018", "add", cap("2018-01-01", "2019-01-01"), prev=(Y2019, "neige"),
     state=(O(Y2019, cap("2018-01-01", "2019-01-01")), "neige"))
case("fr-112", "fr", "seulement celles sur fond blanc", "refine", bg("white"), prev=(CUT, "chaussures"),
     state=(A(CUT, bg("white")), "chaussures"))
case("fr-113", "fr", "au Portugal", "refine", country("Portugal"), prev=(None, "azulejos"),
     state=(country("Portugal"), "azulejos"))
case("fr-114", "fr", "pas les noir et blanc", "remove", MONO, prev=(None, "portraits"),
     state=(N(MONO), "portraits"))
case("fr-115", "fr", "seulement les photos", "refine", kind("photo"), prev=(kind("illustration"), "chats"),
     state=(kind("photo"), "chats"))
case("fr-116", "fr", "retire les captures d'écran", "remove", kind("screenshot"), prev=(None, "connexion"),
     state=(N(kind("screenshot")), "connexion"))
case("fr-117", "fr", "aussi les bleues", "add", col("blue"), prev=(A(col("red"), N(CUT)), "fleurs"),
     state=(A(O(col("red"), col("blue")), N(CUT)), "fleurs"))
case("fr-118", "fr", "seulement celles ajoutées ce mois-ci", "refine", add("2026-06-01", "2026-07-01"), prev=FF,
     state=(add("2026-06-01", "2026-07-01"), "fleurs"))
case("fr-119", "fr", "seulement les carrées", "refine", ori("square"), prev=(None, "avatars"),
     state=(ori("square"), "avatars"))
case("fr-120", "fr", "de la collection Été 2024", "refine", coll("Été 2024"), prev=(None, "plage"),
     state=(coll("Été 2024"), "plage"))
case("fr-121", "fr", "seulement celles avec Ada Lovelace", "refine", person("Ada Lovelace"),
     prev=(None, "conférence"), state=(person("Ada Lovelace"), "conférence"))
case("fr-122", "fr", "pas d'Espagne", "remove", country("Spain"), prev=(country("Spain"), "plage"),
     contradiction=True)
case("fr-123", "fr", "seulement celles prises hier", "refine", cap("2026-06-14", "2026-06-15"),
     prev=(None, "fête"), state=(cap("2026-06-14", "2026-06-15"), "fête"))
case("fr-124", "fr", "celles qui sont verticales", "refine", ori("portrait"), prev=(None, "arbres"),
     state=(ori("portrait"), "arbres"))
case("fr-125", "fr", "seulement celles avec des chiens", "refine", None, "chiens", prev=(None, "plage"),
     state=(None, "plage chiens"))

if __name__ == "__main__":
    out = Path(__file__).with_name("corpus.jsonl")
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    with out.open("w", encoding="utf-8") as f:
        f.write(json.dumps(HEADER, ensure_ascii=False) + "\n")
        for c in CASES:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    en = sum(c["lang"] == "en" for c in CASES)
    print(f"{len(CASES)} cases ({en} en, {len(CASES) - en} fr) -> {out}")
