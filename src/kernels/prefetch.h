/* prefetch.h — software prefetch of weight rows ahead of a streaming kernel.
 *
 * The decoder's single-token step reads ~90 MB (Whisper base: float16 weights, the logit screen's
 * int8 rows, the cross-attention K/V) once each, in short GEMVs of 0.5–2 MB split over the
 * threads. On the 2-vCPU Xeon VM of docs/PERFORMANCE.md the hardware prefetchers alone kept each
 * of those streams at ~60 % of the read bandwidth; asking for the lines VEC_PF_BYTES ahead of the
 * row being multiplied took base's step from 4.3 to 2.2 ms (bench/stage_bench.c). A prefetch
 * never faults and never changes a result, only when a line arrives. */
#ifndef STENO_KERNELS_PREFETCH_H
#define STENO_KERNELS_PREFETCH_H

#include <stddef.h>

/* how far ahead of the current row a streaming kernel asks for lines: about a third of L1 */
#define VEC_PF_BYTES 16384

/** Prefetches (read, into every cache level) the lines of [p, p + bytes). */
static inline void vec_prefetch_bytes(const void *p, size_t bytes) {
    const char *c = (const char *)p;
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, 3);
}

/** Rows ahead for rows of row_bytes bytes: VEC_PF_BYTES worth, at least 1. */
static inline int vec_pf_rows(size_t row_bytes) {
    const size_t r = row_bytes ? VEC_PF_BYTES / row_bytes : 1;
    return r > 0 ? (int)r : 1;
}

#endif
