/* llm_cli.h — what the LLM verbs (generate, chat, perplexity) share: the model, context, KV-cache
 * and sampling options (one option table, cli/generate_cmd.c) and loading the model with them. */
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
} llm_cli_opts;

/** The shared rows; a verb's spec names it as .shared (its own rows replace shared ones). */
extern const steno_opts_spec steno_llm_cli_spec;

/** Parses argv with spec (the verb's rows into verb_opts, the shared ones into *o, which starts
 *  from the defaults), then loads the model and creates the context and sampler. Returns -1 on
 *  success (*m, *c, *s are the caller's to free), else the exit status: 0 after the help or
 *  version, 2 after a usage error, 1 when the model cannot be loaded (one line on stderr). */
int steno_llm_cli_open(int argc, char **argv, const steno_opts_spec *spec, void *verb_opts, llm_cli_opts *o,
                       steno_llm **m, steno_llm_ctx **c, steno_sampler **s);

/** --num-draft-tokens N|adaptive (generate, serve): adaptive, or N in 1..max; false if neither. */
bool steno_llm_cli_num_draft(const char *v, steno_spec_params *sp, int max);

#endif
