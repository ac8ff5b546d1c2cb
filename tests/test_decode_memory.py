"""What decoding a picture and every later stage (inspect, perceptual hashes,
analysis) really allocate, measured in a fresh process, stays within what the
pixel bound counts for every Pillow mode; and the hashes of every mode and
orientation are those of the RGB path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

import loupe

SRC = str(Path(loupe.__file__).resolve().parents[1])


# --- what the decode and every later stage really allocate ------------

_STAGE_PEAK = """
import gc, json, sys, threading, time
from pathlib import Path
import psutil
from PIL import Image
from loupe.ingest import image, perceptual
from loupe.pixels import analyse
path, tmp = sys.argv[1], Path(sys.argv[2])
tiny = tmp / "tiny.png"
Image.new("RGB", (64, 64)).save(tiny)      # warm: every module and decoder loaded
image.inspect_image(str(tiny), tmp / "tiny.webp")
perceptual.hash_file(str(tiny)); analyse.analyse_file(str(tiny))
proc = psutil.Process()
out = {}
for stage in ("decode", "inspect", "hash", "analyse"):
    gc.collect()
    base = proc.memory_info().rss
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.001)

    t = threading.Thread(target=sample)
    t.start()
    if stage == "decode":
        with Image.open(path) as im:
            im.load()
            peak[0] = max(peak[0], proc.memory_info().rss)
            pixels = im.size[0] * im.size[1]
    elif stage == "inspect":
        image.inspect_image(path, tmp / f"{stage}.webp", max_pixels=10**9)
    elif stage == "hash":
        assert not isinstance(perceptual.hash_file(path), str)
    else:
        assert analyse.analyse_file(path).error is None
    done.set()
    t.join()
    out[stage] = round((peak[0] - base) / pixels, 2)
print(json.dumps(out))
"""


@pytest.mark.parametrize("mode, fill, decoded", [("LA", (90, 255), 4), ("I;16", 30000, 2)])
def test_no_stage_allocates_more_than_the_bound_counts(tmp_path, mode, fill, decoded):
    """The bound counted LA as 2 bytes a pixel and RGB as 3,
    but Pillow stores every multi-band mode at 4 (I;16 at 2), and the hash
    stage converted to RGB beside exif_transpose's copy: a 219 KB 100 MP LA
    PNG grew the server by 1.14 GB. Tiny 16 MP PNGs (LA, I;16), each stage
    in a fresh process, peak RSS sampled every ms: the decode takes
    MODE_BYTES, and no later stage more than MODE_BYTES + STAGE_BYTES a pixel
    (main 4090c2c, the same sampling on 25 MP PNGs: LA 12.2 bytes a pixel
    in the thumbnail stage and 12.0 in the hash stage, I;16 7.9 and 7.9)."""
    import json

    from loupe.ingest.image import MODE_BYTES, STAGE_BYTES, working_bytes

    im = Image.new(mode, (4000, 4000), fill)
    im.putpixel((7, 7), (0, 255) if mode == "LA" else 0)
    path = tmp_path / f"big-{mode.replace(';', '')}.png"
    im.save(path, compress_level=9)
    del im
    assert path.stat().st_size < 100_000
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", _STAGE_PEAK, str(path), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    peaks = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\nD6 {mode}: bytes a pixel at peak per stage {peaks}")
    assert MODE_BYTES[mode] == decoded
    assert decoded - 0.2 <= peaks["decode"] <= decoded + 0.3, peaks
    for stage in ("inspect", "hash", "analyse"):
        assert peaks[stage] <= decoded + STAGE_BYTES + 0.3, (stage, peaks)
    assert working_bytes(mode, 4000, 4000) == 16_000_000 * (decoded + STAGE_BYTES)


def test_the_hashes_are_those_of_the_rgb_path_for_every_mode_and_orientation():
    """The hash stage converts to greyscale first instead of to RGB: the
    pHash and dHash are bit for bit those of imagehash on
    ``exif_transpose(im).convert("RGB")`` (the code before), for every mode
    of DIRECT_GREY, YCbCr, and EXIF orientations 1, 6 and 7."""
    import imagehash
    import numpy as np
    from PIL import ImageOps

    from loupe.ingest.perceptual import DIRECT_GREY, hash_image, to_signed

    rng = np.random.default_rng(7)
    rgb = Image.fromarray(rng.integers(0, 256, (90, 120, 3), dtype=np.uint8), "RGB")
    for mode in sorted(DIRECT_GREY | {"YCbCr"}):
        if mode in ("I;16L", "I;16N"):
            continue     # aliases of I;16 on this machine
        if mode in ("I;16", "I;16B"):
            src = Image.frombytes(mode, (120, 90), rng.integers(0, 65536, 90 * 120).astype(
                "<u2" if mode == "I;16" else ">u2").tobytes())
        elif mode == "I":
            src = Image.fromarray(rng.integers(-500, 70_000, (90, 120), dtype=np.int32), "I")
        elif mode == "F":
            src = Image.fromarray((rng.random((90, 120)) * 400 - 50).astype(np.float32), "F")
        elif mode in ("PA",):
            src = rgb.convert("P").convert("PA")
        else:
            src = rgb.convert(mode)
        assert src.mode == mode
        for orientation in (1, 6, 7):
            exif = Image.Exif()
            exif[0x0112] = orientation

            def tagged() -> Image.Image:
                im = src.copy()
                im.info["exif"] = exif.tobytes()    # what getexif() reads
                return im
            new = hash_image(tagged())
            frame = ImageOps.exif_transpose(tagged())
            assert frame.size == ((90, 120) if orientation != 1 else (120, 90))
            if frame.mode not in ("RGB", "L"):
                frame = frame.convert("RGB")
            old = (to_signed(int(str(imagehash.phash(frame, hash_size=8)), 16)),
                   to_signed(int(str(imagehash.dhash(frame, hash_size=8)), 16)))
            assert (new.phash, new.dhash) == old, (mode, orientation)
