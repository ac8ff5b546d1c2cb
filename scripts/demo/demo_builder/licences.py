"""Licence and copyright statements: normalisation to SPDX-like ids and URLs, rights lines, creator names."""
from __future__ import annotations

import re
import urllib.parse

from .common import dedupe, norm_space


CC_NAMES = {"BY": "by", "BY-SA": "by-sa", "BY-ND": "by-nd", "BY-NC": "by-nc",
            "BY-NC-SA": "by-nc-sa", "BY-NC-ND": "by-nc-nd"}
PD_MARK = "https://creativecommons.org/publicdomain/mark/1.0/"


def normalise_licence(text: str) -> tuple[str, str]:
    """Map a licence as written in a source to (SPDX-like id, licence URL)."""
    raw = norm_space(text).rstrip(".")
    u = raw.upper().replace("_", "-")
    u = re.sub(r"\s+", "-", u)
    if "PUBLIC-DOMAIN" in u or "PUBLICDOMAIN" in u.replace("-", "") or u == "PD":
        return "public-domain", PD_MARK
    if u.startswith("CC0"):
        return "CC0-1.0", "https://creativecommons.org/publicdomain/zero/1.0/"
    m = re.match(r"CC-?(BY(?:-NC)?(?:-SA|-ND)?)-?(\d\.\d)", u)
    if m:
        kind, ver = m.group(1), m.group(2)
        return f"CC-{kind}-{ver}", f"https://creativecommons.org/licenses/{CC_NAMES[kind]}/{ver}/"
    m = re.match(r"(A|L)?GPL-?V?(\d)(?:\.0)?(\+|-OR-LATER)?(?:-ONLY)?$", u)
    if m:
        prefix, ver, later = m.group(1) or "", m.group(2), m.group(3)
        spdx = f"{prefix}GPL-{ver}.0" + ("-or-later" if later else "")
        if prefix == "" and ver == "2":
            url = "https://www.gnu.org/licenses/old-licenses/gpl-2.0.html"
        else:
            url = f"https://www.gnu.org/licenses/{prefix.lower()}gpl-{ver}.0.html"
        return spdx, url
    if u == "MIT":
        return "MIT", "https://opensource.org/licenses/MIT"
    return raw, ""


def rights_line(copyright_text: str, licence: str) -> str:
    """Human copyright/licence statement for dc:Rights / IPTC CopyrightNotice."""
    c = norm_space(re.sub(r"\s*<[^<>@\s]+@[^<>\s]+>", "", copyright_text))  # no e-mail addresses
    if c and not re.match(r"(?i)(copyright|©|\(c\))", c):
        c = "© " + c
    parts = [p for p in (c, f"Licence: {licence}" if licence else "") if p]
    return ". ".join(parts)


YEAR_RE = re.compile(r"\b(1[89]|20)\d\d(\s*[-–]\s*(1[89]|20)?\d\d)?\b,?")


def clean_creators(copyright_text: str) -> list:
    """Names from a ``Copyright:`` field: years, e-mails and (c) signs removed."""
    out = []
    for line in re.split(r"\n", copyright_text):
        line = re.sub(r"<[^>]*>", "", line)
        line = re.sub(r"(?i)^\s*(copyright|©|\(c\))\s*", "", line)
        line = re.sub(r"(?i)©|\(c\)", "", line)
        line = YEAR_RE.sub("", line)
        line = re.sub(r"^\s*(by\s+)", "", line.strip(), flags=re.I)
        line = norm_space(line).strip(",;. ")
        if line and line.lower() not in ("none", "various"):
            out.append(line)
    return dedupe(out)


def first_url(text: str) -> str:
    """First http(s) URL in a text, without trailing punctuation."""
    m = re.search(r"https?://\S+", text or "")
    return m.group(0).rstrip(".,;)>`_") if m else ""


def wikimedia_title(url: str) -> str:
    """``.../wiki/File:Grand_Coulee_Dam_spillway.jpg`` -> ``Grand Coulee Dam spillway``."""
    if not url:
        return ""
    name = urllib.parse.unquote(url.rsplit("/", 1)[-1])
    name = re.sub(r"^[^:]+:", "", name)  # File:, Image:, Datoteka:, Attēls:
    name = re.sub(r"\.(jpe?g|png|gif|svg|tiff?)$", "", name, flags=re.I)
    return norm_space(name.replace("_", " "))
