"""Machine words from the pixels, without a database: colour
names of swatches, real pictures (scikit-image's sample images, the demo
library's scikit-image source), a transparent stamp, line art, and bad
pixels that must give words or a clear warning, never an exception."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import skimage
from PIL import Image, ImageDraw

from loupe.pixels import analyse, palette, shape
from loupe.pixels.words import machine_text

SKIMAGE_DATA = Path(os.path.dirname(skimage.__file__)) / "data"


@pytest.mark.parametrize("name", [n for n in palette.PALETTE])
def test_each_palette_name_names_its_swatch(name: str):
    hexes = palette.REFERENCES.get(name) or {"black": ("#000000",), "white": ("#FFFFFF",),
                                             "grey": ("#808080",)}[name]
    rgb = tuple(int(hexes[0][i:i + 2], 16) for i in (1, 3, 5))
    facts = analyse.analyse_image(Image.new("RGB", (300, 200), rgb))
    assert facts.error is None
    assert facts.colours == [name]
    assert facts.background_colour == name
    assert facts.cutout is False  # nothing stands apart from the background


def test_real_photos_are_photos_with_their_colours():
    coffee = analyse.analyse_file(str(SKIMAGE_DATA / "coffee.png"))
    assert (coffee.kind, coffee.background, coffee.cutout) == ("photo", "scene", False)
    assert coffee.colours[0] == "brown"
    cat = analyse.analyse_file(str(SKIMAGE_DATA / "chelsea.png"))
    assert cat.kind == "photo" and cat.colours[:2] == ["brown", "beige"]
    assert analyse.analyse_file(str(SKIMAGE_DATA / "astronaut.png")).kind == "photo"


def test_black_silhouette_on_white_is_a_cut_out_line_art():
    horse = analyse.analyse_file(str(SKIMAGE_DATA / "horse.png"))
    assert (horse.kind, horse.background, horse.cutout, horse.colours,
            horse.monochrome) == ("lineart", "white", True, ["black"], True)


def test_a_transparent_stamp_is_a_cut_out(tmp_path: Path):
    im = Image.new("RGBA", (400, 300), (0, 0, 0, 0))
    ImageDraw.Draw(im).ellipse((100, 60, 300, 240), fill=(220, 20, 60, 255))
    im.save(tmp_path / "stamp.png")
    facts = analyse.analyse_file(str(tmp_path / "stamp.png"))
    assert (facts.background, facts.cutout, facts.colours, facts.kind) == \
        ("transparent", True, ["red"], "clipart")
    words = machine_text(facts.as_row(), "en")
    assert "cut-out isolated" in words and "transparent background" in words
    assert "détouré" in machine_text(facts.as_row(), "fr")
    assert "freigestellt" in machine_text(facts.as_row(), "de")
    assert "recortado" in machine_text(facts.as_row(), "es")


def test_black_lines_on_white_are_line_art():
    im = Image.new("RGB", (600, 400), "white")
    d = ImageDraw.Draw(im)
    for i in range(0, 600, 60):
        d.line((i, 0, 600 - i, 400), fill="black", width=4)
    facts = analyse.analyse_image(im)
    assert (facts.kind, facts.monochrome, facts.background) == ("lineart", True, "white")
    assert "line drawing" in machine_text(facts.as_row(), "en")
    assert "black and white" in machine_text(facts.as_row(), "en")


def test_white_shapes_alone_on_a_transparent_ground_are_not_line_art(tmp_path: Path):
    """Rules version 5: line art needs dark strokes. A soft white swirl on a
    transparent ground (the demo's MATE abstract wallpapers) was "lineart"
    because its opaque pixels are all white and flat; it has no stroke."""
    im = Image.new("RGBA", (800, 500), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    for i, a in enumerate((60, 110, 160, 210, 255)):
        d.ellipse((100 + 40 * i, 150 + 10 * i, 700 - 40 * i, 350 - 10 * i),
                  outline=(255, 255, 255, a), width=12)
    im.save(tmp_path / "swirl.png")
    facts = analyse.analyse_file(str(tmp_path / "swirl.png"))
    assert facts.cues["dark"] == 0.0 and facts.cues["white"] == 1.0
    assert facts.kind == "clipart"
    assert "line drawing" not in machine_text(facts.as_row(), "en")
    # the same strokes in black on white stay line art
    ink = Image.new("RGB", (800, 500), "white")
    d = ImageDraw.Draw(ink)
    for i in range(5):
        d.ellipse((100 + 40 * i, 150 + 10 * i, 700 - 40 * i, 350 - 10 * i), outline="black",
                  width=4)
    assert analyse.analyse_image(ink).kind == "lineart"


def test_shape_and_size_words():
    assert shape.orientation(3000, 1000) == "panorama"
    assert shape.orientation(1000, 1030) == "square"
    assert shape.orientation(800, 1200) == "portrait"
    assert shape.orientation(1200, 800) == "landscape"
    assert [shape.size_class(*s) for s in [(128, 64), (600, 400), (1600, 1200), (2560, 1600)]] \
        == ["icon", "small", "medium", "large"]


def _bad_pixels(folder: Path) -> dict[str, Path]:
    out = {}
    Image.new("RGB", (1, 1), (255, 0, 0)).save(out.setdefault("one", folder / "one.png"))
    a = (np.linspace(0, 65535, 200 * 100).reshape(100, 200)).astype(np.uint16)
    Image.fromarray(a).save(out.setdefault("sixteen", folder / "sixteen.png"))
    Image.new("CMYK", (240, 160), (0, 255, 255, 0)).save(out.setdefault("cmyk", folder / "cmyk.jpg"))
    p = Image.new("P", (200, 200), 0)
    p.putpalette([0, 0, 0, 0, 0, 255] + [0] * 762)
    ImageDraw.Draw(p).rectangle((50, 50, 150, 150), fill=1)
    p.save(out.setdefault("palette_alpha", folder / "palette_alpha.png"), transparency=0)
    frames = [Image.new("RGB", (200, 200), c) for c in ((255, 0, 0), (0, 0, 255))]
    frames[0].save(out.setdefault("animated", folder / "animated.gif"), save_all=True,
                   append_images=frames[1:], duration=100, loop=0)
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    out["broken"] = folder / "broken.png"
    return out


def test_bad_pixels_give_words_or_a_clear_warning(tmp_path: Path):
    files = _bad_pixels(tmp_path)
    got = {k: analyse.analyse_file(str(p)) for k, p in files.items()}
    assert got["one"].error is None and got["one"].colours == ["red"]
    assert got["one"].size_class == "icon"
    assert got["sixteen"].error is None and got["sixteen"].monochrome is True
    assert got["cmyk"].error is None and got["cmyk"].colours == ["red"]
    assert got["palette_alpha"].error is None
    assert (got["palette_alpha"].background, got["palette_alpha"].cutout,
            got["palette_alpha"].colours) == ("transparent", True, ["blue"])
    assert got["animated"].error is None and got["animated"].colours == ["red"]  # first frame
    assert got["broken"].error.startswith("no machine words: UnidentifiedImageError")
    assert machine_text(got["broken"].as_row(), "en") == ""


def test_a_large_16_bit_picture_is_shrunk_before_its_float_conversion(tmp_path):
    """A 36 MP 16-bit greyscale PNG (82 KB) cost the
    machine-words step about 900 MiB (float64 at full size); it is shrunk
    first now. Peak memory measured in a fresh process (ru_maxrss)."""
    import subprocess
    import sys

    import numpy as np
    from PIL import Image

    a = (np.arange(6000 * 6000, dtype=np.uint32) % 65535).astype(np.uint16).reshape(6000, 6000)
    Image.fromarray(a).save(tmp_path / "g16.png")
    del a
    code = ("import resource; from loupe.pixels.analyse import analyse_file; "
            "r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
            f"f = analyse_file({str(tmp_path / 'g16.png')!r}); "
            "print(f.error, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0) // 1024)")
    err, growth_mib = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                     check=True).stdout.split()
    assert err == "None"
    assert int(growth_mib) < 300   # measured: 102 MiB after, 892 MiB before
