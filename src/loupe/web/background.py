"""Work that happens by itself: what an ingest or an upload leaves to do —
perceptual hashes, machine words, people from the names written in files,
the vectors of the active lanes — done by
the server in one background thread, so that nobody has to run ``loupe
hash``, ``loupe enrich`` or ``loupe embed`` by hand for pictures uploaded
through the web app. Each pass runs the same resumable stage functions as
those commands (what is done stays done), on a Library of its own outside
the request pool, then sleeps ``every_s`` seconds or until an upload wakes
it (:meth:`BackgroundWork.kick`). The status page shows what it is doing
and what still waits (:meth:`BackgroundWork.state`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..library import Library

#: The passes, in order: hashes and machine words first (cheap, and the
#: text lane embeds the machine words), names written in files as people
#: (:func:`loupe.faces.regions.faces_from_regions`, no detector needed; at
#: the first pass and after an upload), then vectors.
TASKS = ("hashes", "machine words", "names from files", "vectors")


class BackgroundWork:
    """One thread that drains the tenant's pending work.

    Args:
        opener: opens an owner's Library of the tenant (closed after each pass).
        every_s: seconds between passes when nothing wakes it.
    """

    def __init__(self, opener: Callable[[], Library], every_s: float):
        self.opener = opener
        self.every_s = every_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._regions_due = True
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._state: dict[str, Any] = {"task": None, "done": 0, "total": 0, "passes": 0,
                                       "last_pass_at": None, "last_error": None, "last": {}}

    def start(self) -> None:
        """Start the thread (a daemon: it never keeps the process alive)."""
        self._thread = threading.Thread(target=self._loop, name="loupe-background", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask the thread to stop after its current batch and wait for it."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def kick(self) -> None:
        """Run a pass now (after an upload) rather than at the next tick,
        reading the names written in files too."""
        self._regions_due = True
        self._wake.set()

    def state(self) -> dict[str, Any]:
        """``{"task", "done", "total", "passes", "last_pass_at", "last_error",
        "last"}``: the pass now running (``task`` one of :data:`TASKS`, None
        when idle, with ``done`` of ``total`` items), passes finished, when
        the last one ended (Unix time), its error if one failed, and
        ``last``: what each task of the last pass did, in words."""
        with self._lock:
            return {**self._state, "last": dict(self._state["last"])}

    def _set(self, **changes: Any) -> None:
        with self._lock:
            self._state.update(changes)

    def _progress(self, task: str, total: int | None = None) -> Callable[..., None]:
        """A progress callback of the stage functions (``(done, total)``, or
        ``(done,)`` of the vectors, whose total is the waiting count)."""
        def report(done: int, of: int | None = None, *_: Any) -> None:
            self._set(task=task, done=done, total=of if of is not None else total or 0)
            if self._stop.is_set():
                raise _Stopped()
        return report

    def run_pass(self) -> dict[str, str]:
        """One pass over :data:`TASKS` (what the thread runs each time);
        returns what each did, in words (also kept in :meth:`state`).

        Raises: what the stage functions raise (the thread records it in
        ``last_error`` and tries again at the next pass)."""
        did: dict[str, str] = {}
        with self.opener() as lib:
            self._set(task="hashes", done=0, total=0)
            h = lib.hash(progress=self._progress("hashes"))
            did["hashes"] = f"{h['hashed']:,} hashed, {h['failed']:,} failed"
            self._set(task="machine words", done=0, total=0)
            m = lib.enrich(progress=self._progress("machine words"))
            did["machine words"] = f"{m['computed']:,} computed, {m['skipped']:,} skipped"
            # (reading every file's regions is a scan of the tenant's files:
            # at the first pass and after an upload, not at every tick)
            if self._regions_due:
                self._regions_due = False
                self._set(task="names from files", done=0, total=0)
                r = lib.file_names_to_people()
                did["names from files"] = f"{r['faces']:,} faces, {r['people']:,} new people"
            waiting = sum(lib.vectors_waiting().values())
            if waiting:
                self._set(task="vectors", done=0, total=waiting)
                out = lib.embed(progress=self._progress("vectors", waiting))
                did["vectors"] = ", ".join(f"{s.lane} lane: {s.written:,} computed"
                                           for s in out) or "no active lane"
            else:
                did["vectors"] = "none waiting"
        return did

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                did = self.run_pass()
                self._set(last=did, last_error=None)
            except _Stopped:
                break
            except Exception as exc:  # noqa: BLE001 - any failure: said on the status page, retried
                self._set(last_error=f"{type(exc).__name__}: {exc}".splitlines()[0][:500])
            with self._lock:
                self._state.update(task=None, done=0, total=0, last_pass_at=time.time())
                self._state["passes"] += 1
            self._wake.wait(self.every_s)
            self._wake.clear()


def in_words(state: dict[str, Any] | None, now: float | None = None) -> str:
    """:meth:`BackgroundWork.state` as the status page says it:
    "Computing vectors: 12 of 40.", or "Waiting for work; the last pass
    ended 4 s ago (hashes: 0 hashed, 0 failed; …)."; None: the server
    leaves the work to the commands."""
    if state is None:
        return ("The server does not compute hashes, machine words or vectors by itself "
                "(started with --background-every-s 0): run 'loupe hash', 'loupe enrich' "
                "and 'loupe embed'.")
    if state["task"]:
        of = f": {state['done']:,} of {state['total']:,}" if state["total"] else ""
        return f"Computing {state['task']}{of}."
    if state["last_pass_at"] is None:
        return "Starting its first pass over what waits."
    ago = max(0, round((now or time.time()) - state["last_pass_at"]))
    did = "; ".join(f"{k}: {v}" for k, v in state["last"].items())
    err = f" The last pass failed: {state['last_error']}." if state["last_error"] else ""
    return f"Waiting for work; the last pass ended {ago:,} s ago ({did}).{err}"


class _Stopped(Exception):
    """The server is stopping: leave the pass between two batches."""
