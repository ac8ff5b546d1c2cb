"""Filters (X4/C4/C5): a tree of AND / OR / NOT over typed
predicates, compiled into clauses of the one search statement.

* :mod:`.tree` — the JSON contract, parsing and validation (:func:`parse`);
* :mod:`.dates` — "2019", "last month" → half-open UTC ranges;
* :mod:`.compile` — the pure compiler (tree → SQL test over ``asset a``,
  a driver for enumeration, bound parameters);
* :mod:`.queries` — the named SQL;
* :mod:`.search` — resolving collections, browsing a filtered set;
* :mod:`.facets` — top values per facet of a result.
"""

from .compile import Compiled, Context, compile_tree
from .dates import date_range
from .tree import All, Any_, FilterError, Node, Not, Pred, all_of, parse

__all__ = ["All", "Any_", "Compiled", "Context", "FilterError", "Node", "Not", "Pred",
           "all_of", "compile_tree", "date_range", "parse"]
