/* A block server: every round each worker asks rank 0 for its next block of
 * the field, and rank 0 serves the requests in the order they arrive
 * (MPI_ANY_SOURCE), each with a block too large for MPI to buffer (1 MiB).
 * Which worker is served first is up to MPI, differently from run to run; what
 * each worker gets, and prints, is not.  Workers look at the reply with
 * MPI_Probe before receiving it, as codes that size their buffers do. */
#include "battery.h"
#include <stdlib.h>

#define BLOCK (128 * 1024) /* doubles: 1 MiB */
#define ROUNDS 20

static void fill(double *b, int worker, int round) {
    for (int i = 0; i < BLOCK; i++) b[i] = worker * 1000.0 + round + i * 1e-6;
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    double *block = malloc(BLOCK * sizeof *block);
    if (rank == 0) {
        long served = 0;
        for (int round = 0; round < ROUNDS; round++)
            for (int asked = 1; asked < size; asked++) {
                MPI_Status st;
                MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, round, MPI_COMM_WORLD, &st);
                fill(block, st.MPI_SOURCE, round);
                MPI_Send(block, BLOCK, MPI_DOUBLE, st.MPI_SOURCE, round, MPI_COMM_WORLD);
                served++;
            }
        SAY("served %ld blocks", served);
    } else {
        double sum = 0;
        for (int round = 0; round < ROUNDS; round++) {
            MPI_Status st;
            int count = 0;
            MPI_Send(NULL, 0, MPI_BYTE, 0, round, MPI_COMM_WORLD);
            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_DOUBLE, &count);
            MPI_Recv(block, count, MPI_DOUBLE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < count; i++) sum += block[i];
            if (count != BLOCK || block[0] != rank * 1000.0 + round) SAY("round %d: wrong block", round);
        }
        SAY("sum %.6f", sum);
    }
    free(block);
    MPI_Finalize();
    return 0;
}
