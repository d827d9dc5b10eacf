/* wtab_readers.h — the Whisper weight readers, each filling one weight table (wtab.h), and the
 * detection of a model's format from its files (never from a flag).
 *
 * Formats (docs/MODELS.md):
 *   ct2  — a CTranslate2 directory: model.bin (WhisperSpec; float32/float16/bfloat16, int8,
 *          int8_float16), config.json, vocabulary.{txt,json}, tokenizer.json.
 *   ggml — a whisper.cpp ggml-*.bin file (magic "ggml", 11 int32 hparams, mel filters, the BPE
 *          vocabulary, tensors of type f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0; whisper.cpp
 *          src/whisper.cpp: whisper_model_load).
 *   hf   — a Hugging Face transformers Whisper directory: model.safetensors, or shards listed by
 *          model.safetensors.index.json; config.json (WhisperConfig), tokenizer.json,
 *          generation_config.json (transformers models/whisper/convert_openai_to_hf.py names).
 *   mlx  — an mlx-community Whisper directory: weights.safetensors or weights.npz and config.json
 *          holding ModelDimensions (mlx-examples whisper/convert.py; conv weights [out][3][in]).
 * Every reader maps the files, checks each tensor's byte range against its file before adding it,
 * and fills w->dims (checked by wtab_check_dims). Errors name the file and the reason. */
#ifndef STENO_FORMATS_WTAB_READERS_H
#define STENO_FORMATS_WTAB_READERS_H

#include "formats/wtab/wtab.h"

steno_status wtab_read_ct2(const char *model_bin, wtab **out);
steno_status wtab_read_ggml(const char *path, wtab **out);
steno_status wtab_read_hf(const char *dir, wtab **out);
steno_status wtab_read_mlx(const char *dir, wtab **out);

/** Adds the tensors of a NumPy .npz archive (np.savez: a zip of stored, uncompressed .npy members,
 *  zip64 sizes allowed) under map(name) (0 = skip), as views into the mapped file. Little-endian
 *  f4/f2 C-order arrays only. Errors name path. */
steno_status wtab_add_npz(wtab *w, const char *path, int (*map)(const char *in, char *out, size_t cap));

/** Which reader path needs: "ct2", "ggml", "hf", "mlx", or NULL (with the error set, naming path
 *  and what was found) when none. path is a ggml file or a model directory. */
const char *wtab_detect(const char *path);
/** As wtab_detect, returning the status (*fmt NULL on error). */
steno_status wtab_detect_st(const char *path, const char **fmt);

/** Detects and reads path (a directory or a ggml file). */
steno_status wtab_open(const char *path, wtab **out);

/** Fills the dimensions readable from the tensors' shapes (state widths, mel bins, contexts,
 *  vocabulary, layer counts) where w->dims holds 0, and checks those already set against them and
 *  the heads against the widths. Errors: STENO_E_FORMAT naming w->path and the inconsistency. */
steno_status wtab_dims_from_shapes(wtab *w);

/** openai-whisper's sinusoids(length, channels) (whisper/model.py), the encoder's positional
 *  embedding, into dst [length][channels] (channels even). Computed in float64, rounded once. */
void wtab_sinusoids(int length, int channels, float *dst);

#endif
