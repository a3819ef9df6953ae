/* A proxy-application loop: a 1-D stencil with halo exchange every step and a
 * residual Allreduce every 10 steps, with enough compute per step that, as in
 * real codes, MPI is a small part of the time.
 * Prints "proxy <seconds>" and "calls <MPI calls per rank>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = 200000, steps = argc > 1 ? atoi(argv[1]) : 300;
    double *u = calloc(n + 2, sizeof(double)), *v = calloc(n + 2, sizeof(double));
    for (int i = 1; i <= n; i++) u[i] = (rank * n + i) % 17;
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    long calls = 0;
    double res = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int s = 0; s < steps; s++) {
        MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[n + 1], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[n], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        calls += 2;
        for (int i = 1; i <= n; i++) v[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
        double *w = u; u = v; v = w;
        if (s % 10 == 0) {
            double local = 0;
            for (int i = 1; i <= n; i++) local += u[i] * u[i];
            MPI_Allreduce(&local, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            calls++;
        }
    }
    t = MPI_Wtime() - t;
    if (rank == 0) printf("proxy %.6f\ncalls %ld\nresidual %.6e\n", t, calls, res);
    free(u); free(v);
    MPI_Finalize();
    return 0;
}
