"""Attack run 10 (issue 11): the judging page's ground-truth rule fails
closed. Real files, real ExifTool, real PostgreSQL; the test failed on main
f4da5ac.

A10-3 (medium): a query's text is shown to a member only when the member may
read what the query was written from (attack runs 4 and 9: A3, F1). The rule
tested the assets and files its truth *names*; when the owner renamed the
private truth file (truth by path) or re-exported it (truth by hash), the
reference named nothing, and the member was served the query's text — a
paraphrase of the private picture.
"""

from __future__ import annotations

from pathlib import Path

from imaging import make_image, write_sidecar
from test_visibility import pooled, zephyr  # noqa: F401  (zephyr: the fixture)

from loupe import Library
from loupe.eval import Evaluation


def _shown(lib: Library) -> list[str]:
    """The query texts dave is served, judging each pair as he goes."""
    ev = Evaluation(lib.as_user("dave"))
    shown = []
    while (item := ev.next_item("p", "dave")) is not None:
        shown.append(item["query"])
        ev.judge("p", item["token"], "dave", 1)
    ev.conn.execute("DELETE FROM eval_judgement WHERE judge = 'dave'")
    return shown


def test_a10_3_a_truth_that_names_nothing_any_more_hides_its_query(zephyr, tmp_path):  # noqa: F811
    lib, photos = zephyr
    wolf = make_image(photos / "private" / "wolf.jpg", size=(40, 30), color=(90, 90, 20))
    write_sidecar(wolf, "-XMP-dc:Title=Harbour wolverine secret plan")
    lib.ingest(photos)
    sha = lib.conn.execute(
        "SELECT encode(a.content_sha256, 'hex') FROM asset a JOIN asset_file f "
        "ON f.asset_id = a.id WHERE f.rel_path = 'private/wolf.jpg'").fetchone()[0]
    ev = pooled(lib, tmp_path,
                '{"id": "w1", "text": "harbour", "provenance": "caption-derived", '
                '"register": "objects", "truth": [{"path": "private/wolf.jpg", "grade": 2}]}\n'
                '{"id": "w2", "text": "Harbour", "provenance": "caption-derived", '
                f'"register": "objects", "truth": [{{"sha256": "{sha}", "grade": 2}}]}}\n'
                '{"id": "d3", "text": "harbour view", "provenance": "blind", '
                '"register": "objects", "truth": [{"path": "shared/dup.jpg", "grade": 2}]}\n')
    total = ev.progress("p", "owner")["total"]
    assert total == 6   # each query: the harbour view (dave reads it) and the wolf (he does not)
    assert _shown(lib) == ["harbour view"]

    # the owner renames the private file: the path names nothing any more
    wolf.rename(photos / "private" / "wolf2.jpg")
    Path(str(wolf) + ".xmp").rename(photos / "private" / "wolf2.jpg.xmp")
    lib.ingest(photos)
    assert lib.conn.execute(
        "SELECT count(*) FROM asset_file WHERE rel_path = 'private/wolf.jpg'").fetchone()[0] == 0
    assert _shown(lib) == ["harbour view"]

    # ... and exports it again with other bytes: the hash names nothing any more
    make_image(photos / "private" / "wolf2.jpg", size=(40, 30), color=(20, 90, 90))
    lib.ingest(photos)
    assert lib.conn.execute("SELECT count(*) FROM asset WHERE content_sha256 = decode(%s, 'hex')",
                            (sha,)).fetchone()[0] == 0
    assert _shown(lib) == ["harbour view"]
    # the owner, who sees everything, still judges every pair of the pool
    assert ev.progress("p", "owner")["total"] == total
