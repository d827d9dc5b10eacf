/* convert_internal.h — what the converter's writers share (convert.c: plan, safetensors, JSON
 * side files, ggml, the driver; convert_ct2.c: CTranslate2 model.bin); not a public header. */
#ifndef STENO_WHISPER_CONVERT_INTERNAL_H
#define STENO_WHISPER_CONVERT_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "formats/wtab/wtab.h"
#include "formats/whisper_config.h"
#include "text/whisper_bpe.h"

/* One output tensor: parts stacked by rows (a NULL part is zeros of part_elems), converted to
 * dtype; conv_t: an MLX conv weight, written [out][3][in] from the openai [out][in][3]. */
typedef struct ovar {
    char name[256];
    wt_dtype dtype;
    int rank;
    int64_t dims[4];
    const wt_tensor *part[3];
    int n_parts;
    int64_t part_elems;
    int conv_t;
    uint8_t scalar[4]; /* CTranslate2 scalars: raw bytes, dtype given by ct2_dtype */
    int ct2_dtype;     /* -1: from dtype */
} ovar;

typedef struct conv {
    const wtab *w;
    const steno_tokenizer *tok;
    const whisper_config *cfg;
    const char *src;
    wt_dtype fdt; /* the output float type */
    ovar *v;
    int n, cap;
    steno_status st;
} conv;

/* Helpers of convert.c (cv_ prefix): see their definitions there. */
ovar *cv_add_var(conv *c, const char *name, wt_dtype dt, int rank, const int64_t *dims);
int64_t cv_elems(const ovar *o);
wt_dtype cv_float_of(const conv *c, const wt_tensor *t);
wt_dtype cv_float_of_parts(const conv *c, const wt_tensor *const *p, int n);
ovar *cv_add_same(conv *c, const wt_tensor *t, const char *name, wt_dtype dt);
size_t cv_var_bytes(const ovar *o);
void cv_put_var(conv *c, FILE *f, const char *path, const ovar *o);
void cv_write_json(conv *c, const char *path, cJSON *j);
cJSON *cv_int_array(const int *v, int n);
cJSON *cv_pairs_array(const int (*v)[2], int n);
void cv_write_tokenizer_json(conv *c, const char *dir);
const wt_tensor *cv_need(conv *c, const char *name);

/** The CTranslate2 folder (model.bin, config.json, vocabulary.txt, tokenizer.json) into dir. */
void cv_write_ct2(conv *c, const char *dir);

#endif
