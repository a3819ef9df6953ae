/* A program that does nothing but start and end MPI: what is left of a job under echorun is echorun's own time
 * around mpirun (bench/run_startup.py). */
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return 0;
}
