"""A rank that starts programs of its own (as mpi4py's suite runs `nm`): their output reaches the rank through
its pipe, on every copy, and the rank's own output and end are the rank's."""

import subprocess
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.rank


def say(*args):
    # one write per line, its newline with it: print writes its pieces one by one, and mpirun 4.1 forwarded a
    # rank's line without its newline before the other rank's ("r1: doner0: sum 3")
    sys.stdout.write(" ".join([f"r{rank}:", *map(str, args)]) + "\n")
    sys.stdout.flush()


child = subprocess.run([sys.executable, "-c", "print('from the child')"], capture_output=True, text=True,
                       check=True)
say("child said", repr(child.stdout.strip()))
shell = subprocess.run("echo from a shell; exit 3", shell=True, capture_output=True, text=True)
say("shell said", repr(shell.stdout.strip()), "status", shell.returncode)
say("sum", comm.allreduce(rank + 1))
say("done")
