"""Helpers that make real image files with known pixels and metadata for tests."""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
from pathlib import Path

from PIL import Image


def make_image(path: Path, *, size: tuple[int, int] = (64, 48), color=(200, 40, 40),
               fmt: str | None = None, **save_kwargs) -> Path:
    """Write a solid-colour image (plus a gradient so files differ by colour)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    im = Image.new("RGB", size, color)
    for x in range(size[0]):
        im.putpixel((x, 0), (x % 256, color[1], color[2]))
    im.save(path, fmt, **save_kwargs)
    return path


class _StayOpenExifTool:
    """One real ExifTool for the test process (``exiftool -stay_open True -@ -``),
    fed one command at a time: starting Perl and Image::ExifTool for each
    sidecar cost about 0.3 s on an idle 2-core machine (1.5 s under load),
    most of a small test library's setup. Same arguments, same
    ExifTool; a command whose arguments an argument file cannot carry as
    they are (a line break, a leading ``#``, leading or trailing blanks,
    bytes that are not UTF-8) runs in its own process as before."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None
        self.n = 0
        self.lock = threading.Lock()

    @staticmethod
    def plain(arg: str) -> bool:
        try:
            os.fsencode(arg).decode("utf-8")
        except UnicodeDecodeError:
            return False
        return not ("\n" in arg or "\r" in arg or arg.startswith("#") or arg != arg.strip())

    def run(self, args: list[str]) -> None:
        """Run ExifTool with ``args``; raises ``RuntimeError`` (with its
        messages) when it reports a file it did not write."""
        if not all(self.plain(a) for a in args):
            subprocess.run(["exiftool", *args], check=True, capture_output=True)
            return
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.proc = subprocess.Popen(["exiftool", "-stay_open", "True", "-@", "-"],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT)
                atexit.register(self.close)
            self.n += 1
            ready = f"{{ready{self.n}}}".encode()
            self.proc.stdin.write(b"".join(os.fsencode(a) + b"\n" for a in args)
                                  + f"-execute{self.n}\n".encode())
            self.proc.stdin.flush()
            out = b""
            while not out.rstrip().endswith(ready):
                line = self.proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"exiftool ended: {out.decode(errors='replace')}")
                out += line
        text = out.decode(errors="replace")
        if "weren't updated due to errors" in text or "Error:" in text:
            raise RuntimeError(f"exiftool {' '.join(args)}: {text}")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.write(b"-stay_open\nFalse\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=10)


_EXIFTOOL = _StayOpenExifTool()


def exiftool_write(path: Path, *tags: str) -> None:
    """Embed tags in ``path`` with the real ExifTool (``-GROUP:TAG=VALUE`` strings)."""
    _EXIFTOOL.run(["-m", "-overwrite_original", *tags, str(path)])


def write_sidecar(image: Path, *tags: str, name: str | None = None) -> Path:
    """Create an XMP sidecar (``image.ext.xmp`` by default) holding ``tags``."""
    out = image.parent / (name or image.name + ".xmp")
    if out.exists():
        out.unlink()
    # Writing to a .xmp file that does not exist makes ExifTool create it.
    _EXIFTOOL.run(["-m", *tags, str(out)])
    return out
