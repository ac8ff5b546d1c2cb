"""Fusion: the lexical lane and the vector lanes in one statement, combined
by reciprocal rank fusion (:mod:`.search`, SQL only), its settings
(:mod:`.settings`), and the fused statement run on its own (:mod:`.run`).
Imports nothing at package level; see README.md for what it may import."""
