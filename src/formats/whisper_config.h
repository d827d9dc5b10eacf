/* whisper_config.h — the config.json of a CTranslate2 Whisper model directory
 * (written by ctranslate2.converters.TransformersConverter / OpenAIWhisperConverter). */
#ifndef STENO_FORMATS_WHISPER_CONFIG_H
#define STENO_FORMATS_WHISPER_CONFIG_H

#include "steno.h"

typedef struct whisper_config {
    int (*alignment_heads)[2]; /* [n_alignment_heads][2] = (layer, head); owned */
    int n_alignment_heads;
    int *suppress_ids;         /* the "-1" suppress set (openai-whisper's non_speech_tokens) */
    int n_suppress_ids;
    int *suppress_ids_begin;   /* suppressed at the first sampled position ([220, eot]) */
    int n_suppress_ids_begin;
    int *lang_ids;             /* token ids of <|en|>, <|zh|>, ... */
    int n_lang_ids;
} whisper_config;

/** Parses path (config.json). Missing keys leave empty arrays. Errors: STENO_E_IO,
 *  STENO_E_FORMAT ("config.json: not JSON", "config.json: alignment_heads: not a list of pairs"). */
steno_status whisper_config_load(const char *path, whisper_config *out);
void whisper_config_free(whisper_config *c);

#endif
