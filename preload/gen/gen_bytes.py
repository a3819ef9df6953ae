"""The bytes a collective call moves, for its record (rendered by gen_wrappers.py at build time).

A point-to-point record holds count x size of the datatype it names; a collective's first count is not what it
moves: MPI_Alltoall's sendcount is one peer's block, MPI_Alltoallv has no scalar count at all (it recorded 0: an
integer sort's main data movement was missing from `mpiecho report`). Here each collective records what this
process contributes, every block it sends: the whole send buffer the call reads (n blocks of an alltoall, the sum
of counts x type sizes of a v- or w-variant, a root's n blocks of a scatter, 0 for a process that only receives),
and the receive buffer's part under MPI_IN_PLACE. The nonblocking (MPI_I...) and persistent (..._init) forms and
the large-count ones (..._c) record as their blocking form. n is the remote group's size on an intercommunicator
(local_size: the local one's, where MPI counts that), a topology's out-degree for neighbour collectives. Sizes are
the application's view of the communicator (the mode's MPI_Comm_size...), not the real one a copy stands in on.
Collectives not listed (MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Scan, neighbour allgathers...) move their
one count x datatype, as a point-to-point call records it.
"""

from __future__ import annotations

IN = "sendbuf == MPI_IN_PLACE"
# the blocking form's name without "MPI_" -> the C expression of the bytes, in the call's parameter names;
# SUM/SUMW: a v- and w-variant's counts (replaced by the helper of their count type)
RULES = {
    "Alltoall": f"echo_bytes({IN} ? recvcount : sendcount, {IN} ? recvtype : sendtype) * coll_peers(comm)",
    "Alltoallv": f"{IN} ? SUM(recvcounts, recvtype, coll_peers(comm)) : SUM(sendcounts, sendtype, coll_peers(comm))",
    "Alltoallw": f"{IN} ? SUMW(recvcounts, recvtypes, coll_peers(comm)) : "
                 "SUMW(sendcounts, sendtypes, coll_peers(comm))",
    "Allgather": f"{IN} ? echo_bytes(recvcount, recvtype) : echo_bytes(sendcount, sendtype)",
    "Allgatherv": f"{IN} ? echo_bytes(recvcounts[coll_rank(comm)], recvtype) : echo_bytes(sendcount, sendtype)",
    # on an intercommunicator the root's group only receives (MPI_ROOT, MPI_PROC_NULL)
    "Gather": f"{IN} ? echo_bytes(recvcount, recvtype) : root == MPI_ROOT || root == MPI_PROC_NULL ? 0 : "
              "echo_bytes(sendcount, sendtype)",
    "Gatherv": f"{IN} ? echo_bytes(recvcounts[root], recvtype) : root == MPI_ROOT || root == MPI_PROC_NULL ? 0 : "
               "echo_bytes(sendcount, sendtype)",
    "Scatter": "coll_is_root(comm, root) ? echo_bytes(sendcount, sendtype) * coll_peers(comm) : 0",
    "Scatterv": "coll_is_root(comm, root) ? SUM(sendcounts, sendtype, coll_peers(comm)) : 0",
    "Reduce_scatter": "SUM(recvcounts, datatype, coll_local_size(comm))",
    "Reduce_scatter_block": "echo_bytes(recvcount, datatype) * coll_local_size(comm)",
    "Neighbor_alltoall": "echo_bytes(sendcount, sendtype) * coll_outdegree(comm)",
    "Neighbor_alltoallv": "SUM(sendcounts, sendtype, coll_outdegree(comm))",
    "Neighbor_alltoallw": "SUMW(sendcounts, sendtypes, coll_outdegree(comm))",
}


def blocking_form(name: str) -> str:
    """MPI_Ialltoallv_c, MPI_Alltoallv_init -> Alltoallv."""
    base = name.removeprefix("MPI_").removesuffix("_c").removesuffix("_init")
    return base[1:].capitalize() if base.startswith("I") and base[1:].capitalize() in RULES else base


def collective_bytes(p) -> str | None:  # noqa: ANN001 (gen_wrappers.Prototype)
    """The C expression of the bytes a collective call moves, or None: not a collective this knows."""
    rule = RULES.get(blocking_form(p.name))
    if rule is None:
        return None
    wide = any("MPI_Count" in t for n, t in zip(p.names, p.types, strict=True) if n.endswith("counts"))
    suffix = "_c" if wide else ""
    expr = rule.replace("SUMW(", f"echo_sum_bytes_w{suffix}(").replace("SUM(", f"echo_sum_bytes{suffix}(")
    return f"(uint64_t)({expr})"


# what the helpers ask the mode (gen_wrappers gives each a callee that records nothing)
ASKED = ("MPI_Comm_size", "MPI_Comm_rank", "MPI_Comm_test_inter", "MPI_Comm_remote_size", "MPI_Topo_test",
         "MPI_Cartdim_get", "MPI_Graph_neighbors_count", "MPI_Dist_graph_neighbors_count")


def helpers(call: dict[str, str]) -> list[str]:
    """C helpers the expressions use, asking the mode (`call`: the callee of each MPI function, gen_wrappers)
    what the application sees: a copy's stand-in communicator is not the application's size."""
    size, rank, inter, remote = (call[n] for n in ("MPI_Comm_size", "MPI_Comm_rank", "MPI_Comm_test_inter",
                                                  "MPI_Comm_remote_size"))
    topo, cartdim, gcount, dcount = (call[n] for n in ("MPI_Topo_test", "MPI_Cartdim_get",
                                                      "MPI_Graph_neighbors_count", "MPI_Dist_graph_neighbors_count"))
    return [
        "/* the bytes a collective moves (preload/gen/gen_bytes.py): the application's view of its communicator */",
        f"static int coll_inter(MPI_Comm comm) {{ int f = 0; {inter}(comm, &f); return f; }}",
        f"static uint64_t coll_local_size(MPI_Comm comm) {{ int n = 0; {size}(comm, &n); return n > 0 ? n : 0; }}",
        f"static int coll_rank(MPI_Comm comm) {{ int r = 0; {rank}(comm, &r); return r; }}",
        "static uint64_t coll_peers(MPI_Comm comm) {",
        "    int n = 0;",
        f"    if (coll_inter(comm)) {remote}(comm, &n); else {size}(comm, &n);",
        "    return n > 0 ? n : 0;",
        "}",
        "static int coll_is_root(MPI_Comm comm, int root) {",
        "    return coll_inter(comm) ? root == MPI_ROOT : root == coll_rank(comm);",
        "}",
        "static uint64_t coll_outdegree(MPI_Comm comm) {",
        "    int kind = MPI_UNDEFINED, n = 0, in = 0, weighted = 0;",
        f"    {topo}(comm, &kind);",
        f"    if (kind == MPI_CART) {{ {cartdim}(comm, &n); n *= 2; }}",
        f"    else if (kind == MPI_GRAPH) {gcount}(comm, coll_rank(comm), &n);",
        f"    else if (kind == MPI_DIST_GRAPH) {dcount}(comm, &in, &n, &weighted);",
        "    return n > 0 ? n : 0;",
        "}",
        "",
    ]
