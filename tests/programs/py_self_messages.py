"""Messages a rank sends itself, received the ways mpi4py receives them: a pickled object by matched probe
(MPI_Mprobe + MPI_Mrecv), then a buffer on the same tag by MPI_Recv, then an object by irecv."""
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
for step in range(3):
    comm.send({"step": step, "rank": rank}, dest=rank, tag=5)
    obj = comm.recv(source=rank, tag=5)
    comm.Send(bytearray(f"bytes {step} {rank}".encode()), dest=rank, tag=5)
    buf = bytearray(32)
    status = MPI.Status()
    comm.Recv(buf, source=rank, tag=5, status=status)
    comm.send([step, rank], dest=rank, tag=6)
    later = comm.irecv(source=rank, tag=6).wait()
    print(f"r{rank}: {obj} {bytes(buf[:status.Get_count(MPI.BYTE)]).decode()} {later}", flush=True)
