"""Source: GCompris"""
from __future__ import annotations

import json
import os
import re

from .common import Item, LANGS, dedupe, file_mtime, humanise, norm_space, safe_name
from .licences import clean_creators, first_url, normalise_licence, rights_line, wikimedia_title
from .credits import Credits, parse_credit_stanzas
from .qt import QSTR, Translator, js_unescape, qml_fields, read_rcc


# --------------------------------------------------------------------------
# Source: GCompris
# --------------------------------------------------------------------------

COUNTRIES = {  # folder / place name -> (country, ISO 3166-1 alpha-2)
    "egypt": ("Egypt", "EG"), "france": ("France", "FR"), "germany": ("Germany", "DE"),
    "india": ("India", "IN"), "usa": ("United States", "US"), "australia": ("Australia", "AU"),
    "denmark": ("Denmark", "DK"), "japan": ("Japan", "JP"),
}
GC = "gcompris/src/activities/"
# GCompris images that are diagrams rather than photos (checked by eye).
GCOMPRIS_NOT_PHOTOS = {"louis-braille/resource/chart", "louis-braille/resource/night_printing"}


class GComprisData:
    """All rcc bundles, the translations and the credits of gcompris-qt-data."""

    def __init__(self, pkg_root: str):
        share = os.path.join(pkg_root, "usr/share/gcompris-qt")
        self.rcc_dir = os.path.join(share, "rcc")
        self.files, self.mtime = {}, {}
        for fn in sorted(os.listdir(self.rcc_dir)):
            if fn.endswith(".rcc"):
                path = os.path.join(self.rcc_dir, fn)
                for k, v in read_rcc(path).items():
                    self.files[k] = v
                    self.mtime[k] = file_mtime(path)
        self.tr = Translator(os.path.join(share, "translations"))
        self.credits = Credits()
        deb = open(os.path.join(pkg_root, "usr/share/doc/gcompris-qt-data/copyright"),
                   encoding="utf-8").read()
        self.credits.add(parse_credit_stanzas(deb), prefix="gcompris/")
        for path in sorted(self.files):  # README files sit next to the images
            if path.startswith(GC) and os.path.basename(path) == "README":
                text = self.files[path].decode("utf-8", "replace")
                self.credits.add(parse_credit_stanzas(text), prefix=os.path.dirname(path) + "/")

    def text(self, path: str) -> str:
        return self.files[path].decode("utf-8", "replace")

    def activity_title(self, activity: str) -> dict:
        """The activity's own title (``ActivityInfo.qml``), translated."""
        m = re.search(r"\btitle:\s*" + QSTR, self.text(f"{GC}{activity}/ActivityInfo.qml"))
        return self.tr.langalt(js_unescape(m.group(1)), "ActivityInfo") if m else {}

    def item(self, path: str, rel: str, kind: str, title: dict, description=None,
             keywords=(), **kw) -> Item:
        """An Item for the image at rcc ``path`` with its credits applied."""
        cred = self.credits.lookup(path)
        licence, url = normalise_licence(cred.get("license", ""))
        src_url = cred.get("source") or first_url(cred.get("comment", ""))
        return Item(
            source="gcompris", rel=rel, mtime=self.mtime[path], kind=kind,
            title=title, description=description or {}, keywords=dedupe(keywords),
            creators=clean_creators(cred.get("copyright", "")),
            rights=rights_line(cred.get("copyright", ""), licence),
            licence=licence, licence_url=url, source_url=first_url(src_url),
            data=self.files[path],
            extra={"rcc_path": path, "credit_comment": norm_space(cred.get("comment", ""))}
            | kw.pop("extra", {}),
            **kw,
        )


def gcompris_explore_boards(gd: GComprisData, activity: str) -> list:
    """Items of the "explore" activities: each map spot has title, text, photo."""
    items = []
    act_title = gd.activity_title(activity)
    boards = sorted(p for p in gd.files if p.startswith(f"{GC}{activity}/resource/board/"))
    for board in boards:
        ctx = os.path.splitext(os.path.basename(board))[0]
        for block in re.findall(r"\{[^{}]*\"image2\"[^{}]*\}", gd.text(board)):
            f = qml_fields(block)
            img = f["image2"].replace("qrc:/", "")
            if img not in gd.files:
                continue
            sub = img.split("/resource/", 1)[1].split("/")
            folder = sub[-2] if len(sub) > 1 else ""
            country, code = COUNTRIES.get(folder, ("", ""))
            extra_kw = {}
            if activity == "explore_monuments":
                extra_kw = {"location": norm_space(f["title"]), "country": country,
                            "country_code": code}
            stem = os.path.splitext(sub[-1])[0]
            reldir = [activity] + ([folder] if activity == "explore_monuments" and folder else [])
            items.append(gd.item(
                img, "/".join(["gcompris"] + reldir + [safe_name(stem) + ".webp"]), "photo",
                title=gd.tr.langalt(f["title"], ctx),
                description=gd.tr.langalt(f["text"], ctx) if f.get("text") else {},
                keywords=[act_title.get("x-default", ""), country], **extra_kw))
    return items


def gcompris_categorization(gd: GComprisData) -> list:
    """Categorization photos: title = the Wikimedia file title from the credits."""
    base = f"{GC}categorization/resource/images/"
    names = {}
    for board in sorted(p for p in gd.files if "/categorization/resource/board/" in p):
        t = gd.text(board)
        pre = re.search(r'imagesPrefix:\s*"qrc:/([^"]+)"', t)
        name = re.search(r'"name":\s*' + QSTR, t)
        if pre and name and pre.group(1).startswith(base):
            names[pre.group(1)[len(base):].strip("/")] = js_unescape(name.group(1))
    items = []
    for path in sorted(p for p in gd.files if p.startswith(base) and p.endswith(".webp")):
        folder, fn = path[len(base):].split("/", 1)
        stem = os.path.splitext(fn)[0]
        it = gd.item(path, f"gcompris/categorization/{safe_name(folder)}/{safe_name(stem)}.webp",
                     "photo", title={}, keywords=[names.get(folder, folder)])
        it.title = {"x-default": wikimedia_title(it.source_url) or humanise(stem)}
        items.append(it)
    return items


def gcompris_details(gd: GComprisData) -> list:
    """"Find the details" boards: the full background image and its caption."""
    items = []
    for board in sorted(p for p in gd.files if f"{GC}details/resource/board/" in p):
        t = gd.text(board)
        title = re.search(r"instruction:\s*" + QSTR, t)
        bg = re.search(r'"pixmapfile"\s*:\s*"(image/[^"]+_background\.webp)"', t)
        if not (title and bg):
            continue
        path = f"{GC}details/resource/{bg.group(1)}"
        caption = js_unescape(title.group(1))
        ctx = os.path.splitext(os.path.basename(board))[0]
        stem = os.path.basename(bg.group(1))[: -len("_background.webp")]
        it = gd.item(path, f"gcompris/details/{safe_name(stem)}.webp", "photo",
                     title=gd.tr.langalt(caption, ctx),
                     keywords=[gd.activity_title("details").get("x-default", "")])
        if "painting" in it.extra["credit_comment"].lower():
            it.kind = "artwork"
            it.keywords.append("painting")
        last = caption.rstrip(". ").split(",")[-1].strip().lower()
        if last in COUNTRIES and caption.count(","):
            it.country, it.country_code = COUNTRIES[last]
        items.append(it)
    return items


def gcompris_simple_folder(gd: GComprisData, activity: str, titles=None,
                           descriptions=None, keywords=()) -> list:
    """Photos of one activity folder titled by their file name (or a table)."""
    titles, descriptions = titles or {}, descriptions or {}
    items = []
    prefix = f"{GC}{activity}/resource/"
    for path in sorted(p for p in gd.files if p.startswith(prefix) and p.endswith(".webp")):
        stem = os.path.splitext(os.path.basename(path))[0]
        key = f"{activity}/resource/{stem}"
        kind = "clipart" if key in GCOMPRIS_NOT_PHOTOS else "photo"
        items.append(gd.item(
            path, f"gcompris/{safe_name(activity)}/{safe_name(stem)}.webp", kind,
            title=titles.get(stem) or {"x-default": humanise(stem)},
            description=descriptions.get(stem, {}), keywords=keywords))
    return items


def gcompris_solar_system(gd: GComprisData) -> list:
    """Planet photos, titled with the body names of the activity's dataset."""
    t = gd.text(f"{GC}solar_system/Dataset.js")
    titles = {}
    for img, name in re.findall(r'"realImg":\s*"qrc:/[^"]*/([\w]+)\.webp",\s*"bodyName":\s*' + QSTR, t):
        titles[img] = gd.tr.langalt(js_unescape(name), "Dataset")
    return gcompris_simple_folder(gd, "solar_system", titles=titles,
                                  keywords=[gd.activity_title("solar_system").get("x-default", "")])


def gcompris_louis_braille(gd: GComprisData) -> list:
    """Louis Braille's life story: each picture with its sentence and year."""
    t = gd.text(f"{GC}louis-braille/louis_braille_data.js")
    desc, years = {}, {}
    for block in re.findall(r"\{[^{}]*\}", t):
        f = qml_fields(block)
        m = re.search(r'"img":\s*baseUrl\s*\+\s*"(\w+)\.webp"', block)
        if m and f.get("text"):
            desc[m.group(1)] = gd.tr.langalt(f["text"], "louis_braille_data")
            years[m.group(1)] = f.get("year", "")
    items = gcompris_simple_folder(gd, "louis-braille", descriptions=desc,
                                   keywords=[gd.activity_title("louis-braille").get("x-default", "")])
    for it in items:
        stem = os.path.splitext(os.path.basename(it.rel))[0]
        if years.get(stem):
            it.keywords.append(years[stem])
    return items


def gcompris_words(gd: GComprisData) -> list:
    """Vocabulary illustrations (Art4Apps clip art) with words in fr/de/es."""
    base = f"{GC}lang/resource/"
    sample = json.loads(gd.files[base + "words_sample.json"])
    content = {lang: json.loads(gd.files.get(f"{base}content-{lang}.json", b"{}")) for lang in LANGS}
    items, seen = [], set()
    for chapter in sample:
        for lesson in chapter.get("content", []):
            for word in lesson.get("content", []):
                path = base + "words_sample/" + word["image"]
                if path not in gd.files or path in seen:
                    continue
                seen.add(path)
                key = os.path.basename(word.get("voice", "")).replace("$CA", "ogg")
                title = {"x-default": norm_space(word["description"])}
                for lang in LANGS:
                    if content[lang].get(key):
                        title[lang] = norm_space(content[lang][key])
                stem = os.path.splitext(word["image"])[0]
                items.append(gd.item(
                    path, f"gcompris/words/{safe_name(lesson['name'])}/{safe_name(stem)}.webp",
                    "clipart", title=title, keywords=[lesson["name"], chapter["name"]]))
    return items


def collect_gcompris(pkg_root: str) -> list:
    """GCompris: Wikimedia photos and vocabulary clip art from the rcc bundles.

    Titles and descriptions come from the activities' QML/JS/JSON data (with
    fr/de/es from the shipped ``.qm`` catalogues), creators/licences/sources
    from the README stanzas in the bundles and the Debian copyright file.
    """
    gd = GComprisData(pkg_root)
    items = []
    for act in ("explore_monuments", "explore_world_animals", "explore_farm_animals",
                "explore_world_music"):
        items += gcompris_explore_boards(gd, act)
    items += gcompris_categorization(gd)
    items += gcompris_details(gd)
    items += gcompris_simple_folder(gd, "erase")  # animal photos, titled by file name
    items += gcompris_solar_system(gd)
    items += gcompris_louis_braille(gd)
    items += gcompris_words(gd)
    return items
