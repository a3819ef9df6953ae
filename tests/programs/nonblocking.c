/* Nonblocking and persistent traffic: a storm of Irecv/Isend completed with
 * Waitany and Testsome (completion order is MPI's choice: "order:" lines),
 * Rsend into a posted receive, persistent requests, nonblocking collectives. */
#include "battery.h"
#include <stdio.h>
#include <stdlib.h>


int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    enum { K = 8 };
    int n = size * K;
    int *in = calloc((size_t)n, sizeof(int)), *out = malloc(sizeof(int) * (size_t)n);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)n);
    for (int p = 0, i = 0; p < size; p++)
        for (int k = 0; k < K; k++, i++) {
            MPI_Irecv(&in[i], 1, MPI_INT, p, k, MPI_COMM_WORLD, &reqs[i]);
            out[i] = rank * 1000 + p * 10 + k;
        }
    for (int p = 0, i = 0; p < size; p++)
        for (int k = 0; k < K; k++, i++) MPI_Isend(&out[i], 1, MPI_INT, p, k, MPI_COMM_WORLD, &reqs[n + i]);
    /* receives by Waitany, in whatever order they complete */
    long total = 0;
    printf("r%d: order: waitany", rank);
    for (int done = 0; done < n; done++) {
        int idx;
        MPI_Status st;
        MPI_Waitany(n, reqs, &idx, &st);
        if (st.MPI_SOURCE != idx / K || st.MPI_TAG != idx % K) printf(" BAD");
        printf(" %d", idx);
        total += in[idx];
    }
    printf("\n");
    /* the sends by Testsome */
    int left = n, polls = 0;
    int *idx = malloc(sizeof(int) * (size_t)n);
    while (left > 0) {
        int outc;
        MPI_Testsome(n, reqs + n, &outc, idx, MPI_STATUSES_IGNORE);
        if (outc != MPI_UNDEFINED) left -= outc;
        polls++;
    }
    SAY("storm total %ld", total);

    /* Rsend into a receive that is known to be posted */
    int token = -1, v = rank * 7;
    MPI_Request r;
    MPI_Irecv(&token, 1, MPI_INT, (rank + size - 1) % size, 77, MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Rsend(&v, 1, MPI_INT, (rank + 1) % size, 77, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    SAY("rsend got %d", token);

    /* persistent requests, started three times */
    double sbuf, rbuf, acc = 0;
    MPI_Request pr[2];
    MPI_Recv_init(&rbuf, 1, MPI_DOUBLE, (rank + size - 1) % size, 5, MPI_COMM_WORLD, &pr[0]);
    MPI_Send_init(&sbuf, 1, MPI_DOUBLE, (rank + 1) % size, 5, MPI_COMM_WORLD, &pr[1]);
    for (int it = 0; it < 3; it++) {
        sbuf = rank + it * 0.5;
        MPI_Startall(2, pr);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        acc += rbuf;
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);
    SAY("persistent sum %.1f", acc);

    /* Test until done, then Request_get_status on a finished request */
    int flag = 0;
    MPI_Irecv(&token, 1, MPI_INT, (rank + 1) % size, 78, MPI_COMM_WORLD, &r);
    MPI_Send(&rank, 1, MPI_INT, (rank + size - 1) % size, 78, MPI_COMM_WORLD);
    while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    SAY("test got %d null %d", token, r == MPI_REQUEST_NULL);

    /* nonblocking collectives, completed together */
    long a = rank + 1, s = 0, *g = calloc((size_t)size, sizeof(long)), bc = rank == 0 ? 99 : 0;
    MPI_Request cr[3];
    MPI_Iallreduce(&a, &s, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &cr[0]);
    MPI_Iallgather(&a, 1, MPI_LONG, g, 1, MPI_LONG, MPI_COMM_WORLD, &cr[1]);
    MPI_Ibcast(&bc, 1, MPI_LONG, 0, MPI_COMM_WORLD, &cr[2]);
    MPI_Waitall(3, cr, MPI_STATUSES_IGNORE);
    long gs = 0;
    for (int i = 0; i < size; i++) gs += g[i] * (i + 1);
    SAY("iallreduce %ld iallgather %ld ibcast %ld", s, gs, bc);
    MPI_Request br;
    MPI_Ibarrier(MPI_COMM_WORLD, &br);
    MPI_Wait(&br, MPI_STATUS_IGNORE);
    free(in); free(out); free(reqs); free(idx); free(g);
    SAY("done");
    MPI_Finalize();
    return 0;
}
