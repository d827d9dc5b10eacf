/* generate_job.c — a text generation as a scheduler job (completions, chat completions).
 *
 * The slot's context keeps the tokens of its last job; a new prompt that starts with them reuses
 * that prefix (the KV caches are rolled back to the common prefix, llama-server's cache_prompt),
 * and the count is reported as cached tokens. Then sampling proceeds token by token as
 * steno_llm_generate does (same sampler chain, same stop at an end-of-generation token), with
 * the stop strings matched on the decoded text (text/stop_text.h) and one event per token.
 * A generation is a row the batch engine (continuous_batch.c) steps: gen_row_next says what the
 * row feeds the next pass (a prompt chunk, or the last sampled token), gen_row_evaluated records
 * it, gen_row_sample turns the row's logits into the next token and its events. */
#include "sched/generate_job.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "spec/backoff.h"
#include "text/stop_text.h"
#include "text/utf8.h"

steno_status generate_job_init(generate_job *j, const sched_generate_req *r) {
    j->prompt = malloc(sizeof(int) * (size_t)r->n_prompt);
    if (!j->prompt) return steno_fail(STENO_E_NOMEM, "out of memory");
    memcpy(j->prompt, r->prompt, sizeof(int) * (size_t)r->n_prompt);
    j->n_prompt = r->n_prompt;
    j->max_tokens = r->max_tokens;
    j->top_logprobs = r->top_logprobs;
    j->logprobs = r->logprobs || r->top_logprobs > 0;
    j->sp = r->sampler;
    j->sp.logit_bias = NULL;
    j->sp.n_probs = r->top_logprobs;
    if (r->sampler.n_logit_bias > 0 && r->sampler.logit_bias) {
        steno_logit_bias *b = malloc(sizeof *b * (size_t)r->sampler.n_logit_bias);
        if (!b) return steno_fail(STENO_E_NOMEM, "out of memory");
        memcpy(b, r->sampler.logit_bias, sizeof *b * (size_t)r->sampler.n_logit_bias);
        j->sp.logit_bias = b;
    } else {
        j->sp.n_logit_bias = 0;
    }
    if (r->n_stop > 0) {
        j->stop = calloc((size_t)r->n_stop, sizeof *j->stop);
        if (!j->stop) return steno_fail(STENO_E_NOMEM, "out of memory");
        for (int i = 0; i < r->n_stop; i++) {
            if (!(j->stop[i] = strdup(r->stop[i] ? r->stop[i] : ""))) return steno_fail(STENO_E_NOMEM, "out of memory");
            j->n_stop = i + 1;
        }
    }
    return STENO_OK;
}

void generate_job_free_part(generate_job *j) {
    free(j->prompt);
    for (int i = 0; i < j->n_stop; i++) free(j->stop[i]);
    free(j->stop);
    free((void *)j->sp.logit_bias);
}

/* Records tokens [0, n) as the slot's cached sequence. */
static int slot_remember(gen_slot *slot, const int *toks, int n, int at) {
    if (at + n > slot->cap_cached) {
        int cap = slot->cap_cached ? slot->cap_cached : 1024;
        while (cap < at + n) cap *= 2;
        int *c = realloc(slot->cached, sizeof(int) * (size_t)cap);
        if (!c) return -1;
        slot->cached = c;
        slot->cap_cached = cap;
    }
    memcpy(slot->cached + at, toks, sizeof(int) * (size_t)n);
    slot->n_cached = at + n;
    return 0;
}

/* Rolls the slot's caches back to the longest prefix they share with the prompt, or restores pc's
 * entry when that shares more (at least one prompt token is always evaluated: its logits start the
 * sampling). The row's tokens beyond the shared prefix would be lost: they are saved into pc
 * first. Returns the reused count. */
static int reuse_prefix(gen_slot *slot, const int *prompt, int n_prompt, prompt_cache *pc) {
    int common = 0;
    const int n_past = steno_llm_n_past(slot->lc);
    if (n_past != slot->n_cached) slot->n_cached = 0; /* out of step: trust nothing */
    while (common < slot->n_cached && common < n_prompt - 1 && slot->cached[common] == prompt[common]) common++;
    if (common > 0 && common < n_past && steno_llm_min_rollback(slot->lc) > common) common = 0; /* ring too short */
    if (pc) {
        if (slot->n_cached > common) prompt_cache_store(pc, slot->cached, slot->n_cached, slot->lc);
        const int c = prompt_cache_restore(pc, prompt, n_prompt - 1, common, slot->lc);
        if (c > 0) {
            if (slot_remember(slot, prompt, c, 0) == 0) return c;
            steno_llm_reset(slot->lc);
            slot->n_cached = 0;
            return 0;
        }
        if (steno_llm_n_past(slot->lc) != n_past) { /* a failed restore reset the caches */
            slot->n_cached = 0;
            return 0;
        }
    }
    if (common == 0 || steno_llm_rollback(slot->lc, n_past - common) != STENO_OK) {
        steno_llm_reset(slot->lc);
        slot->n_cached = 0;
        return 0;
    }
    slot->n_cached = common;
    return common;
}

static void emit(generate_job *j, steno_stop_text *st, size_t from, size_t n, int tok, const char *piece, int pl,
                 float lp, const steno_token_logprob *top, char **text, size_t *text_len) {
    sched_event *ev = calloc(1, sizeof *ev);
    if (!ev) return;
    ev->kind = SCHED_EV_TOKEN;
    ev->text = steno_utf8_sanitize(st->buf + from, n);
    ev->token = tok;
    ev->logprob = lp;
    if (tok >= 0) {
        ev->piece = malloc((size_t)pl + 1);
        if (ev->piece) {
            memcpy(ev->piece, piece, (size_t)pl);
            ev->piece[pl] = '\0';
            ev->piece_len = pl;
        }
        ev->n_top = j->top_logprobs;
        if (ev->n_top) memcpy(ev->top, top, sizeof *top * (size_t)ev->n_top);
    }
    if (!ev->text || (tok >= 0 && !ev->piece)) {
        job_event_free(ev);
        return;
    }
    const size_t add = strlen(ev->text);
    char *t = realloc(*text, *text_len + add + 1);
    if (t) {
        memcpy(t + *text_len, ev->text, add + 1);
        *text = t;
        *text_len += add;
    }
    job_push_event(&j->base, ev);
}

steno_status gen_row_start(gen_row *r, const steno_llm *m, gen_slot *slot, generate_job *j, prompt_cache *pc,
                           const steno_spec_params *spec) {
    memset(&r->smp, 0, sizeof *r - offsetof(gen_row, smp));
    r->m = m;
    r->slot = slot; /* r->j is the engine's to set, under the scheduler's lock */
    sched_outcome *o = &j->base.out;
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    r->n_vocab = info.n_vocab;
    r->n_ctx = steno_llm_ctx_get_params(slot->lc).n_ctx;
    steno_stop_text_init(&r->st, (const char *const *)j->stop, j->n_stop);
    r->st_live = 1;
    r->text = calloc(1, 1);
    steno_spec_len_init(&r->sl, spec, slot->lc, SCHED_MAX_DRAFT);
    r->backoff = STENO_SPEC_BACKOFF_FIRST;
    j->base.out.spec_on = r->sl.kmax > 0;
    r->logits = malloc(sizeof(float) * (size_t)info.n_vocab * (size_t)(spec->kind == STENO_DRAFT_NONE ? 1 : SCHED_MAX_DRAFT + 1));
    o->n_prompt = j->n_prompt;
    o->finish = SCHED_FINISH_LENGTH;
    if (!r->logits || !r->text) return o->status = steno_fail(STENO_E_NOMEM, "out of memory");
    if ((o->status = steno_sampler_new(&j->sp, info.n_vocab, &r->smp)) != STENO_OK) return o->status;
    r->pos = o->n_cached = reuse_prefix(slot, j->prompt, j->n_prompt, pc);
    r->prev = j->prompt[j->n_prompt - 1];
    return STENO_OK;
}

int gen_row_next(gen_row *r, int chunk, const steno_spec_params *spec, const int **tokens, float **logits) {
    r->ng = 0;
    if (r->pos < r->j->n_prompt) {
        const int n = r->j->n_prompt - r->pos < chunk ? r->j->n_prompt - r->pos : chunk;
        *tokens = r->j->prompt + r->pos;
        *logits = r->pos + n == r->j->n_prompt ? r->logits : NULL;
        return n;
    }
    *logits = r->logits;
    r->blk[0] = r->pending;
    *tokens = r->blk;
    const int kk = r->sl.kmax ? steno_spec_len_next(&r->sl, r->slot->lc, r->j->max_tokens - r->j->base.out.n_generated) : 0;
    if (kk > 0 && slot_remember(r->slot, &r->pending, 1, r->slot->n_cached) == 0) {
        /* the history the lookup sees: every token in the caches, then the pending one */
        r->ng = steno_spec_ngram_draft(r->slot->cached, r->slot->n_cached, spec->ngram_min, spec->ngram_max, kk,
                                       r->blk + 1);
        r->slot->n_cached--;
    }
    return 1 + r->ng;
}

steno_status gen_row_evaluated(gen_row *r, int n) {
    const int *toks = r->pos < r->j->n_prompt ? r->j->prompt + r->pos : r->blk;
    if (r->pos < r->j->n_prompt) r->pos += n;
    if (slot_remember(r->slot, toks, n, r->slot->n_cached) != 0) return gen_row_failed(r, steno_fail(STENO_E_NOMEM, "out of memory"));
    return STENO_OK;
}

steno_status gen_row_failed(gen_row *r, steno_status st) {
    r->j->base.out.status = st;
    steno_llm_reset(r->slot->lc);
    r->slot->n_cached = 0;
    return st;
}

/* One token from one position's logits: sampled, emitted, the stop conditions applied. Returns 1
 * when the generation has ended, 0 with the token in *out. */
static int take_token(gen_row *r, float *logits, int *out) {
    generate_job *j = r->j;
    sched_outcome *o = &j->base.out;
    float lp = 0;
    steno_token_logprob top[SCHED_MAX_TOP];
    char piece[256];
    const int tok = steno_sampler_sample(r->smp, logits, j->top_logprobs ? top : NULL, j->logprobs ? &lp : NULL);
    if (steno_llm_is_eog(r->m, tok)) {
        o->finish = SCHED_FINISH_STOP;
        return 1;
    }
    o->n_generated++;
    int pl = steno_llm_token_piece(r->m, tok, r->prev, 0, piece, (int)sizeof piece);
    if (pl < 0) pl = 0;
    r->prev = tok;
    size_t from, n;
    const int hit = steno_stop_text_push(&r->st, piece, (size_t)pl, &from, &n);
    if (hit < 0) {
        o->status = steno_fail(STENO_E_NOMEM, "out of memory");
        return 1;
    }
    emit(j, &r->st, from, n, tok, piece, pl, lp, top, &r->text, &r->text_len);
    if (hit) {
        o->finish = SCHED_FINISH_STOP;
        return 1;
    }
    *out = tok;
    return 0;
}

int gen_row_sample(gen_row *r) {
    sched_outcome *o = &r->j->base.out;
    const int ng = r->ng;
    if (r->pos >= r->j->n_prompt) o->spec_passes++;
    /* position after position while the draft holds: the tokens plain decoding would sample */
    int j = 0, tok = -1, ended = 0;
    for (;; j++) {
        ended = take_token(r, r->logits + (size_t)j * (size_t)r->n_vocab, &tok);
        if (!ended && o->n_generated >= r->j->max_tokens) ended = 1; /* "length" */
        if (ended || j == ng || tok != r->blk[1 + j]) break;
    }
    if (ng > 0) { /* the caches hold pending and ng drafts: keep the j accepted */
        o->spec_drafted += ng;
        o->spec_accepted += j;
        if (ng > j) {
            const steno_status rs = steno_llm_rollback(r->slot->lc, ng - j);
            r->slot->n_cached -= ng - j;
            if (rs != STENO_OK) {
                gen_row_failed(r, rs);
                return 1;
            }
        }
        steno_spec_len_update(&r->sl, ng, j);
        steno_spec_backoff(&r->sl, &r->backoff, j); /* as steno_llm_generate_spec's rows */
    }
    r->ng = 0;
    if (ended) return 1;
    /* "length": no room for the token's own position */
    if (steno_llm_n_past(r->slot->lc) + 1 > r->n_ctx) return 1;
    r->pending = tok;
    return 0;
}

void gen_row_finish(gen_row *r) {
    sched_outcome *o = &r->j->base.out;
    if (o->status == STENO_OK && r->st_live) {
        size_t from, n;
        steno_stop_text_flush(&r->st, &from, &n);
        if (n) emit(r->j, &r->st, from, n, -1, NULL, 0, 0, NULL, &r->text, &r->text_len);
    }
    o->text = r->text;
    r->text = NULL;
    if (r->st_live) steno_stop_text_free(&r->st);
    r->st_live = 0;
    steno_sampler_free(r->smp);
    r->smp = NULL;
    free(r->logits);
    r->logits = NULL;
}
