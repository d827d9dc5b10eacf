/* logit_screen.c — the greedy step's logits through an int8 copy of the tied embedding: every
 * row bounded from the int8 values, the rows that can win recomputed exactly from the float16
 * weights (whisper_fast_decoder_set_screen in fast.h; the bound is kernels/gemv/vec.h
 * vec_screen_rows). */
#include <math.h>

#include "whisper/fast_internal.h"

/* The int8 copy of the tied embedding (kernels/gemv/vec.h vec_screen_rows), from the float16 values
 * the exact GEMV reads; one task per contiguous slice of rows. */
static void screen_build_task(void *ctx, int t, int n) {
    whisper_fast *f = ctx;
    const int V = f->m->n_vocab, D = f->m->n_text_state;
    const int per = (V + n - 1) / n, r0 = t * per, r1 = r0 + per < V ? r0 + per : V;
    for (int r = r0; r < r1; r++)
        vec_screen_build_row((const uint16_t *)f->emb + (size_t)r * D, D, f->emb_q + (size_t)r * D, &f->emb_s[r],
                             &f->emb_g[r], &f->emb_c[r]);
}

void fast_logit_screen_build(whisper_fast *f) { steno_pool_run(f->pool, screen_build_task, f, f->n_threads); }

void whisper_fast_decoder_set_screen(whisper_fast_decoder *d, const float *allow) { d->screen_allow = allow; }

int whisper_fast_decoder_screened_rows(const whisper_fast_decoder *d) { return d->n_exact; }

/* Rows whose upper bound comes within this many nats of the best allowed lower bound are
 * recomputed exactly: the argmax needs only margin 0; 4 more keeps exact every token with more
 * than e^-4 ≈ 2 % of the best one's probability. */
#define SCREEN_MARGIN 4.0f

typedef struct screen_job {
    whisper_fast_decoder *d;
    vec_screen_x x[FAST_SCREEN_MAX];
    int nx;
    float *logits; /* [nx][n_vocab] */
    /* the exact pass: one position at a time */
    const float *h; /* its layer-normed state [D] */
    const float *hi;
    float *out;     /* its logits */
    float thr;
    float best[64][FAST_SCREEN_MAX];
    int count[64];
    float thr_pos[FAST_SCREEN_MAX]; /* the union pass: each position's threshold */
} screen_job;

static void screen_task(void *ctx, int t, int n) {
    screen_job *j = ctx;
    const whisper_fast *f = j->d->f;
    const int eot = f->m->special.eot, D = f->m->n_text_state, V = f->m->n_vocab;
    const int per = (eot + n - 1) / n, r0 = t * per, r1 = r0 + per < eot ? r0 + per : eot;
    const vec_screen_rows w = {f->emb_q, f->emb_s, f->emb_g, f->emb_c};
    if (r0 < r1)
        vec_screen_i8_multi(&w, j->x, j->nx, D, r0, r1, j->d->screen_allow, j->logits, j->d->hi, (size_t)V, j->best[t]);
    else
        for (int i = 0; i < j->nx; i++) j->best[t][i] = -INFINITY;
}

/* the text rows (below eot) whose upper bound reaches thr; the special and timestamp rows went
 * through fast_logit_screen_rows' pass over all positions */
static void exact_task(void *ctx, int t, int n) {
    screen_job *j = ctx;
    whisper_fast_decoder *d = j->d;
    const whisper_fast *f = d->f;
    const int eot = f->m->special.eot, D = f->m->n_text_state;
    const int per = (eot + n - 1) / n, r0 = t * per, r1 = r0 + per < eot ? r0 + per : eot;
    int *rows = d->rows + (r0 < eot ? r0 : 0), c = 0;
    for (int r = r0; r < r1; r++)
        if (j->hi[r] >= j->thr) rows[c++] = r;
    vec_gemv_f16_rows((const uint16_t *)f->emb, j->h, D, rows, c, j->out);
    j->count[t] = c;
}

/* The exact pass of nx > 1 positions: the text rows any position needs (its upper bound reaches
 * its threshold), each read once for the positions that need it (vec_gemv_f16_rows_multi with a
 * mask per row); every position gets exact values for its own rows only, so its logits are what
 * its own call gives (the other rows keep their screened values). On base a verify pass's
 * positions recompute ~6 500 text rows each, ~36 000 distinct ones for 8 positions. */
static void union_task(void *ctx, int t, int n) {
    screen_job *j = ctx;
    whisper_fast_decoder *d = j->d;
    const whisper_fast *f = d->f;
    const int V = f->m->n_vocab, eot = f->m->special.eot, D = f->m->n_text_state, nx = j->nx;
    const int per = (eot + n - 1) / n, r0 = t * per, r1 = r0 + per < eot ? r0 + per : eot;
    int *rows = d->rows + (r0 < eot ? r0 : 0), c = 0, taken = 0;
    uint16_t *need = d->need + (r0 < eot ? r0 : 0);
    for (int r = r0; r < r1; r++) {
        unsigned bits = 0;
        for (int i = 0; i < nx; i++) bits |= (unsigned)(d->hi[(size_t)i * V + r] >= j->thr_pos[i]) << i;
        if (bits) need[c] = (uint16_t)bits, rows[c++] = r, taken += __builtin_popcount(bits);
    }
    float *out[FAST_SCREEN_MAX] = {0};
    for (int i = 0; i < nx; i++) out[i] = j->logits + (size_t)i * V;
    vec_gemv_f16_rows_multi((const uint16_t *)f->emb, d->h, D, nx, D, rows, need, c, out);
    j->count[t] = taken;
}

/* The step's logits in two passes (greedy decoding at temperature 0). Each text row is first
 * bounded from the int8 copy of the embedding (20 of the 40 MB the float16 GEMV reads, and no
 * float16 conversion): z ± b with |exact − z| <= b (kernels/gemv/vec.h). Every row whose upper bound
 * reaches the best lower bound among the allowed rows minus SCREEN_MARGIN, and every special and
 * timestamp row, is then recomputed from the float16 weights by the same kernel as logits_at,
 * bit for bit. The row that wins under any filter that removes only disallowed rows, timestamps
 * or all text is therefore exactly the one logits_at would give, and so is the timestamp rule
 * (it compares the timestamps' log-sum-exp with the best text logit); rows left screened are at
 * least SCREEN_MARGIN nats below the best one and carry their screened value, which moves the
 * log-sum-exp (the reported log-probabilities) by a few 1e-5 nats at most in practice.
 * B positions (a verify pass) share one read of the int8 rows; each position's logits are the
 * ones its own call would give, bit for bit. */
void fast_logit_screen_rows(whisper_fast_decoder *d, const float *x, int B, float *logits) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, V = m->n_vocab;
    const int nt = f->n_threads < 64 ? f->n_threads : 64;
    d->n_exact = 0;
    for (int b0 = 0; b0 < B; b0 += FAST_SCREEN_MAX) {
        const int nx = B - b0 < FAST_SCREEN_MAX ? B - b0 : FAST_SCREEN_MAX;
        screen_job j;
        j.d = d;
        j.nx = nx;
        j.logits = logits + (size_t)b0 * V;
        for (int i = 0; i < nx; i++) {
            vec_layernorm(x + (size_t)(b0 + i) * D, m->dec_ln.gamma, m->dec_ln.beta, D, d->h + (size_t)i * D);
            j.x[i].qx = d->sq + (size_t)i * D;
            j.x[i].ax = d->sa + (size_t)i * D;
            j.x[i].sb = d->sb + (size_t)i * (D / VEC_SCREEN_BLOCK);
            vec_screen_prepare(d->h + (size_t)i * D, D, &j.x[i]);
        }
        steno_pool_run(f->pool, screen_task, &j, nt);
        /* every special and timestamp row, exact for all nx positions in one pass over their
         * float16 weights (vec_gemv_rows_to: each value the one vec_gemv_f16_rows gives) */
        const int eot = m->special.eot;
        if (eot < V) {
            float *yr[FAST_SCREEN_MAX];
            for (int i = 0; i < nx; i++) yr[i] = j.logits + (size_t)i * V + eot;
            fast_linear_rows_to(f, VEC_F16, (const uint16_t *)f->emb + (size_t)eot * D, NULL, d->h, nx, V - eot, D, yr);
            d->n_exact += nx * (V - eot);
        }
        if (nx > 1) {
            for (int i = 0; i < nx; i++) {
                float best = -INFINITY;
                for (int t = 0; t < nt; t++) best = j.best[t][i] > best ? j.best[t][i] : best;
                j.thr_pos[i] = best - SCREEN_MARGIN; /* as below */
            }
            steno_pool_run(f->pool, union_task, &j, nt);
            for (int t = 0; t < nt; t++) d->n_exact += j.count[t];
            continue;
        }
        for (int i = 0; i < nx; i++) {
            float best = -INFINITY;
            for (int t = 0; t < nt; t++) best = j.best[t][i] > best ? j.best[t][i] : best;
            j.thr = best - SCREEN_MARGIN; /* -inf when no text row is allowed: every row exact */
            j.h = d->h + (size_t)i * D;
            j.hi = d->hi + (size_t)i * V;
            j.out = j.logits + (size_t)i * V;
            steno_pool_run(f->pool, exact_task, &j, nt);
            for (int t = 0; t < nt; t++) d->n_exact += j.count[t];
        }
    }
}

void fast_logit_screen(whisper_fast_decoder *d, const float *x, float *logits) {
    fast_logit_screen_rows(d, x, 1, logits);
}
