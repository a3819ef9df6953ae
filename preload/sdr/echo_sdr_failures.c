/* SDR mode: failures and excluded replicas, whom to take each rank's messages from.  A failure learnt from ULFM
 * (or a replica excluded as slow, echo_sdr_slow.c) retargets every rank's sender; the progress loop
 * (echo_sdr_core.c) retries a switch that must wait for stale messages (echo_sdr_acks.c). */
#include "echo_sdr.h"
#include "echo_records.h"
#include "echo_sdr_state.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- failures and excluded replicas: whom to take each rank's messages from ---- */

static int lowest_live(int app) {
    for (int j = 0; j < sdr.R; j++)
        if (!sdr.dead[sdr_real_rank(app, j)]) return j;
    return -1;
}

int sdr_lowest_in(int app) {
    for (int j = 0; j < sdr.R; j++)
        if (!sdr.dead[sdr_real_rank(app, j)] && !sdr.out[sdr_real_rank(app, j)]) return j;
    return -1;
}

/* our own world's replica of the rank while it lives and is not excluded, else its lowest such sibling (a
 * rank whose live replicas are all excluded is taken from anyway) */
static int wanted_sender(int app) {
    int own = sdr_real_rank(app, sdr.k);
    if (app == echo.app_rank || (!sdr.dead[own] && !sdr.out[own])) return sdr.k;
    int j = sdr_lowest_in(app);
    return j >= 0 ? j : lowest_live(app);
}

/* The rank's messages are lost: the job ends.  The first process to see it
 * leaves a note for echorun (which says it once, whichever processes mpirun
 * stops before they see it too). */
static void every_replica_dead(int app) {
    char path[1200];
    snprintf(path, sizeof path, "%s/sdr.lost", echo.run_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
        char text[64];
        int n = snprintf(text, sizeof text, "%d %d\n", app, sdr.R);
        if (write(fd, text, (size_t)n) < 0) n = 0;
        close(fd);
    }
    fflush(NULL);
    _exit(75); /* not MPI_Abort: under ULFM it can wait forever for failed processes */
}

/* The application's own MPI_Abort (after its file operation failed, say) in one replica: the job ends with its
 * code, as it does natively.  Under ULFM Open MPI's abort ends this process but not always the others: its
 * siblings went on without it, as after a failure, and waited for ever for what it would have sent.  So the
 * code is recorded as this process's exit status (the application's status, sdr.py), and the note that echo
 * stopped the job makes echorun end what is left (jobstop.py) if mpirun does not. */
void echo_sdr_aborts(int errorcode) {
    echo_record_exit_status(errorcode);
    char path[1200], text[256];
    snprintf(path, sizeof path, "%s/echo.stopped", echo.run_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
        int n = snprintf(text, sizeof text, "echo: SDR: application rank %d replica %d called MPI_Abort with error "
                         "code %d: the job ends with it\n", echo.app_rank, sdr.k, errorcode);
        if (write(fd, text, (size_t)n) < 0) n = 0;
        close(fd);
    }
    fflush(NULL);
}

/* Take rank a's messages from its replica j from now on.  Receives that named the old sender are posted again
 * to the new one (one that matched meanwhile is dropped by recv_test: nothing of it was acked, so the new
 * sender sends it again).  The new sender learns it with a flush, after every ack we sent it (same channel, in
 * order): it sends what we did not ack, and all that follows.  A live old sender is told to stop, and answers
 * with how many messages it sent us. */
static void switch_sender(int a, int j) {
    int old = sdr.from[a], was = sdr_real_rank(a, old);
    DEBUG("rank %d: messages from replica %d now (was %d)\n", a, j, old);
    sdr.from[a] = j;
    for (sdr_comm_t *c = sdr_comms; c; c = c->next) {
        int i = c->index_of[a];
        if (i >= 0 && c->real[i * sdr.R + j] >= 0) c->sender[i] = j;
    }
    for (sdr_recv_t *r = sdr_recvs; r; r = r->next)
        if (r->posted_to == old && r->src != MPI_ANY_SOURCE && r->c->members[r->src] == a) {
            MPI_Status st;
            if (!sdr_take_back(r->c->chan[r->chan], &r->req, &st)) sdr_count_match(r->c, st.MPI_SOURCE);
        }
    if (!sdr.dead[was]) {
        sdr_due_known[was] = 0;
        sdr_control(was, MSG_UNSUB, 0, 0, 0);
    }
    sdr_control(sdr_real_rank(a, j), MSG_FLUSH, 0, 0, 0);
}

/* every rank's sender as it should be now; one whose messages still on their way are not out of the way yet
 * waits (tried again from the progress loop) */
int sdr_ending; /* in MPI_Finalize: this process needs no one's messages any more */

void sdr_retarget(void) {
    sdr_retarget_due = 0;
    for (int a = 0; a < sdr.n; a++) {
        int j = wanted_sender(a);
        /* in MPI_Finalize a rank's replicas that ended after their own MPI_Finalize look failed (under ULFM an
         * exit is a failure): whether a rank was lost is echorun's verdict then, from how each process ended */
        if (j < 0 && sdr_ending) continue;
        if (j < 0) every_replica_dead(a);
        if (j == sdr.from[a]) continue;
        if (sdr_drained(sdr_real_rank(a, j))) switch_sender(a, j);
        else sdr_retarget_due = 1;
    }
}

static void on_dead(int w) {
    DEBUG("process %d failed\n", w);
    sdr.dead[w] = 1;
    sdr.feeds[w] = 0;
    sdr_due_known[w] = 1, sdr_due[w] = 0; /* nothing of it comes any more */
    int a = w % sdr.n, j = w / sdr.n;
    for (sdr_send_t *s = sdr_sends, *next; s; s = next) { /* the dead send no acks */
        next = s->next;
        if (s->c->members[s->dst] == a) s->mask &= ~(1u << j), sdr_settle(s);
    }
    int back = lowest_live(a);
    if (sdr_lowest_in(a) < 0 && back >= 0) { /* its last sibling in the job died: an excluded one is all it has */
        DEBUG("replica %d of rank %d taken back: no other is left\n", back, a);
        sdr.out[sdr_real_rank(a, back)] = 0;
        if (a == echo.app_rank && back == sdr.k) sdr_slow_log("in");
    }
    sdr_retarget();
}

/* Every process is told when a replica is excluded as slow or taken back (echo_sdr_slow.c decides).  Sends
 * to its rank are copied from then on, so none waits for its acks; its world's processes take its rank's
 * messages from a sibling, or from it again. */
int sdr_set_out(int w, int out) {
    if (sdr.dead[w] || sdr.out[w] == out) return 0;
    sdr.out[w] = (unsigned char)out;
    if (out && sdr_lowest_in(w % sdr.n) < 0) { /* never a rank's last replica in the job */
        sdr.out[w] = 0;
        return 0;
    }
    DEBUG("replica %d of rank %d %s\n", w / sdr.n, w % sdr.n, out ? "excluded as slow" : "taken back");
    sdr_retarget();
    return 1;
}

void sdr_learn_failures(void) {
    MPI_Group failed;
    if (PMPIX_Comm_get_failed(sdr.world, &failed) != MPI_SUCCESS) return;
    int nf = 0;
    PMPI_Group_size(failed, &nf);
    if (nf > 0) {
        int *idx = malloc(sizeof(int) * (size_t)nf), *ranks = malloc(sizeof(int) * (size_t)nf);
        for (int i = 0; i < nf; i++) idx[i] = i;
        PMPI_Group_translate_ranks(failed, nf, idx, sdr_world_group, ranks);
        for (int i = 0; i < nf; i++)
            if (ranks[i] >= 0 && !sdr.dead[ranks[i]]) on_dead(ranks[i]);
        free(idx);
        free(ranks);
    }
    PMPI_Group_free(&failed);
}

