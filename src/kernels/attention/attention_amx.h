/* attention_amx.h — unmasked attention over at most a few thousand keys (the Whisper encoder's
 * self-attention) on AMX-BF16 tiles, both products in gemm_amx_bf16x3.h's bf16x3 scheme.
 *
 * For a block of up to 32 queries: the scores s = q·k (bf16x3, float32 accumulation over d), the
 * row's exact maximum m over the T keys, p_j = exp(s_j − m) (simd_avx512.h's exp16_nonpos) and
 * l = Σ_j p_j (16 float32 lanes over j, then a fixed tree), o = (Σ_j p_j·v_j) (bf16x3) · (1/l).
 * That is openai-whisper's softmax over the full score row, then @ v (model.py, qkv_attention),
 * with the products' error of gemm_amx_bf16x3.h (about 2⁻¹⁶ of Σ|q·k| and of Σ p·|v|).
 *
 * Bits: a query's output depends on its own row and the head's keys and values only, never on
 * the other queries of its block, the thread or the block split. Available exactly when
 * gemm_amx_available(); callers keep it for paths gated by token parity (the fast path's
 * float16 encoder). Reentrant; att_amx_rows loads and releases the calling thread's tiles. */
#ifndef STENO_KERNELS_ATTENTION_AMX_H
#define STENO_KERNELS_ATTENTION_AMX_H

#include <stddef.h>
#include <stdint.h>

/** Halves in each of kh, kl, vh, vl for one head of T keys of dh dimensions: T rounded up to 32,
 *  times dh. */
size_t att_amx_head_halves(int T, int dh);

/** Bytes of att_amx_rows's scratch for T keys (64-byte aligned by the caller). */
size_t att_amx_scratch_bytes(int T);

/** Packs one head: keys from kt [dh][ldk] (transposed: row d holds dimension d of keys 0..T−1)
 *  into kh/kl (score tiles), values from v [T][ldv] (first dh columns) into vh/vl (value tiles);
 *  keys past T are zero. dh a multiple of 32; outputs att_amx_head_halves(T, dh) halves each. */
void att_amx_pack_head(const float *kt, int ldk, const float *v, int ldv, int T, int dh, uint16_t *kh, uint16_t *kl,
                       uint16_t *vh, uint16_t *vl);

/** out[i][0..dh) for queries i < nq (nq ≤ 32) over the T packed keys: qh/ql are the queries'
 *  split rows (gemm_amx_split; row i at qh + i·ldq, 32 rows readable, rows ≥ nq finite), already
 *  scaled. out rows out_stride floats apart. scratch: att_amx_scratch_bytes(T), 64-byte aligned. */
void att_amx_rows(const uint16_t *qh, const uint16_t *ql, int ldq, int nq, int T, int dh, const uint16_t *kh,
                  const uint16_t *kl, const uint16_t *vh, const uint16_t *vl, void *scratch, float *out,
                  int out_stride);

#endif
