"""Bounds of the lexical lane's settings (``loupe settings``, S7).

Every setting is checked against what the statements can hold and what is
sensible before it is stored, and again when a search reads it (a value
stored by an older Loupe, or by hand, is reported, never a traceback).

Bounds and where they come from:

* ``raw_cap`` (postings read per query term) in [1, 1,000,000]: the lexical
  statement walks up to ``raw_cap * 10`` postings as a PostgreSQL ``integer``
  (so at most 214,748,364 would even compute); beyond a million postings per
  term the lane reads more than any library Loupe targets holds per term.
* ``keep_cap`` (assets kept by the lane) in [1, 1,000,000]: it is a LIMIT; a
  larger list is never paged through.
* ``k1`` in (0, 100]: BM25 saturation (Robertson & Zaragoza 2009 use 1.2–2.0);
  it must be a finite positive float8.
* ``weights``: 5 finite values in [0, 100] (title, keywords, description,
  other, machine: the fifth group holds the machine words from the pixels,
  migration 0019), at least one positive (all zero would score every match
  0). :meth:`loupe.Library.set_lexical_settings` also takes 4 values and
  keeps the machine group's.
* ``b``: 5 values in [0, 1] (length normalisation is a proportion).
* ``vocab_decay`` in (0, 1] (a weight factor per step up a vocabulary).
"""

from __future__ import annotations

import math
from typing import Any
from .. import queries as q

#: Most postings read per query term (see the module docstring).
RAW_CAP_MAX = 1_000_000
#: Most assets the lexical lane keeps.
KEEP_CAP_MAX = 1_000_000
#: Largest k1 and field-group weight accepted.
K1_MAX = 100.0
WEIGHT_MAX = 100.0
GROUPS = ("title", "keywords", "description", "other", "machine")


class SettingError(ValueError):
    """A setting's value is out of its bound; the message names the setting,
    the value and the bound."""


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingError(f"{name} must be a number, not {value!r}")
    if not math.isfinite(value):
        raise SettingError(f"{name} must be a finite number, not {value!r}")
    return float(value)


def _cap(name: str, value: Any, top: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingError(f"{name} must be a whole number, not {value!r}")
    if not 1 <= value <= top:
        raise SettingError(f"{name} = {value:,} is out of range: it must be within "
                           f"1 and {top:,}")


def _four(name: str, values: Any) -> list[float]:
    if not isinstance(values, (list, tuple)) or len(values) != len(GROUPS):
        raise SettingError(f"{name} needs {len(GROUPS)} values ({', '.join(GROUPS)}; or 4, "
                           f"the machine group's kept), not {values!r}")
    return [_number(f"{name}[{g}]", v) for g, v in zip(GROUPS, values)]


def validate(settings: dict[str, Any]) -> None:
    """Check every lexical setting (keys ``k1``, ``weights``, ``b``,
    ``vocab_decay``, ``raw_cap``, ``keep_cap``) against its bound.

    Raises:
        SettingError: the first value out of range, named with its bound.
    """
    k1 = _number("k1", settings["k1"])
    if not 0 < k1 <= K1_MAX:
        raise SettingError(f"k1 = {k1:g} is out of range: it must be > 0 and <= {K1_MAX:g}")
    weights = _four("weights", settings["weights"])
    for g, w in zip(GROUPS, weights):
        if not 0 <= w <= WEIGHT_MAX:
            raise SettingError(f"weights[{g}] = {w:g} is out of range: it must be within "
                               f"0 and {WEIGHT_MAX:g}")
    if not any(w > 0 for w in weights):
        raise SettingError("weights are all 0: at least one field group must weigh > 0")
    for g, b in zip(GROUPS, _four("b", settings["b"])):
        if not 0 <= b <= 1:
            raise SettingError(f"b[{g}] = {b:g} is out of range: it must be within 0 and 1")
    decay = _number("vocab_decay", settings["vocab_decay"])
    if not 0 < decay <= 1:
        raise SettingError(f"vocab_decay = {decay:g} is out of range: it must be > 0 "
                           f"and <= 1")
    _cap("raw_cap", settings["raw_cap"], RAW_CAP_MAX)
    _cap("keep_cap", settings["keep_cap"], KEEP_CAP_MAX)


def check_stored(settings: dict[str, Any]) -> None:
    """:func:`validate` for settings read from the database: the error says
    that the stored value is bad and how to fix it.

    Raises:
        SettingError: a stored value is out of range.
    """
    try:
        validate(settings)
    except SettingError as exc:
        raise SettingError(f"this library's lexical settings are invalid: {exc}; fix them "
                           f"with 'loupe settings' (see 'loupe settings --help')") from None


#: Settings read from the environment: name -> (default, low, high, what it sets).
#: ``hnsw.ef_search``: pgvector accepts 1..1000. The query-vector cache: 0
#: (off) up to a million entries (about 1.5 GB of 384-d vectors at most).
ENV_SETTINGS = {
    "LOUPE_HNSW_EF_SEARCH": (400, 1, 1000, "HNSW candidates per vector-lane scan"),
    "LOUPE_QUERY_VECTOR_CACHE": (2048, 0, 1_000_000, "query vectors kept per process"),
}


def env_setting(name: str, *, strict: bool = True) -> int:
    """An integer setting from the environment (see :data:`ENV_SETTINGS`), or
    its default when unset. With ``strict`` false (at import time) a bad
    value reads as the default; :meth:`loupe.Library.open` checks strictly.

    Raises:
        SettingError: the value is not a whole number or is out of its range.
    """
    import os

    default, low, high, what = ENV_SETTINGS[name]
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        if not strict:
            return default
        raise SettingError(f"{name}={text!r} ({what}) must be a whole number within "
                           f"{low:,} and {high:,}") from None
    if not low <= value <= high:
        if not strict:
            return default
        raise SettingError(f"{name}={value:,} ({what}) is out of range: it must be within "
                           f"{low:,} and {high:,}")
    return value


#: The lexical settings' names, in the order of ``LEXICAL_SETTINGS``'s columns.
SETTING_NAMES = ("k1", "weights", "b", "vocab_decay", "raw_cap", "keep_cap")
#: The settings whose change rebuilds the lexical index (statistics, impacts).
REINDEXING = ("k1", "weights", "b", "vocab_decay")


def read(conn, tenant_id: int) -> dict:
    """The tenant's lexical settings: k1, field-group weights and b (title,
    keywords, description, other, machine), vocabulary decay, raw and keep caps."""
    row = conn.execute(q.LEXICAL_SETTINGS, {"tenant_id": tenant_id}).fetchone()
    return dict(zip(SETTING_NAMES, row))


def change(conn, tenant_id: int, langs: list[str], **changes) -> dict:
    """Store ``changes`` (keys as :func:`read` returns) after :func:`validate`;
    a change of k1, weights, b or vocab_decay rebuilds the lexical index of
    each of ``langs`` in the same transaction. Returns the settings.

    Raises:
        ValueError: an unknown key. SettingError: a value out of its range
            (the message names the setting and its bound).
    """
    current = read(conn, tenant_id)
    unknown = set(changes) - set(current)
    if unknown:
        raise ValueError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    for key in ("weights", "b"):  # 4 values: the machine group (0019) keeps its own
        if isinstance(changes.get(key), (list, tuple)):
            if len(changes[key]) == 4:
                changes[key] = [*changes[key], current[key][4]]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   for v in changes[key]):  # float8[]: 3 and 0.5 alike
                changes[key] = [float(v) for v in changes[key]]
    new = {**current, **changes}
    validate(new)
    reindex = any(new[k] != current[k] for k in REINDEXING)
    with conn.transaction():
        conn.execute(q.SET_LEXICAL_SETTINGS, {**new, "tenant_id": tenant_id})
        if reindex:
            for lang in langs:
                conn.execute(q.REINDEX_LEXICAL, {"tenant_id": tenant_id, "lang": lang})
    return read(conn, tenant_id)
