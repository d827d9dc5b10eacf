/* gemm_amx_bf16x3.h — float32 matrix products on AMX-BF16 tiles, three bfloat16 products per float
 * product ("bf16x3").
 *
 * A float x is split into bfloat16 halves x = xh + xl + r (xh = bf16(x), xl = bf16(x − xh), both
 * rounded to nearest even; |r| ≤ 2⁻¹⁷·|x|); a float16 weight w splits exactly, w = wh + wl, since
 * its 11 significant bits fit in two bfloat16s. One output is Σ_k (xh·wh + xl·wh + xh·wl) in float32
 * tile accumulators (each bf16 product exact; AMX adds them in float32 with round-to-nearest-even,
 * denormals flushed): it drops xl·wl and r·w, so its error is about 2⁻¹⁶ of Σ|x·w|, against float32
 * sgemm's ~K·2⁻²⁴ bound (≈ 2⁻¹⁵·⁴ for K = 384, usually far less). On the development VM (one
 * core, bench/gemm_amx_bench.c) a 1500 × 256 × 384 product takes 0.66 ms against 2.12 ms for the
 * fast path's float16 widening + OpenBLAS sgemm, 0.91 ms with the split and the packing.
 * Scheme: the split-precision products of Henry, Tang & Heinecke, "Leveraging the bfloat16
 * Artificial Intelligence Datatype For Higher-Precision Computations" (ARITH 2019), their bf16x3.
 *
 * Bits: an output depends only on its row of x and its column of w (tile rows and columns are
 * independent; the k order is fixed), never on the row or column ranges of the call, the thread
 * that runs it or how many rows the call has. The bits differ from sgemm's: callers keep this for
 * paths gated by token parity (the Whisper fast path's encoder; tests/py/test_fast_parity.py).
 *
 * Thread-safety: every function is reentrant; gemm_amx_mul loads and releases the calling thread's
 * tile configuration itself. x86-64 Linux only (the kernel must grant the tile state, asked once
 * through arch_prctl); elsewhere gemm_amx_available() is 0 and the others must not be called. */
#ifndef STENO_KERNELS_GEMM_AMX_H
#define STENO_KERNELS_GEMM_AMX_H

#include <stddef.h>
#include <stdint.h>

/** 1 when this CPU has AMX-TILE, AMX-BF16 and AVX512-BF16 (plus the AVX-512 set of cpu.h's
 *  steno_cpu_has_avx512_skx), the OS granted this process the tile data state, and neither
 *  STENO_NO_AMX nor STENO_NO_AVX512 nor STENO_NO_SIMD is set to anything but "" or "0"; else 0.
 *  The CPU and OS answer is asked once; the environment on every call. */
int gemm_amx_available(void);

/** Rows in the split buffers for T rows of x: T rounded up to 32 (the kernel reads whole tiles). */
static inline int gemm_amx_rows(int T) { return (T + 31) & ~31; }

/** Splits rows [r0, r1) of x [..][ldx] float32 (its first K columns) into xh, xl [..][K] bfloat16
 *  (row stride K). K a multiple of 16. Rows of xh/xl past the caller's T up to gemm_amx_rows(T) may hold
 *  anything finite (their outputs are discarded); the caller allocates them. */
void gemm_amx_split(const float *x, int ldx, int K, int r0, int r1, uint16_t *xh, uint16_t *xl);

/** Halves each of bh and bl needs for cn weight rows of K: cn·K. */
static inline size_t gemm_amx_b_halves(int K, int cn) { return (size_t)cn * (size_t)K; }

/** Packs float16 weight rows [c0, c0 + cn) of W [N][K] (row n: output n) into the tile layout:
 *  bh/bl [cn/16][K/32][16][16][2] bfloat16 (for each 16 outputs and 32 inputs, a B tile of 16
 *  input pairs × 16 outputs), wh + wl = w exactly. cn and K multiples of 32; bh, bl 64-byte
 *  aligned, gemm_amx_b_halves(K, cn) each. */
void gemm_amx_pack_f16(const uint16_t *W, int K, int c0, int cn, uint16_t *bh, uint16_t *bl);

/** y[r][j] = b[j] + Σ_k x[r][k]·w[j][k] (bf16x3, above) for r < T, j < cn, where x is given split
 *  (gemm_amx_split: gemm_amx_rows(T) rows of K) and w packed (gemm_amx_pack_f16, cn outputs);
 *  b [cn] or NULL (zero); y row stride ldy floats. Overwrites y's cn columns of rows < T. */
void gemm_amx_mul(const uint16_t *xh, const uint16_t *xl, int T, int K, const uint16_t *bh, const uint16_t *bl,
                  int cn, const float *b, float *y, int ldy);

#endif
