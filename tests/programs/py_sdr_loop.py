"""An mpi4py iterative code for SDR's failure tests: a ring exchange with the pickle API (matched probes), an
Allreduce with buffers, about a second of work; checksums every 50 iterations."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
u = np.arange(20000, dtype=np.float64) * (rank + 1) % 13
total = np.zeros(1)
for it in range(300):
    left = comm.sendrecv(float(u[0]), dest=(rank + size - 1) % size, source=(rank + 1) % size)
    for _ in range(8):
        u = 0.5 * u + 0.25 * (np.roll(u, 1) + np.roll(u, -1))
    u[-1] = left
    comm.Allreduce(np.array([u.sum()]), total, op=MPI.SUM)
    if it % 50 == 49:
        print(f"r{rank}: iteration {it + 1} total {total[0]:.9e}", flush=True)
print(f"r{rank}: done", flush=True)
