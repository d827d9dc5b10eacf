/* test_spec_rejection.c — steno_sampler_verify, the rejection rule of speculative sampling
 * (Leviathan et al. 2023, arXiv 2211.17192, Algorithm 1), on synthetic distributions.
 *
 * Over a vocabulary of 8 tokens, a target distribution p (logits through the sampler's chain:
 * temperature, and top-k truncation in one case) and a draft distribution q (dense, or the point
 * mass of a deterministic drafter, q = NULL): the draft x is drawn from q with the test's own
 * generator, steno_sampler_verify keeps it or draws from norm(max(0, p - q)), and N = 200 000
 * results are tallied. Checks, with fixed seeds:
 *  - the tallies fit p: Pearson's chi-square over p's support below the critical value at
 *    significance 0.001 (df = support - 1; a correct sampler fails 1 run in 1000, and the seeds
 *    are fixed, so the outcome is deterministic);
 *  - the acceptance rate equals sum_i min(p_i, q_i) (the paper's beta) within 5 binomial sigmas;
 *  - no token outside p's support (top-k) is ever returned;
 *  - at temperature 0 the result is the argmax, accepted iff the draft equals it;
 *  - only the returned token enters the penalty history (a repetition-penalized greedy choice
 *    afterwards equals the one after steno_sampler_sample of the same token). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "steno_llm.h"
#include "test_util.h"
#include "rng.h"

enum { V = 8, N = 200000 };

static const double CHI2_001[] = {0, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322};

static uint64_t rng = 0x1234abcdull;
static double unit(void) { return rng_unit53(rng_splitmix64(&rng)); } /* independent of the sampler's generator */

static int draw(const float *q) {
    double r = unit(), acc = 0;
    for (int i = 0; i < V; i++) {
        acc += q[i];
        if (r < acc) return i;
    }
    return V - 1;
}

/* The sampler's p, computed here independently: softmax(logits / T) over the top_k largest. */
static void target_p(const float *logits, float T, int top_k, double *p) {
    int keep[V] = {0};
    for (int i = 0; i < V; i++) {
        int rank = 0;
        for (int j = 0; j < V; j++)
            if (logits[j] > logits[i] || (logits[j] == logits[i] && j < i)) rank++;
        keep[i] = top_k <= 0 || rank < top_k;
    }
    double mx = -INFINITY, z = 0;
    for (int i = 0; i < V; i++)
        if (keep[i] && logits[i] > mx) mx = logits[i];
    for (int i = 0; i < V; i++) z += p[i] = keep[i] ? exp((logits[i] - mx) / T) : 0.0;
    for (int i = 0; i < V; i++) p[i] /= z;
}

static void run_case(const char *label, const float *logits, float T, int top_k, const float *q, int fixed_draft) {
    steno_sampler_params sp = steno_sampler_default_params();
    sp.temperature = T;
    sp.top_k = top_k;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    sp.seed = 42;
    steno_sampler *s;
    CHECK(steno_sampler_new(&sp, V, &s) == STENO_OK, "sampler");
    double p[V];
    target_p(logits, T, top_k, p);
    long cnt[V] = {0}, acc = 0;
    for (int t = 0; t < N; t++) {
        float l[V];
        memcpy(l, logits, sizeof l);
        const int x = q ? draw(q) : fixed_draft;
        int a = -1;
        const int y = steno_sampler_verify(s, l, x, q, &a);
        CHECK(y >= 0 && y < V && (a == 0 || a == 1) && (!a || y == x), "%s: result %d accepted %d draft %d", label, y, a, x);
        if (y < 0 || y >= V) break;
        cnt[y]++;
        acc += a;
    }
    double chi2 = 0, beta = 0;
    int support = 0;
    for (int i = 0; i < V; i++) {
        const double qi = q ? q[i] : (i == fixed_draft ? 1.0 : 0.0);
        beta += p[i] < qi ? p[i] : qi;
        if (p[i] == 0) {
            CHECK(cnt[i] == 0, "%s: token %d outside p's support returned %ld times", label, i, cnt[i]);
            continue;
        }
        support++;
        const double e = p[i] * N;
        chi2 += (cnt[i] - e) * (cnt[i] - e) / e;
    }
    const double crit = CHI2_001[support - 1];
    CHECK(chi2 < crit, "%s: chi-square %.2f >= %.3f (df %d, significance 0.001): the results are not distributed as p",
          label, chi2, crit, support - 1);
    const double rate = (double)acc / N, sd = sqrt(beta * (1 - beta) / N);
    CHECK(fabs(rate - beta) <= 5 * sd + 1e-12, "%s: acceptance %.4f, expected sum min(p, q) = %.4f", label, rate, beta);
    printf("%-34s chi-square %6.2f < %6.3f (df %d); acceptance %.4f (expected %.4f)\n", label, chi2, crit,
           support - 1, rate, beta);
    steno_sampler_free(s);
}

int main(void) {
    const float logits[V] = {1.5f, 0.2f, -0.7f, 2.1f, 0.0f, -1.9f, 0.9f, 1.1f};
    const float q_far[V] = {0.02f, 0.30f, 0.25f, 0.03f, 0.20f, 0.10f, 0.05f, 0.05f}; /* disagrees with p */
    float q_near[V];                                                              /* near p */
    double p[V];
    target_p(logits, 1.0f, 0, p);
    for (int i = 0; i < V; i++) q_near[i] = (float)(0.8 * p[i] + 0.2 / V);
    run_case("T 1, dense q far from p", logits, 1.0f, 0, q_far, -1);
    run_case("T 1, dense q near p", logits, 1.0f, 0, q_near, -1);
    run_case("T 0.7, top-k 3, dense q", logits, 0.7f, 3, q_far, -1);
    run_case("T 1, deterministic draft (argmax)", logits, 1.0f, 0, NULL, 3);
    run_case("T 1, deterministic draft (token 5)", logits, 1.0f, 0, NULL, 5);
    run_case("T 0.7, top-k 3, draft outside top-k", logits, 0.7f, 3, NULL, 5);

    /* temperature 0: the argmax, no randomness */
    steno_sampler_params sp = steno_sampler_default_params();
    sp.temperature = 0;
    sp.repeat_penalty = 3.0f;
    steno_sampler *a, *b;
    CHECK(steno_sampler_new(&sp, V, &a) == STENO_OK && steno_sampler_new(&sp, V, &b) == STENO_OK, "sampler");
    float l[V];
    int acc;
    memcpy(l, logits, sizeof l);
    CHECK(steno_sampler_verify(a, l, 3, NULL, &acc) == 3 && acc == 1, "temperature 0: argmax draft not kept");
    memcpy(l, logits, sizeof l);
    CHECK(steno_sampler_sample(b, l, NULL, NULL) == 3, "temperature 0: sample is not the argmax");
    /* both histories now hold token 3 alone: penalized, token 0 wins for both */
    memcpy(l, logits, sizeof l);
    const int ya = steno_sampler_verify(a, l, 3, NULL, &acc);
    CHECK(ya == 0 && acc == 0, "temperature 0 with the penalty: verify gave %d (accepted %d), want 0 rejected", ya, acc);
    memcpy(l, logits, sizeof l);
    CHECK(steno_sampler_sample(b, l, NULL, NULL) == ya, "verify's history differs from sample's");
    steno_sampler_free(a);
    steno_sampler_free(b);
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
