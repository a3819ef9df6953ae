/* A hybrid MPI + OpenMP solver written the way DFT codes are: it asks for MPI_THREAD_SERIALIZED and refuses to
 * run with less, then calls MPI from inside its parallel regions on whichever thread gets there (`omp single`)
 * and on each thread in turn (a rotation between barriers), one at a time.  It times its phases with
 * omp_get_wtime, on those threads too, reduces the timers and prints them.  Prints "rR: ..." lines. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 20000

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_SERIALIZED) {
        if (rank == 0) fprintf(stderr, "MPI does not support the requested level of threading (%d < %d)\n",
                               provided, MPI_THREAD_SERIALIZED);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    printf("r%d: provided %s\n", rank, provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED" : "more");
    double *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (rank * N + i) % 13;
    double t_comm = 0, t_step = 0, energy = 0, local = 0;
    double t_start = omp_get_wtime();
    omp_set_num_threads(3);
#pragma omp parallel
    {
        int me = omp_get_thread_num(), nt = omp_get_num_threads();
        for (int step = 0; step < 12; step++) {
#pragma omp single
            local = 0;
#pragma omp for reduction(+ : local)
            for (int i = 0; i < N; i++) {
                x[i] = 0.5 * x[i] + 0.25 * ((i + step) % 7);
                local += x[i] * x[i];
            }
            /* the global sum, on whichever thread arrives first */
#pragma omp single
            {
                double t0 = omp_get_wtime();
                double sum;
                MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                energy = sum;
                t_comm += omp_get_wtime() - t0;
            }
            /* a halo exchange made by each thread in turn */
            if (me == step % nt) {
                double t0 = omp_get_wtime();
                int right = (rank + 1) % size, left = (rank + size - 1) % size;
                MPI_Sendrecv(&x[N - 1], 1, MPI_DOUBLE, right, step, &x[0], 1, MPI_DOUBLE, left, step,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                t_comm += omp_get_wtime() - t0;
                t_step = omp_get_wtime() - t_start;
            }
#pragma omp barrier
        }
    }
    double t_total = omp_get_wtime() - t_start, timers[3] = {t_comm, t_step, t_total}, max[3];
    MPI_Reduce(timers, max, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    printf("r%d: energy %.6f\n", rank, energy);
    if (rank == 0) printf("r0: timers comm %.6f last step %.6f total %.6f\n", max[0], max[1], max[2]);
    free(x);
    MPI_Finalize();
    return 0;
}
