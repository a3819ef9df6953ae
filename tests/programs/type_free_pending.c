/* A derived datatype freed while operations that use it are pending, as MPI allows: a code builds a strided
 * type, starts a nonblocking receive, a nonblocking broadcast and a persistent send with it, frees the type at
 * once, and completes the operations later.  Each rank prints what it received. */
#include "battery.h"

static MPI_Datatype every_other_int(void) {
    MPI_Datatype t;
    MPI_Type_vector(3, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[6] = {rank, -1, rank * 10, -1, rank * 100, -1}, in[6] = {0};
    MPI_Request reqs[3];

    MPI_Datatype t = every_other_int();
    MPI_Irecv(in, 1, t, left, 1, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(out, 1, t, right, 1, MPI_COMM_WORLD, &reqs[1]);
    MPI_Type_free(&t);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    print_ints("irecv", in, 6);

    int bc[6] = {0};
    if (rank == 0) bc[0] = 5, bc[2] = 6, bc[4] = 7;
    t = every_other_int();
    MPI_Ibcast(bc, 1, t, 0, MPI_COMM_WORLD, &reqs[0]);
    MPI_Type_free(&t);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    print_ints("ibcast", bc, 6);

    t = every_other_int();
    MPI_Send_init(out, 1, t, right, 2, MPI_COMM_WORLD, &reqs[0]);
    MPI_Recv_init(in, 1, t, left, 2, MPI_COMM_WORLD, &reqs[1]);
    MPI_Type_free(&t);
    for (int round = 0; round < 2; round++) {
        out[0] += 1;
        MPI_Startall(2, reqs);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        print_ints("persistent", in, 6);
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    MPI_Finalize();
    return 0;
}
