"""An mpi4py solver timed the way Python codes time themselves (time.time,
time.perf_counter, time.monotonic, MPI.Wtime), its timers reduced and printed,
its step count set by a time budget (argv[1] seconds, default 0.3)."""

import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
budget = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
t_start, p_start, w_start = time.time(), time.perf_counter(), MPI.Wtime()
u = [float((rank * 100 + i) % 7) for i in range(200)]
t_comp = t_comm = 0.0
steps, go = 0, True
while go:
    a = time.perf_counter()
    u = [0.5 * (u[i - 1] + u[(i + 1) % len(u)]) for i in range(len(u))]
    b = time.monotonic()
    total = comm.allreduce(sum(u), op=MPI.SUM)
    t_comm += time.monotonic() - b
    t_comp += time.perf_counter() - a
    steps += 1
    go = comm.bcast(MPI.Wtime() - w_start < budget, root=0)
times = comm.reduce([time.time() - t_start, time.perf_counter() - p_start, t_comp, t_comm],
                    op=lambda x, y, *_: [max(p, q) for p, q in zip(x, y, strict=True)], root=0)
print(f"r{rank}: total {total:.10e} after {steps} steps", flush=True)
if rank == 0:
    print(f"r0: wall {times[0]:.6f} s, perf {times[1]:.6f} s, compute {times[2]:.6f} s, comm {times[3]:.6f} s",
          flush=True)
