"""Reading EXIF, IPTC-IIM and XMP with ExifTool, and normalising them (SPEC S6).

ExifTool is the field's reference reader. Loupe keeps one long-lived ExifTool
process in ``-stay_open`` batch mode (through ``pyexiftool``) and reads files
in batches; it never starts one process per file.

The normalised form of one file's metadata is a plain dict::

    {
      "title":       {"x-default": "Cheetah", "fr": "Guépard"},   # lang-alt
      "description": {"x-default": "..."},                         # lang-alt
      "copyright":   {"x-default": "..."},                         # lang-alt
      "keywords":    ["cheetah", "animals"],
      "creator":     ["Jane Doe"],
      "licence":     "https://creativecommons.org/licenses/by/4.0/",
      "location":    ["Lisbon", "Portugal"],
      "date_taken":  "2024:05:01 18:30:00",
      "orientation": 6,
      "people":      ["Jane Doe"],            # names a person wrote (see below)
      "regions":     [{"name": "Jane Doe", "x": 0.15, "y": 0.3, "w": 0.2, "h": 0.4,
                       "source": "mwg"}],     # named face regions, top-left, 0..1
    }

``people`` holds the names of the people in the picture as a person wrote
them (SPEC X2: only names a person gave are searchable): XMP MWG face
regions (``mwg-rs:Regions`` of ``Type=Face``), IPTC Extension
``PersonInImage`` (and ``PersonInImageWDetails/PersonName``), Microsoft
Photo regions (``MP:RegionInfoMP`` ``PersonDisplayName``), digiKam
``TagsList`` and Lightroom ``HierarchicalSubject`` paths under ``People``.
``regions`` keeps the named areas of the MWG and Microsoft regions, so that
a detected face can later be linked to the name written over it.

Absent fields are absent keys. When an XMP sidecar exists its fields take
precedence, field by field, over the embedded ones (the sidecar is where DAMs
and raw developers write edits); fields the sidecar does not carry fall back
to the embedded metadata.
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

# Tags per normalised field, in order of precedence (ExifTool -G1 group names).
# Within one file the first tag present wins, so XMP beats IPTC-IIM beats EXIF,
# the order recommended by the Metadata Working Group guidelines.
LANG_ALT_FIELDS: dict[str, tuple[str, ...]] = {
    "title": ("XMP-dc:Title", "IPTC:ObjectName", "XMP-photoshop:Headline", "IPTC:Headline",
              "IFD0:XPTitle"),
    "description": ("XMP-dc:Description", "IPTC:Caption-Abstract", "IFD0:ImageDescription",
                    "IFD0:XPComment", "XMP-exif:UserComment", "ExifIFD:UserComment"),
    "copyright": ("XMP-dc:Rights", "IPTC:CopyrightNotice", "IFD0:Copyright"),
}
LIST_FIELDS: dict[str, tuple[str, ...]] = {
    "keywords": ("XMP-dc:Subject", "IPTC:Keywords", "XMP-lr:HierarchicalSubject",
                 "IFD0:XPKeywords", "XMP-pdf:Keywords"),
    "creator": ("XMP-dc:Creator", "IPTC:By-line", "IFD0:Artist", "IFD0:XPAuthor"),
}
TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "licence": ("XMP-xmpRights:WebStatement", "XMP-cc:License", "XMP-xmpRights:UsageTerms"),
    "date_taken": ("ExifIFD:DateTimeOriginal", "XMP-exif:DateTimeOriginal",
                   "XMP-photoshop:DateCreated", "IPTC:DateCreated", "ExifIFD:CreateDate"),
}
# Location parts, most specific first; all present parts are kept.
LOCATION_TAGS: tuple[tuple[str, ...], ...] = (
    ("XMP-iptcCore:Location", "IPTC:Sub-location"),
    ("XMP-photoshop:City", "IPTC:City"),
    ("XMP-photoshop:State", "IPTC:Province-State"),
    ("XMP-photoshop:Country", "IPTC:Country-PrimaryLocationName"),
)
ORIENTATION_TAGS = ("IFD0:Orientation", "XMP-tiff:Orientation")


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
#: hostile ones (attack run 3, F13: a 3,000-deep XMP packet took 37-85 s).
READ_TIMEOUT_S = 30.0

#: Seconds one :meth:`ExifToolReader.read` (one ingest batch: at most
#: ``pipeline.BATCH_SIZE`` files, so an upload request of 200 files is at
#: most 5 of them) may spend in ExifTool in all, retries included. Before
#: (attack run 5, B2) a batch that timed out was retried file by file, each
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
#: Attack run 5 (B1, B3): a 102 KB JPEG with a zlib MIE trailer made
#: ExifTool print 100 MiB, a 1 MB TIFF whose IFDs all point at one string
#: 909 MB; the answer was read whole.
ANSWER_MAX_BYTES = 32 << 20

#: Address space (bytes) the ExifTool process may map: 1 GiB, set on the
#: child with ``prlimit(2)`` as soon as it starts. ExifTool builds its whole
#: answer in memory before printing it (attack run 5: 624-915 MB for the
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

    pyexiftool has no hook for the read, so :mod:`loupe.ingest.metadata`
    installs this in its place (``exiftool.exiftool._read_fd_endswith``, the
    name ``ExifTool.execute`` calls), once, at import."""
    cap = _ANSWER_CAPS.get(fd)
    chunks: list[bytes] = []
    size = 0
    tail = b""
    need = len(b_endswith) + 4
    # poll(2), not select(2): select cannot take a descriptor past 1023, and a
    # server holding many connections hands ExifTool such pipes (attack run 6,
    # C9: 1,100 idle connections made every upload fail). Not epoll either: the
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
        reader, so its batches share one budget (attack run 5, B2). Files
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
        (issue 11: a swap and swap back between the reads). Without ``/proc``
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
        costs its neighbours nothing but its share (attack run 6, C4: it
        spent the whole budget, and every file after it failed)."""
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
        # (attack run 6, C1): a batch holds at most BATCH_SIZE x HOLD_FILE_CHARS
        out = {}
        while rows:
            r = rows.pop(0)
            out[str(r.get("SourceFile"))] = hold_bounded(r)
            del r
        for a in args:
            out.setdefault(a, {"ExifTool:Error": "ExifTool returned no metadata for this file"})
        return {**refused, **{a: out[a] for a in args}}


#: What Loupe holds of one file's ExifTool answer between the call and the
#: store (attack run 6, C1: a 32 KB JPEG with a MIE trailer of 31 MiB of text
#: and one character past U+FFFF was held at 124 MiB, 48 files a batch). Right
#: after each call is parsed, each file's answer is cut (:func:`hold_bounded`):
#: a string value to :data:`HOLD_VALUE_CHARS` characters (over what anything
#: downstream keeps: :data:`MAX_RAW_VALUE`, :data:`MAX_TEXT_CHARS`), one tag
#: (a list, a structure) to :data:`HOLD_TAG_CHARS`, and the file to
#: :data:`HOLD_FILE_CHARS` (4x what ``raw_metadata`` stores,
#: :data:`MAX_RAW_CHARS`): the tags :func:`normalize` reads first, a tag
#: that starts past the bound is dropped. So one file holds at most about
#: 512 Ki characters (2 MiB even at 4 bytes a character), a batch of 48 at
#: most ~100 MiB, 24 MiB in ASCII. The peak of one call stays bounded by
#: :data:`ANSWER_MAX_BYTES` (the bytes, their text and its parse: about
#: 400 MiB for the attack's file).
HOLD_VALUE_CHARS = 32 * 1024
HOLD_TAG_CHARS = 256 * 1024
HOLD_FILE_CHARS = 256 * 1024
_HOLD_DEPTH = 32
#: The key of a held answer that says what :func:`hold_bounded` cut.
HOLD_NOTE = "Loupe:Cut"
#: Tags always kept whole (ExifTool's own, small).
_HOLD_ALWAYS = ("SourceFile", "File:FileType", "File:FileTypeExtension", "File:MIMEType")


class HeldText(str):
    """The first :data:`HOLD_VALUE_CHARS` characters of a longer value;
    ``full_length`` is how long the value was (so :func:`bound_raw` names
    the real size)."""

    full_length: int

    def __new__(cls, text: str, full_length: int) -> "HeldText":
        self = super().__new__(cls, text)
        self.full_length = full_length
        return self

    def __str__(self) -> str:       # str(x) and x.strip() keep the length known
        return self

    def strip(self, chars: str | None = None) -> str:
        return HeldText(super().strip(chars), self.full_length)


def _normalize_reads(key: str) -> bool:
    """Whether :func:`normalize`, :func:`sidecar_problem` or the stored
    ``raw_metadata``'s read-back use tag ``key`` (kept first when cutting)."""
    if key == "SourceFile" or key.startswith(("ExifTool:", "File:")) or key in READ_BACK:
        return True
    tags = [t for group in (LANG_ALT_FIELDS, LIST_FIELDS, TEXT_FIELDS) for ts in group.values()
            for t in ts] + [t for ts in LOCATION_TAGS for t in ts] + list(ORIENTATION_TAGS)
    if key in tags or any(key.startswith(t + "-") for t in tags if t.startswith("XMP-")):
        return True     # a tag, or a language variant of one (``XMP-dc:Title-fr``)
    return key.startswith(("XMP-mwg-rs:", "XMP-MP:", "XMP-iptcExt:Person", "XMP-digiKam:TagsList"))


def hold_bounded(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``raw`` (ExifTool's JSON of one file) within
    :data:`HOLD_VALUE_CHARS` a string (cut to a :class:`HeldText`),
    :data:`HOLD_TAG_CHARS` a tag (list items or structure members past it
    dropped), :data:`_HOLD_DEPTH` levels, and :data:`HOLD_FILE_CHARS` a
    file (the tags :func:`_normalize_reads` names first, then the rest in
    ExifTool's order; a tag starting past the bound is dropped, except
    ExifTool's own and the file type). What was cut is said in
    ``raw[HOLD_NOTE]`` (sentences naming the sizes and bounds). Characters
    are counted as string lengths plus 4 per value and key."""
    cuts: list[str] = []
    tag = 0     # characters of the current tag

    def small(value: Any, depth: int) -> Any:
        nonlocal tag
        if tag > HOLD_TAG_CHARS:
            raise _TagFull
        if isinstance(value, str):
            if len(value) > HOLD_VALUE_CHARS:
                cuts.append(f"a value of {len(value):,} characters cut to {HOLD_VALUE_CHARS:,}")
                value = HeldText(value[:HOLD_VALUE_CHARS], len(value))
            tag += len(value) + 4
            return value
        if isinstance(value, (list, dict)) and depth >= _HOLD_DEPTH:
            cuts.append(f"a structure nested over {_HOLD_DEPTH} levels dropped")
            return None
        if isinstance(value, list):
            kept_list: list[Any] = []
            for v in value:
                try:
                    kept_list.append(small(v, depth + 1))
                except _TagFull:
                    cuts.append(f"a list of {len(value):,} values cut to {len(kept_list):,} "
                                f"(past {HOLD_TAG_CHARS:,} characters a tag)")
                    break
            return kept_list
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            for k, v in value.items():
                tag += len(k) + 4
                try:
                    kept[k] = small(v, depth + 1)
                except _TagFull:
                    cuts.append(f"a structure of {len(value):,} members cut to {len(kept):,} "
                                f"(past {HOLD_TAG_CHARS:,} characters a tag)")
                    break
            return kept
        tag += 8
        return value

    out: dict[str, Any] = {}
    size = dropped = 0
    for first in (True, False):
        for key in raw:
            if _normalize_reads(key) != first:
                continue
            if (size > HOLD_FILE_CHARS and key not in _HOLD_ALWAYS
                    and not key.startswith("ExifTool:")):
                dropped += 1
                continue
            tag = len(key) + 4
            try:
                out[key] = small(raw[key], 1)
            except _TagFull:        # a string past the bound on its own: not held
                out[key] = None
            size += tag
    if dropped:
        cuts.append(f"{dropped:,} tag(s) past {HOLD_FILE_CHARS:,} characters dropped")
    if cuts:
        more = f" (and {len(cuts) - 3:,} more)" if len(cuts) > 3 else ""
        out[HOLD_NOTE] = ("ExifTool's answer was cut when read (Loupe's bounds on what it "
                          f"holds of one file): {'; '.join(cuts[:3])}{more}")
    return out


class _TagFull(Exception):
    """One tag passed :data:`HOLD_TAG_CHARS` (internal to :func:`hold_bounded`)."""


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value).strip()
    return [text] if text else []


def _lang_alt(raw: dict[str, Any], tag: str) -> dict[str, str]:
    """Collect ``Tag`` (x-default) and ``Tag-fr``/``Tag-de-DE`` variants into a dict."""
    out: dict[str, str] = {}
    base = raw.get(tag)
    if base is not None and str(base).strip():
        out["x-default"] = str(base).strip()
    prefix = tag + "-"
    for key, value in raw.items():
        if key.startswith(prefix) and value is not None and str(value).strip():
            lang = key[len(prefix):]
            if re.fullmatch(r"[a-zA-Z]{2,3}(-[A-Za-z0-9]+)*", lang):
                out.setdefault(lang, str(value).strip())
    return out


def _split_keywords(tag: str, values: list[str]) -> list[str]:
    if tag == "XMP-lr:HierarchicalSubject":
        parts: list[str] = []
        for v in values:
            parts.extend(p.strip() for p in v.split("|") if p.strip())
        return parts
    if tag in ("IFD0:XPKeywords", "XMP-pdf:Keywords"):
        parts = []
        for v in values:
            parts.extend(p.strip() for p in re.split(r"[;,]", v) if p.strip())
        return parts
    return values


#: Root tags under which digiKam (``TagsList``, ``/``) and Lightroom
#: (``HierarchicalSubject``, ``|``) file the people tagged in a picture.
PEOPLE_ROOTS = frozenset({"people", "persons", "person"})
#: digiKam's own face-tag states under ``People`` (not names: "Unknown" and
#: "Unconfirmed" faces and "Ignored" ones, digiKam 7+ face management).
DIGIKAM_NOT_NAMES = frozenset({"unknown", "unconfirmed", "ignored"})
#: Named regions kept of one file (a group photo with more is cut, with a warning).
MAX_REGIONS = 200


def _unit_float(value: Any) -> float | None:
    """``value`` as a finite float, or None."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def _box(x: float | None, y: float | None, w: float | None, h: float | None
         ) -> dict[str, float] | None:
    """A normalised top-left box clipped to the picture, or None when any part
    is missing, not a number, or the box is empty or wholly outside 0..1."""
    if None in (x, y, w, h) or w <= 0 or h <= 0:  # type: ignore[operator]
        return None
    x0, y0 = max(0.0, x), max(0.0, y)  # type: ignore[type-var]
    x1, y1 = min(1.0, x + w), min(1.0, y + h)  # type: ignore[operator]
    if x1 <= x0 or y1 <= y0:
        return None
    return {"x": round(x0, 6), "y": round(y0, 6), "w": round(x1 - x0, 6), "h": round(y1 - y0, 6)}


def _as_dicts(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def _mwg_regions(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Named face regions of the Metadata Working Group's region schema
    (MWG Guidelines 2.0, section 5.9: ``Area`` X/Y is the centre, W/H the
    size, normalised unless ``Unit`` says pixel, then divided by
    ``AppliedToDimensions``). Only ``Type=Face`` regions name people."""
    out: list[dict[str, Any]] = []
    for info in _as_dicts(raw.get("XMP-mwg-rs:RegionInfo")):
        dims = info.get("AppliedToDimensions") if isinstance(info.get("AppliedToDimensions"),
                                                              dict) else {}
        dw, dh = _unit_float(dims.get("W")), _unit_float(dims.get("H"))
        for region in _as_dicts(info.get("RegionList")):
            if str(region.get("Type", "")).strip().lower() != "face":
                continue
            name = str(region.get("Name") or "").strip()
            if not name:
                continue
            area = region.get("Area") if isinstance(region.get("Area"), dict) else {}
            cx, cy = _unit_float(area.get("X")), _unit_float(area.get("Y"))
            w, h = _unit_float(area.get("W")), _unit_float(area.get("H"))
            if str(area.get("Unit", "normalized")).lower() == "pixel":
                if dw and dh and dw > 0 and dh > 0 and None not in (cx, cy, w, h):
                    cx, cy, w, h = cx / dw, cy / dh, w / dw, h / dh  # type: ignore[operator]
                else:
                    cx = None
            box = (_box(cx - w / 2, cy - h / 2, w, h)  # type: ignore[operator]
                   if None not in (cx, cy, w, h) else None)
            out.append({"name": name, **(box or {}), "source": "mwg"})
    if not out and "XMP-mwg-rs:RegionName" in raw:
        # flattened form (metadata read before -struct, kept in raw_metadata):
        # one list per field, paired only when every list has one value per
        # region (a region lacking a field would shift the others)
        names, types = _as_list(raw.get("XMP-mwg-rs:RegionName")), \
            _as_list(raw.get("XMP-mwg-rs:RegionType"))
        if len(names) == len(types):
            out = [{"name": n, "source": "mwg"} for n, t in zip(names, types)
                   if t.lower() == "face"]
    return out


def _mp_regions(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Named regions of Microsoft Photo's region schema (``MP:RegionInfoMP``,
    Windows Photo Gallery): ``Rectangle`` is "x, y, w, h", top-left, normalised."""
    out: list[dict[str, Any]] = []
    for info in _as_dicts(raw.get("XMP-MP:RegionInfoMP")):
        for region in _as_dicts(info.get("Regions")):
            name = str(region.get("PersonDisplayName") or "").strip()
            if not name:
                continue
            parts = [_unit_float(p) for p in str(region.get("Rectangle") or "").split(",")]
            box = _box(*parts) if len(parts) == 4 else None
            out.append({"name": name, **(box or {}), "source": "mp"})
    # flattened form (a reader without -struct): names only
    if not out:
        out = [{"name": n, "source": "mp"}
               for n in _as_list(raw.get("XMP-MP:RegionPersonDisplayName"))]
    return out


def _people_paths(values: list[str], sep: str) -> list[str]:
    """The leaf names of tag paths under a :data:`PEOPLE_ROOTS` root
    (``People/Family/Dora Ek`` -> ``Dora Ek``), without digiKam's face states."""
    out = []
    for v in values:
        parts = [p.strip() for p in v.split(sep) if p.strip()]
        if len(parts) >= 2 and parts[0].lower() in PEOPLE_ROOTS:
            if parts[-1].lower() not in DIGIKAM_NOT_NAMES:
                out.append(parts[-1])
    return out


def people_fields(raw: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """``(people, regions)`` of one ExifTool JSON object (``-struct``): the
    names people wrote into the file, first seen first, case-insensitively
    unique, and the named face regions with their boxes (see module doc)."""
    regions = _mwg_regions(raw) + _mp_regions(raw)
    names = [r["name"] for r in regions]
    names += _as_list(raw.get("XMP-iptcExt:PersonInImage"))
    for details in _as_dicts(raw.get("XMP-iptcExt:PersonInImageWDetails")):
        names += _as_list(details.get("PersonName"))
    names += _people_paths(_as_list(raw.get("XMP-digiKam:TagsList")), "/")
    names += _people_paths(_as_list(raw.get("XMP-lr:HierarchicalSubject")), "|")
    people: list[str] = []
    seen: set[str] = set()
    for n in names:
        if n.lower() not in seen:
            seen.add(n.lower())
            people.append(n)
    return people, regions


def normalize(raw: dict[str, Any]) -> dict[str, Any]:
    """Map one ExifTool JSON object (``-G1 -a -n``) to Loupe's normalised fields."""
    out: dict[str, Any] = {}
    for field, tags in LANG_ALT_FIELDS.items():
        for tag in tags:
            if tag.startswith("XMP-"):
                alt = _lang_alt(raw, tag)
            else:
                alt = {"x-default": ", ".join(_as_list(raw.get(tag)))} if _as_list(raw.get(tag)) else {}
            if alt:
                out[field] = alt
                break
    for field, tags in LIST_FIELDS.items():
        values: list[str] = []
        for tag in tags:
            for v in _split_keywords(tag, _as_list(raw.get(tag))):
                if v.lower() not in {x.lower() for x in values}:
                    values.append(v)
            if values and field == "creator":
                break  # creators: the first standard that names them wins
        if values:
            out[field] = values
    for field, tags in TEXT_FIELDS.items():
        for tag in tags:
            vals = _as_list(raw.get(tag))
            if vals:
                out[field] = vals[0]
                break
    location: list[str] = []
    for tags in LOCATION_TAGS:
        for tag in tags:
            vals = _as_list(raw.get(tag))
            if vals:
                if vals[0] not in location:
                    location.append(vals[0])
                break
    if location:
        out["location"] = location
    for tag in ORIENTATION_TAGS:
        v = raw.get(tag)
        if isinstance(v, int) and 1 <= v <= 8:
            out["orientation"] = v
            break
    people, regions = people_fields(raw)
    if people:
        out["people"] = people
    if regions:
        out["regions"] = regions
    return out


def merge(embedded: dict[str, Any], sidecar: dict[str, Any] | None) -> dict[str, Any]:
    """Sidecar fields win over embedded ones, field by field."""
    merged = dict(embedded)
    if sidecar:
        for key, value in sidecar.items():
            if key == "orientation":
                continue  # orientation describes the stored pixels: the file's own EXIF
            merged[key] = value
    return merged


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
    before anything decodes it (attack run 5, B2). Other ExifTool errors are
    left to :func:`check_readable`, after the image checks name what is wrong."""
    err = raw.get("ExifTool:Error")
    if isinstance(err, str) and err.startswith(BUDGET_SPENT):
        raise BadFile(path, "metadata", f"ExifTool could not read the metadata: {err}")


def sidecar_problem(sidecar: str, raw: dict[str, Any]) -> str | None:
    """Why an XMP sidecar cannot be used, or None when it can.

    A sidecar is unusable when ExifTool reports an error, when the XML is
    malformed (a "format error" warning: it would be read partially), when
    ExifTool does not recognise it as XMP, when it holds no XMP property, or
    when it was refused before ExifTool read it (``Loupe:Refused``: its XML
    too deep or too large, :mod:`loupe.ingest.xmpcheck`). The image is then indexed from its own metadata and the problem is
    recorded as a warning, so one bad sidecar never hides a good image.
    """
    if raw.get("Loupe:Refused"):      # refused before ExifTool (ingest.xmpcheck)
        return str(raw["Loupe:Refused"])
    err = raw.get("ExifTool:Error")
    if err:
        return f"XMP sidecar {sidecar} ignored: {err}"
    warn = str(raw.get("ExifTool:Warning") or "")
    if "format error" in warn.lower():
        return f"XMP sidecar {sidecar} ignored: malformed XML ({warn})"
    ftype = raw.get("File:FileType")
    if ftype != "XMP":
        return f"XMP sidecar {sidecar} ignored: not XMP (ExifTool reads it as {ftype or 'unknown'})"
    if not any(k.startswith("XMP-") and k != "XMP-x:XMPToolkit" for k in raw):
        return f"XMP sidecar {sidecar} ignored: it holds no XMP property"
    return None


def document_ids(raw_all: dict[str, Any]) -> tuple[str | None, str | None]:
    """The XMP Media Management ``DocumentID`` and ``OriginalDocumentID`` of one
    image, from ``{"file": raw, "sidecar": raw}`` (the sidecar's first), or None.

    Adobe's XMP specification (Part 2, xmpMM): DocumentID stays the same across
    saves of one document; OriginalDocumentID names the document a derivative
    ("save as", export) was made from. Ingest uses them to recognise a file that
    moved and changed bytes at once (SPEC S7).
    """
    out: list[str | None] = []
    for tag in ("XMP-xmpMM:DocumentID", "XMP-xmpMM:OriginalDocumentID"):
        value = None
        for part in ("sidecar", "file"):
            v = (raw_all.get(part) or {}).get(tag)
            if isinstance(v, str) and v.strip():
                value = v.strip()
                break
        out.append(value)
    return out[0], out[1]


#: Bounds on one file's normalised metadata, enforced before anything is
#: stored or indexed (SPEC N3, N5). PostgreSQL refuses a tsvector over
#: 1,048,575 bytes ("string is too long for tsvector"), so one unbounded field
#: would make the whole image fail. With these bounds one file's text is at
#: most 3 lang-alt values x 10,000 + 3 lists x 20,000 characters per language
#: — under a tenth of that limit even in 4-byte UTF-8 — and far above what
#: people write (IPTC-IIM itself caps a caption at 2,000 bytes).
MAX_TEXT_CHARS = 10_000
#: Items kept of one list field (keywords, creators, location parts).
MAX_LIST_ITEMS = 1_000
#: Characters kept of one list item, and of one list field in all.
MAX_ITEM_CHARS = 1_000
MAX_LIST_CHARS = 20_000


_WORD = re.compile(r"[^\W_]+")


def distinct_words(md: dict[str, Any], name: str = "") -> int:
    """The number of distinct words (runs of letters and digits, lowercased)
    in the text of normalised metadata ``md`` (every string value, in
    lang-alt maps, lists and named regions, recursively; numbers and dates
    count as their digits) and in the file's ``name`` (its path relative to
    the ingested folder). What an ingest with ``max_words`` bounds
    (:class:`loupe.ingest.pipeline.Ingester`): each such word becomes a term
    of the search index in every library language (a lexicon row, postings,
    and file postings for an asset with several files), so its count bounds
    what one file adds to the database (attack run 7, D3). An analyzer may
    add a few joined forms (``SS26-HERO-03`` also gives ``ss26hero03``) and
    drop stop words: the index's distinct terms are within about twice
    this count."""
    words: set[str] = set(w.lower() for w in _WORD.findall(name))
    stack: list[Any] = [md]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            words.update(w.lower() for w in _WORD.findall(value))
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            words.update(_WORD.findall(str(value)))
    return len(words)


def _cut(text: str, bound: int) -> str:
    """``text`` cut to at most ``bound`` characters, between words when a word
    boundary lies in the last tenth (else mid-word), trailing space removed."""
    if len(text) <= bound:
        return text
    head = text[:bound]
    if not text[bound].isspace():
        space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
        if space >= bound - bound // 10:
            head = head[:space]
    return head.rstrip()


def bound_fields(md: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Apply the bounds above to normalised metadata (see :func:`normalize`).

    Returns ``(bounded copy, reasons)``: one sentence per cut field, naming the
    field, its size and the bound, for a warning in ``ingest_failure``. Fields
    within the bounds are returned unchanged.
    """
    out = dict(md)
    reasons: list[str] = []
    for field, value in md.items():
        if field == "regions":
            kept = [{**r, "name": _cut(str(r.get("name", "")), MAX_ITEM_CHARS)}
                    for r in value[:MAX_REGIONS]]
            if len(kept) < len(value):
                reasons.append(f"regions: {len(kept):,} of {len(value):,} named regions kept "
                               f"(the bound is {MAX_REGIONS:,} regions)")
            out[field] = kept
        elif isinstance(value, dict):  # lang-alt
            alt = {}
            for lang, text in value.items():
                text = str(text)
                cut = _cut(text, MAX_TEXT_CHARS)
                if cut != text:
                    full = getattr(text, "full_length", len(text))    # HeldText: cut as read
                    reasons.append(f"{field} ({lang}) truncated from {full:,} to "
                                   f"{len(cut):,} characters (the bound is "
                                   f"{MAX_TEXT_CHARS:,} characters)")
                alt[lang] = cut
            out[field] = alt
        elif isinstance(value, list):
            items: list[str] = []
            total = 0
            long_items = 0
            for item in value:
                item = str(item)
                cut = _cut(item, MAX_ITEM_CHARS)
                long_items += cut != item
                if len(items) >= MAX_LIST_ITEMS or total + len(cut) > MAX_LIST_CHARS:
                    break
                items.append(cut)
                total += len(cut)
            if len(items) < len(value):
                reasons.append(f"{field}: {len(items):,} of {len(value):,} values kept (the "
                               f"bound is {MAX_LIST_ITEMS:,} values and {MAX_LIST_CHARS:,} "
                               f"characters)")
            if long_items:
                reasons.append(f"{field}: {long_items:,} value(s) truncated (the bound is "
                               f"{MAX_ITEM_CHARS:,} characters a value)")
            out[field] = items
        elif isinstance(value, str):
            cut = _cut(value, MAX_TEXT_CHARS)
            if cut != value:
                reasons.append(f"{field} truncated from {len(value):,} to {len(cut):,} "
                               f"characters (the bound is {MAX_TEXT_CHARS:,} characters)")
            out[field] = cut
    return out, reasons


#: Longest string value of ExifTool's answer kept in ``raw_metadata``
#: (characters), and the most characters of one file's ``raw_metadata`` as
#: JSON (the file's part and its sidecar's part are bounded each). ExifTool
#: inflates and decodes whatever a file holds; a 100 KB upload stored 100 MiB
#: of raw metadata, which every later filter and facet statement then walked
#: (attack run 4, A1 and A1b). The first bounds (64 KiB a value, 1 MiB a
#: file) still let a 4 KB upload store 975 KB, 250 times its size, outside
#: the upload quota (attack run 5, B4). Loupe reads only a few tags of the
#: stored JSON (:data:`READ_BACK`); the normalised fields are taken from
#: ExifTool's whole answer before this bound, with their own bounds
#: (:data:`MAX_TEXT_CHARS` ...). Real files' answers measured here: 21
#: camera JPEGs (Canon, Sony, Olympus, Nokia, Konica Minolta) 2.3-13.2 KB
#: of JSON, median 6.1 KB; so 64 KiB keeps a real file's answer whole.
MAX_RAW_VALUE = 16 * 1024
MAX_RAW_CHARS = 64 * 1024
_RAW_DEPTH = 16

#: Tags of the stored raw metadata that Loupe reads back (the country of
#: migration 0020's ``loupe_file_country``, the XMP document ids of moves:
#: ``ingest/queries.py DOCUMENT_IDS``), kept before any other tag so that
#: :data:`MAX_RAW_CHARS` never drops them.
READ_BACK = ("XMP-photoshop:Country", "IPTC:Country-PrimaryLocationName",
             "XMP-xmpMM:DocumentID", "XMP-xmpMM:OriginalDocumentID")


def bound_raw(raw: dict[str, Any], name: str) -> tuple[dict[str, Any], list[str]]:
    """``raw`` (ExifTool's JSON of one file) within :data:`MAX_RAW_VALUE` per
    string value and :data:`MAX_RAW_CHARS` in all (JSON characters, each tag
    measured as ``json.dumps({tag: value})``), with the reasons for what was
    left out, each naming ``name`` and the bound. A value over the bound is
    replaced by a note saying how long it was. ``SourceFile``, the
    ``ExifTool:`` group (errors, warnings) and the file type are always kept;
    then the tags of :data:`READ_BACK`, then the ``File:`` and ``System:``
    groups, then the rest in ExifTool's order, while they fit the total."""
    import json

    reasons: list[str] = []
    cut = 0

    def small(value: Any, depth: int) -> Any:
        nonlocal cut
        if isinstance(value, str) and len(value) > MAX_RAW_VALUE:
            cut += 1
            full = getattr(value, "full_length", len(value))     # HeldText: cut when read
            return f"(a value of {full:,} characters, over Loupe's bound of {MAX_RAW_VALUE:,}: not kept)"
        if isinstance(value, (list, dict)) and depth >= _RAW_DEPTH:
            cut += 1
            return f"(a structure nested over {_RAW_DEPTH} levels: not kept)"
        if isinstance(value, list):
            return [small(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {k: small(v, depth + 1) for k, v in value.items()}
        return value

    kept = {k: small(v, 1) for k, v in raw.items()}
    if cut:
        reasons.append(f"{name}: {cut:,} metadata value(s) over {MAX_RAW_VALUE:,} characters "
                       f"(or nested over {_RAW_DEPTH} levels) not kept in the raw metadata")
    always = [k for k in kept if k == "SourceFile" or k.startswith("ExifTool:")
              or k in ("File:FileType", "File:FileTypeExtension", "File:MIMEType")]
    order = always + [k for k in READ_BACK if k in kept]
    placed = set(order)
    order += [k for k in kept if k.split(":", 1)[0] in ("File", "System") and k not in placed]
    placed.update(order)
    order += [k for k in kept if k not in placed]
    out: dict[str, Any] = {}
    total, dropped = 2, 0
    for key in order:
        size = len(json.dumps({key: kept[key]}, ensure_ascii=False, default=str))
        if total + size > MAX_RAW_CHARS and key not in always:
            dropped += 1
            continue
        out[key] = kept[key]
        total += size
    if dropped:
        reasons.append(f"{name}: {dropped:,} metadata tag(s) past {MAX_RAW_CHARS:,} characters "
                       f"of raw metadata not kept")
    return out, reasons
