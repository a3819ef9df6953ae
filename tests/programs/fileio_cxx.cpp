// C++ streams as a solver writes its files: a summary per rank with std::ofstream (truncating), read back with
// std::ifstream; rank 0 appends to a history file opened with std::ios::app.  Usage: fileio_cxx DIR
#include <mpi.h>

#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const std::string dir = argc > 1 ? argv[1] : ".";
    std::vector<double> x(32);
    for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(rank + 0.1 * static_cast<double>(i));
    double norm = 0;
    for (double v : x) norm += v * v;
    double total = 0;
    MPI_Allreduce(&norm, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    const std::string summary = dir + "/summary." + std::to_string(rank) + ".txt";
    for (int pass = 0; pass < 3; pass++) {  // rewritten each pass, as a code refreshing its summary
        std::ofstream out(summary);
        out << std::setprecision(12) << "pass " << pass << " total " << total << "\n";
        for (double v : x) out << v << "\n";
    }
    std::ifstream in(summary);
    std::string first;
    std::getline(in, first);
    int lines = 0;
    for (std::string line; std::getline(in, line);) lines++;
    if (first.rfind("pass 2 ", 0) != 0 || lines != static_cast<int>(x.size())) {
        std::cerr << "fileio_cxx: " << summary << " starts '" << first << "' with " << lines << " values\n";
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        std::ofstream history(dir + "/history.txt", std::ios::app);
        history << std::setprecision(12) << "total " << total << "\n";
    }
    std::cout << "r" << rank << ": " << first << "\n";
    MPI_Finalize();
    return 0;
}
