/* MPI-4's large-count calls (MPI_X_c) called directly: point-to-point blocking and nonblocking, probes and
 * matched receives, MPI_Get_count_c on the statuses, blocking, nonblocking and persistent collectives with
 * v-counts, a neighbourhood collective, one-sided with a large-count window.
 *
 * Against an mpi.h without them (Open MPI 5.0 says MPI 3.1) the same program calls the int forms, so its
 * output is the same on every MPI. */
#include "battery.h"
#include <stdlib.h>

#if MPI_VERSION >= 4
#define C(fn) fn##_c
typedef MPI_Count count_t;
typedef MPI_Aint displ_t;
typedef MPI_Aint unit_t;
#else
#define C(fn) fn
typedef int count_t;
typedef int displ_t;
typedef int unit_t;
#endif

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* blocking point-to-point, and what the status counts */
    double out[6], in[6] = {0};
    for (int i = 0; i < 6; i++) out[i] = rank * 10 + i + 0.5;
    MPI_Status st;
    C(MPI_Sendrecv)(out, 6, MPI_DOUBLE, next, 7, in, 6, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, &st);
    count_t n = -1;
    C(MPI_Get_count)(&st, MPI_DOUBLE, &n);
    SAY("sendrecv_c %g %g source %d tag %d count %lld", in[0], in[5], st.MPI_SOURCE, st.MPI_TAG, (long long)n);

    if (rank == 0 && size > 1) {
        C(MPI_Send)(out, 4, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD);
        C(MPI_Ssend)(out, 2, MPI_DOUBLE, 1, 4, MPI_COMM_WORLD);
    } else if (rank == 1) {
        C(MPI_Recv)(in, 6, MPI_DOUBLE, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &st);
        C(MPI_Get_count)(&st, MPI_DOUBLE, &n);
        SAY("recv_c %g %g count %lld", in[0], in[3], (long long)n);
        MPI_Message msg;
        MPI_Mprobe(0, 4, MPI_COMM_WORLD, &msg, &st);
        C(MPI_Get_count)(&st, MPI_DOUBLE, &n);
        C(MPI_Mrecv)(in, n, MPI_DOUBLE, &msg, &st);
        SAY("mrecv_c %g %g count %lld", in[0], in[1], (long long)n);
    }

    /* nonblocking point-to-point */
    int iout[5], iin[5] = {0};
    for (int i = 0; i < 5; i++) iout[i] = 100 * rank + i;
    MPI_Request rq[2];
    C(MPI_Irecv)(iin, 5, MPI_INT, prev, 9, MPI_COMM_WORLD, &rq[0]);
    C(MPI_Isend)(iout, 5, MPI_INT, next, 9, MPI_COMM_WORLD, &rq[1]);
    MPI_Status sts[2];
    MPI_Waitall(2, rq, sts);
    C(MPI_Get_count)(&sts[0], MPI_INT, &n);
    print_ints("irecv_c", iin, 5);
    SAY("irecv_c count %lld", (long long)n);

    /* persistent point-to-point, started twice */
    C(MPI_Recv_init)(iin, 5, MPI_INT, prev, 11, MPI_COMM_WORLD, &rq[0]);
    C(MPI_Send_init)(iout, 5, MPI_INT, next, 11, MPI_COMM_WORLD, &rq[1]);
    for (int round = 0; round < 2; round++) {
        iout[0] = 1000 * round + rank;
        MPI_Startall(2, rq);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        SAY("persistent_c round %d got %d", round, iin[0]);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);

    /* blocking collectives */
    long b[3] = {0};
    if (rank == 0) b[0] = 7, b[1] = 8, b[2] = 9;
    C(MPI_Bcast)(b, 3, MPI_LONG, 0, MPI_COMM_WORLD);
    SAY("bcast_c %ld %ld %ld", b[0], b[1], b[2]);
    long mine[2] = {rank + 1, 10 * (rank + 1)}, sum[2] = {0};
    C(MPI_Allreduce)(mine, sum, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    SAY("allreduce_c %ld %ld", sum[0], sum[1]);
    C(MPI_Reduce)(mine, sum, 2, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) SAY("reduce_c %ld %ld", sum[0], sum[1]);

    /* v-collectives: rank r gives r+1 ints */
    count_t *counts = malloc((size_t)size * sizeof(count_t));
    displ_t *displs = malloc((size_t)size * sizeof(displ_t));
    int total = 0;
    for (int r = 0; r < size; r++) counts[r] = r + 1, displs[r] = total, total += r + 1;
    int *gathered = calloc((size_t)total, sizeof(int));
    int contribution[64];
    for (int i = 0; i <= rank; i++) contribution[i] = 10 * rank + i;
    C(MPI_Allgatherv)(contribution, rank + 1, MPI_INT, gathered, counts, displs, MPI_INT, MPI_COMM_WORLD);
    print_ints("allgatherv_c", gathered, total);
    int *g2 = calloc((size_t)total, sizeof(int));
    C(MPI_Gatherv)(contribution, rank + 1, MPI_INT, g2, rank == 0 ? counts : NULL, rank == 0 ? displs : NULL,
                   MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) print_ints("gatherv_c", g2, total);
    int sc[64] = {0};
    C(MPI_Scatterv)(gathered, counts, displs, MPI_INT, sc, rank + 1, MPI_INT, size - 1, MPI_COMM_WORLD);
    print_ints("scatterv_c", sc, rank + 1);

    /* alltoallv: rank r sends r+1 ints to everyone */
    count_t *sendcounts = malloc((size_t)size * sizeof(count_t));
    displ_t *sdispls = malloc((size_t)size * sizeof(displ_t));
    int *sendbuf = malloc((size_t)size * (size_t)(rank + 1) * sizeof(int));
    for (int r = 0; r < size; r++) {
        sendcounts[r] = rank + 1, sdispls[r] = r * (rank + 1);
        for (int i = 0; i <= rank; i++) sendbuf[r * (rank + 1) + i] = 1000 * rank + 10 * r + i;
    }
    int *a2a = calloc((size_t)total, sizeof(int));
    C(MPI_Alltoallv)(sendbuf, sendcounts, sdispls, MPI_INT, a2a, counts, displs, MPI_INT, MPI_COMM_WORLD);
    print_ints("alltoallv_c", a2a, total);

    /* nonblocking and persistent v-collectives: the counts must live until completion */
    int *ia = calloc((size_t)total, sizeof(int));
    MPI_Request r1;
    C(MPI_Iallgatherv)(contribution, rank + 1, MPI_INT, ia, counts, displs, MPI_INT, MPI_COMM_WORLD, &r1);
    MPI_Wait(&r1, MPI_STATUS_IGNORE);
    print_ints("iallgatherv_c", ia, total);
#if MPI_VERSION >= 4
    for (int round = 0; round < 2; round++) {
        for (int r = 0; r < size; r++)
            for (int i = 0; i <= rank; i++) sendbuf[r * (rank + 1) + i] = 100 * round + 10 * rank + r;
        C(MPI_Alltoallv_init)(sendbuf, sendcounts, sdispls, MPI_INT, a2a, counts, displs, MPI_INT, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &r1);
        MPI_Start(&r1);
        MPI_Wait(&r1, MPI_STATUS_IGNORE);
        MPI_Request_free(&r1);
        print_ints("alltoallv_init_c", a2a, total);
    }
#endif
    long ib[2] = {0};
    if (rank == size - 1) ib[0] = 31, ib[1] = 32;
    C(MPI_Ibcast)(ib, 2, MPI_LONG, size - 1, MPI_COMM_WORLD, &r1);
    MPI_Wait(&r1, MPI_STATUS_IGNORE);
    SAY("ibcast_c %ld %ld", ib[0], ib[1]);

    /* a neighbourhood collective on a ring */
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int nb[2] = {0};
    int me = 50 + rank;
    C(MPI_Neighbor_allgather)(&me, 1, MPI_INT, nb, 1, MPI_INT, ring);
    SAY("neighbor_allgather_c %d %d", nb[0], nb[1]);
    MPI_Comm_free(&ring);

    /* one-sided: each rank puts into its neighbour's window */
    int *base;
    MPI_Win win;
    C(MPI_Win_allocate)(4 * sizeof(int), (unit_t)sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (int i = 0; i < 4; i++) base[i] = -1;
    MPI_Win_fence(0, win);
    int put[2] = {rank * 3, rank * 3 + 1};
    C(MPI_Put)(put, 2, MPI_INT, next, 1, 2, MPI_INT, win);
    MPI_Win_fence(0, win);
    print_ints("win_c", base, 4);
    int got[2] = {0};
    C(MPI_Get)(got, 2, MPI_INT, prev, 1, 2, MPI_INT, win);
    MPI_Win_fence(0, win);
    print_ints("get_c", got, 2);
    MPI_Win_free(&win);

    free(counts); free(displs); free(gathered); free(g2); free(sendcounts); free(sdispls); free(sendbuf);
    free(a2a); free(ia);
    SAY("done");
    MPI_Finalize();
    return 0;
}
