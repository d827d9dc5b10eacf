/* argmax.h — index of the largest float of a row (greedy sampling over the vocabulary). */
#ifndef STENO_KERNELS_ARGMAX_H
#define STENO_KERNELS_ARGMAX_H

/** The first index i of x[0..n) (n ≥ 1) with x[i] > x[j] for every earlier chosen j: exactly what
 *  `c = 0; for i in 1..n: if (x[i] > x[c]) c = i` returns — the first occurrence of the maximum,
 *  NaN never chosen after index 0 (a NaN at 0 is kept), +0 and -0 equal. AVX2 when the CPU has it
 *  (max pass, then the first equal element), same answer. Pure; thread-safe. */
int steno_argmax_f32(const float *x, int n);

#endif
