/* fast_attention.c — the fast path's fused attention (kernels/gemv/vec.h vec_attention) split
 * into pool tasks: one per (head, query block) over float32 keys and values, one per head over
 * the decoder's float16 cross-attention keys and values. */
#include "whisper/fast_internal.h"

void fast_attn_task(void *ctx, int t, int n) {
    fast_attn_job *j = ctx;
    (void)n;
    const int h = t % j->H, qb = t / j->H;
    const int per = (j->nq + j->q_blocks - 1) / j->q_blocks, i0 = qb * per;
    const int i1 = i0 + per < j->nq ? i0 + per : j->nq;
    if (i0 >= i1) return;
    vec_attention(j->q + (size_t)i0 * j->q_stride + h * j->dh, j->q_stride,
                  j->Kt + (size_t)h * j->dh * j->ldk, j->ldk, j->V + h * j->v_head_stride, j->ldv, j->nk, j->dh, i1 - i0,
                  j->causal, j->q_pos0 + i0, j->out + (size_t)i0 * j->H * j->dh + h * j->dh, j->H * j->dh);
}

void fast_attention(whisper_fast *f, fast_attn_job *j) {
    j->q_blocks = j->nq >= 64 ? 4 * f->n_threads : 1;
    steno_pool_run(f->pool, fast_attn_task, j, j->H * j->q_blocks);
}

void fast_attn16_task(void *ctx, int t, int n) {
    (void)n;
    const fast_attn16_job *j = ctx;
    const int D = j->H * j->dh;
    vec_attention_f16(j->q + t * j->dh, D, j->Kb + (size_t)t * j->dh * j->nk16, j->V + (size_t)t * j->nk * j->dh,
                      j->dh, j->nk, j->dh, j->nq, j->out + t * j->dh, D);
}
