/* Broadcasts of a partly filled buffer, as a DFT code sends its wave-function coefficients: the buffer is sized
 * for the largest case and allocated afresh for every step, the program packs the coefficients this step has
 * and broadcasts (and sends to its neighbour) the whole buffer.  Its tail holds whatever malloc returned: memory
 * the program never wrote, recycled from its own earlier work arrays and from the MPI library's allocations.
 * Natively harmless (the receivers read only what was packed); the sums printed are the same on every run. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXC 600 /* coefficients the buffer is sized for */

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double check = 0;
    for (int step = 0; step < 20; step++) {
        /* work arrays of sizes that vary with the step, as an SCF loop's are */
        int nwork = 50 + 37 * (step % 7);
        double *work = malloc(sizeof(double) * (size_t)nwork * 8);
        for (int i = 0; i < nwork * 8; i++) work[i] = step * 0.5 + i;
        char *names = malloc(64 + (size_t)step * 16);
        snprintf(names, 64, "step %d", step);
        /* a communicator for this step's band group, made and freed */
        MPI_Comm group;
        MPI_Comm_dup(MPI_COMM_WORLD, &group);
        free(work);
        double *coef = malloc(sizeof(double) * MAXC);
        double *ring = malloc(sizeof(double) * 40); /* a small one, from the allocator's smallest chunks */
        int used = 100 + 23 * step % (MAXC - 100); /* coefficients this step has */
        for (int i = 0; i < used; i++) coef[i] = (double)(rank + 1) * step + 0.25 * i;
        for (int i = 0; i < 10; i++) ring[i] = i + rank;
        MPI_Bcast(coef, MAXC, MPI_DOUBLE, step % size, group);
        for (int i = 0; i < used; i++) check += coef[i];
        double *got = malloc(sizeof(double) * 40);
        MPI_Sendrecv(ring, 40, MPI_DOUBLE, (rank + 1) % size, step, got, 40, MPI_DOUBLE, (rank + size - 1) % size,
                     step, group, MPI_STATUS_IGNORE);
        for (int i = 0; i < 10; i++) check += got[i];
        MPI_Comm_free(&group);
        free(got);
        free(ring);
        free(coef);
        free(names);
    }
    double total = 0;
    MPI_Reduce(&check, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("r0: checksum %.2f\n", total);
    MPI_Finalize();
    return 0;
}
