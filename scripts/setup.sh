#!/usr/bin/env bash
# Set up echo on a fresh Debian machine: system packages (when run as root with
# apt), a virtual environment in .venv with Open MPI 5, mpi4py and echo itself.
# PostgreSQL is installed for the store's tests (not started: the tests start
# their own server); Chromium and its driver for the web pages' tests.
set -euo pipefail
cd "$(dirname "$0")/.."
APT_PACKAGES="gcc g++ make binutils python3-venv postgresql libpapi-dev papi-tools chromium chromium-driver"
bash scripts/apt-install.sh $APT_PACKAGES
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[mpi,test]'
.venv/bin/mpiecho build >/dev/null   # compile the preload library once, now
echo "echo is set up: .venv/bin/echorun and .venv/bin/mpiecho"
