"""mpi4py communicators and groups: Dup, Split, Create, group translations."""

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def say(*args):
    print(f"r{rank}:", *args, flush=True)


say("size", size, "group rank", comm.Get_group().Get_rank(), "group size", comm.Get_group().Get_size())
dup = comm.Dup()
say("dup", dup.rank, dup.size, MPI.Comm.Compare(comm, dup) == MPI.CONGRUENT)
sub = comm.Split(color=rank // 2, key=-rank)
say("split", sub.rank, sub.size, sub.allreduce(rank))
wg, sg = comm.Get_group(), sub.Get_group()
say("translate", MPI.Group.Translate_ranks(sg, list(range(sub.size)), wg))
odd = wg.Incl([r for r in range(size) if r % 2])
oc = comm.Create(odd)
if oc != MPI.COMM_NULL:
    say("odd comm", oc.rank, oc.size, oc.allgather(rank))
    oc.Free()
else:
    say("not odd")
sub.Free()
dup.Free()
say("done")
