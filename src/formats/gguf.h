/* gguf.h — mmap'd read-only reader for GGUF files (versions 2 and 3), llama.cpp's model format.
 *
 * Layout (little-endian; llama.cpp ggml/src/gguf.cpp gguf_init_from_file_impl and
 * docs in ggml/include/gguf.h):
 *   "GGUF"  u32 version  u64 n_tensors  u64 n_kv
 *   n_kv × { str key; u32 value_type; value }
 *       value_type: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 str, 9 array,
 *                   10 u64, 11 i64, 12 f64;  array = u32 elem_type; u64 n; n × elem (no nesting)
 *   n_tensors × { str name; u32 n_dims (1..4); u64 ne[n_dims]; u32 ggml_type; u64 offset }
 *   padding to `general.alignment` (u32, default 32), then the tensor data section; each
 *   tensor's offset is relative to the data section and a multiple of the alignment.
 *   str = u64 length + bytes (no NUL).
 *
 * Validation: every length, count, dimension, type and offset is checked against the file size
 * before use (counts against the bytes left, products for overflow, ne[0] against the type's block
 * size, tensors inside the file); duplicate keys or tensor names are rejected. The ggml type of a
 * tensor must be one steno's kernels implement (kernels/quant/quant.h). Nothing is read outside the
 * mapping afterwards: every pointer handed out points into it.
 * Errors (steno_errmsg names the file): STENO_E_IO (missing, unreadable, directory),
 * STENO_E_FORMAT (bad magic, version, truncation, inconsistent sizes), STENO_E_UNSUPPORTED (a
 * tensor type steno does not implement), STENO_E_NOMEM.
 */
#ifndef STENO_FORMATS_GGUF_H
#define STENO_FORMATS_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "steno.h"

enum {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT = 13
};

/** A string inside the mapping (not NUL-terminated). */
typedef struct gguf_str {
    const char *ptr;
    uint64_t len;
} gguf_str;

/** One metadata key/value pair. Scalars are widened: integers into i64/u64 (both set when the value
 *  fits), floats into f64, bool into u64/i64 (0/1). Arrays keep the raw little-endian elements in the
 *  mapping (`data`, `n` elements of `arr_type`); string arrays are also indexed in `strs`. */
typedef struct gguf_kv {
    const char *key; /* NUL-terminated copy, owned by the file */
    int type;        /* GGUF_TYPE_* */
    int64_t i64;
    uint64_t u64;
    double f64;
    gguf_str str;         /* GGUF_TYPE_STRING */
    int arr_type;         /* GGUF_TYPE_ARRAY: element type */
    uint64_t n;           /* GGUF_TYPE_ARRAY: element count */
    const uint8_t *data;  /* GGUF_TYPE_ARRAY (not string): n elements, unaligned */
    gguf_str *strs;       /* GGUF_TYPE_ARRAY of strings: n entries, owned by the file */
} gguf_kv;

/** One tensor: ne[0] is the row length (contiguous), ne[1] the number of rows, as in ggml. */
typedef struct gguf_tensor {
    const char *name; /* NUL-terminated copy, owned by the file */
    int n_dims;       /* 1..4 */
    int64_t ne[4];    /* unused dims are 1 */
    int type;         /* ggml type id (kernels/quant/quant.h STENO_T_*) */
    uint64_t offset;  /* from the start of the file */
    uint64_t size;    /* bytes */
    const void *data; /* into the mapping */
} gguf_tensor;

typedef struct gguf_file gguf_file;

/** Maps and validates path. *out is owned by the caller (gguf_close). */
steno_status gguf_open(const char *path, gguf_file **out);
/** Validates an in-memory GGUF image (not copied: data must outlive the file handle); name is
 *  used in messages. For tests and the fuzz target. */
steno_status gguf_open_buffer(const void *data, size_t size, const char *name, gguf_file **out);
void gguf_close(gguf_file *f);

const char *gguf_name(const gguf_file *f); /* the path given to gguf_open */
uint32_t gguf_version(const gguf_file *f);
size_t gguf_alignment(const gguf_file *f);
uint64_t gguf_file_size(const gguf_file *f);

int gguf_n_kv(const gguf_file *f);
const gguf_kv *gguf_kv_at(const gguf_file *f, int i);
/** The pair with this key, or NULL. */
const gguf_kv *gguf_find(const gguf_file *f, const char *key);
/** Integer value (any integer type or bool) of key into *v; 1 when present and integral. */
int gguf_get_int(const gguf_file *f, const char *key, int64_t *v);
/** Float value (f32/f64, or an integer) of key into *v; 1 when present and numeric. */
int gguf_get_float(const gguf_file *f, const char *key, double *v);
/** String value of key; NULL when absent or not a string. */
const gguf_str *gguf_get_str(const gguf_file *f, const char *key);
/** Element i of a numeric array as double / int64 (caller checks i < n). */
double gguf_arr_float(const gguf_kv *kv, uint64_t i);
int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i);

int gguf_n_tensors(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, int i);
/** The tensor with this name, or NULL. */
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/** Short name of a GGUF value type ("u32", "string", ...). */
const char *gguf_type_name(int type);

#endif
