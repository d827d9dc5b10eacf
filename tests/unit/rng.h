/* rng.h — the small deterministic generators of the unit tests, each step defined once here.
 * A test keeps its own state variable and seed (its fixed cases and thresholds were chosen with
 * them) and its own way of turning a draw into a value; only the generator steps are shared, so a
 * test's sequence is exactly what it was when the step was written inline. For tests only: no
 * statistical claims beyond "varied enough". */
#ifndef STENO_TEST_RNG_H
#define STENO_TEST_RNG_H

#include <stdint.h>

/** Marsaglia's xorshift64 (shifts 13, 7, 17): advances *s (never 0) and returns the new state. */
static inline uint64_t rng_xorshift64(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/** xorshift64* (shifts 12, 25, 27, multiplier 2685821657736338717): advances *s (never 0) and
 *  returns the new state times the multiplier. */
static inline uint64_t rng_xorshift64star(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/** splitmix64: adds the golden-ratio increment to *s and returns the mixed value. */
static inline uint64_t rng_splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/** Numerical Recipes' 32-bit LCG (a = 1664525, c = 1013904223): advances *s and returns it. */
static inline uint32_t rng_lcg_nr(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

/** The C standard's example LCG (a = 1103515245, c = 12345): advances *s and returns it. */
static inline uint32_t rng_lcg_ansi(uint32_t *s) { return *s = *s * 1103515245u + 12345u; }

/** A double in [0, 1) from the top 53 bits of x. */
static inline double rng_unit53(uint64_t x) { return (double)(x >> 11) * 0x1.0p-53; }

/** A float in [-1, 1) from the low 24 bits of r. */
static inline float rng_f24_pm1(uint32_t r) { return (float)(r & 0xffffff) / (float)(1 << 24) * 2.0f - 1.0f; }

#endif
