"""Writers of search documents at the same time: bulk keyword actions on
overlapping results, a person named, unnamed and named again, and an
ingest that removes files (one of an asset with two files, one the only
file of its asset), each on its own connection, in several rounds. No
writer fails (a deadlock is run again inside Loupe, an asset deleted
meanwhile is left out), and afterwards the index — the search documents,
the file documents, their postings, the terms' document frequencies and
the corpus counts — is exactly what a full rebuild from the stored state
gives: no update was lost."""

from __future__ import annotations

import shutil
import threading

import psycopg
import pytest

from imaging import make_image
from loupe import Library
from loupe.document.compile import rebuild_documents
from test_people import plib, scanned  # noqa: F401 - the fixtures: a library with real faces

pytest.importorskip("dlib")

ROUNDS = 3


def _index(conn: psycopg.Connection) -> dict[str, list]:
    """What the search reads, without write times and without the BM25
    impacts (those follow the corpus averages at the time each posting was
    written, by design)."""
    return {
        "documents": conn.execute(
            "SELECT asset_id, lang, to_jsonb(d) - 'updated_at' FROM search_document d "
            "ORDER BY 1, 2").fetchall(),
        "file documents": conn.execute(
            "SELECT file_id, lang, to_jsonb(d) - 'updated_at' FROM file_document d "
            "ORDER BY 1, 2").fetchall(),
        "postings": conn.execute(
            "SELECT t.lang, t.term, p.asset_id, p.tf, p.group_len FROM lexical_posting p "
            "JOIN lexicon_term t ON t.id = p.term_id ORDER BY 1, 2, 3").fetchall(),
        "file postings": conn.execute(
            "SELECT lang, term, file_id, asset_id, tf FROM file_posting "
            "ORDER BY 1, 2, 3").fetchall(),
        "document frequencies": conn.execute(
            "SELECT lang, term, df FROM lexicon_term WHERE df > 0 ORDER BY 1, 2").fetchall(),
        "corpus": conn.execute(
            "SELECT lang, n_docs, total_len FROM corpus_stat ORDER BY 1").fetchall(),
    }


def _rebuilt(lib: Library) -> dict[str, list]:
    """:func:`_index` after every document is dropped and rebuilt from the
    stored state (rolled back afterwards)."""
    out: dict[str, list] = {}
    try:
        with lib.conn.transaction():
            lib.conn.execute("DELETE FROM search_document")
            lib.conn.execute("DELETE FROM file_document")
            for (asset_id,) in lib.conn.execute("SELECT id FROM asset ORDER BY id").fetchall():
                rebuild_documents(lib.conn, lib.tenant_id, asset_id, lib.languages())
            out = _index(lib.conn)
            raise psycopg.Rollback()
    except psycopg.Rollback:
        pass
    return out


def _person_of(lib: Library, rel: str) -> int:
    return lib.conn.execute("SELECT f.person_id FROM face f JOIN asset_file a ON "
                            "a.asset_id = f.asset_id WHERE a.rel_path = %s ORDER BY f.id LIMIT 1",
                            (rel,)).fetchone()[0]


def test_concurrent_document_writers_leave_the_index_equal_to_a_full_rebuild(
        plib, scanned, tmp_path):  # noqa: F811 - the imported fixtures
    _admin, _db, home, photos, _summary = scanned
    url = plib.conn.info.dsn
    obama = _person_of(plib, "public/obama.jpg")
    extra = tmp_path / "extra"
    for r in range(ROUNDS):
        # an ingest's files to remove: a copy of biden.jpg (its asset keeps
        # its first file) and a picture of its own (its asset goes)
        extra.mkdir(exist_ok=True)
        shutil.copy(photos / "private" / "biden.jpg", extra / f"biden-copy-{r}.jpg")
        make_image(extra / f"obama-extra-{r}.png", size=(40, 30), color=(r * 40, 90, 200))
        plib.ingest(extra)
        errors: list[BaseException] = []

        def bulk(keyword: str, query: str) -> None:
            with Library.open(home, database_url=url) as lib:
                lib.bulk("add_keyword", keyword, query=query, any_term=True, confirm=True)

        def naming() -> None:
            with Library.open(home, database_url=url) as lib:
                lib.name_person(obama, f"Barack Obama {r}")
                lib.name_person(obama, None)
                lib.name_person(obama, f"Barack Obama {r}")

        def remove_files() -> None:
            for f in extra.iterdir():
                f.unlink()
            with Library.open(home, database_url=url) as lib:
                lib.ingest(extra)

        work = [lambda k=k, q=q: bulk(f"kw{r}{k}", q) for k, q in
                enumerate(["obama", "private", "biden obama", "jpg", "obama extra"])]
        work += [naming, remove_files]
        start = threading.Barrier(len(work))

        def run(fn) -> None:
            start.wait()
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(fn,)) for fn in work]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [], errors
        now = _index(plib.conn)
        fresh = _rebuilt(plib)
        for part in now:
            assert now[part] == fresh[part], (r, part)
        # a keyword is found on exactly the assets that hold it
        assert {h.asset_id for h in plib.search(f"kw{r}1", limit=100).hits} == {
            row[0] for row in plib.conn.execute(
                "SELECT asset_id FROM asset_keyword WHERE keyword = %s", (f"kw{r}1",))}
