/* continuous_batch.c — the continuous-batching engine of the generations (see sched.h).
 *
 * One thread, N rows. A step: admit queued jobs into free rows, drop the rows whose client left
 * or whose deadline passed, then one steno_llm_eval_batch over every running row — a decoding
 * row feeds its last sampled token, a row still reading its prompt feeds its next whole chunk
 * when the step's prompt budget (prefill_chunk tokens) still has room for it — and sample every
 * row whose pass produced logits. Requests join and leave between steps, as in vLLM, llama-server's
 * slots and mlx-lm's BatchGenerator. */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "sched/generate_job.h"

/* The free row for j: the one whose cached tokens the prompt continues (it shares at least half
 * of them: chat turn 2 shares all of turn 1's), the longest such prefix first (llama-server's slot
 * selection by similarity); otherwise the free row with the fewest cached tokens, so that a prompt
 * which merely starts with the same BOS or system prompt does not roll back a long conversation
 * another row holds for its next turn. */
static int pick_row(steno_sched *s, const generate_job *j) {
    int best = -1, best_common = 0, fewest = -1, fewest_cached = 0;
    for (int k = 0; k < s->p.n_parallel; k++) {
        if (s->rows[k].j) continue;
        const gen_slot *sl = &s->rows_slot[k];
        int c = 0;
        while (c < sl->n_cached && c < j->n_prompt && sl->cached[c] == j->prompt[c]) c++;
        if (c > 0 && 2 * c >= sl->n_cached && c > best_common) {
            best = k;
            best_common = c;
        }
        if (fewest < 0 || sl->n_cached < fewest_cached) {
            fewest = k;
            fewest_cached = sl->n_cached;
        }
    }
    return best >= 0 ? best : fewest;
}

static void end_row(steno_sched *s, gen_row *r) {
    generate_job *j = r->j;
    sched_outcome *o = &j->base.out;
    if (o->status == STENO_E_ABORTED || atomic_load(&j->base.cancel) || o->deadline_passed) o->cancelled = 1;
    if (o->status != STENO_OK && !o->errmsg[0]) snprintf(o->errmsg, sizeof o->errmsg, "%s", steno_errmsg());
    gen_row_finish(r);
    pthread_mutex_lock(&s->mu);
    r->j = NULL; /* sched_cancel_all reads it under the lock */
    pthread_mutex_unlock(&s->mu);
    sched_job_ended(s, &j->base);
}

static size_t row_bytes(const gen_slot *sl) {
    size_t b = 0;
    steno_llm_kv_usage(sl->lc, NULL, &b);
    return b;
}

/* KV bytes the rows hold or may grow to: a running row the larger of what it holds and its job's
 * need, an idle row what it holds. */
static size_t kv_in_use(const steno_sched *s) {
    size_t t = 0;
    for (int k = 0; k < s->p.n_parallel; k++) {
        const size_t b = row_bytes(&s->rows_slot[k]);
        t += s->rows[k].j && s->rows[k].j->kv_need > b ? s->rows[k].j->kv_need : b;
    }
    return t;
}

/* --kv-budget: 1 when a job needing `need` bytes fits now, after idle rows gave their storage back
 * (the largest first; what they held goes to the prompt cache). */
static int make_room(steno_sched *s, size_t need) {
    size_t used = kv_in_use(s);
    while (used + need > s->p.kv_budget_bytes) {
        int best = -1;
        size_t most = 0;
        const size_t empty = steno_llm_kv_bytes_at(s->rows_slot[0].lc, 0, 1);
        for (int k = 0; k < s->p.n_parallel; k++) {
            const size_t b = row_bytes(&s->rows_slot[k]);
            if (!s->rows[k].j && b > empty && b > most) {
                best = k;
                most = b;
            }
        }
        if (best < 0) return 0;
        gen_slot *sl = &s->rows_slot[best];
        if (s->pcache && sl->n_cached > 0 && sl->n_cached == steno_llm_n_past(sl->lc))
            prompt_cache_store(s->pcache, sl->cached, sl->n_cached, sl->lc);
        steno_llm_release(sl->lc);
        sl->n_cached = 0;
        used = kv_in_use(s);
    }
    return 1;
}

/* Admits queued jobs into free rows; blocks for one when no row runs. Returns the running rows,
 * or -1 when the scheduler stops with nothing left to do. Under --kv-budget the oldest job waits
 * (first come, first served, as vLLM's) until the running rows leave it room. */
static int admit(steno_sched *s, int active) {
    while (active < s->p.n_parallel) {
        if (s->p.kv_budget_bytes && active > 0) {
            const size_t need = sched_peek_need(s);
            if (need && !make_room(s, need)) return active;
        }
        sched_job *taken = sched_take(s, JOB_GENERATE, active == 0);
        generate_job *j = taken ? generate_job_of(taken) : NULL;
        if (j && s->p.kv_budget_bytes && active == 0) make_room(s, j->kv_need); /* always fits alone */
        if (!j) return active == 0 ? -1 : active;
        sched_job_started(s, taken);
        gen_row *r = &s->rows[pick_row(s, j)];
        pthread_mutex_lock(&s->mu);
        r->j = j; /* sched_cancel_all reads it under the lock */
        if (s->stopping) atomic_store(&j->base.cancel, 1); /* it may have run since the take */
        pthread_mutex_unlock(&s->mu);
        steno_clear_error();
        const steno_status st = gen_row_start(r, s->llm, &s->rows_slot[r - s->rows], j, s->pcache, &s->p.spec);
        if (s->pcache) sched_publish_cache_stats(s);
        if (st != STENO_OK) end_row(s, r);
        else active++;
    }
    return active;
}

void *batch_engine_main(void *arg) {
    steno_sched *s = arg;
    const int R = s->p.n_parallel, chunk = s->p.prefill_chunk;
    steno_llm_seq *seqs = malloc(sizeof *seqs * (size_t)R);
    int *who = malloc(sizeof *who * (size_t)R), *fed = malloc(sizeof *fed * (size_t)R);
    for (int k = 0; k < R; k++) s->rows[k].slot = &s->rows_slot[k];
    int active = 0;
    for (;;) {
        if (!seqs || !who || !fed) { /* cannot step: fail what comes until shutdown */
            sched_job *j = sched_take(s, JOB_GENERATE, 1);
            if (!j) break;
            sched_job_started(s, j);
            j->out.status = steno_fail(STENO_E_NOMEM, "out of memory");
            snprintf(j->out.errmsg, sizeof j->out.errmsg, "out of memory");
            sched_job_ended(s, j);
            continue;
        }
        if ((active = admit(s, active)) < 0) break;
        int ns = 0, budget = chunk;
        for (int k = 0; k < R; k++) {
            gen_row *r = &s->rows[k];
            if (!r->j) continue;
            if (job_should_stop(&r->j->base)) {
                r->j->base.out.status = steno_fail(STENO_E_ABORTED, "generation: %s",
                                              r->j->base.out.deadline_passed ? "deadline passed" : "cancelled");
                end_row(s, r);
                active--;
                continue;
            }
            const int *toks;
            float *lg;
            const int prefill = r->pos < r->j->n_prompt;
            const int n = gen_row_next(r, chunk, &s->p.spec, &toks, &lg);
            if (prefill) {
                if (n > budget) continue; /* next step: a chunk is fed whole */
                budget -= n;
            }
            seqs[ns] = (steno_llm_seq){r->slot->lc, toks, n, lg, r->ng > 0};
            fed[ns] = n;
            who[ns++] = k;
        }
        if (ns == 0) continue;
        steno_clear_error();
        const steno_status st = steno_llm_eval_batch(s->exec, seqs, ns);
        for (int i = 0; i < ns; i++) {
            gen_row *r = &s->rows[who[i]];
            int ended;
            if (st != STENO_OK) ended = (gen_row_failed(r, st), 1);
            else if (gen_row_evaluated(r, fed[i]) != STENO_OK) ended = 1;
            else ended = seqs[i].logits ? gen_row_sample(r) : 0;
            if (ended) {
                end_row(s, r);
                active--;
            }
        }
    }
    /* what the rows hold outlives the process when the cache persists */
    for (int k = 0; s->pcache && s->p.prompt_cache_dir && k < R; k++) {
        const gen_slot *sl = &s->rows_slot[k];
        if (sl->n_cached > 0 && sl->n_cached == steno_llm_n_past(sl->lc))
            prompt_cache_store(s->pcache, sl->cached, sl->n_cached, sl->lc);
    }
    free(seqs);
    free(who);
    free(fed);
    return NULL;
}
