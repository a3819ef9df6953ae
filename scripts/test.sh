#!/usr/bin/env bash
# Run echo's tests (real mpirun; the set-up script must have run first).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check echo collectors server preload tests bench
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
