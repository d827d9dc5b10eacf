/* draft.c — draft models for speculative decoding (see draft.h). The draft context
 * borrows the target's pool: both run in turn on one thread of control, and one set of workers
 * spinning between their jobs is cheaper than two sets taking turns to sleep. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threadpool.h"
#include "llm/spec/draft.h"
#include "text/llm_vocab.h"

/* Every token's text (control tokens too) must be the same: drafts are token ids. */
static steno_status same_vocab(const steno_llm *a, const steno_llm *b) {
    if (a->hp.n_vocab != b->hp.n_vocab)
        return steno_fail(STENO_E_INVALID_ARG, "--draft-model %s: its vocabulary has %d tokens, the model's %d",
                          b->path ? b->path : "?", b->hp.n_vocab, a->hp.n_vocab);
    char x[1024], y[1024]; /* a longer piece compares by its length only (negative counts) */
    for (int t = 0; t < a->hp.n_vocab; t++) {
        const int nx = steno_vocab_piece(a->vocab, t, -1, 1, x, (int)sizeof x),
                  ny = steno_vocab_piece(b->vocab, t, -1, 1, y, (int)sizeof y);
        if (nx != ny || (nx > 0 && memcmp(x, y, (size_t)nx)))
            return steno_fail(STENO_E_INVALID_ARG, "--draft-model %s: another vocabulary than the model's (token %d differs)",
                              b->path ? b->path : "?", t);
    }
    return STENO_OK;
}

steno_status llm_drafter_open(llm_drafter *d, steno_llm_ctx *c, const steno_spec_params *p) {
    memset(d, 0, sizeof *d);
    const steno_llm *m = c->m;
    if (p->kind == STENO_DRAFT_LAYERS) {
        const int L = m->hp.n_layer;
        int k = p->draft_layers > 0 ? p->draft_layers : L / 4;
        if (k < 1) k = 1;
        if (k >= L)
            return steno_fail(STENO_E_INVALID_ARG, "--draft-layers %d: need 1..%d (the model has %d layers)", k, L - 1, L);
        d->view = malloc(sizeof *d->view);
        if (!d->view) return steno_fail(STENO_E_NOMEM, "speculative decoding: out of memory");
        *d->view = *m; /* the same weights, norms and head; only the depth differs */
        d->view->hp.n_layer = k;
        d->dm = d->view;
    } else {
        if (!p->draft_model) return steno_fail(STENO_E_INVALID_ARG, "--draft-kind model needs a draft model (--draft-model)");
        steno_status st = same_vocab(m, p->draft_model);
        if (st != STENO_OK) return st;
        d->dm = p->draft_model;
    }
    steno_llm_ctx_params cp = c->p;
    cp.kv_quant = STENO_KV_QUANT_PLAIN;
    cp.kv_quant_start = 0;
    cp.n_threads = 1; /* replaced by the target's pool below; 1 creates no worker */
    d->cap = 64;
    d->fed = malloc(sizeof(int) * (size_t)d->cap);
    d->logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    steno_status st = d->fed && d->logits ? steno_llm_ctx_new(d->dm, &cp, &d->dc) : steno_fail(STENO_E_NOMEM, "speculative decoding: out of memory");
    if (st != STENO_OK) {
        llm_drafter_close(d);
        return st;
    }
    steno_pool_free(d->dc->pool);
    d->dc->pool = c->pool;
    d->dc->pool_borrowed = 1;
    d->dc->p.n_threads = c->p.n_threads;
    return STENO_OK;
}

void llm_drafter_close(llm_drafter *d) {
    steno_llm_ctx_free(d->dc);
    free(d->view);
    free(d->fed);
    free(d->logits);
    free(d->q);
    memset(d, 0, sizeof *d);
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static int draw(llm_drafter *d, const float *q, int nv) {
    uint64_t z = (d->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const double r = (double)(z >> 11) * (1.0 / 9007199254740992.0);
    double acc = 0;
    int last = 0;
    for (int i = 0; i < nv; i++) {
        if (q[i] <= 0) continue;
        last = i;
        acc += q[i];
        if (r < acc) return i;
    }
    return last; /* rounding: the sum fell short of r */
}

int llm_drafter_draft(llm_drafter *d, const int *hist, int nh, int k, int *draft, steno_sampler *s, steno_status *st) {
    *st = STENO_OK;
    if (k <= 0) return 0;
    if (k - 1 > d->cap) k = d->cap + 1;
    steno_llm_ctx *dc = d->dc;
    const int nv = d->dm->hp.n_vocab;
    if (dc->n_past >= nh) { /* it must evaluate at least the last token to have its logits */
        if ((*st = steno_llm_rollback(dc, dc->n_past - nh + 1)) != STENO_OK) return -1;
    }
    if ((*st = steno_llm_eval(dc, hist + dc->n_past, nh - dc->n_past, d->logits, 0)) != STENO_OK) return -1;
    d->base = nh;
    d->n_fed = 0;
    int n = 0;
    if (s && !d->q) {
        d->q = malloc(sizeof(float) * (size_t)nv * (size_t)(d->cap + 1));
        if (!d->q) {
            *st = steno_fail(STENO_E_NOMEM, "speculative decoding: out of memory");
            return -1;
        }
        d->rng = 0x5eed5eedull;
    }
    for (;;) {
        if (s) {
            float *q = d->q + (size_t)n * nv;
            steno_sampler_dist(s, d->logits, q);
            draft[n] = draw(d, q, nv);
        } else {
            draft[n] = argmax(d->logits, nv);
        }
        if (++n == k || dc->n_past + 1 > dc->p.n_ctx) break;
        if ((*st = steno_llm_eval(dc, draft + n - 1, 1, d->logits, 0)) != STENO_OK) return -1;
        d->fed[d->n_fed++] = draft[n - 1];
    }
    return n;
}

steno_status llm_drafter_prefill(llm_drafter *d, const int *prompt, int n) {
    d->n_fed = 0;
    d->base = n;
    return n > 0 ? steno_llm_eval(d->dc, prompt, n, NULL, 0) : STENO_OK;
}

steno_status llm_drafter_sync(llm_drafter *d, const int *hist, int nh) {
    int keep = 0; /* of the fed draft tokens, those the sequence kept */
    while (keep < d->n_fed && d->base + keep < nh && hist[d->base + keep] == d->fed[keep]) keep++;
    const int drop = d->n_fed - keep;
    d->n_fed = keep;
    return drop > 0 ? steno_llm_rollback(d->dc, drop) : STENO_OK;
}

/* Weight bytes in 64 KiB units: another type or file of the same shape is another key. */
void llm_drafter_verdict_key(const llm_drafter *dr, const steno_llm_ctx *c, const steno_spec_params *p,
                             int key[STENO_SPEC_VKEY]) {
    const steno_llm *m = c->m, *dm = dr->dm;
    const int k[STENO_SPEC_VKEY] = {STENO_SPEC_VERDICT_LLM,
                                    m->hp.n_vocab,
                                    m->hp.n_layer,
                                    m->hp.n_embd,
                                    (int)(m->weight_bytes >> 16),
                                    (int)p->kind * 2 + (p->verify == STENO_SPEC_VERIFY_REJECTION),
                                    dm->hp.n_layer,
                                    dm->hp.n_embd,
                                    (int)(dm->weight_bytes >> 16),
                                    c->pool ? steno_pool_threads(c->pool) : 1,
                                    (int)c->p.compute,
                                    (int)c->p.kv_quant};
    memcpy(key, k, sizeof k);
}
