"""Writing the library: unique paths, files, one ExifTool batch, the manifest, the summary."""
from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

from .common import Item, LANGS, norm_space


# --------------------------------------------------------------------------
# Writing: files, ExifTool batch, manifest, summary
# --------------------------------------------------------------------------


def make_unique(items: list) -> None:
    """Give colliding library paths a ``_2``, ``_3`` ... suffix (in order)."""
    seen = set()
    for it in items:
        base, ext = os.path.splitext(it.rel)
        rel, n = it.rel, 1
        while rel.lower() in seen:
            n += 1
            rel = f"{base}_{n}{ext}"
        seen.add(rel.lower())
        it.rel = rel


def utf8_truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` UTF-8 bytes on a character boundary."""
    data = text.encode("utf-8")[:limit]
    return data.decode("utf-8", "ignore")


def xmp_args(it: Item) -> list:
    """ExifTool assignments for the XMP fields of one item."""
    a = []
    for tag, alt in (("XMP-dc:Title", it.title), ("XMP-dc:Description", it.description)):
        for lang in ("x-default",) + LANGS:
            if alt.get(lang):
                a.append(f"-{tag}-{lang}={norm_space(alt[lang])}")
    a += [f"-XMP-dc:Subject={k}" for k in it.keywords]
    a += [f"-XMP-dc:Creator={c}" for c in it.creators]
    if it.rights:
        a.append(f"-XMP-dc:Rights={it.rights}")
    if it.licence:
        a.append(f"-XMP-xmpRights:Marked={'False' if it.licence in ('public-domain', 'CC0-1.0') else 'True'}")
    if it.licence_url:
        a.append(f"-XMP-xmpRights:WebStatement={it.licence_url}")
        if "creativecommons.org" in it.licence_url:
            a.append(f"-XMP-cc:License={it.licence_url}")
    if it.source_url:
        a.append(f"-XMP-dc:Source={it.source_url}")
    if it.country:
        a.append(f"-XMP-photoshop:Country={it.country}")
    if it.country_code:
        a.append(f"-XMP-iptcCore:CountryCode={it.country_code}")
    if it.location:
        a.append(f"-XMP-iptcCore:Location={it.location}")
    return a


def exiftool_block(it: Item, out_dir: str) -> list:
    """One ``-execute`` block: a new sidecar, or metadata embedded in place."""
    target = os.path.join(out_dir, it.rel)
    args = xmp_args(it)
    if it.embed == "sidecar":
        return args + ["-o", target + ".xmp", "-execute"]
    if it.embed == "iptc":
        args += ["-IPTC:CodedCharacterSet=UTF8",
                 f"-IPTC:ObjectName={utf8_truncate(it.title['x-default'], 64)}"]
        if it.description.get("x-default"):
            args.append(f"-IPTC:Caption-Abstract={utf8_truncate(it.description['x-default'], 2000)}")
        args += [f"-IPTC:Keywords={utf8_truncate(k, 64)}" for k in it.keywords]
        args += [f"-IPTC:By-line={utf8_truncate(c, 32)}" for c in it.creators]
        args.append(f"-IPTC:CopyrightNotice={utf8_truncate(it.rights, 128)}")
    elif it.embed == "exif":
        if it.creators:
            args.append(f"-EXIF:Artist={'; '.join(it.creators)}")
        args.append(f"-EXIF:Copyright={it.rights}")
    return args + ["-overwrite_original", target, "-execute"]


def run_exiftool(blocks: list, work_dir: str, exiftool: str) -> None:
    """Run all blocks in ONE exiftool process (``-@ ARGFILE``) and check it."""
    argfile = os.path.join(work_dir, "exiftool.args")
    with open(argfile, "w", encoding="utf-8") as fh:
        for line in (x for b in blocks for x in b):
            if "\n" in line or "\r" in line:
                raise ValueError(f"newline in exiftool argument: {line!r}")
            fh.write(line + "\n")
    proc = subprocess.run(
        [exiftool, "-charset", "utf8", "-charset", "iptc=UTF8", "-@", argfile],
        capture_output=True, text=True)
    done = sum(int(n) for n in re.findall(r"(\d+) image files (?:created|updated)", proc.stdout))
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    # "[minor]" warnings are about metadata already in the source files
    # (e.g. odd maker notes in the wallpapers); anything else is an error.
    errors = [l for l in lines if not re.match(r"Warning: \[minor\]", l, re.I)]
    os.remove(argfile)
    if proc.returncode != 0 or done != len(blocks) or errors:
        sys.stderr.write("\n".join(errors[:20]) + "\n")
        raise SystemExit(f"exiftool wrote {done} of {len(blocks)} files (rc={proc.returncode})")
    if len(lines) > len(errors):
        print(f"  exiftool: {len(lines) - len(errors)} minor warnings about the sources' own metadata")


def manifest_record(it: Item, digest: str) -> dict:
    """The manifest line of one item (captions kept apart from the pixels)."""
    rec = {
        "path": it.rel, "source": it.source, "is_photo": it.is_photo, "kind": it.kind,
        "title": it.title.get("x-default", ""), "description": it.description.get("x-default", ""),
        "keywords": it.keywords, "creator": it.creators, "rights": it.rights,
        "licence": it.licence, "licence_url": it.licence_url, "source_url": it.source_url,
        "metadata": "sidecar" if it.embed == "sidecar" else "embedded",
        "sidecar": it.rel + ".xmp" if it.embed == "sidecar" else None,
        "sha256": digest,
        "title_i18n": {k: v for k, v in it.title.items() if k != "x-default"},
        "description_i18n": {k: v for k, v in it.description.items() if k != "x-default"},
    }
    for k in ("country", "country_code", "location"):
        if getattr(it, k):
            rec[k] = getattr(it, k)
    rec.update(it.extra)
    return rec


def prepare_output(out_dir: str) -> str:
    """Refuse to clobber a folder we did not make; return the staging folder."""
    manifest = out_dir.rstrip("/") + ".manifest.jsonl"
    if os.path.exists(out_dir) and os.listdir(out_dir) and not os.path.exists(manifest):
        raise SystemExit(f"{out_dir} exists, is not empty and has no {manifest}: refusing to replace it")
    staging = out_dir.rstrip("/") + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    return staging


def write_library(items: list, out_dir: str, exiftool: str) -> list:
    """Write images, run ExifTool once, fix mtimes, return manifest records."""
    staging = prepare_output(out_dir)
    blocks = []
    for it in items:
        dest = os.path.join(staging, it.rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if it.data is not None:
            with open(dest, "wb") as fh:
                fh.write(it.data)
        else:
            shutil.copyfile(it.src_path, dest)
        if it.embed != "sidecar" or it.title or it.description or it.keywords:
            blocks.append(exiftool_block(it, staging))
    run_exiftool(blocks, os.path.dirname(staging) or ".", exiftool)
    records = []
    for it in items:
        dest = os.path.join(staging, it.rel)
        with open(dest, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        for p in (dest, dest + ".xmp"):
            if os.path.exists(p):
                os.utime(p, (it.mtime, it.mtime))
        records.append(manifest_record(it, digest))
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.rename(staging, out_dir)
    with open(out_dir.rstrip("/") + ".manifest.jsonl", "w", encoding="utf-8") as fh:
        for rec in sorted(records, key=lambda r: r["path"]):
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
    return records


def print_summary(records: list, seconds: float) -> None:
    """Counts per source, photos vs clip art/artwork, duplicates, total, time."""
    per = collections.Counter(r["source"] for r in records)
    kinds = collections.Counter(r["kind"] for r in records)
    meta = collections.Counter(r["metadata"] for r in records)
    groups = collections.Counter(r["sha256"] for r in records)
    dup_groups = [c for c in groups.values() if c > 1]
    print("Loupe demo library")
    for src in sorted(per):
        k = collections.Counter(r["kind"] for r in records if r["source"] == src)
        print(f"  {src:13s} {per[src]:5d}  ({', '.join(f'{n} {kk}' for kk, n in sorted(k.items()))})")
    print(f"  photos {kinds['photo']}, clip art {kinds['clipart']}, artwork {kinds['artwork']}")
    print(f"  metadata: {meta['sidecar']} XMP sidecars, {meta['embedded']} embedded")
    print(f"  byte-identical duplicates: {sum(dup_groups)} files in {len(dup_groups)} groups "
          f"({sum(dup_groups) - len(dup_groups)} redundant copies)")
    print(f"  total {len(records)} images in {seconds:.1f} s")
