"""Kind accuracy OUT of sample: the machine kind rules
(loupe.pixels.kind, tuned on the demo library) on pictures that are not in
the demo and whose kind is known from their source.

Sources (Debian packages, unpacked with ``dpkg -x``, never installed):
  * openclipart-png 1:0.18+dfsg-19: clip art; the items the demo library
    holds (manifest ``openclipart_path``) are left out; a seeded random sample.
  * the Adwaita icon theme's PNG icons (adwaita-icon-theme, /usr/share/icons):
    icons; a seeded random sample over every size.

Usage:
    python benchmarks/kind_out_of_sample.py OPENCLIPART_PNG_ROOT MANIFEST \
        [--icons /usr/share/icons/Adwaita] [-n 300] [--seed 15] [--json]

Prints a confusion table (machine kind x source kind) in Markdown, the
agreement (clip art, line art and icon count as clip art for openclipart,
as in docs/machine-words.md; for icons only "icon" counts), and the CPU time
per picture.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path

from loupe.pixels.analyse import analyse_file

KINDS = ["photo", "illustration", "clipart", "lineart", "screenshot", "document", "icon", None]


def sample(root: Path, exclude: set[str], n: int, seed: int) -> list[Path]:
    """``n`` PNG files under ``root`` (sorted, then a seeded shuffle) whose
    path relative to ``root`` is not in ``exclude``."""
    files = sorted(p for p in root.rglob("*.png") if str(p.relative_to(root)) not in exclude)
    random.Random(seed).shuffle(files)
    return files[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("openclipart", type=Path, help=".../usr/share/openclipart/png")
    ap.add_argument("manifest", type=Path, help="demo/library.manifest.jsonl")
    ap.add_argument("--icons", type=Path, default=Path("/usr/share/icons/Adwaita"))
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    in_demo = set()
    for line in a.manifest.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("openclipart_path"):
            in_demo.add(rec["openclipart_path"])
    sets = {"clipart": sample(a.openclipart, in_demo, a.n, a.seed),
            "icon": sample(a.icons, set(), a.n, a.seed)}
    table: dict[str, Counter] = {}
    cpu = time.process_time()
    count = 0
    for label, files in sets.items():
        table[label] = Counter()
        for f in files:
            facts = analyse_file(str(f))
            table[label][facts.kind] += 1
            count += 1
    cpu = time.process_time() - cpu
    ok = {"clipart": {"clipart", "lineart", "icon"}, "icon": {"icon"}}
    agree = {k: sum(v for kind, v in table[k].items() if kind in ok[k]) for k in table}
    total = {k: sum(table[k].values()) for k in table}
    if a.json:
        print(json.dumps({"table": {k: {str(kk): vv for kk, vv in v.items()}
                                    for k, v in table.items()},
                          "agree": agree, "total": total, "excluded_in_demo": len(in_demo),
                          "cpu_ms_per_picture": round(1000 * cpu / max(count, 1), 1)}))
        return
    print("| machine kind \\ source kind | " + " | ".join(table) + " |")
    print("|---|" + "---|" * len(table))
    for kind in KINDS:
        print(f"| {kind or '(none: unreadable)'} | "
              + " | ".join(str(table[k][kind]) for k in table) + " |")
    print("| total | " + " | ".join(str(total[k]) for k in table) + " |")
    for k in table:
        print(f"{k}: {agree[k]}/{total[k]} = {agree[k] / max(total[k], 1):.3f}")
    print(f"excluded (in the demo): {len(in_demo)}; CPU {1000 * cpu / max(count, 1):.1f} ms/picture")


if __name__ == "__main__":
    main()
