#!/usr/bin/env bash
# Set up echo on a fresh Debian machine: system packages (when run as root with
# apt), a virtual environment in .venv with Open MPI 5, mpi4py and echo itself.
# PostgreSQL is installed for the store's tests (not started: the tests start
# their own server); Chromium and its driver for the web pages' tests.
set -euo pipefail
cd "$(dirname "$0")/.."
APT_PACKAGES="gcc g++ make binutils python3-venv postgresql libpapi-dev papi-tools chromium chromium-driver"
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    missing=$(for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
    if [ -n "$missing" ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    fi
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[mpi,test]'
.venv/bin/mpiecho build >/dev/null   # compile the preload library once, now
# the tests read Chrome trace exports with Chromium DevTools' own trace engine (from npm), when node is here
if command -v npm >/dev/null; then
    npm install -s --no-audit --no-fund --prefix .venv/node @paulirish/trace_engine@0.0.65 >/dev/null
fi
echo "echo is set up: .venv/bin/echorun and .venv/bin/mpiecho"
