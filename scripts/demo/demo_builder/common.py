"""Constants, the Item data model and small text helpers shared by every source."""
from __future__ import annotations

import dataclasses
import os
import re


LANGS = ("fr", "de", "es")  # translations kept besides x-default (English)

DEBIAN_PACKAGES = (
    "tuxpaint-stamps-default",
    "gcompris-qt-data",
    "openclipart-png",
    "openclipart-svg",
    "plasma-workspace-wallpapers",
    "mate-backgrounds",
)

# --------------------------------------------------------------------------
# Data model and small helpers
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Item:
    """One image of the library, with the metadata we will write for it."""

    source: str  # tuxpaint | gcompris | clipart | wallpapers | food | scikit-image
    rel: str  # wanted path inside the library (made unique later)
    mtime: int  # modification time copied from the source file
    kind: str  # photo | clipart | artwork
    title: dict  # lang -> text ("x-default" is English)
    description: dict = dataclasses.field(default_factory=dict)
    keywords: list = dataclasses.field(default_factory=list)
    creators: list = dataclasses.field(default_factory=list)
    rights: str = ""
    licence: str = ""
    licence_url: str = ""
    source_url: str = ""
    country: str = ""
    country_code: str = ""
    location: str = ""
    embed: str = "sidecar"  # sidecar | iptc (JPEG: IPTC+XMP) | exif (EXIF+XMP)
    data: bytes | None = None  # image bytes, or ...
    src_path: str | None = None  # ... a file to copy
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def is_photo(self) -> bool:
        return self.kind == "photo"


def norm_space(text: str) -> str:
    """Collapse all whitespace (newlines included) to single spaces."""
    return " ".join(str(text).split())


def camel_to_snake(name: str) -> str:
    """``goldenTemple`` -> ``golden_Temple`` (case is lowered by safe_name)."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)


def safe_name(name: str) -> str:
    """Lower-case file/folder name made of ``[a-z0-9._-]`` only."""
    name = camel_to_snake(name).lower()
    name = name.replace("&", "and")
    name = re.sub(r"[^a-z0-9._-]+", "_", name)
    name = re.sub(r"_+-+_*|-+_+", "_", name)  # "Brinjal - all varieties" -> brinjal_all_varieties
    name = re.sub(r"_+", "_", name).strip("_.-")
    return name or "image"


def humanise(stem: str, strip_number: bool = True) -> str:
    """``tiger_sumatran`` -> ``Tiger sumatran`` (the file name's own words)."""
    text = camel_to_snake(stem).replace("_", " ").replace("-", " ")
    if strip_number:
        text = re.sub(r"(?<=[A-Za-z])\s*\d+$", "", text)
    text = norm_space(text)
    return text[:1].upper() + text[1:]


def dedupe(values) -> list:
    """Keep the first occurrence of each non-empty value (case-insensitive)."""
    seen, out = set(), []
    for v in values:
        v = norm_space(v)
        if v and v.lower() not in seen:
            seen.add(v.lower())
            out.append(v)
    return out


def file_mtime(path: str) -> int:
    """Integer modification time of a source file."""
    return int(os.stat(path).st_mtime)
