/* Rank 1 works for a while before it answers (it sleeps, as a rank that waits
 * on a file system or a device would); rank 0 waits for it in MPI_Recv.  Each
 * process then prints the CPU time it used, read after MPI_Finalize (between
 * MPI_Init and MPI_Finalize a copy's getrusage is its representative's, as its
 * clocks are), so the test can see what waiting cost.  argv[1]: seconds. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    int value = 0;
    if (rank == 1) {
        usleep((useconds_t)(seconds * 1e6));
        value = 42;
        MPI_Send(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Recv(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    printf("r%d: got %d, cpu %.3f\n", rank, value, cpu);
    return 0;
}
