"""The error a single bad file raises during ingest."""

from __future__ import annotations


class BadFile(Exception):
    """One file that cannot be ingested, with the reason (N3).

    Attributes:
        path: the file's path as walked.
        kind: one of ``empty``, ``not_image``, ``unsupported``, ``corrupt``,
            ``truncated``, ``too_large``, ``metadata``, ``io``, ``name`` (a
            file name Loupe cannot store: not valid UTF-8), ``not_regular``
            (a symbolic link, FIFO, socket or device under an image name: never
            followed or read), ``too_many_words`` (an ingest with a bound on
            distinct words, as uploads have).
        reason: a sentence for a person, naming what is wrong.
    """

    KINDS = ("empty", "not_image", "unsupported", "corrupt", "truncated", "too_large",
             "metadata", "io", "name", "not_regular", "too_many_words")

    def __init__(self, path: str, kind: str, reason: str):
        assert kind in self.KINDS, kind
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.kind = kind
        self.reason = reason
