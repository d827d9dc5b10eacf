#include "whisper/decoder/logit_filters.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "kernels/ops/argmax.h"
#include "kernels/gemv/vec.h"

void whisper_log_softmax(const float *logits, int n, float *out) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    const double lse = mx + log(sum);
    for (int i = 0; i < n; i++) out[i] = (float)((double)logits[i] - lse);
}

steno_status whisper_filters_build(whisper_filters *f) {
    const int n = f->n_vocab, tb = f->timestamp_begin;
    vec_init(); /* vec_sum_exp: the same kernel for both paths */
    f->mask = calloc((size_t)n, sizeof(float));
    f->mask_first = calloc((size_t)n, sizeof(float));
    f->mask_blank = calloc((size_t)n, sizeof(float));
    if (!f->mask || !f->mask_first || !f->mask_blank) {
        whisper_filters_free(f);
        return steno_fail(STENO_E_NOMEM, "logit filters: out of memory");
    }
    for (int i = 0; i < f->n_suppress_ids; i++) f->mask[f->suppress_ids[i]] = -INFINITY;
    if (f->timestamps) f->mask[f->no_timestamps] = -INFINITY;
    for (int i = 0; i < n; i++) f->mask_first[i] = f->mask[i];
    if (f->suppress_blank)
        for (int i = 0; i < f->n_blank_ids; i++) f->mask_first[f->blank_ids[i]] = -INFINITY;
    for (int i = 0; i < n; i++) f->mask_blank[i] = f->mask_first[i];
    if (f->timestamps) {
        for (int i = 0; i < tb && i < n; i++) f->mask_first[i] = -INFINITY; /* a timestamp comes first */
        if (f->max_initial_timestamp_index >= 0)
            for (int i = tb + f->max_initial_timestamp_index + 1; i < n; i++) f->mask_first[i] = -INFINITY;
    }
    return STENO_OK;
}

void whisper_filters_free(whisper_filters *f) {
    free(f->mask);
    free(f->mask_first);
    free(f->mask_blank);
    f->mask = f->mask_first = f->mask_blank = NULL;
}

/* The first index i in [a, e) whose x[i] beats -inf and every earlier value (NaN never), with *m
 * its value; -1 (and *m untouched) when there is none. steno_argmax_f32's vector pass when x[a] is
 * not NaN (its "c = 0, then x[i] > x[c]" then chooses the same index); the scalar walk otherwise. */
static int first_max(const float *x, int a, int e, float *m) {
    if (e <= a) return -1;
    if (!isnan(x[a])) {
        const int i = a + steno_argmax_f32(x + a, e - a);
        if (!(x[i] > -INFINITY)) return -1;
        *m = x[i];
        return i;
    }
    int arg = -1;
    for (int i = a; i < e; i++)
        if (x[i] > *m) *m = x[i], arg = i;
    return arg;
}

whisper_filtered whisper_apply_filters(const whisper_filters *f, const int *sampled, int n_sampled,
                                       float *logits) {
    const int n = f->n_vocab, tb = f->timestamp_begin;
    const float *mask = n_sampled > 0 ? f->mask : f->after_prefix ? f->mask_blank : f->mask_first;
    /* dynamic rules as two ranges set to -inf: [cut0, cut1) and [ts0, ts1) */
    int cut0 = 0, cut1 = 0, ts0 = tb, ts1 = tb;
    if (f->timestamps && n_sampled > 0) {
        const int last_ts = sampled[n_sampled - 1] >= tb;
        const int penult_ts = n_sampled < 2 || sampled[n_sampled - 2] >= tb;
        if (last_ts) {
            if (penult_ts) ts1 = n;  /* a timestamp pair is closed: text must follow */
            else cut1 = f->eot;      /* an open timestamp: a timestamp or eot follows */
        }
        for (int i = n_sampled - 1; i >= 0; i--) {
            if (sampled[i] >= tb) { /* timestamps never decrease; segments have non-zero length */
                const int limit = (last_ts && !penult_ts) ? sampled[i] : sampled[i] + 1;
                if (ts1 < limit) ts1 = limit;
                break;
            }
        }
    }
    /* The mask, then the ranges as runs of -inf (the same values as one pass testing each index:
     * beam search runs this over every row of every step), then each part's maximum and its first
     * index; the exponentials are then summed by the vector kernel over each part. */
    for (int i = 0; i < n; i++) logits[i] += mask[i];
    for (int i = cut0 > 0 ? cut0 : 0; i < cut1 && i < n; i++) logits[i] = -INFINITY;
    for (int i = ts0 > 0 ? ts0 : 0; i < ts1 && i < n; i++) logits[i] = -INFINITY;
    float m_text = -INFINITY, m_ts = -INFINITY;
    const int arg_text = first_max(logits, 0, tb < n ? tb : n, &m_text);
    const int arg_ts = first_max(logits, tb < n ? tb : n, n, &m_ts);
    const int nt = tb < n ? tb : n;
    const double s_text = arg_text >= 0 ? vec_sum_exp(logits, nt, m_text) : 0.0;
    const double s_ts = arg_ts >= 0 ? vec_sum_exp(logits + nt, n - nt, m_ts) : 0.0;
    const double lse_text = arg_text >= 0 ? m_text + log(s_text) : -INFINITY;
    const double lse_ts = arg_ts >= 0 ? m_ts + log(s_ts) : -INFINITY;
    double lse;
    if (lse_text == -INFINITY) lse = lse_ts;
    else if (lse_ts == -INFINITY) lse = lse_text;
    else lse = fmax(lse_text, lse_ts) + log1p(exp(-fabs(lse_text - lse_ts)));
    whisper_filtered r;
    r.argmax = (arg_text >= 0 && (arg_ts < 0 || m_text >= m_ts)) ? arg_text : arg_ts;
    if (r.argmax < 0) r.argmax = 0;
    r.lse = lse;
    /* if the summed probability of the timestamps beats every text token, sample a timestamp:
     * openai's logsumexp(logprobs[tb:]) > max(logprobs[:tb]), both sides shifted by the same lse,
     * compared without it (the row's own log-sum-exp does not change the answer) */
    if (f->timestamps && n_sampled > 0 && arg_ts >= 0 && arg_text >= 0 && lse_ts > (double)m_text) {
        for (int i = 0; i < tb; i++) logits[i] = -INFINITY;
        r.argmax = arg_ts;
        r.lse = lse_ts;
    }
    return r;
}
