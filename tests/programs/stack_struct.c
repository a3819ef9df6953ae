/* A run's parameters in a struct on the stack, as codes broadcast their input: the root fills the fields this run
 * uses (the title as a C string, a few of the optional coefficients) and broadcasts the struct whole; the rest of
 * it is whatever the stack held there.  Natively harmless: every rank reads only the fields that were filled.
 * Each step first does its MPI work (a reduction, a ring exchange), then broadcasts the step's parameters. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

struct params {
    int step, ncoef;
    double dt;
    char title[96];   /* a C string: the bytes after its terminator are never written */
    double coef[40];  /* ncoef of them are used */
};

static double exchange(int rank, int size, int step) {
    double mine[16], got[16], sum = 0;
    for (int i = 0; i < 16; i++) mine[i] = rank + step * 0.5 + i;
    MPI_Sendrecv(mine, 16, MPI_DOUBLE, (rank + 1) % size, step, got, 16, MPI_DOUBLE, (rank + size - 1) % size, step,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(got, mine, 16, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 16; i++) sum += mine[i];
    return sum;
}

static double broadcast_params(int rank, int step) {
    struct params p;
    if (rank == 0) {
        p.step = step;
        p.ncoef = 3 + step % 5;
        p.dt = 1e-3 * (step + 1);
        snprintf(p.title, sizeof p.title, "step %d", step);
        for (int i = 0; i < p.ncoef; i++) p.coef[i] = 0.5 * i + step;
    }
    MPI_Bcast(&p, sizeof p, MPI_BYTE, 0, MPI_COMM_WORLD);
    double sum = p.dt + p.step + (double)strlen(p.title);
    for (int i = 0; i < p.ncoef; i++) sum += p.coef[i];
    return sum;
}

int main(int argc, char **argv) {
    int rank, nranks;
    double check = 0; /* every step's sums, printed at the end */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int step = 0; step < 10; step++) {
        check += exchange(rank, nranks, step);
        check += broadcast_params(rank, step);
    }
    printf("r%d: checksum %.4f\n", rank, check);
    MPI_Finalize();
    return 0;
}
