/* wtab.h — the Whisper weight table: one name → typed view table whatever file the weights came
 * from, so the model code (src/whisper/model/model.c) and the converters never care which format they
 * read.
 *
 * Names are openai-whisper's state_dict names (whisper/model.py: Whisper.state_dict), the names
 * whisper.cpp's ggml files carry: encoder.conv1.weight, encoder.blocks.0.attn.query.weight,
 * decoder.token_embedding.weight, ... Shapes are PyTorch's (row-major, the slowest axis first):
 * conv weights [out][in][3], Linear weights [out][in]. The readers map their own names and
 * layouts onto these (CTranslate2's fused Q/K/V rows become three views; MLX's [out][3][in] conv
 * weights are transposed into an owned copy; HF's model.encoder.layers.N.self_attn.q_proj...).
 * Attention key projections have no bias (openai-whisper); a reader whose format stores a zero key
 * bias (CTranslate2) leaves it out, a non-zero one is kept as "<...>.key.bias".
 *
 * Every view's byte size is checked against its file (or buffer) when it is added, so a view
 * handed out never reaches past its data. Quantized ggml types are typed views of whole blocks of
 * 32 along the fastest axis (whisper.cpp ggml-quants: block_q4_0 ... block_q8_0); CTranslate2's
 * int8 weights are WT_I8 views with a per-row float scale (w = q / scale, CTranslate2
 * python/ctranslate2/specs/model_spec.py: _quantize).
 *
 * Not thread-safe while being built; read-only use after the reader returns is thread-safe. */
#ifndef STENO_FORMATS_WTAB_H
#define STENO_FORMATS_WTAB_H

#include <stddef.h>
#include <stdint.h>

#include "steno.h"

typedef enum {
    WT_F32 = 0,
    WT_F16,
    WT_BF16,
    WT_I8,   /* CTranslate2 int8 with a per-row scale */
    WT_Q4_0, /* ggml block types: 32 weights a block */
    WT_Q4_1,
    WT_Q5_0,
    WT_Q5_1,
    WT_Q8_0,
    WT_N_DTYPES
} wt_dtype;

/** Whisper's hyperparameters (openai-whisper whisper/model.py: ModelDimensions). */
typedef struct whisper_dims {
    int n_mels, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
    int n_vocab, n_text_ctx, n_text_state, n_text_head, n_text_layer;
} whisper_dims;

typedef struct wt_tensor {
    char *name;          /* owned, openai-whisper name */
    wt_dtype dtype;
    int rank;            /* 1..4 */
    int64_t dims[4];     /* PyTorch order */
    int64_t n_elems;
    size_t n_bytes;      /* exact byte size of data */
    const void *data;    /* into a mapping or an owned buffer */
    const void *scale;   /* WT_I8 only: dims[0] scales */
    wt_dtype scale_dtype; /* WT_F32 or WT_F16 */
} wt_tensor;

typedef struct wtab {
    const char *format;  /* "ct2", "ggml", "hf", "mlx" (static) */
    char *path;          /* what was opened (file or directory), owned */
    whisper_dims dims;
    int have_dims;
    wt_tensor *t;
    int n, cap;
    /* ggml only: the base BPE vocabulary (ranks 0 .. n_tok-1 as raw bytes) and the mel filters */
    const uint8_t **tok;
    int32_t *tok_len;
    int n_tok;
    const float *mel_filters; /* [n_mel_filters][201] */
    int n_mel_filters;
    int ggml_ftype;
    /* resources released by wtab_free */
    struct wt_res { void *p; size_t len; int kind; } *res; /* kind 0 malloc, 1 mmap, 2 ct2 model */
    int n_res, cap_res;
} wtab;

/** Bytes of n elements of dtype laid out in rows of row_len (blocks never straddle rows; the
 *  caller checks row_len % 32 == 0 for block types). */
size_t wt_dtype_bytes(wt_dtype d, int64_t n_elems);
/** "f32", "f16", "bf16", "int8", "q4_0", ... */
const char *wt_dtype_name(wt_dtype d);
int wt_dtype_is_block(wt_dtype d);

/** A new empty table for format (a static string) and path (copied). NULL when out of memory. */
wtab *wtab_new(const char *format, const char *path);
void wtab_free(wtab *w);

/** Adds a view; avail is how many bytes lie at data in its file or buffer. The name is copied.
 *  Errors (naming the table's path and the tensor): STENO_E_FORMAT when the shape is not positive,
 *  a block type's fastest axis is not a multiple of 32, or n_bytes exceeds avail; STENO_E_FORMAT
 *  for a duplicate name; STENO_E_NOMEM. */
steno_status wtab_add(wtab *w, const char *name, wt_dtype dtype, int rank, const int64_t *dims,
                      const void *data, size_t avail);

/** The view named name, or NULL. */
const wt_tensor *wtab_find(const wtab *w, const char *name);

/** Maps path read-only; the mapping lives until wtab_free. Errors name path (STENO_E_IO). */
steno_status wtab_map_file(wtab *w, const char *path, const uint8_t **data, size_t *len);
/** Hands a malloc'd buffer (or, kind 2, a ct2_model) to the table, freed by wtab_free. Returns 0,
 *  or -1 when out of memory (the resource is then freed at once). */
int wtab_own(wtab *w, void *p, int kind);

/** Converts elements [off, off + n) of t (off and n multiples of the row length for I8, and of
 *  32 for block types) to float32. Block types and int8 are dequantized here: this is the
 *  load-time dequantization of the f32 paths, not a quantized kernel. */
void wt_to_f32(const wt_tensor *t, int64_t off, int64_t n, float *dst);
/** As wt_to_f32 into IEEE half: float16 data is copied bit-exactly, float32 rounded to nearest
 *  even, the others through float32. */
void wt_to_f16(const wt_tensor *t, int64_t off, int64_t n, uint16_t *dst);
/** float32 → IEEE half, round to nearest even (numpy astype(float16)). */
uint16_t wt_f32_to_f16(float f);

#endif
