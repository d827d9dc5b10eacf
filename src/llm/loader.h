/* loader.h — reading a GGUF LLM into llm/model.h's structs: the keys every architecture shares, the
 * architecture's own keys (its registry row's hook, llm/arch.h), every tensor checked against the
 * row's roles and shapes, and the vocabulary. Keys as llama.cpp's llama-model.cpp load_hparams. */
#ifndef STENO_LLM_LOADER_H
#define STENO_LLM_LOADER_H

#include <stdint.h>

#include "llm/model.h"

struct gguf_file;

/** The state of one load; the getters below name the file in their errors. */
typedef struct llm_loader {
    steno_llm *m;
    const char *fn;       /* the file's path, for messages */
    const char *prefix;   /* the architecture's key prefix (general.architecture) */
    uint8_t *used;        /* [n_tensors]: claimed by a role */
    char key[256];
} llm_loader;

/** "<prefix>.<suffix>" in g->key. */
const char *llm_key(llm_loader *g, const char *suffix);

/** <prefix>.suffix as an int in [lo, hi]: def when absent and def >= 0, else an error; a per-layer
 *  array whose entries all agree counts as one value. */
steno_status llm_get_int(llm_loader *g, const char *suffix, int def, int lo, int hi, int *out);
/** <prefix>.suffix as a finite float; def when absent unless required. */
steno_status llm_get_float(llm_loader *g, const char *suffix, double def, int required, float *out);
/** <prefix>.suffix as a bool or integer (0/1); def when absent. */
steno_status llm_get_bool(llm_loader *g, const char *suffix, int def, int *out);

/** A 2-D weight named `name` of shape [ne0 (row length)][ne1 rows]; absent is an error only when
 *  required (then *out stays zeroed). Claims the tensor. */
steno_status llm_get_mat(llm_loader *g, const char *name, int64_t ne0, int64_t ne1, int required, steno_mat *out);
/** A 3-D weight [ne0][ne1][ne2] (one [ne0][ne1] matrix per expert, ne2 of them) as one steno_mat of
 *  ne1 rows whose experts follow one another (expert e at data + e·ne1·row_bytes). Claims it. */
steno_status llm_get_mat3(llm_loader *g, const char *name, int64_t ne0, int64_t ne1, int64_t ne2, int required,
                          steno_mat *out);
/** A 1-D vector of n values, as float32 (converted and owned by the model when stored otherwise);
 *  *out NULL when absent and not required. Claims the tensor. */
steno_status llm_get_vec(llm_loader *g, const char *name, int64_t n, int required, const float **out);
/** The number of values of tensor `name` when it is 1-D, 0 when absent, -1 when not 1-D. */
int64_t llm_vec_len(llm_loader *g, const char *name);

/** Loads m (m->gguf open, m->path set) by its general.architecture: a registry row, or the generic
 *  tier when the name is not in the table (a one-line notice on stderr). Errors name the file and
 *  the reason; the caller frees m on failure. */
steno_status llm_load_gguf(steno_llm *m);

#endif
