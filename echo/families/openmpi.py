"""Open MPI: its mpirun (PRRTE's in Open MPI 5, ORTE's before) refuses to run as root or to start more processes
than there are cores unless told, gives the processes an environment with -x, and places them by a rankfile;
Open MPI 5 has ULFM (mpi-ext.h) and tags lines with `--output tag`, Open MPI 4 with `--tag-output` (its mpirun
does not know --output). preload/compat/openmpi.h is its C side."""

from __future__ import annotations

import re
from dataclasses import replace

from echo.families.family import Family

OPEN_MPI_5 = Family(
    name="openmpi5", title="Open MPI", lineage="Open MPI",
    marker="OPEN_MPI", major_macro="OMPI_MAJOR_VERSION",
    naming="Open MPI {OMPI_MAJOR_VERSION}.{OMPI_MINOR_VERSION}.{OMPI_RELEASE_VERSION}",
    ulfm_macro="OMPI_HAVE_MPI_EXT_FTMPI", ulfm_header="mpi-ext.h", wrapper_prefix="OMPI",
    version_says=("Open MPI", "OpenRTE"),  # Open MPI 4's mpirun says OpenRTE
    root_options=("--allow-run-as-root",), oversubscribe_options=("--oversubscribe",),
    env_options=("-x", "{name}={value}"),
    tag_options=("--output", "tag"), tagged_line=re.compile(rb"^\[\d+,(\d+)\]<(?:stdout|stderr)>: ?"),
    ulfm_options=("--with-ft", "ulfm"),
    rankfile_options=("--map-by", "rankfile:file={path}"),
    srun_options=("--mpi=pmix",),  # slurmd's PMIx server
    output_files_options=("--output-filename", "{dir}"), output_file="{dir}/1/rank.{rank}/stdout",
    tuning_prefix="OMPI_MCA_",
)

# before Open MPI 5 in the registry: the first family that matches is the MPI's
OPEN_MPI_4 = replace(OPEN_MPI_5, name="openmpi4", majors=range(1, 5), tag_options=("--tag-output",))
