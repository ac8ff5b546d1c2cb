"""Text on the owner's terminal: what the CLI prints is escaped first.

Titles, paths, captions, keywords, person names, queries and notices come
from files and from other users. A control character among them (ESC, CR,
BEL: ANSI sequences that move the cursor, clear the screen, set the window
title or hide text), a line or paragraph separator, or a bidirectional
control (which reorders what follows: UAX #9) is printed as a Python escape
(``\\x1b``, ``\\u202e``) instead (attack runs 11 and 12, A11-3, A12-3).
:func:`echo` and :class:`SafeConsole` apply it to every line the CLI prints;
:func:`term` also escapes newlines and tabs, for a single field.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import click
from rich.console import Console

#: Bidirectional formatting characters (Unicode UAX #9: marks, embeddings,
#: overrides, isolates).
BIDI = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escape(c: str) -> str:
    return c.encode("unicode_escape").decode("ascii")


def unsafe(c: str) -> bool:
    """Whether character ``c`` must not reach a terminal as is: a control
    character (Unicode Cc), a line or paragraph separator (Zl, Zp) or a
    bidirectional control (:data:`BIDI`)."""
    return unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in BIDI


def term(text: object) -> str:
    """``text`` as one field safe to print: every :func:`unsafe` character
    (newline and tab included) written as an escape; other text (accents,
    no-break spaces, joiners) as is. ``None`` gives ''."""
    s = "" if text is None else str(text)
    if s.isprintable():
        return s
    return "".join(_escape(c) if unsafe(c) else c for c in s)


def term_lines(text: object) -> str:
    """``text`` as lines safe to print: as :func:`term`, but newlines and
    tabs (the CLI's own line and column separators) are kept."""
    s = "" if text is None else str(text)
    if s.isprintable():
        return s
    return "".join(c if c in "\n\t" or not unsafe(c) else _escape(c) for c in s)


def echo(message: object = "", **kwargs: Any) -> None:
    """:func:`click.echo` of :func:`term_lines` of ``message``."""
    click.echo(term_lines(message), **kwargs)


class SafeConsole(Console):
    """A rich :class:`~rich.console.Console` whose :meth:`print` escapes the
    strings it is given (:func:`term_lines`; the CLI's own strings hold no
    control character, and rich adds its colours after this) and reads no
    markup unless told ``markup=True``: a title "[/]" made rich raise
    MarkupError, and "[red]" coloured what followed. A caller that asks for
    markup escapes what it interpolates (:func:`rich.markup.escape`).
    Tables and :class:`rich.text.Text` are not strings: their cells are
    escaped where they are built."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 - rich's name
        kwargs.setdefault("markup", False)
        super().print(*(term_lines(o) if isinstance(o, str) else o for o in objects), **kwargs)
