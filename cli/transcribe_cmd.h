/* transcribe_cmd.h — what `steno transcribe`'s two files share: the parsed options
 * (transcribe_opts.c parses them, transcribe_cmd.c runs the command with them). */
#ifndef STENO_CLI_TRANSCRIBE_CMD_H
#define STENO_CLI_TRANSCRIBE_CMD_H

#include <stdbool.h>

#include "options.h"
#include "steno.h"

#define DEFAULT_MODEL "tiny.en"
#define MAX_TEMPERATURES 64

typedef struct transcribe_opts {
    const char *model, *model_dir, *output_dir, *output_format, *language, *initial_prompt;
    const char *output_name; /* --output-name: the stem of the output files (one input only) */
    steno_task task;
    bool detect_language; /* --detect-language: print the language probabilities and stop */
    int verbose; /* -1: default */
    bool progress;
    double temperature, increment, compression_ratio_threshold, logprob_threshold,
        no_speech_threshold;
    bool no_increment, no_compression, no_logprob, no_no_speech;
    bool condition_on_previous_text;
    bool carry_initial_prompt, suppress_blank, without_timestamps;
    const char *prefix, *hotwords;
    double *clip_timestamps; /* malloc'd */
    int n_clip_timestamps;
    int *suppress_tokens; /* malloc'd; NULL: the default "-1" */
    int n_suppress_tokens;
    bool has_suppress_tokens;
    int threads;
    int beam_size, best_of;     /* 0: greedy; 1 */
    double patience, length_penalty;
    unsigned long long seed;
    steno_whisper_options load; /* --path, --weights, --audio-ctx */
    bool weights_given, compute_type_given;
    int compute_weights; /* --compute-type: a steno_weights value, or -1 for default/auto (the path's own) */
    bool word_timestamps;
    const char *prepend_punctuations, *append_punctuations;
    steno_writer_options writer; /* --max-line-width, --max-line-count, --max-words-per-line, --highlight-words */
    double hallucination_silence_threshold; /* < 0: None */
    bool highlight_words;  /* --highlight-words, into writer */
    bool vad;              /* --vad: faster-whisper's vad_filter (steno_transcribe_vad) */
    const char *vad_model; /* NULL: the model cache's silero_vad/ */
    steno_vad_options vad_opts;
    int batch_size;        /* --batch-size: 0 sequential, else steno_transcribe_batched */
    /* speculative decoding (steno_transcribe_params.draft_kind); -1 / 0 / NULL: not given */
    int draft_kind, num_draft, draft_layers, draft_weights, ngram_min, ngram_max;
    const char *draft_model;
    steno_opt_list files;  /* the inputs */
} transcribe_opts;

/** The option table of `steno transcribe` (transcribe_opts.c). */
extern const steno_opts_spec steno_transcribe_spec;

#endif
