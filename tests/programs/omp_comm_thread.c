/* A hybrid MPI + OpenMP kernel written the way sparse-matrix libraries overlap communication with computation
 * (DBCSR's multiplication, under CP2K): it asks for MPI_THREAD_SERIALIZED, and in each step thread 0 posts the
 * ring exchange of the next panel with MPI_Irecv/MPI_Isend and polls it with MPI_Testany between small pieces of
 * work, while the other threads multiply the current panel and time every block they do with omp_get_wtime.
 * Timers are reduced over ranks and printed, with a checksum.  Prints "rR: ..." lines. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096
#define BLOCKS 4000
#define STEPS 6

static volatile double sink;

static double work(double *v, int n, int salt) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        v[i] = 0.5 * v[i] + 0.25 * ((i + salt) % 7);
        s += v[i] * v[i];
    }
    return s;
}

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED) MPI_Abort(MPI_COMM_WORLD, 1); /* thread 0 polls while others time */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *panel = malloc(N * sizeof *panel), *next = malloc(N * sizeof *next);
    for (int i = 0; i < N; i++) panel[i] = (rank * N + i) % 11;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double t_mult = 0, t_comm = 0, checksum = 0;
    for (int step = 0; step < STEPS; step++) {
        MPI_Request reqs[2];
        double step_sum = 0;
#pragma omp parallel reduction(+ : step_sum, t_mult)
        {
            int me = omp_get_thread_num(), nt = omp_get_num_threads();
            if (me == 0) {
                double t0 = omp_get_wtime();
                MPI_Irecv(next, N, MPI_DOUBLE, left, step, MPI_COMM_WORLD, &reqs[0]);
                MPI_Isend(panel, N, MPI_DOUBLE, right, step, MPI_COMM_WORLD, &reqs[1]);
                double *scratch = calloc(N, sizeof *scratch);
                for (int done = 0; done < 2;) {
                    int idx, flag;
                    MPI_Testany(2, reqs, &idx, &flag, MPI_STATUS_IGNORE);
                    if (flag && idx != MPI_UNDEFINED) done++;
                    sink = work(scratch, N, step); /* a little of our own work between polls */
                }
                t_comm += omp_get_wtime() - t0;
                free(scratch);
            }
            /* the other threads (all of them, with one thread) multiply the panel, block by block */
            int workers = nt > 1 ? nt - 1 : 1, w = nt > 1 ? me - 1 : 0;
            if (nt == 1 || me > 0) {
                double block[N / 64];
                for (int b = w; b < BLOCKS; b += workers) {
                    double t0 = omp_get_wtime();
                    for (int i = 0; i < N / 64; i++) block[i] = panel[(b * 7 + i) % N];
                    step_sum += work(block, N / 64, b + step);
                    t_mult += omp_get_wtime() - t0;
                }
            }
        }
        checksum += step_sum;
        double *t = panel;
        panel = next;
        next = t;
    }
    double times[2] = {t_mult, t_comm}, tmax[2], total;
    MPI_Reduce(times, tmax, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&checksum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: checksum %.6e\n", rank, total);
    if (rank == 0) printf("r%d: timers multiply %.3f s, communicate %.3f s (max over ranks)\n", rank, tmax[0], tmax[1]);
    printf("r%d: done\n", rank);
    free(panel);
    free(next);
    MPI_Finalize();
    return 0;
}
