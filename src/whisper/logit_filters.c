#include "whisper/logit_filters.h"

#include <math.h>

void whisper_log_softmax(const float *logits, int n, float *out) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    const double lse = mx + log(sum);
    for (int i = 0; i < n; i++) out[i] = (float)((double)logits[i] - lse);
}

static void fill(float *x, int from, int to, int n) {
    if (from < 0) from = 0;
    if (to > n) to = n;
    for (int i = from; i < to; i++) x[i] = -INFINITY;
}

void whisper_apply_filters(const whisper_filters *f, const int *sampled, int n_sampled,
                           float *logits) {
    const int n = f->n_vocab, tb = f->timestamp_begin;
    if (f->suppress_blank && n_sampled == 0) {
        for (int i = 0; i < f->n_blank_ids; i++) logits[f->blank_ids[i]] = -INFINITY;
    }
    for (int i = 0; i < f->n_suppress_ids; i++) logits[f->suppress_ids[i]] = -INFINITY;
    if (!f->timestamps) return;

    logits[f->no_timestamps] = -INFINITY;
    const int last_ts = n_sampled >= 1 && sampled[n_sampled - 1] >= tb;
    const int penult_ts = n_sampled < 2 || sampled[n_sampled - 2] >= tb;
    if (last_ts) {
        if (penult_ts) fill(logits, tb, n, n); /* a timestamp pair is closed: text must follow */
        else fill(logits, 0, f->eot, n);       /* an open timestamp: a timestamp or eot follows */
    }
    int last_timestamp = -1;
    for (int i = n_sampled - 1; i >= 0; i--) {
        if (sampled[i] >= tb) {
            last_timestamp = sampled[i];
            break;
        }
    }
    if (last_timestamp >= 0) {
        /* timestamps never decrease, and a segment has non-zero length */
        const int limit = (last_ts && !penult_ts) ? last_timestamp : last_timestamp + 1;
        fill(logits, tb, limit, n);
    }
    if (n_sampled == 0) {
        fill(logits, 0, tb, n);
        if (f->max_initial_timestamp_index >= 0) fill(logits, tb + f->max_initial_timestamp_index + 1, n, n);
    }

    /* if the summed probability of the timestamps beats every text token, sample a timestamp */
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    if (mx == -INFINITY) return;
    double sum_all = 0.0, sum_ts = 0.0;
    float max_text = -INFINITY;
    for (int i = 0; i < n; i++) {
        double e = exp((double)logits[i] - mx);
        sum_all += e;
        if (i >= tb) sum_ts += e;
        else if (logits[i] > max_text) max_text = logits[i];
    }
    const double lse = mx + log(sum_all);
    const double ts_logprob = sum_ts > 0 ? mx + log(sum_ts) - lse : -INFINITY;
    const double max_text_logprob = (double)max_text - lse;
    if (ts_logprob > max_text_logprob) fill(logits, 0, tb, n);
}
