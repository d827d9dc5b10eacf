/* blas_core.h — which OpenBLAS kernel set ("core") to ask for when OpenBLAS's own CPU detection
 * falls back to an SSE3 one on a CPU it does not know.
 *
 * OpenBLAS built with DYNAMIC_ARCH (Debian's libopenblas0-pthread 0.3.21) picks its kernels from
 * the CPUID family/model at load time, in a constructor; a model newer than the release (Intel
 * family 6 model 207, Emerald Rapids, on 0.3.21) gets "Prescott", the SSE3 kernels, although the CPU
 * has AVX-512. Whisper's GEMMs then run slower (measured: tiny.en on 15 s of speech 1.28 -> 0.91 s;
 * long120 1.66x with tiny.en, 1.81x with base; docs/PERFORMANCE.md). The choice can only be
 * changed through the environment variable OPENBLAS_CORETYPE before the library loads (driver/others/dynamic.c, gotoblas_dynamic_init), so the
 * CLI re-executes itself with it set (cli/main.c). Also the one declaration of OpenBLAS's thread
 * setting, which every caller of cblas shares. */
#ifndef STENO_CORE_BLAS_CORE_H
#define STENO_CORE_BLAS_CORE_H

/** The OPENBLAS_CORETYPE value to set for this process, or NULL to leave OpenBLAS as it is.
 *  Non-NULL only when all hold: OPENBLAS_CORETYPE and STENO_NO_AVX2 are unset (a user's choice is
 *  kept), the loaded OpenBLAS chose a core without AVX2 (openblas_get_corename() is one of Intel's
 *  pre-Haswell cores), and the CPU runs AVX2/FMA (then "Haswell") or Skylake-SP's AVX-512 set
 *  (then "SkylakeX"). Thread-safe (reads only). */
const char *steno_blas_core_request(void);

/** The kernel set the loaded OpenBLAS runs (openblas_get_corename()); static storage. */
const char *steno_blas_core_name(void);

/** OpenBLAS's own: the threads its next calls use, for the whole process (not in every version's
 *  cblas.h, hence declared here). */
void openblas_set_num_threads(int);

#endif
