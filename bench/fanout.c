/* The representative's cost of feeding its copies: one rank, a loop of small
 * MPI_Allreduce calls (each result goes to every copy of the rank), timed by
 * the representative.  Prints "fanout <microseconds per call>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    double in[2] = {1, 2}, out[2], best = 1e9;
    for (int round = 0; round < 3; round++) {
        double t = MPI_Wtime();
        for (int i = 0; i < iters; i++) MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        if (t < best) best = t;
    }
    printf("fanout %.3f\n", best / iters * 1e6);
    MPI_Finalize();
    return 0;
}
