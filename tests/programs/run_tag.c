/* A code that names its run by a 64-bit tag made from a random number (as codes name their scratch and restart
 * files), agreed on by a maximum over the ranks, then prints it.  Each copy draws its own random bytes from the
 * kernel, so under --sdc the tag differs by nature: a number, not a time-stamp counter. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    uint32_t draw = 0;
    FILE *random = fopen("/dev/urandom", "rb");
    if (!random || fread(&draw, sizeof draw, 1, random) != 1) MPI_Abort(MPI_COMM_WORLD, 1);
    fclose(random);
    uint64_t mine = (uint64_t)(draw % 4194304u) * 1000003u + (uint64_t)rank, tag = 0;
    MPI_Allreduce(&mine, &tag, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    printf("r%d: run tag %llx\n", rank, (unsigned long long)tag);
    MPI_Finalize();
    return 0;
}
