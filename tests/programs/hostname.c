/* Where each process runs: its host name, and a sum over every rank (the ranks
 * talk across hosts). */
#include "battery.h"

#include <unistd.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    SAY("host %s sum %d", host, sum);
    MPI_Finalize();
    return 0;
}
