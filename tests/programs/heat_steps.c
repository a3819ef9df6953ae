/* A 1-D heat solver as an application writes one: parameters broadcast from rank 0, a halo exchange with
 * nonblocking calls, a residual reduced every step, a checkpoint gathered every 10th step, and the program's own
 * timers of its phases reduced and printed at the end. Its compute phases (the stencil) take milliseconds, so
 * the time between MPI calls is the program's own. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int params[2] = {0, 0}; /* steps, cells per rank */
    if (rank == 0) {
        params[0] = argc > 1 ? atoi(argv[1]) : 30;
        params[1] = 200000;
    }
    MPI_Bcast(params, 2, MPI_INT, 0, MPI_COMM_WORLD);
    int steps = params[0], n = params[1];
    double *u = malloc((size_t)(n + 2) * sizeof(double)), *v = malloc((size_t)(n + 2) * sizeof(double));
    for (int i = 0; i < n + 2; i++) u[i] = (double)((rank * n + i) % 97);
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double t_halo = 0, t_comp = 0, t0, res = 0;
    double *snap = rank == 0 ? malloc((size_t)size * 4 * sizeof(double)) : NULL;
    for (int s = 0; s < steps; s++) {
        t0 = MPI_Wtime();
        MPI_Request req[4];
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(&u[n + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(&u[n], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        t_halo += MPI_Wtime() - t0;
        t0 = MPI_Wtime();
        double local = 0;
        for (int rep = 0; rep < 4; rep++)
            for (int i = 1; i <= n; i++) {
                v[i] = u[i] + 0.2 * (u[i - 1] - 2 * u[i] + u[i + 1]);
                local += (v[i] - u[i]) * (v[i] - u[i]);
            }
        for (int i = 1; i <= n; i++) u[i] = v[i];
        t_comp += MPI_Wtime() - t0;
        MPI_Allreduce(&local, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (s % 10 == 9) {
            double mine[4] = {u[1], u[n / 2], u[n], res};
            MPI_Gather(mine, 4, MPI_DOUBLE, snap, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (rank == 0) printf("r0: step %d residual %.6e\n", s + 1, res);
        }
    }
    double mine[2] = {t_halo, t_comp}, worst[2];
    MPI_Reduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("r0: halo %.3f s compute %.3f s (slowest rank)\n", worst[0], worst[1]);
    printf("r%d: done\n", rank);
    free(u);
    free(v);
    free(snap);
    MPI_Finalize();
    return 0;
}
