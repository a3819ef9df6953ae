"""mpi4py on the calls it makes with MPI-4's large-count forms (MPI_X_c) when its MPI declares them (MPICH 4 and 5,
Intel MPI): buffers, statuses and counts, probes and matched receives, nonblocking and persistent requests,
v- and w-collectives, neighbourhood collectives, one-sided.  The same program uses the int forms elsewhere."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
nxt, prv = (rank + 1) % size, (rank - 1) % size


def say(*args):
    print(f"r{rank}:", *args, flush=True)


# point-to-point with statuses and counts
out = np.arange(6, dtype="d") + 10 * rank
got = np.zeros(6)
st = MPI.Status()
comm.Sendrecv(out, nxt, 3, got, prv, 3, status=st)
say("Sendrecv", got.tolist(), "source", st.Get_source(), "count", st.Get_count(MPI.DOUBLE),
    "elements", st.Get_elements(MPI.DOUBLE))
say("sendrecv object", comm.sendrecv({"from": rank, "v": list(range(rank + 2))}, dest=nxt, sendtag=4,
                                      source=prv, recvtag=4))

if size > 1:
    if rank == 0:
        comm.Send(out[:4], 1, 5)
        comm.Ssend(out[:2], 1, 6)
        comm.send(("pickled", 1.5), 1, 7)
    elif rank == 1:
        comm.Probe(0, 5, st)
        n = st.Get_count(MPI.DOUBLE)
        buf = np.zeros(n)
        comm.Recv(buf, 0, 5, st)
        say("Probe/Recv", n, buf.tolist(), st.Get_count(MPI.BYTE))
        msg = comm.mprobe(0, 6, st)
        buf = np.zeros(st.Get_count(MPI.DOUBLE))
        msg.Recv(buf)
        say("Mprobe/Mrecv", buf.tolist())
        say("recv object", comm.recv(source=0, tag=7))

# nonblocking and persistent point-to-point
ibuf = np.zeros(5, dtype="i")
rq = [comm.Irecv(ibuf, prv, 8), comm.Isend(np.arange(5, dtype="i") * (rank + 1), nxt, 8)]
sts = [MPI.Status(), MPI.Status()]
MPI.Request.Waitall(rq, sts)
say("Irecv", ibuf.tolist(), "count", sts[0].Get_count(MPI.INT))
src = np.zeros(3, dtype="i")
dst = np.zeros(3, dtype="i")
preqs = [comm.Recv_init(dst, prv, 9), comm.Send_init(src, nxt, 9)]
for round_ in range(2):
    src[:] = [round_, rank, 7]
    MPI.Prequest.Startall(preqs)
    MPI.Request.Waitall(preqs)
    say("persistent", round_, dst.tolist())
for p in preqs:
    p.Free()
req = comm.isend([rank] * 3, nxt, 10)
say("irecv object", comm.irecv(source=prv, tag=10).wait())
req.wait()

# collectives, buffer forms
b = np.arange(4, dtype="l") if rank == 0 else np.zeros(4, dtype="l")
comm.Bcast(b, root=0)
say("Bcast", b.tolist())
r = np.zeros(3)
comm.Allreduce(np.ones(3) * (rank + 1), r)
say("Allreduce", r.tolist())
comm.Reduce(np.ones(3) * rank, r if rank == 0 else None, op=MPI.MAX, root=0)
if rank == 0:
    say("Reduce", r.tolist())
counts = [k + 1 for k in range(size)]
displs = [sum(counts[:k]) for k in range(size)]
total = sum(counts)
mine = np.arange(rank + 1, dtype="i") + 100 * rank
allv = np.zeros(total, dtype="i")
comm.Allgatherv(mine, [allv, counts, displs, MPI.INT])
say("Allgatherv", allv.tolist())
gv = np.zeros(total, dtype="i")
comm.Gatherv(mine, [gv, counts, displs, MPI.INT] if rank == 0 else None, root=0)
if rank == 0:
    say("Gatherv", gv.tolist())
sv = np.zeros(rank + 1, dtype="i")
comm.Scatterv([allv, counts, displs, MPI.INT] if rank == size - 1 else None, sv, root=size - 1)
say("Scatterv", sv.tolist())
sendv = np.repeat(np.arange(size, dtype="i") + 10 * rank, rank + 1)
recvv = np.zeros(total, dtype="i")
comm.Alltoallv([sendv, [rank + 1] * size, [k * (rank + 1) for k in range(size)], MPI.INT],
               [recvv, counts, displs, MPI.INT])
say("Alltoallv", recvv.tolist())
comm.Ialltoallv([sendv, [rank + 1] * size, [k * (rank + 1) for k in range(size)], MPI.INT],
                [recvv, counts, displs, MPI.INT]).Wait()
say("Ialltoallv", recvv.tolist())
w_out = np.zeros(size, dtype="i")
comm.Alltoallw([np.arange(size, dtype="i") + 10 * rank, [1] * size, [4 * k for k in range(size)], [MPI.INT] * size],
               [w_out, [1] * size, [4 * k for k in range(size)], [MPI.INT] * size])
say("Alltoallw", w_out.tolist())
rs = np.zeros(rank + 1, dtype="i")
comm.Reduce_scatter(np.arange(total, dtype="i"), rs, counts)
say("Reduce_scatter", rs.tolist())
say("allgather object", comm.allgather({"r": rank}))

# a neighbourhood collective on a ring
ring = comm.Create_cart([size], periods=[True])
say("neighbor_allgather", ring.neighbor_allgather(rank * 5))
nb = np.zeros(2, dtype="i")
ring.Neighbor_allgather(np.array([rank + 50], dtype="i"), nb)
say("Neighbor_allgather", nb.tolist())
ring.Free()

# one-sided
win = MPI.Win.Allocate(4 * 4, 4, comm=comm)
mem = np.frombuffer(win.tomemory(), dtype="i")
mem[:] = -1
win.Fence()
win.Put(np.array([rank, rank + 1], dtype="i"), nxt, target=(1, 2, MPI.INT))
win.Fence()
say("Put", mem.tolist())
g = np.zeros(2, dtype="i")
win.Get(g, prv, target=(1, 2, MPI.INT))
win.Fence()
say("Get", g.tolist())
win.Free()
say("done")
