/* What a clock read costs the application: the time-stamp counter (rdtsc), clock_gettime, MPI_Wtime, one cheap
 * MPI call (MPI_Iprobe on a quiet communicator) and a small MPI_Allreduce (in which Open MPI's progress engine
 * reads the counter itself), each in a tight loop.  Under copies echo traps the application's rdtsc
 * (preload/core/echo_tsc.c) and its clocks then go to the kernel.
 * Prints "<operation> <ns per operation>" lines on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static double per(double seconds, int n) { return seconds / n * 1e9; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, flag;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int reads = 100000, calls = 500000;
    static volatile unsigned long long sink;
    double t = MPI_Wtime();
    for (int i = 0; i < reads; i++) sink = __rdtsc();
    double tsc = per(MPI_Wtime() - t, reads);
    struct timespec ts;
    t = MPI_Wtime();
    for (int i = 0; i < reads; i++) clock_gettime(CLOCK_MONOTONIC, &ts);
    double cg = per(MPI_Wtime() - t, reads);
    t = MPI_Wtime();
    for (int i = 0; i < calls; i++) MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    double call = per(MPI_Wtime() - t, calls);
    static volatile double wsink;
    t = MPI_Wtime();
    for (int i = 0; i < reads; i++) wsink = MPI_Wtime();
    double wt = per(MPI_Wtime() - t, reads);
    double mine = rank, sum;
    const int reductions = 20000;
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    for (int i = 0; i < reductions; i++) MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double red = per(MPI_Wtime() - t, reductions);
    if (rank == 0)
        printf("rdtsc %.1f\nclock_gettime %.1f\nMPI_Wtime %.1f\nmpicall %.1f\nallreduce %.1f\n", tsc, cg, wt, call,
               red);
    MPI_Finalize();
    return 0;
}
