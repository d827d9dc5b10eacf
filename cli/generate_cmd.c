/* generate_cmd.c — `steno generate`: text generation from a prompt with a GGUF or llama2.c model.
 *
 *   steno generate -m MODEL -p PROMPT [-n N] [sampling flags] [--max-kv-size N --keep K]
 *
 * The generated text goes to standard output as it is produced; the prompt and decode speeds
 * (tokens/s) go to standard error. Exit status: 0 ok, 1 runtime error (one line
 * "steno: <input>: <reason>" on stderr), 2 usage error. The options shared with `steno chat` and
 * `steno perplexity` are in cli/llm_cli.c.
 */

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "llm_cli.h"
#include "steno_llm.h"

typedef struct {
    const char *prompt;
    const char *prompt_file;
    bool no_bos, special, echo, verbose_prompt;
    steno_spec_params spec;
    const char *draft_model;
    steno_llm_spec_given given;
} gen_opts;

static void generate_usage(FILE *f);

#define AT(field) STENO_OPT_AT(gen_opts, field)
static const steno_opt GEN_OPTIONS[] = {
    {STENO_OPT_SECTION, .help = "prompt:"},
    {STENO_OPT_STRING, "-p|--prompt", "TEXT", AT(prompt), .help = "the prompt (\"\" = start from BOS only)"},
    {STENO_OPT_STRING, "-f|--file", "PATH", AT(prompt_file),
     .help = "read the prompt from a file (- = standard input; a NUL byte is refused)"},
    {STENO_OPT_FLAG, "--no-bos", .at = AT(no_bos), .help = "do not add the BOS token the model's tokenizer asks for"},
    {STENO_OPT_FLAG, "--special", .at = AT(special),
     .help = "parse control tokens written in the prompt (<|im_start|>, ...)"},
    {STENO_OPT_FLAG, "--echo", .at = AT(echo), .help = "print the prompt before the generated text"},
    {STENO_OPT_FLAG, "--verbose-prompt", .at = AT(verbose_prompt), .help = "print the prompt's tokens to standard error"},
    STENO_LLM_SPEC_OPTIONS(gen_opts, spec, draft_model, given),
};
#undef AT

static const steno_opts_spec GEN_SPEC = {
    .opts = GEN_OPTIONS, .n_opts = sizeof GEN_OPTIONS / sizeof GEN_OPTIONS[0], .err_prefix = "steno generate: ",
    .verb = "generate", .usage = generate_usage, .help_col = 27, .align_long = true, .shared = &steno_llm_cli_spec,
};

static void generate_usage(FILE *f) {
    fputs("usage: steno generate -m MODEL -p PROMPT [options]\n"
          "\n"
          "Generates text from PROMPT with a GGUF (llama, gemma3) or llama2.c model. The text goes to\n"
          "standard output; prompt and decode speeds (tokens/s) to standard error.\n"
          "\n"
          "many prompts at once: steno generate --parallel N -f PROMPTS.jsonl -m MODEL (see\n"
          "steno generate --parallel 1 --help)\n"
          "\n",
          f);
    steno_opts_help(f, &GEN_SPEC, NULL);
}

static int print_piece(void *user, int token, const char *piece, int n) {
    (void)user;
    (void)token;
    if (n > 0) fwrite(piece, 1, (size_t)n, stdout);
    fflush(stdout);
    return 0;
}

/* The whole file (path "-": standard input), NUL-terminated, its length in *len; NULL with errno
 * set when it cannot be read. */
static char *slurp(const char *path, size_t *len) {
    struct stat st;
    const bool std_in = strcmp(path, "-") == 0;
    if (!std_in && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EISDIR; /* fopen would succeed on a directory and read nothing */
        return NULL;
    }
    FILE *f = std_in ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) { free(b); b = NULL; errno = ENOMEM; break; }
            b = nb;
        }
    }
    if (b && ferror(f)) {
        free(b);
        b = NULL;
        if (!errno) errno = EIO;
    }
    if (!std_in) fclose(f);
    if (b) b[n] = '\0';
    *len = n;
    return b;
}

int steno_cmd_generate(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--parallel") == 0 && strcmp(argv[i - 1], "-p") != 0 && strcmp(argv[i - 1], "--prompt") != 0)
            return steno_cmd_generate_batch(argc, argv);
    gen_opts g = {0};
    g.spec = steno_spec_default_params();
    steno_llm *dm = NULL;
    steno_llm *m = NULL;
    steno_llm_ctx *c = NULL;
    steno_sampler *s = NULL;
    llm_cli_opts lo;
    int rc = steno_llm_cli_parse(argc, argv, &GEN_SPEC, &g, &lo);
    if (rc >= 0) return rc;
    if ((rc = steno_llm_cli_spec_check("generate", &g.spec, &g.given, g.draft_model)) != 0) return rc;
    if (g.prompt && g.prompt_file) { /* one would silently replace the other */
        fprintf(stderr, "steno generate: -p/--prompt and -f/--file both give the prompt: use one\n");
        return 2;
    }
    const int n_predict = lo.n_predict, n_probs = lo.samp.n_probs;
    char *owned = NULL;
    const char *prompt = g.prompt;
    if (g.prompt_file) {
        size_t len = 0;
        errno = 0;
        owned = slurp(g.prompt_file, &len);
        const char *name = strcmp(g.prompt_file, "-") == 0 ? "standard input" : g.prompt_file;
        if (!owned) {
            fprintf(stderr, "steno: %s: %s\n", name, strerror(errno));
            rc = 1;
            goto out; /* before the model loads */
        }
        const char *nul = memchr(owned, '\0', len);
        if (nul) { /* the prompt would silently end there */
            fprintf(stderr, "steno: %s: contains a NUL byte at offset %zu\n", name, (size_t)(nul - owned));
            rc = 1;
            goto out;
        }
        prompt = owned;
    }
    if ((rc = steno_llm_cli_load(&lo, &m, &c, &s)) != 0) goto out;
    if ((rc = steno_llm_cli_spec_setup("generate", m, lo.model, &lo.ctx, &g.spec, g.draft_model, &dm)) != 0) goto out;
    rc = -1;
    if (g.spec.kind != STENO_DRAFT_NONE && n_probs > 0)
        fprintf(stderr, "steno generate: --n-probs decodes token by token: speculation (--draft-kind) is off\n");
    if (!prompt) prompt = "";
    int *toks = NULL, nt = 0;
    if (steno_llm_tokenize(m, prompt, strlen(prompt), !g.no_bos, g.special, &toks, &nt) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        rc = 1;
        goto out;
    }
    if (nt == 0) {
        steno_llm_info info;
        steno_llm_get_info(m, &info);
        if (info.bos < 0) {
            fprintf(stderr, "steno: empty prompt and the model has no BOS token\n");
            free(toks);
            rc = 1;
            goto out;
        }
        toks[0] = info.bos; /* tokenize always returns a buffer of at least one int */
        nt = 1;
    }
    if (g.verbose_prompt) {
        fprintf(stderr, "prompt: %d tokens:", nt);
        for (int i = 0; i < nt; i++) fprintf(stderr, " %d", toks[i]);
        fputc('\n', stderr);
    }
    if (g.echo) {
        char piece[256];
        int prev = -1;
        for (int i = 0; i < nt; i++) {
            int pl = steno_llm_token_piece(m, toks[i], prev, 0, piece, (int)sizeof piece);
            if (pl > 0) fwrite(piece, 1, (size_t)pl, stdout);
            prev = toks[i];
        }
    }
    steno_gen_stats st;
    steno_status gs;
    if (n_probs > 0) {
        /* token by token, printing log-probabilities */
        steno_llm_info info;
        steno_llm_get_info(m, &info);
        float *logits = malloc((size_t)info.n_vocab * sizeof(float));
        steno_token_logprob top[100];
        struct timespec a, b2;
        clock_gettime(CLOCK_MONOTONIC, &a);
        gs = steno_llm_eval(c, toks, nt, logits, 0);
        clock_gettime(CLOCK_MONOTONIC, &b2);
        memset(&st, 0, sizeof st);
        st.n_prompt = nt;
        st.prompt_seconds = (b2.tv_sec - a.tv_sec) + (b2.tv_nsec - a.tv_nsec) * 1e-9;
        int prev = toks[nt - 1];
        for (int i = 0; gs == STENO_OK && logits && (n_predict < 0 || i < n_predict); i++) {
            float lp;
            int tok = steno_sampler_sample(s, logits, top, &lp);
            if (steno_llm_is_eog(m, tok)) break;
            char piece[256];
            int pl = steno_llm_token_piece(m, tok, prev, 0, piece, (int)sizeof piece);
            if (pl > 0) fwrite(piece, 1, (size_t)pl, stdout);
            fflush(stdout);
            fprintf(stderr, "[%d] token %d logprob %.4f | top:", i, tok, lp);
            for (int k = 0; k < n_probs && k < info.n_vocab; k++) fprintf(stderr, " %d:%.4f", top[k].token, top[k].logprob);
            fputc('\n', stderr);
            st.n_generated++;
            prev = tok;
            if (n_predict >= 0 && i + 1 >= n_predict) break;
            gs = steno_llm_eval(c, &tok, 1, logits, 0);
        }
        clock_gettime(CLOCK_MONOTONIC, &a);
        st.decode_seconds = (a.tv_sec - b2.tv_sec) + (a.tv_nsec - b2.tv_nsec) * 1e-9;
        free(logits);
    } else if (g.spec.kind != STENO_DRAFT_NONE) {
        steno_spec_stats ss;
        gs = steno_llm_generate_spec(c, s, toks, nt, n_predict, print_piece, NULL, &g.spec, &st, &ss);
        if (gs == STENO_OK) steno_llm_cli_spec_report(&g.spec, &ss, st.n_generated);
    } else {
        gs = steno_llm_generate(c, s, toks, nt, n_predict, print_piece, NULL, &st);
    }
    free(toks);
    putchar('\n');
    fflush(stdout);
    if (gs != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        rc = 1;
        goto out;
    }
    if (st.stop_reason == STENO_STOP_CTX_FULL)
        fprintf(stderr, "steno: stopped: the context is full after %d prompt + %d generated tokens (raise -c/--ctx-size)\n",
                st.n_prompt, st.n_generated);
    size_t kv_q, kv_plain;
    steno_llm_kv_quant_usage(c, &kv_q, &kv_plain);
    steno_llm_ctx_params cp = steno_llm_ctx_get_params(c);
    static const char *const kvn[] = {"plain", "q8", "q4", "tq4", "tq3", "tq2"};
    fprintf(stderr,
            "steno: prompt: %d tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s (%.1f tok/s); "
            "kv %s: %zu bytes/token (plain %zu)\n",
            st.n_prompt, st.prompt_seconds, st.prompt_seconds > 0 ? st.n_prompt / st.prompt_seconds : 0.0,
            st.n_generated, st.decode_seconds, st.decode_seconds > 0 ? st.n_generated / st.decode_seconds : 0.0,
            kvn[cp.kv_quant], kv_q, kv_plain);
    rc = 0;
out:
    free(owned);
    steno_sampler_free(s);
    steno_llm_ctx_free(c);
    steno_llm_free(m);
    steno_llm_free(dm);
    return rc;
}
