#!/usr/bin/env bash
# Every benchmark in --smoke mode (tiny sizes, every code path, seconds each),
# so that a benchmark that no longer runs fails CI. The figures printed here
# mean nothing; the real ones are in RESULTS.md with their commands.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
for b in lexical vector scopes ingest http_search similar cli_search visibility_ab query_reading workers; do
  echo "== benchmarks/$b.py --smoke"
  "$PY" "benchmarks/$b.py" --smoke
done
echo "benchmarks: every smoke run passed"
