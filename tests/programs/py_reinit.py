"""An iterative mpi4py program written for Reinit (echo.reinit), with
checkpoints: the same output whether or not processes fail on the way (what
happened goes to stderr). Usage: py_reinit.py [iterations] [ms per iteration]"""

import sys
import time

import numpy as np
from mpi4py import MPI

from echo import reinit as er

ITERATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
PAUSE = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.02


def main(state: str) -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    x = np.array([rank + 1.0])
    start = 0
    version = er.checkpoint_latest()
    if version >= 0:
        x = np.frombuffer(er.checkpoint_load("x", 8), dtype=np.float64).copy()
        start = version + 1
    if state != "new" or rank == 0:
        print(f"rank {rank}: {state}, resuming at iteration {start}", file=sys.stderr, flush=True)
    s, left = np.zeros(1), np.zeros(1)
    for it in range(start, ITERATIONS):
        comm.Allreduce(x, s)
        comm.Sendrecv(x, (rank + 1) % size, recvbuf=left, source=(rank - 1) % size)
        x[0] = 0.5 * x[0] + 0.25 * left[0] + s[0] / size + it
        time.sleep(PAUSE)
        er.checkpoint_store("x", x.tobytes())
        er.checkpoint_commit(it)
    comm.Allreduce(x, s)
    if rank == 0:
        print(f"result after {ITERATIONS} iterations on {size} ranks: {float(s[0])!r}", flush=True)


er.reinit(main)
