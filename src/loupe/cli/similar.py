"""``loupe similar`` and ``duplicates``: pictures alike by their perceptual hash."""

from __future__ import annotations

import click

from ..terminal import term
from ..library import AssetNotFound
from .context import _Ctx, _emit_json, console
from .ingest import _hash_backfill
from ..similar.search import SimilarError


@click.command("similar")
@click.argument("asset_id", type=int, required=False)
@click.option("--file", "file", type=click.Path(dir_okay=False),
              help="Find assets like this image file (it is not ingested).")
@click.option("--radius", type=int, help="Hamming radius in bits of the 64-bit pHash, 0..15 "
                                         "(default 10, see docs/similar.md).")
@click.option("--limit", "-n", default=20, show_default=True, help="Results per page.")
@click.option("--offset", default=0, show_default=True, help="Skip this many results.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def similar_cmd(obj: _Ctx, asset_id: int | None, file: str | None, radius: int | None,
                limit: int, offset: int, as_json: bool) -> None:
    """Assets that look like ASSET_ID or like --file PATH: near-duplicates by
    perceptual hash (exact within the radius), fused with the image lane's
    nearest vectors when an image model is installed."""
    if (asset_id is None) == (file is None):
        raise click.UsageError("give either ASSET_ID or --file PATH")
    with obj.open() as lib:
        _hash_backfill(lib, as_json)
        try:
            res = lib.similar(asset_id, file=file, radius=radius, limit=limit, offset=offset)
        except (SimilarError, AssetNotFound) as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(res.as_dict())
        return
    noun = "asset" if res.total == 1 else "assets"
    console.print(f"{res.total:,} {noun} within {res.radius} bits of {res.query} "
                  f"({res.verdict})", highlight=False, markup=False)
    for n in res.notices:
        console.print(f"  note: {n}", highlight=False, markup=False)
    for h in res.hits:
        dist = f"{h.distance:>2} bits" if h.distance is not None else "  image"
        console.print(f"{h.rank:>4}. [{h.asset_id}] {dist}  {h.title}  {h.path}",
                      highlight=False, markup=False)


@click.command("duplicates")
@click.option("--radius", type=int, help="Hamming radius in bits, 0..15 (default 10).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def duplicates_cmd(obj: _Ctx, radius: int | None, as_json: bool) -> None:
    """List near-duplicate groups (perceptual hash within the radius) and
    exact-bytes groups (one content under several paths), with sizes."""
    with obj.open() as lib:
        _hash_backfill(lib, as_json)
        try:
            groups = lib.duplicates(radius=radius)
        except SimilarError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(groups)
        return
    near = [g for g in groups if g["kind"] == "near"]
    exact = [g for g in groups if g["kind"] == "exact"]
    # (only exact copies are copies: a near group's "rest" may be another
    # picture, to be looked at before anything is deleted)
    console.print(f"{len(near):,} near-duplicate groups, {len(exact):,} exact-bytes groups; "
                  f"{sum(g['reclaimable'] for g in exact):,} bytes held by exact copies, "
                  f"{sum(g['reclaimable'] for g in near):,} by the rest of near groups "
                  f"(look before deleting: a near group may join different pictures)",
                  highlight=False)
    for g in near:
        console.print(f"near ({len(g['assets'])} assets, {g['byte_size']:,} bytes)", highlight=False)
        for a in g["assets"]:
            d = "—" if a["distance"] is None else f"{a['distance']} bits"
            console.print(f"  [{a['asset_id']}] {a['width']}×{a['height']} {a['byte_size']:,} B "
                          f"{d}  {term(a['path'])}", highlight=False, markup=False)
    for g in exact:
        console.print(f"exact (asset {g['assets'][0]['asset_id']}, {len(g['paths'])} files, "
                      f"{g['byte_size']:,} bytes)", highlight=False)
        for p in g["paths"]:
            console.print(f"  {term(p)}", highlight=False, markup=False)
