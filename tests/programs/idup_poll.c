/* A code that gives its I/O library a communicator of its own: it starts MPI_Comm_idup_with_info (with a hint),
 * keeps computing its local sums while it polls the duplication with MPI_Test, completes it together with a
 * nonblocking barrier in one MPI_Waitall, then passes a token around a ring on the new communicator and reduces
 * its sums there.  The hint's value is read back from the new communicator. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Info hints;
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "mpi_assert_no_any_tag", "true");
    MPI_Comm io;
    MPI_Request reqs[2];
    MPI_Comm_idup_with_info(MPI_COMM_WORLD, hints, &io, &reqs[0]);
    MPI_Info_free(&hints);
    double local = 0;
    int done = 0;
    for (int i = 0; i < 200000; i++) {
        local += (rank + 1) * 1e-3 / (1.0 + i % 7);
        if (i % 1000 == 0 && !done) MPI_Test(&reqs[0], &done, MPI_STATUS_IGNORE);
    }
    if (done) reqs[0] = MPI_REQUEST_NULL;
    MPI_Ibarrier(MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    int iorank, iosize, token = rank == 0 ? 1 : 0;
    MPI_Comm_rank(io, &iorank);
    MPI_Comm_size(io, &iosize);
    if (iorank == 0) {
        MPI_Send(&token, 1, MPI_INT, 1 % iosize, 3, io);
        MPI_Recv(&token, 1, MPI_INT, iosize - 1, 3, io, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&token, 1, MPI_INT, iorank - 1, 3, io, MPI_STATUS_IGNORE);
        token = token * 2 + iorank;
        MPI_Send(&token, 1, MPI_INT, (iorank + 1) % iosize, 3, io);
    }
    double total = 0;
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, io);
    MPI_Info got;
    char value[MPI_MAX_INFO_VAL + 1] = "unset";
    int flag = 0;
    MPI_Comm_get_info(io, &got);
    MPI_Info_get(got, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, value, &flag);
    MPI_Info_free(&got);
    printf("r%d: io rank %d of %d, token %d, hint %s\n", rank, iorank, iosize, token, flag ? value : "unset");
    if (iorank == 0) printf("r%d: total %.6f\n", rank, total);
    MPI_Comm_free(&io);
    MPI_Finalize();
    return 0;
}
