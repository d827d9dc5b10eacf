/* prompt.h — the decoder prompt of one 30-s window: which tokens precede the first sampled one.
 *
 * Layout (faster-whisper 1.2.1 transcribe.py: WhisperModel.get_prompt; openai-whisper
 * decoding.py: DecodingTask._get_initial_tokens):
 *
 *   [<|startofprev|>, hotwords..., previous[-(n_text_ctx/2 − 1):]...]   when previous tokens
 *                                                    exist, or hotwords exist and no prefix
 *   + sot_seq                       [<|startoftranscript|>] (+ language, task: multilingual)
 *   + [<|notimestamps|>]            without timestamps
 *   + [<|0.00|>] + prefix           with a prefix (the <|0.00|> only with timestamps)
 *
 * The tokens after the SOT sequence (and <|notimestamps|>) are *forced*: the decoder reads them
 * like sampled tokens (CTranslate2 decodes them as a hard prefix), they are part of the window's
 * output tokens, and the logit filters start counting after them.
 *
 * The previous tokens come from whisper_prompt_previous (openai-whisper transcribe(): the text
 * since the last prompt reset, or with carry_initial_prompt the initial prompt followed by as
 * much recent text as fits). */
#ifndef STENO_WHISPER_PROMPT_H
#define STENO_WHISPER_PROMPT_H

#include "steno.h"
#include "text/whisper_bpe.h"

typedef struct whisper_prompt_in {
    int n_text_ctx;                       /* decoder positions (448) */
    int sot_prev, no_timestamps, timestamp_begin;
    const int *sot_seq;                   /* [n_sot_seq]: <|startoftranscript|> (+ lang, task) */
    int n_sot_seq;
    const int *hotwords;                  /* [n_hotwords] or NULL: whisper_prompt_encode'd */
    int n_hotwords;
    const int *previous;                  /* [n_previous] or NULL: only the last
                                             n_text_ctx/2 − 1 are used */
    int n_previous;
    const int *prefix;                    /* [n_prefix] or NULL: no prefix in this window */
    int n_prefix;
    int without_timestamps;
} whisper_prompt_in;

typedef struct whisper_prompt_layout {
    int n;            /* tokens written */
    int sot_index;    /* index of <|startoftranscript|> (the no-speech probability is read there) */
    int sample_begin; /* index of the first forced or sampled token: the window's output starts here */
    int n_forced;     /* forced tokens at sample_begin ([<|0.00|>] + prefix), 0 without a prefix */
} whisper_prompt_layout;

/** The most tokens whisper_prompt_build can write for in (an upper bound for out's capacity). */
int whisper_prompt_capacity(const whisper_prompt_in *in);

/** Writes the prompt of in to out [cap]. If the whole prompt would exceed n_text_ctx positions
 *  (only with long hotwords + previous text, or a long initial prompt + a long prefix), the oldest
 *  previous tokens are dropped until it fits, so that one position is left to sample
 *  (CTranslate2 would run past its position table there).
 *  Errors: STENO_E_INVALID_ARG when cap is too small or the SOT sequence + forced tokens alone do
 *  not fit. */
steno_status whisper_prompt_build(const whisper_prompt_in *in, int *out, int cap, whisper_prompt_layout *lay);

/** The previous-text tokens of the next window, as openai-whisper's transcribe() sets
 *  decode_options["prompt"] (as of openai/whisper c0d2f62, 2025-06), cut to the last
 *  n_text_ctx/2 − 1 that the decoder uses (DecodingTask: prompt_tokens[-(n_ctx // 2 - 1):]):
 *    carry == 0: all[reset_since:]
 *    carry != 0: all[:n_initial] + all[max(n_initial, reset_since):][-remaining:]
 *                with remaining = n_text_ctx/2 − 1 − n_initial and Python's slice meaning
 *                ([-0:] is the whole list, [-(−k):] drops the first k).
 *  all [n_all]: the initial prompt's n_initial tokens, then every segment's tokens so far.
 *  out must hold n_text_ctx/2 − 1 ints. Returns the count written. */
int whisper_prompt_previous(const int *all, int n_all, int n_initial, int reset_since, int carry,
                            int n_text_ctx, int *out);

/** Tokenizes text as faster-whisper does for a prompt, hotwords or prefix:
 *  encode(" " + text.strip()). With n_text_ctx > 0, a result of n_text_ctx/2 tokens or more is
 *  cut to its first n_text_ctx/2 − 1 (get_prompt's rule for hotwords and the prefix; the initial
 *  prompt is not cut: pass 0). *ids is malloc'd (free()). Errors: STENO_E_NOMEM. */
steno_status whisper_prompt_encode(const steno_tokenizer *t, const char *text, int n_text_ctx, int **ids, int *n);

#endif
