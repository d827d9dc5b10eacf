/* logit_filters.h — openai-whisper's logit filters (whisper/decoding.py: SuppressBlank,
 * SuppressTokens, ApplyTimestampRules), applied in place on one row of logits, with the seed's S4
 * shape: the static part (the suppress set, <|notimestamps|>) is a mask precomputed once per
 * filter configuration, the first step's part (blank, text before the first timestamp, the
 * max_initial_timestamp cap) a second one, and the dynamic timestamp rules are index ranges; the
 * mask is one vector add, the ranges runs of -inf, the best text and timestamp logits the argmax
 * kernel's first maxima (the values and indices of the single pass it replaced:
 * tests/unit/test_logit_filters.c), and the vector kernel vec_sum_exp (float32 exponentials summed in float64, as torch's float32
 * log_softmax computes them in float32) then gives the log-sum-exp of the timestamps and of the
 * whole row that the sampler and the log-probabilities need (both paths use it). The
 * timestamp-probability rule compares the timestamps' log-sum-exp with the best text logit
 * directly, openai's comparison of the two log-probabilities without the common shift. */
#ifndef STENO_WHISPER_LOGIT_FILTERS_H
#define STENO_WHISPER_LOGIT_FILTERS_H

#include "whisper/model/model.h"

typedef struct whisper_filters {
    int n_vocab;
    int eot, no_timestamps, timestamp_begin;
    int suppress_blank;
    const int *blank_ids; /* tokenizer.encode(" ") + [eot] */
    int n_blank_ids;
    const int *suppress_ids; /* sorted, unique; may be empty */
    int n_suppress_ids;
    int timestamps;                  /* 0 when without_timestamps */
    int max_initial_timestamp_index; /* round(max_initial_timestamp / 0.02); < 0: no limit */
    float *mask;       /* [n_vocab] 0 or -inf: every step (built by whisper_filters_build) */
    float *mask_first; /* [n_vocab] 0 or -inf: the first sampled position */
    float *mask_blank; /* [n_vocab] 0 or -inf: the first sampled position after a forced prefix */
    /* Set by the decoder for each window: 1 when forced prefix tokens precede the first sampled
     * one. CTranslate2 (faster-whisper's prefix) then applies at that position only the suppress
     * set and the blank suppression, not the first-timestamp and max_initial_timestamp rules nor
     * the timestamp-probability rule (ApplyTimestampRules acts from step > sample_begin). */
    int after_prefix;
} whisper_filters;

/** Builds the two masks from the fields above (allocates them). Errors: STENO_E_NOMEM. */
steno_status whisper_filters_build(whisper_filters *f);
void whisper_filters_free(whisper_filters *f);

/** What the filtering pass learned about the filtered row. */
typedef struct whisper_filtered {
    int argmax;  /* first index of the maximum (torch.argmax) */
    double lse;  /* log Σ exp(logits): logprob(i) = logits[i] − lse */
} whisper_filtered;

/** Applies the filters to logits [n_vocab] for the next token, given the tokens sampled so far in
 *  this window (sampled [n_sampled], i.e. tokens[sample_begin:]). */
whisper_filtered whisper_apply_filters(const whisper_filters *f, const int *sampled, int n_sampled,
                                       float *logits);

/** log_softmax of logits [n] into out [n] (float64 accumulation). */
void whisper_log_softmax(const float *logits, int n, float *out);

#endif
