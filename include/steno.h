/*
 * steno.h — the public C API of steno, a local speech-to-text engine (Whisper).
 *
 * Shape of the API (after whisper.cpp's whisper.h and SQLite's sqlite3.h):
 *   - opaque handles (steno_whisper), created by a *_load() and released by a *_free();
 *   - a params struct obtained from steno_transcribe_default_params(), so that new fields never
 *     break callers;
 *   - integer status codes; on failure the thread-local message steno_errmsg() names the input and
 *     the reason ("talk.mp3: no audio stream"). The library never exits or aborts on bad input.
 *
 * Units: audio is 16 kHz mono float32 in [-1, 1]; times are seconds (double).
 * Ownership: every pointer returned inside a steno_result is owned by the result and released by
 * steno_result_free().
 */
#ifndef STENO_H
#define STENO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STENO_VERSION "0.1.0"
#define STENO_SAMPLE_RATE 16000

/** Status codes returned by every fallible library function. */
typedef enum steno_status {
    STENO_OK = 0,
    STENO_E_INVALID_ARG = 1, /* a caller-supplied argument is out of range or NULL */
    STENO_E_IO = 2,          /* a file cannot be opened/read/written */
    STENO_E_FORMAT = 3,      /* a file exists but its content is malformed or unsupported */
    STENO_E_NOMEM = 4,       /* an allocation failed */
    STENO_E_UNSUPPORTED = 5, /* a valid request this build cannot serve */
    STENO_E_ABORTED = 6      /* the caller's abort callback asked to stop */
} steno_status;

/** The last error message of the calling thread ("" when none). Owned by the library; valid until
 *  the next failing call on the same thread. */
const char *steno_errmsg(void);

/** Loads 16 kHz mono float32 samples from any file FFmpeg's libraries decode ("-" = stdin),
 *  down-mixing channels and resampling with libswresample.
 *  On success *samples is malloc'd (caller frees with free()) and *n_samples its length (may be 0).
 *  Errors: STENO_E_IO (missing/unreadable, directory), STENO_E_FORMAT (no audio stream, corrupt). */
steno_status steno_audio_load(const char *path, float **samples, size_t *n_samples);

/* ---------------------------------------------------------------------------------------------
 * Whisper
 * ------------------------------------------------------------------------------------------- */

typedef struct steno_whisper steno_whisper;
struct steno_segment;

/** Which implementation of the model math runs. Both share the decoding loop, the logit filters
 *  and the writers; the fast path is gated token-exact against the faithful one (L2). */
typedef enum steno_path {
    STENO_PATH_FAST = 0,     /* fused attention, planned decoder step, f16 weights (whisper/fast.h) */
    STENO_PATH_FAITHFUL = 1  /* op-for-op port of openai-whisper's model.py in float32 */
} steno_path;

/** Storage of the decoder weights on the fast path (compute is float32 either way). */
typedef enum steno_weights { STENO_WEIGHTS_F16 = 0, STENO_WEIGHTS_F32 = 1 } steno_weights;

/** Load-time options; get defaults from steno_whisper_default_options(). */
typedef struct steno_whisper_options {
    int n_threads;         /* <= 0: all online CPUs */
    steno_path path;       /* STENO_PATH_FAST */
    steno_weights weights; /* STENO_WEIGHTS_F16 */
    int audio_ctx;         /* encoder positions; 0 = the model's n_audio_ctx (1500). Fewer is a
                              Lab-level approximation (fast path only): see docs/PERFORMANCE.md */
} steno_whisper_options;

steno_whisper_options steno_whisper_default_options(void);

/** Loads a CTranslate2 Whisper model directory (model.bin, config.json, vocabulary.txt,
 *  tokenizer.json) with default options and n_threads threads (<= 0: all cores).
 *  Errors name the file and the reason: STENO_E_IO, STENO_E_FORMAT, STENO_E_NOMEM. */
steno_status steno_whisper_load(const char *model_dir, int n_threads, steno_whisper **out);

/** As steno_whisper_load with explicit options (NULL = defaults). STENO_E_INVALID_ARG for an
 *  audio_ctx outside 1..n_audio_ctx or a reduced audio_ctx on the faithful path. */
steno_status steno_whisper_load_ex(const char *model_dir, const steno_whisper_options *opts,
                                   steno_whisper **out);
void steno_whisper_free(steno_whisper *w);

/** True (1) for multilingual checkpoints, 0 for English-only (.en) ones. */
int steno_whisper_is_multilingual(const steno_whisper *w);

/** Decoding parameters, openai-whisper transcribe() defaults (whisper/transcribe.py). */
typedef struct steno_transcribe_params {
    const double *temperatures; /* fallback ladder; NULL → numpy.arange(0, 1 + 1e-6, 0.2) */
    int n_temperatures;
    double compression_ratio_threshold; /* 2.4; <= 0 disables */
    double logprob_threshold;           /* -1.0; use -INFINITY (or <= -1e30) to disable */
    double no_speech_threshold;         /* 0.6; < 0 disables */
    int condition_on_previous_text;     /* 1 */
    const char *initial_prompt;         /* NULL */
    int suppress_blank;                 /* 1 */
    const int *suppress_tokens;         /* NULL → the "-1" set (config.json suppress_ids) */
    int n_suppress_tokens;
    int without_timestamps;             /* 0 */
    double max_initial_timestamp;       /* 1.0 s */
    uint64_t seed;                      /* RNG seed for sampling at temperature > 0 */
    /* Beam search and best-of (docs/WHISPER.md "Beam search"): at temperature 0, beam_size >= 2
     * runs a beam search (openai-whisper BeamSearchDecoder, CTranslate2 BeamSearch); at
     * temperature > 0, best_of >= 2 draws that many samples. Either keeps the hypothesis with the
     * best sum_logprob / length^length_penalty (length in tokens, eot excluded). */
    int beam_size;                      /* 0 (greedy; 0 and 1 both mean greedy); at most 64 */
    double patience;                    /* 1.0: stop after round(beam_size · patience) finished
                                           hypotheses; > 0 (0 in a zeroed struct means 1.0) */
    double length_penalty;              /* 1.0: faster-whisper/CTranslate2 length^α; 0 = raw sum
                                           (and the beam stops when its best hypothesis ends) */
    int best_of;                        /* 1 (0 also means 1); at most 64 */
    int verbose;                        /* print "[start --> end] text" to stdout per segment (openai) */
    /* Called after each new segment (may be NULL). Return non-zero to abort. */
    int (*on_segment)(void *user, const struct steno_segment *seg);
    /* Progress in [0, 1] over the input (may be NULL). */
    void (*on_progress)(void *user, double fraction);
    void *user;
} steno_transcribe_params;

steno_transcribe_params steno_transcribe_default_params(void);

/** One decoded segment, as in openai-whisper's result["segments"]. */
typedef struct steno_segment {
    int id;
    int seek;                 /* mel frame (10 ms) where the window started */
    double start, end;        /* seconds */
    char *text;               /* UTF-8, owned by the result */
    int *tokens;              /* text and timestamp tokens of the segment, owned by the result */
    int n_tokens;
    double temperature;
    double avg_logprob;
    double compression_ratio;
    double no_speech_prob;
} steno_segment;

/** A transcription, as in openai-whisper's transcribe() result. */
typedef struct steno_result {
    char *text;               /* all segment texts joined, UTF-8 */
    char language[16];        /* "en" */
    steno_segment *segments;
    int n_segments;
    double duration;          /* seconds of input audio */
} steno_result;

/** Transcribes samples (16 kHz mono float32, n may be 0) with openai-whisper's transcribe()
 *  semantics (whisper/transcribe.py: transcribe, decode_with_fallback).
 *  On success *out is a new result (free with steno_result_free). */
steno_status steno_transcribe(steno_whisper *w, const float *samples, size_t n,
                              const steno_transcribe_params *params, steno_result **out);
void steno_result_free(steno_result *r);

/* ---------------------------------------------------------------------------------------------
 * Writers (openai-whisper's whisper/utils.py: WriteTXT, WriteSRT, WriteVTT, WriteTSV, WriteJSON)
 * ------------------------------------------------------------------------------------------- */

/** Formats: "txt", "srt", "vtt", "tsv", "json". Writes to an open stdio stream. */
steno_status steno_write_result(const steno_result *r, const char *format, void *FILE_stream);

#ifdef __cplusplus
}
#endif
#endif /* STENO_H */
