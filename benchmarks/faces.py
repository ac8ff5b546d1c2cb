"""People (X2): detection recall, false detections, clustering purity and
pairwise F1 on faces labelled by hand, and faces per second, through
Loupe's own path (ingest, then ``Library.faces``: detection, descriptors,
incremental clustering in PostgreSQL).

Usage:
    .venv/bin/python benchmarks/faces.py                      # fixtures + crowd + skimage
    .venv/bin/python benchmarks/faces.py --images DIR         # + face_recognition's originals
    .venv/bin/python benchmarks/faces.py --smoke              # the fixtures only, seconds

The test set (real photographs from registry packages):

* ``tests/fixtures/faces``: five portraits from face_recognition 1.3.0's
  source distribution, reduced to 400 px (two men; README there).
* ``--images DIR``: the originals, ``face_recognition-1.3.0/tests/test_images``
  (``pip download face_recognition==1.3.0 --no-binary :all: --no-deps``,
  then untar): 7 portraits of the same two men, 491-2333 px.
* a crowd: 30 tiles (120 px) cut around the faces of three fixtures.
* scikit-image's ``data`` (if installed): ``astronaut`` (one face: Eileen
  Collins), ``camera`` (one face: the cameraman, small and turned), and
  eight pictures without a face (coffee, chelsea, cat, rocket,
  hubble_deep_field, immunohistochemistry, horse, brick).

Labels: each labelled face is an identity and a centre point (normalised),
written below after looking at each picture; a detection is that face when
the centre lies inside its box. Detections matching no label are false
detections. Recall = labelled faces detected / labelled faces. Clustering is
scored on the detected labelled faces: purity (each person's majority
identity, summed, over faces) and pairwise precision / recall / F1 (pairs of
faces in the same person vs pairs of the same identity).

Throughput: wall-clock seconds of ``Library.faces`` (decode, detect,
describe, store, cluster) over the set, as faces/s and pictures/s, on this
machine's cores (printed with the load average: on a shared machine the
figure is a floor), and faces per CPU-second of the Python process.
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "faces"

# (identity, centre x, centre y), normalised, for each labelled picture.
LABELS: dict[str, list[tuple[str, float, float]]] = {
    "fixtures/obama.jpg": [("obama", 0.53, 0.23)],
    "fixtures/obama2.jpg": [("obama", 0.48, 0.35)],
    "fixtures/obama3.jpg": [("obama", 0.55, 0.19)],
    "fixtures/obama_partial_face2.jpg": [("obama", 0.90, 0.24)],
    "fixtures/biden.jpg": [("biden", 0.59, 0.18)],
    "originals/32bit.png": [("obama", 0.49, 0.37)],
    "originals/obama.jpg": [("obama", 0.53, 0.23)],
    "originals/obama2.jpg": [("obama", 0.49, 0.37)],
    "originals/obama3.jpg": [("obama", 0.55, 0.19)],
    "originals/obama_partial_face.jpg": [("obama", 0.135, 0.25)],
    "originals/obama_partial_face2.jpg": [("obama", 0.90, 0.24)],
    "originals/biden.jpg": [("biden", 0.59, 0.18)],
    "skimage/astronaut.png": [("collins", 0.43, 0.24)],
    "skimage/camera.png": [("cameraman", 0.45, 0.23)],
}
SKIMAGE_FACES = ("astronaut", "camera")
SKIMAGE_NONE = ("coffee", "chelsea", "cat", "rocket", "hubble_deep_field",
                "immunohistochemistry", "horse", "brick")
# the three fixtures the crowd is cut from, with their face boxes (x, y, w, h)
CROWD_FROM = {"obama.jpg": ("obama", (0.394, 0.115, 0.281, 0.228)),
              "obama2.jpg": ("obama", (0.268, 0.24, 0.431, 0.228)),
              "biden.jpg": ("biden", (0.415, 0.098, 0.358, 0.158))}


def build(folder: Path, *, smoke: bool, originals: Path | None) -> dict[str, list]:
    """Write the test set under ``folder``; return the labels of what was written."""
    labels: dict[str, list] = {}
    (folder / "fixtures").mkdir(parents=True)
    for p in sorted(FIXTURES.glob("*.jpg")):
        shutil.copy(p, folder / "fixtures" / p.name)
        labels[f"fixtures/{p.name}"] = LABELS[f"fixtures/{p.name}"]
    if smoke:
        return labels
    if originals:
        (folder / "originals").mkdir()
        for p in sorted(originals.iterdir()):
            key = f"originals/{p.name}"
            if key in LABELS:
                shutil.copy(p, folder / key)
                labels[key] = LABELS[key]
    # the crowd: 6 x 5 tiles of 120 px, identity by tile
    grid = Image.new("RGB", (720, 600), (128, 128, 128))
    crowd = []
    names = list(CROWD_FROM)
    for i in range(30):
        name = names[i % 3]
        who, (x, y, w, h) = CROWD_FROM[name]
        im = Image.open(FIXTURES / name).convert("RGB")
        cx, cy = (x + w / 2) * im.width, (y + h / 2) * im.height
        side = max(w * im.width, h * im.height)
        tile = im.crop((round(cx - side), round(cy - side), round(cx + side), round(cy + side)))
        grid.paste(tile.resize((120, 120), Image.Resampling.LANCZOS),
                   ((i % 6) * 120, (i // 6) * 120))
        crowd.append((who, ((i % 6) * 120 + 60) / 720, ((i // 6) * 120 + 60) / 600))
    (folder / "crowd").mkdir()
    grid.save(folder / "crowd" / "crowd.jpg", quality=90)
    labels["crowd/crowd.jpg"] = crowd
    try:
        import numpy as np
        import skimage.data as data
    except ImportError:
        print("scikit-image is not installed: its pictures are left out")
        return labels
    (folder / "skimage").mkdir()
    for name in SKIMAGE_FACES + SKIMAGE_NONE:
        a = getattr(data, name)()
        if a.dtype != np.uint8:
            a = (a * 255).astype(np.uint8)
        Image.fromarray(a).save(folder / "skimage" / f"{name}.png")
        labels[f"skimage/{name}.png"] = LABELS.get(f"skimage/{name}.png", [])
    return labels


def score(rows, labels):
    """rows: (rel_path, box_x, box_y, box_w, box_h, person_id). Returns the figures."""
    by_path = defaultdict(list)
    for r in rows:
        by_path[r[0]].append(r)
    labelled = sum(len(v) for v in labels.values())
    detected, false, matched = 0, 0, []   # matched: (identity, person_id)
    per_source: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])   # labelled, found, false
    for path, faces in labels.items():
        src = path.split("/")[0]
        per_source[src][0] += len(faces)
        used = set()
        for who, cx, cy in faces:
            for i, r in enumerate(by_path.get(path, [])):
                if i not in used and r[1] <= cx <= r[1] + r[3] and r[2] <= cy <= r[2] + r[4]:
                    used.add(i)
                    detected += 1
                    per_source[src][1] += 1
                    matched.append((who, r[5]))
                    break
        extra = len(by_path.get(path, [])) - len(used)
        false += extra
        per_source[src][2] += extra
    clusters = defaultdict(Counter)
    for who, person in matched:
        clusters[person][who] += 1
    purity = sum(c.most_common(1)[0][1] for c in clusters.values()) / max(1, len(matched))
    tp = fp = fn = 0
    for (w1, p1), (w2, p2) in itertools.combinations(matched, 2):
        same_p, same_w = p1 == p2, w1 == w2
        tp += same_p and same_w
        fp += same_p and not same_w
        fn += same_w and not same_p
    prec = tp / (tp + fp) if tp + fp else 1.0
    rec = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"labelled": labelled, "detected": detected, "false": false,
            "recall": detected / max(1, labelled), "purity": purity, "pair_precision": prec,
            "pair_recall": rec, "pair_f1": f1, "people": len(clusters),
            "identities": len({w for w, _ in matched}), "per_source": dict(per_source)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="the five fixtures only (seconds)")
    ap.add_argument("--images", type=Path,
                    help="face_recognition-1.3.0/tests/test_images (the originals)")
    ap.add_argument("--database-url", help="a PostgreSQL to use (default: embedded)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from loupe import Library
    from loupe.faces import detect
    from loupe.faces.people import SAME_PERSON_DISTANCE

    try:
        model = detect.load_model()
    except detect.FacesUnavailable as exc:
        print(f"faces: {exc}")
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="loupe-faces-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    labels = build(tmp / "photos", smoke=args.smoke, originals=args.images)
    print(f"detector: {model.version}; same-person cut-off {SAME_PERSON_DISTANCE}")
    print(f"cores: {os.cpu_count()}; load average before: "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    with Library.open(tmp / "home", database_url=args.database_url, create=True) as lib:
        lib.ingest(tmp / "photos")
        t0, c0 = time.perf_counter(), time.process_time()
        summary = lib.faces()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        rows = lib.conn.execute(
            "SELECT a.rel_path, f.box_x, f.box_y, f.box_w, f.box_h, f.person_id "
            "FROM face f JOIN asset_file a ON a.asset_id = f.asset_id ORDER BY f.id").fetchall()
        skipped = lib.conn.execute("SELECT count(*) FROM face_scan WHERE skipped IS NOT NULL"
                                   ).fetchone()[0]
    m = score(rows, labels)
    print(f"pictures: {summary['scanned']} ({skipped} skipped by rule); "
          f"faces stored: {summary['faces']}; people: {summary['people']}")
    print(f"throughput: {summary['faces'] / seconds:.2f} faces/s, "
          f"{summary['scanned'] / seconds:.2f} pictures/s ({seconds:.1f} s for Library.faces)")
    print(f"CPU time of this process: {cpu:.1f} s = {summary['faces'] / cpu:.2f} faces per "
          f"CPU-second (the figure a busy machine does not lower; the database's own "
          f"time is not in it)")
    print("detection by source (labelled / found / false detections):")
    for src, (n, found, false) in sorted(m["per_source"].items()):
        print(f"  {src:<10} {n:>4} {found:>6} {false:>6}")
    print(f"detection recall: {m['detected']}/{m['labelled']} = {m['recall']:.3f}; "
          f"false detections: {m['false']}")
    print(f"clustering over {m['detected']} detected labelled faces "
          f"({m['identities']} identities, {m['people']} people): purity {m['purity']:.3f}, "
          f"pairwise precision {m['pair_precision']:.3f}, recall {m['pair_recall']:.3f}, "
          f"F1 {m['pair_f1']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
