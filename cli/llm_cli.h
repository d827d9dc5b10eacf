/* llm_cli.h — what the LLM verbs (generate, chat, perplexity) share: the model, context, KV-cache
 * and sampling options (one option table, cli/llm_cli.c) and loading the model with them. */
#ifndef STENO_CLI_LLM_CLI_H
#define STENO_CLI_LLM_CLI_H

#include <stdbool.h>

#include "options.h"
#include "steno_llm.h"

typedef struct llm_cli_opts {
    const char *model;
    const char *tokenizer;
    steno_llm_ctx_params ctx;
    steno_sampler_params samp;
    steno_logit_bias bias[64]; /* samp.logit_bias points here */
    int n_predict;             /* -n; -1: until end of text or context */
    bool kv_given;             /* --kv was given */
    bool ignore_eos;           /* --ignore-eos: every end-of-generation token banned (bias -inf) */
} llm_cli_opts;

/** The shared rows; a verb's spec names it as .shared (its own rows replace shared ones). */
extern const steno_opts_spec steno_llm_cli_spec;

/** Parses argv with spec (the verb's rows into verb_opts, the shared ones into *o, which starts
 *  from the defaults) and checks that a model is given. Returns -1 to go on, else the exit status:
 *  0 after the help or version, 2 after a usage error (one line on stderr). */
int steno_llm_cli_parse(int argc, char **argv, const steno_opts_spec *spec, void *verb_opts, llm_cli_opts *o);

/** Loads o's model and creates the context and sampler: 0 (*m, *c, *s the caller's to free), 1
 *  when the model cannot be loaded, 2 for a usage error found with the model (one line on stderr). */
int steno_llm_cli_load(const llm_cli_opts *o, steno_llm **m, steno_llm_ctx **c, steno_sampler **s);

/** steno_llm_cli_parse, then steno_llm_cli_load. Parses argv with spec (the verb's rows into verb_opts, the shared ones into *o, which starts
 *  from the defaults), then loads the model and creates the context and sampler. Returns -1 on
 *  success (*m, *c, *s are the caller's to free), else the exit status: 0 after the help or
 *  version, 2 after a usage error, 1 when the model cannot be loaded (one line on stderr). */
int steno_llm_cli_open(int argc, char **argv, const steno_opts_spec *spec, void *verb_opts, llm_cli_opts *o,
                       steno_llm **m, steno_llm_ctx **c, steno_sampler **s);

/** --num-draft-tokens N|adaptive (generate, serve): adaptive, or N in 1..max; false if neither. */
bool steno_llm_cli_num_draft(const char *v, steno_spec_params *sp, int max);

/** The speculative-decoding options' parser of --num-draft-tokens (dst: the n_draft field). */
bool steno_llm_cli_parse_num_draft(const char *v, void *dst, steno_opt_error *err);

/* Which speculative options were given (steno_opt.given), so that one that does not apply to the
 * drafter is refused even when its value is the default. */
typedef struct steno_llm_spec_given {
    bool kind, draft_model, draft_layers, n_draft, ngram_min, ngram_max, verify;
} steno_llm_spec_given;

/** The speculative-decoding rows of generate and chat, stored in a struct TYPE's steno_spec_params
 *  SPEC, const char * DM (the --draft-model path) and steno_llm_spec_given GIVEN. */
#define STENO_LLM_SPEC_OPTIONS(TYPE, SPEC, DM, GIVEN)                                                            \
    {STENO_OPT_SECTION, .help = "speculative decoding (the text is identical to plain decoding's, at any "       \
                                "temperature, with --spec-verify exact):"},                                     \
    {STENO_OPT_CHOICE, "--draft-kind", NULL, STENO_OPT_AT(TYPE, SPEC.kind), .choices = "none|ngram|model|layers", \
     .values = (const int[]){STENO_DRAFT_NONE, STENO_DRAFT_NGRAM, STENO_DRAFT_MODEL, STENO_DRAFT_LAYERS},         \
     .def = "none", .given = STENO_OPT_AT(TYPE, GIVEN.kind),                                                     \
     .help = "ngram: prompt lookup, the continuation of the latest earlier match of the last tokens; model: "   \
             "--draft-model's greedy tokens; layers: the model's first --draft-layers layers and its output head"}, \
    {STENO_OPT_CUSTOM, "--draft-model", "PATH", STENO_OPT_AT(TYPE, DM), .parse = steno_opts_parse_nonempty,      \
     .expect = "a path", .given = STENO_OPT_AT(TYPE, GIVEN.draft_model),                                         \
     .help = "the draft of --draft-kind model: a model with the same vocabulary (implies --draft-kind model; "   \
             "tools/gguf_draft.py makes one)"},                                                                  \
    {STENO_OPT_INT, "--draft-layers", "N", STENO_OPT_AT(TYPE, SPEC.draft_layers), STENO_OPT_RANGE(1, 1024),      \
     .given = STENO_OPT_AT(TYPE, GIVEN.draft_layers), .def = "a quarter of the layers",                          \
     .help = "layers that draft with --draft-kind layers (fewer than the model has; implies --draft-kind layers)"}, \
    {STENO_OPT_CUSTOM, "--num-draft-tokens", "N|adaptive", STENO_OPT_AT(TYPE, SPEC.n_draft),                    \
     .parse = steno_llm_cli_parse_num_draft, .expect = "1..64 or adaptive",                                      \
     .given = STENO_OPT_AT(TYPE, GIVEN.n_draft),                                                                 \
     .def = "adaptive: up to 8, lengthened while drafts hold, 0 while they fail", .help = "most draft tokens per round"}, \
    {STENO_OPT_INT, "--ngram-min", "N", STENO_OPT_AT(TYPE, SPEC.ngram_min), STENO_OPT_RANGE(1, 64), .def = "2",   \
     .given = STENO_OPT_AT(TYPE, GIVEN.ngram_min), .help = "shortest n-gram tried (longest first; --draft-kind ngram)"}, \
    {STENO_OPT_INT, "--ngram-max", "N", STENO_OPT_AT(TYPE, SPEC.ngram_max), STENO_OPT_RANGE(1, 64), .def = "4",   \
     .given = STENO_OPT_AT(TYPE, GIVEN.ngram_max), .help = "longest n-gram tried (--draft-kind ngram)"},         \
    {STENO_OPT_CHOICE, "--spec-verify", NULL, STENO_OPT_AT(TYPE, SPEC.verify), .choices = "exact|rejection",      \
     .values = (const int[]){STENO_SPEC_VERIFY_EXACT, STENO_SPEC_VERIFY_REJECTION}, .def = "exact",              \
     .given = STENO_OPT_AT(TYPE, GIVEN.verify),                                                                  \
     .help = "exact: plain decoding's sampler on each position (identical text); rejection: Leviathan et al.'s " \
             "rule (the model's distribution, not its text; drafts of --draft-kind model|layers are then sampled)"}

/** Checks the speculative options after parsing, before any model is loaded: sets sp->kind from
 *  --draft-model / --draft-layers when --draft-kind is not given, refuses an option that does not
 *  apply to the drafter (exit 2, one line naming both options), and resolves --draft-model (exit 1,
 *  one line "steno VERB: --draft-model: REASON"). Returns 0, 1 or 2. */
int steno_llm_cli_spec_check(const char *verb, steno_spec_params *sp, const steno_llm_spec_given *given,
                             const char *draft_model);

/** After steno_llm_cli_spec_check and the target's load: checks --draft-layers against the target m
 *  (fewer than its layers: else exit 2, one line naming the model's layer count, as `steno
 *  transcribe` does), refuses --kv-reserve 0 with a drafter where a ring cache (cp->max_kv_size,
 *  or the model's sliding-window layers) could not roll a rejected draft back (exit 2: the
 *  library would draft nothing), and loads --draft-model into *dm (NULL when none): 0 ok, 2 those
 *  usage errors, 1 a draft model that cannot be loaded (one line on stderr, "steno VERB:
 *  --draft-model: ..."). */
int steno_llm_cli_spec_setup(const char *verb, const steno_llm *m, const char *model_name,
                             const steno_llm_ctx_params *cp, steno_spec_params *sp, const char *draft_model,
                             steno_llm **dm);

/** The acceptance line on stderr after a speculative generation. */
void steno_llm_cli_spec_report(const steno_spec_params *sp, const steno_spec_stats *ss, int n_generated);

#endif
