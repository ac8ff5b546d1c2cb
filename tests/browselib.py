"""A dated library for the browsing tests: ``n`` small real JPEG files
(Pillow writes each one's EXIF DateTimeOriginal, so no ExifTool run per
file), spread over collections and the months of 2019 and 2020, ingested
by the real ingest.

    family/2019, family/2020, trips/lisbon, trips/porto, work

File ``i`` (0-based) is in ``COLLECTIONS[i % 5]``; every 10th file
(``i % 10 == 9``) has no capture date; the others were taken on day 1 + i %
28 of month ``MONTHS[i % 24]``. Users: ``admin`` (admin), ``carol`` (member
of group ``kin``, granted the ``family`` collection), passwords
``NAME-password``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from PIL import Image

from loupe import Library

COLLECTIONS = ("family/2019", "family/2020", "trips/lisbon", "trips/porto", "work")
MONTHS = [(2019, m) for m in range(1, 13)] + [(2020, m) for m in range(1, 13)]


def taken(i: int) -> tuple[int, int, int] | None:
    """``(year, month, day)`` file ``i`` was taken, or None (undated)."""
    if i % 10 == 9:
        return None
    y, m = MONTHS[i % 24]
    return y, m, 1 + i % 28


def write_photos(root: Path, n: int) -> Path:
    """Write the ``n`` files under ``root`` and return it."""
    for i in range(n):
        folder = root / COLLECTIONS[i % len(COLLECTIONS)]
        folder.mkdir(parents=True, exist_ok=True)
        im = Image.new("RGB", (24, 16), (i % 251, (i * 7) % 253, (i * 13) % 241))
        im.putpixel((i % 24, (i // 24) % 16), (255 - i % 256, 0, 0))
        exif = Image.Exif()
        when = taken(i)
        if when:
            exif.get_ifd(0x8769)[0x9003] = f"{when[0]:04d}:{when[1]:02d}:{when[2]:02d} 12:00:00"
        im.save(folder / f"photo-{i:04d}.jpg", quality=70, exif=exif)
    return root


def expected_months(n: int, collections: tuple[str, ...] = COLLECTIONS) -> Counter:
    """``{(year, month): assets}`` of the files in ``collections``."""
    out: Counter = Counter()
    for i in range(n):
        if COLLECTIONS[i % len(COLLECTIONS)] in collections and taken(i):
            out[taken(i)[:2]] += 1
    return out


def build_library(home: Path, url: str, photos: Path, n: int,
                  languages: list[str] | None = None) -> Library:
    """Ingest ``n`` files into a library at ``home`` on ``url`` and create
    the users; returns the open (owner's) Library."""
    lib = Library.open(home, database_url=url)
    if languages:
        lib.init(languages=languages)
    lib.ingest(write_photos(photos, n))
    lib.create_user("admin", "admin-password", admin=True)
    lib.create_user("carol", "carol-password")
    lib.create_group("kin")
    lib.add_member("kin", "carol")
    lib.grant("kin", collection="family")
    return lib
