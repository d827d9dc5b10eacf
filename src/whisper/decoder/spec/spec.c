/* spec.c — speculative decoding of the greedy Whisper decoder (spec.h). */
#include "whisper/decoder/spec/spec.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "spec/cost.h"
#include "spec/verdict.h"
#include "kernels/quant/wq.h"
#include "whisper/decoder/spec/fast_verify.h"

#define ADAPTIVE_MAX 8  /* adaptive draft length: up to 8, as the LLM side (speculative.c) */
#define PAUSE_ROUNDS 16 /* plain steps after the adaptive length fell to 0 */
#define HIST_MAX 2048   /* tokens of previous windows the ngram drafter searches */
#define COST_PAUSE 48   /* plain steps after speculative rounds measured slower than plain steps */
#define COST_PROBE 4    /* plain steps measured first (the reference of the cost rule) */
/* ... in a process's first file of a drafter: a window's first steps are slow (base, one thread:
 * 8.8, 8.6, 8.0, 7.3, 6.6, 6.1, 5.8 ms, then ~5.3 from the 8th), and the cost rules take the
 * smallest plain step as p: judged against the first four only, the q8_0 drafter (d + v ≈ 5.4 ms)
 * looked able to pay and drafted 328 tokens over the dev clips at 0.96× */
#define COST_PROBE_FIRST 10

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

struct whisper_spec {
    int kind;
    int kmax, k, adaptive, misses, pause;
    /* adaptive: seconds per emitted token of speculative rounds and of plain steps (moving
     * averages; < 0: none yet). Timing steers only the draft length, never a token. */
    double cost_spec, cost_plain;
    steno_spec_cost cost; /* adaptive: whether the drafter can pay at all (cost.h) */
    int key[STENO_SPEC_VKEY]; /* its key in the verdict table (spec/verdict.h): the decoder's shape
                                 and weight type, the drafter, the thread count; none for a draft
                                 model (its own shape is not in the key) */
    int ngram_min, ngram_max;
    whisper_fast_draft *draft;   /* quant, layers, model */
    whisper_fast *draft_fast;    /* model: the draft model's state */
    whisper_fast_decoder *dxdec; /* model: the draft model's own cross-attention K/V */
    float *dxa;                  /* model: its encoder output [audio_ctx][D] */
    int *dseq;                   /* [n_text_ctx + 1] the tokens in the drafter's cache */
    int *draft_toks;             /* [n_text_ctx + 1] this round's drafts */
    int *hist, n_hist;           /* ngram: previous windows' tokens, then the current window's */
    int *buf;                    /* [HIST_MAX + n_text_ctx + 1] ngram search space */
    float *dlog;                 /* [n_vocab] the drafter's logits */
    float *vlog;                 /* [kmax + 1][n_vocab] the verify pass's logits */
    steno_decode_stats st;
};

steno_status whisper_spec_create(whisper_decode_ctx *c, const steno_transcribe_params *p, const whisper_model *draft_m,
                                 whisper_fast *draft_fast, whisper_spec **out) {
    *out = NULL;
    const whisper_model *m = c->m;
    if (!c->fast || !c->fdec) return steno_fail(STENO_E_INVALID_ARG, "speculative decoding needs the fast path");
    if (p->draft_kind < STENO_WDRAFT_NGRAM || p->draft_kind > STENO_WDRAFT_MODEL)
        return steno_fail(STENO_E_INVALID_ARG, "draft_kind %d: not a drafter (1..4)", (int)p->draft_kind);
    if (p->num_draft_tokens < 0 || p->num_draft_tokens > 32)
        return steno_fail(STENO_E_INVALID_ARG, "num_draft_tokens %d: must be 1..32, or 0 (adaptive)",
                          p->num_draft_tokens);
    /* default 2..4 (a one-token match mostly proposes what does not follow: docs/PERFORMANCE.md,
     * Whisper speculative decoding); an ngram_max of 1 alone takes the minimum down with it */
    const int nmax = p->ngram_max ? p->ngram_max : 4, nmin = p->ngram_min ? p->ngram_min : (nmax < 2 ? nmax : 2);
    if (nmin < 1 || nmax < nmin || nmax > 64)
        return steno_fail(STENO_E_INVALID_ARG, "ngram_min %d, ngram_max %d: need 1 <= min <= max <= 64", nmin, nmax);
    const int L = m->n_text_layer;
    const int layers = p->draft_layers ? p->draft_layers : (L / 2 > 0 ? L / 2 : 1);
    if (p->draft_kind == STENO_WDRAFT_LAYERS && (layers < 1 || layers >= L))
        return steno_fail(STENO_E_INVALID_ARG, "draft_layers %d: must be 1..%d (the model has %d decoder layers)",
                          layers, L - 1, L);
    int qtype = 0;
    if (p->draft_kind == STENO_WDRAFT_QUANT) {
        if (p->draft_weights == STENO_WEIGHTS_F16 || p->draft_weights == STENO_WEIGHTS_Q8_0) qtype = STENO_T_Q8_0;
        else if (p->draft_weights == STENO_WEIGHTS_Q4_0) qtype = STENO_T_Q4_0;
        else return steno_fail(STENO_E_INVALID_ARG, "draft_weights: the quant drafter takes q8_0 or q4_0");
        if (m->wq_type)
            return steno_fail(STENO_E_INVALID_ARG, "the quant drafter drafts for float16/float32 weights, and these "
                                                   "are already quantized (--weights)");
    }
    if (p->draft_kind == STENO_WDRAFT_MODEL) {
        if (!draft_m || !draft_fast) return steno_fail(STENO_E_INVALID_ARG, "draft kind model: no draft model");
        const whisper_special *a = &m->special, *b = &draft_m->special;
        if (draft_m->n_vocab != m->n_vocab || a->eot != b->eot || a->sot != b->sot ||
            a->timestamp_begin != b->timestamp_begin || a->no_timestamps != b->no_timestamps ||
            draft_m->n_text_ctx != m->n_text_ctx)
            return steno_fail(STENO_E_INVALID_ARG, "the draft model has another vocabulary (%d tokens, eot %d; the "
                                                   "model: %d tokens, eot %d)",
                              draft_m->n_vocab, b->eot, m->n_vocab, a->eot);
    }
    whisper_spec *s = calloc(1, sizeof *s);
    if (!s) return steno_fail(STENO_E_NOMEM, "out of memory");
    s->kind = p->draft_kind;
    s->adaptive = p->num_draft_tokens == 0;
    s->kmax = s->adaptive ? ADAPTIVE_MAX : p->num_draft_tokens;
    s->k = s->adaptive ? 4 : s->kmax;
    s->cost_spec = s->cost_plain = -1.0;
    steno_spec_cost_init(&s->cost);
    const int key[STENO_SPEC_VKEY] = {STENO_SPEC_VERDICT_WHISPER, m->n_vocab, L, m->n_text_state, m->wq_type,
                                      s->kind, qtype, s->kind == STENO_WDRAFT_LAYERS ? layers : 0,
                                      whisper_fast_threads(c->fast)};
    memcpy(s->key, key, sizeof key);
    if (s->adaptive && s->kind != STENO_WDRAFT_MODEL) steno_spec_verdict_get(key, &s->cost);
    if (s->adaptive) s->pause = s->cost.plain_min < 0 ? COST_PROBE_FIRST : COST_PROBE;
    /* judged unable to pay in an earlier file of this process: plain steps, and no drafter is made
     * (quant's copy of the decoder's weights cost ~0.1 s of every file) */
    const int judged = s->adaptive && steno_spec_cost_stop(&s->cost, s->kmax, s->kind != STENO_WDRAFT_NGRAM);
    if (judged) {
        s->k = 0;
        s->pause = INT_MAX / 2;
    }
    s->ngram_min = nmin;
    s->ngram_max = nmax;
    const size_t N = (size_t)m->n_text_ctx, V = (size_t)m->n_vocab;
    s->dseq = malloc(sizeof(int) * (N + 1));
    s->draft_toks = malloc(sizeof(int) * (N + 1));
    s->hist = malloc(sizeof(int) * HIST_MAX);
    s->buf = malloc(sizeof(int) * (HIST_MAX + N + 1));
    s->dlog = malloc(sizeof(float) * V);
    s->vlog = malloc(sizeof(float) * V * (size_t)(s->kmax + 1));
    steno_status st = STENO_OK;
    if (!s->dseq || !s->draft_toks || !s->hist || !s->buf || !s->dlog || !s->vlog)
        st = steno_fail(STENO_E_NOMEM, "out of memory");
    else if (s->kind == STENO_WDRAFT_QUANT && !judged)
        st = whisper_fast_draft_create(c->fast, L, qtype, &s->draft);
    else if (s->kind == STENO_WDRAFT_LAYERS && !judged)
        st = whisper_fast_draft_create(c->fast, layers, 0, &s->draft);
    else if (s->kind == STENO_WDRAFT_MODEL) {
        s->draft_fast = draft_fast;
        st = whisper_fast_draft_create(draft_fast, draft_m->n_text_layer, 0, &s->draft);
        if (st == STENO_OK) st = whisper_fast_decoder_create(draft_fast, &s->dxdec);
        if (st == STENO_OK &&
            !(s->dxa = malloc(sizeof(float) * (size_t)whisper_fast_audio_ctx(draft_fast) * draft_m->n_audio_state)))
            st = steno_fail(STENO_E_NOMEM, "out of memory");
    }
    if (st != STENO_OK) {
        whisper_spec_free(s);
        return st;
    }
    if (s->draft) whisper_fast_draft_set_cross(s->draft, s->dxdec ? s->dxdec : c->fdec);
    *out = s;
    return STENO_OK;
}

void whisper_spec_free(whisper_spec *s) {
    if (!s) return;
    if (s->adaptive && s->kind != STENO_WDRAFT_MODEL && s->cost.rounds > 0) steno_spec_verdict_put(s->key, &s->cost);
    whisper_fast_draft_free(s->draft);
    whisper_fast_decoder_free(s->dxdec);
    free(s->dxa);
    free(s->dseq);
    free(s->draft_toks);
    free(s->hist);
    free(s->buf);
    free(s->dlog);
    free(s->vlog);
    free(s);
}

steno_status whisper_spec_set_window(whisper_spec *s, const float *mel) {
    if (!s || s->kind != STENO_WDRAFT_MODEL) return STENO_OK;
    steno_status st = whisper_fast_encode(s->draft_fast, mel, s->dxa);
    if (st != STENO_OK) return st;
    whisper_fast_decoder_set_audio(s->dxdec, s->dxa);
    return STENO_OK;
}

void whisper_spec_window_done(whisper_spec *s, const int *tokens, int n) {
    if (!s || n <= 0) return;
    if (n >= HIST_MAX) {
        tokens += n - HIST_MAX;
        n = HIST_MAX;
    }
    if (s->n_hist + n > HIST_MAX) { /* keep the latest */
        const int drop = s->n_hist + n - HIST_MAX;
        memmove(s->hist, s->hist + drop, sizeof(int) * (size_t)(s->n_hist - drop));
        s->n_hist -= drop;
    }
    memcpy(s->hist + s->n_hist, tokens, sizeof(int) * (size_t)n);
    s->n_hist += n;
}

void whisper_spec_add_stats(const whisper_spec *s, steno_decode_stats *st) {
    if (!s || !st) return;
    st->target_calls += s->st.target_calls;
    st->rounds += s->st.rounds;
    st->drafted += s->st.drafted;
    st->accepted += s->st.accepted;
    st->plain_steps += s->st.plain_steps;
    st->plain_step_seconds += s->st.plain_step_seconds;
    st->round_tokens += s->st.round_tokens;
    st->round_seconds += s->st.round_seconds;
}

/* Prompt lookup: the continuation of the latest earlier occurrence of the last g tokens (g from
 * ngram_max down to ngram_min) in the previous windows' tokens followed by this window's. */
static int draft_ngram(whisper_spec *s, const int *win, int n_win, int k, int *out) {
    int len = 0;
    memcpy(s->buf, s->hist, sizeof(int) * (size_t)s->n_hist);
    len = s->n_hist;
    memcpy(s->buf + len, win, sizeof(int) * (size_t)n_win);
    len += n_win;
    const int *b = s->buf;
    for (int g = s->ngram_max; g >= s->ngram_min; g--) {
        if (len < g + 1) continue;
        const int *pat = b + len - g;
        for (int j = len - g - 1; j >= 0; j--) {
            if (memcmp(b + j, pat, sizeof(int) * (size_t)g) != 0) continue;
            int mcount = 0;
            while (mcount < k && j + g + mcount < len) {
                out[mcount] = b[j + g + mcount];
                mcount++;
            }
            if (mcount > 0) return mcount;
        }
    }
    return 0;
}

/* The model drafters: catch the drafter's cache up with seq[0..n) (keeping the prefix it shares),
 * then up to k greedy tokens under the logit filters, written after seq[n-1] (scratch there). */
static steno_status draft_model(whisper_decode_ctx *c, whisper_spec *s, int n, int filter_begin, int k, int *out,
                                int *n_out) {
    int *seq = c->seq;
    const int eot = c->m->special.eot;
    int cp = whisper_fast_draft_n_past(s->draft);
    if (cp > n - 1) cp = n - 1;
    for (int i = 0; i < cp; i++)
        if (s->dseq[i] != seq[i]) {
            cp = i;
            break;
        }
    whisper_fast_draft_rollback(s->draft, cp);
    memcpy(s->dseq + cp, seq + cp, sizeof(int) * (size_t)(n - cp));
    /* the target's cache holds seq[0..n−1): a drafter over the target's own model copies those
     * positions instead of running them (the window's prompt, the tokens of plain steps) */
    if (s->kind != STENO_WDRAFT_MODEL && cp < n - 1 && whisper_fast_draft_sync(s->draft, c->fdec, n - 1) == 0) cp = n - 1;
    steno_status st = whisper_fast_draft_forward(s->draft, seq + cp, n - cp, s->dlog);
    int m = 0;
    while (st == STENO_OK && m < k) {
        const whisper_filtered fr = whisper_apply_filters(&c->filters, seq + filter_begin, n + m - filter_begin, s->dlog);
        const int tok = fr.argmax;
        out[m] = tok;
        seq[n + m] = tok; /* the filters of the next draft position see it */
        m++;
        if (tok == eot || m == k) break;
        s->dseq[n + m - 1] = tok;
        st = whisper_fast_draft_forward(s->draft, &tok, 1, s->dlog);
    }
    *n_out = m;
    return st;
}

/* The adaptive length: longer while every draft holds, halved after two rounds without one, and
 * 0 (plain steps) for PAUSE_ROUNDS rounds when it reaches 0 (the LLM side's policy). */
static void update_k(whisper_spec *s, int drafted, int accepted, int emitted, double seconds) {
    if (!s->adaptive) return;
    /* the cost rule: speculation pays only where a drafted round emits its tokens faster than
     * plain steps do (a drafter as slow as the target, or a verify pass that costs nearly one
     * step per row, does not); else plain steps for COST_PAUSE rounds, then a probe again */
    double *c = drafted ? &s->cost_spec : &s->cost_plain;
    const double per = seconds / (emitted > 0 ? emitted : 1);
    *c = *c < 0 ? per : 0.7 * *c + 0.3 * per;
    if (drafted && s->cost_plain > 0 && s->cost_spec > s->cost_plain) {
        s->pause = COST_PAUSE;
        s->cost_spec = -1.0; /* measured afresh at the next probe */
        s->k = s->k > 2 ? s->k / 2 : 1;
        return;
    }
    if (drafted == 0) return;
    if (accepted == drafted) s->k = s->k + 2 < s->kmax ? s->k + 2 : s->kmax;
    else if (accepted > 0) s->misses = 0;
    else if (++s->misses >= 2) {
        s->k /= 2;
        s->misses = 0;
        if (s->k == 0) s->pause = PAUSE_ROUNDS;
    }
}

steno_status whisper_spec_sample(whisper_decode_ctx *c, const whisper_prefill *pf, int *n_io, double *sum_logprob) {
    whisper_spec *s = c->spec;
    const whisper_model *m = c->m;
    const int N = m->n_text_ctx, V = m->n_vocab, eot = m->special.eot;
    const int sample_len = N / 2, filter_begin = pf->sample_begin + pf->n_forced;
    int *seq = c->seq;
    int n = *n_io, i = pf->n_forced;
    steno_status st = STENO_OK;
    if (s->draft) whisper_fast_draft_rollback(s->draft, 0); /* a new attempt: the window's first token */
    /* the first token from the prompt's logits, as the plain loop */
    const float *rows = c->logits;
    int n_rows = 1, done = i >= sample_len;
    while (!done) {
        int kd = 0, consumed = 0, accepted = 0;
        const double t_round = now_s();
        const int n0 = n, passed = i > pf->n_forced;
        if (passed) { /* a target pass over seq[n−1] and the drafts */
            int k = s->pause > 0 ? 0 : s->k;
            if (s->pause > 0 && --s->pause == 0 && s->k == 0) s->k = 1; /* short drafts again */
            if (k > N - n) k = N - n;               /* positions n−1 .. n−1+k exist */
            if (k > sample_len - i - 1) k = sample_len - i - 1; /* no draft past the sampling limit */
            const double t_draft = now_s();
            if (k > 0) {
                if (s->kind == STENO_WDRAFT_NGRAM) kd = draft_ngram(s, seq + pf->sample_begin, n - pf->sample_begin, k, s->draft_toks);
                else st = draft_model(c, s, n, filter_begin, k, s->draft_toks, &kd);
                if (st != STENO_OK) break;
            }
            s->st.target_calls++;
            const double t_pass = now_s();
            if (kd == 0) { /* the plain step, screen included */
                st = whisper_fast_decoder_forward(c->fdec, seq + n - 1, 1, c->logits);
                rows = c->logits;
                n_rows = 1;
            } else {
                memmove(s->draft_toks + 1, s->draft_toks, sizeof(int) * (size_t)kd);
                s->draft_toks[0] = seq[n - 1];
                st = whisper_fast_decoder_verify(c->fdec, s->draft_toks, kd + 1, s->vlog);
                rows = s->vlog;
                n_rows = kd + 1;
                s->st.rounds++;
                s->st.drafted += kd;
            }
            if (st != STENO_OK) break;
            const double t_end = now_s();
            if (kd == 0) {
                steno_spec_cost_plain(&s->cost, t_end - t_pass);
                s->st.plain_steps++;
                s->st.plain_step_seconds += t_end - t_pass;
                s->st.round_seconds += t_pass - t_draft; /* a lookup that found nothing */
            } else {
                steno_spec_cost_round(&s->cost, t_pass - t_draft, kd, t_end - t_pass);
                s->st.round_seconds += t_end - t_draft;
            }
        }
        /* each position's logits under the filters with its own prefix: the plain loop's choice */
        for (int j = 0; j < n_rows; j++) {
            float *row = (float *)rows + (size_t)j * V;
            const whisper_filtered fr = whisper_apply_filters(&c->filters, seq + filter_begin, n - filter_begin, row);
            const int next = fr.argmax;
            *sum_logprob += (double)row[next] - fr.lse;
            seq[n++] = next;
            i++;
            consumed = j + 1;
            if (next == eot || n > N || i >= sample_len) {
                done = 1;
                break;
            }
            if (j >= kd || next != s->draft_toks[j + 1]) break; /* the first mismatch ends the round */
            accepted++;
        }
        /* the target's cache keeps seq[0..n−1): the inputs of the consumed rows */
        if (passed) whisper_fast_decoder_rollback(c->fdec, n0 - 1 + consumed);
        s->st.accepted += accepted;
        if (passed && kd > 0) s->st.round_tokens += consumed;
        if (passed) steno_spec_cost_outcome(&s->cost, kd, accepted);
        if (passed) update_k(s, kd, accepted, consumed, now_s() - t_round);
        /* no acceptance would pay for its drafts, or the acceptance seen does not */
        if (s->adaptive && steno_spec_cost_stop(&s->cost, s->kmax, s->kind != STENO_WDRAFT_NGRAM)) {
            s->k = 0;
            s->pause = INT_MAX / 2;
        }
    }
    *n_io = n;
    return st;
}
