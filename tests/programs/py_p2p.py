"""mpi4py point-to-point: pickled objects (matched probes underneath), buffers,
ANY_SOURCE with statuses, probes and sendrecv."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
right, left = (rank + 1) % size, (rank - 1) % size


def say(*args):
    print(f"r{rank}:", *args, flush=True)


obj = comm.sendrecv({"from": rank, "data": list(range(rank + 1))}, dest=right, source=left)
say("pickled", obj)

buf = np.arange(10, dtype="d") + rank
out = np.zeros(10)
st = MPI.Status()
comm.Sendrecv(buf, dest=right, sendtag=5, recvbuf=out, source=MPI.ANY_SOURCE, recvtag=5, status=st)
say("buffer", out.sum(), "source", st.Get_source() == left, "tag", st.Get_tag(), "count", st.Get_count(MPI.DOUBLE))

comm.Barrier()  # the ANY_TAG receives below must not match earlier traffic
if rank == 0:
    got = []
    for _ in range(size - 1):
        st = MPI.Status()
        msg = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
        assert msg == ("hi", st.Get_source())
        got.append(st.Get_source())
    say("any-source senders", sorted(got))
else:
    comm.send(("hi", rank), dest=0, tag=rank)
comm.Barrier()

if rank == size - 1 and size > 1:
    st = MPI.Status()
    comm.Probe(source=0, tag=3, status=st)
    n = st.Get_count(MPI.INT)
    data = np.empty(n, dtype="i")
    comm.Recv(data, source=0, tag=3)
    say("probed", n, data.tolist())
    while not comm.Iprobe(source=0, tag=4):
        pass
    say("iprobe then recv", comm.recv(source=0, tag=4))
elif rank == 0 and size > 1:
    comm.Send(np.arange(7, dtype="i"), dest=size - 1, tag=3)
    comm.send("late", dest=size - 1, tag=4)

big = np.full(300_000, float(rank))
comm.Sendrecv_replace(big, dest=right, source=left)
say("replace", big[0], big[-1], big.size)
comm.Barrier()
say("done")
