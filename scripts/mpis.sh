#!/usr/bin/env bash
# Install the MPIs besides the primary one (PyPI's Open MPI 5 in .venv) that the portability tests run on
# (tests/portability/test_mpis.py): Debian's Open MPI 4.1 and MPICH 4.0 from apt (as root), gfortran for the
# Fortran programs, and in virtual environments under .mpis/: PyPI's MPICH 5 and Intel MPI, and, for each MPI,
# mpi4py built from source against it (with numpy) for the Python programs.  Idempotent: what is there stays.
set -euo pipefail
cd "$(dirname "$0")/.."
APT_PACKAGES="libopenmpi-dev openmpi-bin libmpich-dev mpich gfortran"
bash scripts/apt-install.sh $APT_PACKAGES
mkdir -p .mpis

# venv NAME MPICC [PIP PACKAGES OF THE MPI...]: .mpis/NAME with the MPI's packages, numpy and mpi4py built
# against MPICC (a path inside the venv for an MPI the venv itself holds)
venv() {
    local name=$1 mpicc=$2
    shift 2
    local dir=.mpis/$name
    if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c "import mpi4py.MPI, numpy" 2>/dev/null; then return; fi
    [ -x "$dir/bin/python" ] || python3 -m venv "$dir"
    "$dir/bin/pip" install -q --upgrade pip
    [ $# -eq 0 ] || "$dir/bin/pip" install -q "$@"
    case $mpicc in /*) ;; *) mpicc=$PWD/$dir/bin/$mpicc ;; esac
    if [ ! -x "$mpicc" ]; then echo "mpis.sh: $mpicc is missing: $name is left out" >&2; return; fi
    # Intel MPI's wrappers find their installation through I_MPI_ROOT (echo sets it the same way)
    [ -x "$dir/bin/impi_info" ] && export I_MPI_ROOT=$PWD/$dir
    "$dir/bin/pip" install -q numpy
    # built against this MPI (a cached wheel could be another MPI's); unoptimized: the tests need its bindings, not
    # its speed, and -O0 compiles in 40 s where -O2 takes 3 to 4 minutes (four MPIs: most of CI's set-up)
    CFLAGS=-O0 MPICC=$mpicc "$dir/bin/pip" install -q --no-binary mpi4py --no-cache-dir mpi4py
    unset I_MPI_ROOT
}
venv mpich-pypi mpicc mpich
venv impi-pypi mpicc impi-devel impi-rt
[ -x /usr/bin/mpicc.openmpi ] && venv openmpi-debian /usr/bin/mpicc.openmpi
[ -x /usr/bin/mpicc.mpich ] && venv mpich-debian /usr/bin/mpicc.mpich
echo "MPIs for the portability tests are set up in .mpis/"
