/* Messages of more than INT_MAX elements through the large-count calls: MPI_Send_c/MPI_Recv_c, MPI_Bcast_c and
 * MPI_Isend_c/MPI_Irecv_c of INT_MAX + 9 bytes (about 2 GB per process), with MPI_Get_count_c on the statuses.
 * Needs an mpi.h with the large-count calls (MPI 4) and 2 or more ranks; against one without them (Open MPI 5.0
 * says MPI 3.1, and every test program is compiled with the primary MPI) it only says so. */
#include "battery.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4
#define N ((MPI_Count)INT_MAX + 9)

/* a few bytes that tell whether the whole message arrived: both ends and points between */
static void report(const char *what, const unsigned char *buf, MPI_Status *st) {
    MPI_Count n = -1;
    if (st) MPI_Get_count_c(st, MPI_BYTE, &n);
    SAY("%s count %lld bytes %d %d %d %d", what, (long long)n, buf[0], buf[N / 3], buf[N - 2], buf[N - 1]);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    unsigned char *buf = malloc((size_t)N);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Status st;
    memset(buf, 0, (size_t)N);
    if (rank == 0) {
        buf[0] = 11, buf[N / 3] = 12, buf[N - 2] = 13, buf[N - 1] = 14;
        MPI_Send_c(buf, N, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv_c(buf, N, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st);
        report("recv_c", buf, &st);
    }
    memset(buf, 0, (size_t)N);
    if (rank == 1) buf[0] = 21, buf[N / 3] = 22, buf[N - 2] = 23, buf[N - 1] = 24;
    MPI_Bcast_c(buf, N, MPI_BYTE, 1, MPI_COMM_WORLD);
    report("bcast_c", buf, NULL);
    MPI_Request rq;
    if (rank == 1) {
        buf[N - 1] = 31;
        MPI_Isend_c(buf, N, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else if (rank == 0) {
        memset(buf, 0, (size_t)N);
        MPI_Irecv_c(buf, N, MPI_BYTE, 1, 6, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, &st);
        report("irecv_c", buf, &st);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
#else
int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    SAY("no large-count calls in this mpi.h");
    MPI_Finalize();
    return 0;
}
#endif
