/* sampling.c — the sampling chain, in the order of llama.cpp's common sampler
 * (common/sampling.cpp, src/llama-sampler.cpp): logit bias → penalties (repetition as in CTRL /
 * llama_sampler_penalties: divide positive logits, multiply negative ones; presence and frequency
 * as OpenAI: logit -= presence·[count>0] + frequency·count, over the last penalty_last_n tokens) →
 * top-k → top-p (smallest set with cumulative probability >= p) → min-p (p >= min_p · p_max) →
 * temperature → a draw from the softmax with a seeded RNG (splitmix64 seeding xoshiro256**).
 * temperature <= 0 is greedy (argmax, lowest id on ties) after bias and penalties.
 * Log-probabilities are those of the distribution after bias and penalties (log-softmax, double). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/ops/argmax.h"
#include "steno_llm.h"

struct steno_sampler {
    steno_sampler_params p;
    int n_vocab;
    steno_logit_bias *bias;
    uint64_t s[4];
    int *hist;        /* ring of the last hist_cap tokens */
    int hist_cap, hist_n, hist_pos;
    int *count;       /* [n_vocab] scratch */
    int *cand;        /* [n_vocab] candidate ids */
    float *prob;      /* [n_vocab] scratch */
};

steno_sampler_params steno_sampler_default_params(void) {
    steno_sampler_params p;
    memset(&p, 0, sizeof p);
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.0f;
    p.penalty_last_n = 64;
    p.seed = 0;
    return p;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(steno_sampler *s) {
    uint64_t *q = s->s;
    const uint64_t r = rotl(q[1] * 5, 7) * 9, t = q[1] << 17;
    q[2] ^= q[0];
    q[3] ^= q[1];
    q[1] ^= q[2];
    q[0] ^= q[3];
    q[2] ^= t;
    q[3] = rotl(q[3], 45);
    return r;
}

static double next_unit(steno_sampler *s) { return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0); }

steno_status steno_sampler_new(const steno_sampler_params *params, int n_vocab, steno_sampler **out) {
    *out = NULL;
    if (n_vocab <= 0) return steno_fail(STENO_E_INVALID_ARG, "sampler: vocabulary size %d", n_vocab);
    steno_sampler_params p = params ? *params : steno_sampler_default_params();
    if (!(p.top_p >= 0) || isnan(p.min_p) || p.n_probs < 0 || p.n_logit_bias < 0 ||
        !(p.repeat_penalty > 0) || isnan(p.temperature))
        return steno_fail(STENO_E_INVALID_ARG, "sampler: invalid parameters");
    for (int i = 0; i < p.n_logit_bias; i++)
        if (p.logit_bias[i].token < 0 || p.logit_bias[i].token >= n_vocab)
            return steno_fail(STENO_E_INVALID_ARG, "logit bias: token %d is not in the vocabulary (0..%d)",
                              p.logit_bias[i].token, n_vocab - 1);
    steno_sampler *s = calloc(1, sizeof *s);
    if (!s) return steno_fail(STENO_E_NOMEM, "sampler: out of memory");
    s->p = p;
    s->n_vocab = n_vocab;
    if (p.n_logit_bias > 0) {
        s->bias = malloc((size_t)p.n_logit_bias * sizeof *s->bias);
        if (s->bias) memcpy(s->bias, p.logit_bias, (size_t)p.n_logit_bias * sizeof *s->bias);
    }
    s->p.logit_bias = s->bias;
    s->hist_cap = p.penalty_last_n < 0 ? 1 << 20 : (p.penalty_last_n > 0 ? p.penalty_last_n : 1);
    s->hist = malloc((size_t)s->hist_cap * sizeof(int));
    s->count = calloc((size_t)n_vocab, sizeof(int));
    s->cand = malloc((size_t)n_vocab * sizeof(int));
    s->prob = malloc((size_t)n_vocab * sizeof(float));
    if (!s->hist || !s->count || !s->cand || !s->prob || (p.n_logit_bias > 0 && !s->bias)) {
        steno_sampler_free(s);
        return steno_fail(STENO_E_NOMEM, "sampler: out of memory");
    }
    uint64_t x = p.seed;
    for (int i = 0; i < 4; i++) s->s[i] = splitmix64(&x);
    *out = s;
    return STENO_OK;
}

void steno_sampler_free(steno_sampler *s) {
    if (!s) return;
    free(s->bias);
    free(s->hist);
    free(s->count);
    free(s->cand);
    free(s->prob);
    free(s);
}

void steno_sampler_accept(steno_sampler *s, int token) {
    if (token < 0 || token >= s->n_vocab) return;
    s->hist[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % s->hist_cap;
    if (s->hist_n < s->hist_cap) s->hist_n++;
}

static _Thread_local const float *t_cmp_logits;
static int cmp_desc(const void *a, const void *b) {
    const float *l = t_cmp_logits;
    int ia = *(const int *)a, ib = *(const int *)b;
    if (l[ia] > l[ib]) return -1;
    if (l[ia] < l[ib]) return 1;
    return ia - ib;
}

/* Moves the k best candidates (by logit, lowest id on ties) to the front, sorted. */
static void top_k_sort(const float *logits, int *cand, int n, int k) {
    t_cmp_logits = logits;
    if (k >= n) {
        qsort(cand, (size_t)n, sizeof(int), cmp_desc);
        return;
    }
    /* quickselect on the comparator, then sort the prefix */
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int pivot = cand[(lo + hi) / 2], i = lo, j = hi;
        while (i <= j) {
            while (cmp_desc(&cand[i], &pivot) < 0) i++;
            while (cmp_desc(&cand[j], &pivot) > 0) j--;
            if (i <= j) {
                int t = cand[i];
                cand[i] = cand[j];
                cand[j] = t;
                i++;
                j--;
            }
        }
        if (k - 1 <= j) hi = j;
        else if (k - 1 >= i) lo = i;
        else break;
    }
    qsort(cand, (size_t)k, sizeof(int), cmp_desc);
}

/* Logit bias, then the penalties over the recent history (in place). */
static void bias_and_penalties(steno_sampler *s, float *logits) {
    const steno_sampler_params *p = &s->p;
    for (int i = 0; i < p->n_logit_bias; i++) logits[s->bias[i].token] += s->bias[i].bias;
    if (s->hist_n > 0 && (p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f)) {
        for (int i = 0; i < s->hist_n; i++) s->count[s->hist[i]]++;
        for (int i = 0; i < s->hist_n; i++) {
            int t = s->hist[i], c = s->count[t];
            if (c == 0) continue; /* already applied */
            float l = logits[t];
            if (p->repeat_penalty != 1.0f) l = l > 0 ? l / p->repeat_penalty : l * p->repeat_penalty;
            l -= (float)c * p->frequency_penalty + (c > 0 ? p->presence_penalty : 0.0f);
            logits[t] = l;
            s->count[t] = 0;
        }
    }
}

/* temperature > 0: the candidates that survive top-k, top-p and min-p in s->cand[0..n) (sorted
 * by logit) with their tempered weights in s->prob[0..n) and the sum in *tot; returns n (0: every
 * logit is -inf). */
static int candidates(steno_sampler *s, const float *logits, double *tot) {
    const steno_sampler_params *p = &s->p;
    const int V = s->n_vocab;
    int n = 0;
    for (int i = 0; i < V; i++)
        if (logits[i] > -INFINITY) s->cand[n++] = i;
    if (n == 0) return 0;
    int k = p->top_k > 0 && p->top_k < n ? p->top_k : n;
    top_k_sort(logits, s->cand, n, k);
    n = k;
    /* probabilities of the survivors (sorted descending) */
    const float mx = logits[s->cand[0]];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[s->cand[i]] - mx);
    if (p->top_p < 1.0f) {
        double cum = 0;
        int keep = n;
        for (int i = 0; i < n; i++) {
            cum += exp((double)logits[s->cand[i]] - mx) / sum;
            if (cum >= p->top_p) {
                keep = i + 1;
                break;
            }
        }
        n = keep;
    }
    if (p->min_p > 0.0f) {
        const double thr = log((double)p->min_p);
        int keep = 1;
        while (keep < n && (double)logits[s->cand[keep]] - mx >= thr) keep++;
        n = keep;
    }
    /* temperature */
    double t = 0;
    for (int i = 0; i < n; i++) {
        double w = exp(((double)logits[s->cand[i]] - mx) / p->temperature);
        s->prob[i] = (float)w;
        t += w;
    }
    *tot = t;
    return n;
}

/* the first index of the largest logit (kernels/ops/argmax.h: vectorized, same index) */
static int argmax_of(const float *logits, int V) { return steno_argmax_f32(logits, V); }

int steno_sampler_sample(steno_sampler *s, float *logits, steno_token_logprob *top, float *logprob) {
    const int V = s->n_vocab;
    const steno_sampler_params *p = &s->p;
    bias_and_penalties(s, logits);
    /* log-probabilities of this distribution (the chosen token's and the alternatives' from the
     * same double log-sum-exp, so the chosen one equals its own entry among the alternatives) */
    double lse_saved = 0;
    if ((p->n_probs > 0 && top) || logprob) {
        float mx = -INFINITY;
        for (int i = 0; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
        double sum = 0;
        for (int i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
        const double lse = mx + log(sum);
        if (p->n_probs > 0 && top) {
            int k = p->n_probs < V ? p->n_probs : V;
            for (int i = 0; i < V; i++) s->cand[i] = i;
            top_k_sort(logits, s->cand, V, k);
            for (int i = 0; i < k; i++) {
                top[i].token = s->cand[i];
                top[i].logprob = (float)(logits[s->cand[i]] - lse);
            }
        }
        lse_saved = lse;
    }
    int chosen;
    if (!(p->temperature > 0.0f)) {
        chosen = argmax_of(logits, V);
    } else {
        double tot = 0;
        const int n = candidates(s, logits, &tot);
        if (n == 0) {
            chosen = 0;
        } else {
            /* draw */
            double r = next_unit(s) * tot, acc = 0;
            chosen = s->cand[n - 1];
            for (int i = 0; i < n; i++) {
                acc += s->prob[i];
                if (r < acc) {
                    chosen = s->cand[i];
                    break;
                }
            }
        }
    }
    if (logprob) *logprob = (float)(logits[chosen] - lse_saved);
    steno_sampler_accept(s, chosen);
    return chosen;
}

/* Leviathan et al. 2023 (arXiv 2211.17192) Algorithm 1, one position; the residual rule as vLLM's
 * RejectionSampler and llama.cpp's examples/speculative (p - q clipped at 0, renormalized). p is
 * the distribution steno_sampler_sample would draw from: bias, penalties, top-k, top-p, min-p and
 * temperature applied; at temperature 0 the point mass at the argmax (no random draw, as there). */
int steno_sampler_verify(steno_sampler *s, float *logits, int draft, const float *q, int *accepted) {
    const int V = s->n_vocab;
    *accepted = 0;
    bias_and_penalties(s, logits);
    int chosen;
    if (!(s->p.temperature > 0.0f)) {
        chosen = argmax_of(logits, V);
        *accepted = chosen == draft;
        steno_sampler_accept(s, chosen);
        return chosen;
    }
    double tot = 0;
    const int n = candidates(s, logits, &tot);
    if (n == 0) {
        steno_sampler_accept(s, 0);
        return 0;
    }
    double px = 0;
    for (int i = 0; i < n; i++)
        if (s->cand[i] == draft) px = s->prob[i] / tot;
    const double qx = q ? (draft >= 0 && draft < V ? q[draft] : 0) : 1.0;
    const double r = next_unit(s);
    if (draft >= 0 && draft < V && qx > 0 && r * qx < px) { /* r < min(1, p(x)/q(x)) */
        *accepted = 1;
        steno_sampler_accept(s, draft);
        return draft;
    }
    /* the residual norm(max(0, p - q)); tokens outside p's support have p = 0 and stay 0 */
    double W = 0;
    int last = -1;
    for (int i = 0; i < n; i++) {
        const double pi = s->prob[i] / tot, qi = q ? q[s->cand[i]] : (s->cand[i] == draft ? 1.0 : 0.0);
        s->prob[i] = pi > qi ? (float)(pi - qi) : 0.0f;
        W += s->prob[i];
        if (s->prob[i] > 0) last = i;
    }
    if (last < 0) { /* p == q to rounding: the draft was kept with probability 1; p itself */
        chosen = draft >= 0 && draft < V ? draft : s->cand[0];
    } else {
        const double r2 = next_unit(s) * W;
        double acc = 0;
        chosen = s->cand[last]; /* where rounding leaves r2 past the sum */
        for (int i = 0; i < n; i++) {
            if (s->prob[i] <= 0) continue;
            acc += s->prob[i];
            if (r2 < acc) {
                chosen = s->cand[i];
                break;
            }
        }
    }
    steno_sampler_accept(s, chosen);
    return chosen;
}

void steno_sampler_dist(steno_sampler *s, float *logits, float *probs) {
    const int V = s->n_vocab;
    bias_and_penalties(s, logits);
    memset(probs, 0, sizeof(float) * (size_t)V);
    if (!(s->p.temperature > 0.0f)) {
        probs[argmax_of(logits, V)] = 1.0f;
        return;
    }
    double tot = 0;
    const int n = candidates(s, logits, &tot);
    if (n == 0) {
        probs[0] = 1.0f;
        return;
    }
    for (int i = 0; i < n; i++) probs[s->cand[i]] = (float)(s->prob[i] / tot);
}

float steno_sampler_temperature(const steno_sampler *s) { return s->p.temperature; }
