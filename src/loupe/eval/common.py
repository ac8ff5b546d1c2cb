"""Names every module of the instrument shares: the systems a run can use,
the leak check's margin, the pool depth and :class:`EvalError`. Imports
nothing from Loupe; :mod:`.instrument` re-exports them."""

#: Systems a run can use: the production hybrid search, its lexical lane
#: alone, its text lane alone, the index variants of an image-text model
#: (V7, E4), and the reference peer (BM25 + dense
#: RRF, :mod:`loupe.eval.peer`).
SYSTEMS = ("hybrid", "lexical", "text", "image", "caption", "both", "peer")
VARIANTS = ("image", "caption", "both")
#: Default margin of the leak check (E5): recall@10 points by which
#: caption-derived queries may beat blind ones on the image variant.
LEAK_MARGIN = 0.05
#: Pool depth (E7: the top 10 of every system).
POOL_DEPTH = 10


class EvalError(ValueError):
    """Bad input to the instrument (unknown set, run, pool, system, model)."""
