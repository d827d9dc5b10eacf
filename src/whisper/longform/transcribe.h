/* transcribe.h — what transcribe.c shares with the other transcription drivers (transcribe_vad.c). */
#ifndef STENO_WHISPER_TRANSCRIBE_H
#define STENO_WHISPER_TRANSCRIBE_H

#include <stddef.h>

/** t seconds as openai-whisper's verbose lines print it: "MM:SS.mmm", or "HH:MM:SS.mmm" from an
 *  hour (utils.py format_timestamp), into buf[n]. */
void whisper_format_ts(double t, char *buf, size_t n);


#include <stdint.h>

#include "steno.h"
#include "whisper/fast.h"
#include "whisper/model/model.h"

/** Text of tokens as openai-whisper's Tokenizer.decode (timestamps dropped), UTF-8 sanitized;
 *  malloc'd (NULL: out of memory). */
char *whisper_decode_text(const whisper_model *m, const int *tokens, int n);

/** faster-whisper's SpeechTimestampsMap over speech spans (transcribe_vad.c). */
typedef struct whisper_ts_map {
    int n;
    int64_t *chunk_end_sample;    /* each span's end on the concatenated timeline */
    double *total_silence_before; /* seconds removed before each span */
} whisper_ts_map;
/** Returns 0, or -1 when out of memory (free it anyway). */
int whisper_ts_map_init(whisper_ts_map *m, const steno_speech_span *spans, int n);
void whisper_ts_map_free(whisper_ts_map *m);
/** restore_speech_timestamps for one segment: its times (and its words', in place) back on the
 *  input's timeline, rounded to 0.01 s. */
void whisper_ts_map_segment(const whisper_ts_map *m, double *start, double *end, steno_word *words, int n_words);

#endif
