/* A solver's progress loop that polls for messages (MPI_Iprobe) between steps of work, counting its own polls and
 * the steps that found a message, as a code that tunes its polling does; rank 1 sends a "done" every 1000 steps.
 * argv[1]: steps (default 100000); argv[2] "crash": rank 1 sends a last message and dies on a stray pointer. */
#include "battery.h"
#include <stdlib.h>
#include <string.h>

static long polls = 0, received = 0;

/* one poll: a "done" waiting is received; returns whether there was one */
static int poll_once(void) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &flag, &st);
    polls++;
    if (flag) {
        int v;
        MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        received++;
    }
    return flag;
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    long steps = argc > 1 ? atol(argv[1]) : 100000;
    int crash = argc > 2 && strcmp(argv[2], "crash") == 0;
    long found = 0, sent = 0;
    double work = 0.0;
    for (long i = 0; i < steps; i++) {
        work += 1e-9 * (double)(i % 7);
        found += poll_once();
        if (rank == 1 && i % 1000 == 999) {
            int v = (int)i;
            MPI_Send(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
            sent++;
        }
    }
    if (crash && rank == 1) {
        int last = -1;
        MPI_Send(&last, 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
        int *state = NULL;
        fflush(stdout);
        state[rank] = 1; /* the stray pointer */
    }
    MPI_Barrier(MPI_COMM_WORLD); /* rank 1's last messages are all out */
    while (poll_once()) { /* what the loop left: received */
    }
    long all = 0;
    MPI_Allreduce(&polls, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    SAY("polls %ld found %ld sent %ld received %ld (all ranks: %ld polls) work %.3f", polls, found, sent, received,
        all, work);
    MPI_Finalize();
    return 0;
}
