/* beam.c — beam search (T = 0) and best-of sampling (T > 0) over decoder rows; see beam.h.
 *
 * Beam search, step by step (CTranslate2 BeamSearch::search, which openai-whisper's
 * BeamSearchDecoder resembles):
 *   - the SOT sequence is fed once, to row 0; the first step expands only that row;
 *   - each live row's logits go through the logit filters with the row's own sampled tokens,
 *     then log_softmax; a candidate's score is the row's cumulative log-probability plus the
 *     token's, in float32 as CTranslate2 keeps it;
 *   - the best 2·beam candidates over all rows are taken (ties: lower row, then lower token);
 *   - of the first beam candidates, one ending in <|endoftext|> registers a finished hypothesis
 *     (tokens without eot, its cumulative score) and its place goes to the next candidate past
 *     the first beam that is not eot (CTranslate2; openai walks every candidate in order until
 *     beam live ones are found, registering each eot it passes);
 *   - the search stops once round(beam · patience) hypotheses have finished (with
 *     length_penalty 0: once the best row has finished), or at the last step, where every kept
 *     candidate is registered as it is;
 *   - rows are then gathered (the KV caches of the chosen source rows, whisper/decoder/kv_rows.h) and
 *     stepped together, one token each;
 *   - the result is the hypothesis with the highest score / length^length_penalty (openai's
 *     MaximumLikelihoodRanker with length_penalty None is the α = 1 case).
 * Best-of: best_of rows start from the same prefill and sample independently (one RNG, rows
 * drawn in order each step); finished rows leave the batch; the ranking is the same. */
#include "whisper/decoder/beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_ROWS 64

struct whisper_search {
    int beam, best_of, rows, N, V;
    double length_penalty;
    int max_candidates, hyp_cap;
    int *seq, *seq_next;    /* [rows][N + 1] tokens sampled by each row */
    int *len, *len_next;    /* [rows] */
    float *cum, *cum_next;  /* [rows] beam: cumulative log-probability (float32, as CTranslate2) */
    double *sum, *sum_next; /* [rows] best-of: cumulative log-probability */
    int *src, *tok;         /* [rows] the gather indices and the next tokens */
    float *cand_score;      /* [2·beam] candidates, best first */
    int *cand_row, *cand_tok;
    int n_hyp;
    int *hyp;               /* [hyp_cap][N + 1] finished hypotheses */
    int *hyp_len;
    double *hyp_raw, *hyp_rank; /* cumulative log-probability; raw / length^α */
};

steno_status whisper_search_check(const steno_transcribe_params *p) {
    if (p->beam_size < 0 || p->beam_size > MAX_ROWS)
        return steno_fail(STENO_E_INVALID_ARG, "beam_size: %d (must be 0..%d)", p->beam_size, MAX_ROWS);
    if (p->best_of < 0 || p->best_of > MAX_ROWS)
        return steno_fail(STENO_E_INVALID_ARG, "best_of: %d (must be 0..%d)", p->best_of, MAX_ROWS);
    if (!(p->patience >= 0.0) || !isfinite(p->patience))
        return steno_fail(STENO_E_INVALID_ARG, "patience: %g (must be > 0)", p->patience);
    if (!isfinite(p->length_penalty))
        return steno_fail(STENO_E_INVALID_ARG, "length_penalty: %g (must be a finite number)", p->length_penalty);
    const double patience = p->patience > 0.0 ? p->patience : 1.0, wanted = p->beam_size * patience;
    if (p->beam_size >= 2 && !(wanted >= 0.5 && wanted < 4096.5)) /* round(beam · patience) in 1..4096 */
        return steno_fail(STENO_E_INVALID_ARG, "patience: %g asks for %g finished hypotheses with beam size %d "
                          "(must round to 1..4096)", p->patience, wanted, p->beam_size);
    return STENO_OK;
}

int whisper_search_rows(const steno_transcribe_params *p) {
    int r = 1;
    if (p->beam_size > r) r = p->beam_size;
    if (p->best_of > r) r = p->best_of;
    return r;
}

int whisper_search_applies(const steno_transcribe_params *p, double temperature) {
    return temperature > 0.0 ? p->best_of >= 2 : p->beam_size >= 2;
}

void whisper_search_free(whisper_search *s) {
    if (!s) return;
    free(s->seq), free(s->seq_next), free(s->len), free(s->len_next), free(s->cum), free(s->cum_next);
    free(s->sum), free(s->sum_next), free(s->src), free(s->tok), free(s->cand_score), free(s->cand_row);
    free(s->cand_tok), free(s->hyp), free(s->hyp_len), free(s->hyp_raw), free(s->hyp_rank);
    free(s);
}

steno_status whisper_search_create(const whisper_model *m, const steno_transcribe_params *p, whisper_search **out) {
    *out = NULL;
    steno_status st = whisper_search_check(p);
    if (st != STENO_OK) return st;
    whisper_search *s = calloc(1, sizeof *s);
    if (!s) return steno_fail(STENO_E_NOMEM, "beam search: out of memory");
    s->beam = p->beam_size >= 2 ? p->beam_size : 1;
    s->best_of = p->best_of >= 2 ? p->best_of : 1;
    s->rows = whisper_search_rows(p);
    s->N = m->n_text_ctx;
    s->V = m->n_vocab;
    s->length_penalty = p->length_penalty;
    s->max_candidates = (int)lround(s->beam * (p->patience > 0.0 ? p->patience : 1.0));
    if (s->max_candidates < 1) s->max_candidates = 1;
    /* a step registers at most beam hypotheses, and the search stops at max_candidates; with
     * length_penalty 0 it may run longer, and a full list then keeps the best */
    s->hyp_cap = s->max_candidates + s->rows;
    const size_t R = (size_t)s->rows, W = (size_t)s->N + 1, C = 2 * (size_t)s->beam;
    s->seq = malloc(sizeof(int) * R * W);
    s->seq_next = malloc(sizeof(int) * R * W);
    s->len = malloc(sizeof(int) * R);
    s->len_next = malloc(sizeof(int) * R);
    s->cum = malloc(sizeof(float) * R);
    s->cum_next = malloc(sizeof(float) * R);
    s->sum = malloc(sizeof(double) * R);
    s->sum_next = malloc(sizeof(double) * R);
    s->src = malloc(sizeof(int) * R);
    s->tok = malloc(sizeof(int) * R);
    s->cand_score = malloc(sizeof(float) * C);
    s->cand_row = malloc(sizeof(int) * C);
    s->cand_tok = malloc(sizeof(int) * C);
    s->hyp = malloc(sizeof(int) * (size_t)s->hyp_cap * W);
    s->hyp_len = malloc(sizeof(int) * (size_t)s->hyp_cap);
    s->hyp_raw = malloc(sizeof(double) * (size_t)s->hyp_cap);
    s->hyp_rank = malloc(sizeof(double) * (size_t)s->hyp_cap);
    if (!s->seq || !s->seq_next || !s->len || !s->len_next || !s->cum || !s->cum_next || !s->sum || !s->sum_next ||
        !s->src || !s->tok || !s->cand_score || !s->cand_row || !s->cand_tok || !s->hyp || !s->hyp_len ||
        !s->hyp_raw || !s->hyp_rank) {
        whisper_search_free(s);
        return steno_fail(STENO_E_NOMEM, "beam search: out of memory");
    }
    *out = s;
    return STENO_OK;
}

/* ---------------------------------------------------------------- shared pieces */

static steno_status rows_step(whisper_decode_ctx *c, const int *tokens, int B) {
    return c->fast ? whisper_fast_decoder_step_rows(c->fdec, tokens, B, c->logits)
                   : whisper_decoder_step_rows(&c->dec, tokens, B, c->logits);
}

static steno_status rows_reorder(whisper_decode_ctx *c, const int *src, int B) {
    return c->fast ? whisper_fast_decoder_reorder(c->fdec, src, B) : whisper_decoder_reorder(&c->dec, src, B);
}

/* CTranslate2 finalize_hypothesis_score: score / length^α (a zero length with α != 0 ranks last). */
static double rank_score(double raw, int len, double alpha) {
    if (alpha == 0.0) return raw;
    if (len == 0) return -INFINITY;
    return (double)((float)raw / powf((float)len, (float)alpha));
}

/* Registers tokens [n] with its cumulative log-probability; a full list keeps the best. */
static void add_hypothesis(whisper_search *s, const int *tokens, int n, double raw) {
    const double rank = rank_score(raw, n, s->length_penalty);
    int at = s->n_hyp;
    if (at == s->hyp_cap) {
        at = 0;
        for (int i = 1; i < s->n_hyp; i++)
            if (s->hyp_rank[i] < s->hyp_rank[at]) at = i;
        if (!(rank > s->hyp_rank[at])) return;
    } else {
        s->n_hyp++;
    }
    memcpy(s->hyp + (size_t)at * (s->N + 1), tokens, sizeof(int) * (size_t)n);
    s->hyp_len[at] = n;
    s->hyp_raw[at] = raw;
    s->hyp_rank[at] = rank;
}

static steno_status finish_best(whisper_decode_ctx *c, double temperature, whisper_window_result *res) {
    whisper_search *s = c->search;
    if (s->n_hyp == 0) return whisper_window_finish(c, res->tokens, 0, 0.0, temperature, res); /* no step ran */
    int best = 0;
    for (int i = 1; i < s->n_hyp; i++) /* the first of equal scores, as a stable sort would keep */
        if (s->hyp_rank[i] > s->hyp_rank[best]) best = i;
    return whisper_window_finish(c, s->hyp + (size_t)best * (s->N + 1), s->hyp_len[best], s->hyp_raw[best],
                                 temperature, res);
}

static void swap_rows(whisper_search *s) {
    int *t = s->seq;
    s->seq = s->seq_next;
    s->seq_next = t;
    t = s->len;
    s->len = s->len_next;
    s->len_next = t;
    float *f = s->cum;
    s->cum = s->cum_next;
    s->cum_next = f;
    double *d = s->sum;
    s->sum = s->sum_next;
    s->sum_next = d;
}

/* ---------------------------------------------------------------- beam search */

/* Keeps the best K (score, row, token) in descending order; an equal score never displaces an
 * earlier candidate, so ties go to the lower row and token. */
static void push_candidate(whisper_search *s, int *n, int K, float score, int row, int tok) {
    if (*n == K && !(score > s->cand_score[K - 1])) return;
    int i = *n < K ? (*n)++ : K - 1;
    while (i > 0 && score > s->cand_score[i - 1]) {
        s->cand_score[i] = s->cand_score[i - 1];
        s->cand_row[i] = s->cand_row[i - 1];
        s->cand_tok[i] = s->cand_tok[i - 1];
        i--;
    }
    s->cand_score[i] = score;
    s->cand_row[i] = row;
    s->cand_tok[i] = tok;
}

/* The candidate scan of beam_decode walks a row's logits in chunks: a token's score
 * cum + (float)((double)logit − lse) never decreases as its logit grows (each step rounds
 * monotonically), so once the list is full a chunk whose largest logit does not beat the last
 * candidate holds no token that would (entry needs a strictly larger score), and the walk skips it.
 * The candidates are those of the token-by-token walk, in the same order. */
#define SCAN_CHUNK 64

/* the largest of x[0..n), NaN ignored (-inf when every value is NaN or -inf); four independent
 * chains so the compiler can keep them in vector lanes */
static float chunk_max(const float *x, int n) {
    float m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        m0 = x[i] > m0 ? x[i] : m0;
        m1 = x[i + 1] > m1 ? x[i + 1] : m1;
        m2 = x[i + 2] > m2 ? x[i + 2] : m2;
        m3 = x[i + 3] > m3 ? x[i + 3] : m3;
    }
    for (; i < n; i++) m0 = x[i] > m0 ? x[i] : m0;
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    return m2 > m0 ? m2 : m0;
}

/* The prefill, and row 0 holding the forced prefix tokens (every hypothesis starts with them). */
static steno_status search_prefill(whisper_decode_ctx *c, const int *prompt, int n_prompt, int use_prefix,
                                   whisper_window_result *res, int *nf, int *max_step) {
    whisper_search *s = c->search;
    const int N = s->N;
    whisper_prefill pf;
    steno_status st = whisper_decode_prefill(c, prompt, n_prompt, use_prefix, &pf);
    if (st != STENO_OK) return st;
    res->no_speech_prob = pf.no_speech_prob;
    *nf = pf.n_forced;
    memcpy(s->seq, c->seq + pf.sample_begin, sizeof(int) * (size_t)pf.n_forced);
    /* as the greedy loop: forced + sampled tokens at most n_text_ctx/2, never past n_text_ctx */
    *max_step = N / 2 - pf.n_forced < N - pf.n + 1 ? N / 2 - pf.n_forced : N - pf.n + 1;
    return STENO_OK;
}

static steno_status beam_decode(whisper_decode_ctx *c, const int *prompt, int n_prompt, int use_prefix,
                                whisper_window_result *res) {
    whisper_search *s = c->search;
    const int N = s->N, V = s->V, W = N + 1, K = s->beam, NC = 2 * K, eot = c->m->special.eot;
    int nf, max_step;
    steno_status st = search_prefill(c, prompt, n_prompt, use_prefix, res, &nf, &max_step);
    if (st != STENO_OK) return st;
    int nb = 1, top_finished = 0;
    s->len[0] = nf;
    s->cum[0] = 0.0f;
    s->n_hyp = 0;
    for (int step = 0; step < max_step; step++) {
        const int last = step == max_step - 1;
        int nc = 0;
        for (int b = 0; b < nb; b++) {
            float *lg = c->logits + (size_t)b * V;
            const whisper_filtered fr =
                whisper_apply_filters(&c->filters, s->seq + (size_t)b * W + nf, s->len[b] - nf, lg);
            const float cum = s->cum[b];
            for (int t0 = 0; t0 < V; t0 += SCAN_CHUNK) {
                const int t1 = t0 + SCAN_CHUNK < V ? t0 + SCAN_CHUNK : V;
                if (nc == NC) { /* a full list: skip a chunk whose largest logit cannot enter it */
                    const float mx = chunk_max(lg + t0, t1 - t0);
                    if (mx == -INFINITY || !(cum + (float)((double)mx - fr.lse) > s->cand_score[NC - 1])) continue;
                }
                for (int t = t0; t < t1; t++) {
                    if (lg[t] == -INFINITY) continue;
                    const float score = cum + (float)((double)lg[t] - fr.lse);
                    if (nc < NC || score > s->cand_score[NC - 1]) push_candidate(s, &nc, NC, score, b, t);
                }
            }
        }
        const int keep = nc < K ? nc : K;
        int secondary = K;
        for (int k = 0; k < keep; k++) {
            int j = k;
            if (s->cand_tok[k] == eot || last) {
                if (k == 0) top_finished = 1;
                const int r = s->cand_row[k];
                int *h = s->seq_next + (size_t)k * W; /* scratch: row k of the next beam is written below */
                memcpy(h, s->seq + (size_t)r * W, sizeof(int) * (size_t)s->len[r]);
                int n = s->len[r];
                if (s->cand_tok[k] != eot) h[n++] = s->cand_tok[k];
                add_hypothesis(s, h, n, s->cand_score[k]);
                for (int q = secondary; q < nc; q++) /* the next candidate that goes on */
                    if (s->cand_tok[q] != eot) {
                        j = q;
                        secondary = q + 1;
                        break;
                    }
            }
            const int r = s->cand_row[j];
            s->src[k] = r;
            s->tok[k] = s->cand_tok[j];
            s->cum_next[k] = s->cand_score[j];
            memcpy(s->seq_next + (size_t)k * W, s->seq + (size_t)r * W, sizeof(int) * (size_t)s->len[r]);
            s->seq_next[(size_t)k * W + s->len[r]] = s->cand_tok[j];
            s->len_next[k] = s->len[r] + 1;
        }
        const int done = last || keep == 0 ||
                         (s->length_penalty == 0.0 ? top_finished && s->n_hyp >= 1 : s->n_hyp >= s->max_candidates);
        if (done) break;
        swap_rows(s);
        nb = keep;
        if ((st = rows_reorder(c, s->src, nb)) != STENO_OK || (st = rows_step(c, s->tok, nb)) != STENO_OK) return st;
    }
    return finish_best(c, 0.0, res);
}

/* ---------------------------------------------------------------- best-of sampling */

static steno_status best_of_decode(whisper_decode_ctx *c, const int *prompt, int n_prompt, int use_prefix,
                                   double temperature, whisper_window_result *res) {
    whisper_search *s = c->search;
    const int N = s->N, V = s->V, W = N + 1, R = s->best_of, eot = c->m->special.eot;
    int nf, max_step;
    steno_status st = search_prefill(c, prompt, n_prompt, use_prefix, res, &nf, &max_step);
    if (st != STENO_OK) return st;
    /* every sample starts from the one prefill: its logits and its cache, copied to each row */
    for (int b = 0; b < R; b++) {
        s->src[b] = 0;
        s->len[b] = nf;
        if (b > 0) memcpy(s->seq + (size_t)b * W, s->seq, sizeof(int) * (size_t)nf);
        s->sum[b] = 0.0;
        if (b > 0) memcpy(c->logits + (size_t)b * V, c->logits, sizeof(float) * (size_t)V);
    }
    if ((st = rows_reorder(c, s->src, R)) != STENO_OK) return st;
    s->n_hyp = 0;
    int nb = R;
    for (int step = 0; step < max_step && nb > 0; step++) {
        const int last = step == max_step - 1;
        int alive = 0;
        for (int b = 0; b < nb; b++) {
            float *lg = c->logits + (size_t)b * V;
            int *row = s->seq + (size_t)b * W;
            const whisper_filtered fr = whisper_apply_filters(&c->filters, row + nf, s->len[b] - nf, lg);
            const int t = whisper_sample_token(c, lg, V, temperature, c->row);
            s->sum[b] += (double)lg[t] - fr.lse;
            if (t != eot) row[s->len[b]++] = t;
            if (t == eot || last) {
                add_hypothesis(s, row, s->len[b], s->sum[b]);
                continue;
            }
            s->src[alive] = b;
            s->tok[alive] = t;
            memcpy(s->seq_next + (size_t)alive * W, row, sizeof(int) * (size_t)s->len[b]);
            s->len_next[alive] = s->len[b];
            s->sum_next[alive] = s->sum[b];
            alive++;
        }
        if (alive == 0) break;
        swap_rows(s);
        if (alive != nb && (st = rows_reorder(c, s->src, alive)) != STENO_OK) return st;
        nb = alive;
        if ((st = rows_step(c, s->tok, nb)) != STENO_OK) return st;
    }
    return finish_best(c, temperature, res);
}

steno_status whisper_search_decode(whisper_decode_ctx *c, const int *prompt, int n_prompt, int use_prefix,
                                   double temperature, const steno_transcribe_params *p,
                                   whisper_window_result *res) {
    if (!c->search || !whisper_search_applies(p, temperature))
        return steno_fail(STENO_E_INVALID_ARG, "beam search: not prepared for these parameters");
    return temperature > 0.0 ? best_of_decode(c, prompt, n_prompt, use_prefix, temperature, res)
                             : beam_decode(c, prompt, n_prompt, use_prefix, res);
}
