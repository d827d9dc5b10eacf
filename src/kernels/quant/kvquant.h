/* kvquant.h — row codecs of the quantized KV caches: MLX-style affine groups and TurboQuant values.
 *
 * A cache row holds n_kv_heads head vectors of head_dim floats; each head vector is encoded
 * independently into `steno_kvq_head_bytes(f)` bytes (so attention addresses head h of a row at
 * h × head_bytes, and a row never depends on another: rollback stays exact).
 *
 * AFFINE (mlx-lm QuantizedKVCache, mx.quantize(mode="affine"); MLX mlx/ops.cpp affine_quantize):
 *   per group of `group` consecutive elements, w ≈ scale · c + bias with c in 0..2^bits-1:
 *     n = 2^bits - 1; scale = max((max - min) / n, 1e-7); the edge of larger magnitude
 *     (min if |min| > |max|, else max, with scale negated) becomes the bias after snapping it to
 *     a multiple of scale so that 0 stays representable (q0 = round(edge / scale); scale = edge/q0
 *     when q0 != 0; bias = edge, or 0 when q0 == 0); c = clamp(round((w - bias) / scale), 0, n).
 *   Layout of one head: uint32 codes [head_dim · bits / 32] (element j of a word at bits
 *   j·bits .. j·bits+bits-1, MLX's packing), f16 scales [head_dim / group], f16 biases
 *   [head_dim / group] (MLX keeps them in the activation dtype, f16 here). bits 4 or 8,
 *   group 32 or 64, or group = head_dim (TurboQuant's per-vector asymmetric keys).
 *   rotate = 1 (a steno extension; QuaRot, Ashkboos et al. 2024, arXiv 2404.00456): the vector is
 *   first rotated by steno_tq_rotate (below) and the rotated vector is encoded, so one outlier channel
 *   no longer stretches a group's range; head_dim must then be a power of two. Decoding gives the
 *   rotated vector (attention uses q·k = (Rq)·(Rk)) or, with rotated = 0, un-rotates it.
 *
 * TQV (TurboQuant values; Zandieh et al. 2025, "TurboQuant: Online Vector Quantization with
 *   Near-optimal Distortion Rate", arXiv 2504.19874; the seed's turboquant-codec.ts,
 *   ../shared/seeds/003_13087381b7b29064.txt): the head vector x is rotated, y = H·D·x / sqrt(d)
 *   (H the d×d Sylvester Walsh–Hadamard matrix, D fixed random ±1 signs, so the rotation is
 *   orthonormal), each coordinate of y · sqrt(d) / |x| (≈ N(0, 1) for a random rotation) is mapped
 *   to the nearest centroid of the Lloyd-Max codebook of the unit Gaussian (steno_lloyd_max_codebook),
 *   and the codes are bit-packed (bits 2, 3, 4) with one f32 scale s = |x| / sqrt(d).
 *   Decoding in the rotated domain: y_i ≈ s · codebook[c_i]; attention accumulates Σ_j p_j ŷ_j and
 *   applies the inverse rotation x = D·H·y / sqrt(d) once to the output (steno_tq_unrotate).
 *   Layout of one head: uint32 codes [head_dim · bits / 32] (a little-endian bit stream, element i
 *   at bits i·bits ..; 3-bit codes straddle words), f32 scale. head_dim must be a power of two.
 *
 * Bits per element and bytes per head: see steno_kvq_head_bytes. Nothing here allocates.
 */
#ifndef STENO_KERNELS_KVQUANT_H
#define STENO_KERNELS_KVQUANT_H

#include <stddef.h>
#include <stdint.h>

enum { STENO_KVQ_AFFINE = 1, STENO_KVQ_TQV = 2 };

/** Largest head_dim the codecs accept (encoders keep one head in a stack buffer). */
#define STENO_KVQ_MAX_DIM 1024

typedef struct steno_kvq_fmt {
    int kind;     /* STENO_KVQ_AFFINE or STENO_KVQ_TQV */
    int bits;     /* AFFINE: 4 or 8; TQV: 2, 3 or 4 */
    int group;    /* AFFINE: elements per scale/bias (divides head_dim, multiple of 8); TQV: unused */
    int head_dim; /* elements per head vector */
    int rotate;   /* AFFINE: 1 = the head vector is rotated (steno_tq_rotate) before it is encoded */
} steno_kvq_fmt;

/** 0 if f is usable, else -1 (and *why, if given, points to a static reason). */
int steno_kvq_check(const steno_kvq_fmt *f, const char **why);

/** Bytes of one encoded head vector. */
size_t steno_kvq_head_bytes(const steno_kvq_fmt *f);

/** Encodes x [head_dim] floats into dst [head_bytes]. */
void steno_kvq_encode(const steno_kvq_fmt *f, const float *x, uint8_t *dst);

/** Decodes src into x [head_dim]: AFFINE exactly scale·c + bias (f32 arithmetic on the f16
 *  parameters); TQV in the rotated domain (s · codebook[c]). With rotated = 0 a rotated format (TQV,
 *  or AFFINE with rotate) is un-rotated; with rotated = 1 it stays in the rotated domain. */
void steno_kvq_decode(const steno_kvq_fmt *f, const uint8_t *src, float *x, int rotated);

/** In-place orthonormal fast Walsh–Hadamard transform of x [n], n a power of two:
 *  x ← H x / sqrt(n) (Sylvester order). Its own inverse. */
void steno_wht(float *x, int n);

/** TurboQuant rotation: x ← H·D·x / sqrt(n), D the fixed random signs (steno_tq_sign). */
void steno_tq_rotate(float *x, int n);
/** Its inverse: x ← D·H·x / sqrt(n). */
void steno_tq_unrotate(float *x, int n);
/** The fixed random sign (+1 or -1) of coordinate i (splitmix64 of a constant seed and i). */
float steno_tq_sign(int i);

/** Lloyd-Max centroids of N(0, 1) for 1..4 bits (2^bits floats, increasing), or NULL.
 *  Derivation: the minimum-MSE scalar quantizer of the unit Gaussian (Lloyd 1982, "Least squares
 *  quantization in PCM", IEEE Trans. IT 28(2); Max 1960, "Quantizing for minimum distortion", IRE
 *  Trans. IT 6(1)) satisfies two conditions — each threshold is the midpoint of its neighbouring
 *  centroids, each centroid the conditional mean of its cell, (φ(a) − φ(b)) / (Φ(b) − Φ(a)) —
 *  iterated to double precision by tools/lloyd_max_gaussian.py, whose printed constants kvquant.c
 *  carries. MSE 0.363380, 0.117482, 0.034548, 0.009501 (Max's table: 0.3634, 0.1175, 0.03455,
 *  0.009497). TurboQuant (arXiv 2504.19874, §3) quantizes each coordinate of a randomly rotated
 *  vector with this codebook after scaling it to unit variance (the coordinates of a rotated unit
 *  vector in d dimensions follow a Beta law that tends to N(0, 1/d)); the seed
 *  (turboquant-codec.ts, encodeValues) scales by the per-vector norm in the same way. */
const float *steno_lloyd_max_codebook(int bits);
/** Index of the nearest centroid of the bits-bit codebook to y. */
int steno_lloyd_max_index(int bits, float y);

/** Bit packing used by both codecs: n codes (each < 2^bits, bits 1..8) into a little-endian bit
 *  stream of ceil(n·bits/32) uint32 words (code i at bits i·bits..), and back. */
void steno_pack_bits(const uint8_t *codes, int n, int bits, uint32_t *out);
void steno_unpack_bits(const uint32_t *in, int n, int bits, uint8_t *codes);

#endif
