#!/usr/bin/env bash
# Set up (idempotent) and run Loupe's test suite against a real, embedded
# PostgreSQL, real image files and the real ExifTool. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
