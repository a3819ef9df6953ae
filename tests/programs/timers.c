/* A heat-equation solver written the way application codes are: it times its
 * phases with every clock a C code uses, reduces the timers (MAX and SUM) and
 * prints them, and runs as many steps as fit in a time budget (argv[1]
 * seconds, default 0.3), so its step count depends on time too.  Under copies
 * every copy must agree on all of it, or SDC detection would flag a clean run.
 * Prints "rR: ..." lines: the physics, the step count, then the timers. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#define N 2000

static double wall_gtod(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double budget = argc > 1 ? atof(argv[1]) : 0.3;
    time_t started = time(NULL);
    clock_t cpu0 = clock();
    double *u = calloc(N + 2, sizeof *u), *v = calloc(N + 2, sizeof *v);
    for (int i = 1; i <= N; i++) u[i] = (rank * N + i) % 17;
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double t_halo = 0, t_comp = 0, t_red = 0, residual = 0;
    double t0 = MPI_Wtime(), g0 = wall_gtod();
    int steps = 0, go = 1;
    while (go) {
        double a = mono();
        MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[N + 1], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[N], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        double b = mono();
        t_halo += b - a;
        double local = 0;
        for (int i = 1; i <= N; i++) {
            v[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]);
            local += (v[i] - u[i]) * (v[i] - u[i]);
        }
        double *w = u; u = v; v = w;
        t_comp += mono() - b;
        double c = MPI_Wtime();
        MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t_red += MPI_Wtime() - c;
        steps++;
        /* rank 0 decides when the budget is spent; everyone follows */
        go = MPI_Wtime() - t0 < budget;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    double elapsed = MPI_Wtime() - t0, elapsed_gtod = wall_gtod() - g0;
    double cpu = (double)(clock() - cpu0) / CLOCKS_PER_SEC;
    double mine[5] = {elapsed, t_halo, t_comp, t_red, cpu}, maxes[5], sums[5];
    MPI_Reduce(mine, maxes, 5, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, sums, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double gtod_max;
    MPI_Allreduce(&elapsed_gtod, &gtod_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long wall_s = (long)(time(NULL) - started), wall_max;
    MPI_Allreduce(&wall_s, &wall_max, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    printf("r%d: residual %.10e after %d steps\n", rank, residual, steps);
    if (rank == 0)
        printf("r0: time %.6f s (gettimeofday %.6f s, %ld s by time()); halo %.6f comp %.6f reduce %.6f cpu %.3f "
               "(max); sum of halo %.6f\n", maxes[0], gtod_max, wall_max, maxes[1], maxes[2], maxes[3], maxes[4],
               sums[1]);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}
