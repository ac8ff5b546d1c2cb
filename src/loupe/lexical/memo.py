"""What a connection's analyzers said about a query, remembered on the client.

A query's terms, its compound parts' terms and which of its words are stop
words are a function of the text and the text-search configuration alone
(``loupe_analyze``, ``ts_debug``): nothing a library stores changes them, only
a migration does (migrations run before a connection is handed out,
:func:`loupe.db.session.connect`). So a search that repeats a query — the
next page, the same query from another user, the web app's refresh — asks
the server once and not again: the search is then the one statement that
ranks and counts (:func:`loupe.search.statements.execute`), one round trip.

Remembered per connection (a connection talks to one database, whose
migrations fix its analyzers), at most :data:`MAX_ENTRIES` answers each,
least recently used first out. The typo check is not remembered: its answer
depends on the lexicon and on who asks (P1).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import psycopg

#: Answers remembered per connection. Callers remember only texts of at most
#: loupe.lexical.search.MAX_QUERY_CHARS characters, so the memory is bounded
#: (a few MiB per connection at most).
MAX_ENTRIES = 4096

T = TypeVar("T")

_memos: "weakref.WeakKeyDictionary[psycopg.Connection, OrderedDict[Hashable, Any]]" = (
    weakref.WeakKeyDictionary())
_lock = threading.Lock()


def remembered(conn: psycopg.Connection, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``'s answer for ``key`` on ``conn``, asked of the server
    only the first time (see the module's docstring for what may be
    remembered). ``key`` must name the statement and every input of it.
    An exception from ``compute`` is raised and nothing is remembered."""
    with _lock:
        memo = _memos.get(conn)
        if memo is not None and key in memo:
            memo.move_to_end(key)
            return memo[key]
    value = compute()
    with _lock:
        memo = _memos.setdefault(conn, OrderedDict())
        memo[key] = value
        while len(memo) > MAX_ENTRIES:
            memo.popitem(last=False)
    return value
