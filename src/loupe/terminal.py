"""Text on the owner's terminal: what the CLI prints is escaped first.

Titles, paths, captions, keywords, person names, queries and notices come
from files and from other users. A control character among them (ESC, CR,
BEL: ANSI sequences that move the cursor, clear the screen, set the window
title or hide text), a line or paragraph separator, or an invisible format
character (bidirectional controls, which reorder what follows: UAX #9; zero
width spaces; Hangul fillers) is printed as a Python escape
(``\\x1b``, ``\\u202e``) instead.
:func:`echo` and :class:`SafeConsole` apply it to every line the CLI prints,
and :class:`SafeGroup` to the error messages click prints; :func:`term` also
escapes newlines and tabs, for a single field.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import click
from rich.console import Console

#: Bidirectional formatting characters (Unicode UAX #9: marks, embeddings,
#: overrides, isolates; the Arabic letter mark).
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

#: Characters that show nothing and hide text or spoof a name: the zero width
#: space, word joiner and invisible operators (U+2060–2064), the byte order
#: mark, the Mongolian vowel separator, the Hangul fillers. Format characters
#: that scripts need (joiners for Persian, Indic scripts and emoji; the tag
#: characters of flag emoji; Arabic, Syriac, Kaithi and Egyptian marks) are
#: not among them.
INVISIBLE = frozenset("\u200b\u2060\u2061\u2062\u2063\u2064\ufeff\u180e"
                      "\u115f\u1160\u3164\uffa0")


def _escape(c: str) -> str:
    return c.encode("unicode_escape").decode("ascii")


def unsafe(c: str) -> bool:
    """Whether character ``c`` must not reach a terminal as is: a control
    character (Unicode Cc), a line or paragraph separator (Zl, Zp), a
    bidirectional control (:data:`BIDI`) or an :data:`INVISIBLE` one."""
    return unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in BIDI or c in INVISIBLE


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
    control character, and rich adds its colours after this), and which
    reads neither markup nor emoji codes unless a call asks (``markup=True``):
    a title "[/]" made rich raise MarkupError, "[red]" coloured what followed,
    and a path "x:cross_mark:y.jpg" printed as "x❌y.jpg". A caller
    that asks for markup escapes what it interpolates
    (:func:`rich.markup.escape`). Tables and :class:`rich.text.Text` are not
    strings: their cells are escaped where they are built."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 - rich's name
        super().print(*(term_lines(o) if isinstance(o, str) else o for o in objects), **kwargs)


class SafeGroup(click.Group):
    """A click group whose error messages (:class:`click.ClickException`,
    usage errors included) are escaped (:func:`term_lines`) before click
    prints them: a message often names a file ("…/x\\x1b[2J.jpg: not an
    image"), and click writes it as it is."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            exc.message = term_lines(exc.message)
            raise
