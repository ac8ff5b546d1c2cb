"""Pooled blind judging (E6, E7): the top of several runs pooled once per (query,
asset) pair in a seeded order, each pair named by an opaque token; judges'
grades and their agreement. The functions take the
:class:`~loupe.eval.instrument.Evaluation` (``ev``) whose methods of the same
name call them."""

from __future__ import annotations

import random
import secrets
from collections import defaultdict
from pathlib import Path
from typing import Any

from . import metrics as mx
from . import queries as q
from .common import POOL_DEPTH, EvalError


def pool(ev, name: str, runs: list[str], *, depth: int = POOL_DEPTH,
         seed: int = 0) -> dict[str, Any]:
    """Pool the top ``depth`` of ``runs`` for blind judging (E7): each
    distinct (query, asset) pair once, in an order shuffled by
    ``random.Random(seed + round)``. Pooling again with more runs queues
    only the pairs not already in the pool (re-pooling), after the
    existing ones; runs already pooled are skipped. Every pair gets a
    random opaque token, by which the judging page names it.

    Returns ``{"pool", "round", "runs_added", "new_pairs", "pairs"}``.

    Raises:
        EvalError: no runs, unknown run, or runs over another query set.
    """
    if not runs:
        raise EvalError("pool needs at least one run")
    loaded = [ev.load_run(r) for r in runs]
    sets = {rr.query_set for rr in loaded}
    if len(sets) != 1:
        raise EvalError(f"runs of one pool must share a query set, not {', '.join(sorted(sets))}")
    set_id = ev._set_id(sets.pop())
    with ev.conn.transaction():
        ev.conn.execute(q.INSERT_POOL, {"tenant_id": ev.tenant_id, "set_id": set_id,
                                          "name": name, "depth": depth, "seed": seed})
        pool_id, pset, pdepth, pseed = ev.conn.execute(q.POOL_BY_NAME, {
            "tenant_id": ev.tenant_id, "name": name}).fetchone()
        if pset != set_id:
            raise EvalError(f"pool {name!r} is over another query set")
        done = dict(ev.conn.execute(q.POOL_RUNS, {"pool_id": pool_id}).fetchall())
        run_ids = {r: ev.conn.execute(q.RUN_BY_NAME, {"tenant_id": ev.tenant_id,
                                                        "name": r}).fetchone()[0]
                   for r in runs}
        new = [rid for rid in dict.fromkeys(run_ids.values()) if rid not in done]
        count, last_pos, last_round = ev.conn.execute(q.POOL_SIZE,
                                                        {"pool_id": pool_id}).fetchone()
        if not new:
            return {"pool": name, "round": last_round, "runs_added": 0, "new_pairs": 0,
                    "pairs": count}
        rnd = last_round + 1
        pairs = ev.conn.execute(q.NEW_POOL_PAIRS, {"run_ids": new, "depth": pdepth,
                                                     "pool_id": pool_id}).fetchall()
        random.Random(pseed + rnd).shuffle(pairs)
        for rid in new:
            ev.conn.execute(q.INSERT_POOL_RUN, {"tenant_id": ev.tenant_id,
                                                  "pool_id": pool_id, "run_id": rid,
                                                  "round": rnd})
        with ev.conn.cursor() as cur:
            cur.executemany(q.INSERT_POOL_ITEM, [
                {"tenant_id": ev.tenant_id, "pool_id": pool_id, "query_id": qid,
                 "asset_id": aid,
                 "token": secrets.token_urlsafe(16), "position": last_pos + i, "round": rnd}
                for i, (qid, aid) in enumerate(pairs, 1)])
    return {"pool": name, "round": rnd, "runs_added": len(new), "new_pairs": len(pairs),
            "pairs": count + len(pairs)}


def pool_id(ev, name: str) -> int:
    """The id of a pool. Raises EvalError when there is none of that name."""
    row = ev.conn.execute(q.POOL_BY_NAME, {"tenant_id": ev.tenant_id,
                                             "name": name}).fetchone()
    if row is None:
        raise EvalError(f"no pool named {name!r} (create one with 'loupe eval pool')")
    return row[0]


def pool_items(ev, name: str) -> list[dict[str, Any]]:
    """A pool's pairs in judging order: qid, asset_id, token, position, round."""
    return [{"qid": r[0], "asset_id": r[1], "token": r[2], "position": r[3], "round": r[4]}
            for r in ev.conn.execute(q.POOL_ITEMS, {"pool_id": ev.pool_id(name)})]


def next_item(ev, pool: str, judge: str) -> dict[str, Any] | None:
    """The next pair ``judge`` has not judged: ``{"token", "query", "total",
    "done"}`` — nothing that names the asset, its files or its system —
    or None when the judge is done. Only pairs whose asset the library's
    viewer may read are served and counted (P1)."""
    row = ev.conn.execute(q.NEXT_ITEM, {"pool_id": ev.pool_id(pool), "judge": judge,
                                          **ev.lib.viewer.params()}).fetchone()
    if row is None:
        return None
    return {"token": row[0], "query": row[1], "total": row[2], "done": row[3]}


def progress(ev, pool: str, judge: str) -> dict[str, int]:
    """``{"total", "done"}`` pairs of the pool for one judge, counting only
    pairs whose asset the library's viewer may read."""
    total, done = ev.conn.execute(q.PROGRESS, {"pool_id": ev.pool_id(pool),
                                                 "judge": judge,
                                                 **ev.lib.viewer.params()}).fetchone()
    return {"total": total, "done": done}


def judge(ev, pool: str, token: str, judge: str, grade: int) -> None:
    """Record (or change) ``judge``'s grade 0/1/2 for the pair ``token``.

    Raises:
        EvalError: unknown token (or one whose asset the viewer may not
            read: the same error), empty judge name, or a grade not in 0..2.
    """
    if grade not in (0, 1, 2):
        raise EvalError("grade must be 0 (no), 1 (near miss) or 2 (satisfies)")
    if not judge or not judge.strip():
        raise EvalError("a judge needs a name")
    row = ev.conn.execute(q.ITEM_BY_TOKEN, {"pool_id": ev.pool_id(pool),
                                              "token": token,
                                              **ev.lib.viewer.params()}).fetchone()
    if row is None:
        raise EvalError("unknown pair")
    ev.conn.execute(q.UPSERT_JUDGEMENT, {"tenant_id": ev.tenant_id, "item_id": row[0],
                                           "judge": judge.strip(),
                                           "grade": grade})


def item_image(ev, pool: str, token: str) -> Path:
    """The picture of a pair, for the judging page: the asset's thumbnail
    (a WebP under the library home) or, without one, its primary file.

    Raises:
        EvalError: unknown token, or one whose asset the viewer may not read.
    """
    row = ev.conn.execute(q.ITEM_BY_TOKEN, {"pool_id": ev.pool_id(pool),
                                              "token": token,
                                              **ev.lib.viewer.params()}).fetchone()
    if row is None:
        raise EvalError("unknown pair")
    return ev.lib.home / row[2] if row[2] else Path(row[3])


def agreement(ev, pool: str) -> dict[str, Any]:
    """Inter-judge agreement on the pairs two judges both graded
    (:func:`loupe.eval.metrics.judge_agreement`: count, share of identical
    grades, Cohen's kappa unweighted and linearly weighted, per pair of
    judges). Returns ``{"pool", "judges", "judgements": {judge: count},
    "pairs": [...]}``."""
    by_judge: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)
    for qid, a, judge, g in ev.conn.execute(q.POOL_JUDGEMENTS,
                                              {"pool_id": ev.pool_id(pool)}):
        by_judge[judge][(qid, a)] = g
    return {"pool": pool, "judges": sorted(by_judge),
            "judgements": {j: len(d) for j, d in by_judge.items()},
            "pairs": mx.judge_agreement(by_judge)}
