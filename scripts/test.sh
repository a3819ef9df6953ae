#!/usr/bin/env bash
# Run echo's tests (real mpirun; the set-up script must have run first): all of them, or those that pytest's
# options select (README.md: -m quick, the quick ones).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check echo preload tests bench
# echo's bytecode written once: every echorun of the suite starts a Python that would otherwise compile echo
# again wherever PYTHONDONTWRITEBYTECODE is set
.venv/bin/python -m compileall -q echo >/dev/null
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider "$@" || status=$?
if [ "$status" -eq 5 ]; then  # pytest's "no tests collected": a run that tested nothing never passes
    echo "echo: no test was selected (pytest exit 5): check the paths and the -m/-k options given" >&2
fi
exit "$status"
