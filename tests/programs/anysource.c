/* A master-worker pattern with MPI_ANY_SOURCE: the arrival order is up to MPI,
 * so lines marked "order:" may differ between runs but never between the
 * copies of a rank; the result does not depend on it. */
#include "battery.h"
#include <stdio.h>


int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    const int tasks = 40;
    if (rank == 0) {
        int next = 0, done = 0;
        double total = 0;
        MPI_Status st;
        for (int w = 1; w < size; w++) {
            MPI_Send(&next, 1, MPI_INT, w, 1, MPI_COMM_WORLD);
            next++;
        }
        printf("r0: order:");
        while (done < tasks && size > 1) {
            double res;
            MPI_Recv(&res, 1, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            total += res;
            done++;
            printf(" %d", st.MPI_SOURCE);
            int task = next < tasks ? next++ : -1;
            MPI_Send(&task, 1, MPI_INT, st.MPI_SOURCE, 1, MPI_COMM_WORLD);
        }
        printf("\n");
        SAY("total %.1f over %d tasks", total, done);
    } else {
        int task, mine = 0;
        while (1) {
            MPI_Recv(&task, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (task < 0) break;
            double res = task * 2.0;
            for (volatile int spin = 0; spin < 1000 * (task % 5); spin++) {}
            MPI_Send(&res, 1, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
            mine++;
        }
        SAY("order: did %d tasks", mine);
    }
    SAY("done");
    MPI_Finalize();
    return 0;
}
