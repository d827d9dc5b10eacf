/* fast_internal.h — the fast path's state and the helpers its files share: nn/fast_gemm.c and
 * nn/fast_attention.c (products, row helpers, attention on the pool), model/fast_model.c
 * (creation and weights), encoder/fast_encoder.c, decoder/fast_decoder.c (one decoder's forward
 * and rows), decoder/logit_screen.c, decoder/fast_group_step.c (rows of several decoders in one
 * step); not a public header. */
#ifndef STENO_WHISPER_FAST_INTERNAL_H
#define STENO_WHISPER_FAST_INTERNAL_H

#include "whisper/fast.h"
#include "whisper/decoder/kv_rows.h"

/* Quantized weights (model->wq_type): the layer pointers are const wq_mat * and fast_linear() hands
 * them to linear_quant.c. */
#define DT_Q ((vec_dtype)2)

/* The f16 GEMM's fixed column grid (nn/fast_gemm.c); conv_scratch holds one chunk per task */
#define FAST_COL_CHUNK 64

/* The encoder's float16 GEMMs (linear_f16.c): output columns per chunk of the fixed grid */
#define ENC_COL_CHUNK 256

typedef struct fast_layer {
    const void *qkv, *out, *cross_q, *cross_out, *fc1, *fc2; /* decoder weights in f->dt */
} fast_layer;

/* float16 panels of the decoder's weights (fast_panels.c), shared by the states that share weights */
typedef struct fast_panels fast_panels;

struct whisper_fast {
    const whisper_model *m;
    vec_dtype dt;
    int A; /* audio_ctx */
    steno_pool *pool;
    int n_threads;
    fast_layer *dec;
    const void *emb;      /* [n_vocab][D] in dt */
    float *cross_k_w;     /* [L·D][D]: every layer's cross-attention key weights */
    float *cross_v_w;     /* [L·D][D] */
    float *cross_k_b, *cross_v_b; /* [L·D] */
    uint16_t *f16;        /* storage of the f16 copies */
    /* f16 weights: the tied embedding as int8 rows that screen the step's logits (logit_screen) */
    int8_t *emb_q;                /* [n_vocab][D] */
    float *emb_s, *emb_g, *emb_c; /* [n_vocab] each: vec_screen_rows */
    float *conv_scratch;  /* f16 → f32 rows for prefill GEMMs, [n_threads][FAST_COL_CHUNK][4D] */
    float *enc_scratch;   /* float16 encoder: f16 → f32 rows, [n_threads][ENC_COL_CHUNK][4D]; else NULL */
    /* float16 encoder on an AMX-BF16 CPU (kernels/gemm/gemm_amx_bf16x3.h): a linear's input split into bfloat16
     * halves, [gemm_amx_rows(A)][4·n_audio_state] each; else NULL */
    uint16_t *amx_xh, *amx_xl;
    uint16_t *conv2_w16;       /* AMX: the second convolution's weights as halves (float16 models); else NULL */
    uint16_t *amx_kv;          /* AMX: the self-attention's packed keys and values, 4·[H][gemm_amx_rows(A)·dh] */
    void *amx_att_scratch;     /* AMX: [n_threads] × amx_att_scratch_bytes, 64-byte aligned */
    size_t amx_att_scratch_bytes;
    /* encoder activations, sized for audio_ctx; big holds the MLP hidden [A][4D], the im2col
     * matrices of the convolutions, and the decoder's per-window cross K/V projection */
    float *big, *h, *qkv, *kt, *att;
    size_t big_floats;
    unsigned char *qact; /* quantized weights: activation rows quantized, [n_text_ctx] rows */
    steno_work xwork;    /* quantized weights with x8 copies: steno_matmul_x's scratch, this state's own */
    fast_panels *panels;  /* float16 weights: built on a first step with many rows; else NULL */
    int shared; /* 1: the weights above belong to another whisper_fast (whisper_fast_share) */
    /* whisper_fast_set_step_hook: the step hook decoders created from here start with */
    whisper_fast_step_hook def_hook;
    void *def_hook_ctx;
    whisper_fast_encode_hook enc_hook; /* whisper_fast_set_encode_hook */
    void *enc_hook_ctx;
};

struct whisper_fast_decoder {
    whisper_fast *f;
    int n_past;
    int ldk_self, ldk_cross;  /* key columns allocated (vec_attention_ldk) */
    whisper_kv_rows kv;       /* row → self-attention slot */
    size_t k_slot, v_slot;    /* floats per slot of self_k, self_v */
    float *self_k, *self_v;   /* per slot: keys [L][H][dh][ldk_self] (transposed), values [L][H][n_text_ctx][dh] */
    float *cross_k, *cross_v; /* keys [L][H][dh][ldk_cross], values [L][H][A][dh] */
    /* f16 weights: the same keys and values as halves in lane order (vec_f32_to_f16_lanes), read
     * by the single-token steps (greedy and beam rows): half the bytes of the step's largest
     * read after the weights. The float32 copies serve the prompt (T > 1) and the alignment-head
     * capture. NULL with f32 weights (the token-exact gate) or a head size not a multiple of 16. */
    uint16_t *cross_k16, *cross_v16;
    float *x, *h, *qkv, *q, *att, *mlp; /* sized for n_text_ctx tokens */
    const whisper_xattn_capture *capture; /* NULL, or scores to record (word timestamps) */
    /* logit screen (whisper_fast_decoder_set_screen): NULL = every logit exact */
    const float *screen_allow;
    int8_t *sq;   /* [D] the step's final hidden state quantized per block */
    uint8_t *sa;  /* [D] its magnitudes */
    float *sb;    /* [D/32] its block scales */
    float *hi;    /* [n_vocab] upper bounds of the screened logits */
    uint16_t *need; /* [n_vocab] a verify pass's positions that recompute each listed row (bit per position) */
    int *rows;    /* [n_vocab] rows recomputed exactly, per task slice */
    int n_exact;  /* rows recomputed exactly at the last screened step */
    /* whisper_fast_decoder_set_step_hook: single-token steps handed to a batcher (NULL: none) */
    whisper_fast_step_hook step_hook;
    void *step_hook_ctx;
};


/* y[B][N] = x[B][K] Wᵀ + b for B independent rows (one token each): one pass over W for all rows,
 * every row bit-identical to a single-row step. dt: f->dt, or DT_Q with a const wq_mat *. */
void fast_linear_rows(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int B, int N,
                      int K, float *y);
/* As fast_linear_rows with act the quantized activation rows' scratch for B rows (quantized
 * weights; fast_linear_rows uses f->qact, which holds n_text_ctx rows). */
void fast_linear_rows_act(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int B, int N,
                          int K, float *y, void *act);
/* As fast_linear_rows with row i's outputs at yrows[i] (vec_gemv_rows_to), the same bits; float16
 * and float32 weights only: returns 0, having done nothing, for DT_Q (the caller goes through y). */
int fast_linear_rows_to(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int B, int N,
                        int K, float *const *yrows);
/* y[T][N] = x[T][K] Wᵀ + b as the decoder's prompt computes it (GEMM for T > 1, GEMV for T = 1):
 * the drafters' prefill (fast_verify.c); not bit-identical to fast_linear_rows for T > 1. */
void fast_linear(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int T, int N, int K,
                 float *y);
/* The screened logits of the final hidden state x [D] (decoder/logit_screen.c; d->screen_allow and
 * f->emb_q set): the single-token step's, and each verified position's (fast_verify.c). Uses d->h. */
void fast_logit_screen(whisper_fast_decoder *d, const float *x, float *logits);
/* Positions screened per read of the int8 rows (a verify pass's B positions go in chunks of it) */
#define FAST_SCREEN_MAX 9
/** fast_logit_screen of B states x [B][D] into logits [B][n_vocab], the int8 rows read once per
 *  FAST_SCREEN_MAX positions; each row bit-identical to its own fast_logit_screen. Overwrites
 *  d->h's first min(B, FAST_SCREEN_MAX) rows. */
void fast_logit_screen_rows(whisper_fast_decoder *d, const float *x, int B, float *logits);
/** fast_panels.c: an empty set (NULL: out of memory), and its release. */
fast_panels *fast_panels_new(void);
void fast_panels_free(fast_panels *p);
/** The panel of the float16 decoder matrix W (f->emb or a fast_layer weight) for a step of nx rows:
 *  NULL when nx < VEC_PANEL_MIN_INPUTS, the weights are not float16, the kernels take no panel or
 *  memory ran out (the row kernel then serves, the same bits). The first call with enough rows
 *  packs every panel on f's pool; thread-safe. */
const uint16_t *fast_panel(whisper_fast *f, const void *W, int nx);
/** y[T][n] = layernorm(x) row by row, on f's pool. */
void fast_layernorm(whisper_fast *f, const nn_layernorm *ln, const float *x, int T, float *y);
/** Columns [c0, c0 + cn) of y[T][·] (row stride ldy) = x[T][K] Wᵀ + b for W [N][K] float16: its rows
 *  c0.. widened into w [cn][K] (the caller's scratch), the bias preloaded, one single-threaded
 *  sgemm (beta = 1). b may be NULL. */
void fast_gemm_f16_cols(const uint16_t *W, const float *b, const float *x, int T, int K, int c0, int cn, float *w,
                        float *y, int ldy);
/** y[T][N] = x[T][K] Wᵀ + b with W [N][K] float16 (the encoder's linears, linear_f16.c), on f's
 *  pool; then, elementwise, GELU on y when gelu and res += y when res (NULL: none). Needs
 *  f->enc_scratch (K <= 4·n_audio_state). */
void fast_enc_linear16(whisper_fast *f, const uint16_t *W, const float *b, const float *x, int T, int N, int K,
                       float *y, int gelu, float *res);
/** The encoder's self-attention on AMX tiles (kernels/attention/attention_amx.h) for the float16 encoder:
 * qkv [T][3D] as prepare_qkv leaves it (queries scaled), its keys kt [D][ldk] and values vp
 * [H][T][dh]; writes out [T][D]. Returns 1, or 0 (nothing done) when this state has no AMX
 * buffers, AMX is switched off (STENO_NO_AMX) or dh is not a multiple of 32. */
int fast_enc_attention_amx(whisper_fast *f, const float *qkv, int T, int D, int dh, int H, const float *kt, int ldk,
                           const float *vp, float *out);
/** GELU in place over total floats, on f's pool. */
void fast_gelu(whisper_fast *f, float *x, size_t total);
/** Cross-attention of nq queries for layer l over d's window (halves: the float16 K/V copies when
 *  d keeps them), on pool (d->f->pool, or a group step's: the result is the same for any pool).
 *  out: [nq][D]. */
void fast_cross_attention(whisper_fast_decoder *d, steno_pool *pool, int l, const float *q, int nq, int halves,
                          float *out);

/* ---- attention tasks (nn/fast_attention.c) */

/* Attention of nq queries over float32 keys (transposed) and values: one pool task per
 * (head, query block) of the q_blocks blocks. */
typedef struct fast_attn_job {
    const float *q; /* [T][q_stride], scaled */
    int q_stride;
    const float *Kt;  /* [H][dh][ldk]: keys transposed */
    int ldk;
    const float *V;   /* head h at V + h·v_head_stride, rows ldv apart */
    size_t v_head_stride;
    int ldv;
    int nk, nq, dh, H, causal, q_pos0, q_blocks;
    float *out; /* [T][D] */
} fast_attn_job;

/* Cross-attention of the decoder step over float16 keys and values (vec_attention_f16), one task
 * per head, all nq queries in it. */
typedef struct fast_attn16_job {
    const float *q; /* [nq][D], scaled */
    const uint16_t *Kb, *V; /* one layer: [H][nk16/16][dh][16] (vec_pack_keys_f16), [H][nk][dh] lane order */
    int nk16, nk, nq, dh, H;
    float *out; /* [nq][D] */
} fast_attn16_job;

/** fast_attn_job's task t of n (head t % H, query block t / H). */
void fast_attn_task(void *ctx, int t, int n);
/** fast_attn16_job's task t: head t, all queries. */
void fast_attn16_task(void *ctx, int t, int n);
/** j on f's pool: sets j->q_blocks (4 per thread from 64 queries, else 1) and runs H·q_blocks tasks. */
void fast_attention(whisper_fast *f, fast_attn_job *j);
/** y[T][N] = x[T][K] Wᵀ + b with W float32, on f's pool in the fixed row grid of fast_linear;
 *  each row block then gets GELU on y when gelu and res += y when res (NULL: none). */
void fast_linear_f32_fused(whisper_fast *f, const float *W, const float *b, const float *x, int T, int N, int K,
                           float *y, int gelu, float *res);
/** The int8 screening copy of f's float16 embedding (emb_q, emb_s, emb_g, emb_c allocated), on
 *  f's pool (decoder/logit_screen.c). */
void fast_logit_screen_build(whisper_fast *f);

#endif
