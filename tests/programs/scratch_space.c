/* How a quantum-chemistry code sizes its scratch files (NWChem's util_scratch_dir_avail_for_me, through ELIO's
 * eaf_stat): each rank writes a probe file in its scratch directory (argv[1], default "."), asks the file system
 * how much is free (fstatvfs on the probe, statfs on the directory), and the job reduces the smallest free space
 * to share it out per process.  Prints "rR: ..." lines. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MIB (1 << 20)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *dir = argc > 1 ? argv[1] : ".";
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/junk.%d", dir, rank);

    static char block[MIB];
    int fd = open(probe, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(probe);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < 4; i++)
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block) MPI_Abort(MPI_COMM_WORLD, 1);
    fsync(fd);
    struct statvfs vfs;
    struct statfs fs;
    if (fstatvfs(fd, &vfs) != 0 || statfs(dir, &fs) != 0) {
        perror("statfs");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    close(fd);
    unlink(probe);

    /* free MiB of the file system the probe went to, and of the directory's; block counts of both */
    long long mine[4] = {(long long)vfs.f_bavail * (long long)vfs.f_frsize / MIB,
                         (long long)fs.f_bavail * (long long)fs.f_bsize / MIB, (long long)vfs.f_blocks,
                         (long long)fs.f_blocks};
    long long least[4];
    MPI_Allreduce(mine, least, 4, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    if (least[0] <= 0) MPI_Abort(MPI_COMM_WORLD, 2);
    long long per_process = least[0] / size;
    if (rank == 0) printf("r0: scratch %lld MiB per process\n", per_process);
    printf("r%d: scratch file system of %lld blocks\n", rank, least[2]);
    MPI_Finalize();
    return 0;
}
