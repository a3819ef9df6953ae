/* Perturbation collector: each copy runs with a slight variation, and every
 * copy notes what floating-point data it hands to MPI, so copies can be
 * compared (echo/…/collectors/perturb: significant digits).
 *
 * Plan keys: "perturb rounding" | "perturb noise <ulp> <seed>" | "perturb jitter <max_us> <seed>",
 * "perturb_rep 0|1" (perturb copy 0 too), "worlds lockstep|independent".
 *
 *   rounding  copy k runs with rounding mode k mod 4: nearest, upward, downward, toward zero (set at
 *             MPI_Init; threads created later inherit it).
 *   noise     every double or float a copy receives from MPI gets x *= 1 + r * ulp * eps, r uniform in
 *             [-1, 1], from a generator seeded with (seed, rank, copy): reproducible.
 *   jitter    every MPI call waits a random 0..max microseconds first (per world: run with independent
 *             worlds, where the timing can change what happens).
 *
 * Every copy (perturbed or not) records, at each call that carries data out, slots
 * fsum / fnorm / f0 / nfloat: the sum, Euclidean norm and first value of the
 * floating-point elements it hands to MPI, and how many there were. */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "echo_internal.h"
#include "echo_records.h"

enum { NONE, ROUNDING, NOISE, JITTER };
static int kind, active, slot0 = -1;
static double ulps;
static long max_us;
static uint64_t rng;
static double slept_ns;

static uint64_t next_random(void) { /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static double uniform(void) { return (double)(next_random() >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0; }

/* the one floating-point type a datatype is built of, or MPI_DATATYPE_NULL */
static MPI_Datatype base_type(MPI_Datatype dt, int depth) {
    if (dt == MPI_DOUBLE || dt == MPI_FLOAT) return dt;
    int ni, na, nd, combiner;
    if (depth > 8 || PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS ||
        combiner == MPI_COMBINER_NAMED || nd < 1)
        return MPI_DATATYPE_NULL;
    int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)nd);
    PMPI_Type_get_contents(dt, ni, na, nd, ints, aints, types);
    MPI_Datatype base = base_type(types[0], depth + 1);
    for (int i = 1; i < nd && base != MPI_DATATYPE_NULL; i++)
        if (base_type(types[i], depth + 1) != base) base = MPI_DATATYPE_NULL;
    for (int i = 0; i < nd; i++) {
        int n2, a2, d2, c2;
        PMPI_Type_get_envelope(types[i], &n2, &a2, &d2, &c2);
        if (c2 != MPI_COMBINER_NAMED) PMPI_Type_free(&types[i]);
    }
    free(ints);
    free(aints);
    free(types);
    return base;
}

/* The floating-point elements of (buf, count, dt), packed; NULL if the type is not all doubles or floats. */
static void *floats_of(const void *buf, int count, MPI_Datatype dt, int *n, int *is_double) {
    MPI_Datatype base = base_type(dt, 0);
    if (base == MPI_DATATYPE_NULL || count <= 0) return NULL;
    int psize = 0, pos = 0;
    PMPI_Pack_size(count, dt, MPI_COMM_SELF, &psize);
    void *packed = malloc((size_t)psize);
    PMPI_Pack(buf, count, dt, packed, psize, &pos, MPI_COMM_SELF);
    *is_double = base == MPI_DOUBLE;
    *n = pos / (*is_double ? 8 : 4);
    return packed;
}

static void observe(const void *buf, int count, MPI_Datatype dt) {
    int n, dbl;
    void *v = floats_of(buf, count, dt, &n, &dbl);
    if (!v) return;
    double sum = 0, sq = 0, first = 0;
    for (int i = 0; i < n; i++) {
        double x = dbl ? ((double *)v)[i] : ((float *)v)[i];
        if (i == 0) first = x;
        sum += x;
        sq += x * x;
    }
    free(v);
    double stats[3] = {sum, sqrt(sq), first};
    uint64_t *slot = echo_record_slots();
    memcpy(&slot[slot0], stats, sizeof stats); /* doubles, bit for bit */
    slot[slot0 + 3] = (uint64_t)n;
}

static void add_noise(void *buf, int count, MPI_Datatype dt) {
    int n, dbl;
    void *v = floats_of(buf, count, dt, &n, &dbl);
    if (!v) return;
    for (int i = 0; i < n; i++) {
        if (dbl) ((double *)v)[i] *= 1.0 + uniform() * ulps * 0x1p-52;
        else ((float *)v)[i] *= 1.0f + (float)(uniform() * ulps) * 0x1p-23f;
    }
    int pos = 0, psize = n * (dbl ? 8 : 4);
    PMPI_Unpack(v, psize, &pos, buf, count, dt, MPI_COMM_SELF);
    free(v);
}

static void jitter(void) {
    long us = (long)(next_random() % (uint64_t)(max_us + 1));
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
    slept_ns += (double)us * 1e3;
}

static void finish(void) {
    if (kind == JITTER && active) echo_metric("perturb jitter slept", slept_ns * 1e-9, "s");
}

void echo_perturb_init(void) {
    const char *spec = echo_plan_value("perturb");
    if (!spec || !echo.cloned) return;
    const char *rep = echo_plan_value("perturb_rep");
    active = echo.copy > 0 || (rep && atoi(rep));
    char name[16] = "";
    double a = 0, b = 0;
    sscanf(spec, "%15s %lf %lf", name, &a, &b);
    kind = !strcmp(name, "rounding") ? ROUNDING : !strcmp(name, "noise") ? NOISE : !strcmp(name, "jitter") ? JITTER : NONE;
    /* every copy observes, so the unperturbed one is compared too */
    slot0 = echo_records_add_slot("fsum");
    echo_records_add_slot("fnorm");
    echo_records_add_slot("f0");
    echo_records_add_slot("nfloat");
    echo_hooks_subscribe(&(echo_hooks_t){.outgoing = observe, .finish = finish});
    uint64_t seed = (uint64_t)b;
    rng = (seed + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)echo.app_rank << 32) ^ (uint64_t)(echo.copy + 1) * 0xBF58476D1CE4E5B9ull;
    if (!rng) rng = 1;
    if (!active) return;
    if (kind == ROUNDING) {
        static const int modes[4] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
        fesetround(modes[echo.copy % 4]);
    } else if (kind == NOISE) {
        ulps = a;
        echo_hooks_subscribe(&(echo_hooks_t){.delivered = add_noise});
    } else if (kind == JITTER) {
        max_us = (long)a;
        echo_hooks_subscribe(&(echo_hooks_t){.enter = jitter});
    }
}
