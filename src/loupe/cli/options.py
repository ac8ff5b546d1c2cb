"""Shared click option decorators: the readable filter options of
``loupe search`` and the filter tree they build."""

from __future__ import annotations

import click

from ..filters.options import tree_from_options


def _filter_options(f):
    """The readable filter options of ``loupe search``."""
    opts = [
        click.option("--where", metavar="JSON", help="A filter tree as JSON (docs/filters.md), "
                     "AND-ed with the options below."),
        click.option("--creator", multiple=True, help="Creator (case-insensitive, exact); "
                     "repeat: any of them."),
        click.option("--keyword", multiple=True, help="Keyword (case-insensitive, exact); "
                     "repeat: any of them."),
        click.option("--collection", multiple=True, metavar="COLLECTION",
                     help="In this collection (sub-collections included; path, id:N or full "
                          "path); repeat: their union."),
        click.option("--all-collections", is_flag=True,
                     help="With several --collection: in every one of them (intersection)."),
        click.option("--captured", metavar="WHEN", help="Capture date: 2019, 2019-05, "
                     "2019-05-01, 2018..2019, last month, this year, last 30 days (UTC, "
                     "[from, to))."),
        click.option("--added", metavar="WHEN", help="Date added, as --captured."),
        click.option("--format", "format_", multiple=True, help="File format: jpg, png, webp, "
                     "tiff, gif, heic, avif, jxl, a RAW (cr2, cr3, nef, arw, dng, raf, orf, "
                     "rw2) or a video (mp4, mov, m4v, mkv, webm, avi)."),
        click.option("--media-type", multiple=True, help="Media type, e.g. image/png."),
        click.option("--orientation", multiple=True,
                     type=click.Choice(["portrait", "landscape", "square", "panorama"]),
                     help="As displayed."),
        click.option("--country", multiple=True, help="Country (IPTC/XMP)."),
        click.option("--location", multiple=True, help="City, sub-location or state."),
        click.option("--city", multiple=True, help="The place of the coordinates (GeoNames, "
                     "offline; docs/formats.md)."),
        click.option("--near", metavar="LAT,LON", help="Taken within --within km of this "
                     "point (degrees)."),
        click.option("--within", metavar="KM", help="The distance of --near, in km "
                     "(default 1)."),
        click.option("--bbox", metavar="S,W,N,E", help="Taken inside this box (degrees; west "
                     "above east crosses the 180th meridian)."),
        click.option("--rating", metavar="STARS", help="Rating: 4+ (4 or more), 3, 2-4, "
                     "rejected."),
        click.option("--label", multiple=True, help="Colour label (XMP Label: Red, ...)."),
        click.option("--camera", multiple=True, help='Camera, e.g. "Canon EOS R5".'),
        click.option("--make", multiple=True, help="Camera maker, e.g. Canon."),
        click.option("--lens", multiple=True, help="Lens model."),
        click.option("--kind", multiple=True, help="Kind of picture (machine words): photo, "
                     "illustration, clipart, lineart, screenshot, document, icon."),
        click.option("--colour", multiple=True, help="A dominant colour (machine words)."),
        click.option("--background", multiple=True, help="transparent, white, black, uniform, "
                     "scene (machine words)."),
        click.option("--cutout/--no-cutout", default=None, help="A cut-out (or not)."),
        click.option("--monochrome/--no-monochrome", default=None, help="Black and white / "
                     "greyscale pixels (or in colour) (machine words)."),
        click.option("--person", multiple=True, help="A person's name (case-insensitive, "
                     "exact): assets with a confirmed face of that person (docs/people.md); "
                     "repeat: any of them."),
        click.option("--embargoed", is_flag=True, help="Under embargo now (owner and admins)."),
        click.option("--expired", is_flag=True, help="Usage rights expired (owner and admins)."),
        click.option("--expiring-before", metavar="YYYY-MM-DD",
                     help="Usage rights still valid, expiring before this date."),
        click.option("--facets", is_flag=True, help="Also show the top values per facet of the "
                     "whole result, with counts."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _filter_tree(kw: dict):
    """The filter tree of ``loupe search``'s options (None: no filter)."""
    opts = {"creator": kw.pop("creator"), "keyword": kw.pop("keyword"),
            "collection": kw.pop("collection"), "format": kw.pop("format_"),
            "media_type": kw.pop("media_type"), "orientation": kw.pop("orientation"),
            "country": kw.pop("country"), "location": kw.pop("location"),
            "city": kw.pop("city"), "near": kw.pop("near"), "within": kw.pop("within"),
            "bbox": kw.pop("bbox"), "rating": kw.pop("rating"), "label": kw.pop("label"),
            "camera": kw.pop("camera"), "make": kw.pop("make"), "lens": kw.pop("lens"),
            "kind": kw.pop("kind"), "colour": kw.pop("colour"),
            "background": kw.pop("background"), "person": kw.pop("person"),
            "captured": kw.pop("captured"),
            "added": kw.pop("added"), "cutout": kw.pop("cutout"),
            "monochrome": kw.pop("monochrome"),
            "embargoed": kw.pop("embargoed"), "expired": kw.pop("expired"),
            "expiring_before": kw.pop("expiring_before")}
    return tree_from_options(opts, where=kw.pop("where"),
                             all_collections=kw.pop("all_collections"))
