/* The 64-bit hash of the SDC checks: four independent multiply-rotate lanes
 * over 32-byte stripes, then the tail and a final avalanche.  Not
 * cryptographic: it has to notice flipped bits, fast (see bench/run_sdc.py). */
#ifndef ECHO_HASH_H
#define ECHO_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t echo_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t echo_lane(uint64_t acc, uint64_t v) {
    return echo_rotl(acc ^ (v * 0x9E3779B97F4A7C15ull), 29) * 0xBF58476D1CE4E5B9ull;
}

static inline uint64_t echo_hash64(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t a = 0x243F6A8885A308D3ull, b = 0x13198A2E03707344ull, c = 0xA4093822299F31D0ull, d = 0x082EFA98EC4E6C89ull;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        a = echo_lane(a, w[0]);
        b = echo_lane(b, w[1]);
        c = echo_lane(c, w[2]);
        d = echo_lane(d, w[3]);
    }
    uint64_t h = echo_rotl(a, 1) + echo_rotl(b, 7) + echo_rotl(c, 12) + echo_rotl(d, 18) + (uint64_t)n;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = echo_lane(h, w);
    }
    uint64_t tail = 0;
    memcpy(&tail, p + i, n - i);
    h = echo_lane(h, tail ^ ((uint64_t)(n - i) << 56));
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return h;
}

#endif
