"""Search by image (X1): hash neighbours, near-duplicate groups, backfill.

The perceptual hash of an image (``loupe.ingest.perceptual``) is compared
with every stored one by multi-index hashing (``loupe.similar.queries``):
exact within the radius, so a result that is not cut short by unhashed
assets is ``complete``. Near-duplicate groups are formed around a leader
(:func:`_leader_groups`): the largest file not yet grouped, with every
ungrouped readable asset within the radius of it, so each member is within
the radius of its group's first (a group does not chain: A~B and B~C no
longer put A and C together when they are further apart).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from ..assets.view import AssetNotFound, NoVerifiedFile, open_asset_bytes
from ..ingest import perceptual
from ..ingest.image import DEFAULT_MAX_PIXELS, FORMATS, TRANSPOSE, exif_orientation, shrunk
from ..ingest.jpegcheck import scan_count_problem
from ..models import registry
from ..models.embedders import ModelError
from ..queries import ASSET, HIT_DETAILS
from ..search.context import SearchContext
from ..vector import queries as vq
from ..vector.waiting import waiting_notice
from . import queries as q

#: Default Hamming radius (bits of 64) for "similar" and "duplicates", chosen
#: from the transform table in docs/similar.md (benchmarks/similar.py
#: --transforms, 463 real photos, 106,953 pairs of different photos): at 10
#: bits JPEG q60, 50% resize and grayscale are found for every original and a
#: text watermark for 96.8%, while 3 in 100,000 pairs of different photos fall
#: within it (about 3 false hits per query in a 100k library). 12 bits would
#: find more crops (64% against 42%) and rotations (85% against 69%) at six
#: times the false positives.
DEFAULT_RADIUS = 10

#: The fewest set bits of a pHash that says something about a picture's
#: shape. pHash sets a bit for each of the 64 lowest DCT frequencies above
#: their median (imagehash.phash), so a picture whose coefficients differ has
#: exactly 32 bits set (1,842 of the demo's 1,852). A flat picture has every
#: coefficient equal: hash 0; a smooth gradient sets only the DC term's bit.
#: Such hashes are equal for a white square, a black one and a blue sky, so
#: `loupe duplicates` does not compare them: on the demo library, 69 pictures
#: (64 of hash 0, 5 of one bit) had chained 81 unrelated flat or transparent
#: images into one near-duplicate group; without
#: them, 103 of 2,794 pairs remain and the largest group has 12 members.
MIN_HASH_BITS = 2
#: Assets hashed per transaction by the backfill.
BACKFILL_BATCH = 64


class SimilarError(ValueError):
    """A bad request to search by image (radius out of range, not an image)."""


class NotAnImage(SimilarError):
    """The file given to search by image is not an image Loupe can read."""


class PictureTooLarge(SimilarError):
    """The picture to search by has more pixels than may be decoded for it
    (read from its header, before any decoding)."""


#: A picture to search by is decoded once. Formats without reduced decoding
#: (PNG, GIF, WebP, TIFF, HEIC) are decoded in full, so they may have at most
#: this many pixels (25 MP: about 100 MB as RGBA); a JPEG is decoded by DCT
#: scaling to about 512 px (Pillow's ``draft``: 1/8 of a 100 MP frame is 1.6 MP)
#: and is bound only by the caller's ``max_pixels``.
QUERY_FULL_DECODE_PIXELS = 25_000_000
#: The decoded picture handed to the image lane is reduced to this side.
QUERY_IMAGE_SIDE = 1024


def mih_bits(radius: int) -> int:
    """Bits a probed sub-hash may differ in for ``radius`` (pigeonhole over 4
    sub-hashes: ``floor(radius / 4)``).

    Raises:
        SimilarError: ``radius`` outside ``0..MAX_RADIUS``.
    """
    if not isinstance(radius, int) or not 0 <= radius <= q.MAX_RADIUS:
        raise SimilarError(f"radius {radius!r} is out of range: it must be 0..{q.MAX_RADIUS} "
                           f"bits of the 64-bit perceptual hash")
    return radius // 4


@dataclass
class HashHit:
    """An asset within the radius: Hamming ``distance`` (bits, 0..64)."""

    asset_id: int
    distance: int


def hash_neighbours(conn: psycopg.Connection, tenant_id: int, phash: int, *, radius: int,
                    viewer: dict[str, Any], limit: int, offset: int = 0,
                    exclude: int | None = None) -> tuple[list[HashHit], int]:
    """Readable assets whose pHash is within ``radius`` bits of ``phash``,
    nearest first (ties by asset id), one page; and how many there are in all.

    Raises:
        SimilarError: radius out of range.
    """
    bits = mih_bits(radius)
    rows = conn.execute(q.SIMILAR, {
        "tenant_id": tenant_id, "hash": phash, "bits": bits, "radius": radius,
        "exclude": exclude, "limit": limit, "offset": offset, **viewer}).fetchall()
    total = rows[0][2] if rows else 0
    if not rows and offset > 0:  # a page past the end still tells the total
        extra = conn.execute(q.SIMILAR, {
            "tenant_id": tenant_id, "hash": phash, "bits": bits, "radius": radius,
            "exclude": exclude, "limit": 1, "offset": 0, **viewer}).fetchall()
        total = extra[0][2] if extra else 0
    return [HashHit(r[0], r[1]) for r in rows], total


@dataclass
class GroupMember:
    """One asset of a near-duplicate group: bytes, pixels, number of files
    holding its bytes, primary path, and its distance to the group's first asset
    (None when the two are only linked through other members)."""

    asset_id: int
    byte_size: int
    width: int
    height: int
    files: int
    path: str
    distance: int | None


@dataclass
class DuplicateGroup:
    """Near-duplicate assets (``kind`` ``near``, largest file first) or the
    files of one asset that hold the same bytes (``kind`` ``exact``)."""

    kind: str
    assets: list[GroupMember] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    byte_size: int = 0          # bytes of the whole group (every file)
    reclaimable: int = 0        # bytes freed by keeping only the first


def _leader_groups(pairs: list[tuple[int, int, int]], order: list[int]) -> list[list[int]]:
    """Near-duplicate groups by leader clustering (J. A. Hartigan, *Clustering
    Algorithms*, Wiley 1975, ch. 3, "the leader algorithm"), with the
    largest file leading: each asset of ``order`` (every asset of a pair,
    largest file first) not yet grouped leads a group of itself and every
    asset not yet grouped within the radius of it (``pairs``: (a, b,
    distance), each pair once). A leader with no such asset forms no group.
    Each group lists its leader first, then the others by distance to it and
    id.

    Why not connected components: single links chained a
    phone clip-art, a shark photo and a 32x32 bat into one "near-duplicate"
    group on the demo library, a shark at no stated distance from the
    group's first. A group is now a set to review against
    one picture: every member is within the radius of it.
    """
    near: dict[int, dict[int, int]] = {}
    for a, b, d in pairs:
        near.setdefault(a, {})[b] = d
        near.setdefault(b, {})[a] = d
    grouped: set[int] = set()
    groups = []
    for leader in order:
        if leader in grouped:
            continue
        rest = sorted((d, x) for x, d in near.get(leader, {}).items() if x not in grouped)
        if not rest:
            continue
        group = [leader] + [x for _, x in rest]
        grouped.update(group)
        groups.append(group)
    return groups


def duplicates(conn: psycopg.Connection, tenant_id: int, viewer: Any, *,
               radius: int | None = None) -> list[dict[str, Any]]:
    """What :meth:`loupe.Library.duplicates` does: missing hashes computed
    first (:func:`backfill`), then :func:`duplicate_groups` of the assets
    ``viewer`` (a :class:`loupe.access.viewer.Viewer`) may read, within
    ``radius`` (None: :data:`DEFAULT_RADIUS`), as dicts with byte sizes.

    Raises:
        SimilarError: radius outside 0..15.
    """
    from dataclasses import asdict

    backfill(conn, tenant_id)
    return [asdict(g) for g in duplicate_groups(
        conn, tenant_id, radius=DEFAULT_RADIUS if radius is None else radius,
        viewer=viewer.params())]


def duplicate_groups(conn: psycopg.Connection, tenant_id: int, *, radius: int,
                     viewer: dict[str, Any]) -> list[DuplicateGroup]:
    """Near-duplicate groups (readable assets within ``radius`` of another)
    then exact-bytes groups (a readable asset with several files), each
    with sizes. Only readable assets are seen, compared or counted (P1); an
    asset whose pHash has fewer than :data:`MIN_HASH_BITS` bits set (a flat
    or smooth picture) is in no near group.

    Raises:
        SimilarError: radius out of range.
    """
    bits = mih_bits(radius)
    pairs = [tuple(r) for r in conn.execute(q.NEAR_PAIRS, {
        "tenant_id": tenant_id, "bits": bits, "radius": radius, "min_bits": MIN_HASH_BITS,
        **viewer})]
    dist = {(a, b): d for a, b, d in pairs}
    ids = sorted({x for a, b, _ in pairs for x in (a, b)})
    facts = {r[0]: r for r in conn.execute(q.ASSET_FACTS, {"tenant_id": tenant_id, "ids": ids,
                                                             **viewer})}
    order = sorted(ids, key=lambda x: (-facts[x][1], x))   # largest file first
    out: list[DuplicateGroup] = []
    for members in _leader_groups(pairs, order):
        first = members[0]
        g = DuplicateGroup("near")
        for x in members:
            _, size, w, h, files, path = facts[x]
            d = 0 if x == first else dist[(min(first, x), max(first, x))]
            g.assets.append(GroupMember(x, size, w, h, files, path, d))
            g.byte_size += size * files
        g.reclaimable = g.byte_size - facts[first][1]
        out.append(g)
    out.sort(key=lambda g: g.assets[0].asset_id)   # (as before: by the leader's id)
    for asset_id, size, paths in conn.execute(q.EXACT_GROUPS, {"tenant_id": tenant_id, **viewer}):
        out.append(DuplicateGroup("exact", [], list(paths), size * len(paths),
                                  size * (len(paths) - 1)))
        out[-1].assets.append(GroupMember(asset_id, size, 0, 0, len(paths), paths[0], 0))
    return out


def _verified_hash(conn: psycopg.Connection, asset_id: int) -> "perceptual.PerceptualHashes | str":
    """The perceptual hashes of asset ``asset_id`` read from a file that
    still holds its bytes (:func:`loupe.assets.view.open_asset_bytes`: a file swapped
    since the ingest is never read), or the reason there are none."""
    try:
        fh, path = open_asset_bytes(conn, asset_id)
    except NoVerifiedFile as exc:
        return f"no perceptual hash: {exc}"
    with fh:
        return perceptual.hash_file(path, fh)


def backfill(conn: psycopg.Connection, tenant_id: int, *,
             progress: Callable[[int, int], None] | None = None,
             limit: int | None = None) -> dict[str, int]:
    """Hash assets that have no hash row yet (ingested before migration
    0015), at most ``limit`` of them; ``progress(done, total)`` after each.
    A file that cannot be hashed gets a row with its reason, not a retry.

    Returns: ``{"hashed", "failed", "pending"}`` (pending: still left).
    """
    total = conn.execute(q.HASH_COVERAGE, {"tenant_id": tenant_id, "see_all": True,
                                           "principals": []}).fetchone()[0]
    todo = total if limit is None else min(total, limit)
    done = hashed = failed = 0
    after = 0
    if progress:
        progress(0, todo)
    while done < todo:
        rows = conn.execute(q.PENDING, {"tenant_id": tenant_id, "after": after,
                                        "batch": min(BACKFILL_BATCH, todo - done)}).fetchall()
        if not rows:
            break
        results = [(asset_id, _verified_hash(conn, asset_id)) for asset_id, _path in rows]
        with conn.transaction():
            for asset_id, h in results:
                perceptual.store(conn, tenant_id, asset_id, h)
                if isinstance(h, str):
                    failed += 1
                else:
                    hashed += 1
        after = rows[-1][0]
        done += len(rows)
        if progress:
            progress(done, todo)
    return {"hashed": hashed, "failed": failed, "pending": total - done}


#: Nearest image vectors the image lane contributes to "more like this".
IMAGE_LANE_CAP = 50
#: RRF constant (Cormack, Clarke, Büttcher, SIGIR 2009), as in loupe.fusion.
RRF_K = 60


@dataclass
class SimilarHit:
    """One asset like the query: ``rank`` 1-based over the whole result;
    ``distance`` its pHash Hamming distance (None: found by the image lane
    only); ``image_distance`` its cosine distance in the image lane (None:
    not among that lane's nearest); ``score`` the RRF score when the lanes are
    fused, else None; ``title`` and ``path`` of its primary file."""

    rank: int
    asset_id: int
    distance: int | None
    image_distance: float | None = None
    score: float | None = None
    title: str = ""
    path: str = ""


@dataclass
class SimilarResult:
    """Assets like a picture (an asset, or a file that is not ingested).

    ``total`` counts readable assets within ``radius`` bits (exact: MIH
    verifies every candidate). ``verdict``: ``complete`` — every readable
    asset within the radius was compared and is reachable by paging;
    ``unknown`` — some readable assets have no hash yet (``notices`` say how
    many and how to hash them). ``lanes``: ``hash``, plus ``image`` when the
    image lane's nearest vectors are fused in (approximate, HNSW; they add
    rows beyond ``total`` and do not change the verdict)."""

    query: str
    radius: int
    total: int
    verdict: str
    limit: int
    offset: int
    hits: list[SimilarHit] = field(default_factory=list)
    lanes: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)

    def sentence(self) -> str:
        """The result in one line, the words ``loupe similar`` prints and
        the web app shows: ``3 assets within 10 bits of file a.jpg (complete)``."""
        noun = "asset" if self.total == 1 else "assets"
        return f"{self.total:,} {noun} within {self.radius} bits of {self.query} ({self.verdict})"


def fuse(hash_hits: list[HashHit], image_hits: list[tuple[int, float]]) -> list[SimilarHit]:
    """Reciprocal-rank fusion of the hash ranking (distance, asset id) and the
    image lane's (cosine distance): score = sum of 1 / (RRF_K + rank) over
    the lanes holding the asset (Cormack et al., SIGIR 2009). Assets within
    the radius come first (a near-duplicate outranks a look-alike), then by
    score, then asset id."""
    rows: dict[int, SimilarHit] = {}
    for i, h in enumerate(hash_hits, 1):
        rows[h.asset_id] = SimilarHit(0, h.asset_id, h.distance, None, 1.0 / (RRF_K + i))
    for i, (asset_id, d) in enumerate(image_hits, 1):
        hit = rows.setdefault(asset_id, SimilarHit(0, asset_id, None, None, 0.0))
        hit.image_distance = float(d)
        hit.score = (hit.score or 0.0) + 1.0 / (RRF_K + i)
    ordered = sorted(rows.values(), key=lambda h: (h.distance is None, -(h.score or 0.0),
                                                   h.asset_id))
    for i, h in enumerate(ordered, 1):
        h.rank = i
    return ordered


#: Most assets a search by image hashes on the fly before answering (assets
#: ingested before migration 0015); past it the answer says how many wait.
INLINE_BACKFILL = 500


def _file_hash(path: str, max_pixels: int,
               full_decode_pixels: int = QUERY_FULL_DECODE_PIXELS) -> tuple[int, Any]:
    """The pHash of a file that is not ingested, and the decoded image (at
    most :data:`QUERY_IMAGE_SIDE` px, for the image lane).

    Every bound is checked from the header before a pixel is decoded:
    width x height at most ``max_pixels``, and at most ``full_decode_pixels``
    unless the format is JPEG (decoded at reduced scale). Then the picture
    is decoded **once** (before: three full decodes of up to ``max_pixels``).

    Raises:
        NotAnImage: empty, not an image, an unsupported format, truncated or
            corrupt (the reason names the file).
        PictureTooLarge: over a pixel bound (the reason names the pixel
            count and the bound).
    """
    from PIL import Image, UnidentifiedImageError

    try:
        if os.path.getsize(path) == 0:
            raise NotAnImage(f"{path}: empty file (0 bytes)")
        im = Image.open(path)
    except Image.DecompressionBombError as exc:
        raise PictureTooLarge(f"{path}: refused as a decompression bomb: {exc}") from exc
    except UnidentifiedImageError as exc:
        raise NotAnImage(f"{path}: not an image: no image format recognised in its bytes") from exc
    except (OSError, ValueError, SyntaxError) as exc:
        raise NotAnImage(f"{path}: cannot read the image: {exc}") from exc
    with im:
        fmt = im.format or "?"
        if fmt not in FORMATS:
            raise NotAnImage(f"{path}: unsupported image format {fmt}")
        width, height = im.size
        if width * height <= 0:
            raise NotAnImage(f"{path}: invalid dimensions {width}x{height}")
        # a RAW demosaiced works on its whole sensor (loupe.ingest.formats)
        pixels = max(width * height, int(im.info.get("decode_pixels") or 0))
        size = (f"{width}x{height} = {pixels:,}" if pixels == width * height else
                f"{width}x{height} from a sensor of {pixels:,}")
        if pixels > max_pixels:
            raise PictureTooLarge(f"{path}: {size} pixels is over the "
                                  f"limit of {max_pixels:,} pixels for a picture to search by")
        if fmt in ("JPEG", "MPO"):
            # scans counted before decoding
            fd = os.open(path, os.O_RDONLY)
            try:
                why = scan_count_problem(fd)
            finally:
                os.close(fd)
            if why:
                raise PictureTooLarge(f"{path}: {why}")
        if fmt != "JPEG" and pixels > full_decode_pixels:
            raise PictureTooLarge(
                f"{path}: {size} pixels is over the limit of "
                f"{full_decode_pixels:,} pixels for a {fmt} picture to search by (decoded in "
                f"full; a JPEG is decoded at reduced scale)")
        try:
            if fmt == "JPEG":
                im.draft("RGB", (512, 512))
            im.load()
            h = perceptual.hash_image(im)
            # shrunk, then turned and converted: no full-size copy
            frame = shrunk(im, QUERY_IMAGE_SIDE)
            method = TRANSPOSE.get(exif_orientation(im))
            if method is not None:
                frame = frame.transpose(method)
            elif frame is im:
                frame = im.copy()     # the thumbnail below works in place
            if frame.mode not in ("RGB", "L"):
                frame = frame.convert("RGB")
            frame.thumbnail((QUERY_IMAGE_SIDE, QUERY_IMAGE_SIDE))
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            kind = "truncated" if "truncat" in str(exc).lower() else "corrupt"
            raise NotAnImage(f"{path}: {kind} image: {exc}") from exc
    return h.phash, frame


def find_similar(lib: SearchContext, asset_id: int | None = None, *, file: str | os.PathLike | None = None,
                 radius: int | None = DEFAULT_RADIUS, limit: int = 20, offset: int = 0,
                 max_pixels: int | None = None,
                 full_decode_pixels: int | None = QUERY_FULL_DECODE_PIXELS) -> SimilarResult:
    """Assets that look like asset ``asset_id`` or like the image ``file``
    (not ingested), as ``lib``'s viewer may see them (what
    :meth:`loupe.Library.similar` does): pHash within ``radius`` bits
    (None: :data:`DEFAULT_RADIUS`), nearest first, fused with the image lane
    when one is installed; ``limit`` results from ``offset`` on. A file is
    read by :func:`_file_hash` under ``max_pixels`` and
    ``full_decode_pixels`` (None: :data:`QUERY_FULL_DECODE_PIXELS`, 25 MP).

    Raises:
        loupe.assets.view.AssetNotFound: no such asset, or one the viewer may
            not read (the two are not told apart).
        SimilarError: ``file`` not an image Loupe can read, over
            ``max_pixels`` or (unless a JPEG) ``full_decode_pixels``; radius
            outside 0..15; both or neither of an asset and a file; a bad
            limit/offset.
    """
    radius = DEFAULT_RADIUS if radius is None else radius
    full_decode_pixels = full_decode_pixels or QUERY_FULL_DECODE_PIXELS
    file = str(file) if file is not None else None
    if (asset_id is None) == (file is None):
        raise SimilarError("give either an asset id or a file, not both or neither")
    if limit < 1 or offset < 0:
        raise SimilarError(f"limit must be >= 1 and offset >= 0 (got {limit}, {offset})")
    mih_bits(radius)
    conn, tenant_id, viewer = lib.conn, lib.tenant_id, lib.viewer.params()
    notices: list[str] = []
    coverage = conn.execute(q.HASH_COVERAGE, {"tenant_id": tenant_id, **viewer}).fetchone()
    if 0 < coverage[0] <= INLINE_BACKFILL:
        backfill(conn, tenant_id)
        coverage = conn.execute(q.HASH_COVERAGE, {"tenant_id": tenant_id, **viewer}).fetchone()
    image = None
    if asset_id is not None:
        if conn.execute(ASSET, {"tenant_id": tenant_id, "asset_id": asset_id,
                                **viewer}).fetchone() is None:
            # the same answer for "does not exist" and "not yours to see" (P1)
            raise AssetNotFound(f"no asset {asset_id} in tenant {lib.tenant!r}")
        row = conn.execute(q.ASSET_HASH, {"asset_id": asset_id, "tenant_id": tenant_id}).fetchone()
        if row is None or row[0] is None:
            raise SimilarError(f"asset {asset_id} has no perceptual hash"
                               + (f" ({row[2]})" if row else ": run 'loupe hash'"))
        phash, label = row[0], f"asset {asset_id}"
    else:
        phash, image = _file_hash(str(file), max_pixels or DEFAULT_MAX_PIXELS,
                                  full_decode_pixels)
        label = f"file {file}"
    # fused with the image lane, the page is cut after fusion
    hits, total = hash_neighbours(conn, tenant_id, phash, radius=radius, viewer=viewer,
                                  limit=limit + offset, offset=0, exclude=asset_id)
    lanes = ["hash"]
    image_hits: list[tuple[int, float]] = []
    lane = next((r for r in conn.execute(vq.LANE_MODELS, {"tenant_id": tenant_id})
                 if r[0] == "image"), None)
    if lane is None:
        notices.append("no image model serves the image lane: hash neighbours only "
                       "(install one with 'loupe models install' and 'loupe models use')")
    else:
        _, model_id, name, _kind, dims, n_vec, n_assets, *_ = lane
        try:
            if asset_id is not None:
                vrow = conn.execute(q.ASSET_IMAGE_VECTOR, {"asset_id": asset_id,
                                                           "model_id": model_id}).fetchone()
                vec = vrow[0] if vrow else None
                if vec is None:
                    notices.append(f"image lane: asset {asset_id} has no vector of {name} yet "
                                   f"(run 'loupe embed'): hash neighbours only")
            else:
                vec = registry.embedder(lib.home, name).encode_images([image])[0]
            if vec is not None:
                image_hits = [(r[0], r[1]) for r in conn.execute(
                    q.image_neighbours(model_id, dims), {
                        "qv": vec, "tenant_id": tenant_id, "exclude": asset_id,
                        "cap": IMAGE_LANE_CAP, **viewer})]
                lanes.append("image")
                notices.append(f"image lane: the {len(image_hits)} nearest image vectors of "
                               f"{name} are fused in (approximate; not counted in the total)")
                if n_vec < n_assets:
                    if note := waiting_notice(lib.conn, lib.tenant_id, lib.viewer, "image",
                                              model_id, name, n_assets - n_vec):
                        notices.append(note)
        except (ModelError, OSError, RuntimeError) as exc:
            notices.append(f"image lane off: {exc}: hash neighbours only")
    fused = fuse(hits, image_hits) if image_hits else [
        SimilarHit(i, h.asset_id, h.distance) for i, h in enumerate(hits, 1)]
    page = fused[offset:offset + limit]
    if page:
        info = {r[0]: (r[1], r[2]) for r in conn.execute(HIT_DETAILS, {
            "tenant_id": tenant_id, "lang": lib.languages()[0], "ids": [h.asset_id for h in page],
            **viewer})}
        for h in page:
            h.title, h.path = info.get(h.asset_id, ("", ""))
    verdict = "complete"
    if coverage[1]:
        verdict = "unknown"
        n = coverage[1]
        notices.append(f"{n:,} readable asset{'s have' if n != 1 else ' has'} no perceptual hash "
                       f"and {'were' if n != 1 else 'was'} not compared (run 'loupe hash')")
    return SimilarResult(query=label, radius=radius, total=total, verdict=verdict, limit=limit,
                         offset=offset, hits=page, lanes=lanes, notices=notices)
