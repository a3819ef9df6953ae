/* A sparse all-to-all as particle and graph codes write it: each step only
 * some ranks have anything for others, and a rank with nothing to send passes
 * whatever its buffer pointers hold (MPI never reads a buffer at count 0).
 * Real codes leave such pointers uninitialized, so they differ from process to
 * process; here the stray value is made to differ for certain between the
 * copies echo runs (ECHO_COPY), NULL in some, a wild address in others.  Every
 * call is legal MPI.  Prints "rR: ..." lines. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static double *stray_pointer(void) {
    const char *copy = getenv("ECHO_COPY");
    int k = copy ? atoi(copy) : 0;
    return k % 2 ? NULL : (double *)(uintptr_t)(0xdead0000u + 4096u * (unsigned)k);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *scounts = calloc(size, sizeof(int)), *rcounts = calloc(size, sizeof(int));
    int *sdispls = calloc(size, sizeof(int)), *rdispls = calloc(size, sizeof(int));
    double total = 0;
    for (int step = 0; step < 6; step++) {
        /* even steps: nobody moves anything; odd steps: rank step % size sends 3 values to every rank */
        int sender = step % 2 ? step % size : -1, nsend = rank == sender ? 3 * size : 0;
        for (int r = 0; r < size; r++) {
            scounts[r] = rank == sender ? 3 : 0;
            sdispls[r] = 3 * r;
            rcounts[r] = r == sender ? 3 : 0;
            rdispls[r] = 0;
        }
        double *sendbuf = nsend ? malloc(nsend * sizeof(double)) : stray_pointer();
        double *recvbuf = sender >= 0 ? malloc(3 * sizeof(double)) : stray_pointer();
        for (int i = 0; i < nsend; i++) sendbuf[i] = step * 100 + rank * 10 + i;
        MPI_Alltoallv(sendbuf, scounts, sdispls, MPI_DOUBLE, recvbuf, rcounts, rdispls, MPI_DOUBLE, MPI_COMM_WORLD);
        if (sender >= 0)
            for (int i = 0; i < 3; i++) total += recvbuf[i];
        /* a zero-count reduction and broadcast on the stray pointers as well */
        MPI_Allreduce(stray_pointer(), recvbuf, 0, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Bcast(stray_pointer(), 0, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Send(stray_pointer(), 0, MPI_DOUBLE, (rank + 1) % size, step, MPI_COMM_WORLD);
        MPI_Recv(stray_pointer(), 0, MPI_DOUBLE, (rank + size - 1) % size, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (nsend) free(sendbuf);
        if (sender >= 0) free(recvbuf);
    }
    double all;
    MPI_Allreduce(&total, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: received %.1f, all ranks %.1f\n", rank, total, all);
    free(scounts); free(rcounts); free(sdispls); free(rdispls);
    MPI_Finalize();
    return 0;
}
