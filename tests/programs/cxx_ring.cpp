// C++ under echo: the C API from C++, with std::vector buffers.
#include <mpi.h>
#include <cstdio>
#include <numeric>
#include <vector>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> mine(16, rank), left(16, -1);
    MPI_Sendrecv(mine.data(), 16, MPI_INT, (rank + 1) % size, 0, left.data(), 16, MPI_INT,
                 (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::vector<int> all(16 * size);
    MPI_Allgather(left.data(), 16, MPI_INT, all.data(), 16, MPI_INT, MPI_COMM_WORLD);
    long total = std::accumulate(all.begin(), all.end(), 0L);
    std::printf("r%d: left %d total %ld\n", rank, left[0], total);
    std::printf("r%d: done\n", rank);
    MPI_Finalize();
    return 0;
}
