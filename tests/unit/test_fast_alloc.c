/* The fast path's planned decoder step allocates nothing: after the window's prefill, 100
 * single-token steps run with every malloc/calloc/realloc counted (glibc's __libc_* entry points
 * interposed here, or the sanitizer allocator hooks in the ASan build), with exact logits and
 * with the logit screen (fast.h whisper_fast_decoder_set_screen). Also checks that the f16 and
 * f32 weight copies pick the same 100 tokens (the test model's weights are exact in f16, so the
 * logits differ only by the f16 cross-attention K/V of the f16 path), that the screen picks the
 * same tokens as the exact logits and leaves every other row at least 4 nats below the best one
 * or bit-identical, and that 1 and 2 threads give bit-identical logits. The beam-search shape (4
 * decoder rows: a gather of the KV rows, then one batched step of all rows, 20 times) allocates
 * nothing either, and its logits are identical for 1 and 2 threads. */
#include <math.h>
#include <string.h>

#include "test_util.h"
#include "test_whisper.h"
#include "whisper/fast.h"

static volatile int g_counting;
static volatile long g_allocs;

#if defined(__SANITIZE_ADDRESS__)
/* From the sanitizer runtime (compiler-rt's sanitizer/allocator_interface.h, which GCC does not
 * install): called on every allocation and free. */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
static void on_malloc(const volatile void *p, size_t n) {
    (void)p, (void)n;
    if (g_counting) g_allocs++;
}
static void on_free(const volatile void *p) { (void)p; }
static void install_hooks(void) { __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free); }
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
void *malloc(size_t n) {
    if (g_counting) g_allocs++;
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    if (g_counting) g_allocs++;
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    if (g_counting) g_allocs++;
    return __libc_realloc(p, n);
}
static void install_hooks(void) {}
#endif

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Decodes 100 greedy steps after SOT (tokens into toks [100]); returns the logits of the last
 * step in out. screen: every text token allowed to the logit screen. */
static void run(const whisper_model *m, vec_dtype dt, int threads, int screen, const float *mel, float *out,
                int *toks, long *allocs) {
    steno_pool *pool;
    whisper_fast *f;
    whisper_fast_decoder *d;
    CHECK(steno_pool_create(threads, &pool) == STENO_OK, "pool");
    CHECK(whisper_fast_create(m, dt, 0, pool, &f) == STENO_OK, "fast create: %s", steno_errmsg());
    CHECK(whisper_fast_decoder_create(f, &d) == STENO_OK, "decoder create");
    float *xa = malloc(sizeof(float) * m->n_audio_ctx * m->n_audio_state);
    float *logits = malloc(sizeof(float) * m->n_vocab);
    whisper_fast_encode(f, mel, xa);
    whisper_fast_decoder_set_audio(d, xa);
    int tok = m->special.sot;
    whisper_fast_decoder_forward(d, &tok, 1, logits);
    float *allow = calloc((size_t)m->n_vocab, sizeof(float));
    if (screen) whisper_fast_decoder_set_screen(d, allow);
    long exact_rows = 0;
    g_allocs = 0;
    g_counting = 1;
    for (int i = 0; i < 100; i++) {
        tok = toks[i] = argmax(logits, m->special.eot); /* text tokens only: the loop never ends early */
        whisper_fast_decoder_forward(d, &tok, 1, logits);
        exact_rows += whisper_fast_decoder_screened_rows(d);
    }
    g_counting = 0;
    if (screen)
        printf("screen, %d thread(s): %.0f of %d rows exact per step on average\n", threads, exact_rows / 100.0,
               m->n_vocab);
    free(allow);
    *allocs = g_allocs;
    memcpy(out, logits, sizeof(float) * m->n_vocab);
    free(xa);
    free(logits);
    whisper_fast_decoder_free(d);
    whisper_fast_free(f);
    steno_pool_free(pool);
}

/* 20 beam-like steps on 4 rows: gather {0, 0, 1, 2} (a duplicate, a drop), then step all rows. */
static void run_rows(const whisper_model *m, int threads, const float *mel, float *out, long *allocs) {
    enum { R = 4 };
    steno_pool *pool;
    whisper_fast *f;
    whisper_fast_decoder *d;
    CHECK(steno_pool_create(threads, &pool) == STENO_OK, "pool");
    CHECK(whisper_fast_create(m, VEC_F16, 0, pool, &f) == STENO_OK, "fast create: %s", steno_errmsg());
    CHECK(whisper_fast_decoder_create_rows(f, R, &d) == STENO_OK, "decoder rows create");
    float *xa = malloc(sizeof(float) * m->n_audio_ctx * m->n_audio_state);
    float *logits = malloc(sizeof(float) * m->n_vocab * R);
    whisper_fast_encode(f, mel, xa);
    whisper_fast_decoder_set_audio(d, xa);
    int tok[R] = {m->special.sot}, zeros[R] = {0};
    const int src[R] = {0, 0, 1, 2};
    whisper_fast_decoder_forward(d, tok, 1, logits);
    whisper_fast_decoder_reorder(d, zeros, R);
    for (int r = 0; r < R; r++) tok[r] = argmax(logits, m->special.eot) + r;
    whisper_fast_decoder_step_rows(d, tok, R, logits);
    g_allocs = 0;
    g_counting = 1;
    for (int i = 0; i < 20; i++) {
        CHECK(whisper_fast_decoder_reorder(d, src, R) == STENO_OK, "reorder");
        for (int r = 0; r < R; r++) tok[r] = argmax(logits + (size_t)src[r] * m->n_vocab, m->special.eot);
        CHECK(whisper_fast_decoder_step_rows(d, tok, R, logits) == STENO_OK, "step rows");
    }
    g_counting = 0;
    *allocs = g_allocs;
    memcpy(out, logits, sizeof(float) * m->n_vocab * R);
    free(xa);
    free(logits);
    whisper_fast_decoder_free(d);
    whisper_fast_free(f);
    steno_pool_free(pool);
}

int main(void) {
    install_hooks();
    /* the counter itself must see allocations, or a zero below would prove nothing */
    g_allocs = 0;
    g_counting = 1;
    void *volatile probe = malloc(64);
    g_counting = 0;
    free(probe);
    CHECK(g_allocs == 1, "allocation counter saw %ld allocations of 1", g_allocs);
    whisper_model *m;
    if (whisper_model_load(test_model_dir(), &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        return 1;
    }
    float *window = test_jfk_window(m);
    if (!window) return test_summary("test_fast_alloc");

    const int V = m->n_vocab;
    float *a = malloc(sizeof(float) * V), *b = malloc(sizeof(float) * V), *c = malloc(sizeof(float) * V);
    float *sa = malloc(sizeof(float) * V), *sc = malloc(sizeof(float) * V);
    int ta[100], tb[100], tc[100], tsa[100], tsc[100];
    long n16, n32, n1, ns2, ns1;
    run(m, VEC_F16, 2, 0, window, a, ta, &n16);
    run(m, VEC_F32, 2, 0, window, b, tb, &n32);
    run(m, VEC_F16, 1, 0, window, c, tc, &n1);
    run(m, VEC_F16, 2, 1, window, sa, tsa, &ns2);
    run(m, VEC_F16, 1, 1, window, sc, tsc, &ns1);
    printf("heap allocations in 100 decoder steps: f16 %ld, f32 %ld, 1 thread %ld, screened %ld / %ld\n", n16, n32, n1,
           ns2, ns1);
    CHECK(n16 == 0 && n32 == 0 && n1 == 0 && ns2 == 0 && ns1 == 0, "the decoder step allocated");
    double dmax = 0;
    for (int r = 0; r < V; r++) dmax = fmax(dmax, fabs((double)a[r] - b[r]));
    printf("f16 vs f32 weights: same 100 tokens %s, max |logit difference| at step 100 %.3g\n",
           memcmp(ta, tb, sizeof ta) ? "NO" : "yes", dmax);
    CHECK(memcmp(ta, tb, sizeof ta) == 0, "f16 and f32 weights chose different tokens");
    CHECK(dmax < 0.05, "f16 and f32 logits differ by %.3g", dmax);
    CHECK(memcmp(a, c, sizeof(float) * V) == 0, "1 and 2 threads gave different logits");
    CHECK(isfinite(a[argmax(a, V)]), "logits not finite");
    CHECK(memcmp(ta, tsa, sizeof ta) == 0, "the logit screen chose different tokens");
    CHECK(memcmp(sa, sc, sizeof(float) * V) == 0, "1 and 2 threads gave different screened logits");
    const float best = a[argmax(a, m->special.eot)];
    int same = 0, far = 1;
    double dscr = 0;
    for (int r = 0; r < V; r++) {
        if (memcmp(&a[r], &sa[r], sizeof(float)) == 0) {
            same++;
            continue;
        }
        far &= r < m->special.eot && a[r] < best - 4.0f && sa[r] < best - 4.0f;
        dscr = fmax(dscr, fabs((double)a[r] - sa[r]));
    }
    printf("screened logits at step 100: %d of %d bit-identical, the others all > 4 nats below the best: %s "
           "(max |difference| %.3g)\n", same, V, far ? "yes" : "NO", dscr);
    CHECK(far, "a screened row is within 4 nats of the best logit or is a special token");
    CHECK(memcmp(&a[argmax(a, V)], &sa[argmax(a, V)], sizeof(float)) == 0, "the best logit is not exact");

    float *ra = malloc(sizeof(float) * m->n_vocab * 4), *rb = malloc(sizeof(float) * m->n_vocab * 4);
    long nr2, nr1;
    run_rows(m, 2, window, ra, &nr2);
    run_rows(m, 1, window, rb, &nr1);
    printf("heap allocations in 20 gathers + 4-row steps: 2 threads %ld, 1 thread %ld\n", nr2, nr1);
    CHECK(nr2 == 0 && nr1 == 0, "the row gather or the row step allocated");
    CHECK(memcmp(ra, rb, sizeof(float) * m->n_vocab * 4) == 0, "1 and 2 threads gave different row logits");
    free(ra), free(rb);

    free(a), free(b), free(c), free(sa), free(sc), free(window);
    whisper_model_free(m);
    return test_summary("test_fast_alloc");
}
