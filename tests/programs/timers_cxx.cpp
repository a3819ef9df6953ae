// A particle code's main loop as C++ codes write it: std::chrono timers
// (steady_clock, high_resolution_clock, system_clock) around each phase,
// reduced with MPI and printed by rank 0; a time budget (argv[1] seconds,
// default 0.3) decides how many steps run.  Prints "rR: ..." lines.
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

using clk = std::chrono::steady_clock;

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const double budget = argc > 1 ? std::atof(argv[1]) : 0.3;
    auto wall0 = std::chrono::system_clock::now();
    auto hr0 = std::chrono::high_resolution_clock::now();
    std::vector<double> x(4096), f(4096);
    for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(rank + 0.001 * i);
    double t_force = 0, t_comm = 0, energy = 0;
    int steps = 0, go = 1;
    auto start = clk::now();
    while (go) {
        auto a = clk::now();
        for (size_t i = 0; i < x.size(); i++) f[i] = -x[i] + 0.01 * std::cos(x[i]);
        for (size_t i = 0; i < x.size(); i++) x[i] += 1e-3 * f[i];
        auto b = clk::now();
        t_force += std::chrono::duration<double>(b - a).count();
        double e = 0;
        for (double v : x) e += v * v;
        MPI_Allreduce(&e, &energy, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t_comm += std::chrono::duration<double>(clk::now() - b).count();
        steps++;
        go = std::chrono::duration<double>(clk::now() - start).count() < budget;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    double hr = std::chrono::duration<double>(std::chrono::high_resolution_clock::now() - hr0).count();
    double wall = std::chrono::duration<double>(std::chrono::system_clock::now() - wall0).count();
    double mine[4] = {t_force, t_comm, hr, wall}, most[4];
    MPI_Reduce(mine, most, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    std::printf("r%d: energy %.10e after %d steps\n", rank, energy, steps);
    if (rank == 0)
        std::printf("r0: force %.6f s, comm %.6f s, total %.6f s (wall %.6f s), max over ranks\n", most[0], most[1],
                    most[2], most[3]);
    MPI_Finalize();
    return 0;
}
