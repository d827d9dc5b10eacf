/* perplexity_cmd.c — `steno perplexity`: scores a text with an LLM, and compares a KV-cache kind
 * against the plain cache on the same text in the same run.
 *
 *   steno perplexity -m MODEL -f TEXT [--kv KIND ...] [--max-tokens N] [--repeat R] [--decode N]
 *
 * The text is tokenized (BOS added as the model asks), repeated R times (long-context runs),
 * cut to N tokens, and evaluated in chunks of --batch-size by two contexts of the same model: the
 * one the options describe ("test": --kv, --kv-group, ...) and a reference with the same options
 * but --kv plain (and --ref-kv-type, to measure the f16-vs-f32 noise floor). For every position t < N-1 both give logits for token t+1; the command reports
 *   ppl        exp(mean −log p(token t+1)) of each context,
 *   kl_mean    mean over positions of KL(P_plain ‖ P_test), natural log (nats),
 *   top1_agree fraction of positions where both contexts' argmax agree,
 *   flip_margin_mean/max  at the positions where they differ, how much less likely the test's
 *              choice is than the reference's own under the reference (log p_ref(ref's top-1) −
 *              log p_ref(test's top-1), nats): small values mean the flips are near-ties,
 *   bytes_per_token of each context's KV cache (all layers),
 * and with --decode D, greedy decoding of D tokens after the text by both contexts, one step of
 * each in turn (so a busy machine slows both alike), with tokens/s of each. Output: one JSON
 * object on standard output; exit 0 ok, 1 runtime error, 2 usage error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "llm_cli.h"

typedef struct {
    const char *file;
    int max_tokens, repeat, decode;
    int ref_kv_type;   /* 0: the test context's --kv-type */
    const char *kinds; /* comma-separated list of --kv kinds compared in one run, or NULL */
} ppl_opts;

static const char *const KV_NAMES[] = {"plain", "q8", "q4", "tq4", "tq3", "tq2"};
#define MAX_TEST 8

static void ppl_usage(FILE *f);

#define AT(field) STENO_OPT_AT(ppl_opts, field)
static const steno_opt PPL_OPTIONS[] = {
    {STENO_OPT_SECTION, .help = "perplexity:"},
    {STENO_OPT_STRING, "-f|--file", "PATH", AT(file), .help = "the text (UTF-8)"},
    {STENO_OPT_INT, "--max-tokens", "N", AT(max_tokens), STENO_OPT_RANGE(2, 1 << 24), .def = "all",
     .help = "score at most N tokens"},
    {STENO_OPT_INT, "--repeat", "R", AT(repeat), STENO_OPT_RANGE(1, 1 << 24), .def = "1",
     .help = "repeat the text R times before cutting"},
    {STENO_OPT_INT, "--decode", "N", AT(decode), STENO_OPT_RANGE(0, 1 << 24), .def = "0",
     .help = "then decode N greedy tokens with each context, interleaved"},
    {STENO_OPT_CHOICE, "--ref-kv-type", NULL, AT(ref_kv_type), .choices = "f16|f32",
     .values = (const int[]){STENO_KV_F16, STENO_KV_F32}, .def = "--kv-type's",
     .help = "element type of the reference's plain cache"},
    {STENO_OPT_STRING, "--kinds", "KINDS", AT(kinds),
     .help = "K1,K2,...: compare several --kv kinds against one plain reference in one run (one JSON line "
             "each; at most 8)"},
};
#undef AT

static const steno_opts_spec PPL_SPEC = {
    .opts = PPL_OPTIONS, .n_opts = sizeof PPL_OPTIONS / sizeof PPL_OPTIONS[0], .err_prefix = "steno perplexity: ",
    .verb = "perplexity", .usage = ppl_usage, .help_col = 27, .align_long = true, .shared = &steno_llm_cli_spec,
};

static void ppl_usage(FILE *f) {
    fputs("usage: steno perplexity -m MODEL -f TEXT [--kv KIND] [options]\n"
          "\n"
          "Scores TEXT with the KV cache the options select and with the plain cache, in the same run;\n"
          "prints one JSON object: perplexities, mean KL(plain || test), top-1 agreement, KV bytes per\n"
          "token, and with --decode N the greedy decode speed of both after the text. The sampling\n"
          "options are accepted and ignored.\n"
          "\n",
          f);
    steno_opts_help(f, &PPL_SPEC, NULL);
}

static char *read_text(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return NULL;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = malloc((size_t)st.st_size + 1);
    size_t n = b ? fread(b, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (b) b[n] = '\0';
    return b;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* log-softmax of row x [n] into y (double), returns argmax */
static int log_softmax(const float *x, int n, double *y) {
    int am = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[am]) am = i;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - x[am]);
    const double lse = x[am] + log(sum);
    for (int i = 0; i < n; i++) y[i] = (double)x[i] - lse;
    return am;
}

static int argmax(const float *x, int n) {
    int am = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[am]) am = i;
    return am;
}

typedef struct {
    steno_llm_ctx *ctx;
    int kind;
    float *logits; /* [B][V] */
    double nll, kl, kl_max, t_eval, t_dec, flip_sum, flip_max;
    long agree, dec_agree;
    int tok;
} test_ctx;

int steno_cmd_perplexity(int argc, char **argv) {
    ppl_opts o = {.repeat = 1};
    steno_llm *m;
    steno_llm_ctx *c;
    steno_sampler *s;
    llm_cli_opts lo;
    int rc = steno_llm_cli_open(argc, argv, &PPL_SPEC, &o, &lo, &m, &c, &s);
    if (rc >= 0) return rc;
    if (o.kinds && lo.kv_given) {
        fprintf(stderr, "steno perplexity: --kv and --kinds exclude each other (--kinds lists every kind to compare)\n");
        steno_sampler_free(s);
        steno_llm_ctx_free(c);
        steno_llm_free(m);
        return 2;
    }
    steno_llm_ctx *ref = NULL;
    test_ctx tc[MAX_TEST];
    int nt_ctx = 0;
    memset(tc, 0, sizeof tc);
    char *text = NULL;
    int *toks = NULL, *all = NULL;
    float *lr = NULL;
    double *yt = NULL, *yr = NULL;
    rc = 1;
    steno_llm_ctx_params cp = steno_llm_ctx_get_params(c);
    /* the contexts under test: the options' own, or one per --kinds entry */
    if (o.kinds) {
        const char *p = o.kinds;
        while (*p) {
            size_t len = strcspn(p, ",");
            int k = -1;
            for (int n = 0; n < 6; n++)
                if (strlen(KV_NAMES[n]) == len && strncmp(p, KV_NAMES[n], len) == 0) k = n;
            if (k < 0 || nt_ctx >= MAX_TEST) {
                fprintf(stderr, "steno perplexity: invalid value for --kinds: '%s' (at most 8 of plain, q8, q4, tq4, tq3, tq2)\n",
                        o.kinds);
                rc = 2;
                goto out;
            }
            tc[nt_ctx++].kind = k;
            p += len + (p[len] == ',');
        }
    } else {
        tc[nt_ctx++].kind = cp.kv_quant;
    }
    if (!o.file) {
        fprintf(stderr, "steno perplexity: no text (-f FILE)\n");
        rc = 2;
        goto out;
    }
    text = read_text(o.file);
    if (!text) {
        fprintf(stderr, "steno: %s: %s\n", o.file, strerror(errno));
        goto out;
    }
    steno_llm_ctx_params rp = cp;
    rp.kv_quant = STENO_KV_QUANT_PLAIN;
    if (o.ref_kv_type) rp.kv_type = (steno_kv_type)o.ref_kv_type;
    if (steno_llm_ctx_new(m, &rp, &ref) != STENO_OK) goto fail;
    for (int i = 0; i < nt_ctx; i++) {
        steno_llm_ctx_params tp = cp;
        tp.kv_quant = (steno_kv_quant)tc[i].kind;
        if (i == 0 && !o.kinds) {
            tc[i].ctx = c; /* the context the options made */
            c = NULL;
        } else if (steno_llm_ctx_new(m, &tp, &tc[i].ctx) != STENO_OK) {
            goto fail;
        }
    }
    int nt = 0;
    if (steno_llm_tokenize(m, text, strlen(text), 1, 0, &toks, &nt) != STENO_OK) goto fail;
    /* repeat the text (without its BOS) */
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    const int has_bos = nt > 0 && toks[0] == info.bos;
    const int body = nt - has_bos;
    long n = has_bos + (long)body * o.repeat;
    if (o.max_tokens > 0 && n > o.max_tokens) n = o.max_tokens;
    if (n < 2 || body <= 0) {
        fprintf(stderr, "steno: %s: too short to score (%d tokens)\n", o.file, nt);
        goto out;
    }
    all = malloc((size_t)n * sizeof(int));
    if (!all) goto nomem;
    for (long i = 0; i < n; i++) all[i] = i < has_bos ? toks[0] : toks[has_bos + (i - has_bos) % body];
    const int V = info.n_vocab, B = cp.n_batch < 64 ? cp.n_batch : 64;
    lr = malloc((size_t)B * V * sizeof(float));
    yt = malloc((size_t)V * sizeof(double));
    yr = malloc((size_t)V * sizeof(double));
    if (!lr || !yt || !yr) goto nomem;
    for (int i = 0; i < nt_ctx; i++)
        if (!(tc[i].logits = malloc((size_t)B * V * sizeof(float)))) goto nomem;
    double nll_r = 0, t_eval_r = 0;
    long scored = 0;
    for (long i0 = 0; i0 < n; i0 += B) {
        const int T = (int)(n - i0 < B ? n - i0 : B);
        double a = now_s();
        if (steno_llm_eval(ref, all + i0, T, lr, 1) != STENO_OK) goto fail;
        t_eval_r += now_s() - a;
        for (int i = 0; i < nt_ctx; i++) {
            a = now_s();
            if (steno_llm_eval(tc[i].ctx, all + i0, T, tc[i].logits, 1) != STENO_OK) goto fail;
            tc[i].t_eval += now_s() - a;
        }
        for (int t = 0; t < T && i0 + t + 1 < n; t++) {
            const int next = all[i0 + t + 1];
            const int ar = log_softmax(lr + (size_t)t * V, V, yr);
            nll_r -= yr[next];
            for (int i = 0; i < nt_ctx; i++) {
                const int at = log_softmax(tc[i].logits + (size_t)t * V, V, yt);
                tc[i].nll -= yt[next];
                double k = 0;
                for (int v = 0; v < V; v++) k += exp(yr[v]) * (yr[v] - yt[v]);
                tc[i].kl += k;
                if (k > tc[i].kl_max) tc[i].kl_max = k;
                tc[i].agree += ar == at;
                if (ar != at) {
                    const double mgn = yr[ar] - yr[at];
                    tc[i].flip_sum += mgn;
                    if (mgn > tc[i].flip_max) tc[i].flip_max = mgn;
                }
            }
            scored++;
        }
    }
    /* decode after the text: greedy, one step of each context in turn */
    const int last = (int)((n - 1) % B);
    int tok_r = argmax(lr + (size_t)last * V, V);
    for (int i = 0; i < nt_ctx; i++) tc[i].tok = argmax(tc[i].logits + (size_t)last * V, V);
    double dec_r = 0;
    long decoded = 0;
    for (long d = 0; d < o.decode; d++) {
        if (steno_llm_n_past(ref) + 1 > rp.n_ctx) break;
        double a = now_s();
        if (steno_llm_eval(ref, &tok_r, 1, lr, 0) != STENO_OK) goto fail;
        dec_r += now_s() - a;
        tok_r = argmax(lr, V);
        for (int i = 0; i < nt_ctx; i++) {
            a = now_s();
            if (steno_llm_eval(tc[i].ctx, &tc[i].tok, 1, tc[i].logits, 0) != STENO_OK) goto fail;
            tc[i].t_dec += now_s() - a;
            tc[i].tok = argmax(tc[i].logits, V);
            tc[i].dec_agree += tc[i].tok == tok_r;
        }
        decoded++;
    }
    size_t bpt_r;
    steno_llm_kv_usage(ref, &bpt_r, NULL);
    for (int i = 0; i < nt_ctx; i++) {
        size_t bpt_t;
        steno_llm_kv_usage(tc[i].ctx, &bpt_t, NULL);
        printf("{\"model\": \"%s\", \"kv\": \"%s\", \"kv_group\": %d, \"kv_key_bits\": %d, \"kv_quant_start\": %d, "
               "\"kv_sink\": %d, \"kv_rotate\": %d, \"kv_center\": %d, \"compute\": \"%s\", \"tokens\": %ld, \"scored\": %ld, \"ppl\": %.6f, \"ppl_plain\": %.6f, \"kl_mean\": %.8f, "
               "\"kl_max\": %.6f, \"top1_agree\": %.6f, \"flip_margin_mean\": %.6f, \"flip_margin_max\": %.6f, "
               "\"bytes_per_token\": %zu, \"bytes_per_token_plain\": %zu, "
               "\"eval_seconds\": %.3f, \"eval_seconds_plain\": %.3f, \"decode_tokens\": %ld, \"decode_context\": %ld, "
               "\"decode_tok_s\": %.3f, \"decode_tok_s_plain\": %.3f, \"decode_agree\": %ld}\n",
               info.name ? info.name : "", KV_NAMES[tc[i].kind], cp.kv_group, cp.kv_key_bits, cp.kv_quant_start,
               cp.kv_sink, cp.kv_rotate, cp.kv_center, cp.compute == STENO_LLM_COMPUTE_F32 ? "f32" : "ggml", n,
               scored, exp(tc[i].nll / scored), exp(nll_r / scored), tc[i].kl / scored, tc[i].kl_max,
               (double)tc[i].agree / scored, scored > tc[i].agree ? tc[i].flip_sum / (double)(scored - tc[i].agree) : 0.0,
               tc[i].flip_max, bpt_t, bpt_r, tc[i].t_eval, t_eval_r, decoded, n,
               tc[i].t_dec > 0 ? decoded / tc[i].t_dec : 0.0, dec_r > 0 ? decoded / dec_r : 0.0, tc[i].dec_agree);
    }
    fflush(stdout);
    rc = 0;
    goto out;
nomem:
    fprintf(stderr, "steno: perplexity: out of memory\n");
    goto out;
fail:
    fprintf(stderr, "steno: %s\n", steno_errmsg());
out:
    free(text);
    free(toks);
    free(all);
    free(lr);
    free(yt);
    free(yr);
    for (int i = 0; i < nt_ctx; i++) {
        free(tc[i].logits);
        steno_llm_ctx_free(tc[i].ctx);
    }
    steno_llm_ctx_free(ref);
    steno_sampler_free(s);
    steno_llm_ctx_free(c);
    steno_llm_free(m);
    return rc;
}
