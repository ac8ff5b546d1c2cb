"""Pooled graded judging of the demo's blind queries by pixels-only judges (E6, E7).

Usage (from the repository root, the demo library's home in ``LOUPE_HOME``)::

    python eval/judging_sheets.py sample  OUT.jsonl             # the judged sample of the test split
    python eval/judging_sheets.py sample-tune OUT.jsonl [N]     # N (45) tune-split queries, for calibration
    python eval/judging_sheets.py sample-style OUT.jsonl        # every test-split style query
    python eval/judging_sheets.py sheets  POOL SHEETS_DIR KEY_DIR [--skip-qrels QRELS] RUN...
                                                                # pool the runs, draw the sheets
    python eval/judging_sheets.py import  POOL KEY_DIR GRADES.jsonl...     # judges' grades → the pool

``sample`` draws about 60 queries of ``eval/querysets/demo-blind.jsonl``'s
test split, one per picture: the 65 test pictures are grouped by stratum
(source × kind) and ordered within it by ``sha256("loupe-judge-2026:" +
content hash)``; the last picture of each of the five largest strata is left
out (60 remain); walking the pictures stratum by stratum in that order, the
registers objects, style, question are taken in turn (20 of each), so every
stratum gets a mix of registers. No query text is read to choose.

``sample-tune`` draws N (default 45) queries of the *tune* split the same
way, one per picture, for calibrating the text lane's cut-offs without
touching the test split: the 71 tune pictures are grouped by stratum and
ordered within it by the same salted hash; each stratum keeps its first
round(N x size / 71) pictures (largest remainder, ties by stratum name, so
the counts add up to N); then the registers are taken in turn stratum by
stratum as above (N / 3 of each).

``sample-style`` writes every query of the test split whose register is
``style`` (65: one per test picture), for measuring machine words
on the register they are for; no query text is read to choose.

``sheets`` pools the top 10 of every run (``Evaluation.pool``: each distinct
(query, asset) pair once, shuffled with a fixed seed, each with a random
token) and draws, per query, one PNG per 16 pooled pictures: the query text
at the top, the pictures as numbered thumbnails (EXIF-oriented, transparency
on a grey checkerboard; no file name, caption, system or rank), in the
pool's shuffled order. ``--skip-qrels QRELS`` leaves off the sheets every
pair a TREC qrels file already grades (by query id and content SHA-256), so
an earlier round's judgements are reused, not judged again; the known item
is always drawn (a control: a judge should give it 2). ``SHEETS_DIR/sheets.jsonl`` lists ``{"sheet",
"query", "items"}``; ``KEY_DIR/key.jsonl`` — kept away from the judges —
maps (sheet, item) to the pool token, the asset's content SHA-256 and the
query id.

``import`` reads the judges' files (one ``{"sheet", "item", "grade"}`` per
line, ``grades-<judge>.jsonl``), maps each line through the key to its pool
pair (by its token, or — with a committed key, which holds none — by query
id and content hash in this pool) and records it with ``Evaluation.judge``
(the judge's name is taken from the file name). Lines naming no pair, or with a grade outside 0..2,
are reported and skipped.
"""

from __future__ import annotations

import hashlib
import json
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, ImageOps

REPO = Path(__file__).resolve().parent.parent
BLIND = REPO / "eval/querysets/demo-blind.jsonl"
SALT = "loupe-judge-2026:"
REGISTERS = ("objects", "style", "question")
PER_SHEET = 16
COLS = 4
CELL = 260
PAD = 14
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
FONT_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def _rows(path: Path) -> tuple[list[str], list[dict]]:
    head, rows = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            head.append(line)
        elif line.strip():
            rows.append(json.loads(line))
    return head, rows


def _pictures(split: str) -> tuple[dict[str, dict[str, dict]], dict[tuple[str, str], list[str]]]:
    """The blind set's pictures of ``split``: ``(by_pic, strata)``, each
    picture's queries by register (keyed by the known item's SHA-256), and
    the pictures of each (source, kind) stratum in the order of
    ``sha256(SALT + content hash)``."""
    _, rows = _rows(BLIND)
    by_pic: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        if r["strata"]["split"] == split:
            by_pic[r["truth"][0]["sha256"]][r["register"]] = r
    strata: dict[tuple[str, str], list[str]] = defaultdict(list)
    for sha, regs in by_pic.items():
        s = next(iter(regs.values()))["strata"]
        strata[(s["source"], s["kind"])].append(sha)
    for pics in strata.values():
        pics.sort(key=lambda h: hashlib.sha256((SALT + h).encode()).hexdigest())
    return by_pic, strata


def _write_set(out: str, header: str, chosen: list[dict]) -> None:
    """Write a query-set file: ``header`` (comment lines), then one query per line."""
    with open(out, "w", encoding="utf-8") as f:
        f.write(header)
        for r in chosen:
            f.write(json.dumps(r) + "\n")


def sample(out: str) -> None:
    """Write the judged sample (see the module docstring) as a query-set file."""
    by_pic, strata = _pictures("test")
    largest = sorted(strata, key=lambda k: (-len(strata[k]), k))[:5]
    for k in largest:
        strata[k].pop()
    chosen, i = [], 0
    for k in sorted(strata):
        for sha in strata[k]:
            chosen.append(by_pic[sha][REGISTERS[i % 3]])
            i += 1
    _write_set(out, "# Judged sample of the demo blind set's test split (eval/judging_sheets.py sample):\n"
               "# one query per picture, 60 of the 65 test pictures (the last, by\n"
               f"# sha256('{SALT}' + content hash), of each of the five largest source x kind strata\n"
               "# left out), registers objects/style/question in turn over the pictures taken\n"
               "# stratum by stratum. Queries copied unchanged from demo-blind.jsonl.\n", chosen)
    print(f"{len(chosen)} queries -> {out}")


def sample_tune(out: str, n: str = "45") -> None:
    """Write ``n`` tune-split queries, one per picture, stratified (module docstring)."""
    want = int(n)
    by_pic, strata = _pictures("tune")
    if not 0 < want <= len(by_pic):
        sys.exit(f"sample-tune: N must be 1..{len(by_pic)} (one query per tune picture), got {want}")
    total = len(by_pic)
    quota = {k: want * len(v) // total for k, v in strata.items()}
    rest = sorted(strata, key=lambda k: (-(want * len(strata[k]) % total), k))
    for k in rest[:want - sum(quota.values())]:
        quota[k] += 1
    chosen, i = [], 0
    for k in sorted(strata):
        for sha in strata[k][:quota[k]]:
            regs = by_pic[sha]
            reg = REGISTERS[i % 3]
            if reg not in regs:  # every tune picture has all three; guard anyway
                reg = sorted(regs)[0]
            chosen.append(regs[reg])
            i += 1
    _write_set(out, "# Judged sample of the demo blind set's TUNE split (eval/judging_sheets.py sample-tune):\n"
               f"# one query per picture, {want} of the {total} tune pictures, each source x kind\n"
               f"# stratum keeping its first round({want} x size / {total}) pictures (largest remainder)\n"
               f"# by sha256('{SALT}' + content hash); registers objects/style/question in turn\n"
               "# over the pictures taken stratum by stratum. Queries copied unchanged from demo-blind.jsonl.\n",
               chosen)
    from collections import Counter
    print(f"{len(chosen)} queries -> {out}; registers {dict(Counter(r['register'] for r in chosen))}")


def sample_style(out: str) -> None:
    """Write every test-split query of the style register (module docstring)."""
    _, rows = _rows(BLIND)
    chosen = [r for r in rows if r["strata"]["split"] == "test" and r["register"] == "style"]
    _write_set(out, "# The style register of the demo blind set's TEST split (eval/judging_sheets.py\n"
               f"# sample-style): all {len(chosen)} style queries of the test split, one per\n"
               "# picture, copied unchanged from demo-blind.jsonl, for measuring machine words\n"
               "# with pooled graded judgements.\n", chosen)
    print(f"{len(chosen)} queries -> {out}")


def _viewable(path: Path, side: int) -> Image.Image:
    with Image.open(path) as im0:
        im = ImageOps.exif_transpose(im0)
        alpha = "A" in im.getbands() or "transparency" in im.info
        im = im.convert("RGBA" if alpha else "RGB")
    scale = side / max(im.size)
    im = im.resize((max(1, round(im.width * scale)), max(1, round(im.height * scale))),
                   Image.NEAREST if scale > 1 else Image.LANCZOS)
    if alpha:
        board = Image.new("RGBA", im.size, (255, 255, 255, 255))
        for y in range(0, im.height, 10):
            for x in range((y // 10) % 2 * 10, im.width, 20):
                board.paste((204, 204, 204, 255), (x, y, x + 10, y + 10))
        im = Image.alpha_composite(board, im).convert("RGB")
    return im


def _sheet(query: str, pictures: list[Path], part: str) -> Image.Image:
    font, bold, small = (ImageFont.truetype(FONT, 30), ImageFont.truetype(FONT_BOLD, 30),
                         ImageFont.truetype(FONT, 20))
    lines = textwrap.wrap(f"\u201c{query}\u201d", 60)
    top = 24 + 40 * len(lines) + 34
    rows = (len(pictures) + COLS - 1) // COLS
    w = COLS * (CELL + PAD) + PAD
    h = top + rows * (CELL + 40 + PAD) + PAD
    sheet = Image.new("RGB", (w, h), (40, 40, 40))
    d = ImageDraw.Draw(sheet)
    for i, line in enumerate(lines):
        d.text((PAD + 4, 16 + 40 * i), line, font=bold, fill=(255, 255, 255))
    d.text((PAD + 4, 20 + 40 * len(lines)), f"sheet {part} \u2014 grade each numbered picture 0 / 1 / 2",
           font=small, fill=(200, 200, 200))
    for n, p in enumerate(pictures):
        r, c = divmod(n, COLS)
        x, y = PAD + c * (CELL + PAD), top + r * (CELL + 40 + PAD)
        d.rectangle((x, y, x + CELL - 1, y + 36), fill=(255, 220, 0))
        d.text((x + 8, y + 2), str(n + 1), font=font, fill=(0, 0, 0))
        try:
            im = _viewable(p, CELL)
        except Exception as exc:  # noqa: BLE001 — a picture that cannot be drawn is marked
            d.text((x + 8, y + 80), f"(cannot draw: {type(exc).__name__})", font=small,
                   fill=(255, 120, 120))
            continue
        sheet.paste(im, (x + (CELL - im.width) // 2, y + 40 + (CELL - im.height) // 2))
    return sheet


def _graded(qrels: str | None) -> set[tuple[str, str]]:
    """(query id, content SHA-256) of every pair a TREC qrels file grades."""
    if not qrels:
        return set()
    out = set()
    for line in Path(qrels).read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            out.add((parts[0], parts[2]))
    return out


def sheets(pool: str, sheets_dir: str, key_dir: str, runs: list[str],
           skip_qrels: str | None = None) -> None:
    """Pool ``runs`` (top 10 each) and draw the judging sheets and their key;
    with ``skip_qrels``, pairs that file already grades are not drawn (the
    known item always is)."""
    from loupe import Library
    from loupe.eval import Evaluation
    from loupe.eval import queries as q

    sdir, kdir = Path(sheets_dir), Path(key_dir)
    sdir.mkdir(parents=True, exist_ok=True)
    kdir.mkdir(parents=True, exist_ok=True)
    with Library.open() as lib:
        ev = Evaluation(lib)
        print(ev.pool(pool, runs))
        items = ev.pool_items(pool)
        set_name = ev.load_run(runs[0]).query_set
        text = {qu.id: qu.text for qu in ev.queries(set_name)}
        done = _graded(skip_qrels)
        if done:
            known = {(qu.id, t["sha256"]) for qu in ev.queries(set_name) for t in qu.truth
                     if "sha256" in t}
            sha_all = ev._sha256(sorted({it["asset_id"] for it in items}))
            before = len(items)
            items = [it for it in items if (it["qid"], sha_all[it["asset_id"]]) not in done
                     or (it["qid"], sha_all[it["asset_id"]]) in known]
            print(f"{before - len(items)} pairs already graded in {skip_qrels}: not drawn")
        order = list(dict.fromkeys(it["qid"] for it in sorted(
            items, key=lambda it: hashlib.sha256((SALT + it["qid"]).encode()).hexdigest())))
        by_q: dict[str, list[dict]] = defaultdict(list)
        for it in items:
            by_q[it["qid"]].append(it)
        pid = ev.pool_id(pool)
        n_sheet = 0
        with open(sdir / "sheets.jsonl", "w") as sf, open(kdir / "key.jsonl", "w") as kf:
            for qid in order:
                its = by_q[qid]
                chunks = [its[i:i + PER_SHEET] for i in range(0, len(its), PER_SHEET)]
                for ci, chunk in enumerate(chunks, 1):
                    n_sheet += 1
                    name = f"s{n_sheet:03d}.png"
                    paths = []
                    for it in chunk:
                        row = lib.conn.execute(q.ITEM_BY_TOKEN, {
                            "pool_id": pid, "token": it["token"], **lib.viewer.params()}).fetchone()
                        paths.append(Path(row[3]))
                    part = f"{ci} of {len(chunks)} for this query" if len(chunks) > 1 else "1 of 1"
                    _sheet(text[qid], paths, part).save(sdir / name, optimize=True)
                    sha = ev._sha256([it["asset_id"] for it in chunk])
                    sf.write(json.dumps({"sheet": name, "query": text[qid],
                                         "items": list(range(1, len(chunk) + 1))}) + "\n")
                    for n, it in enumerate(chunk, 1):
                        kf.write(json.dumps({"sheet": name, "item": n, "qid": qid,
                                             "token": it["token"],
                                             "sha256": sha[it["asset_id"]]}) + "\n")
        print(f"{len(order)} queries, {len(items)} pairs, {n_sheet} sheets -> {sdir}")


def import_grades(pool: str, key_dir: str, files: list[str]) -> None:
    """Record the judges' grades (files ``grades-<judge>.jsonl``) in the pool."""
    from loupe import Library
    from loupe.eval import Evaluation

    key = {(r["sheet"], int(r["item"])): r for r in
           (json.loads(x) for x in (Path(key_dir) / "key.jsonl").read_text().splitlines() if x)}
    with Library.open() as lib:
        ev = Evaluation(lib)
        items = ev.pool_items(pool)
        sha = ev._sha256(sorted({it["asset_id"] for it in items}))
        by_pair = {(it["qid"], sha[it["asset_id"]]): it["token"] for it in items}
        for k in key.values():  # a committed key holds no tokens: find the pair in this pool
            if "token" not in k:
                k["token"] = by_pair.get((k["qid"], k["sha256"]))
        for f in files:
            judge = Path(f).stem.removeprefix("grades-")
            ok, bad = 0, []
            for ln, line in enumerate(Path(f).read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                    k = key[(r["sheet"], int(r["item"]))]
                    if k["token"] is None:
                        raise KeyError(f"{k['qid']}/{k['sha256'][:12]} is not in pool {pool}")
                    g = int(r["grade"])
                    if g not in (0, 1, 2):
                        raise ValueError(f"grade {g}")
                except (ValueError, KeyError, TypeError) as exc:
                    bad.append(f"{f}:{ln}: {exc!r}")
                    continue
                ev.judge(pool, k["token"], judge, g)
                ok += 1
            print(f"{judge}: {ok} grades recorded, {len(bad)} skipped")
            for b in bad[:20]:
                print("  skipped", b)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "sample":
        sample(*args)
    elif cmd == "sample-tune":
        sample_tune(*args)
    elif cmd == "sample-style":
        sample_style(*args)
    elif cmd == "sheets":
        skip = None
        if "--skip-qrels" in args:
            i = args.index("--skip-qrels")
            skip = args[i + 1]
            args = args[:i] + args[i + 2:]
        sheets(args[0], args[1], args[2], args[3:], skip)
    elif cmd == "import":
        import_grades(args[0], args[1], args[2:])
    else:
        sys.exit(__doc__)
