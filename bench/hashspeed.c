/* Throughput of echo's SDC hash against memcpy, on a 64 MiB buffer.
 * Prints "hash <GB/s>" and "memcpy <GB/s>". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "echo_hash.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
    size_t n = 64u << 20;
    unsigned char *a = malloc(n), *b = malloc(n);
    for (size_t i = 0; i < n; i++) a[i] = (unsigned char)(i * 131);
    double best_h = 1e9, best_m = 1e9;
    uint64_t sink = 0;
    for (int r = 0; r < 5; r++) {
        double t = now();
        sink ^= echo_hash64(a, n);
        t = now() - t;
        if (t < best_h) best_h = t;
        t = now();
        memcpy(b, a, n);
        t = now() - t;
        sink ^= b[r];
        if (t < best_m) best_m = t;
    }
    printf("hash %.2f\nmemcpy %.2f\nsink %llu\n", n / best_h / 1e9, n / best_m / 1e9, (unsigned long long)sink & 1);
    return 0;
}
