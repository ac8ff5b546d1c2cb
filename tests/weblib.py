"""A small library for the web tests, built from real image files (Pillow,
ExifTool) by the real ingest: folders become collections, file names and
one asset's embedded metadata become searchable words.

    animals/cats/cat-01..03.jpg      3 assets  ("cat")
    animals/dogs/dog-01..02.png      2 assets  ("dog")
    travel/lisbon/lisbon-sunset-01..30.jpg   30 assets ("sunset", 2 pages of 24)
    travel/porto/porto-bridge.jpg    1 asset, with title, description, keywords, creator
"""

from __future__ import annotations

from pathlib import Path

from imaging import exiftool_write, make_image

N_SUNSETS = 30


def build_photos(root: Path) -> Path:
    """Write the fixture files under ``root`` and return it."""
    for i in range(1, 4):
        make_image(root / "animals" / "cats" / f"cat-{i:02d}.jpg", color=(10 * i, 200, 30))
    for i in range(1, 3):
        make_image(root / "animals" / "dogs" / f"dog-{i:02d}.png", color=(30, 10 * i, 200))
    for i in range(1, N_SUNSETS + 1):
        make_image(root / "travel" / "lisbon" / f"lisbon-sunset-{i:02d}.jpg",
                   color=(250, 4 * i, 60), size=(80, 60))
    bridge = make_image(root / "travel" / "porto" / "porto-bridge.jpg", color=(90, 90, 90))
    exiftool_write(bridge, "-XMP-dc:Title=Dom Luís bridge at dusk",
                   "-XMP-dc:Description=The iron bridge over the Douro, seen from Gaia",
                   "-XMP-dc:Subject=bridge", "-XMP-dc:Subject=river",
                   "-XMP-dc:Creator=Ana Costa")
    return root


def page_csrf(client, path: str = "/") -> str:
    """The CSRF token a page of the logged-in client carries in its forms
    (``<input name="csrf_token">``), read from the real page."""
    import re

    m = re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text)
    assert m, f"no csrf_token field on {path}"
    return m.group(1)


def web_login(client, name: str, password: str, **extra) -> object:
    """Log in through the login form as a browser does: fetch the page (its
    pre-login cookie and token), then post the form with that token."""
    token = page_csrf(client, "/login")
    return client.post("/login", data={"name": name, "password": password,
                                       "csrf_token": token, **extra}, follow_redirects=False)
