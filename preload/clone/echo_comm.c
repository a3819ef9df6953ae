/* The communicator table: what each communicator the application holds means
 * under cloning (see echo_clone.h). */
#include "echo_clone.h"


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
        free(table[i]->remote_members);
        echo_topo_free(table[i]->topo);
        free(table[i]);
        memmove(table + i, table + i + 1, sizeof *table * (size_t)(ntable - i - 1));
        ntable--;
        return;
    }
}

void echo_comm_revoke_all(void) {
    PMPIX_Comm_revoke(world.real);
    for (int i = 0; i < ntable; i++)
        if (table[i]->real != MPI_COMM_NULL) PMPIX_Comm_revoke(table[i]->real);
}

void echo_comm_forget_all(void) {
    /* the handles are left to MPI: freeing a communicator with failed members
     * is not worth a second failure during the repair */
    while (ntable) echo_comm_remove(table[ntable - 1]->app);
}

/* ---- new communicators ---- */

static int *real_ranks(MPI_Group g, int n) {
    MPI_Group wg;
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *idx = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) idx[i] = i;
    PMPI_Group_translate_ranks(g, n, idx, wg, out);
    free(idx);
    PMPI_Group_free(&wg);
    return out;
}

int echo_comm_register_new(MPI_Comm parent, MPI_Comm *newcomm, int rc, int dup) {
    /* topo: ints of the description of its topology (echo_topo.c), 0 if it has none */
    struct { int exists, rank, size, inter, remote_size, topo; } hdr = {0, 0, 0, 0, 0, 0};
    int *topo = NULL;
    if (echo_is_rep() && rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) {
        if (dup && parent == MPI_COMM_WORLD) rc = echo_comm_copy_attributes(MPI_COMM_WORLD, *newcomm);
        if (rc != MPI_SUCCESS) {
            PMPI_Comm_free(newcomm);
        } else {
            hdr.exists = 1;
            PMPI_Comm_rank(*newcomm, &hdr.rank);
            PMPI_Comm_size(*newcomm, &hdr.size);
            PMPI_Comm_test_inter(*newcomm, &hdr.inter);
            if (hdr.inter) PMPI_Comm_remote_size(*newcomm, &hdr.remote_size);
            hdr.topo = echo_topo_describe(*newcomm, &topo);
            echo_comm_t *c = echo_comm_add(*newcomm, *newcomm, hdr.rank, hdr.size, NULL);
            c->inter = hdr.inter;
            c->remote_size = hdr.remote_size;
            c->topo = echo_topo_new(topo, hdr.topo, hdr.rank, hdr.size);
        }
    }
    rc = echo_forward_bytes(&hdr, sizeof hdr, rc);
    if (!hdr.exists) {
        if (!echo_is_rep()) *newcomm = MPI_COMM_NULL;
        return rc;
    }
    if (!echo_has_copies()) {
        free(topo);
        return rc;
    }
    /* the real world ranks of the members, so copies can build the same groups */
    int *members = NULL, *remote = NULL;
    if (echo_is_rep()) {
        MPI_Group g;
        PMPI_Comm_group(*newcomm, &g);
        members = real_ranks(g, hdr.size);
        PMPI_Group_free(&g);
        if (hdr.inter) {
            PMPI_Comm_remote_group(*newcomm, &g);
            remote = real_ranks(g, hdr.remote_size);
            PMPI_Group_free(&g);
        }
    } else {
        members = malloc(sizeof(int) * (size_t)hdr.size);
        remote = hdr.inter ? malloc(sizeof(int) * (size_t)hdr.remote_size) : NULL;
        topo = hdr.topo ? malloc(sizeof(int) * (size_t)hdr.topo) : NULL;
    }
    echo_forward_bytes(members, sizeof(int) * (size_t)hdr.size, rc);
    if (hdr.inter) echo_forward_bytes(remote, sizeof(int) * (size_t)hdr.remote_size, rc);
    if (hdr.topo) echo_forward_bytes(topo, sizeof(int) * (size_t)hdr.topo, rc);
    if (echo_is_rep()) {
        free(members);
        free(remote);
        free(topo);
        return rc;
    }
    /* a private stand-in handle: a real communicator, so local calls on it work */
    PMPI_Comm_dup(MPI_COMM_SELF, newcomm);
    if (parent != MPI_COMM_NULL) { /* a new communicator inherits its parent's error handler */
        MPI_Errhandler eh;
        PMPI_Comm_get_errhandler(parent, &eh);
        PMPI_Comm_set_errhandler(*newcomm, eh);
        PMPI_Errhandler_free(&eh);
    }
    echo_comm_t *c = echo_comm_add(*newcomm, MPI_COMM_NULL, hdr.rank, hdr.size, members);
    c->inter = hdr.inter;
    c->remote_size = hdr.remote_size;
    c->remote_members = remote;
    c->topo = echo_topo_new(topo, hdr.topo, hdr.rank, hdr.size);
    free(topo);
    if (dup) {
        /* the representative's callbacks succeeded (else hdr.exists is 0); a copy's
         * callback that fails all the same makes the copy's dup fail */
        int copied = echo_comm_copy_attributes(parent, *newcomm);
        if (copied != MPI_SUCCESS) {
            echo_comm_remove(*newcomm);
            PMPI_Comm_free(newcomm);
            rc = copied;
        }
    }
    return rc;
}

static int group_of(const int *real, int n, int me, MPI_Group *group) {
    for (int i = 0; i < n; i++)
        if (real[i] == MPI_UNDEFINED && i != me)
            echo_fatal("a copy cannot build the group of a communicator with processes outside the job (spawned "
                       "or connected): its representative alone knows them; ask the group on the representative "
                       "only, or run without clones");
    MPI_Group wg;
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *ranks = malloc(sizeof(int) * (size_t)n);
    memcpy(ranks, real, sizeof(int) * (size_t)n);
    if (me >= 0) ranks[me] = echo.real_rank;
    int rc = PMPI_Group_incl(wg, n, ranks, group);
    free(ranks);
    PMPI_Group_free(&wg);
    return rc;
}

int echo_comm_group(echo_comm_t *c, MPI_Group *group) {
    if (echo_is_rep()) return PMPI_Comm_group(c->real, group);
    /* the representative's group with this copy in its representative's place:
     * rank, size and translations then answer as for the representative */
    return group_of(c->members, c->size, c->rank, group);
}

int echo_comm_remote_group(echo_comm_t *c, MPI_Group *group) {
    if (echo_is_rep()) return PMPI_Comm_remote_group(c->real, group);
    return group_of(c->remote_members, c->remote_size, -1, group);
}
