/* llm_cli.c — the options `steno generate`, `steno chat` and `steno perplexity` share
 * (cli/llm_cli.h): the model, context and sampling flags, loading the model / context / sampler
 * they name, and the speculative-decoding flags' checks, setup and report.
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

static bool parse_kv(const char *v, void *dst, steno_opt_error *err) {
    (void)err;
    static const char *const names[] = {"plain", "q8", "q4", "tq4", "tq3", "tq2"};
    llm_cli_opts *o = (llm_cli_opts *)((char *)dst - offsetof(llm_cli_opts, ctx.kv_quant));
    for (int k = 0; k < 6; k++) {
        if (strcmp(v, names[k]) != 0) continue;
        o->ctx.kv_quant = (steno_kv_quant)k;
        o->kv_given = true;
        return true;
    }
    return false;
}

/* ID+BIAS, ID-BIAS or ID-inf */
static bool parse_logit_bias(const char *v, void *dst, steno_opt_error *err) {
    llm_cli_opts *o = (llm_cli_opts *)((char *)dst - offsetof(llm_cli_opts, bias));
    const char *sgn = v + strspn(v, "0123456789");
    if (sgn == v || (*sgn != '+' && *sgn != '-') || sgn - v > 8) return false;
    char *end;
    errno = 0;
    const long id = strtol(v, &end, 10);
    double b = -INFINITY;
    if (strcmp(sgn, "-inf") != 0) {
        b = strtod(sgn, &end);
        if (end == sgn || *end || errno || isnan(b)) return false;
    }
    if (id > 1 << 24) {
        snprintf(err->msg, sizeof err->msg, "token id %ld is above %d", id, 1 << 24);
        return false;
    }
    if (o->samp.n_logit_bias >= 64) {
        snprintf(err->msg, sizeof err->msg, "at most 64 biases");
        return false;
    }
    o->bias[o->samp.n_logit_bias].token = (int)id;
    o->bias[o->samp.n_logit_bias].bias = (float)b;
    o->samp.n_logit_bias++;
    o->samp.logit_bias = o->bias;
    return true;
}

_Static_assert(sizeof(steno_kv_type) == sizeof(int) && sizeof(steno_llm_compute) == sizeof(int) &&
               sizeof(steno_draft_kind) == sizeof(int) && sizeof(steno_spec_verify) == sizeof(int),
               "choices are stored as int");

#define AT(field) STENO_OPT_AT(llm_cli_opts, field)
#define COUNT(lo, hi) STENO_OPT_RANGE(lo, hi)
static const steno_opt LLM_OPTIONS[] = {
    {STENO_OPT_SECTION, .help = "model:"},
    {STENO_OPT_STRING, "-m|--model", "MODEL", AT(model),
     .help = ".gguf file, llama2.c .bin, or a known name (smollm2, gemma3, qwen2.5-coder-0.5b) in the model cache "
             "(scripts/fetch_llm_models.sh)"},
    {STENO_OPT_STRING, "--tokenizer", "PATH", AT(tokenizer),
     .help = "llama2.c tokenizer", .def = "tokenizer.bin or tok<vocab>.bin beside MODEL"},
    {STENO_OPT_INT, "-t|--threads", "N", AT(ctx.n_threads), COUNT(0, 256), .def = "0 = all CPUs", .help = "threads"},
    {STENO_OPT_INT, "-c|--ctx-size", "N", AT(ctx.n_ctx), COUNT(0, 1 << 24), .def = "0 = the model's",
     .help = "context length in tokens"},
    {STENO_OPT_INT, "-b|--batch-size", "N", AT(ctx.n_batch), COUNT(1, 4096), .def = "256",
     .help = "prompt tokens per forward pass"},
    {STENO_OPT_SECTION, .help = "KV cache:"},
    {STENO_OPT_INT, "--max-kv-size", "N", AT(ctx.max_kv_size), COUNT(1, 1 << 24), .def = "plain",
     .help = "rotating cache of N slots for every global layer"},
    {STENO_OPT_INT, "--keep", "K", AT(ctx.keep), COUNT(0, 1 << 24), .def = "0",
     .help = "tokens at the start the rotating cache never evicts"},
    {STENO_OPT_INT, "--kv-reserve", "N", AT(ctx.kv_reserve), COUNT(0, 1 << 20), .def = "32",
     .help = "history kept beyond the window for rollback"},
    {STENO_OPT_CHOICE, "--kv-type", NULL, AT(ctx.kv_type), .choices = "f16|f32",
     .values = (const int[]){STENO_KV_F16, STENO_KV_F32}, .def = "f32 for llama2.c, f16 for GGUF",
     .help = "cache element type"},
    {STENO_OPT_CUSTOM, "--kv", "plain|q8|q4|tq4|tq3|tq2", AT(ctx.kv_quant), .parse = parse_kv,
     .expect = "plain, q8, q4, tq4, tq3 or tq2", .def = "plain",
     .help = "q8 | q4: MLX affine groups, keys and values; tq4 | tq3 | tq2: TurboQuant, 8-bit keys, 4/3/2-bit "
             "rotated values"},
    {STENO_OPT_CHOICE, "--kv-group", NULL, AT(ctx.kv_group), .choices = "32|64", .values = (const int[]){32, 64},
     .def = "32; 64 = mlx-lm's", .help = "q8/q4 group size"},
    {STENO_OPT_INT, "--kv-quant-start", "N", AT(ctx.kv_quant_start), COUNT(0, 1 << 24), .def = "0",
     .help = "keep the first N tokens unquantized, then convert"},
    {STENO_OPT_CHOICE, "--kv-key-bits", NULL, AT(ctx.kv_key_bits), .choices = "8|4", .values = (const int[]){8, 4},
     .def = "8", .help = "tq*: key bits"},
    {STENO_OPT_INT, "--kv-sink", "N", AT(ctx.kv_sink), COUNT(0, 4096), .def = "4; 0 = as mlx-lm",
     .help = "q8..tq2 (no effect on plain): the first N tokens also kept unquantized and read by attention "
             "(attention sinks)"},
    {STENO_OPT_CHOICE, "--kv-rotate", NULL, AT(ctx.kv_rotate), .choices = "1|0", .values = (const int[]){1, 0},
     .def = "1 for power-of-two head_dim; 0 = mlx-lm's codes",
     .help = "q8..tq2: Walsh-Hadamard-rotate keys (and q8/q4 values) before quantizing them"},
    {STENO_OPT_CHOICE, "--kv-center", NULL, AT(ctx.kv_center), .choices = "1|0", .values = (const int[]){1, 0},
     .def = "1; 0 = raw keys",
     .help = "q8..tq2: quantize keys minus the mean key of the first quantized tokens"},
    {STENO_OPT_CHOICE, "--compute", NULL, AT(ctx.compute), .choices = "ggml|f32|fast",
     .values = (const int[]){STENO_LLM_COMPUTE_GGML, STENO_LLM_COMPUTE_F32, STENO_LLM_COMPUTE_FAST}, .def = "ggml",
     .help = "arithmetic: llama.cpp's (q8 activations), f32 evaluation precision (dequantized weights, f32 "
             "activations), or fast (Lab: q4_0/q4_1/q8_0/q4_K/q5_0/q6_K weights repacked 8 rows at a time, exact block dots; "
             "docs/LLM.md)"},
    {STENO_OPT_SECTION, .help = "sampling (llama.cpp's chain: bias, penalties, top-k, top-p, min-p, temperature):"},
    {STENO_OPT_INT, "-n|--n-predict", "N", AT(n_predict), COUNT(-1, 1 << 24),
     .def = "-1: until end of text / context", .help = "tokens to generate"},
    {STENO_OPT_FLOAT, "--temp|--temperature", "T", AT(samp.temperature), STENO_OPT_MIN(0), .def = "0.8",
     .help = "temperature; 0 = greedy"},
    {STENO_OPT_INT, "--top-k", "K", AT(samp.top_k), COUNT(0, 1 << 24), .def = "40; 0 = off", .help = "top-k"},
    {STENO_OPT_FLOAT, "--top-p", "P", AT(samp.top_p), STENO_OPT_RANGE(0, 1), .def = "0.95; 1 = off",
     .help = "top-p"},
    {STENO_OPT_FLOAT, "--min-p", "P", AT(samp.min_p), STENO_OPT_RANGE(0, 1), .def = "0.05; 0 = off",
     .help = "min-p"},
    {STENO_OPT_FLOAT, "--repeat-penalty", "R", AT(samp.repeat_penalty), STENO_OPT_ABOVE(0), .def = "1.0 = off",
     .help = "repeat penalty"},
    {STENO_OPT_INT, "--repeat-last-n", "N", AT(samp.penalty_last_n), COUNT(-1, 1 << 20), .def = "64; -1 = all",
     .help = "tokens the penalties look at"},
    {STENO_OPT_FLOAT, "--presence-penalty", "P", AT(samp.presence_penalty), .def = "0", .help = "presence penalty"},
    {STENO_OPT_FLOAT, "--frequency-penalty", "P", AT(samp.frequency_penalty), .def = "0",
     .help = "frequency penalty"},
    {STENO_OPT_CUSTOM, "--logit-bias", "ID(+|-)B", AT(bias), .parse = parse_logit_bias,
     .expect = "ID+BIAS or ID-BIAS", .help = "add B to token ID's logit (repeatable; ID-inf bans it)"},
    {STENO_OPT_FLAG, "--ignore-eos", .at = AT(ignore_eos),
     .help = "never end at an end-of-generation token (its logit set to -inf, as llama.cpp's --ignore-eos): "
             "exactly -n tokens, for benchmarks"},
    {STENO_OPT_U64, "-s|--seed", "S", AT(samp.seed), .def = "time",
     .help = "RNG seed; same seed, same text"},
    {STENO_OPT_INT, "--n-probs", "N", AT(samp.n_probs), COUNT(0, 100),
     .help = "print the top N log-probabilities of each token to standard error"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
#undef AT

const steno_opts_spec steno_llm_cli_spec = {.opts = LLM_OPTIONS, .n_opts = sizeof LLM_OPTIONS / sizeof LLM_OPTIONS[0]};

int steno_llm_cli_load(const llm_cli_opts *o, steno_llm **m, steno_llm_ctx **c, steno_sampler **s) {
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
    steno_sampler_params sp = o->samp;
    steno_logit_bias bias[64];
    memcpy(bias, o->bias, sizeof bias);
    for (int t = 0; o->ignore_eos && t < info.n_vocab; t++) {
        if (!steno_llm_is_eog(*m, t)) continue;
        if (sp.n_logit_bias >= 64) {
            fprintf(stderr, "steno: --ignore-eos: more than 64 biases with the model's end tokens\n");
            steno_llm_ctx_free(*c);
            steno_llm_free(*m);
            *c = NULL;
            *m = NULL;
            return 2;
        }
        bias[sp.n_logit_bias].token = t;
        bias[sp.n_logit_bias++].bias = -INFINITY;
        sp.logit_bias = bias;
    }
    if (steno_sampler_new(&sp, info.n_vocab, s) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        steno_llm_ctx_free(*c);
        steno_llm_free(*m);
        *c = NULL;
        *m = NULL;
        return 1;
    }
    return 0;
}

int steno_llm_cli_parse(int argc, char **argv, const steno_opts_spec *spec, void *verb_opts, llm_cli_opts *o) {
    memset(o, 0, sizeof *o);
    o->ctx = steno_llm_ctx_default_params();
    o->samp = steno_sampler_default_params();
    o->samp.seed = (uint64_t)time(NULL);
    o->n_predict = -1;
    const int rc = steno_opts_parse_shared(spec, verb_opts, o, argc, argv);
    if (rc >= 0) return rc;
    if (!o->model) {
        fprintf(stderr, "steno %s: no model (-m MODEL)\n", spec->verb);
        return 2;
    }
    return -1;
}

int steno_llm_cli_open(int argc, char **argv, const steno_opts_spec *spec, void *verb_opts, llm_cli_opts *o,
                       steno_llm **m, steno_llm_ctx **c, steno_sampler **s) {
    *m = NULL;
    *c = NULL;
    *s = NULL;
    const int rc = steno_llm_cli_parse(argc, argv, spec, verb_opts, o);
    if (rc >= 0) return rc;
    const int lrc = steno_llm_cli_load(o, m, c, s);
    return lrc != 0 ? lrc : -1;
}

bool steno_llm_cli_num_draft(const char *v, steno_spec_params *sp, int max) {
    if (strcmp(v, "adaptive") == 0) {
        sp->adaptive = 1;
        sp->n_draft = 8;
        return true;
    }
    char *end;
    errno = 0;
    const long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < 1 || n > max) return false;
    sp->adaptive = 0;
    sp->n_draft = (int)n;
    return true;
}

bool steno_llm_cli_parse_num_draft(const char *v, void *dst, steno_opt_error *err) {
    (void)err;
    return steno_llm_cli_num_draft(v, (steno_spec_params *)((char *)dst - offsetof(steno_spec_params, n_draft)), 64);
}

static const char *const DRAFT_KIND_NAMES[] = {"none", "ngram", "model", "layers"};

int steno_llm_cli_spec_check(const char *verb, steno_spec_params *sp, const steno_llm_spec_given *given,
                             const char *draft_model) {
    /* --draft-model and --draft-layers name their drafter; an option that does not apply to the
     * drafter (or to none) would be silently ignored, so it is refused */
    if (!given->kind && given->draft_model) sp->kind = STENO_DRAFT_MODEL;
    else if (!given->kind && given->draft_layers) sp->kind = STENO_DRAFT_LAYERS;
    const char *kind = DRAFT_KIND_NAMES[sp->kind];
    if (given->draft_layers && sp->kind != STENO_DRAFT_LAYERS) {
        fprintf(stderr, "steno %s: --draft-layers is for --draft-kind layers, not %s\n", verb, kind);
        return 2;
    }
    if (given->draft_model && sp->kind != STENO_DRAFT_MODEL) {
        fprintf(stderr, "steno %s: --draft-model is for --draft-kind model, not %s\n", verb, kind);
        return 2;
    }
    if (sp->kind == STENO_DRAFT_NONE) {
        const char *set = given->verify      ? "--spec-verify"
                          : given->n_draft   ? "--num-draft-tokens"
                          : given->ngram_min ? "--ngram-min"
                          : given->ngram_max ? "--ngram-max"
                                             : NULL;
        if (set) {
            const int ngram_only = !given->verify && !given->n_draft; /* set is --ngram-min/--ngram-max */
            fprintf(stderr, "steno %s: %s needs a drafter: --draft-kind %s\n", verb, set,
                    ngram_only ? "ngram" : "ngram|model|layers");
            return 2;
        }
    }
    if ((given->ngram_min || given->ngram_max) && sp->kind != STENO_DRAFT_NGRAM) {
        fprintf(stderr, "steno %s: %s is for --draft-kind ngram, not %s\n", verb,
                given->ngram_min ? "--ngram-min" : "--ngram-max", kind);
        return 2;
    }
    /* --ngram-max 1 alone asks for one-token matches: the default minimum (2) follows it down */
    if (!given->ngram_min && sp->ngram_max < sp->ngram_min) sp->ngram_min = sp->ngram_max;
    if (sp->ngram_max < sp->ngram_min) {
        fprintf(stderr, "steno %s: --ngram-min %d is above --ngram-max %d%s\n", verb, sp->ngram_min, sp->ngram_max,
                given->ngram_max ? "" : " (the default: raise it too)");
        return 2;
    }
    if (sp->kind != STENO_DRAFT_MODEL) return 0;
    if (!draft_model) {
        fprintf(stderr, "steno %s: --draft-kind model needs --draft-model PATH\n", verb);
        return 2;
    }
    char path[4096];
    if (steno_llm_resolve(draft_model, path, sizeof path) != STENO_OK) { /* before the target model loads */
        fprintf(stderr, "steno %s: --draft-model: %s\n", verb, steno_errmsg());
        return 1;
    }
    return 0;
}

int steno_llm_cli_spec_setup(const char *verb, const steno_llm *m, const char *model_name,
                             const steno_llm_ctx_params *cp, steno_spec_params *sp, const char *draft_model,
                             steno_llm **dm) {
    *dm = NULL;
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    if (sp->kind != STENO_DRAFT_NONE && cp->kv_reserve == 0 && (cp->max_kv_size > 0 || info.sliding_window > 0)) {
        /* a ring keeps kv_reserve tokens of history to undo a rejected draft: with none, nothing is drafted */
        fprintf(stderr,
                "steno %s: --kv-reserve 0: %s keeps no history to roll a rejected draft back (%s); give --kv-reserve "
                ">= 1 (default 32) or no --draft-kind (see 'steno %s --help')\n",
                verb, model_name,
                cp->max_kv_size > 0 ? "--max-kv-size makes its cache a ring" : "its sliding-window layers are rings",
                verb);
        return 2;
    }
    if (sp->kind == STENO_DRAFT_LAYERS && sp->draft_layers > 0) {
        if (sp->draft_layers >= info.n_layer) {
            fprintf(stderr, "steno %s: --draft-layers %d: model %s has %d layers (1..%d draft) (see 'steno %s --help')\n",
                    verb, sp->draft_layers, model_name, info.n_layer, info.n_layer - 1, verb);
            return 2;
        }
    }
    if (sp->kind != STENO_DRAFT_MODEL || !draft_model) return 0;
    steno_llm_load_params lp = steno_llm_default_load_params();
    if (steno_llm_load(draft_model, &lp, dm) != STENO_OK) {
        fprintf(stderr, "steno %s: --draft-model: %s\n", verb, steno_errmsg());
        return 1;
    }
    sp->draft_model = *dm;
    return 0;
}

void steno_llm_cli_spec_report(const steno_spec_params *sp, const steno_spec_stats *ss, int n_generated) {
    static const char *const kinds[] = {"none", "ngram", "model", "layers"};
    fprintf(stderr,
            "steno: speculation (%s%s): %d of %d drafted tokens accepted (%.1f %%) in %d rounds; %d target passes for "
            "%d tokens\n",
            kinds[sp->kind], sp->verify == STENO_SPEC_VERIFY_REJECTION ? ", rejection" : "", ss->accepted, ss->drafted,
            ss->drafted ? 100.0 * ss->accepted / ss->drafted : 0.0, ss->rounds, ss->target_calls, n_generated);
}
