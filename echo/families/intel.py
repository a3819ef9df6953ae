"""Intel MPI: MPICH's lineage and hydra's launcher (echo/families/mpich.py), its own compiler wrapper settings
(I_MPI_CC, ...), and an installation that must be set up before its mpicc runs: its wrappers and mpirun find it
through I_MPI_ROOT (its setvars.sh sets it), and its mpirun, a script, starts whichever mpiexec.hydra comes first on
PATH; a pip-installed one (impi-devel/impi-rt in a virtual environment) has neither set. With I_MPI_ROOT already
set and another MPI's mpiexec.hydra first on PATH (MPICH's /usr/bin/mpiexec.hydra), Intel's mpirun started MPICH's
hydra and every process died of SIGSEGV before MPI_Init: the hydra beside the mpicc goes first, always."""

from __future__ import annotations

from dataclasses import replace

from echo.families.mpich import MPICH

# its mpi.h defines MPICH_VERSION too: before MPICH in the registry
INTEL_MPI = replace(MPICH, name="intel", title="Intel MPI", marker="I_MPI_VERSION",
                    naming="Intel MPI {I_MPI_VERSION}", wrapper_prefix="I_MPI",
                    beside_mpicc="impi_info", root_variable="I_MPI_ROOT", launcher_first="mpiexec.hydra")
