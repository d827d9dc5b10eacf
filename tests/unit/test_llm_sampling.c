/* test_llm_sampling.c — the sampling chain (src/llm/sampling.c) on synthetic logits.
 *
 * Greedy (argmax, lowest id on ties); same seed → same draws, other seeds → other draws; the
 * draw frequencies follow softmax(logits / T) (20 000 draws within 2 %); top-k 1 and min-p 1 are
 * greedy; top-p keeps the smallest prefix reaching p; logit bias bans and forces tokens; the
 * repetition penalty divides positive and multiplies negative logits of recent tokens; presence
 * and frequency penalties subtract per occurrence; top-n log-probabilities are sorted and
 * normalised; invalid parameters are refused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steno_llm.h"

#include "test_util.h"

#define V 10

static steno_sampler *mk(steno_sampler_params p) {
    steno_sampler *s;
    CHECK(steno_sampler_new(&p, V, &s) == STENO_OK, "%s", steno_errmsg());
    return s;
}

static int sample(steno_sampler *s, const float *base) {
    float l[V];
    memcpy(l, base, sizeof l);
    return steno_sampler_sample(s, l, NULL, NULL);
}

int main(void) {
    const float base[V] = {1.0f, 3.0f, 2.5f, 3.0f, -1.0f, 0.0f, 2.9f, -5.0f, 1.5f, 0.5f};
    steno_sampler_params g = steno_sampler_default_params();
    g.temperature = 0;
    steno_sampler *s = mk(g);
    CHECK(sample(s, base) == 1, "greedy must pick the lowest id among equal maxima");
    steno_sampler_free(s);

    /* determinism */
    steno_sampler_params p = steno_sampler_default_params();
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 42;
    int a[200], b[200], c[200];
    steno_sampler *s1 = mk(p), *s2 = mk(p);
    p.seed = 43;
    steno_sampler *s3 = mk(p);
    int differ = 0;
    for (int i = 0; i < 200; i++) {
        a[i] = sample(s1, base);
        b[i] = sample(s2, base);
        c[i] = sample(s3, base);
        differ += a[i] != c[i];
    }
    CHECK(memcmp(a, b, sizeof a) == 0, "same seed gave different draws");
    CHECK(differ > 20, "another seed gave (almost) the same draws (%d differ)", differ);
    steno_sampler_free(s1);
    steno_sampler_free(s2);
    steno_sampler_free(s3);

    /* frequencies follow softmax(l / T) with T = 0.7 */
    p.seed = 7;
    p.temperature = 0.7f;
    s = mk(p);
    int count[V] = {0};
    const int N = 20000;
    for (int i = 0; i < N; i++) count[sample(s, base)]++;
    double z = 0;
    for (int i = 0; i < V; i++) z += exp(base[i] / 0.7);
    for (int i = 0; i < V; i++) {
        double want = exp(base[i] / 0.7) / z, got = (double)count[i] / N;
        CHECK(fabs(got - want) < 0.02, "token %d: frequency %.4f, softmax %.4f", i, got, want);
    }
    steno_sampler_free(s);

    /* top-k 1, min-p 1, tiny top-p: greedy */
    p.temperature = 5.0f;
    p.top_k = 1;
    s = mk(p);
    for (int i = 0; i < 50; i++) CHECK(sample(s, base) == 1, "top-k 1");
    steno_sampler_free(s);
    p.top_k = 0;
    p.min_p = 1.0f;
    s = mk(p);
    for (int i = 0; i < 50; i++) {
        int t = sample(s, base);
        CHECK(t == 1 || t == 3, "min-p 1 kept token %d", t);
    }
    steno_sampler_free(s);
    p.min_p = 0.0f;
    p.top_p = 1e-6f;
    s = mk(p);
    for (int i = 0; i < 50; i++) CHECK(sample(s, base) == 1, "top-p tiny");
    steno_sampler_free(s);
    /* top-p 0.45 at T=1: tokens 1 and 3 hold 0.249 each → {1, 3} */
    p.temperature = 1.0f;
    p.top_p = 0.45f;
    s = mk(p);
    for (int i = 0; i < 200; i++) {
        int t = sample(s, base);
        CHECK(t == 1 || t == 3, "top-p 0.45 kept token %d", t);
    }
    steno_sampler_free(s);

    /* logit bias */
    steno_logit_bias bias[2] = {{1, -INFINITY}, {3, -INFINITY}};
    g.logit_bias = bias;
    g.n_logit_bias = 2;
    s = mk(g);
    CHECK(sample(s, base) == 6, "banning 1 and 3 leaves 6 as argmax");
    steno_sampler_free(s);
    steno_logit_bias force = {7, 100.0f};
    g.logit_bias = &force;
    g.n_logit_bias = 1;
    s = mk(g);
    CHECK(sample(s, base) == 7, "a +100 bias forces token 7");
    steno_sampler_free(s);
    g.logit_bias = NULL;
    g.n_logit_bias = 0;
    steno_logit_bias badb = {V, 1.0f};
    g.logit_bias = &badb;
    g.n_logit_bias = 1;
    CHECK(steno_sampler_new(&g, V, &s) == STENO_E_INVALID_ARG, "bias for token out of range accepted");
    g.logit_bias = NULL;
    g.n_logit_bias = 0;

    /* repetition penalty: 3.0 / 1.5 = 2.0 < 2.9 (token 6) */
    g.repeat_penalty = 1.5f;
    s = mk(g);
    steno_sampler_accept(s, 1);
    steno_sampler_accept(s, 3);
    CHECK(sample(s, base) == 6, "repetition penalty");
    steno_sampler_free(s);
    /* negative logits are multiplied: token 7 (-5) stays last; penalties see only the last n */
    g.repeat_penalty = 1.5f;
    g.penalty_last_n = 1;
    s = mk(g);
    steno_sampler_accept(s, 1);
    steno_sampler_accept(s, 2);
    CHECK(sample(s, base) == 1, "penalty_last_n = 1 must only see token 2");
    steno_sampler_free(s);
    g.repeat_penalty = 1.0f;
    g.penalty_last_n = 64;
    /* presence 0.05 + frequency 0.05 × 1 on token 1 → 2.9 < 3.0 - 0.1 = 2.9? ties go to lower id;
       with 2 occurrences: 3.0 - 0.05 - 0.1 = 2.85 < 2.9 → token 3 */
    g.presence_penalty = 0.05f;
    g.frequency_penalty = 0.05f;
    s = mk(g);
    steno_sampler_accept(s, 1);
    steno_sampler_accept(s, 1);
    CHECK(sample(s, base) == 3, "presence/frequency penalties");
    steno_sampler_free(s);
    g.presence_penalty = 0;
    g.frequency_penalty = 0;

    /* log-probabilities */
    g.n_probs = 3;
    s = mk(g);
    steno_token_logprob top[3];
    float lp, l[V];
    memcpy(l, base, sizeof l);
    int t = steno_sampler_sample(s, l, top, &lp);
    double zz = 0;
    for (int i = 0; i < V; i++) zz += exp(base[i]);
    CHECK(t == 1 && top[0].token == 1 && top[1].token == 3 && top[2].token == 6, "top tokens %d %d %d", top[0].token,
          top[1].token, top[2].token);
    CHECK(fabs(top[0].logprob - (3.0 - log(zz))) < 1e-5, "logprob %f", top[0].logprob);
    CHECK(fabsf(lp - top[0].logprob) < 1e-6f, "chosen logprob %f", lp);
    steno_sampler_free(s);

    /* invalid parameters */
    steno_sampler_params bad = steno_sampler_default_params();
    bad.repeat_penalty = 0;
    CHECK(steno_sampler_new(&bad, V, &s) == STENO_E_INVALID_ARG, "repeat_penalty 0 accepted");
    CHECK(steno_sampler_new(NULL, 0, &s) == STENO_E_INVALID_ARG, "empty vocabulary accepted");

    if (g_failures) {
        fprintf(stderr, "%d check(s) failed\n", g_failures);
        return 1;
    }
    printf("all passed\n");
    return 0;
}
