"""Each metadata standard read from a real file by the real ExifTool (S6)."""

from __future__ import annotations

from pathlib import Path

from imaging import exiftool_write, make_image, write_sidecar

from loupe.ingest.exiftool_reader import ExifToolReader
from loupe.ingest.metadata import merge, normalize


def read(path: Path) -> dict:
    with ExifToolReader() as reader:
        return normalize(reader.read([str(path)])[str(path)])


def test_exif_fields(photos: Path):
    img = make_image(photos / "exif.jpg")
    exiftool_write(img, "-EXIF:Artist=Ana Lima", "-EXIF:Copyright=(c) 2024 Ana Lima",
                   "-EXIF:ImageDescription=Tram 28 climbing in Alfama",
                   "-EXIF:Orientation#=6", "-EXIF:DateTimeOriginal=2024:05:01 18:30:00")
    md = read(img)
    assert md == {
        "description": {"x-default": "Tram 28 climbing in Alfama"},
        "copyright": {"x-default": "(c) 2024 Ana Lima"},
        "creator": ["Ana Lima"],
        "date_taken": "2024:05:01 18:30:00",
        "orientation": 6,
    }


def test_iptc_iim_fields(photos: Path):
    img = make_image(photos / "iptc.jpg")
    exiftool_write(img, "-IPTC:CodedCharacterSet=UTF8", "-IPTC:ObjectName=Pastéis de nata",
                   "-IPTC:Caption-Abstract=Custard tarts on a tray",
                   "-IPTC:Keywords=pastry", "-IPTC:Keywords=Lisbon",
                   "-IPTC:By-line=Rui Costa", "-IPTC:City=Lisboa",
                   "-IPTC:Country-PrimaryLocationName=Portugal")
    md = read(img)
    assert md == {
        "title": {"x-default": "Pastéis de nata"},
        "description": {"x-default": "Custard tarts on a tray"},
        "keywords": ["pastry", "Lisbon"],
        "creator": ["Rui Costa"],
        "location": ["Lisboa", "Portugal"],
    }


def test_embedded_xmp_lang_alt(photos: Path):
    img = make_image(photos / "xmp.png", fmt="PNG")
    exiftool_write(img, "-XMP-dc:Title=Cheetah", "-XMP-dc:Title-fr=Guépard",
                   "-XMP-dc:Title-de-DE=Gepard", "-XMP-dc:Description=A cheetah resting",
                   "-XMP-dc:Subject=cat", "-XMP-dc:Subject=savanna",
                   "-XMP-dc:Creator=J. Doe", "-XMP-xmpRights:WebStatement=https://example.org/licence",
                   "-XMP-photoshop:City=Nairobi")
    md = read(img)
    assert md == {
        "title": {"x-default": "Cheetah", "fr": "Guépard", "de-DE": "Gepard"},
        "description": {"x-default": "A cheetah resting"},
        "keywords": ["cat", "savanna"],
        "creator": ["J. Doe"],
        "licence": "https://example.org/licence",
        "location": ["Nairobi"],
    }


def test_xmp_beats_iptc_beats_exif_for_title(photos: Path):
    img = make_image(photos / "prec.jpg")
    exiftool_write(img, "-EXIF:ImageDescription=exif words", "-IPTC:Caption-Abstract=iptc words",
                   "-XMP-dc:Description=xmp words")
    assert read(img)["description"] == {"x-default": "xmp words"}


def test_sidecar_precedence_field_by_field(photos: Path):
    img = make_image(photos / "side.jpg")
    exiftool_write(img, "-XMP-dc:Title=Embedded title", "-IPTC:Keywords=embedded-kw",
                   "-EXIF:Orientation#=3")
    sidecar = write_sidecar(img, "-XMP-dc:Title=Sidecar title", "-XMP-tiff:Orientation#=8")
    with ExifToolReader() as reader:
        raw = reader.read([str(img), str(sidecar)])
    md = merge(normalize(raw[str(img)]), normalize(raw[str(sidecar)]))
    # the sidecar's title wins; keywords it lacks come from the file; the
    # orientation of the stored pixels is the file's own
    assert md == {"title": {"x-default": "Sidecar title"}, "keywords": ["embedded-kw"],
                  "orientation": 3}


def test_unreadable_files_are_reported_not_raised(photos: Path):
    empty = photos / "empty.jpg"
    empty.write_bytes(b"")
    with ExifToolReader() as reader:
        raw = reader.read([str(empty), str(photos / "missing.jpg")])
    assert raw[str(empty)]["ExifTool:Error"] == "File is empty"
    assert "ExifTool:Error" in raw[str(photos / "missing.jpg")]
