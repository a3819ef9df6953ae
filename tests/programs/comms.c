/* Derived communicators and the world group: dup, split, split_type, create,
 * compare, group queries and translations, collectives on the new communicators. */
#include "battery.h"
#include <stdio.h>
#include <stdlib.h>


int main(int argc, char **argv) {
    battery_init(&argc, &argv);

    MPI_Group wg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int grank, gsize;
    MPI_Group_rank(wg, &grank);
    MPI_Group_size(wg, &gsize);
    SAY("world group rank %d size %d", grank, gsize);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int r, s, cmp;
    MPI_Comm_rank(dup, &r);
    MPI_Comm_size(dup, &s);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp);
    SAY("dup rank %d size %d congruent %d", r, s, cmp == MPI_CONGRUENT);
    MPI_Comm_compare(dup, dup, &cmp);
    SAY("dup vs itself ident %d", cmp == MPI_IDENT);

    /* reversed halves */
    MPI_Comm half;
    MPI_Comm_split(dup, rank % 2, size - rank, &half);
    MPI_Comm_rank(half, &r);
    MPI_Comm_size(half, &s);
    int hsum = 0;
    MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
    SAY("half %d: rank %d size %d sum of world ranks %d", rank % 2, r, s, hsum);

    MPI_Group hg;
    MPI_Comm_group(half, &hg);
    int *in = malloc(sizeof(int) * (size_t)s), *out = malloc(sizeof(int) * (size_t)s);
    for (int i = 0; i < s; i++) in[i] = i;
    MPI_Group_translate_ranks(hg, s, in, wg, out);
    printf("r%d: half members in world:", rank);
    for (int i = 0; i < s; i++) printf(" %d", out[i]);
    printf("\n");
    MPI_Group_compare(hg, wg, &cmp);
    SAY("half vs world group %s", cmp == MPI_UNEQUAL ? "unequal" : "other");

    /* MPI_UNDEFINED gives MPI_COMM_NULL */
    MPI_Comm only0;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 1 : MPI_UNDEFINED, 0, &only0);
    SAY("only0 null %d", only0 == MPI_COMM_NULL);
    if (only0 != MPI_COMM_NULL) MPI_Comm_free(&only0);

    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int nsize;
    MPI_Comm_size(node, &nsize);
    SAY("shared-memory comm size %d", nsize);
    MPI_Comm_free(&node);

    /* create from a group of the even ranks, largest first */
    int neven = (size + 1) / 2, *evens = malloc(sizeof(int) * (size_t)neven);
    for (int i = 0; i < neven; i++) evens[i] = 2 * (neven - 1 - i);
    MPI_Group eg;
    MPI_Group_incl(wg, neven, evens, &eg);
    MPI_Comm ec;
    MPI_Comm_create(MPI_COMM_WORLD, eg, &ec);
    if (ec != MPI_COMM_NULL) {
        int er, v = rank, mx;
        MPI_Comm_rank(ec, &er);
        MPI_Allreduce(&v, &mx, 1, MPI_INT, MPI_MAX, ec);
        SAY("even comm rank %d max %d", er, mx);
        MPI_Comm_free(&ec);
    } else {
        SAY("not in even comm");
    }
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_set_name(half, "half");
    MPI_Comm_get_name(half, name, &len);
    SAY("name %s", name);
    MPI_Group_free(&eg);
    MPI_Group_free(&hg);
    MPI_Group_free(&wg);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    free(in); free(out); free(evens);
    SAY("done");
    MPI_Finalize();
    return 0;
}
