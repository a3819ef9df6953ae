/* padded_types.c: rank 0 sends every third long double of an array (a strided vector), long double + int pairs
 * (MPI_LONG_DOUBLE_INT) and particles (a struct type with holes) to rank 1, which compares the bytes it received
 * with the sender's (both fill their buffers the same way first) with memcmp, as MPICH's datatype/sendrecvt2
 * does; then rank 0 gathers every rank's column (its own included) and compares them the same way, and every
 * rank sends its column to itself, as a periodic halo exchange does when one process spans a direction.  A long
 * double is 10 bytes of x87 value in 16: what the other 6 carry is up to the MPI's transfer; the program prints
 * how many bytes differ, so a run under echo can be compared with the native one. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define N 8
#define STRIDE 3

struct particle {
    char kind;
    double mass;
    short id;
};

struct ldi {
    long double v;
    int i;
};

static int differing(const void *a, const void *b, size_t n) {
    int d = 0;
    for (size_t i = 0; i < n; i++) d += ((const unsigned char *)a)[i] != ((const unsigned char *)b)[i];
    return d;
}

static void fill(long double *a, struct ldi *li, struct particle *p) {
    memset(a, 0x80, sizeof(long double) * N * STRIDE); /* a pattern the receiver can recognize */
    memset(li, 0x80, sizeof(struct ldi) * N);
    memset(p, 0x80, sizeof(struct particle) * N);
    for (int i = 0; i < N * STRIDE; i++) a[i] = 1.5L * i;
    for (int i = 0; i < N; i++) li[i].v = 2.5L * i, li[i].i = i;
    for (int i = 0; i < N; i++) p[i].kind = (char)('a' + i), p[i].mass = 0.5 * i, p[i].id = (short)i;
}

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    long double a[N * STRIDE], b[N * STRIDE];
    struct ldi li[N], lj[N];
    struct particle p[N], q[N];
    fill(a, li, p);

    MPI_Datatype column, particle0, particle;
    MPI_Type_vector(N, 1, STRIDE, MPI_LONG_DOUBLE, &column);
    MPI_Type_commit(&column);
    int lens[3] = {1, 1, 1};
    MPI_Aint disp[3] = {offsetof(struct particle, kind), offsetof(struct particle, mass),
                        offsetof(struct particle, id)};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT};
    MPI_Type_create_struct(3, lens, disp, types, &particle0);
    MPI_Type_create_resized(particle0, 0, sizeof(struct particle), &particle);
    MPI_Type_commit(&particle);

    if (rank == 0) {
        MPI_Send(a, 1, column, 1, 1, MPI_COMM_WORLD);
        MPI_Send(li, N, MPI_LONG_DOUBLE_INT, 1, 2, MPI_COMM_WORLD);
        MPI_Send(p, N, particle, 1, 3, MPI_COMM_WORLD);
        printf("r%d: sent %d long doubles, %d pairs, %d particles\n", rank, N, N, N);
    } else if (rank == 1) {
        memset(b, 0, sizeof b);
        memset(lj, 0, sizeof lj);
        memset(q, 0, sizeof q);
        MPI_Recv(b, 1, column, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(lj, N, MPI_LONG_DOUBLE_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(q, N, particle, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int d = 0;
        for (int i = 0; i < N; i++) d += differing(&a[i * STRIDE], &b[i * STRIDE], sizeof(long double));
        printf("r%d: column of long doubles: %d of %d bytes differ\n", rank, d, (int)(N * sizeof(long double)));
        printf("r%d: long double int pairs: %d of %d bytes differ (values %s)\n", rank, differing(li, lj, sizeof li),
               (int)sizeof li, lj[N - 1].v == li[N - 1].v && lj[N - 1].i == li[N - 1].i ? "equal" : "wrong");
        printf("r%d: particles: %d of %d bytes differ (last id %d)\n", rank, differing(p, q, sizeof p), (int)sizeof p,
               q[N - 1].id);
    }
    /* the same columns gathered into rank 0's table, one row of STRIDE long doubles per rank */
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype row;
    MPI_Type_create_resized(column, 0, sizeof(long double), &row);
    MPI_Type_commit(&row);
    long double table[N * STRIDE];
    memset(table, 0, sizeof table);
    if (size <= STRIDE) {
        MPI_Gather(a, 1, row, table, 1, row, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            int d = 0;
            for (int r = 0; r < size; r++)
                for (int i = 0; i < N; i++)
                    d += differing(&a[i * STRIDE], &table[r + i * STRIDE], sizeof(long double));
            printf("r%d: gathered columns: %d of %d bytes differ\n", rank, d, (int)(size * N * sizeof(long double)));
        }
    }
    MPI_Type_free(&row);

    long double halo[N * STRIDE];
    memset(halo, 0, sizeof halo);
    MPI_Request req;
    MPI_Irecv(halo, 1, column, rank, 4, MPI_COMM_WORLD, &req);
    MPI_Send(a, 1, column, rank, 4, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    int h = 0;
    for (int i = 0; i < N; i++) h += differing(&a[i * STRIDE], &halo[i * STRIDE], sizeof(long double));
    printf("r%d: own column through MPI: %d of %d bytes differ\n", rank, h, (int)(N * sizeof(long double)));
    MPI_Type_free(&column);
    MPI_Type_free(&particle);
    MPI_Type_free(&particle0);
    MPI_Finalize();
    return 0;
}
