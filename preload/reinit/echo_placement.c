/* Reinit: where a failed rank starts again.  Every survivor knows the host of
 * every rank (gathered at MPI_Init, kept up to date across repairs) and makes
 * the same choice: a failed rank whose host still runs other ranks starts there
 * again; the ranks of a lost host (none of its ranks survived) start on the
 * remaining host with the most free slots (the hostfile's slots; without them,
 * the fewest ranks), ties by name.
 * `echorun --reinit-hosts a,a,b,...` names the hosts of the ranks instead of
 * the real ones, to exercise these choices on one machine (a simulation: the
 * processes are spawned where Open MPI puts them). */
#include "echo_reinit_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOST_LEN 64

static char (*host_of)[HOST_LEN]; /* by application rank */
static int simulated;

int echo_placement_simulated(void) { return simulated; }

/* at MPI_Init (original processes): every rank's host */
void echo_placement_init(MPI_Comm world, int rank, int size) {
    host_of = calloc((size_t)size, HOST_LEN);
    char mine[HOST_LEN] = "", key[32];
    snprintf(key, sizeof key, "reinit_host_%d", rank);
    const char *fake = echo_plan_value(key);
    simulated = fake != NULL;
    if (fake) {
        snprintf(mine, sizeof mine, "%s", fake);
    } else {
        int len;
        char name[MPI_MAX_PROCESSOR_NAME];
        PMPI_Get_processor_name(name, &len);
        snprintf(mine, sizeof mine, "%s", name);
    }
    PMPI_Allgather(mine, HOST_LEN, MPI_CHAR, host_of, HOST_LEN, MPI_CHAR, world);
}

/* a restarted process gets the table from the survivors (and hands nothing back) */
void echo_placement_share(MPI_Comm inter, int root_side, int nchildren, int size) {
    if (root_side) {
        for (int i = 0; i < nchildren; i++) PMPI_Send(host_of, size * HOST_LEN, MPI_CHAR, i, 2, inter);
        return;
    }
    host_of = calloc((size_t)size, HOST_LEN);
    PMPI_Recv(host_of, size * HOST_LEN, MPI_CHAR, 0, 2, inter, MPI_STATUS_IGNORE);
    char key[32];
    snprintf(key, sizeof key, "reinit_host_%d", 0);
    simulated = echo_plan_value(key) != NULL;
}

static int slots_of(const char *host) {
    char key[96];
    snprintf(key, sizeof key, "reinit_slots_%.60s", host);
    const char *v = echo_plan_value(key);
    return v ? atoi(v) : -1; /* unknown */
}

/* Choose the host of each failed rank (in `failed` order) into out[i] and
 * record it in the table; returns the number of ranks moved off a lost host,
 * and sets moved_rank[r] (by rank) for each of them. */
int echo_placement_choose(const int *failed, int nfailed, int size, char (*out)[HOST_LEN], int *moved_rank) {
    int *is_failed = calloc((size_t)size, sizeof(int));
    for (int i = 0; i < nfailed; i++) is_failed[failed[i]] = 1;
    /* the distinct hosts, with their live ranks */
    char (*hosts)[HOST_LEN] = calloc((size_t)size, HOST_LEN);
    int *live = calloc((size_t)size, sizeof(int)), nhosts = 0, moved = 0;
    for (int r = 0; r < size; r++) {
        int h = 0;
        while (h < nhosts && strcmp(hosts[h], host_of[r]) != 0) h++;
        if (h == nhosts) snprintf(hosts[nhosts++], HOST_LEN, "%s", host_of[r]);
        if (!is_failed[r]) live[h]++;
    }
    for (int i = 0; i < nfailed; i++) {
        int h = 0;
        while (strcmp(hosts[h], host_of[failed[i]]) != 0) h++;
        if (live[h] == 0) { /* a lost host: the remaining host with the most room */
            int best = -1;
            long best_room = 0;
            for (int k = 0; k < nhosts; k++) {
                if (live[k] == 0) continue;
                int slots = slots_of(hosts[k]);
                long room = slots >= 0 ? slots - live[k] : -(long)live[k];
                if (best < 0 || room > best_room || (room == best_room && strcmp(hosts[k], hosts[best]) < 0)) {
                    best = k;
                    best_room = room;
                }
            }
            if (best < 0) best = h; /* nothing survived anywhere else: Open MPI decides */
            moved += best != h;
            if (best != h) moved_rank[failed[i]] = 1;
            h = best;
        }
        live[h]++;
        snprintf(out[i], HOST_LEN, "%s", hosts[h]);
        snprintf(host_of[failed[i]], HOST_LEN, "%s", hosts[h]);
    }
    free(is_failed);
    free(hosts);
    free(live);
    return moved;
}
