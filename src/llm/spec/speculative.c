/* speculative.c — speculative decoding with exact verification (see steno_llm.h).
 *
 * A round: the drafter proposes up to k tokens d1..dk after the last token x; the target evaluates
 * x d1..dk in one pass (their logits all at once: one read of the weights for k + 1 positions);
 * the sampler is run on each position's logits in turn, as plain decoding would run it — same
 * logits (the kernels compute each row alone, so a position's logits do not depend on how many
 * tokens share its pass), same sampler state, same random draws — and the round keeps the sampled
 * tokens while they equal the draft: the first one that differs is the token plain decoding would
 * have produced there, so it is emitted and the rejected draft tokens are rolled back from the
 * caches (steno_llm_rollback; a sliding-window ring keeps kv_reserve tokens of history for
 * exactly this). Nothing is recomputed. The output is therefore identical to steno_llm_generate's
 * with the same sampler and seed, at any temperature; at temperature 0 this is greedy
 * verification by exact match (Leviathan et al. 2023, arXiv 2211.17192, section 2.3, with the
 * target's own sample in place of rejection sampling: distribution-exact by construction, though
 * at high temperature it accepts fewer drafts than their rejection rule would). Where a rotating
 * ring must grow to hold a verify block (window + reserve + block - 1 slots), it holds more history
 * than plain decoding's: the same rows are visible to every query, the layout differs.
 * Drafter `ngram` (prompt lookup decoding, Saxena 2023; llama.cpp's --lookup / `ngram` spec types):
 * the longest suffix of the tokens so far, from ngram_max down to ngram_min tokens, that occurred
 * earlier; its most recent earlier occurrence proposes the tokens that followed it. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "spec/cost.h"
#include "spec/verdict.h"
#include "llm/model.h"
#include "spec/backoff.h"
#include "llm/spec/draft.h"
#include "text/llm_vocab.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

steno_spec_params steno_spec_default_params(void) {
    steno_spec_params p;
    memset(&p, 0, sizeof p);
    p.kind = STENO_DRAFT_NONE;
    p.n_draft = 8;
    p.adaptive = 1;
    p.ngram_min = 2; /* a one-token match is weak evidence: docs/PERFORMANCE.md, LLM speculative decoding */
    p.ngram_max = 4;
    p.draft_layers = 0;
    p.draft_model = NULL;
    p.verify = STENO_SPEC_VERIFY_EXACT;
    return p;
}

int steno_spec_ngram_draft(const int *hist, int n, int ngram_min, int ngram_max, int k, int *draft) {
    if (k <= 0) return 0;
    for (int g = ngram_max < n - 1 ? ngram_max : n - 1; g >= ngram_min && g >= 1; g--) {
        const int *suf = hist + n - g;
        for (int j = n - g - 1; j >= 0; j--) { /* the most recent earlier occurrence */
            if (memcmp(hist + j, suf, sizeof(int) * (size_t)g) != 0) continue;
            /* a short match is weak evidence: a g-token match proposes at most 3g tokens, so that
             * a two-token coincidence does not widen the verify pass by k rows */
            const int kg = k < 3 * g ? k : 3 * g;
            int m = 0;
            while (m < kg && j + g + m < n) {
                draft[m] = hist[j + g + m];
                m++;
            }
            if (m > 0) return m;
        }
    }
    return 0;
}

void steno_spec_len_init(steno_spec_len *s, const steno_spec_params *p, const steno_llm_ctx *c, int cap) {
    memset(s, 0, sizeof *s);
    s->kmax = p->kind == STENO_DRAFT_NONE ? 0 : p->n_draft;
    if (cap > 0 && s->kmax > cap) s->kmax = cap;
    /* a rejected draft must be undone: within the ring's history on sliding-window layers */
    if ((c->p.max_kv_size > 0 || c->m->hp.n_swa > 0) && s->kmax > c->p.kv_reserve) s->kmax = c->p.kv_reserve;
    s->adaptive = p->adaptive;
    s->k = s->adaptive && s->kmax > 4 ? 4 : s->kmax;
}

int steno_spec_len_next(steno_spec_len *s, const steno_llm_ctx *c, int remaining) {
    int kk = s->pause > 0 ? 0 : s->k;
    if (s->pause > 0 && --s->pause == 0) s->k = 1; /* after a pause, short drafts again */
    if (kk > c->p.n_ctx - c->n_past - 1) kk = c->p.n_ctx - c->n_past - 1;
    if (kk > remaining) kk = remaining;
    /* a quantized cache converts at the first update that begins at kv_quant_start; a block
     * straddling it could be rolled back below it, leaving rows quantized that plain decoding
     * still holds in the dtype: blocks end before it, and the one that begins there converts */
    if (c->p.kv_quant != STENO_KV_QUANT_PLAIN && c->n_past < c->p.kv_quant_start && kk > c->p.kv_quant_start - c->n_past - 1)
        kk = c->p.kv_quant_start - c->n_past - 1;
    return kk > 0 ? kk : 0;
}

void steno_spec_len_update(steno_spec_len *s, int drafted, int accepted) {
    if (!s->adaptive || drafted == 0) return; /* lengthen while drafts hold, shorten to 0 when they do not */
    if (accepted == drafted) s->k = s->k + 2 < s->kmax ? s->k + 2 : s->kmax;
    /* a round that kept at least half its drafts paid for them (a drafted position costs well under
     * half a step); one that kept fewer is a miss too, or a text whose every lookup holds one token
     * ("1, 2, 3, …": a digit, then the wrong number) keeps k drafts for ever */
    else if (2 * accepted >= drafted) s->misses = 0;
    else if (++s->misses >= 2) {
        s->k /= 2;
        s->misses = 0;
        if (s->k == 0) s->pause = STENO_SPEC_BACKOFF_FIRST; /* backoff.h tells a new pause by it */
    }
}

/* Emits tok (the callback, the stop conditions); 1 when generation is over. */
typedef struct {
    const steno_llm *m;
    steno_token_cb cb;
    void *user;
    int n_predict, prev, *hist, nh;
    steno_gen_stats *st;
} emitter;

static int emit(emitter *e, int tok) {
    char piece[256];
    e->st->n_generated++;
    int pl = steno_vocab_piece(e->m->vocab, tok, e->prev, 0, piece, (int)sizeof piece);
    if (pl < 0) pl = 0;
    e->prev = tok;
    e->hist[e->nh++] = tok;
    if (e->cb && e->cb(e->user, tok, piece, pl)) {
        e->st->stop_reason = STENO_STOP_CALLBACK;
        return 1;
    }
    if (e->n_predict >= 0 && e->st->n_generated >= e->n_predict) {
        e->st->stop_reason = STENO_STOP_N_PREDICT;
        return 1;
    }
    return 0;
}

steno_status steno_llm_generate_spec(steno_llm_ctx *c, steno_sampler *s, const int *prompt, int n_prompt,
                                     int n_predict, steno_token_cb cb, void *user, const steno_spec_params *sp,
                                     steno_gen_stats *stats, steno_spec_stats *spec) {
    const steno_llm *m = c->m;
    const int nv = m->hp.n_vocab;
    steno_spec_params p = sp ? *sp : steno_spec_default_params();
    if (p.kind < STENO_DRAFT_NONE || p.kind > STENO_DRAFT_LAYERS)
        return steno_fail(STENO_E_INVALID_ARG, "speculative decoding: unknown draft kind %d", (int)p.kind);
    if (p.verify != STENO_SPEC_VERIFY_EXACT && p.verify != STENO_SPEC_VERIFY_REJECTION)
        return steno_fail(STENO_E_INVALID_ARG, "speculative decoding: unknown verification %d", (int)p.verify);
    if (p.n_draft < 0 || p.n_draft > 64)
        return steno_fail(STENO_E_INVALID_ARG, "--num-draft-tokens %d: need 0..64", p.n_draft);
    if (p.ngram_min < 1 || p.ngram_max < p.ngram_min || p.ngram_max > 64)
        return steno_fail(STENO_E_INVALID_ARG,
                          "ngram_min %d / ngram_max %d (--ngram-min/--ngram-max): need 1 <= min <= max <= 64%s",
                          p.ngram_min, p.ngram_max, p.ngram_max == 1 ? " (a maximum of 1 needs ngram_min 1 too)" : "");
    if (spec) memset(spec, 0, sizeof *spec);
    if (p.kind == STENO_DRAFT_NONE || p.n_draft == 0)
        return steno_llm_generate(c, s, prompt, n_prompt, n_predict, cb, user, stats);
    steno_spec_len sl; /* the verify block within one pass */
    steno_spec_len_init(&sl, &p, c, c->n_batch - 1);
    p.n_draft = sl.kmax;
    llm_drafter dr;
    memset(&dr, 0, sizeof dr);
    if (p.kind == STENO_DRAFT_MODEL || p.kind == STENO_DRAFT_LAYERS) {
        steno_status ds = llm_drafter_open(&dr, c, &p);
        if (ds != STENO_OK) return ds;
    }
    /* rejection verification at temperature > 0 with a model drafter: drafts drawn from the draft's
     * distribution q (with a deterministic draft, rejection accepts x with probability p(x) — exactly
     * what the exact sampler's own draw does — so only sampled drafts gain from it) */
    const int sampled = dr.dc && p.verify == STENO_SPEC_VERIFY_REJECTION && steno_sampler_temperature(s) > 0.0f;
    /* and they start at one draft, lengthened while accepted (their first one or two rounds, back
     * to back, decide whether they can pay: cost.h; a 36-token answer has room for little more) */
    if (dr.dc && sl.adaptive && sl.k > 1) sl.k = 1;
    steno_gen_stats st0 = {0};
    steno_spec_stats ss = {0};
    const int cap = n_prompt + (n_predict >= 0 ? n_predict : c->p.n_ctx) + 2;
    int *hist = malloc(sizeof(int) * (size_t)cap), *blk = malloc(sizeof(int) * (size_t)(p.n_draft + 1));
    float *logits = malloc(sizeof(float) * (size_t)nv * (size_t)(p.n_draft + 1));
    if (!hist || !blk || !logits) {
        free(hist);
        free(blk);
        free(logits);
        llm_drafter_close(&dr);
        return steno_fail(STENO_E_NOMEM, "speculative decoding: out of memory");
    }
    memcpy(hist, prompt, sizeof(int) * (size_t)n_prompt);
    emitter e = {m, cb, user, n_predict, n_prompt > 0 ? prompt[n_prompt - 1] : -1, hist, n_prompt, &st0};
    steno_spec_cost cost; /* adaptive: stop drafting for good when a drafter cannot pay (cost.h) */
    steno_spec_cost_init(&cost);
    /* what earlier generations of this process measured of this drafter (`steno chat` generates
     * once per turn, a library user many times): one judged unable to pay is not probed again,
     * one that pays starts from its times (spec/verdict.h) */
    int key[STENO_SPEC_VKEY];
    if (sl.adaptive && dr.dc) {
        llm_drafter_verdict_key(&dr, c, &p, key);
        steno_spec_verdict_get(key, &cost);
        if (steno_spec_cost_stop(&cost, sl.kmax, 1)) {
            sl.k = 0; /* judged in an earlier generation: plain steps, and the draft idles */
            sl.pause = INT_MAX / 2;
        }
    }
    const double t0 = now_s();
    steno_status st = steno_llm_eval(c, prompt, n_prompt, logits, 0);
    if (st == STENO_OK && dr.dc && dr.dc->n_past == 0 && sl.k > 0) st = llm_drafter_prefill(&dr, prompt, n_prompt);
    const double t1 = now_s();
    st0.n_prompt = n_prompt;
    st0.prompt_seconds = t1 - t0;
    st0.stop_reason = n_predict == 0 ? STENO_STOP_N_PREDICT : STENO_STOP_EOG;
    int backoff = STENO_SPEC_BACKOFF_FIRST;
    int done = n_predict == 0, pending = -1; /* pending: emitted, not yet in the caches */
    while (st == STENO_OK && !done) {
        if (pending < 0) { /* plain decoding's step: sample the logits at hand */
            const int tok = steno_sampler_sample(s, logits, NULL, NULL);
            if (steno_vocab_is_eog(m->vocab, tok)) break;
            if (emit(&e, tok)) break;
            pending = tok;
        }
        if (c->n_past + 1 > c->p.n_ctx) {
            st0.stop_reason = STENO_STOP_CTX_FULL;
            break;
        }
        /* the pending token, and a draft after it */
        int kk = steno_spec_len_next(&sl, c, n_predict >= 0 ? n_predict - st0.n_generated : c->p.n_ctx);
        if (sl.adaptive && dr.dc && cost.plain < 0) kk = 0; /* a plain step's time first */
        blk[0] = pending;
        int ng = 0;
        const double t_draft = now_s();
        if (kk > 0 && dr.dc) {
            if ((ng = llm_drafter_draft(&dr, hist, e.nh, kk, blk + 1, sampled ? s : NULL, &st)) < 0) break;
        } else if (kk > 0) {
            ng = steno_spec_ngram_draft(hist, e.nh, p.ngram_min, p.ngram_max, kk, blk + 1);
        }
        const double t_eval = now_s();
        st = steno_llm_eval(c, blk, ng + 1, logits, ng > 0);
        const double t_done = now_s();
        ss.target_calls++;
        pending = -1;
        if (ng == 0) steno_spec_cost_plain(&cost, t_done - t_eval);
        if (st != STENO_OK || ng == 0) continue;
        steno_spec_cost_round(&cost, t_eval - t_draft, ng, t_done - t_eval);
        ss.rounds++;
        ss.drafted += ng;
        /* verify: sample each position as plain decoding would; keep drafts while they match */
        int j = 0, matched_last = 0; /* matched_last: the budget's last token was the draft's */
        while (j < ng) {
            int acc_unused;
            const int u = p.verify == STENO_SPEC_VERIFY_REJECTION
                              ? steno_sampler_verify(s, logits + (size_t)j * nv, blk[1 + j],
                                                     sampled ? dr.q + (size_t)j * nv : NULL, &acc_unused)
                              : steno_sampler_sample(s, logits + (size_t)j * nv, NULL, NULL);
            if (steno_vocab_is_eog(m->vocab, u)) {
                done = 1;
                break;
            }
            if (emit(&e, u)) done = 1;
            if (u != blk[1 + j] || done) {
                matched_last = done && u == blk[1 + j];
                if (!done) pending = u; /* plain decoding's token: evaluated next round */
                break;
            }
            j++;
        }
        /* the cache holds the pending token and ng drafts: keep the j accepted */
        if (ng > j && (st = steno_llm_rollback(c, ng - j)) != STENO_OK) break;
        if (j == ng && !done) memmove(logits, logits + (size_t)ng * nv, sizeof(float) * (size_t)nv);
        /* a draft token that the budget's end cut off was still accepted (the cache drops it, as
         * plain decoding never evaluates its last token) */
        ss.accepted += j + matched_last;
        steno_spec_cost_outcome(&cost, ng, j);
        steno_spec_len_update(&sl, ng, j);
        /* a model drafter's tokens cost a fraction of a step each: one failed round halves k */
        if (dr.dc && j == 0 && sl.misses == 1 && ng > 1) steno_spec_len_update(&sl, ng, 0);
        steno_spec_backoff(&sl, &backoff, j); /* longer pauses for a drafter that keeps failing */
        /* no acceptance would pay for its drafts, or the acceptance seen does not */
        if (sl.adaptive && steno_spec_cost_stop(&cost, sl.kmax, dr.dc != NULL)) {
            sl.k = 0;
            sl.pause = INT_MAX / 2;
        }
        if (dr.dc && st == STENO_OK) st = llm_drafter_sync(&dr, hist, e.nh);
    }
    if (st != STENO_OK) st0.stop_reason = STENO_STOP_ERROR;
    st0.decode_seconds = now_s() - t1;
    if (sl.adaptive && dr.dc && cost.rounds > 0) steno_spec_verdict_put(key, &cost);
    free(hist);
    free(blk);
    free(logits);
    llm_drafter_close(&dr);
    if (stats) *stats = st0;
    if (spec) *spec = ss;
    return st;
}
