"""Credits files: Debian DEP-5 copyright stanzas and GCompris README stanzas."""
from __future__ import annotations

import fnmatch
import re


# --------------------------------------------------------------------------
# Credits files (Debian DEP-5 copyright, GCompris README stanzas)
# --------------------------------------------------------------------------

CREDIT_KEYS = {"files", "copyright", "license", "licence", "source", "comment",
               "comments", "author", "format", "upstream-name", "upstream-contact",
               "disclaimer"}
FILE_LINE = re.compile(r"^\s*[\w.\-*/()\[\]]+\.(webp|svgz?|png|jpe?g|gif|ogg|wav|qml|js)\s*$", re.I)


def parse_credit_stanzas(text: str) -> list:
    """Parse DEP-5-like stanzas into dicts (``files`` is a list of patterns).

    Tolerates the loose GCompris README style: file names listed on lines of
    their own (with or without a ``Files:`` header) and multi-line fields.
    """
    stanzas = []
    for block in re.split(r"\n\s*\n", text):
        st, key = {"files": []}, None
        for line in block.splitlines():
            m = re.match(r"^([A-Za-z-]+):\s*(.*)$", line)
            if m and m.group(1).lower() in CREDIT_KEYS:
                key = m.group(1).lower()
                key = {"licence": "license", "comments": "comment"}.get(key, key)
                if key == "files":
                    st["files"] += m.group(2).split()
                else:
                    st[key] = m.group(2).strip()
                continue
            if key == "files" or (FILE_LINE.match(line) and key != "comment"):
                st["files"] += line.split()
                key = "files"
            elif key and line.strip() not in ("", "."):
                st[key] = (st.get(key, "") + "\n" + line.strip()).strip()
        if st["files"] and ("copyright" in st or "license" in st):
            stanzas.append(st)
    return stanzas


class Credits:
    """Look up copyright/licence/source for a file; the last matching stanza wins."""

    def __init__(self):
        self.rules = []  # (pattern, stanza), in order of precedence (later wins)

    def add(self, stanzas, prefix=""):
        """Add stanzas whose ``Files:`` patterns are relative to ``prefix``."""
        for st in stanzas:
            for pat in st["files"]:
                if pat != "*":  # catch-all stanzas name the code's authors, not the images'
                    self.rules.append((prefix + pat.lstrip("./"), st))

    @staticmethod
    def _stem(p):
        return re.sub(r"\.(webp|jpe?g|png|gif|svg)$", "", p, flags=re.I)

    def lookup(self, path: str) -> dict:
        """Stanza for ``path``; extensions are ignored (jpg became webp upstream)."""
        found = {}
        stem = self._stem(path)
        for pat, st in self.rules:
            if fnmatch.fnmatchcase(path, pat) or fnmatch.fnmatchcase(stem, self._stem(pat)):
                found = st
        return found
