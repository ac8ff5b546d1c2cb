"""Turn the writers' sheets into a committed query-set file (E1–E3).

Usage:
    .venv/bin/python eval/compile_queryset.py KEY.jsonl blind OUT.jsonl SHEET.jsonl...
    .venv/bin/python eval/compile_queryset.py KEY.jsonl caption-derived OUT.jsonl SHEET.jsonl...

A sheet line is what one writer wrote for one opaque picture name::

    {"pic": "p001", "text_in_image": "no",
     "objects": "...", "style": "...", "question": "..."}

(``text_in_image`` only from blind writers, who see the pixels; any of the
three registers may be missing). ``KEY.jsonl`` (made by ``eval/blind_sample.py``,
never shown to writers) maps each picture to its library path, content hash,
stratum and split. Each written query becomes one query-set line whose truth is
the known item (grade 2, named by its content hash, which survives re-ingest);
pooled judging adds the other relevant pictures later (E6, E7). Strata: source,
kind, text in image (blind sheets), split (tune/test, by picture).

The header lines (``#``) of OUT say how the set was made: pass them in
``--header FILE``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from loupe.eval.queryset import REGISTERS, parse_query


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("key", type=Path)
    ap.add_argument("provenance", choices=["blind", "caption-derived"])
    ap.add_argument("out", type=Path)
    ap.add_argument("sheets", type=Path, nargs="+")
    ap.add_argument("--header", type=Path, help="a text file of '#' lines to put first")
    args = ap.parse_args()
    key = {r["pic"]: r for r in map(json.loads, args.key.read_text().splitlines())}
    prefix = "b" if args.provenance == "blind" else "c"
    lines, seen = [], set()
    for sheet in args.sheets:
        for n, line in enumerate(sheet.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            s = json.loads(line)
            k = key[s["pic"]]
            strata = {"source": k["source"], "kind": k["kind"], "split": k["split"]}
            if "text_in_image" in s:
                strata["text_in_image"] = s["text_in_image"]
            for reg in REGISTERS:
                text = (s.get(reg) or "").strip()
                if not text:
                    continue
                qid = f"{prefix}-{s['pic']}-{reg[0]}"
                if qid in seen:
                    raise SystemExit(f"{sheet}:{n}: {s['pic']} {reg} written twice")
                seen.add(qid)
                q = parse_query({"id": qid, "text": text, "provenance": args.provenance,
                                 "register": reg, "strata": strata,
                                 "truth": [{"sha256": k["sha256"], "grade": 2}]},
                                f"{sheet}:{n}")
                lines.append(json.dumps(q.as_dict(), ensure_ascii=False))
    header = args.header.read_text(encoding="utf-8").rstrip("\n") + "\n" if args.header else ""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(header + "\n".join(sorted(lines)) + "\n", encoding="utf-8")
    print(f"{len(lines)} queries written to {args.out}")


if __name__ == "__main__":
    main()
