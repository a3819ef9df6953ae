/* A shared-memory window of non-contiguous segments where odd ranks contribute no memory: MPI_Win_shared_query
 * reports their segments with a NULL base.  Each rank prints what it sees of every segment. */
#include "battery.h"

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nrank, nsize;
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    int *mine;
    MPI_Win shw;
    MPI_Info noncontig;
    MPI_Info_create(&noncontig);
    MPI_Info_set(noncontig, "alloc_shared_noncontig", "true");
    MPI_Win_allocate_shared(nrank % 2 == 0 ? 4 * sizeof(int) : 0, sizeof(int), noncontig, node, &mine, &shw);
    MPI_Info_free(&noncontig);
    MPI_Win_fence(0, shw);
    if (nrank % 2 == 0)
        for (int i = 0; i < 4; i++) mine[i] = nrank * 10 + i;
    MPI_Win_fence(0, shw);
    for (int q = 0; q < nsize; q++) {
        MPI_Aint size;
        int unit, *base;
        MPI_Win_shared_query(shw, q, &size, &unit, &base);
        if (size == 0) SAY("segment of %d: size 0 base %s", q, base == NULL ? "NULL" : "not NULL");
        else SAY("segment of %d: size %ld holds %d %d %d %d", q, (long)size, base[0], base[1], base[2], base[3]);
    }
    MPI_Win_free(&shw);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
