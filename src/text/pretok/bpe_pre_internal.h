/* bpe_pre_internal.h — the pre-type table shared by bpe_pre_types.c (data) and bpe_pre.c. */
#ifndef STENO_TEXT_BPE_PRE_INTERNAL_H
#define STENO_TEXT_BPE_PRE_INTERNAL_H

#include <stddef.h>

#include "text/pretok/bpe_pre.h"

typedef struct {
    const char *names[12]; /* tokenizer.ggml.pre values, NULL-terminated */
    const char *exprs[7];  /* llama.cpp's expressions, NULL-terminated */
    int ignore_merges;
    int add_bos;
    const char *excluded; /* why steno refuses this type, or NULL */
    int raw;              /* TEXT_PRE_* (bpe_pre.h) */
} text_bpe_pre_def;

extern const text_bpe_pre_def text_bpe_pre_defs[];
extern const int text_bpe_pre_n_defs;

#endif
