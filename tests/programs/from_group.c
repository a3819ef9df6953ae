/* An MPI-4 code that makes its working communicator from a group with MPI_Comm_create_from_group (no parent
 * communicator: only the group's ranks call it) and sums their loads on it.  The group is every rank, in reverse
 * order; with the argument "even", the even ranks.  Then each rank makes a logger communicator of itself alone. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int stride = argc > 1 && !strcmp(argv[1], "even") ? 2 : 1;
    int last = (size - 1) / stride * stride, workers[1][3] = {{last, 0, -stride}}; /* from the last rank down */
    MPI_Group everyone, group;
    MPI_Comm_group(MPI_COMM_WORLD, &everyone);
    MPI_Group_range_incl(everyone, 1, workers, &group);
    int me;
    MPI_Group_rank(group, &me);
    if (me != MPI_UNDEFINED) {
        MPI_Comm work;
        MPI_Comm_create_from_group(group, "org.example.work", MPI_INFO_NULL, MPI_ERRORS_RETURN, &work);
        int wrank;
        MPI_Comm_rank(work, &wrank);
        double load = 1.5 * (rank + 1), total = 0;
        int rc = MPI_Allreduce(&load, &total, 1, MPI_DOUBLE, MPI_SUM, work);
        printf("r%d: worker %d, total load %.1f (%s)\n", rank, wrank, total, rc == MPI_SUCCESS ? "ok" : "failed");
        MPI_Comm_free(&work);
    }
    /* a logger of its own: a communicator of this rank alone, from MPI_COMM_SELF's group */
    MPI_Group alone;
    MPI_Comm_group(MPI_COMM_SELF, &alone);
    MPI_Comm logger;
    MPI_Comm_create_from_group(alone, "org.example.logger", MPI_INFO_NULL, MPI_ERRORS_RETURN, &logger);
    int lsize = 0, lines = 3, logged = 0;
    MPI_Comm_size(logger, &lsize);
    MPI_Allreduce(&lines, &logged, 1, MPI_INT, MPI_SUM, logger);
    printf("r%d: logger of %d, %d lines\n", rank, lsize, logged);
    MPI_Comm_free(&logger);
    MPI_Group_free(&alone);
    MPI_Group_free(&group);
    MPI_Group_free(&everyone);
    MPI_Finalize();
    return 0;
}
