/* generate_cmd.c — `steno generate`: text generation from a prompt with a GGUF or llama2.c model.
 *
 * Prototypes for cli/commands.h (wired by cli/main.c):
 *   int steno_cmd_generate(int argc, char **argv);
 *   int steno_cmd_chat(int argc, char **argv);      (cli/chat_cmd.c)
 *
 *   steno generate -m MODEL -p PROMPT [-n N] [sampling flags] [--max-kv-size N --keep K]
 *
 * The generated text goes to standard output as it is produced; the prompt and decode speeds
 * (tokens/s) go to standard error. Exit status: 0 ok, 1 runtime error (one line
 * "steno: <input>: <reason>" on stderr), 2 usage error. This file also holds the option parsing
 * shared with `steno chat` (steno_llm_cli_open).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "steno_llm.h"

int steno_cmd_generate(int argc, char **argv);
int steno_cmd_generate_batch(int argc, char **argv); /* cli/generate_batch_cmd.c */
/** Shared with cli/chat_cmd.c: parses argv[1..] (the verb's own options first through `extra`,
 *  which returns how many arguments it consumed at index i, 0 if none, -1 on a usage error), then
 *  the model/context/sampling options; loads the model and creates the context and sampler.
 *  Returns -1 on success, else the exit status to return (help printed: 0, usage: 2, load: 1). */
int steno_llm_cli_open(int argc, char **argv, const char *verb, int (*extra)(void *user, int argc, char **argv, int i),
                       void *user, void (*usage)(FILE *f), steno_llm **m, steno_llm_ctx **c, steno_sampler **s,
                       int *n_predict, int *n_probs);

typedef struct llm_cli_opts {
    const char *model;
    const char *tokenizer;
    steno_llm_ctx_params ctx;
    steno_sampler_params samp;
    steno_logit_bias bias[64];
    int n_predict;
    int seed_given;
} llm_cli_opts;


static void llm_cli_defaults(llm_cli_opts *o) {
    memset(o, 0, sizeof *o);
    o->ctx = steno_llm_ctx_default_params();
    o->samp = steno_sampler_default_params();
    o->samp.seed = (uint64_t)time(NULL);
    o->n_predict = -1;
}

static void llm_cli_common_usage(FILE *f) {
    fputs("model:\n"
          "  -m, --model MODEL        .gguf file, llama2.c .bin, or a known name (smollm2, gemma3) in the\n"
          "                           model cache (scripts/fetch_llm_models.sh)\n"
          "      --tokenizer PATH     llama2.c tokenizer (default: tokenizer.bin or tok<vocab>.bin beside MODEL)\n"
          "  -t, --threads N          threads (default and 0: all CPUs)\n"
          "  -c, --ctx-size N         context length in tokens (default: the model's)\n"
          "  -b, --batch-size N       prompt tokens per forward pass (default 256)\n"
          "KV cache:\n"
          "      --max-kv-size N      rotating cache of N slots for every global layer (default: plain)\n"
          "      --keep K             tokens at the start the rotating cache never evicts (default 0)\n"
          "      --kv-reserve N       history kept beyond the window for rollback (default 32)\n"
          "      --kv-type f16|f32    cache element type (default: f32 for llama2.c, f16 for GGUF)\n"
          "      --kv KIND            plain (default) | q8 | q4 (MLX affine groups, keys and values) |\n"
          "                           tq4 | tq3 | tq2 (TurboQuant: 8-bit keys, 4/3/2-bit rotated values)\n"
          "      --kv-group 32|64     q8/q4 group size (default 32; 64 = mlx-lm's)\n"
          "      --kv-quant-start N   keep the first N tokens unquantized, then convert (default 0)\n"
          "      --kv-key-bits 8|4    tq*: key bits (default 8)\n"
          "      --kv-sink N          q8..tq2 (no effect on plain): the first N tokens also kept unquantized\n"
          "                           and read by attention (attention sinks; default 4, 0 = as mlx-lm)\n"
          "      --kv-rotate 1|0      q8..tq2: Walsh-Hadamard-rotate keys (and q8/q4 values) before\n"
          "                           quantizing them (default: 1 for power-of-two head_dim; 0 = mlx-lm's codes)\n"
          "      --kv-center 1|0      q8..tq2: quantize keys minus the mean key of the first quantized\n"
          "                           tokens (default 1; 0 = raw keys)\n"
          "      --compute ggml|f32   arithmetic: llama.cpp's (q8 activations, default) or f32 evaluation\n"
          "                           precision (dequantized weights, f32 activations; docs/LLM.md)\n"
          "sampling (llama.cpp's chain: bias, penalties, top-k, top-p, min-p, temperature):\n"
          "  -n, --n-predict N        tokens to generate (default: until end of text / context)\n"
          "      --temp T             temperature; 0 = greedy (default 0.8)\n"
          "      --top-k K            (default 40; 0 = off)\n"
          "      --top-p P            (default 0.95; 1 = off)\n"
          "      --min-p P            (default 0.05; 0 = off)\n"
          "      --repeat-penalty R   (default 1.0 = off)\n"
          "      --repeat-last-n N    tokens the penalties look at (default 64; -1 = all)\n"
          "      --presence-penalty P (default 0)\n"
          "      --frequency-penalty P (default 0)\n"
          "      --logit-bias ID(+|-)B  add B to token ID's logit (repeatable; ID-inf bans it)\n"
          "  -s, --seed S             RNG seed (default: time); same seed, same text\n"
          "      --n-probs N          print the top N log-probabilities of each token to standard error\n",
          f);
}

static int want_value(int argc, char **argv, int *i, const char *verb) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "steno %s: option %s needs a value\n", verb, argv[*i]);
        return 0;
    }
    return 1;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (errno || e == s || *e || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse_float(const char *s, double *out) {
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (errno || e == s || *e || isnan(v)) return 0;
    *out = v;
    return 1;
}

static int llm_cli_parse_common(llm_cli_opts *o, int argc, char **argv, int *i, const char *verb) {
    const char *a = argv[*i];
    long iv;
    double fv;
#define IS(s) (strcmp(a, s) == 0)
#define VAL() (want_value(argc, argv, i, verb) ? argv[++*i] : NULL)
#define BAD(what)                                                                                   \
    do {                                                                                            \
        fprintf(stderr, "steno %s: invalid value for %s: '%s' (%s)\n", verb, a, argv[*i], what);      \
        return -1;                                                                                  \
    } while (0)
    if (IS("-m") || IS("--model")) {
        const char *v = VAL();
        if (!v) return -1;
        o->model = v;
    } else if (IS("--tokenizer")) {
        const char *v = VAL();
        if (!v) return -1;
        o->tokenizer = v;
    } else if (IS("-t") || IS("--threads")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 0, 256, &iv)) BAD("0..256, 0 = all CPUs");
        o->ctx.n_threads = (int)iv;
    } else if (IS("-c") || IS("--ctx-size")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 0, 1 << 24, &iv)) BAD("0..16777216");
        o->ctx.n_ctx = (int)iv;
    } else if (IS("-b") || IS("--batch-size")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 1, 4096, &iv)) BAD("1..4096");
        o->ctx.n_batch = (int)iv;
    } else if (IS("--max-kv-size")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 1, 1 << 24, &iv)) BAD("a positive count");
        o->ctx.max_kv_size = (int)iv;
    } else if (IS("--keep")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 0, 1 << 24, &iv)) BAD("a count >= 0");
        o->ctx.keep = (int)iv;
    } else if (IS("--kv-reserve")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 0, 1 << 20, &iv)) BAD("a count >= 0");
        o->ctx.kv_reserve = (int)iv;
    } else if (IS("--kv-type")) {
        const char *v = VAL();
        if (!v) return -1;
        if (strcmp(v, "f16") == 0) o->ctx.kv_type = STENO_KV_F16;
        else if (strcmp(v, "f32") == 0) o->ctx.kv_type = STENO_KV_F32;
        else BAD("f16 or f32");
    } else if (IS("--kv")) {
        const char *v = VAL();
        if (!v) return -1;
        static const char *const names[] = {"plain", "q8", "q4", "tq4", "tq3", "tq2"};
        int k = -1;
        for (int n = 0; n < 6; n++)
            if (strcmp(v, names[n]) == 0) k = n;
        if (k < 0) BAD("plain, q8, q4, tq4, tq3 or tq2");
        o->ctx.kv_quant = (steno_kv_quant)k;
    } else if (IS("--kv-group")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 32, 64, &iv) || (iv != 32 && iv != 64)) BAD("32 or 64");
        o->ctx.kv_group = (int)iv;
    } else if (IS("--kv-quant-start")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 0, 1 << 24, &iv)) BAD("a count >= 0");
        o->ctx.kv_quant_start = (int)iv;
    } else if (IS("--kv-key-bits")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 4, 8, &iv) || (iv != 4 && iv != 8)) BAD("4 or 8");
        o->ctx.kv_key_bits = (int)iv;
    } else if (IS("--kv-sink")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 0, 4096, &iv)) BAD("0..4096");
        o->ctx.kv_sink = (int)iv;
    } else if (IS("--kv-rotate") || IS("--kv-center")) {
        const int rot = IS("--kv-rotate");
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 0, 1, &iv)) BAD("1 or 0");
        if (rot) o->ctx.kv_rotate = (int)iv;
        else o->ctx.kv_center = (int)iv;
    } else if (IS("--compute")) {
        const char *v = VAL();
        if (!v) return -1;
        if (strcmp(v, "ggml") == 0) o->ctx.compute = STENO_LLM_COMPUTE_GGML;
        else if (strcmp(v, "f32") == 0) o->ctx.compute = STENO_LLM_COMPUTE_F32;
        else BAD("ggml or f32");
    } else if (IS("-n") || IS("--n-predict")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, -1, 1 << 24, &iv)) BAD("-1 or a count");
        o->n_predict = (int)iv;
    } else if (IS("--temp") || IS("--temperature")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_float(v, &fv) || fv < 0) BAD("a number >= 0");
        o->samp.temperature = (float)fv;
    } else if (IS("--top-k")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 0, 1 << 24, &iv)) BAD("a count >= 0");
        o->samp.top_k = (int)iv;
    } else if (IS("--top-p")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_float(v, &fv) || fv < 0 || fv > 1) BAD("0..1");
        o->samp.top_p = (float)fv;
    } else if (IS("--min-p")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_float(v, &fv) || fv < 0 || fv > 1) BAD("0..1");
        o->samp.min_p = (float)fv;
    } else if (IS("--repeat-penalty")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_float(v, &fv) || fv <= 0) BAD("a number > 0");
        o->samp.repeat_penalty = (float)fv;
    } else if (IS("--repeat-last-n")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, -1, 1 << 20, &iv)) BAD("-1 or a count");
        o->samp.penalty_last_n = (int)iv;
    } else if (IS("--presence-penalty")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_float(v, &fv)) BAD("a number");
        o->samp.presence_penalty = (float)fv;
    } else if (IS("--frequency-penalty")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_float(v, &fv)) BAD("a number");
        o->samp.frequency_penalty = (float)fv;
    } else if (IS("--logit-bias")) {
        const char *v = VAL();
        if (!v) return -1;
        const char *sgn = v + strspn(v, "0123456789");
        if (sgn == v || (*sgn != '+' && *sgn != '-')) BAD("ID+BIAS or ID-BIAS");
        char idbuf[32];
        size_t il = (size_t)(sgn - v);
        if (il >= sizeof idbuf) BAD("token id too long");
        memcpy(idbuf, v, il);
        idbuf[il] = '\0';
        double b;
        if (strcmp(sgn, "-inf") == 0) b = -INFINITY;
        else if (!parse_float(sgn, &b)) BAD("ID+BIAS or ID-BIAS");
        if (!parse_int(idbuf, 0, 1 << 24, &iv)) BAD("token id");
        if (o->samp.n_logit_bias >= 64) BAD("at most 64 biases");
        o->bias[o->samp.n_logit_bias].token = (int)iv;
        o->bias[o->samp.n_logit_bias].bias = (float)b;
        o->samp.n_logit_bias++;
        o->samp.logit_bias = o->bias;
    } else if (IS("--n-probs")) {
        const char *v = VAL();
        if (!v) return -1;
        if (!parse_int(v, 0, 100, &iv)) BAD("0..100");
        o->samp.n_probs = (int)iv;
    } else if (IS("-s") || IS("--seed")) {
        const char *v = VAL();
        if (!v) return -1;
        char *e;
        errno = 0;
        unsigned long long s = strtoull(v, &e, 10);
        if (errno || e == v || *e) BAD("an unsigned integer");
        o->samp.seed = (uint64_t)s;
        o->seed_given = 1;
    } else {
        return 0;
    }
    return 1;
#undef IS
#undef VAL
#undef BAD
}

static int llm_cli_load(const llm_cli_opts *o, steno_llm **m, steno_llm_ctx **c, steno_sampler **s) {
    *m = NULL;
    *c = NULL;
    *s = NULL;
    steno_llm_load_params lp = steno_llm_default_load_params();
    lp.tokenizer_path = o->tokenizer;
    if (steno_llm_load(o->model, &lp, m) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        return 1;
    }
    if (steno_llm_ctx_new(*m, &o->ctx, c) != STENO_OK) { /* e.g. a --kv kind the model's head_dim cannot take */
        fprintf(stderr, "steno: %s: %s\n", o->model, steno_errmsg());
        steno_llm_free(*m);
        *m = NULL;
        return 1;
    }
    steno_llm_info info;
    steno_llm_get_info(*m, &info);
    if (steno_sampler_new(&o->samp, info.n_vocab, s) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        steno_llm_ctx_free(*c);
        steno_llm_free(*m);
        *c = NULL;
        *m = NULL;
        return 1;
    }
    return 0;
}

int steno_llm_cli_open(int argc, char **argv, const char *verb, int (*extra)(void *user, int argc, char **argv, int i),
                       void *user, void (*usage)(FILE *f), steno_llm **m, steno_llm_ctx **c, steno_sampler **s,
                       int *n_predict, int *n_probs) {
    llm_cli_opts o;
    llm_cli_defaults(&o);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
            printf("steno %s\n", STENO_VERSION);
            return 0;
        }
        int k = extra ? extra(user, argc, argv, i) : 0;
        if (k < 0) return 2;
        if (k > 0) {
            i += k - 1;
            continue;
        }
        int r = llm_cli_parse_common(&o, argc, argv, &i, verb);
        if (r < 0) return 2;
        if (r == 0) {
            fprintf(stderr, "steno %s: unknown option '%s' (see 'steno %s --help')\n", verb, argv[i], verb);
            return 2;
        }
    }
    if (!o.model) {
        fprintf(stderr, "steno %s: no model (-m MODEL)\n", verb);
        return 2;
    }
    if (llm_cli_load(&o, m, c, s) != 0) return 1;
    *n_predict = o.n_predict;
    if (n_probs) *n_probs = o.samp.n_probs;
    return -1;
}

/* ------------------------------------------------------------------------------------------- */

typedef struct {
    const char *prompt;
    const char *prompt_file;
    int no_bos, special, echo, n_probs, verbose_prompt;
    steno_spec_params spec;
} gen_opts;

static void generate_usage(FILE *f) {
    fputs("usage: steno generate -m MODEL -p PROMPT [options]\n"
          "\n"
          "Generates text from PROMPT with a GGUF (llama, gemma3) or llama2.c model. The text goes to\n"
          "standard output; prompt and decode speeds (tokens/s) to standard error.\n"
          "\n"
          "prompt:\n"
          "  -p, --prompt TEXT        the prompt (\"\" = start from BOS only)\n"
          "  -f, --file PATH          read the prompt from a file\n"
          "      --no-bos             do not add the BOS token the model's tokenizer asks for\n"
          "      --special            parse control tokens written in the prompt (<|im_start|>, ...)\n"
          "      --echo               print the prompt before the generated text\n"
          "      --verbose-prompt     print the prompt's tokens to standard error\n"
          "\n"
          "speculative decoding (the text is identical to plain decoding's, at any temperature):\n"
          "      --draft-kind none|ngram  ngram: prompt lookup, the continuation of the latest earlier\n"
          "                           match of the last tokens (default none)\n"
          "      --num-draft-tokens N|adaptive  most draft tokens per round, 1..64 (default adaptive:\n"
          "                           up to 8, lengthened while drafts hold, 0 while they fail)\n"
          "      --ngram-min N, --ngram-max N  n-gram lengths tried, longest first (default 1, 4)\n"
          "\n"
          "many prompts at once: steno generate --parallel N -f PROMPTS.jsonl -m MODEL (see\n"
          "steno generate --parallel 1 --help)\n",
          f);
    llm_cli_common_usage(f);
}

static int gen_extra(void *user, int argc, char **argv, int i) {
    gen_opts *g = user;
    const char *a = argv[i];
    if (strcmp(a, "-p") == 0 || strcmp(a, "--prompt") == 0 || strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) {
        if (i + 1 >= argc) {
            fprintf(stderr, "steno generate: option %s needs a value\n", a);
            return -1;
        }
        if (a[1] == 'p' || strcmp(a, "--prompt") == 0) g->prompt = argv[i + 1];
        else g->prompt_file = argv[i + 1];
        return 2;
    }
    if (!strcmp(a, "--draft-kind") || !strcmp(a, "--num-draft-tokens") || !strcmp(a, "--ngram-min") ||
        !strcmp(a, "--ngram-max")) {
        if (i + 1 >= argc) {
            fprintf(stderr, "steno generate: option %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[i + 1];
        long n;
        if (!strcmp(a, "--draft-kind")) {
            if (!strcmp(v, "none")) g->spec.kind = STENO_DRAFT_NONE;
            else if (!strcmp(v, "ngram")) g->spec.kind = STENO_DRAFT_NGRAM;
            else {
                fprintf(stderr, "steno generate: invalid value for --draft-kind: '%s' (none or ngram)\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--num-draft-tokens") && !strcmp(v, "adaptive")) {
            g->spec.adaptive = 1;
            g->spec.n_draft = 8;
        } else if (!parse_int(v, 1, 64, &n)) {
            fprintf(stderr, "steno generate: invalid value for %s: '%s' (1..64%s)\n", a, v,
                    !strcmp(a, "--num-draft-tokens") ? " or adaptive" : "");
            return -1;
        } else if (!strcmp(a, "--num-draft-tokens")) {
            g->spec.adaptive = 0;
            g->spec.n_draft = (int)n;
        } else if (!strcmp(a, "--ngram-min")) g->spec.ngram_min = (int)n;
        else g->spec.ngram_max = (int)n;
        return 2;
    }
    if (strcmp(a, "--no-bos") == 0) { g->no_bos = 1; return 1; }
    if (strcmp(a, "--special") == 0) { g->special = 1; return 1; }
    if (strcmp(a, "--echo") == 0) { g->echo = 1; return 1; }
    if (strcmp(a, "--verbose-prompt") == 0) { g->verbose_prompt = 1; return 1; }
    return 0;
}

static int print_piece(void *user, int token, const char *piece, int n) {
    (void)user;
    (void)token;
    if (n > 0) fwrite(piece, 1, (size_t)n, stdout);
    fflush(stdout);
    return 0;
}

static char *slurp(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EISDIR; /* fopen would succeed on a directory and read nothing */
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) { free(b); b = NULL; break; }
            b = nb;
        }
    }
    fclose(f);
    if (b) b[n] = '\0';
    return b;
}

int steno_cmd_generate(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--parallel") == 0 && strcmp(argv[i - 1], "-p") != 0 && strcmp(argv[i - 1], "--prompt") != 0)
            return steno_cmd_generate_batch(argc, argv);
    gen_opts g = {0};
    g.spec = steno_spec_default_params();
    steno_llm *m;
    steno_llm_ctx *c;
    steno_sampler *s;
    int n_predict;
    int rc = steno_llm_cli_open(argc, argv, "generate", gen_extra, &g, generate_usage, &m, &c, &s, &n_predict,
                                &g.n_probs);
    if (rc >= 0) return rc;
    char *owned = NULL;
    const char *prompt = g.prompt;
    if (g.spec.ngram_max < g.spec.ngram_min) {
        fprintf(stderr, "steno generate: --ngram-min %d is above --ngram-max %d (default 4: raise it too)\n",
                g.spec.ngram_min, g.spec.ngram_max);
        rc = 2;
        goto out;
    }
    if (g.spec.kind != STENO_DRAFT_NONE && g.n_probs > 0)
        fprintf(stderr, "steno generate: --n-probs decodes token by token: speculation (--draft-kind) is off\n");
    if (g.prompt_file) {
        owned = slurp(g.prompt_file);
        if (!owned) {
            fprintf(stderr, "steno: %s: %s\n", g.prompt_file, strerror(errno));
            rc = 1;
            goto out;
        }
        prompt = owned;
    }
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
    if (g.n_probs > 0) {
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
            for (int k = 0; k < g.n_probs && k < info.n_vocab; k++) fprintf(stderr, " %d:%.4f", top[k].token, top[k].logprob);
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
        fprintf(stderr,
                "steno: speculation (ngram): %d of %d drafted tokens accepted (%.1f %%) in %d rounds; %d target "
                "passes for %d tokens\n",
                ss.accepted, ss.drafted, ss.drafted ? 100.0 * ss.accepted / ss.drafted : 0.0, ss.rounds,
                ss.target_calls, st.n_generated);
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
    return rc;
}
