/* An application that aborts after its own file operation failed: rank 1 starts its run log, refusing to
 * overwrite the log of an earlier run (O_EXCL), and when it cannot, it says so and calls MPI_Abort with its own
 * error code (3).  The other ranks are in a collective by then.
 * Usage: own_abort LOGFILE [iterations before it opens the log] */
#include <mpi.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int before = argc > 2 ? atoi(argv[2]) : 5;
    double x = rank + 1, sum = 0, t0 = MPI_Wtime();
    for (int it = 0; it < before; it++) {
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        x = sum / size + it;
    }
    double dt = MPI_Wtime() - t0, worst = 0;
    MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("r0: warm-up sum %.6f\n", sum);
        fprintf(stderr, "warm-up took %.3f s\n", worst);
    }
    double scale = 1;
    if (rank == 1) {
        const char *log = argc > 1 ? argv[1] : "run.log";
        int fd = open(log, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0) {
            fprintf(stderr, "rank 1: cannot start the run log %s: %s\n", log, strerror(errno));
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        dprintf(fd, "warm-up sum %.6f\n", sum);
        close(fd);
        scale = 2;
    }
    MPI_Bcast(&scale, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
    x *= scale;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: result %.6f\n", rank, sum);
    MPI_Finalize();
    return 0;
}
