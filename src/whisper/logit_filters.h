/* logit_filters.h — openai-whisper's logit filters (whisper/decoding.py: SuppressBlank,
 * SuppressTokens, ApplyTimestampRules), applied in place on one row of logits, in that order. */
#ifndef STENO_WHISPER_LOGIT_FILTERS_H
#define STENO_WHISPER_LOGIT_FILTERS_H

#include "whisper/model.h"

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
} whisper_filters;

/** Applies the filters to logits [n_vocab] for the next token, given the tokens sampled so far in
 *  this window (sampled [n_sampled], i.e. tokens[sample_begin:]). */
void whisper_apply_filters(const whisper_filters *f, const int *sampled, int n_sampled,
                           float *logits);

/** log_softmax of logits [n] into out [n] (float64 accumulation). */
void whisper_log_softmax(const float *logits, int n, float *out);

#endif
