"""What one member upload adds to the database, by distinct words (docs/security.md,
"Index growth from uploads").

A fresh library (embedded PostgreSQL) in a scratch home, with the library
languages given; a member uploads ``--uploads`` images through the real web
app, each with a sidecar of ``--words`` distinct random keywords (10 letters),
with the word bound of the upload set above that count. Printed: the bytes
of the upload folder, the growth of every table and index of the database
(``pg_total_relation_size`` summed over the schema, after VACUUM so that
free space is not counted as growth), and that growth per upload and per
word. Run it twice (below and at the bound) to read the cost of one word.

    PYTHONPATH=src python benchmarks/upload_index_cost.py --home /tmp/x --words 300
"""

from __future__ import annotations

import argparse
import random
import shutil
import string
import sys
import time
from pathlib import Path

from fastapi.testclient import TestClient
from PIL import Image

from loupe import Library
from loupe.web import create_app
from loupe.web.security import WebLimits

SIZE = """SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'm')"""


def _sidecar(words: list[str]) -> bytes:
    items = "".join(f"<rdf:li>{w}</rdf:li>" for w in words)
    return ('<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>'
            '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
            '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
            '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:subject><rdf:Bag>{items}</rdf:Bag></dc:subject>'
            '</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>').encode()


def _size(lib: Library) -> int:
    lib.conn.execute("VACUUM")
    return lib.conn.execute(SIZE).fetchone()[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True, help="scratch home (emptied first)")
    ap.add_argument("--words", type=int, default=300, help="distinct keywords per image")
    ap.add_argument("--uploads", type=int, default=10, help="uploads, one image each")
    ap.add_argument("--langs", default="en,fr", help="library languages")
    args = ap.parse_args()
    shutil.rmtree(args.home, ignore_errors=True)
    rng = random.Random(7)
    try:
        with Library.open(args.home, create=True) as lib:
            lib.init(languages=args.langs.split(","))
            lib.create_user("bob", "bob-password")
            app = create_app(args.home, pool_size=2,
                             limits=WebLimits(upload_max_words=args.words + 10))
            with TestClient(app) as client:
                tok = client.post("/api/tokens", json={"name": "bob",
                                                       "password": "bob-password"})
                bob = {"Authorization": f"Bearer {tok.json()['token']}"}
                # one upload first, so that the tables' first pages are not counted
                tmp = args.home / "img.jpg"
                Image.new("RGB", (32, 24), (1, 2, 3)).save(tmp)
                client.post("/api/upload", headers=bob,
                            files=[("files", ("first.jpg", tmp.read_bytes(), "image/jpeg"))])
                before = _size(lib)
                sidecar_bytes = 0
                t0 = time.process_time()
                for i in range(args.uploads):
                    Image.new("RGB", (32, 24), (i % 256, 7, 9)).save(tmp)
                    words = ["".join(rng.choices(string.ascii_lowercase, k=10))
                             for _ in range(args.words)]
                    side = _sidecar(words)
                    sidecar_bytes += len(side)
                    r = client.post("/api/upload", headers=bob, files=[
                        ("files", ("u.jpg", tmp.read_bytes(), "image/jpeg")),
                        ("files", ("u.jpg.xmp", side, "application/rdf+xml"))])
                    assert r.status_code == 200 and r.json()["stored"] == 1, r.text
                cpu = time.process_time() - t0
                grown = _size(lib) - before
        folder = sum(p.stat().st_size for p in (args.home / "uploads").rglob("*")
                     if p.is_file())
        print(f"languages {args.langs}; {args.uploads} uploads x {args.words} distinct words; "
              f"sidecars {sidecar_bytes / args.uploads:,.0f} B each; upload folder {folder:,} B")
        print(f"database growth {grown:,} B: {grown / args.uploads:,.0f} B per upload, "
              f"{grown / (args.uploads * max(args.words, 1)):,.0f} B per word "
              f"(client CPU {cpu:.1f} s)")
    finally:
        Library.stop(args.home)
    return 0


if __name__ == "__main__":
    sys.exit(main())
