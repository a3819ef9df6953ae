"""MPICH and the MPIs made from it, whose mpirun is MPICH's process manager, hydra: it runs any number of
processes, as root too, and takes neither option; -genv gives the processes an environment (hydra has no -x),
-prepend-rank tags their lines. preload/compat/mpich.h is its C side."""

from __future__ import annotations

import re
from dataclasses import replace

from echo.families.family import Family

# what hydra's `mpirun --version` prints: MPICH's says HYDRA, Intel MPI's its own name (its hydra runs MPICH's
# processes, and MPICH's hydra Intel MPI's: they are not told apart)
HYDRA_SAYS = ("HYDRA", "Intel(R) MPI")

MPICH = Family(
    name="mpich", title="MPICH", lineage="MPICH",
    marker="MPICH_VERSION", naming="MPICH {MPICH_VERSION}", wrapper_prefix="MPICH",
    version_says=HYDRA_SAYS,
    env_options=("-genv", "{name}", "{value}"),
    tag_options=("-prepend-rank",), tagged_line=re.compile(rb"^\[(\d+)\] "),
    output_files_options=("-outfile-pattern", "{dir}/out.%r"), output_file="{dir}/out.{rank}",
    # what srun has always been given for every MPI; an MPICH built for Slurm's PMI-2 needs --mpi=pmi2 (untested:
    # this machine's Slurm runs Open MPI only)
    srun_options=("--mpi=pmix",),
    tuning_prefix="MPIR_CVAR_",
)

# MVAPICH's mpi.h defines MPICH_VERSION too: before MPICH in the registry
MVAPICH = replace(MPICH, name="mvapich", title="MVAPICH", marker="MVAPICH2_VERSION",
                  naming="MVAPICH {MVAPICH2_VERSION}")

# Any other MPI (Cray MPICH, ...): launched as hydra is, the last family of the registry
OTHER = replace(MPICH, name="other", title="this MPI", marker="", naming="an MPI of standard version {MPI_VERSION}")
