"""Running inside a Slurm allocation (salloc, sbatch): the ranks that fill it when -n is not given (as mpirun's
default fills its slots), and srun as the launcher (`--launcher srun`: Open MPI's processes reach slurmd's PMIx
server, `srun --mpi=pmix`, the MPI family's srun_options). ULFM, which Reinit and SDR run on, needs Open MPI's
own runtime: those modes launch with mpirun inside the allocation (docs/clusters.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence


def allocation_tasks(env: Mapping[str, str] = os.environ) -> int | None:
    """The tasks of the Slurm allocation this process runs in, None outside one."""
    for var in ("SLURM_NTASKS", "SLURM_NPROCS"):
        value = env.get(var, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def default_ranks(processes: Callable[[], tuple[int, str]], env: Mapping[str, str] = os.environ) -> tuple[int, str]:
    """-n when it is not given: as many ranks as fill the allocation with their copies, and how it was found;
    `processes`: each rank's processes and what they are called (the mode's `per_rank`)."""
    tasks = allocation_tasks(env)
    if tasks is None:
        raise ValueError("-n (the ranks the application sees) is needed outside a Slurm allocation, "
                         "e.g. echorun -n 4 --clones 2 ./app")
    per_rank, what = processes()
    if tasks < per_rank:
        raise ValueError(f"the allocation has {tasks} tasks, fewer than the {per_rank} {what} of one rank: "
                         f"ask for more (salloc -n {per_rank} ...) or give fewer {what}")
    return tasks // per_rank, f"-n {tasks // per_rank}: the allocation's {tasks} tasks, {per_rank} {what} of each rank"


def srun_command(srun: str, nprocs: int, env: Mapping[str, str], options: Sequence[str]) -> list[str]:
    """srun starting the job's processes, with the MPI family's `options` (its PMI plugin: Family.srun_options);
    `env` reaches them only (not srun itself, which must not preload)."""
    exports = ",".join(f"{name}={value}" for name, value in env.items())
    return [srun, "-n", str(nprocs), *options, f"--export=ALL,{exports}"]
