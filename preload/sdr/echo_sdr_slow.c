/* SDR mode: slow replicas excluded, and taken back when they are well again (docs/perf.md, docs/sdr.md).
 *
 * A rank's replicas run the same instructions between the same calls, so each
 * round of ROUND_CALLS calls that start communication (sends, receives,
 * collectives, Start: the same in every replica, unlike tests and probes, which
 * a replica that waits makes more of), every replica tells its siblings how
 * long it computed (outside MPI) in that round.  Every replica judges every sibling by
 * DGRP's rule (echo/perf.py's, on rounds: the time over the fastest replica's,
 * against tolerance x (mean + beta x deviation) of its healthy rounds; rounds
 * are pooled until the fastest spent MIN_SEGMENT computing); the rank's lowest
 * live replica that is not excluded (its leader) acts on it:
 *
 *  - `strikes` judged rounds in a row above the threshold: the replica is
 *    excluded (never the rank's last one).  Every process is told; its world
 *    takes its rank's messages from a sibling, sends to its rank are copied so
 *    none waits for its acks (echo_sdr_core.c), and it runs on, behind, its
 *    own sends held until its peers ack them.
 *  - `rejoin` rounds in a row below it, and no more than CATCH_UP rounds
 *    behind the leader: the rank's replicas agree with ULFM's agreement (the
 *    excluded one votes whether it has caught up) and, if all do, every
 *    process is told it is back.  Proposals are numbered and every sibling
 *    passes a new one on to the others, so if the leader dies while proposing,
 *    every live sibling still joins that agreement (ULFM's needs all of them).  Its world takes its messages from it again;
 *    the acks its peers sent it while it was out are what it skips.
 *  - At the end, the leader stops its excluded siblings: the job does not wait
 *    for a replica it excluded (the rank's output is the leader's).
 *
 * Decisions go to RUN_DIR/sdr.slow, one line each ("out|in|stopped <rank>
 * <replica> <call> <time>"), for echorun, perf.json and the store (echo_sdr_slow_log.c).
 * Plan line: "sdr_exclude <strikes> <rejoin>" (no line: never). */
#include "echo_sdr.h"
#include "echo_records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUND_CALLS 16   /* calls per round: a round's report is one small message to each sibling */
#define MIN_SEGMENT ECHO_DGRP_MIN_PHASE /* seconds: rounds are pooled until the fastest replica computed this long */
#define CATCH_UP 2       /* rounds an excluded replica may be behind its leader to come back */

static int on, strikes, rejoin_after;
static const double tolerance = ECHO_DGRP_TOLERANCE, alpha = ECHO_DGRP_ALPHA, beta = ECHO_DGRP_BETA;

static double left;             /* when the last call ended */
static int calls_in_round;
static double computed;         /* in this round */
static int rounds;              /* this replica's rounds completed */

typedef struct {
    double *t;                  /* its compute time in each round */
    long *call;                 /* its application calls at the end of each round */
    int n, cap;
    double mean, dev;           /* DGRP's estimator of its time over the fastest replica's */
    int recommended, bad, good; /* status, and judged rounds in a row above / below the threshold */
    int next;                   /* its next round to judge */
    double seg_t, seg_ref;      /* rounds pooled so far */
} sibling_t;
static sibling_t sib[SDR_MAX_REPLICAS];

static MPI_Comm kin = MPI_COMM_NULL; /* this rank's replicas (ULFM's agreement on taking one back) */
static MPI_Request agree_req = MPI_REQUEST_NULL;
static int agree_flag, agree_for = -1;
static int last_proposal;       /* the number of the last proposal seen (each sibling passes a new one on) */
/* proposals waiting for this replica's agreement before them: never dropped (every sibling joins every
 * proposal's agreement in the same order, so a dropped one would pair different agreements) */
static int (*queued)[2], nqueued, capqueued;
static int finishing;

static int leader(void) { return sdr_lowest_in(echo.app_rank) == sdr.k; }
static int live(int j) { return !sdr.dead[sdr_real_rank(echo.app_rank, j)]; }
static int is_out(int j) { return sdr.out[sdr_real_rank(echo.app_rank, j)]; }

void sdr_slow_setup(void) {
    const char *v = echo_plan_value("sdr_exclude");
    if (!v || sscanf(v, "%d %d", &strikes, &rejoin_after) != 2 || strikes < 1 || sdr.R < 2) return;
    on = sdr.self_acks = 1;
    echo_ft_split(sdr.world, echo.app_rank, sdr.k, &kin);
    PMPI_Comm_set_errhandler(kin, MPI_ERRORS_RETURN);
    for (int j = 0; j < sdr.R; j++) sib[j] = (sibling_t){.mean = 1.0, .dev = 0.1, .recommended = 1};
    left = sdr_seconds();
}

/* to this rank's live siblings (reports, proposals) */
static void tell_siblings(int type, int a, int b, int c) {
    for (int j = 0; j < sdr.R; j++)
        if (j != sdr.k && live(j)) sdr_control(sdr_real_rank(echo.app_rank, j), type, a, b, c);
}

/* the leader excludes replica j (out) or takes it back, at its call `call`: here first (refused if it would
 * leave the rank no replica in the job), then every other live process */
static void decide(int j, int out, long call) {
    int w = sdr_real_rank(echo.app_rank, j);
    if (!sdr_set_out(w, out)) return;
    sdr_slow_log_line(out ? "out" : "in", j, call);
    for (int v = 0; v < sdr.n * sdr.R; v++)
        if (v != echo.real_rank && !sdr.dead[v]) sdr_control(v, out ? MSG_OUT : MSG_IN, w, 0, 0);
}

/* the agreements start in the proposals' order on every sibling; replica j votes whether it has caught up with
 * the leader's `round` */
static void next_agreement(void) {
    while (agree_req == MPI_REQUEST_NULL && nqueued) {
        int j = queued[0][0], round = queued[0][1];
        memmove(queued, queued + 1, sizeof queued[0] * (size_t)--nqueued);
        agree_for = j;
        agree_flag = !finishing && (j != sdr.k || rounds >= round - CATCH_UP);
        if (PMPIX_Comm_iagree(kin, &agree_flag, &agree_req) != MPI_SUCCESS) agree_req = MPI_REQUEST_NULL, agree_for = -1;
    }
}

/* a proposal (ours, or one passed on) is new: pass it on, and join its agreement after those before it */
static void on_proposal(int number, int j, int round) {
    if (number <= last_proposal) return;
    last_proposal = number;
    tell_siblings(MSG_PROPOSE, number, j, round);
    if (nqueued == capqueued) {
        capqueued = capqueued ? 2 * capqueued : 16;
        if (!(queued = realloc(queued, sizeof *queued * (size_t)capqueued)))
            echo_fatal("out of memory queueing a proposal to take a replica back");
    }
    queued[nqueued][0] = j, queued[nqueued++][1] = round;
    next_agreement();
}

/* DGRP's rule on one pooled segment of replica j's rounds, ending at `round` */
static void judge(int j, double x, int round) {
    sibling_t *s = &sib[j];
    double limit = tolerance * (s->mean + beta * s->dev);
    if (s->recommended) {
        s->bad = x > limit ? s->bad + 1 : 0;
        if (s->bad >= strikes) s->recommended = 0, s->good = 0;
        else if (!s->bad) {
            s->dev = alpha * s->dev + (1 - alpha) * (x > s->mean ? x - s->mean : s->mean - x);
            s->mean = alpha * s->mean + (1 - alpha) * x;
        }
    } else if (x <= limit) {
        if (++s->good >= rejoin_after) s->recommended = 1;
    } else s->good = 0;
    if (!leader() || finishing) return;
    if (!s->recommended && !is_out(j)) decide(j, 1, s->call[round]);
    else if (s->recommended && is_out(j) && agree_for < 0 && !nqueued && sib[sdr.k].n - s->n <= CATCH_UP)
        on_proposal(last_proposal + 1, j, rounds);
}

/* judge every sibling's rounds that this replica has reached too */
static void evaluate(void) {
    for (int j = 0; j < sdr.R; j++) {
        sibling_t *s = &sib[j];
        while (live(j) && s->next < s->n && s->next < sib[sdr.k].n) {
            int r = s->next++;
            double ref = s->t[r];
            for (int i = 0; i < sdr.R; i++)
                if (live(i) && sib[i].n > r && sib[i].t[r] < ref) ref = sib[i].t[r];
            s->seg_t += s->t[r], s->seg_ref += ref;
            if (s->seg_ref < MIN_SEGMENT) continue;
            double x = s->seg_ref > 0 ? s->seg_t / s->seg_ref : 1.0;
            s->seg_t = s->seg_ref = 0;
            judge(j, x, r);
        }
    }
}

static void add_round(int j, double seconds, long call) {
    sibling_t *s = &sib[j];
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->t = realloc(s->t, sizeof(double) * (size_t)s->cap);
        s->call = realloc(s->call, sizeof(long) * (size_t)s->cap);
    }
    s->t[s->n] = seconds, s->call[s->n++] = call;
}

void sdr_slow_enter(int starts_communication) {
    if (!on) return;
    sdr_slow_calls++;
    computed += sdr_seconds() - left;
    if (!starts_communication || ++calls_in_round < ROUND_CALLS) return;
    add_round(sdr.k, computed, sdr_slow_calls);
    long us = (long)(computed * 1e6);
    tell_siblings(MSG_ROUND, rounds++, us > 0x7fffffff ? 0x7fffffff : (int)us, (int)sdr_slow_calls);
    calls_in_round = 0, computed = 0;
    evaluate();
}

void sdr_slow_leave(void) {
    if (on) left = sdr_seconds();
}

/* the leader stopped this excluded replica at the end: its records and output so far stay */
static void stop_here(void) {
    sdr_slow_log("stopped");
    echo_records_flush();
    echo_mark_stopped();
    fflush(NULL);
    _exit(0);
}

void sdr_slow_message(int from, const int msg[4]) {
    int j = from / sdr.n;
    if (msg[0] == MSG_ROUND && on && msg[1] == sib[j].n) {
        add_round(j, msg[2] * 1e-6, msg[3]);
        evaluate();
    } else if (msg[0] == MSG_PROPOSE && on) on_proposal(msg[1], msg[2], msg[3]);
    else if (msg[0] == MSG_STOP) stop_here();
}

void sdr_slow_progress(void) {
    if (agree_req == MPI_REQUEST_NULL) return;
    int done = 0, n;
    int rc = PMPI_Test(&agree_req, &done, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !done) return;
    int j = agree_for;
    agree_req = MPI_REQUEST_NULL, agree_for = -1;
    if (rc != MPI_SUCCESS) PMPIX_Comm_ack_failed(kin, sdr.R, &n); /* a sibling failed: asked again later */
    else if (agree_flag && leader() && is_out(j)) decide(j, 0, sib[j].n ? sib[j].call[sib[j].n - 1] : 0);
    next_agreement();
}

int sdr_slow_finalize(void) {
    if (!on) return 0;
    finishing = 1;
    int spins = 0, stopped = 0;
    while (agree_req != MPI_REQUEST_NULL || nqueued) sdr_spin(&spins); /* every sibling is in them: they end */
    if (!leader()) return 0;
    for (int j = 0; j < sdr.R; j++)
        if (j != sdr.k && live(j) && is_out(j)) {
            sdr_control(sdr_real_rank(echo.app_rank, j), MSG_STOP, 0, 0, 0);
            stopped = 1;
        }
    return stopped;
}
