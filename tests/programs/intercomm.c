/* Intercommunicators: create from the two halves of the world, queries (remote
 * size and group), point-to-point across, every rooted collective with MPI_ROOT /
 * MPI_PROC_NULL, all-to-all forms, merge, and groups of both sides. */
#include "battery.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    if (size < 2) {
        SAY("intercommunicators need two ranks");
        SAY("done");
        MPI_Finalize();
        return 0;
    }
    int low = rank < size / 2; /* group A: the lower half, group B: the rest */
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? size / 2 : 0, 7, &inter);
    int flag, rsize, r, s;
    MPI_Comm_test_inter(inter, &flag);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &r);
    MPI_Comm_size(inter, &s);
    SAY("inter %d rank %d size %d remote size %d", flag, r, s, rsize);

    MPI_Group wg, rg, lg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_remote_group(inter, &rg);
    MPI_Comm_group(inter, &lg);
    int *idx = malloc(sizeof(int) * (size_t)size), *out = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) idx[i] = i;
    MPI_Group_translate_ranks(rg, rsize, idx, wg, out);
    print_ints("remote group in world", out, rsize);
    MPI_Group_translate_ranks(lg, s, idx, wg, out);
    print_ints("local group in world", out, s);

    /* point-to-point across: rank i of A with rank i of B */
    if (r < rsize && r < s) {
        int mine = 100 * rank, theirs = -1;
        MPI_Status st;
        MPI_Sendrecv(&mine, 1, MPI_INT, r, 3, &theirs, 1, MPI_INT, r, 3, inter, &st);
        SAY("across got %d from remote rank %d tag %d", theirs, st.MPI_SOURCE, st.MPI_TAG);
    }

    /* rooted collectives, root = rank 0 of group A */
    int root = low ? (r == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int v = low ? 42 : -1;
    MPI_Bcast(&v, 1, MPI_INT, root, inter);
    SAY("bcast %d", v);
    int contrib = rank + 1, sum = -1;
    MPI_Reduce(&contrib, &sum, 1, MPI_INT, MPI_SUM, root, inter);
    SAY("reduce %d", root == MPI_ROOT ? sum : -1);
    int *all = calloc((size_t)size * 4, sizeof(int));
    MPI_Gather(&contrib, 1, MPI_INT, all, 1, MPI_INT, root, inter);
    if (root == MPI_ROOT) print_ints("gather", all, rsize);
    int *sendv = malloc(sizeof(int) * (size_t)size * 4);
    for (int i = 0; i < size * 4; i++) sendv[i] = 1000 + i;
    int got = -1;
    MPI_Scatter(sendv, 1, MPI_INT, &got, 1, MPI_INT, root, inter);
    SAY("scatter %d", low ? -1 : got);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) { counts[i] = 1; displs[i] = 2 * i; }
    for (int i = 0; i < size * 4; i++) all[i] = -1;
    MPI_Gatherv(&contrib, 1, MPI_INT, all, counts, displs, MPI_INT, root, inter);
    if (root == MPI_ROOT) print_ints("gatherv", all, 2 * rsize);

    /* all-to-all forms: outputs come from the remote group */
    for (int i = 0; i < size * 4; i++) all[i] = -1;
    MPI_Allgather(&contrib, 1, MPI_INT, all, 1, MPI_INT, inter);
    print_ints("allgather", all, rsize);
    MPI_Allreduce(&contrib, &sum, 1, MPI_INT, MPI_SUM, inter);
    SAY("allreduce %d", sum);
    for (int i = 0; i < rsize; i++) sendv[i] = 10 * rank + i;
    MPI_Alltoall(sendv, 1, MPI_INT, all, 1, MPI_INT, inter);
    print_ints("alltoall", all, rsize);
    MPI_Allgatherv(&contrib, 1, MPI_INT, all, counts, displs, MPI_INT, inter);
    print_ints("allgatherv", all, 2 * rsize - 1);
    MPI_Barrier(inter);

    /* nonblocking on the intercommunicator */
    MPI_Request req;
    v = low ? 7 : -1;
    MPI_Ibcast(&v, 1, MPI_INT, root, inter, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    SAY("ibcast %d", v);
    MPI_Iallreduce(&contrib, &sum, 1, MPI_INT, MPI_MAX, inter, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    SAY("iallreduce max %d", sum);

    /* merge: group A first */
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, !low, &merged);
    MPI_Comm_rank(merged, &r);
    MPI_Comm_size(merged, &s);
    MPI_Comm_test_inter(merged, &flag);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    SAY("merged inter %d rank %d size %d sum %d", flag, r, s, sum);

    MPI_Group_free(&wg);
    MPI_Group_free(&rg);
    MPI_Group_free(&lg);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    free(idx); free(out); free(all); free(sendv); free(counts); free(displs);
    SAY("done");
    MPI_Finalize();
    return 0;
}
