/* test_logit_filters.c — whisper_apply_filters against a one-pass reference (the loop it replaced:
 * per index, the mask added, the two dynamic ranges set to -inf, the first maximum of the text part
 * and of the timestamp part tracked from -inf): the filtered row, the argmax and the log-sum-exp
 * must be bit-identical. Rows are random with ties at the maximum, -inf runs, NaN at a part's first
 * index and elsewhere, and all -inf parts; timestamps on and off, every sampled-token pattern that
 * opens or closes a timestamp pair, the first position (mask_first, mask_blank). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemv/vec.h"
#include "rng.h"
#include "test_util.h"
#include "whisper/decoder/logit_filters.h"

#define NV 1000
#define TB 800 /* timestamp_begin */
#define EOT 700
#define NOTS 799

/* The pass whisper_apply_filters made before it became a vector add, -inf runs and the argmax
 * kernel (logit_filters.c's former scalar pass), with its ranges computed the same way. */
static whisper_filtered reference(const whisper_filters *f, const int *sampled, int n_sampled, float *logits) {
    const int n = f->n_vocab, tb = f->timestamp_begin;
    const float *mask = n_sampled > 0 ? f->mask : f->after_prefix ? f->mask_blank : f->mask_first;
    int cut0 = 0, cut1 = 0, ts0 = tb, ts1 = tb;
    if (f->timestamps && n_sampled > 0) {
        const int last_ts = sampled[n_sampled - 1] >= tb;
        const int penult_ts = n_sampled < 2 || sampled[n_sampled - 2] >= tb;
        if (last_ts) {
            if (penult_ts) ts1 = n;
            else cut1 = f->eot;
        }
        for (int i = n_sampled - 1; i >= 0; i--) {
            if (sampled[i] >= tb) {
                const int limit = (last_ts && !penult_ts) ? sampled[i] : sampled[i] + 1;
                if (ts1 < limit) ts1 = limit;
                break;
            }
        }
    }
    float m_text = -INFINITY, m_ts = -INFINITY;
    int arg_text = -1, arg_ts = -1;
    for (int i = 0; i < n; i++) {
        float x = logits[i] + mask[i];
        if ((i >= cut0 && i < cut1) || (i >= ts0 && i < ts1)) x = -INFINITY;
        logits[i] = x;
        if (i < tb) {
            if (x > m_text) m_text = x, arg_text = i;
        } else if (x > m_ts) {
            m_ts = x, arg_ts = i;
        }
    }
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
    if (f->timestamps && n_sampled > 0 && arg_ts >= 0 && arg_text >= 0 && lse_ts > (double)m_text) {
        for (int i = 0; i < tb; i++) logits[i] = -INFINITY;
        r.argmax = arg_ts;
        r.lse = lse_ts;
    }
    return r;
}

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static float frand(void) { return (float)(rng_xorshift64(&g_rng) >> 40) / (float)(1u << 24); }

/* a row: values in [-8, 8) on a coarse grid (ties), then the case's specials */
static void make_row(float *x, int kind) {
    for (int i = 0; i < NV; i++) x[i] = floorf(frand() * 64.0f) / 4.0f - 8.0f;
    switch (kind) {
    case 1: x[0] = NAN; break;                                    /* NaN at the text part's start */
    case 2: x[TB] = NAN; break;                                   /* at the timestamp part's start */
    case 3: x[17] = NAN, x[TB + 30] = NAN; break;                 /* inside the parts */
    case 4: for (int i = 0; i < TB; i++) x[i] = -INFINITY; break; /* a text part of -inf */
    case 5: for (int i = TB; i < NV; i++) x[i] = -INFINITY; break;
    case 6: x[5] = x[400] = x[650] = 9.0f; break;                 /* tied maxima */
    case 7: for (int i = 0; i < NV; i++) x[i] = -INFINITY; break;
    case 8: x[0] = x[TB] = 20.0f; break;                          /* the maximum at a part's start */
    default: break;
    }
}

int main(void) {
    vec_init();
    int suppress[] = {3, 50, 51, 52, 699, 798};
    int blank[] = {220, EOT};
    for (int ts = 0; ts < 2; ts++) {
        whisper_filters f = {0};
        f.n_vocab = NV;
        f.eot = EOT;
        f.no_timestamps = NOTS;
        f.timestamp_begin = TB;
        f.suppress_blank = 1;
        f.blank_ids = blank;
        f.n_blank_ids = 2;
        f.suppress_ids = suppress;
        f.n_suppress_ids = 6;
        f.timestamps = ts;
        f.max_initial_timestamp_index = 50;
        CHECK(whisper_filters_build(&f) == STENO_OK, "filters build");
        /* sampled-token patterns: none (first position), text only, an open timestamp, a closed
         * pair, a pair then text, a timestamp after text */
        const int pats[][4] = {{0}, {10, 11, 12}, {TB + 5}, {TB + 5, TB + 9}, {TB + 5, 30, TB + 9}, {30, 40, TB + 20}};
        const int npat[] = {0, 3, 1, 2, 3, 3};
        for (int after = 0; after < 2; after++) {
            f.after_prefix = after;
            for (int p = 0; p < 6; p++)
                for (int kind = 0; kind <= 8; kind++)
                    for (int rep = 0; rep < 20; rep++) {
                        float a[NV], b[NV];
                        make_row(a, kind);
                        memcpy(b, a, sizeof a);
                        const whisper_filtered ra = reference(&f, pats[p], npat[p], a);
                        const whisper_filtered rb = whisper_apply_filters(&f, pats[p], npat[p], b);
                        CHECK(memcmp(a, b, sizeof a) == 0, "ts %d after %d pattern %d kind %d: rows differ", ts, after, p,
                              kind);
                        CHECK(ra.argmax == rb.argmax, "ts %d after %d pattern %d kind %d: argmax %d vs %d", ts, after,
                              p, kind, ra.argmax, rb.argmax);
                        CHECK(memcmp(&ra.lse, &rb.lse, sizeof ra.lse) == 0 || (isnan(ra.lse) && isnan(rb.lse)),
                              "ts %d after %d pattern %d kind %d: lse %.17g vs %.17g", ts, after, p, kind, ra.lse,
                              rb.lse);
                    }
        }
        whisper_filters_free(&f);
    }
    printf("test_logit_filters: %d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
