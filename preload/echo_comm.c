/* The communicator table: what each communicator the application holds means
 * under cloning (see echo_internal.h). */
#include "echo_internal.h"

#include <stdlib.h>
#include <string.h>

static echo_comm_t world;
static echo_comm_t **table;
static int ntable, cap;

echo_comm_t *echo_comm_find(MPI_Comm app) {
    if (app == MPI_COMM_WORLD) return world.size ? &world : NULL;
    for (int i = ntable - 1; i >= 0; i--) /* newest first: loops use fresh dups */
        if (table[i]->app == app) return table[i];
    return NULL;
}

echo_comm_t *echo_comm_get(MPI_Comm app, const char *fn) {
    echo_comm_t *c = echo_comm_find(app);
    if (!c) {
        if (app == MPI_COMM_NULL) echo_fatal("%s was given MPI_COMM_NULL", fn);
        echo_fatal("%s was given a communicator echo did not see created (%s with clones supports "
                   "MPI_COMM_WORLD and communicators derived from it)", fn, fn);
    }
    return c;
}

echo_comm_t *echo_comm_add(MPI_Comm app, MPI_Comm real, int rank, int size, int *members) {
    echo_comm_t *c = app == MPI_COMM_WORLD ? &world : calloc(1, sizeof *c);
    c->app = app;
    c->real = real;
    c->rank = rank;
    c->size = size;
    c->members = members;
    if (c == &world) return c;
    if (ntable == cap) {
        cap = cap ? 2 * cap : 16;
        table = realloc(table, sizeof *table * (size_t)cap);
    }
    table[ntable++] = c;
    return c;
}

void echo_comm_remove(MPI_Comm app) {
    for (int i = 0; i < ntable; i++) {
        if (table[i]->app != app) continue;
        free(table[i]->members);
        free(table[i]);
        memmove(table + i, table + i + 1, sizeof *table * (size_t)(ntable - i - 1));
        ntable--;
        return;
    }
}

int echo_comm_register_new(MPI_Comm *newcomm, int rc) {
    int hdr[3] = {0, 0, 0}; /* exists, rank, size */
    int *members = NULL;
    if (echo_is_rep()) {
        if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) {
            hdr[0] = 1;
            PMPI_Comm_rank(*newcomm, &hdr[1]);
            PMPI_Comm_size(*newcomm, &hdr[2]);
            echo_comm_add(*newcomm, *newcomm, hdr[1], hdr[2], NULL);
        }
    }
    rc = echo_forward_bytes(hdr, sizeof hdr, rc);
    if (!hdr[0]) {
        if (!echo_is_rep()) *newcomm = MPI_COMM_NULL;
        return rc;
    }
    if (!echo_has_copies()) return rc;
    members = malloc(sizeof(int) * (size_t)hdr[2]);
    if (echo_is_rep()) {
        /* real world ranks of the members, so copies can build the same groups */
        MPI_Group g, wg;
        PMPI_Comm_group(*newcomm, &g);
        PMPI_Comm_group(MPI_COMM_WORLD, &wg);
        int *idx = malloc(sizeof(int) * (size_t)hdr[2]);
        for (int i = 0; i < hdr[2]; i++) idx[i] = i;
        PMPI_Group_translate_ranks(g, hdr[2], idx, wg, members);
        free(idx);
        PMPI_Group_free(&g);
        PMPI_Group_free(&wg);
    }
    echo_forward_bytes(members, sizeof(int) * (size_t)hdr[2], rc);
    if (echo_is_rep()) {
        free(members);
        return rc;
    }
    /* a private stand-in handle: a real communicator, so local calls on it work */
    PMPI_Comm_dup(MPI_COMM_SELF, newcomm);
    echo_comm_add(*newcomm, MPI_COMM_NULL, hdr[1], hdr[2], members);
    return rc;
}

int echo_comm_group(echo_comm_t *c, MPI_Group *group) {
    if (echo_is_rep()) return PMPI_Comm_group(c->real, group);
    /* the representative's group with this copy in its representative's place:
     * rank, size and translations then answer as for the representative */
    MPI_Group wg;
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *ranks = malloc(sizeof(int) * (size_t)c->size);
    memcpy(ranks, c->members, sizeof(int) * (size_t)c->size);
    ranks[c->rank] = echo.real_rank;
    int rc = PMPI_Group_incl(wg, c->size, ranks, group);
    free(ranks);
    PMPI_Group_free(&wg);
    return rc;
}
