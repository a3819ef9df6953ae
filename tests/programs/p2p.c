/* Blocking point-to-point: every send mode, statuses, probes, derived types
 * with holes, zero-byte and large messages, MPI_PROC_NULL. */
#include "battery.h"
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>


static double checksum(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i] * (i % 7 + 1);
    return s;
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    int count;

    /* every send mode around the ring, received with an exact source and tag */
    int modes = 0;
    for (int mode = 0; mode < 4; mode++) {
        int out[3] = {rank, mode, rank * 10 + mode}, in[3] = {-1, -1, -1};
        if (rank % 2 == 0) {
            if (mode == 0) MPI_Send(out, 3, MPI_INT, right, mode, MPI_COMM_WORLD);
            if (mode == 1 && size > 1) MPI_Ssend(out, 3, MPI_INT, right, mode, MPI_COMM_WORLD);
            if (mode == 1 && size == 1) MPI_Send(out, 3, MPI_INT, right, mode, MPI_COMM_WORLD); /* Ssend to oneself would wait forever */
            if (mode == 2) MPI_Send(out, 3, MPI_INT, right, mode, MPI_COMM_WORLD); /* Rsend: needs a posted Irecv, see nonblocking.c */
            if (mode == 3) {
                int bsize = 3 * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
                void *b = malloc((size_t)bsize);
                MPI_Buffer_attach(b, bsize);
                MPI_Bsend(out, 3, MPI_INT, right, mode, MPI_COMM_WORLD);
                MPI_Buffer_detach(&b, &bsize);
                free(b);
            }
            MPI_Recv(in, 3, MPI_INT, left, mode, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(in, 3, MPI_INT, left, mode, MPI_COMM_WORLD, &st);
            MPI_Send(out, 3, MPI_INT, right, mode, MPI_COMM_WORLD);
        }
        MPI_Get_count(&st, MPI_INT, &count);
        modes += in[2];
        SAY("mode %d got %d %d %d from %d tag %d count %d", mode, in[0], in[1], in[2], st.MPI_SOURCE, st.MPI_TAG, count);
    }

    /* ANY_SOURCE / ANY_TAG: a gather by hand at rank 0, received in arrival order */
    if (rank == 0) {
        long total = 0;
        for (int i = 1; i < size; i++) {
            long v;
            MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG != 100 + st.MPI_SOURCE || v != st.MPI_SOURCE * 1000L) SAY("BAD any-source status");
            total += v;
        }
        SAY("any-source total %ld", total);
    } else {
        long v = rank * 1000L;
        MPI_Send(&v, 1, MPI_LONG, 0, 100 + rank, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* later messages must not match the ANY_TAG receives */

    /* probe then receive a message of unknown size */
    if (rank == 0 && size > 1) {
        for (int i = 1; i < size; i++) {
            MPI_Probe(i, 7, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_CHAR, &count);
            char *msg = malloc((size_t)count);
            MPI_Recv(msg, count, MPI_CHAR, st.MPI_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            SAY("probed %d bytes from %d: %s", count, st.MPI_SOURCE, msg);
            free(msg);
        }
    } else if (rank > 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "hello from rank %d%s", rank, rank % 2 ? " (odd)" : "");
        MPI_Send(msg, (int)strlen(msg) + 1, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
    }

    /* Iprobe polling, then the message */
    if (rank == size - 1 && size > 1) {
        int flag = 0, polls = 0;
        while (!flag) { MPI_Iprobe(0, 9, MPI_COMM_WORLD, &flag, &st); polls++; }
        int v;
        MPI_Recv(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, &st);
        SAY("iprobe found %d after polling (source %d)", v, st.MPI_SOURCE);
    } else if (rank == 0 && size > 1) {
        int v = 4242;
        MPI_Send(&v, 1, MPI_INT, size - 1, 9, MPI_COMM_WORLD);
    }

    /* a derived type with holes: every other double of a column-major block */
    double mat[6][4];
    for (int i = 0; i < 6; i++) for (int j = 0; j < 4; j++) mat[i][j] = rank * 100 + i * 4 + j;
    MPI_Datatype col;
    MPI_Type_vector(3, 1, 8, MPI_DOUBLE, &col); /* rows 0, 2, 4 of column j */
    MPI_Type_commit(&col);
    double recvd[6][4];
    memset(recvd, 0, sizeof recvd);
    MPI_Sendrecv(&mat[0][1], 1, col, right, 11, &recvd[0][2], 1, col, left, 11, MPI_COMM_WORLD, &st);
    SAY("vector column %g %g %g, untouched %g %g", recvd[0][2], recvd[2][2], recvd[4][2], recvd[1][2], recvd[0][1]);
    MPI_Type_free(&col);

    /* a struct type */
    struct item { int id; double w; char tag[5]; } it = {rank, rank * 1.5, "abcd"}, got;
    int bl[3] = {1, 1, 5};
    MPI_Aint dis[3] = {offsetof(struct item, id), offsetof(struct item, w), offsetof(struct item, tag)};
    MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, stype;
    MPI_Type_create_struct(3, bl, dis, ty, &stype);
    MPI_Type_commit(&stype);
    MPI_Sendrecv(&it, 1, stype, right, 12, &got, 1, stype, left, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    SAY("struct %d %.1f %s", got.id, got.w, got.tag);
    MPI_Type_free(&stype);

    /* Sendrecv_replace, a large message (beyond the small-message path) and zero bytes */
    int n = 1 << 17;
    double *big = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) big[i] = rank + i * 1e-3;
    MPI_Sendrecv_replace(big, n, MPI_DOUBLE, right, 13, left, 13, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    SAY("replace big %d doubles checksum %.3f", count, checksum(big, n));
    free(big);
    MPI_Sendrecv(NULL, 0, MPI_BYTE, right, 14, NULL, 0, MPI_BYTE, left, 14, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &count);
    SAY("zero bytes: count %d from %d", count, st.MPI_SOURCE);

    /* a short message into a long buffer: the count says how much arrived */
    double shortbuf[10] = {0};
    double two[2] = {rank, -rank};
    MPI_Sendrecv(two, 2, MPI_DOUBLE, right, 15, shortbuf, 10, MPI_DOUBLE, left, 15, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    SAY("short into long: count %d values %g %g %g", count, shortbuf[0], shortbuf[1], shortbuf[2]);

    /* MPI_PROC_NULL */
    MPI_Recv(&count, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    SAY("proc_null source %d tag %d", st.MPI_SOURCE == MPI_PROC_NULL, st.MPI_TAG == MPI_ANY_TAG);
    SAY("done modes %d", modes);
    MPI_Finalize();
    return 0;
}
