/* safetensors.h — a reader for small safetensors files (Hugging Face's format: an 8-byte
 * little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the data),
 * read whole into memory. Used for weights converted by tools/ (Silero VAD); large weights use the
 * mmap'd readers of the other formats. */
#ifndef STENO_FORMATS_SAFETENSORS_H
#define STENO_FORMATS_SAFETENSORS_H

#include <stddef.h>

#include "steno.h"

typedef struct steno_safetensors steno_safetensors;

/** Reads path (at most max_bytes) and parses its header; every tensor's offsets are checked
 *  against the data size. Errors name path: STENO_E_IO, STENO_E_FORMAT, STENO_E_NOMEM. */
steno_status steno_safetensors_open(const char *path, size_t max_bytes, steno_safetensors **out);

/** The float32 tensor `name`, whose shape must be exactly dims[0..n_dims): on success *data
 *  points into the file's buffer (valid until steno_safetensors_close; 4-byte aligned).
 *  Errors name the file and the tensor: STENO_E_FORMAT (missing, not F32, other shape). */
steno_status steno_safetensors_f32(const steno_safetensors *st, const char *name, const size_t *dims, int n_dims,
                                   const float **data);

void steno_safetensors_close(steno_safetensors *st);

#endif
