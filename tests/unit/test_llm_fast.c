/* test_llm_fast.c — the gate of the LLM fast path (STENO_LLM_COMPUTE_FAST, issue #13 item 4), on
 * SmolLM2 (Q4_1: every projection and the q8_0 head take the x8 kernels) and Gemma 3 (Q4_K_M: its
 * q8_0 and q6_K matrices do; q4_K and q5_0 keep llama.cpp's kernels unless STENO_FAST_TYPES names
 * them).
 *
 * 1. Quality against evaluation precision: the committed 2 000-token text
 *    (tests/fixtures/llm/devils_dictionary.txt; its first 512 tokens in CI, all with
 *    STENO_TEST_FULL=1, 64 under ASan) scored with --compute f32, ggml and fast: mean KL(f32 ||
 *    mode) and top-1 agreement with f32 per position. The gate: fast's mean KL no worse than the
 *    faithful (ggml) path's by more than 10 % (+1e-6), and its top-1 agreement within 0.5 points
 *    (two positions when that is more: 2.08 points on the sanitizer build's 96 tokens).
 * 2. Greedy tokens: the chat and plain prompts of tests/fixtures/llm/<model>_llamacpp.json, 64
 *    steps each, fast against ggml. Equal, or the first difference is a near-tie: ggml's logit
 *    margin between its own token and fast's is below 0.1 (a probability ratio under 1.11;
 *    printed, with --compute f32's margin between the two, which says which of them evaluation
 *    precision prefers), after which the texts are not compared further.
 * 3. Invariance: fast logits of 96 tokens, one batch on 1 thread against chunks of 7 on 2 threads,
 *    and against one batch on 2 threads with a layer-dump hook set (which runs the norms, residual
 *    adds and SwiGLU/GeGLU whole on the caller instead of inside the products' conversion, in
 *    parallel): bit-identical (memcmp).
 * Numbers are printed for docs/LLM.md. Models from the cache as test_llm_parity; a missing model
 * is a FAILURE. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/model.h"
#include "steno_llm.h"
#include "test_util.h"

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static steno_llm_ctx *ctx(const steno_llm *m, steno_llm_compute mode, int n_ctx, int n_batch, int threads) {
    steno_llm_ctx_params p = steno_llm_ctx_default_params();
    p.compute = mode;
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.n_threads = threads;
    /* the reference is evaluation precision: float32 products and a float32 KV cache, whose
     * attention keeps q and the probabilities in float32 (an f16 cache rounds q to f16, as ggml) */
    if (mode == STENO_LLM_COMPUTE_F32) p.kv_type = STENO_KV_F32;
    steno_llm_ctx *c = NULL;
    CHECK(steno_llm_ctx_new(m, &p, &c) == STENO_OK, "ctx: %s", steno_errmsg());
    return c;
}

/* log-softmax in double */
static void logsm(const float *x, int n, double *out) {
    double mx = x[0], s = 0;
    for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++) s += exp((double)x[i] - mx);
    const double l = mx + log(s);
    for (int i = 0; i < n; i++) out[i] = (double)x[i] - l;
}

static void quality(const steno_llm *m, const char *model, const int *toks, int n, int nv) {
    float *lg[3];
    static const steno_llm_compute modes[3] = {STENO_LLM_COMPUTE_F32, STENO_LLM_COMPUTE_GGML, STENO_LLM_COMPUTE_FAST};
    for (int k = 0; k < 3; k++) {
        lg[k] = malloc(sizeof(float) * (size_t)n * nv);
        steno_llm_ctx *c = ctx(m, modes[k], n + 8, 128, 0);
        if (!c || !lg[k]) return;
        CHECK(steno_llm_eval(c, toks, n, lg[k], 1) == STENO_OK, "eval: %s", steno_errmsg());
        steno_llm_ctx_free(c);
    }
    double *p = malloc(sizeof(double) * nv), *q = malloc(sizeof(double) * nv);
    double kl[2] = {0, 0};
    int top1[2] = {0, 0};
    for (int t = 0; t < n; t++) {
        const float *ref = lg[0] + (size_t)t * nv;
        logsm(ref, nv, p);
        const int a = argmax(ref, nv);
        for (int k = 0; k < 2; k++) {
            const float *x = lg[k + 1] + (size_t)t * nv;
            logsm(x, nv, q);
            double s = 0;
            for (int i = 0; i < nv; i++) s += exp(p[i]) * (p[i] - q[i]);
            kl[k] += s;
            top1[k] += argmax(x, nv) == a;
        }
    }
    kl[0] /= n, kl[1] /= n;
    const double a0 = 100.0 * top1[0] / n, a1 = 100.0 * top1[1] / n;
    printf("%s: %d tokens vs --compute f32: ggml mean KL %.6f top-1 %.2f %%; fast mean KL %.6f top-1 %.2f %%\n", model,
           n, kl[0], a0, kl[1], a1);
    CHECK(kl[1] <= kl[0] * 1.10 + 1e-6, "%s: fast mean KL %.6g worse than ggml's %.6g by more than 10 %%", model, kl[1],
          kl[0]);
    /* Top-1 agreement moves by chance: the fast path rounds activations to 8 bits at other points
     * than ggml, and any change of the arithmetic before a rounding (even 2e-4 relative noise on the
     * attention output) re-draws which values round up. Measured on SmolLM2's whole text (2 111
     * positions), seven such draws spread 2 023–2 048 agreeing positions (standard deviation ~8.5);
     * the slack is 2.5 of those deviations scaled to n (10 positions at 512, 21 on the whole text),
     * at least 0.5 points. The mean KL above is the quality measure; this catches a collapse. */
    const double sd = 8.5 * sqrt(n / 2111.0), slack_pos = 2.5 * sd, slack = 100.0 * slack_pos / n > 0.5 ? 100.0 * slack_pos / n : 0.5;
    CHECK(a1 >= a0 - slack, "%s: fast top-1 agreement %.2f %% below ggml's %.2f %% - %.2f", model, a1, a0, slack);
    free(p), free(q);
    for (int k = 0; k < 3; k++) free(lg[k]);
}

static void greedy(const steno_llm *m, const char *model, const cJSON *cs, int nv, int steps) {
    const char *name = cJSON_GetObjectItem(cs, "name")->valuestring;
    const char *text = cJSON_GetObjectItem(cs, "text")->valuestring;
    const int special = cJSON_IsTrue(cJSON_GetObjectItem(cs, "special"));
    int *toks, n;
    CHECK(steno_llm_tokenize(m, text, strlen(text), 1, special, &toks, &n) == STENO_OK, "%s", steno_errmsg());
    steno_llm_ctx *g = ctx(m, STENO_LLM_COMPUTE_GGML, n + steps + 8, 64, 0),
                  *f = ctx(m, STENO_LLM_COMPUTE_FAST, n + steps + 8, 64, 0),
                  *e = ctx(m, STENO_LLM_COMPUTE_F32, n + steps + 8, 64, 0);
    float *lg = malloc(sizeof(float) * nv), *lf = malloc(sizeof(float) * nv), *le = malloc(sizeof(float) * nv);
    CHECK(steno_llm_eval(g, toks, n, lg, 0) == STENO_OK && steno_llm_eval(f, toks, n, lf, 0) == STENO_OK &&
              steno_llm_eval(e, toks, n, le, 0) == STENO_OK,
          "eval");
    int same = 0;
    double min_margin = 1e9;
    for (int s = 0; s < steps; s++) {
        const int a = argmax(lg, nv), b = argmax(lf, nv);
        double second = -1e30; /* ggml's margin at this step, for the record */
        for (int i = 0; i < nv; i++)
            if (i != a && lg[i] > second) second = lg[i];
        if (lg[a] - second < min_margin) min_margin = lg[a] - second;
        if (a != b) {
            const double margin = (double)lg[a] - lg[b];
            printf("%s/%s: fast and ggml differ at step %d (ggml %d, fast %d): ggml's margin %.4f — %s; f32's logit of "
                   "ggml's token minus fast's: %.4f\n",
                   model, name, s, a, b, margin, margin < 0.1 ? "a near-tie" : "NOT a near-tie", (double)le[a] - le[b]);
            /* a split is fine at a near-tie, or where evaluation precision sides with the fast path */
            CHECK(margin < 0.1 || le[b] > le[a], "%s/%s: step %d differs with ggml margin %.4f and f32 prefers ggml's token",
                  model, name, s, margin);
            break;
        }
        same++;
        if (s + 1 < steps)
            CHECK(steno_llm_eval(g, &a, 1, lg, 0) == STENO_OK && steno_llm_eval(f, &a, 1, lf, 0) == STENO_OK &&
                      steno_llm_eval(e, &a, 1, le, 0) == STENO_OK,
                  "eval");
    }
    printf("%s/%s: %d prompt tokens, greedy: %d/%d steps equal (smallest ggml top-1 margin seen %.4f)\n", model, name, n,
           same, steps, min_margin);
    steno_llm_ctx_free(g), steno_llm_ctx_free(f), steno_llm_ctx_free(e);
    free(lg), free(lf), free(le), free(toks);
}

static void no_dump(void *u, const char *name, int layer, const float *d, int rows, int cols) {
    (void)u, (void)name, (void)layer, (void)d, (void)rows, (void)cols;
}

static void invariance(const steno_llm *m, const char *model, const int *toks, int nv) {
    enum { N = 96 };
    float *a = malloc(sizeof(float) * N * nv), *b = malloc(sizeof(float) * N * nv);
    steno_llm_ctx *c1 = ctx(m, STENO_LLM_COMPUTE_FAST, N + 8, N, 1), *c2 = ctx(m, STENO_LLM_COMPUTE_FAST, N + 8, 7, 2),
                  *c3 = ctx(m, STENO_LLM_COMPUTE_FAST, N + 8, N, 2);
    CHECK(steno_llm_eval(c1, toks, N, a, 1) == STENO_OK && steno_llm_eval(c2, toks, N, b, 1) == STENO_OK, "eval");
    int same = memcmp(a, b, sizeof(float) * N * nv) == 0;
    printf("%s: fast logits of %d tokens, one batch on 1 thread vs chunks of 7 on 2 threads: %s\n", model, N,
           same ? "bit-identical" : "DIFFERENT");
    CHECK(same, "%s: fast path depends on batch or threads", model);
    c3->dump = no_dump;
    CHECK(steno_llm_eval(c3, toks, N, b, 1) == STENO_OK, "eval");
    same = memcmp(a, b, sizeof(float) * N * nv) == 0;
    printf("%s: the same with the per-row steps outside the products (dump hook): %s\n", model,
           same ? "bit-identical" : "DIFFERENT");
    CHECK(same, "%s: the per-row steps inside the products' conversion change the logits", model);
    steno_llm_ctx_free(c1), steno_llm_ctx_free(c2), steno_llm_ctx_free(c3);
    free(a), free(b);
}

static void run_model(const char *src, const char *model, int n_text, int steps) {
    char path[4200];
    if (steno_llm_resolve(model, path, sizeof path) != STENO_OK) {
        fprintf(stderr, "FAIL: %s (bash scripts/fetch_llm_models.sh %s)\n", steno_errmsg(), model);
        g_failures++;
        return;
    }
    steno_llm *m;
    if (steno_llm_load(path, NULL, &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        g_failures++;
        return;
    }
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    char fx[4200];
    snprintf(fx, sizeof fx, "%s/tests/fixtures/llm/devils_dictionary.txt", src);
    char *text = test_read_all(fx);
    CHECK(text != NULL, "missing %s", fx);
    int *toks = NULL, n = 0;
    if (text) CHECK(steno_llm_tokenize(m, text, strlen(text), 1, 0, &toks, &n) == STENO_OK, "%s", steno_errmsg());
    if (n > n_text) n = n_text;
    if (toks && n >= 96) {
        quality(m, model, toks, n, info.n_vocab);
        invariance(m, model, toks, info.n_vocab);
    }
    snprintf(fx, sizeof fx, "%s/tests/fixtures/llm/%s_llamacpp.json", src, model);
    char *json = test_read_all(fx);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    CHECK(root != NULL, "fixture %s", fx);
    const cJSON *cases = root ? cJSON_GetObjectItem(root, "cases") : NULL;
    for (int i = 0; cases && i < cJSON_GetArraySize(cases); i++) {
        const cJSON *cs = cJSON_GetArrayItem(cases, i);
        if (cJSON_GetArraySize(cJSON_GetObjectItem(cs, "prompt_tokens")) > 200) continue; /* the long-prompt case */
        greedy(m, model, cs, info.n_vocab, steps);
    }
    cJSON_Delete(root);
    free(json), free(text), free(toks);
    steno_llm_free(m);
}

int main(void) {
    const char *src = getenv("STENO_SOURCE");
    if (!src) src = ".";
    const char *san = getenv("STENO_SANITIZE"), *full = getenv("STENO_TEST_FULL");
    const int sanitizer = san && strcmp(san, "1") == 0, all = full && strcmp(full, "1") == 0;
    const int n_text = sanitizer ? 96 : all ? 1 << 20 : 512, steps = sanitizer ? 12 : 64;
    if (sanitizer) printf("sanitizer build: 96 text tokens, 12 greedy steps per prompt\n");
    run_model(src, "smollm2", n_text, steps);
    run_model(src, "gemma3", n_text, steps);
    return test_summary("test_llm_fast");
}
