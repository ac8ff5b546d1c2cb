"""Source: scikit-image test images"""
from __future__ import annotations

import ast
import calendar
import os
import re
import zipfile

from .common import Item, dedupe, norm_space, safe_name
from .licences import first_url, normalise_licence, rights_line
from .credits import parse_credit_stanzas


# --------------------------------------------------------------------------
# Source: scikit-image test images
# --------------------------------------------------------------------------

# Synthetic/drawn images among scikit-image's data (not photographs).
SKIMAGE_CLIPART = {"logo", "horse", "colorwheel", "checkerboard", "shepp_logan_phantom"}


def rst_clean(text: str) -> str:
    """Turn reST markup (links, roles, literals, directives) into plain words."""
    text = re.sub(r"\n[ \t]*\.\. \w[^\n]*(\n[ \t]+[^\n]*)*", "\n", "\n" + text)  # directives
    text = re.sub(r"`([^`<]+?)\s*<([^>`]+)>`_*", r"\1 (\2)", text)
    text = re.sub(r"<(https?://[^>\s]+)>`?_*", r"(\1)", text)
    text = re.sub(r":\w+:`([^`]+)`", r"\1", text)
    return norm_space(text.replace("``", "").replace("`", ""))


def skimage_docstring_parts(doc: str) -> tuple[str, str, str]:
    """(title, description, notes) from a numpydoc docstring, reST removed."""
    sections = re.split(r"\n(\w[\w ]*)\n-{3,}\n", "\n" + doc)
    head = sections[0].strip()
    named = dict(zip(sections[1::2], sections[2::2]))
    paras = [rst_clean(p) for p in re.split(r"\n\s*\n", head) if p.strip()]
    title = paras[0] if paras else ""
    body = [p for p in paras[1:] if not p.startswith("..")]
    # statements about rights sometimes sit in the body instead of "Notes"
    rights_paras = [p for p in body if re.search(r"(?i)copyright|public domain|\bcc0\b", p)]
    desc = " ".join(p for p in body if p not in rights_paras)
    notes = " ".join([rst_clean(named.get("Notes", ""))] + rights_paras).strip()
    return title, desc, notes


def skimage_default_rights(z: zipfile.ZipFile) -> tuple[str, str]:
    """(copyright, licence) of the catch-all stanza of the wheel's LICENSE.txt."""
    for name in z.namelist():
        if name.endswith(".dist-info/LICENSE.txt"):
            for st in parse_credit_stanzas(z.read(name).decode("utf-8", "replace")):
                if st["files"] == ["*"]:
                    return st.get("copyright", ""), st.get("license", "")
    return "", ""


def collect_skimage(wheel_path: str) -> list:
    """scikit-image's classic images, described by their loaders' docstrings.

    Title = the docstring's first line, description = its body paragraphs,
    rights = its sentence about copyright (else the package's own licence
    stanza).  Only the data files inside the wheel are used.
    """
    if not wheel_path or not os.path.exists(wheel_path):
        return []
    z = zipfile.ZipFile(wheel_path)
    members = {i.filename: i for i in z.infolist()}
    pkg_copyright, pkg_licence = skimage_default_rights(z)
    tree = ast.parse(z.read("skimage/data/_fetchers.py").decode("utf-8"))
    items = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
            continue
        title, desc, notes = skimage_docstring_parts(ast.get_docstring(fn) or "")
        files = sorted({n.value for n in ast.walk(fn) if isinstance(n, ast.Constant)
                        and isinstance(n.value, str) and re.match(r"data/[\w.-]+\.(png|jpg)$", n.value)})
        for f in files:
            member = "skimage/" + f
            if member not in members:
                continue  # fetched from the network by scikit-image, not shipped
            low = notes.lower()
            statement = " ".join(s for s in re.split(r"(?<=\.)\s+", notes)
                                 if re.search(r"(?i)copyright|public domain|\bcc0\b", s))
            if re.search(r"\bcc0\b", low):
                licence, url = normalise_licence("CC0-1.0")
            elif "public domain" in low or "copyright restrictions" in low:
                licence, url = normalise_licence("public domain")
            else:
                licence, url = normalise_licence(pkg_licence)
                statement = rights_line(pkg_copyright, licence)
            creators = re.findall(r"(?:photographer|owner) \(((?:[^()]|\([^()]*\))+)\)", notes)
            creators += re.findall(r"captured by (NASA|SpaceX)", notes)
            stem = os.path.splitext(os.path.basename(f))[0]
            items.append(Item(
                source="scikit-image", rel=f"scikit-image/{safe_name(stem)}{os.path.splitext(f)[1]}",
                mtime=zip_epoch(members[member].date_time),
                kind="clipart" if fn.name in SKIMAGE_CLIPART else "photo",
                title={"x-default": title}, description={"x-default": desc} if desc else {},
                keywords=dedupe([fn.name.replace("_", " "), "scikit-image"]),
                creators=dedupe(creators), rights=statement, licence=licence, licence_url=url,
                source_url=first_url(notes) or first_url(desc), data=z.read(member),
                extra={"skimage_function": fn.name},
            ))
    return items


def zip_epoch(date_time) -> int:
    """A zip entry's timestamp (naive, taken as UTC) as a Unix epoch."""
    return calendar.timegm(tuple(date_time) + (0, 0, 0))
