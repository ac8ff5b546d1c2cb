"""Search: one pipeline for every search (:mod:`.pipeline`), the statements
it runs (:mod:`.statements`), the one way a condition on assets enters them
(:mod:`.clause`), and the verdict, a pure function of their counts
(:mod:`.verdict`). Imports nothing at package level (the lanes' query
modules import :mod:`.clause`)."""
