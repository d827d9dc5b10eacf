/* stream.h — the audio decoder of steno_audio_load(), consumed a block at a time, so that a
 * long file is never held whole. The samples are the very ones
 * steno_audio_load() / steno_audio_load_memory() give for the same bytes: one decoder path. */
#ifndef STENO_AUDIO_STREAM_H
#define STENO_AUDIO_STREAM_H

#include <stddef.h>
#include "steno.h"

typedef struct audio_stream audio_stream;

/** Opens a path ("-" is not special here) or data[0..size) (only read, which must outlive the
 *  stream; name as in steno_audio_load_memory) and its audio decoder. Errors and messages are
 *  steno_audio_load's. *out is freed with audio_stream_close. */
steno_status audio_stream_open_path(const char *path, audio_stream **out);
steno_status audio_stream_open_memory(const void *data, size_t size, const char *name, audio_stream **out);

/** A live input, decoded as it arrives (steno stream): path "-" is standard input, a name with
 *  "://" a URL avformat opens, anything else a file that may still be growing: at its end the
 *  reader waits up to follow_ms for more bytes before it ends (0: the end is the end). format
 *  NULL: probed; else an avformat demuxer name ("s16le", "f32le": raw mono PCM at rate Hz). No
 *  length limit (samples are dropped once read). Errors as audio_stream_open_path, and
 *  STENO_E_INVALID_ARG for an unknown format. */
steno_status audio_stream_open_live(const char *path, const char *format, int rate, int follow_ms,
                                    audio_stream **out);

/** Up to cap 16 kHz mono float32 samples into dst; *got < cap only at the end of the audio (0 once
 *  everything was read). Errors: those of steno_audio_load during decoding (the length limit,
 *  STENO_E_NOMEM). */
steno_status audio_stream_read(audio_stream *s, float *dst, size_t cap, size_t *got);

/** After the last read: the warning steno_audio_load gives for a file that decoded only in part
 *  (steno_warnmsg), if any. */
void audio_stream_warn_partial(const audio_stream *s);

void audio_stream_close(audio_stream *s);

/** Standard input read whole into *data (malloc'd, caller frees): avformat cannot seek a pipe.
 *  Errors: STENO_E_IO (read error), STENO_E_INVALID_ARG (over 4 GiB), STENO_E_NOMEM. */
steno_status audio_read_stdin(unsigned char **data, size_t *size);

#endif
