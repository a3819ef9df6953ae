/* A coupled code as two models are coupled: COMM_WORLD split into an "ocean" (even ranks) and an "atmosphere"
 * (odd ranks), each relaxing its own field with reductions in its own group; an intercommunicator between them
 * (MPI_Intercomm_create, leaders world ranks 0 and 1); every step the partners swap their boundary values across
 * it (Sendrecv, and Isend/Irecv/Waitall), the ocean's leader broadcasts the step's flux factor (MPI_ROOT), each
 * model takes the other's total with an Allreduce across, and a Barrier closes the step; at the end the two
 * groups are merged back (MPI_Intercomm_merge, ocean first) for a global check.  Integer arithmetic so every run
 * prints the same bits; the coupling time is reduced and printed as codes do (a timing: tests leave it out). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CELLS 64
#define STEPS 12

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || size % 2) { /* each ocean rank couples with one atmosphere rank */
        if (rank == 0) fprintf(stderr, "coupled: needs an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int ocean = rank % 2 == 0;
    MPI_Comm model, coupler, all;
    MPI_Comm_split(MPI_COMM_WORLD, ocean ? 0 : 1, rank, &model);
    int mrank, msize;
    MPI_Comm_rank(model, &mrank);
    MPI_Comm_size(model, &msize);

    long field[CELLS];
    for (int i = 0; i < CELLS; i++) field[i] = (rank + 1) * 1000 + i;

    double t0 = MPI_Wtime();
    MPI_Intercomm_create(model, 0, MPI_COMM_WORLD, ocean ? 1 : 0, 99, &coupler);
    int flag, lsize, rsize, crank;
    MPI_Comm_test_inter(coupler, &flag);
    MPI_Comm_size(coupler, &lsize);
    MPI_Comm_rank(coupler, &crank);
    MPI_Comm_remote_size(coupler, &rsize);
    printf("r%d: %s inter %d rank %d of %d, remote %d\n", rank, ocean ? "ocean" : "atmosphere", flag, crank, lsize,
           rsize);

    int partner = crank; /* the groups are the same size */
    long other_total = 0;
    for (int step = 0; step < STEPS; step++) {
        /* its own physics: relax, and the model's own total */
        for (int i = 1; i < CELLS - 1; i++) field[i] = (field[i - 1] + 2 * field[i] + field[i + 1]) / 4;
        long mine = 0, model_total = 0;
        for (int i = 0; i < CELLS; i++) mine += field[i];
        MPI_Allreduce(&mine, &model_total, 1, MPI_LONG, MPI_SUM, model);

        /* the boundary swap with the partner in the other model */
        long edge = field[CELLS - 1], their_edge = -1;
        MPI_Status st;
        MPI_Sendrecv(&edge, 1, MPI_LONG, partner, step, &their_edge, 1, MPI_LONG, partner, step, coupler, &st);
        if (st.MPI_SOURCE != partner) printf("r%d: step %d wrong source %d\n", rank, step, st.MPI_SOURCE);
        field[0] = (field[0] + their_edge) / 2;
        /* and a halo of the whole edge row, nonblocking, from every remote rank this rank pairs with */
        long row[4], got[4];
        for (int i = 0; i < 4; i++) row[i] = field[i] + step;
        MPI_Request reqs[2];
        MPI_Irecv(got, 4, MPI_LONG, MPI_ANY_SOURCE, 1000 + step, coupler, &reqs[0]);
        MPI_Isend(row, 4, MPI_LONG, partner, 1000 + step, coupler, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 4; i++) field[1 + i] += got[i] % 7;

        /* the ocean's leader gives the flux factor of the step */
        int factor = 3 + step % 5;
        int root = ocean ? (mrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        MPI_Bcast(&factor, 1, MPI_INT, root, coupler);
        /* each model learns the other's total */
        MPI_Allreduce(&model_total, &other_total, 1, MPI_LONG, MPI_SUM, coupler);
        field[CELLS / 2] += (other_total % 1000) * factor / 10;
        MPI_Barrier(coupler);
        if (mrank == 0) printf("r%d: step %d factor %d own %ld other %ld\n", rank, step, factor, model_total,
                               other_total);
    }
    /* who is where on the other side, and the other side's edges */
    long edges[64];
    long myedge = field[CELLS - 1];
    MPI_Allgather(&myedge, 1, MPI_LONG, edges, 1, MPI_LONG, coupler);
    printf("r%d: remote edges", rank);
    for (int i = 0; i < rsize && i < 64; i++) printf(" %ld", edges[i]);
    printf("\n");
    long flux = 0, contrib = field[2];
    MPI_Reduce(&contrib, &flux, 1, MPI_LONG, MPI_SUM, ocean ? 0 : (mrank == 0 ? MPI_ROOT : MPI_PROC_NULL), coupler);
    if (!ocean && mrank == 0) printf("r%d: ocean flux %ld\n", rank, flux);

    MPI_Intercomm_merge(coupler, ocean ? 0 : 1, &all);
    int arank, asize;
    MPI_Comm_rank(all, &arank);
    MPI_Comm_size(all, &asize);
    long sum = 0, local = 0;
    for (int i = 0; i < CELLS; i++) local += field[i];
    MPI_Allreduce(&local, &sum, 1, MPI_LONG, MPI_SUM, all);
    printf("r%d: merged rank %d of %d, global %ld\n", rank, arank, asize, sum);
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, all);
    if (arank == 0) printf("r%d: coupling time %.3f s\n", rank, tmax);

    MPI_Comm_free(&all);
    MPI_Comm_free(&coupler);
    MPI_Comm_free(&model);
    MPI_Finalize();
    return 0;
}
