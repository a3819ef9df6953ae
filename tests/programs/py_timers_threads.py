"""A task-based mpi4py code: work runs on a thread pool while the main thread waits for it and times each
wait (as mpi4py's own test of its pool does); the shortest wait is reduced, printed to the nanosecond, and
checked: a wait shorter than the work means the clocks lied (exit status 4)."""

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from time import perf_counter  # bound before MPI is initialized, as many codes do

from mpi4py import MPI

comm = MPI.COMM_WORLD
pool = ThreadPoolExecutor(2)
waits, work = [], []
for _ in range(5):
    t, p = time.monotonic(), perf_counter()
    pool.submit(time.sleep, 0.05).result()  # the main thread's timed waits for the GIL read the clock meanwhile
    waits.append(time.monotonic() - t)
    work.append(perf_counter() - p)
shortest = comm.allreduce(min(waits), op=MPI.MIN)
print(f"r{comm.rank}: {len(waits)} steps, shortest wait {min(waits):.9f} s, work {sum(work):.9f} s, "
      f"world {shortest:.9f} s", flush=True)
pool.shutdown()
sys.exit(0 if shortest > 0.02 else 4)
