/* Dies on purpose: `crash RANK COPY segv|exit|abort` makes that copy of that rank
 * crash (or exit without MPI_Finalize, or abort()) in the middle of a loop of collectives.
 * COPY is matched against ECHO_COPY, which echo sets in every process. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int target_rank = argc > 1 ? atoi(argv[1]) : -1, target_copy = argc > 2 ? atoi(argv[2]) : 0;
    const char *how = argc > 3 ? argv[3] : "segv";
    const char *copy_env = getenv("ECHO_COPY");
    int copy = copy_env ? atoi(copy_env) : 0;
    double v = rank, sum;
    for (int step = 0; step < 10; step++) {
        if (step == 3 && rank == target_rank && copy == target_copy) {
            fprintf(stderr, "rank %d copy %d crashing now\n", rank, copy);
            if (strcmp(how, "exit") == 0) exit(3);
            if (strcmp(how, "abort") == 0) abort();
            raise(SIGSEGV);
        }
        MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    printf("r%d: sum %g\n", rank, sum);
    MPI_Finalize();
    return 0;
}
