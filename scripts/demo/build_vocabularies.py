"""Write the demo library's controlled vocabularies from its real category trees.

    python scripts/demo/build_vocabularies.py DEMO_DIR OUT_DIR

* ``tuxpaint.json``: Tux Paint's stamp category tree (``animals`` >
  ``mammals`` > ``cats`` ...), as shipped in the package's folders;
* ``food.json``: the IFCT 2017 food groups (``Fruits``, ``Green leafy
  vegetables`` ...) under one root, "Food (IFCT 2017)".

Labels are the folder names with ``_`` read as spaces; the format is the JSON
one documented in ``src/loupe/document/vocabulary.py``. Import them with
``loupe vocabulary import OUT_DIR/tuxpaint.json`` (``scripts/demo.sh`` does).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def label(name: str) -> str:
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def tree_terms(root: Path) -> list[dict]:
    """One term per folder under ``root``, parent = the enclosing folder."""
    terms = []
    for folder in sorted(p for p in root.rglob("*") if p.is_dir()):
        rel = folder.relative_to(root).as_posix()
        parent = str(Path(rel).parent.as_posix())
        terms.append({"key": rel, "label": label(folder.name),
                      "parent": None if parent == "." else parent})
    return terms


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    demo, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    tux = {"name": "tuxpaint", "terms": tree_terms(demo / "tuxpaint")}
    food_terms = [{"key": "food", "label": "Food (IFCT 2017)"}]
    for t in tree_terms(demo / "food"):
        food_terms.append({**t, "parent": t["parent"] or "food"})
    food = {"name": "food", "terms": food_terms}
    for name, data in (("tuxpaint", tux), ("food", food)):
        (out / f"{name}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        print(f"{out / (name + '.json')}: {len(data['terms'])} terms")


if __name__ == "__main__":
    main()
