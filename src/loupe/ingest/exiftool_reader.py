"""The ExifTool driver: one long-lived ExifTool process that reads EXIF, IPTC-IIM
and XMP (S6).

ExifTool is the field's reference reader. Loupe keeps one long-lived ExifTool
process in ``-stay_open`` batch mode (through ``pyexiftool``) and reads files
in batches; it never starts one process per file.

File names never reach ExifTool's argument stream unchecked
(:func:`plain_argument`); each call is bounded in time, in bytes of answer and
in memory, and each file's answer is cut to what Loupe holds
(:func:`loupe.ingest.metadata_bounds.hold_bounded`) as soon as it is parsed.
The answer is mapped to Loupe's fields by :mod:`loupe.ingest.metadata`.
"""

from __future__ import annotations

import os
import re
import resource
import select
import shutil
import stat
import tempfile
import threading
import time
import unicodedata
from collections.abc import Iterable
from typing import Any

import exiftool
import exiftool.exiftool as _pyexiftool

from .errors import BadFile
from .metadata_bounds import hold_bounded


#: Characters that may not appear in an argument ExifTool reads from its
#: ``-stay_open`` argument stream (one argument per line): Unicode categories
#: Cc (controls: newline, carriage return, NUL, ...), Cs (lone surrogates:
#: bytes that are not UTF-8, from ``os.fsdecode``), Zl and Zp (line and
#: paragraph separators).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
#: An extension an alias keeps, so that ExifTool's type detection sees the same
#: hint it would see on the original name.
_PLAIN_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}")


def plain_argument(path: str) -> bool:
    """Whether ``path`` can be handed to ExifTool verbatim as one argument.

    ExifTool's ``-stay_open`` mode reads its arguments from a stream, one per
    line (the ``-@ ARGFILE`` rules): a newline in a name ends the argument and
    starts another one (``-if`` evaluates Perl, ``-@`` reads more arguments,
    ``-execute`` runs a command), a carriage return or trailing blank is
    stripped (``a.jpg `` would read ``a.jpg``), a line starting with ``-`` is an
    option and one starting with ``#`` a comment. A path is plain when it is
    absolute (so it starts with ``/``: never an option or a comment), has no
    character of :data:`_UNSAFE_CATEGORIES`, no leading or trailing white
    space, and is valid UTF-8 (ExifTool reads it with ``-charset filename=utf8``).
    Anything else is read through an alias (see :meth:`ExifToolReader.read`).
    """
    if not path.startswith("/") or path != path.strip():
        return False
    return not any(unicodedata.category(ch) in _UNSAFE_CATEGORIES for ch in path)


def display_path(path: str) -> str:
    """``path`` as text that can be stored and shown: bytes that are not UTF-8
    (surrogate escapes of ``os.fsdecode``) become ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


#: Seconds one ExifTool call may take (a batch, or a single file when a batch
#: is retried file by file) before its process is killed and the file fails
#: with a clear reason. Ordinary files take milliseconds; the bound is for
#: hostile ones (a 3,000-deep XMP packet took 37-85 s).
READ_TIMEOUT_S = 30.0

#: Seconds one :meth:`ExifToolReader.read` (one ingest batch: at most
#: ``pipeline.BATCH_SIZE`` files, so an upload request of 200 files is at
#: most 5 of them) may spend in ExifTool in all, retries included. Before
#: a batch that timed out was retried file by file, each
#: call again up to :data:`READ_TIMEOUT_S`: 48 slow files cost (1 + 48) x
#: 30 s, about 25 minutes per upload request. Now each call gets
#: ``min(READ_TIMEOUT_S, what is left of the budget)``, and a file whose
#: turn comes after the budget is spent fails with a reason saying so.
READ_BUDGET_S = 60.0

#: Bytes of ExifTool's answer (its JSON, one call: a batch or one file) Loupe
#: reads before it stops the process: 32 MiB, twice the largest sidecar
#: :mod:`loupe.ingest.xmpcheck` lets through (16 MiB), so a sidecar that
#: passed that check is still read (its long values are then cut by
#: :func:`bound_raw`, which stores at most 64 KiB of a file's JSON). A batch
#: that passes the bound is read again file by file, each with this bound.
#: Measured: a 102 KB JPEG with a zlib MIE trailer made
#: ExifTool print 100 MiB, a 1 MB TIFF whose IFDs all point at one string
#: 909 MB; the answer was read whole.
ANSWER_MAX_BYTES = 32 << 20

#: Address space (bytes) the ExifTool process may map: 1 GiB, set on the
#: child with ``prlimit(2)`` as soon as it starts. ExifTool builds its whole
#: answer in memory before printing it (624-915 MB for the
#: bombs above, about 6 bytes per byte printed); past this bound Perl stops
#: with "Out of memory!" and the file fails, instead of the machine swapping.
#: An idle ExifTool maps about 30 MB; real files need a few MB more.
EXIFTOOL_MAX_ADDRESS_SPACE = 1 << 30


#: The words of the reason of a file stopped at its share of a budget.
_STOPPED_AT_SHARE = "(its share of what was left of "


class _AnswerTooLarge(Exception):
    """ExifTool's answer passed :data:`ANSWER_MAX_BYTES` (internal)."""


class _ExifToolGone(Exception):
    """ExifTool's output ended before its ready marker: the process died
    (internal; for example at :data:`EXIFTOOL_MAX_ADDRESS_SPACE`)."""


#: Output descriptors of Loupe's ExifTool processes -> bytes one answer may
#: have; :func:`_read_answer` reads only these with a cap.
_ANSWER_CAPS: dict[int, int] = {}


def _read_answer(fd: int, b_endswith: bytes, block_size: int) -> bytes:
    """pyexiftool 0.5's ``_read_fd_endswith`` (read ``fd`` until the output
    ends with ``b_endswith``), with two changes: an end of file raises
    :class:`_ExifToolGone` (pyexiftool's loop would spin on it forever), and
    for a descriptor in :data:`_ANSWER_CAPS` more than its cap of bytes
    raises :class:`_AnswerTooLarge` before more is read; it waits with
    ``poll``, which takes any descriptor (``select`` only those under 1024).

    pyexiftool has no hook for the read, so :mod:`loupe.ingest.exiftool_reader`
    installs this in its place (``exiftool.exiftool._read_fd_endswith``, the
    name ``ExifTool.execute`` calls), once, at import."""
    cap = _ANSWER_CAPS.get(fd)
    chunks: list[bytes] = []
    size = 0
    tail = b""
    need = len(b_endswith) + 4
    # poll(2), not select(2): select cannot take a descriptor past 1023, and a
    # server holding many connections hands ExifTool such pipes
    # (1,100 idle connections made every upload fail). Not epoll either: the
    # watchdog dup2()s a directory onto ``fd``, which poll() sees as ready.
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    while not tail.strip().endswith(b_endswith):
        if not poller.poll():
            continue
        chunk = os.read(fd, block_size)
        if not chunk:
            raise _ExifToolGone("ExifTool's output ended before its answer did")
        size += len(chunk)
        if cap is not None and size > cap:
            raise _AnswerTooLarge(size)
        chunks.append(chunk)
        tail = (tail + chunk)[-need:]
    return b"".join(chunks)


_pyexiftool._read_fd_endswith = _read_answer


class _Watchdog:
    """Kill a pyexiftool process that answers a call too slowly.

    pyexiftool 0.5 reads the answer with ``select`` + ``os.read`` until its
    ready marker and has no timeout; after the process dies that loop would
    spin on end-of-file forever. So, when the time is up, the watchdog first
    puts a directory on the descriptor it reads (``dup2``: ``os.read`` of a
    directory raises ``IsADirectoryError``, which ends the call with an
    exception) and then kills the process. Use as a context manager around
    one call; ``fired`` says whether it acted."""

    def __init__(self, et: Any, seconds: float):
        self._et = et
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._lock = threading.Lock()
        self._done = False
        self.fired = False

    def __enter__(self) -> "_Watchdog":
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            proc = getattr(self._et, "_process", None)
            if proc is None:
                return
            try:
                here = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.dup2(here, proc.stdout.fileno())
                finally:
                    os.close(here)
            except OSError:
                pass
            proc.kill()


class ExifToolReader:
    """One long-lived ExifTool process in batch (``-stay_open``) mode.

    Use as a context manager::

        with ExifToolReader() as reader:
            raw = reader.read(["/photos/a.jpg", "/photos/a.jpg.xmp"])

    ``read`` returns ExifTool's JSON (``-G1 -a -n``) per path; a path ExifTool
    could not read at all maps to ``{"ExifTool:Error": reason}``.

    File and folder names are untrusted (anyone who can put a file in an
    ingested folder, or upload one, names it): no name ever reaches ExifTool's
    argument stream. A path that is not :func:`plain_argument` is read through
    an alias, a symbolic link with a plain name (``<n>.<ext>``) in a private
    temporary folder (mode 0700, removed by :meth:`close`); its output is
    mapped back to the real path. Only regular files are handed over.

    Raises:
        RuntimeError: ExifTool is not installed (message says how to install it).
    """

    # -struct: structures (MWG and Microsoft regions) as JSON objects, so a
    # region's name, type and area stay together (flattened lists lose the
    # pairing when one region lacks a field).
    COMMON_ARGS = ["-G1", "-a", "-n", "-struct", "-charset", "filename=utf8", "-api", "LargeFileSupport=1"]

    def __init__(self, executable: str | None = None, timeout_s: float | None = None,
                 budget_s: float | None = None, budget_name: str = "upload"):
        """``timeout_s``: one call's bound (default :data:`READ_TIMEOUT_S`).
        ``budget_s``: seconds of ExifTool for every :meth:`read` of this
        reader together, counted from its first read (None: no such budget,
        only :data:`READ_BUDGET_S` per read); one upload request uses one
        reader, so its batches share one budget. Files
        whose turn comes after it is spent fail with a reason naming
        ``budget_name`` and the budget."""
        self._executable = executable
        self._timeout_s = timeout_s
        self._budget_s = budget_s
        self._budget_name = budget_name
        self._budget_deadline: float | None = None
        self._et: exiftool.ExifToolHelper | None = None
        self._alias_dir: str | None = None
        self._aliases = 0

    def __enter__(self) -> "ExifToolReader":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the ExifTool process (idempotent)."""
        if self._et is not None and self._et.running:
            return
        # utf-8 explicitly: the locale's encoding (ASCII under LANG=C) would fail
        # on the first non-ASCII name, and -charset filename=utf8 says utf-8.
        kwargs: dict[str, Any] = {"common_args": self.COMMON_ARGS, "check_execute": False,
                                  "encoding": "utf-8"}
        if self._executable:
            kwargs["executable"] = self._executable
        try:
            self._et = exiftool.ExifToolHelper(**kwargs)
            self._et.run()
        except FileNotFoundError as exc:
            raise RuntimeError(
                "ExifTool is not installed: install it with "
                "'apt-get install libimage-exiftool-perl' (Debian/Ubuntu)"
            ) from exc
        proc = getattr(self._et, "_process", None)
        if proc is not None and hasattr(resource, "prlimit"):
            try:    # bounds the child only (Linux prlimit(2)); Loupe's own stay as they are
                resource.prlimit(proc.pid, resource.RLIMIT_AS,
                                 (EXIFTOOL_MAX_ADDRESS_SPACE, EXIFTOOL_MAX_ADDRESS_SPACE))
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        """Stop the ExifTool process and remove the alias folder."""
        self._stop()
        if self._alias_dir is not None:
            shutil.rmtree(self._alias_dir, ignore_errors=True)
            self._alias_dir = None
            self._aliases = 0

    def _stop(self) -> None:
        if self._et is not None:
            try:
                self._et.terminate()
            except Exception:
                pass
            self._et = None

    def _abandon(self) -> None:
        """Forget a process the watchdog killed (its pipes are closed here;
        the next call starts a fresh one)."""
        et, self._et = self._et, None
        if et is None:
            return
        proc = getattr(et, "_process", None)
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    pipe.close()
                except Exception:
                    pass
            try:
                proc.wait(timeout=5)
            except Exception:
                pass
        flag = getattr(et, "_flag_running_false", None)
        if flag is not None:
            flag()      # so pyexiftool does not try to stop it again

    def _alias(self, path: str, target: str | None = None) -> str:
        """A plain name for ``path``: a symbolic link in the private alias
        folder, to ``path`` itself or to ``target`` (``/proc/PID/fd/N``: the
        file the caller holds open), keeping a plain extension."""
        if self._alias_dir is None:
            self._alias_dir = tempfile.mkdtemp(prefix="loupe-exiftool-")  # mode 0700
        self._aliases += 1
        ext = os.path.splitext(path)[1]
        name = f"{self._aliases}{ext if _PLAIN_EXTENSION.fullmatch(ext) else ''}"
        alias = os.path.join(self._alias_dir, name)
        os.symlink(os.fsencode(target or path), alias)
        return alias

    @property
    def version(self) -> str:
        self.start()
        assert self._et is not None
        return str(self._et.version)

    def read(self, paths: Iterable[str],
             fds: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
        """Read metadata of ``paths`` in one ExifTool call; falls back to one call per
        path if the batch fails, so one hostile file cannot hide the others.

        Returns ``{path: ExifTool JSON}`` keyed by the paths as given. A path
        that is not a regular file maps to an ``ExifTool:Error``; one that is
        not :func:`plain_argument` is read through an alias, and its
        ``SourceFile``, ``System:FileName`` and ``System:Directory`` are
        reported for the real path (:func:`display_path`).

        ``fds``: descriptors the caller holds open, by path. Such a path is
        read through an alias to ``/proc/PID/fd/N``: ExifTool reads the very
        file the caller hashes and decodes, whatever the path names by then
        (a swap and swap back between the reads). Without ``/proc``
        (not Linux) they are read by path.
        """
        paths = list(paths)
        if not paths:
            return {}
        # without /proc (not Linux) the paths are read by name, as before
        fds = fds if fds and os.path.isdir(f"/proc/{os.getpid()}/fd") else {}
        out: dict[str, dict[str, Any]] = {}
        args: dict[str, str] = {}           # argument handed to ExifTool -> path as given
        for p in paths:
            full = os.path.abspath(p)
            if p in fds:
                try:
                    if not stat.S_ISREG(os.fstat(fds[p]).st_mode):
                        out[p] = {"ExifTool:Error": "not a regular file"}
                        continue
                    args[self._alias(full, f"/proc/{os.getpid()}/fd/{fds[p]}")] = p
                except OSError as exc:
                    out[p] = {"ExifTool:Error": f"cannot read this file safely: {exc.strerror}"}
                continue
            try:
                mode = os.stat(full).st_mode
            except OSError as exc:
                out[p] = {"ExifTool:Error": f"cannot open the file: {exc.strerror}"}
                continue
            if not stat.S_ISREG(mode):
                out[p] = {"ExifTool:Error": "not a regular file"}
                continue
            if plain_argument(full):
                args[full] = p
            else:
                try:
                    args[self._alias(full)] = p
                except OSError as exc:
                    out[p] = {"ExifTool:Error": f"cannot read this file name safely: "
                                                f"{exc.strerror}"}
        now = time.monotonic()
        deadline = (now + READ_BUDGET_S, f"this batch's time budget ({READ_BUDGET_S:g} s, "
                                         f"Loupe's bound) on other files of the same batch; "
                                         f"ingest it again", "the batch's time budget")
        if self._budget_s is not None:
            if self._budget_deadline is None:
                self._budget_deadline = now + self._budget_s
            if self._budget_deadline < deadline[0]:
                name = self._budget_name
                deadline = (self._budget_deadline,
                            f"this {name}'s time budget ({self._budget_s:g} s, Loupe's bound) "
                            f"on other files of the same {name}; {name} it again",
                            f"the {name}'s time budget")
        try:
            results = self._run(list(args), deadline)
        finally:
            for arg, p in args.items():
                if arg != os.path.abspath(p):
                    try:
                        os.unlink(arg)
                    except OSError:
                        pass
        for arg, raw in results.items():
            p = args[arg]
            real = os.path.abspath(p)
            if arg != real and "ExifTool:Error" not in raw:
                raw["SourceFile"] = display_path(p)
                if "System:FileName" in raw:
                    raw["System:FileName"] = display_path(os.path.basename(real))
                if "System:Directory" in raw:
                    raw["System:Directory"] = display_path(os.path.dirname(real))
            out[p] = raw
        return out

    def _run(self, args: list[str], deadline: tuple[float, str, str],
             share: float | None = None) -> dict[str, dict[str, Any]]:
        """ExifTool's JSON for each of ``args`` (plain arguments only: anything
        else is refused here, whatever the caller did), all of it before
        ``deadline`` (``(time.monotonic() value, what a file past it was
        refused for, the budget's name)``: the batch's :data:`READ_BUDGET_S`
        or the reader's own budget, whichever ends first). One call
        is bounded by ``min(READ_TIMEOUT_S, time left)`` and by
        :data:`ANSWER_MAX_BYTES` of answer (and by ``share`` seconds when
        given); a batch that passes either, or fails, is read again file by
        file with what is left: first each file with its share of it (what
        is left over the files not yet read), then the files that ran past
        their share, one by one, with what is left then. One slow file thus
        costs its neighbours nothing but its share (one slow
        file must not spend the whole budget and fail every file after it)."""
        refused = {a: {"ExifTool:Error": "not handed to ExifTool: not a plain argument"}
                   for a in args if not plain_argument(a)}
        args = [a for a in args if a not in refused]
        if not args:
            return refused
        per_call = self._timeout_s if self._timeout_s is not None else READ_TIMEOUT_S
        left = deadline[0] - time.monotonic()
        if left <= 0:
            why = BUDGET_SPENT + deadline[1]
            return {**refused, **{a: {"ExifTool:Error": why} for a in args}}
        limit = min(per_call, left, share if share is not None else per_call)
        self.start()
        assert self._et is not None
        watchdog = _Watchdog(self._et, limit)
        fd = self._et._process.stdout.fileno()
        _ANSWER_CAPS[fd] = ANSWER_MAX_BYTES
        try:
            with watchdog:
                rows = self._et.get_metadata(args)
            if watchdog.fired:      # it fired as the answer came: that process is gone
                self._abandon()
        except Exception as exc:
            if watchdog.fired or isinstance(exc, (_AnswerTooLarge, _ExifToolGone)):
                if isinstance(exc, _AnswerTooLarge) and not watchdog.fired:
                    self._et._process.kill()
                self._abandon()
            if len(args) == 1:
                self._stop()
                if watchdog.fired:
                    bound = ("the bound per call" if limit >= per_call
                             else f"its share of what was left of {deadline[2]}"
                             if share is not None and limit >= share
                             else f"what was left of {deadline[2]}")
                    why = (f"ExifTool took more than {limit:.3g} s to read this file ({bound}): "
                           f"stopped")
                elif isinstance(exc, _AnswerTooLarge):
                    why = (f"ExifTool's answer for this file passed {ANSWER_MAX_BYTES:,} bytes "
                           f"(Loupe's bound on what ExifTool may print for one file, for "
                           f"example inflated or repeated metadata): stopped")
                elif isinstance(exc, _ExifToolGone):
                    why = (f"ExifTool stopped while reading this file (for example past its "
                           f"memory bound of {EXIFTOOL_MAX_ADDRESS_SPACE:,} bytes)")
                else:
                    why = "ExifTool could not read this file"
                return {**refused, args[0]: {"ExifTool:Error": why}}
            out: dict[str, dict[str, Any]] = dict(refused)
            slow: list[str] = []
            for i, a in enumerate(args):
                left = deadline[0] - time.monotonic()
                out.update(self._run([a], deadline, share=max(left, 0) / (len(args) - i)))
                if _STOPPED_AT_SHARE in str(out[a].get("ExifTool:Error", "")):
                    slow.append(a)
            for a in slow:      # what is left, one by one (a file stopped at its share keeps that reason)
                if deadline[0] - time.monotonic() > 0:
                    out.update(self._run([a], deadline))
            return out
        finally:
            _ANSWER_CAPS.pop(fd, None)
        # each file's answer cut to what Loupe holds before the next call
        # (bounded memory): a batch holds at most BATCH_SIZE x HOLD_FILE_CHARS
        out = {}
        while rows:
            r = rows.pop(0)
            out[str(r.get("SourceFile"))] = hold_bounded(r)
            del r
        for a in args:
            out.setdefault(a, {"ExifTool:Error": "ExifTool returned no metadata for this file"})
        return {**refused, **{a: out[a] for a in args}}


def check_readable(path: str, raw: dict[str, Any]) -> None:
    """Raise :class:`BadFile` (kind ``metadata``) for image ``path`` when ExifTool
    could not read its metadata at all (an ``Error`` in its output)."""
    err = raw.get("ExifTool:Error")
    if err:
        raise BadFile(path, "metadata", f"ExifTool could not read the metadata: {err}")


#: How the error of a file that ExifTool never read, because its batch's or
#: reader's time budget was spent, begins (see :meth:`ExifToolReader._run`).
BUDGET_SPENT = "not read: ExifTool spent "


def check_budget(path: str, raw: dict[str, Any]) -> None:
    """Raise :class:`BadFile` (kind ``metadata``) for image ``path`` when its
    metadata was not read because a time budget was spent: such a file fails
    before anything decodes it. Other ExifTool errors are
    left to :func:`check_readable`, after the image checks name what is wrong."""
    err = raw.get("ExifTool:Error")
    if isinstance(err, str) and err.startswith(BUDGET_SPENT):
        raise BadFile(path, "metadata", f"ExifTool could not read the metadata: {err}")
