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

/** The version of this header (SemVer; docs/API.md). CMakeLists.txt refuses to configure when it
 *  differs from project(VERSION), so it is also the version of the library built with it.
 *  STENO_VERSION_NUMBER = major * 10000 + minor * 100 + patch, for #if tests. */
#define STENO_VERSION "3.0.0"
#define STENO_VERSION_MAJOR 3
#define STENO_VERSION_MINOR 0
#define STENO_VERSION_PATCH 0
#define STENO_VERSION_NUMBER (STENO_VERSION_MAJOR * 10000 + STENO_VERSION_MINOR * 100 + STENO_VERSION_PATCH)
#define STENO_SAMPLE_RATE 16000

/** The version of the library actually loaded ("3.0.0"), which may be newer than the header a
 *  program was compiled with (same SONAME: same major, see docs/API.md). Static storage, never
 *  freed; thread-safe; never fails. */
const char *steno_version(void);
/** The same as a number: major * 10000 + minor * 100 + patch (30000 for 3.0.0), comparable with
 *  STENO_VERSION_NUMBER. Thread-safe; never fails. */
int steno_version_number(void);
/** Which CPU kernels this process runs, as one line for a log: "Whisper kernels avx512, AMX-BF16
 *  encoder; OpenBLAS kernels SkylakeX" (the AMX part only where that encoder path runs). Worked out
 *  on the first call; static storage, never freed; thread-safe; never fails. */
const char *steno_system_info(void);

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

/** The warning of the calling thread's last call that succeeded with a caveat ("" when none):
 *  steno_audio_load*() set it for a file whose header promises more audio than it holds or that
 *  ends in a read error ("a.wav: truncated: the header declares 11.0 s of audio, 3.1 s decoded"),
 *  steno_transcribe*() for clip_timestamps that all start past the end of the audio; each of them
 *  clears it when it starts. Owned by the library; valid until the next such call on the same
 *  thread. */
const char *steno_warnmsg(void);

/** Bounds on what an audio file may declare and decode to; a file outside them fails with
 *  STENO_E_FORMAT and a message naming the file and the value ("a.wav: declared sample rate
 *  1000000032 Hz is outside 1000..768000 Hz"). The rate and channel count are checked on the stream
 *  header and on every decoded frame, before a resampler is set up (its filters grow with the
 *  rate ratio). 768 kHz is the highest rate of professional converters, 64 channels covers
 *  Ambisonics and film stems (FFmpeg's own sanity limit is 512). The output is capped at 4 hours of
 *  16 kHz samples (230.4 M samples, 0.9 GB as float32): long meetings, lectures and audiobook
 *  chapters fit, and it is the only memory bound that holds for every codec, since a real
 *  compressed file can expand to thousands of samples per byte (FLAC constant blocks, Opus and
 *  Vorbis silence). A declared duration or frame count is never trusted to size anything (a WAV
 *  written to a pipe declares 2^32 bytes), so it is not checked; the decoded length is. */
#define STENO_AUDIO_MIN_RATE 1000
#define STENO_AUDIO_MAX_RATE 768000
#define STENO_AUDIO_MAX_CHANNELS 64
#define STENO_AUDIO_MAX_SECONDS (4 * 3600)

/** Loads 16 kHz mono float32 samples from any file FFmpeg's libraries decode ("-" = stdin, read
 *  whole into memory first, so that containers whose index is at the end, such as MP4/M4A with a
 *  trailing moov atom, decode from a pipe as from a file), down-mixing channels and resampling
 *  with libswresample. A file that decodes only in part (truncated, a read error, a header
 *  promising audio that is not there) gives what was decoded and a warning (steno_warnmsg).
 *  On success *samples is malloc'd (caller frees with free()) and *n_samples its length (may be 0).
 *  Errors: STENO_E_IO (missing/unreadable, directory), STENO_E_FORMAT (no audio stream, corrupt,
 *  outside the bounds above). */
steno_status steno_audio_load(const char *path, float **samples, size_t *n_samples);

/** Like steno_audio_load(), over a whole file held in memory (e.g. an HTTP upload): data[0..size)
 *  is any container FFmpeg's libraries read, and gives the very samples (same bits) that
 *  steno_audio_load() gives for the same bytes on disk. `name` (may be NULL: "memory") appears only
 *  in error messages and in format probing by extension, as a path would; nothing is opened by it,
 *  and the container may not open other URLs or files (playlists, concat lists fail).
 *  data is only read, and only during the call; the caller keeps ownership.
 *  On success *samples is malloc'd (caller frees with free()) and *n_samples its length (may be 0).
 *  Errors: STENO_E_INVALID_ARG (data NULL with size > 0, or NULL outputs), STENO_E_FORMAT (not
 *  audio, no audio stream, corrupt), STENO_E_UNSUPPORTED (no decoder), STENO_E_NOMEM. */
steno_status steno_audio_load_memory(const void *data, size_t size, const char *name, float **samples,
                                     size_t *n_samples);

/** An audio file opened for transcription without holding its samples: memory stays bounded
 *  (about one 30-s window, ~2 MB) whatever the file's length, where steno_audio_load holds 64 kB
 *  per second of audio and its log-mel spectrogram 32 kB more. Opening decodes
 *  the file once, to check it and to find its length and the log-mel maximum that every window's
 *  clamp depends on; each window is decoded again when transcription reaches it. The result of
 *  steno_transcribe_audio is identical (same tokens, same times) to steno_transcribe over the
 *  samples steno_audio_load gives for the same file. A steno_audio serves one transcription at a
 *  time (not thread-safe); any number may be open. */
typedef struct steno_audio steno_audio;

/** Opens path ("-" = stdin, read whole into memory first, as steno_audio_load does) and scans
 *  it. Errors and the partial-decode warning (steno_warnmsg) are steno_audio_load's, found during
 *  the scan; the file must stay unchanged until steno_audio_close (a later pass that finds other
 *  samples fails with STENO_E_IO). *out is freed with steno_audio_close. */
steno_status steno_audio_open(const char *path, steno_audio **out);

/** As steno_audio_open over data[0..size) (name as in steno_audio_load_memory). The data is
 *  borrowed: it is read again by every window and must stay valid and unchanged until
 *  steno_audio_close. */
steno_status steno_audio_open_memory(const void *data, size_t size, const char *name, steno_audio **out);

/** The number of 16 kHz samples the audio decodes to (0 for NULL). */
size_t steno_audio_n_samples(const steno_audio *a);

/** Frees a (NULL is a no-op). */
void steno_audio_close(steno_audio *a);

/* ---------------------------------------------------------------------------------------------
 * Whisper
 * ------------------------------------------------------------------------------------------- */

typedef struct steno_whisper steno_whisper;
/** Everything one transcription writes: the encoder's activations, the decoder's KV caches and
 *  scratch, a thread pool (whisper.cpp's whisper_state). A steno_whisper holds the weights and one
 *  default state (used by steno_transcribe); more states let several transcriptions run at once
 *  over one copy of the weights. */
typedef struct steno_whisper_state steno_whisper_state;
struct steno_segment;

/** One word of a segment (word timestamps), as in openai-whisper's segment["words"]. */
typedef struct steno_word {
    char *word;         /* UTF-8 with its leading space and merged punctuation, owned by the result */
    double start, end;  /* seconds, rounded to 0.01 */
    double probability; /* mean probability of its tokens */
} steno_word;

/** Which implementation of the model math runs. Both share the decoding loop, the logit filters
 *  and the writers; the fast path is gated token-exact against the faithful one (L2). */
typedef enum steno_path {
    STENO_PATH_FAST = 0,     /* fused attention, planned decoder step, f16 weights (whisper/fast.h) */
    STENO_PATH_FAITHFUL = 1  /* op-for-op port of openai-whisper's model.py in float32 */
} steno_path;

/** Storage of the weights on the fast path (activations and accumulation are float32 either
 *  way). F16/F32: the decoder's matrices (the encoder's stay float32). The quantized types (Lab
 *  paths, each gated by its measured WER delta in docs/WHISPER.md, never the default) quantize the
 *  linears of encoder and decoder and the token embedding at load time and keep only the
 *  quantized form: whisper.cpp's ggml block formats Q8_0, Q5_0, Q5_1, Q4_0, Q4_1 (32 values per
 *  block) and MLX's affine format (4 or 8 bits, groups of 32 or 64 values, float16 scale and
 *  bias). Fast path only. */
typedef enum steno_weights {
    STENO_WEIGHTS_F16 = 0,
    STENO_WEIGHTS_F32 = 1,
    STENO_WEIGHTS_Q8_0 = 2,
    STENO_WEIGHTS_Q5_0 = 3,
    STENO_WEIGHTS_Q5_1 = 4,
    STENO_WEIGHTS_Q4_0 = 5,
    STENO_WEIGHTS_Q4_1 = 6,
    STENO_WEIGHTS_MLX_Q4_G32 = 7,
    STENO_WEIGHTS_MLX_Q4_G64 = 8,
    STENO_WEIGHTS_MLX_Q8_G32 = 9,
    STENO_WEIGHTS_MLX_Q8_G64 = 10
} steno_weights;

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

/** A new state over w's weights (shared read-only, not copied) with n_threads threads (<= 0: as
 *  many as w was loaded with). w must outlive it. Thread-safety: any number of states may
 *  transcribe at once, from different threads, with the same w; one state serves one call at a
 *  time. Errors: STENO_E_INVALID_ARG, STENO_E_NOMEM. */
steno_status steno_whisper_state_new(const steno_whisper *w, int n_threads, steno_whisper_state **out);
void steno_whisper_state_free(steno_whisper_state *s);

/** True (1) for multilingual checkpoints, 0 for English-only (.en) ones. */
int steno_whisper_is_multilingual(const steno_whisper *w);
/** 1 when the model has a language token <|code|> (multilingual models; "en" for every model). */
int steno_whisper_has_language(const steno_whisper *w, const char *code);

/** The vocabulary size (51864 for tiny.en): valid token ids are 0 .. n_vocab − 1. */
int steno_whisper_n_vocab(const steno_whisper *w);

/** Decoder layers (4 for tiny.en, 6 for base): --draft-layers takes 1 .. this − 1. */
int steno_whisper_n_text_layers(const steno_whisper *w);

/** Drafters of speculative decoding (docs/WHISPER.md "Speculative decoding"). */
typedef enum steno_whisper_draft {
    STENO_WDRAFT_NONE = 0,
    STENO_WDRAFT_NGRAM = 1,  /* prompt lookup in the previous windows' text and the window's own */
    STENO_WDRAFT_QUANT = 2,  /* the model's own decoder re-quantized (draft_weights: q8_0 or q4_0),
                                reading the target's encoder output and cross-attention K/V */
    STENO_WDRAFT_LAYERS = 3, /* the first draft_layers decoder layers, the final norm and the head */
    STENO_WDRAFT_MODEL = 4   /* draft_model, a Whisper with the same vocabulary (its own encoder) */
} steno_whisper_draft;

/** What the decoder did during one transcription (steno_transcribe_params.decode_stats). */
typedef struct steno_decode_stats {
    long tokens;           /* tokens decoded (text, timestamps and eot of every attempt's result) */
    double decode_seconds; /* wall time in the decoder (cross K/V, prompt, steps; encoder excluded) */
    double decode_cpu_seconds; /* CPU time of the process meanwhile (all its threads) */
    long target_calls;     /* target passes after the prompt (single steps and verify passes) */
    long rounds;           /* verify passes that checked at least one drafted token */
    long drafted;          /* drafted tokens */
    long accepted;         /* drafted tokens equal to the target's own choice */
    /* The time of speculation inside the run, against the same run's plain steps: a drafter's
     * cost measured without comparing two runs, whose spread on a shared machine can exceed the
     * difference. Plain decoding would have spent about round_tokens × plain_step_seconds /
     * plain_steps on the rounds' tokens. Like target_calls, all 0 without a drafter.
     * Invariants: plain_steps + rounds = target_calls; round_tokens = accepted + rounds. */
    long plain_steps;          /* single-token target passes of the speculative loop */
    double plain_step_seconds; /* their wall time (the forward pass alone) */
    long round_tokens;         /* tokens emitted by the verify passes */
    double round_seconds;      /* all drafting (also lookups that found nothing) and the verify passes */
} steno_decode_stats;

/** The task token of a multilingual model's SOT sequence (<|transcribe|> or <|translate|>). */
typedef enum steno_task { STENO_TASK_TRANSCRIBE = 0, STENO_TASK_TRANSLATE = 1 } steno_task;

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
    const int *suppress_tokens;         /* NULL → {-1}; -1 stands for the non-speech set
                                           (config.json suppress_ids); other ids 0..n_vocab−1 */
    int n_suppress_tokens;
    int without_timestamps;             /* 0 */
    double max_initial_timestamp;       /* 1.0 s */
    /* faster-whisper's options (transcribe.py get_prompt, generate_segments) and openai-whisper's
     * carry_initial_prompt / clip_timestamps; the prompt layout is in src/whisper/decoder/prompt.h. */
    const char *prefix;                 /* NULL; text forced after the SOT sequence of the window at
                                           seek 0 (after <|0.00|> with timestamps); part of the output */
    const char *hotwords;               /* NULL; text after <|startofprev|> of every window that has
                                           no prefix */
    int carry_initial_prompt;           /* 0; 1: initial_prompt starts every window's prompt */
    const double *clip_timestamps;      /* NULL = whole input; else seconds start,end,start,...
                                           (an odd count: the last clip ends at the end); each
                                           start >= 0 and end >= start */
    int n_clip_timestamps;
    uint64_t seed;                      /* RNG seed for sampling at temperature > 0 */
    const char *language;               /* code ("de"); NULL: detected on the first 30 s by a
                                           multilingual model (steno_detect_language), "en" for an
                                           English-only one, which accepts only "en" */
    int task;                           /* steno_task; TRANSLATE needs a multilingual model */
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
    int word_timestamps;                /* 0; 1: steno_segment.words (whisper/output/alignment.h) */
    const char *prepend_punctuations;   /* NULL → "\"'“¿([{-" (merged into the next word) */
    const char *append_punctuations;    /* NULL → "\"'.。,，!！?？:：”)]}、" (into the previous) */
    double hallucination_silence_threshold; /* seconds; < 0 (default -1) disables; needs
                                               word_timestamps (openai transcribe.py) */
    /* Called after each new segment (may be NULL). Return non-zero to abort. */
    int (*on_segment)(void *user, const struct steno_segment *seg);
    /* Progress in [0, 1] over the input (may be NULL). */
    void (*on_progress)(void *user, double fraction);
    void *user;
    /* Polled before each 30-s window is encoded (may be NULL; whisper.cpp's abort_callback).
     * Non-zero stops the transcription with STENO_E_ABORTED: a server cancels a request whose
     * client left, or whose deadline passed, within one window. */
    int (*should_abort)(void *user);
    /* Speculative decoding (docs/WHISPER.md "Speculative decoding"): each greedy attempt at
     * temperature 0 (beam_size < 2) on the fast path drafts tokens and verifies them in one pass of
     * the model, whose logits at each position are bit-identical to a plain step's: the tokens are
     * those of plain decoding. Sampled fallbacks (temperature > 0) and beam search decode plainly;
     * the batched mode (steno_transcribe_batched) refuses a drafter. */
    steno_whisper_draft draft_kind;     /* STENO_WDRAFT_NONE */
    int num_draft_tokens;               /* most drafted tokens per round, 1..32; 0: adaptive (up to 8,
                                           longer while drafts are accepted, 0 while they are not; a
                                           drafter measured unable to pay is remembered for the rest of
                                           the process and not drafted with again: timing, never tokens) */
    int draft_layers;                   /* LAYERS: 1..n_text_layers − 1; 0: half of them */
    steno_weights draft_weights;        /* QUANT: STENO_WEIGHTS_Q8_0 or Q4_0 (F16, the zero value,
                                           means Q8_0); needs f16/f32 model weights */
    const steno_whisper *draft_model;   /* MODEL: same vocabulary and special tokens; its default state
                                           runs the draft, one transcription at a time */
    int ngram_min, ngram_max;           /* NGRAM: n-gram lengths tried, longest first (0: 2 and 4;
                                           ngram_max 1 with ngram_min 0: 1) */
    steno_decode_stats *decode_stats;   /* NULL, or counts added to (not cleared) */
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
    steno_word *words;        /* word timestamps (params.word_timestamps), owned by the result */
    int n_words;              /* 0 without word timestamps */
} steno_segment;

/** A transcription, as in openai-whisper's transcribe() result. */
typedef struct steno_result {
    char *text;               /* all segment texts joined, UTF-8 */
    char language[16];        /* the language code decoded with ("en", "de") */
    double language_probability; /* its detected probability; 1 when given or English-only */
    steno_segment *segments;
    int n_segments;
    double duration;          /* seconds of input audio */
    int word_timestamps;      /* 1 when the segments carry words (the writers then use them) */
} steno_result;

/** Transcribes samples (16 kHz mono float32, n may be 0) with openai-whisper's transcribe()
 *  semantics (whisper/transcribe.py: transcribe, decode_with_fallback). params NULL: the defaults
 *  of steno_transcribe_default_params().
 *  On success *out is a new result (free with steno_result_free). Errors: STENO_E_INVALID_ARG (w or
 *  out NULL, samples NULL with n > 0, a parameter out of range: the message names it),
 *  STENO_E_ABORTED (a callback asked to stop), STENO_E_NOMEM. */
steno_status steno_transcribe(steno_whisper *w, const float *samples, size_t n,
                              const steno_transcribe_params *params, steno_result **out);
/** As steno_transcribe on state s (steno_whisper_state_new) instead of w's default state; w is only
 *  read, so calls on different states may run concurrently (whisper.cpp whisper_full_with_state).
 *  Tokens are identical to steno_transcribe's for the same input and params. */
steno_status steno_transcribe_with_state(const steno_whisper *w, steno_whisper_state *s, const float *samples,
                                         size_t n, const steno_transcribe_params *params, steno_result **out);
/** As steno_transcribe / steno_transcribe_with_state over an opened steno_audio (memory bounded
 *  by one window; identical results). Errors: those of steno_transcribe, and decoding errors of a
 *  window (steno_audio_open's). */
steno_status steno_transcribe_audio(steno_whisper *w, steno_audio *a, const steno_transcribe_params *params,
                                    steno_result **out);
steno_status steno_transcribe_audio_with_state(const steno_whisper *w, steno_whisper_state *s, steno_audio *a,
                                               const steno_transcribe_params *params, steno_result **out);
void steno_result_free(steno_result *r);

/** openai-whisper's full name of a language code, lower case ("de" → "german"; tokenizer.py
 *  LANGUAGES), or NULL for a code Whisper does not have. Static strings; thread-safe. */
const char *steno_language_name(const char *code);
/** The code of a language given by code, full name or openai-whisper's alias, in any case ("de",
 *  "German", "mandarin" → "zh"), or NULL when unknown. Static strings; thread-safe. */
const char *steno_language_code(const char *code_or_name);

/** One language of steno_detect_language: its code ("de") and probability. */
typedef struct steno_language_prob {
    char code[16];
    double probability;
} steno_language_prob;

/** Detects the spoken language of samples (16 kHz mono float32) as steno_transcribe does with
 *  params.language NULL: from the first 30-s window, by the probabilities of the language tokens
 *  at the <|startoftranscript|> position (openai-whisper decoding.py: detect_language; the same
 *  as faster-whisper 1.2.1's / CTranslate2's detect_language). out: caller-owned array of cap
 *  entries; receives the min(cap, number of languages) most probable, sorted by descending
 *  probability; *n_out the count. Errors: STENO_E_UNSUPPORTED (English-only model),
 *  STENO_E_INVALID_ARG, STENO_E_NOMEM. */
steno_status steno_detect_language(steno_whisper *w, const float *samples, size_t n,
                                   steno_language_prob *out, int cap, int *n_out);
/** As steno_detect_language on state s (NULL: w's default state). */
steno_status steno_detect_language_with_state(const steno_whisper *w, steno_whisper_state *s, const float *samples,
                                              size_t n, steno_language_prob *out, int cap, int *n_out);
/** As steno_detect_language / _with_state over an opened steno_audio (its first window only). */
steno_status steno_detect_language_audio(steno_whisper *w, steno_audio *a, steno_language_prob *out, int cap,
                                         int *n_out);
steno_status steno_detect_language_audio_with_state(const steno_whisper *w, steno_whisper_state *s, steno_audio *a,
                                                    steno_language_prob *out, int cap, int *n_out);

/* ---------------------------------------------------------------------------------------------
 * Writers (openai-whisper's whisper/utils.py: WriteTXT, WriteSRT, WriteVTT, WriteTSV, WriteJSON)
 * ------------------------------------------------------------------------------------------- */

/** Formats: "txt", "srt", "vtt", "tsv", "json" (openai-whisper's layouts); "csv" and "lrc"
 *  (whisper.cpp's -ocsv / -olrc layouts); "wcpp-txt", "wcpp-vtt", "wcpp-srt", "wcpp-json",
 *  "wcpp-json-full" (whisper.cpp's -otxt / -ovtt / -osrt / -oj / -ojf layouts, as
 *  steno_write_result_wcpp with info NULL). Writes to an open stdio stream. */
steno_status steno_write_result(const steno_result *r, const char *format, void *FILE_stream);

/** Subtitle options (openai utils.py SubtitlesWriter.iterate_result); they act only on results with
 *  word timestamps (r->word_timestamps), whose srt/vtt cues are then built from the words.
 *  0 means "not set" (None) for each field. */
typedef struct steno_writer_options {
    int max_line_width;     /* characters per line; with max_line_count, cues ignore segments */
    int max_line_count;     /* lines per cue (needs max_line_width) */
    int max_words_per_line; /* words per line (ignored with max_line_width) */
    int highlight_words;    /* one cue per word with the word underlined (<u>…</u>) */
} steno_writer_options;

/** The options of openai-whisper's CLI defaults: every field 0 ("not set"). Obtain the struct from
 *  here and then set fields, so that fields appended in later versions get their defaults (a
 *  default may stop being zero). Thread-safe; never fails. */
steno_writer_options steno_writer_default_options(void);

/** As steno_write_result with subtitle options (NULL = steno_writer_default_options()). */
steno_status steno_write_result_ex(const steno_result *r, const char *format, const steno_writer_options *opts,
                                   void *FILE_stream);

/** What whisper.cpp's writers take besides the segments (examples/cli/cli.cpp). */
typedef struct steno_wcpp_info {
    const steno_whisper *model; /* fills the JSON "model" object and -ojf token texts; NULL: zeros */
    const char *model_path;     /* JSON params.model */
    const char *language;       /* JSON params.language as asked ("en", "auto"); NULL: the result's */
    int translate;              /* JSON params.translate */
    int offset_n;               /* srt cue numbers start at 1 + offset_n (whisper-cli -on) */
} steno_wcpp_info;

/** Writes r in one of whisper.cpp's layouts (src/whisper/output/writers_wcpp.c): "wcpp-txt", "wcpp-vtt",
 *  "wcpp-srt", "csv", "lrc", "wcpp-json", "wcpp-json-full". Segment times are rounded to
 *  whisper.cpp's 10-ms ticks. info may be NULL. Errors: STENO_E_INVALID_ARG, STENO_E_IO. */
steno_status steno_write_result_wcpp(const steno_result *r, const char *format, const steno_wcpp_info *info,
                                     void *FILE_stream);

/** Reads the Whisper model at src (a CTranslate2, ggml, Hugging Face or MLX model; the format is
 *  detected) and writes it to out in format: "ct2" (a directory), "ggml" (a file), "hf" or "mlx"
 *  (directories); what each holds and which tensors keep their exact values:
 *  src/whisper/convert/convert.h, docs/MODELS.md. f32 = 1 writes every float tensor as float32,
 *  0 keeps the source's float type. The output is written under a temporary name and renamed, so
 *  a failed call leaves nothing at out. Errors name the file and the reason:
 *  STENO_E_INVALID_ARG (a NULL or empty argument, an unknown format), STENO_E_IO, STENO_E_FORMAT,
 *  STENO_E_NOMEM. Thread-safety: it touches no shared state; calls with different outputs may run
 *  at once. */
steno_status steno_whisper_convert(const char *src, const char *format, const char *out, int f32);

/* ---------------------------------------------------------------------------------------------
 * Model files (what `steno models` lists)
 * ------------------------------------------------------------------------------------------- */

/** What steno_model_describe finds in a model file or directory. Caller-allocated; frozen within a
 *  major version. Every string is NUL-terminated and fits its array. */
typedef struct steno_model_info {
    char format[64];  /* "CTranslate2 Whisper" (or "CTranslate2 <spec>"), "GGUF LLM", "llama2.c",
                       * "Silero VAD", "partial download", or "unknown" */
    char weights[32]; /* the weight type: a CTranslate2 dtype ("float16", "int8"), the GGUF file type
                       * ("Q4_K_M") or else the tensor type with the most bytes ("q8_0"); "-" unknown */
    char arch[32];    /* "whisper", the GGUF general.architecture ("llama", "gemma3"), "llama" for
                       * llama2.c, "silero_vad"; "" unknown */
    int64_t disk_bytes; /* bytes allocated on disk (as du counts them): the file, or every regular
                         * file under the directory */
} steno_model_info;

/** Describes the model at path: a model file (GGUF or llama2.c) or a model directory (a
 *  CTranslate2 model.bin, a .gguf or llama2.c .bin inside, or the Silero VAD's
 *  silero_vad_v6.safetensors); a directory whose name ends in ".partial" is an unfinished
 *  `steno pull` download and is not opened. Only headers are read (the readers mmap), so a large
 *  model costs no more than a small one. Something that is no known model is not an error: its
 *  format is "unknown" and weights "-". Errors: STENO_E_INVALID_ARG (path or info NULL), STENO_E_IO
 *  (path missing or neither a regular file nor a directory; info then holds "unknown", "-", "", 0).
 *  Thread-safe: it reads the files and writes only *info. */
steno_status steno_model_describe(const char *path, steno_model_info *info);

/* ---------------------------------------------------------------------------------------------
 * Voice activity detection (Silero VAD v6; faster-whisper 1.2.1's faster_whisper/vad.py; docs/VAD.md)
 * ------------------------------------------------------------------------------------------- */

/** A loaded Silero VAD v6 network (16 kHz): immutable, so one handle serves any number of threads
 *  at once. Weights come from scripts/fetch_vad.sh (faster-whisper's silero_vad_v6.onnx converted
 *  to safetensors by tools/convert_silero_vad.py). */
typedef struct steno_vad steno_vad;

/** Loads the converted weights at path (a safetensors file; every tensor's name and shape is
 *  checked). *out is released with steno_vad_free. Errors name path: STENO_E_IO (missing,
 *  unreadable), STENO_E_FORMAT (not safetensors, a tensor missing or of another shape),
 *  STENO_E_NOMEM, STENO_E_INVALID_ARG (NULL). */
steno_status steno_vad_load(const char *path, steno_vad **out);

/** Releases vad (NULL is a no-op). */
void steno_vad_free(steno_vad *vad);

/** The number of speech probabilities steno_vad_probs gives for n_samples: one per 512-sample
 *  (32 ms) frame after padding to the next multiple of 512, i.e. n_samples / 512 + 1 (a whole
 *  frame of zeros when n_samples already is a multiple). Never fails. */
size_t steno_vad_n_frames(size_t n_samples);

/** Speech probabilities in [0, 1], one per 512-sample frame: frame i covers samples
 *  [512 i, 512 i + 512) of samples (16 kHz mono float32, n_samples of them; may be NULL when 0),
 *  framed as faster-whisper's SileroVADModel.__call__ (64 samples of context from the previous
 *  frame, the LSTM state carried through all frames). On success *probs is malloc'd (caller
 *  frees with free()) and *n_probs = steno_vad_n_frames(n_samples). The encoder runs on n_threads
 *  threads (<= 0: all CPUs); results are bit-identical for any count. Thread-safe.
 *  Errors: STENO_E_INVALID_ARG (NULL), STENO_E_NOMEM. */
steno_status steno_vad_probs(const steno_vad *vad, const float *samples, size_t n_samples, int n_threads,
                             float **probs, size_t *n_probs);

/** faster-whisper 1.2.1's VadOptions, with its defaults from steno_vad_default_options(). */
typedef struct steno_vad_options {
    double threshold;            /* a frame with probability >= threshold is speech (0.5) */
    double neg_threshold;        /* below it, silence; in between, as the frame before. < 0: None,
                                    i.e. max(threshold - 0.15, 0.01) (-1) */
    int min_speech_duration_ms;  /* spans not longer than this are dropped (0) */
    double max_speech_duration_s; /* longer spans are split at the last silence > 98 ms, else
                                     cut (INFINITY) */
    int min_silence_duration_ms; /* silence that ends a span (2000) */
    int speech_pad_ms;           /* added to each side of a span, or half the gap (400) */
    int n_threads;               /* threads for the network, <= 0: all CPUs (0) */
} steno_vad_options;

/** The defaults above. Obtain the struct from here, then set fields, so that fields appended in
 *  later versions get their defaults. Thread-safe; never fails. */
steno_vad_options steno_vad_default_options(void);

/** A span of speech: samples [start, end) at 16 kHz (seconds = samples / 16000). */
typedef struct steno_speech_span {
    int64_t start;
    int64_t end;
} steno_speech_span;

/** Speech spans of samples (as steno_vad_probs), exactly faster-whisper's get_speech_timestamps
 *  with opts (NULL = defaults). Thresholds are compared in float32, as faster-whisper under
 *  NumPy 2 compares its float32 probabilities. On success *spans is malloc'd (caller frees with free(); NULL
 *  when *n_spans is 0), in increasing order. Thread-safe. Errors: STENO_E_INVALID_ARG (NULL, an
 *  option out of range), STENO_E_NOMEM. */
steno_status steno_vad_speech_timestamps(const steno_vad *vad, const float *samples, size_t n_samples,
                                         const steno_vad_options *opts, steno_speech_span **spans, int *n_spans);

/** The second half of steno_vad_speech_timestamps alone: spans from probabilities already
 *  computed by steno_vad_probs for n_samples samples (n_probs of them; opts->n_threads unused).
 *  Ownership and errors as steno_vad_speech_timestamps. */
steno_status steno_vad_spans_from_probs(const float *probs, size_t n_probs, size_t n_samples,
                                        const steno_vad_options *opts, steno_speech_span **spans, int *n_spans);

/** steno_transcribe behind the VAD, as faster-whisper 1.2.1's transcribe(vad_filter=True): the
 *  speech spans of samples (steno_vad_speech_timestamps with vad_opts, NULL = defaults) are
 *  joined and transcribed as one input with params, then every segment and word time is mapped
 *  back to the input's timeline (SpeechTimestampsMap: + the silence removed before its span,
 *  rounded to 0.01 s; a word by the span holding its middle; a segment with words from its first
 *  to its last word). on_segment sees the mapped times; the result's duration is the input's.
 *  No speech gives an empty result. With clip_timestamps the VAD is not run (faster-whisper
 *  ignores vad_filter then). state NULL: w's default state (as steno_transcribe), else as
 *  steno_transcribe_with_state. Holds the input's samples (the VAD reads all of them) plus the
 *  speech; errors as steno_transcribe and steno_vad_speech_timestamps. */
steno_status steno_transcribe_vad(steno_whisper *w, steno_whisper_state *state, const steno_vad *vad,
                                  const steno_vad_options *vad_opts, const float *samples, size_t n,
                                  const steno_transcribe_params *params, steno_result **out);

/** The largest batch_size of steno_transcribe_batched. */
#define STENO_MAX_BATCH_SIZE 64

/** Batched long-form transcription, as faster-whisper 1.2.1's BatchedInferencePipeline.transcribe
 *  (docs/VAD.md "Batched mode"): the speech spans of samples (vad_opts NULL: get_speech_timestamps
 *  with min_silence_duration_ms 160; either way max_speech_duration_s is 30) are joined into
 *  chunks of at most 30 s (collect_chunks); each chunk is one window, decoded with params but
 *  without previous text, prefix or temperature fallback (params' first temperature only, no
 *  no-speech skip); batch_size windows (1..STENO_MAX_BATCH_SIZE) are encoded, then decoded
 *  together as rows of one decoder step. Each chunk's tokens are exactly those of the same chunk
 *  decoded alone (batch_size 1), for any batch_size and thread count. Segment times are on the
 *  input's timeline (restore_speech_timestamps); a chunk with no text gives a segment with no
 *  tokens, as faster-whisper. The fast path only; params->word_timestamps and clip_timestamps are
 *  refused (STENO_E_INVALID_ARG) in this version. faster-whisper's batched defaults differ from
 *  steno_transcribe_default_params(): beam_size 5 and without_timestamps 1 (the CLI sets them).
 *  state NULL: w's default state. Memory: batch_size decoders (self-attention caches for
 *  max(1, beam_size, best_of) rows each, the window's cross-attention K/V). on_segment and verbose
 *  see each batch's segments after the batch. Errors: as steno_transcribe_vad, STENO_E_INVALID_ARG
 *  (batch_size out of range, the faithful path). Thread-safety: as steno_transcribe_with_state. */
steno_status steno_transcribe_batched(steno_whisper *w, steno_whisper_state *state, const steno_vad *vad,
                                      const steno_vad_options *vad_opts, const float *samples, size_t n,
                                      int batch_size, const steno_transcribe_params *params, steno_result **out);

/* ---------------------------------------------------------------------------------------------
 * Live transcription (whisper_streaming's LocalAgreement-2; docs/STREAMING.md)
 * ------------------------------------------------------------------------------------------- */

/** A live transcription over a loaded Whisper model: audio is pushed as it arrives, text comes
 *  back once it has settled. The policy is LocalAgreement-2 of whisper_streaming (Macháček, Dabre,
 *  Bojar 2023; ufal/whisper_streaming whisper_online.py: HypothesisBuffer.insert/flush,
 *  OnlineASRProcessor.process_iter/prompt/chunk_completed_segment): every step the whole audio
 *  buffer is transcribed with word timestamps, prompted with the committed text that scrolled
 *  out of it; the words on which this hypothesis and the previous one agree (longest common
 *  prefix) are committed; the buffer is cut at the end of a segment whose text is committed once
 *  it is longer than length_ms. With a VAD, silence is never transcribed (whisper_streaming's
 *  VAC): audio before the first speech is dropped (keep_ms of it kept), and vad_silence_ms of
 *  silence after speech ends the utterance: its last hypothesis is committed whole and the buffer
 *  starts afresh. One handle serves one thread at a time; several handles over one steno_whisper
 *  run concurrently (each has its own steno_whisper_state). */
typedef struct steno_stream steno_stream;

/** Options; get defaults from steno_stream_default_options(), then set fields. */
typedef struct steno_stream_options {
    int step_ms;          /* 1000: a hypothesis once this much new audio arrived (whisper_streaming's
                             --min-chunk-size; whisper.cpp stream's --step); 100..30000 */
    int length_ms;        /* 15000: a buffer longer than this is cut at the last committed segment
                             end (whisper_streaming's buffer_trimming_sec); a buffer that still
                             exceeds 30 s is committed whole and restarted; 1000..30000 */
    int keep_ms;          /* 200: audio kept before the speech onset (whisper.cpp's --keep); 0..5000 */
    int vad_silence_ms;   /* 600: silence after speech that ends an utterance; 100..10000 */
    double vad_threshold; /* 0.5: a 32-ms frame with probability >= this is speech */
    const char *language; /* NULL: "en" on an English-only model; a multilingual one detects it on
                             each hypothesis of speech until one is >= 0.8 sure, then keeps it
                             (copied at creation) */
    int beam_size;        /* 0: greedy (whisper_streaming runs faster-whisper with 5) */
    int n_threads;        /* <= 0: as many as the model was loaded with */
    /* Polled before each window is encoded (may be NULL): non-zero fails the call with
     * STENO_E_ABORTED (a server whose client left). */
    int (*should_abort)(void *user);
    void *user;
} steno_stream_options;

steno_stream_options steno_stream_default_options(void);

/** A piece of committed text: words in order, times in seconds on the stream's timeline (sample 0
 *  of the first push is 0.0), as Whisper's word timestamps give them. */
typedef struct steno_stream_commit {
    double start, end; /* the first word's start, the last word's end */
    const char *text;  /* UTF-8, the words as Whisper writes them (each with its leading space) */
} steno_stream_commit;

/** A new stream over w (only read; must outlive it) and vad (NULL: no VAD, every step is
 *  transcribed; else must outlive it). opts NULL: the defaults. Errors: STENO_E_INVALID_ARG (NULL
 *  w or out, an option out of range, a language the model lacks: the message names it),
 *  STENO_E_NOMEM. Free with steno_stream_free. */
steno_status steno_stream_new(const steno_whisper *w, const steno_vad *vad, const steno_stream_options *opts,
                              steno_stream **out);

/** Appends n samples (16 kHz mono float32; any n, also 0) and, when at least step_ms of audio
 *  arrived since the last hypothesis, computes one hypothesis over the whole buffer (all the new
 *  audio at once, up to length_ms / 2 of it per hypothesis: a caller that fell behind catches up in
 *  pieces of length_ms / 2, one hypothesis each). *commits (may be NULL when n_commits is
 *  NULL) receives the text committed by this call, *n_commits of them (often 0); it is owned by s
 *  and valid until the next call on s. The text for given audio depends only on the pushes'
 *  sizes (push step_ms pieces for results independent of timing). Errors: STENO_E_INVALID_ARG
 *  (NULL, after steno_stream_finish), STENO_E_ABORTED, STENO_E_NOMEM; after an error the stream
 *  can only be freed. */
steno_status steno_stream_push(steno_stream *s, const float *samples, size_t n,
                               const steno_stream_commit **commits, int *n_commits);

/** Ends the stream: a last hypothesis over the audio not yet transcribed (when it holds speech),
 *  then everything still uncommitted is committed (a stream cut mid-word gives that word as
 *  Whisper heard it). Commits as steno_stream_push. Later pushes fail. Errors as push. */
steno_status steno_stream_finish(steno_stream *s, const steno_stream_commit **commits, int *n_commits);

/** Seconds of audio pushed so far. */
double steno_stream_duration(const steno_stream *s);

/** Releases s (NULL is a no-op). */
void steno_stream_free(steno_stream *s);

#ifdef __cplusplus
}
#endif
#endif /* STENO_H */
