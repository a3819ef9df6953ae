"""An mpi4py code that knows its process id: its log starts with it, rank 0 gathers every rank's, and each rank
signals itself with os.kill(os.getpid(), SIGUSR1), counted by its handler.  It prints only what does not depend
on the ids.  Usage: py_pid.py DIR"""

import os
import signal
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
handled = 0


def on_usr1(signum, frame):
    global handled
    handled += 1


signal.signal(signal.SIGUSR1, on_usr1)
with open(os.path.join(sys.argv[1], f"py.{rank}.log"), "w") as log:
    log.write(f"process {os.getpid()}, parent {os.getppid()}\n")
    pids = comm.gather(os.getpid(), root=0)
    if rank == 0:
        log.write(f"processes {' '.join(map(str, pids))}\n")
    os.kill(os.getpid(), signal.SIGUSR1)
    for _ in range(2000):  # the handler runs on the main thread, soon after the signal: a while at most
        if handled:
            break
        time.sleep(0.001)
    total = comm.allreduce(rank + 1)
    log.write(f"total {total}, signals handled {handled}\n")
print(f"r{rank}: total {total}, signals handled {handled}, /proc/<pid> is mine: "
      f"{os.path.samefile(f'/proc/{os.getpid()}/fd', '/proc/self/fd')}")
