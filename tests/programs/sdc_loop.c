/* An iterative computation whose data goes through MPI at every step:
 * a halo Sendrecv, an Allreduce, and (every 5th step) a send of a derived type
 * with holes.  The final numbers depend on every message, so a corrupted send
 * that is not corrected changes them. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double u[64], halo[2], sum = 0;
    for (int i = 0; i < 64; i++) u[i] = rank * 64 + i;
    MPI_Datatype everyother; /* 8 doubles with a double-sized hole after each */
    MPI_Type_vector(8, 1, 2, MPI_DOUBLE, &everyother);
    MPI_Type_commit(&everyother);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int step = 0; step < 20; step++) {
        MPI_Sendrecv(&u[0], 2, MPI_DOUBLE, right, step, halo, 2, MPI_DOUBLE, left, step, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        for (int i = 0; i < 64; i++) u[i] = 0.5 * u[i] + 0.25 * (halo[0] + halo[1]) + 1e-3 * i;
        double local = 0;
        for (int i = 0; i < 64; i++) local += u[i];
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (step % 5 == 4) {
            double in[16] = {0};
            MPI_Sendrecv(u, 1, everyother, right, 100, in, 1, everyother, left, 100, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            u[1] += 1e-6 * in[2];
        }
    }
    printf("r%d: sum %.12e u0 %.12e\n", rank, sum, u[0]);
    printf("r%d: done\n", rank);
    MPI_Type_free(&everyother);
    MPI_Finalize();
    return 0;
}
