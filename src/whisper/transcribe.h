/* transcribe.h — what transcribe.c shares with the other transcription drivers (transcribe_vad.c). */
#ifndef STENO_WHISPER_TRANSCRIBE_H
#define STENO_WHISPER_TRANSCRIBE_H

#include <stddef.h>

/** t seconds as openai-whisper's verbose lines print it: "MM:SS.mmm", or "HH:MM:SS.mmm" from an
 *  hour (utils.py format_timestamp), into buf[n]. */
void whisper_format_ts(double t, char *buf, size_t n);

#endif
