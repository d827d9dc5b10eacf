/* streaming_impl.h — the body of vec_attention's streaming-softmax kernel over float32 K/V (the
 * Whisper encoder's self-attention, the decoder's), included once by each streaming_<isa>.c after
 * it defines its helpers and:
 *   ST_TGT            the target attribute of the isa
 *   ST_NAME           the kernel's name (vec_avx2_attention, vec_avx512_attention)
 *   ST_LANES          floats per vector (8, 16); dh must be a multiple of it
 *   ST_VEC            the vector type; ST_ZERO(), ST_SET1(x), ST_LOADU(p), ST_STOREU(p, v),
 *                     ST_MUL(a, b) its operations
 *   ST_ALIGN          the score tile's alignment in bytes (a vector)
 *   ST_FALLBACK       the kernel for dh it does not take (not a multiple of ST_LANES, over 256)
 *   ST_ROWS           the whole-row path (whole_rows.c) for inputs VEC_ATT_ROWS accepts
 *   ST_SCORES(qa, Kt, ldk, dh, jn, s, lds, qn)    the score tile (score_tile.h)
 *   ST_SOFTMAX(p, jl, m, l)   one query's softmax step over a block: p becomes the probabilities
 *                     (exact zeros from jl on), (m, l) the running maximum and sum; returns the
 *                     rescale factor of the query's previous output
 *   ST_PV(o, scale, p, V, ldv, n, nv)             o = o·scale + Σ_{j<n} p[j]·V[j], nv vectors
 *   ST_JOINT_DH(nv)   whether ST_PV_TILE takes rows of nv vectors
 *   ST_PV_TILE(o, scale, p, V, ldv, n, nv, dh)    ST_PV for the ATT_QB queries of a full tile
 * Loop order: a chunk of up to ATT_QC queries, then key blocks of ATT_BLOCK, then tiles of ATT_QB
 * (6) queries — so each key block (K and V, 2·64·dh floats) is read from memory once per chunk
 * and reused from L1 by every tile. Scores: six queries × sixteen keys or more per register tile,
 * reading the transposed keys Kt, so no horizontal sums. Softmax: per query and key block, one
 * rescale of the running (max, sum, output row) at most. Values: a full tile that sees the whole
 * block accumulates p·V for its six queries in one pass over the block; otherwise (causal edges,
 * the last tile) per query. Every output element is a chain of lane-wise operations whose order
 * does not depend on ST_LANES, so the versions give the same bits (test_vec_avx512). */
#include <math.h>

#include "kernels/attention/score_tile.h"
#include "kernels/gemv/vec_impl.h"

ST_TGT void ST_NAME(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk, int dh,
                    int nq, int causal, int q_pos0, float *out, int out_stride) {
    if (dh % ST_LANES || dh > 256) {
        ST_FALLBACK(q, q_stride, Kt, ldk, V, ldv, nk, dh, nq, causal, q_pos0, out, out_stride);
        return;
    }
    if (VEC_ATT_ROWS(causal, nk, dh)) {
        ST_ROWS(q, q_stride, Kt, ldk, V, ldv, nk, dh, nq, out, out_stride);
        return;
    }
    const int nv = dh / ST_LANES;
    float s[ATT_QB][ATT_BLOCK] __attribute__((aligned(ST_ALIGN)));
    float m[ATT_QC], l[ATT_QC];
    int lim[ATT_QC];
    for (int c0 = 0; c0 < nq; c0 += ATT_QC) {
        const int cn = nq - c0 < ATT_QC ? nq - c0 : ATT_QC;
        int lim_max = 0;
        for (int a = 0; a < cn; a++) {
            const int i = c0 + a;
            lim[a] = causal ? (q_pos0 + i + 1 < nk ? q_pos0 + i + 1 : nk) : nk;
            lim_max = lim[a] > lim_max ? lim[a] : lim_max;
            m[a] = -INFINITY;
            l[a] = 0.0f;
            float *o = out + (size_t)i * out_stride;
            for (int c = 0; c < nv; c++) ST_STOREU(o + ST_LANES * c, ST_ZERO());
        }
        for (int j0 = 0; j0 < lim_max; j0 += ATT_BLOCK) {
            const int jn = lim_max - j0 < ATT_BLOCK ? lim_max - j0 : ATT_BLOCK;
            for (int t0 = 0; t0 < cn; t0 += ATT_QB) {
                const int qn = cn - t0 < ATT_QB ? cn - t0 : ATT_QB;
                int tile_lim = 0;
                for (int a = 0; a < qn; a++) tile_lim = lim[t0 + a] > tile_lim ? lim[t0 + a] : tile_lim;
                if (j0 >= tile_lim) continue; /* causal: this tile sees none of the block */
                const float *qa[ATT_QB];
                for (int a = 0; a < qn; a++) qa[a] = q + (size_t)(c0 + t0 + a) * q_stride;
                switch (qn) { /* constant tile heights keep the accumulators in registers */
                case 6: ST_SCORES(qa, Kt + j0, ldk, dh, jn, s[0], ATT_BLOCK, 6); break;
                case 5: ST_SCORES(qa, Kt + j0, ldk, dh, jn, s[0], ATT_BLOCK, 5); break;
                case 4: ST_SCORES(qa, Kt + j0, ldk, dh, jn, s[0], ATT_BLOCK, 4); break;
                case 3: ST_SCORES(qa, Kt + j0, ldk, dh, jn, s[0], ATT_BLOCK, 3); break;
                case 2: ST_SCORES(qa, Kt + j0, ldk, dh, jn, s[0], ATT_BLOCK, 2); break;
                default: ST_SCORES(qa, Kt + j0, ldk, dh, jn, s[0], ATT_BLOCK, 1); break;
                }
                /* a full tile whose queries all see the whole block (encoder self-attention,
                 * cross-attention, beam rows): softmax per query, then one pass over V */
                const int joint = qn == ATT_QB && ST_JOINT_DH(nv) && j0 + jn <= lim[t0] && j0 + jn <= lim[t0 + qn - 1];
                float scl[ATT_QB];
                float *oa[ATT_QB];
                for (int a = 0; a < qn; a++) {
                    const int qi = t0 + a;
                    if (j0 >= lim[qi]) continue;
                    const int jl = lim[qi] - j0 < jn ? lim[qi] - j0 : jn; /* keys this query sees */
                    const float scale = ST_SOFTMAX(s[a], jl, &m[qi], &l[qi]);
                    float *o = out + (size_t)(c0 + qi) * out_stride;
                    if (joint) {
                        scl[a] = scale;
                        oa[a] = o;
                    } else if (nv == 64 / ST_LANES) /* dh 64, a constant: accumulators in registers */
                        ST_PV(o, scale, s[a], V + (size_t)j0 * ldv, ldv, jl, 64 / ST_LANES);
                    else ST_PV(o, scale, s[a], V + (size_t)j0 * ldv, ldv, jl, nv);
                }
                if (joint) ST_PV_TILE(oa, scl, s, V + (size_t)j0 * ldv, ldv, jn, nv, dh);
            }
        }
        for (int a = 0; a < cn; a++) {
            const ST_VEC inv = ST_SET1(l[a] > 0.0f ? 1.0f / l[a] : 0.0f);
            float *o = out + (size_t)(c0 + a) * out_stride;
            for (int c = 0; c < nv; c++) ST_STOREU(o + ST_LANES * c, ST_MUL(ST_LOADU(o + ST_LANES * c), inv));
        }
    }
}
