"""mpi4py collectives: pickled and buffer forms, a user-defined op, v-variants."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def say(*args):
    print(f"r{rank}:", *args, flush=True)


say("bcast", comm.bcast({"k": [1, 2, 3]} if rank == 0 else None, root=0))
say("reduce", comm.reduce(rank + 1, op=MPI.PROD, root=0))
say("allreduce", comm.allreduce(rank * rank))
say("gather", comm.gather(rank * 3, root=size - 1))
say("scatter", comm.scatter([i * i for i in range(size)] if rank == 0 else None, root=0))
say("allgather", comm.allgather(str(rank)))
say("alltoall", comm.alltoall([rank * 10 + i for i in range(size)]))
scan, exscan = comm.scan(rank + 1), comm.exscan(rank + 1)
say("scan", scan, "exscan", exscan if rank else "-")

a = np.arange(5, dtype="d") * (rank + 1)
r = np.empty(5)
comm.Allreduce(a, r, op=MPI.SUM)
say("Allreduce", r.tolist())
comm.Allreduce(MPI.IN_PLACE, a, op=MPI.MAX)
say("Allreduce in place", a.tolist())


def absmax(x, y, dt):
    xa = np.frombuffer(x, dtype="d")
    ya = np.frombuffer(y, dtype="d")
    ya[:] = np.where(np.abs(xa) > np.abs(ya), xa, ya)


op = MPI.Op.Create(absmax, commute=True)
v = np.array([(-1.0) ** rank * rank, rank / 2.0])
res = np.empty(2)
comm.Allreduce(v, res, op=op)
say("user op", res.tolist())
op.Free()

counts = [i + 1 for i in range(size)]
displs = [sum(counts[:i]) for i in range(size)]
mine = np.full(rank + 1, rank, dtype="i")
allv = np.zeros(sum(counts), dtype="i")
comm.Allgatherv(mine, [allv, counts, displs, MPI.INT])
say("Allgatherv", allv.tolist())
g = np.zeros(sum(counts), dtype="i") if rank == 0 else None
comm.Gatherv(mine, [g, counts, displs, MPI.INT] if rank == 0 else None, root=0)
if rank == 0:
    say("Gatherv", g.tolist())
s = np.zeros(rank + 1, dtype="i")
comm.Scatterv([allv, counts, displs, MPI.INT] if rank == 0 else None, s, root=0)
say("Scatterv", s.tolist())
rs = np.zeros(2, dtype="i")
comm.Reduce_scatter_block(np.arange(2 * size, dtype="i"), rs, op=MPI.SUM)
say("Reduce_scatter_block", rs.tolist())
sa = np.arange(size, dtype="l") + 100 * rank
ra = np.empty(size, dtype="l")
comm.Alltoall(sa, ra)
say("Alltoall", ra.tolist())
say("done")
