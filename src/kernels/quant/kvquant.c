/* kvquant.c — see kvquant.h. */
#include "kernels/quant/kvquant.h"

#include <math.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/quant/quant.h"

/* Lloyd-Max quantizers of the unit Gaussian, 1..4 bits: computed by tools/lloyd_max_gaussian.py
 * (Lloyd's iteration of the nearest-neighbour and centroid conditions, closed-form Gaussian
 * conditional means, to double precision; Lloyd 1982, Max 1960). MSE of each: 0.363380, 0.117482,
 * 0.034548, 0.009501 (Max's table: 0.3634, 0.1175, 0.03455, 0.009497). TurboQuant (arXiv 2504.19874,
 * section 3.1) uses these codebooks for the coordinates of a randomly rotated vector, which follow
 * a Beta distribution that tends to N(0, 1/d) — scaled here by sqrt(d)/|x| to unit variance, as the
 * seed's encodeValues scales by the per-vector norm. */
static const float CB1[2] = {-0.797884561f, 0.797884561f};
static const float CB2[4] = {-1.510417608f, -0.452780035f, 0.452780035f, 1.510417608f};
static const float CB3[8] = {-2.151945705f, -1.343909279f, -0.756005281f, -0.245094179f,
                             0.245094179f,  0.756005281f,  1.343909279f,  2.151945705f};
static const float CB4[16] = {-2.732589571f, -2.069017227f, -1.618046386f, -1.256231197f, -0.942340456f, -0.656759119f,
                              -0.388048299f, -0.128395030f, 0.128395030f,  0.388048299f,  0.656759119f,  0.942340456f,
                              1.256231197f,  1.618046386f,  2.069017227f,  2.732589571f};

const float *steno_lloyd_max_codebook(int bits) {
    switch (bits) {
    case 1: return CB1;
    case 2: return CB2;
    case 3: return CB3;
    case 4: return CB4;
    default: return NULL;
    }
}

int steno_lloyd_max_index(int bits, float y) {
    const float *cb = steno_lloyd_max_codebook(bits);
    const int n = 1 << bits;
    int idx = 0;
    /* the decision thresholds are the midpoints between neighbouring centroids */
    for (int k = 1; k < n; k++) idx += y > 0.5f * (cb[k - 1] + cb[k]);
    return idx;
}

static int is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

int steno_kvq_check(const steno_kvq_fmt *f, const char **why) {
    const char *w = NULL;
    if (f->head_dim <= 0 || f->head_dim > STENO_KVQ_MAX_DIM || f->head_dim % 32 != 0)
        w = "head_dim must be a multiple of 32 and at most 1024";
    else if (f->kind == STENO_KVQ_AFFINE) {
        if (f->bits != 4 && f->bits != 8) w = "affine KV quantization takes 4 or 8 bits";
        else if (f->group <= 0 || f->group % 8 != 0 || f->head_dim % f->group != 0)
            w = "the affine group size must be a multiple of 8 dividing head_dim";
        else if (f->rotate && !is_pow2(f->head_dim))
            w = "rotated affine KV quantization needs a power-of-two head_dim (Walsh-Hadamard rotation)";
    } else if (f->kind == STENO_KVQ_TQV) {
        if (f->bits < 2 || f->bits > 4) w = "TurboQuant values take 2, 3 or 4 bits";
        else if (!is_pow2(f->head_dim)) w = "TurboQuant needs a power-of-two head_dim (Walsh-Hadamard rotation)";
    } else {
        w = "unknown KV quantization kind";
    }
    if (why) *why = w;
    return w ? -1 : 0;
}

size_t steno_kvq_head_bytes(const steno_kvq_fmt *f) {
    size_t codes = (size_t)f->head_dim * (size_t)f->bits / 8; /* head_dim % 32 == 0: whole words */
    if (f->kind == STENO_KVQ_AFFINE) return codes + 2 * 2 * (size_t)(f->head_dim / f->group);
    return codes + 4;
}

/* ------------------------------------------------------------------------------------------- */

void steno_pack_bits(const uint8_t *codes, int n, int bits, uint32_t *out) {
    const int nw = (n * bits + 31) / 32;
    memset(out, 0, (size_t)nw * 4);
    const uint32_t mask = (1u << bits) - 1u;
    for (int i = 0; i < n; i++) {
        const int bit = i * bits, w = bit / 32, sh = bit % 32;
        const uint32_t c = codes[i] & mask;
        out[w] |= c << sh;
        if (sh + bits > 32) out[w + 1] |= c >> (32 - sh);
    }
}

void steno_unpack_bits(const uint32_t *in, int n, int bits, uint8_t *codes) {
    const uint32_t mask = (1u << bits) - 1u;
    for (int i = 0; i < n; i++) {
        const int bit = i * bits, w = bit / 32, sh = bit % 32;
        uint32_t c = in[w] >> sh;
        if (sh + bits > 32) c |= in[w + 1] << (32 - sh);
        codes[i] = (uint8_t)(c & mask);
    }
}

/* ------------------------------------------------------------------------------------------- */

void steno_wht(float *x, int n) {
    for (int len = 1; len < n; len <<= 1)
        for (int i = 0; i < n; i += len << 1)
            for (int j = i; j < i + len; j++) {
                const float a = x[j], b = x[j + len];
                x[j] = a + b;
                x[j + len] = a - b;
            }
    const float s = 1.0f / sqrtf((float)n);
    for (int i = 0; i < n; i++) x[i] *= s;
}

float steno_tq_sign(int i) {
    /* splitmix64 (Steele et al. 2014) of a fixed seed and the coordinate: reproducible, no state */
    uint64_t z = 0x54757262u + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (z >> 63) ? -1.0f : 1.0f;
}

void steno_tq_rotate(float *x, int n) {
    for (int i = 0; i < n; i++) x[i] *= steno_tq_sign(i);
    steno_wht(x, n);
}

void steno_tq_unrotate(float *x, int n) {
    steno_wht(x, n);
    for (int i = 0; i < n; i++) x[i] *= steno_tq_sign(i);
}

/* ------------------------------------------------------------------------------------------- */

static void store_f16(uint8_t *dst, float f) {
    uint16_t h = steno_f32_to_f16(f);
    memcpy(dst, &h, 2);
}
static float load_f16(const uint8_t *src) {
    uint16_t h;
    memcpy(&h, src, 2);
    return steno_fp16_to_f32(h);
}

static void encode_affine(const steno_kvq_fmt *f, const float *x0, uint8_t *dst) {
    const int D = f->head_dim, G = f->group, ng = D / G;
    float xr[STENO_KVQ_MAX_DIM];
    const float *x = x0;
    if (f->rotate) {
        memcpy(xr, x0, (size_t)D * sizeof(float));
        steno_tq_rotate(xr, D);
        x = xr;
    }
    const float nbins = (float)((1 << f->bits) - 1);
    uint8_t codes[STENO_KVQ_MAX_DIM];
    uint8_t *scales = dst + (size_t)D * f->bits / 8, *biases = scales + 2 * (size_t)ng;
    for (int g = 0; g < ng; g++) {
        const float *w = x + (size_t)g * G;
        float mx = w[0], mn = w[0];
        for (int j = 1; j < G; j++) {
            mx = w[j] > mx ? w[j] : mx;
            mn = w[j] < mn ? w[j] : mn;
        }
        /* MLX affine_quantize: the edge of larger magnitude is the bias, snapped so that 0 is
         * exactly representable; scale is negative when the edge is the maximum */
        const int mask = fabsf(mn) > fabsf(mx);
        float scale = fmaxf((mx - mn) / nbins, 1e-7f);
        scale = mask ? scale : -scale;
        const float edge = mask ? mn : mx;
        const float q0 = rintf(edge / scale);
        if (q0 != 0.0f) scale = edge / q0;
        const float bias = q0 == 0.0f ? 0.0f : edge;
        for (int j = 0; j < G; j++) {
            float c = rintf((w[j] - bias) / scale);
            c = c < 0.0f ? 0.0f : c > nbins ? nbins : c;
            codes[g * G + j] = (uint8_t)c;
        }
        store_f16(scales + 2 * (size_t)g, scale);
        store_f16(biases + 2 * (size_t)g, bias);
    }
    uint32_t words[STENO_KVQ_MAX_DIM / 4];
    steno_pack_bits(codes, D, f->bits, words);
    memcpy(dst, words, (size_t)D * f->bits / 8);
}

static void encode_tqv(const steno_kvq_fmt *f, const float *x, uint8_t *dst) {
    const int D = f->head_dim;
    float y[STENO_KVQ_MAX_DIM];
    double ss = 0.0;
    for (int i = 0; i < D; i++) {
        y[i] = x[i];
        ss += (double)x[i] * x[i];
    }
    steno_tq_rotate(y, D);
    const float s = (float)(sqrt(ss) / sqrt((double)D)); /* |x| / sqrt(d): the rotated coordinates' scale */
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    uint8_t codes[STENO_KVQ_MAX_DIM];
    for (int i = 0; i < D; i++) codes[i] = (uint8_t)steno_lloyd_max_index(f->bits, y[i] * inv);
    uint32_t words[STENO_KVQ_MAX_DIM / 4];
    steno_pack_bits(codes, D, f->bits, words);
    const size_t cb = (size_t)D * f->bits / 8;
    memcpy(dst, words, cb);
    memcpy(dst + cb, &s, 4);
}

void steno_kvq_encode(const steno_kvq_fmt *f, const float *x, uint8_t *dst) {
    if (f->kind == STENO_KVQ_AFFINE) encode_affine(f, x, dst);
    else encode_tqv(f, x, dst);
}

void steno_kvq_decode(const steno_kvq_fmt *f, const uint8_t *src, float *x, int rotated) {
    const int D = f->head_dim;
    uint32_t words[STENO_KVQ_MAX_DIM / 4];
    uint8_t codes[STENO_KVQ_MAX_DIM];
    const size_t cbytes = (size_t)D * f->bits / 8;
    memcpy(words, src, cbytes);
    steno_unpack_bits(words, D, f->bits, codes);
    if (f->kind == STENO_KVQ_AFFINE) {
        const int G = f->group, ng = D / G;
        for (int g = 0; g < ng; g++) {
            const float s = load_f16(src + cbytes + 2 * (size_t)g), b = load_f16(src + cbytes + 2 * (size_t)(ng + g));
            for (int j = 0; j < G; j++) x[g * G + j] = s * (float)codes[g * G + j] + b;
        }
        if (f->rotate && !rotated) steno_tq_unrotate(x, D);
        return;
    }
    const float *cb = steno_lloyd_max_codebook(f->bits);
    float s;
    memcpy(&s, src + cbytes, 4);
    for (int i = 0; i < D; i++) x[i] = s * cb[codes[i]];
    if (!rotated) steno_tq_unrotate(x, D);
}
