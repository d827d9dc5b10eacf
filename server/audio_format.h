/* audio_format.h — transcription results as OpenAI's audio API writes them (audio_format.c). */
#ifndef STENO_SERVER_AUDIO_FORMAT_H
#define STENO_SERVER_AUDIO_FORMAT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "steno.h"

typedef enum audio_format { AUDIO_JSON = 0, AUDIO_TEXT, AUDIO_SRT, AUDIO_VTT, AUDIO_VERBOSE_JSON } audio_format;

/** "json" "text" "srt" "vtt" "verbose_json" → *out; -1 for anything else. */
int audio_format_parse(const char *s, audio_format *out);
/** OpenAI's full language name ("english") for a code ("en"); the code itself when unknown. */
const char *audio_language_name(const char *code);
/** The code for a code or a full name, any case ("German" → "de"); NULL when unknown. */
const char *audio_language_code(const char *s);
/** The result's text without leading/trailing whitespace (malloc'd; NULL when out of memory). */
char *audio_result_text(const steno_result *res);
/** verbose_json: task, language (full name), duration, text, segments (segments != 0), words
 *  (words != 0). */
cJSON *audio_verbose_json(const steno_result *res, const char *task, int words, int segments);
/** The response body (malloc'd, *len bytes) and its content type. NULL when out of memory. */
char *audio_format_result(const steno_result *res, audio_format fmt, const char *task, int words, int segments,
                          const char **content_type, size_t *len);

#endif
