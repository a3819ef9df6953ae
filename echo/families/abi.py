"""The MPI 5 standard ABI (MPICH's mpicc_abi): an mpi.h that names no implementation, only MPI_ABI_VERSION; its
mpicc's mpirun is MPICH's hydra (echo/families/mpich.py). preload/compat/abi.h is its C side."""

from __future__ import annotations

from dataclasses import replace

from echo.families.mpich import MPICH

# after MPICH in the registry: an mpi.h of MPICH's own that defines MPI_ABI_VERSION too is MPICH's
MPI_ABI = replace(MPICH, name="mpi-abi", title="the MPI standard ABI", marker="MPI_ABI_VERSION",
                  naming="the MPI {MPI_VERSION} standard ABI")
