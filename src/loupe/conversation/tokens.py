"""Tokens of a sentence for the conversation's compiler (:mod:`.parse`):
quoted phrases kept whole, French elisions split, clause punctuation as ",";
and the token tests the matchers share. Imports nothing from Loupe."""

from __future__ import annotations

import re

TOKEN = re.compile(r'"[^"]*"|«[^»]*»|“[^”]*”|‘[^’]*’|(?<![\w\'])\'[^\']+\'(?![\w\'])|[,;!?:()]'
                   r'|[^\s,;!?:()"«»“”]+')
ELISION = re.compile(r"^(l|d|qu|j|n|s|c)'(.+)$", re.IGNORECASE)
MEDIA_TYPE = re.compile(r"^(image|video|application|audio)/[a-z0-9][a-z0-9.+-]{0,60}$")
QUOTES = "\"«»“”‘"


def tokenize(sentence: str) -> list[str]:
    """Tokens of a sentence: quoted phrases stay whole (with their quotes),
    French elisions are split ("l'année" -> "l'", "année"), punctuation that
    separates clauses becomes ",", trailing dots are dropped."""
    out: list[str] = []
    for t in TOKEN.findall(sentence.replace("’", "'").replace("‘", "'")):
        if t[0] in QUOTES or (len(t) > 2 and t[0] == t[-1] == "'" and " " in t):
            out.append(t)
            continue
        if t in (";", "!", "?", ":", "(", ")"):
            out.append(",")
            continue
        t = t.rstrip(".")
        if not t:
            continue
        m = ELISION.match(t)
        if re.fullmatch(r"\w{2,}'s", t, re.UNICODE):    # "last year's", "Maria's": the possessive apart
            out += [t[:-2], "'s"]
            continue
        if m and t.lower() != "aujourd'hui":
            out += [m.group(1) + "'", m.group(2)]
        else:
            out.append(t)
    return out


def is_cap(t: str) -> bool:
    """Whether token ``t`` starts with a capital letter."""
    return bool(t) and t[0].isalpha() and t[0].isupper()


def unquote(t: str) -> str | None:
    """A quoted token's phrase without its quotes (None: not quoted)."""
    if t and (t[0] in QUOTES or (len(t) > 2 and t[0] == t[-1] == "'" and " " in t)):
        return t[1:-1].strip()
    return None
