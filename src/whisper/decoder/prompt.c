#include "whisper/decoder/prompt.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "text/utf8.h"

int whisper_prompt_capacity(const whisper_prompt_in *in) {
    const int keep = in->n_text_ctx / 2 - 1;
    return 1 + in->n_hotwords + (in->n_previous < keep ? in->n_previous : keep) + in->n_sot_seq + 1 + 1 +
           in->n_prefix;
}

steno_status whisper_prompt_build(const whisper_prompt_in *in, int *out, int cap, whisper_prompt_layout *lay) {
    const int N = in->n_text_ctx, keep = N / 2 - 1;
    const int has_prefix = in->prefix && in->n_prefix > 0;
    const int use_hotwords = in->hotwords && in->n_hotwords > 0 && !has_prefix;
    int n_prev = in->previous ? (in->n_previous < keep ? in->n_previous : keep) : 0;
    const int n_forced = has_prefix ? in->n_prefix + !in->without_timestamps : 0;
    const int tail = in->n_sot_seq + !!in->without_timestamps + n_forced;
    const int n_hot = use_hotwords ? in->n_hotwords : 0;
    int head = (n_prev > 0 || use_hotwords) ? 1 + n_hot + n_prev : 0;
    if (head + tail > N && n_prev > 0) { /* drop the oldest previous tokens: one position must stay free */
        const int over = head + tail - N;
        n_prev = over >= n_prev ? 0 : n_prev - over;
        head = (n_prev > 0 || use_hotwords) ? 1 + n_hot + n_prev : 0;
    }
    if (head + tail > N || head + tail > cap)
        return steno_fail(STENO_E_INVALID_ARG, "prompt: %d tokens do not fit in %d positions", head + tail,
                          N < cap ? N : cap);
    int n = 0;
    if (head) {
        out[n++] = in->sot_prev;
        if (n_hot) memcpy(out + n, in->hotwords, sizeof(int) * (size_t)n_hot);
        n += n_hot;
        if (n_prev) memcpy(out + n, in->previous + (in->n_previous - n_prev), sizeof(int) * (size_t)n_prev);
        n += n_prev;
    }
    lay->sot_index = n;
    memcpy(out + n, in->sot_seq, sizeof(int) * (size_t)in->n_sot_seq);
    n += in->n_sot_seq;
    if (in->without_timestamps) out[n++] = in->no_timestamps;
    lay->sample_begin = n;
    if (has_prefix) {
        if (!in->without_timestamps) out[n++] = in->timestamp_begin; /* <|0.00|>: the prefix starts the window */
        memcpy(out + n, in->prefix, sizeof(int) * (size_t)in->n_prefix);
        n += in->n_prefix;
    }
    lay->n_forced = n_forced;
    lay->n = n;
    return STENO_OK;
}

/* Python's x[-k:] on a list of length len, as a start index. */
static int py_tail_start(int len, int k) {
    if (k > 0) return len > k ? len - k : 0;
    if (k == 0) return 0;          /* x[-0:] is x[0:] */
    return -k < len ? -k : len;    /* x[-(-m):] is x[m:] */
}

int whisper_prompt_previous(const int *all, int n_all, int n_initial, int reset_since, int carry,
                            int n_text_ctx, int *out) {
    const int keep = n_text_ctx / 2 - 1;
    if (!carry) {
        const int from = reset_since < n_all ? reset_since : n_all;
        const int n = n_all - from < keep ? n_all - from : keep;
        if (n > 0) memcpy(out, all + n_all - n, sizeof(int) * (size_t)n);
        return n;
    }
    /* prompt = initial + rest[py_tail_start:], then the last `keep` of that */
    const int ignored = n_initial > reset_since ? n_initial : reset_since;
    const int rest0 = ignored < n_all ? ignored : n_all;
    const int rest_len = n_all - rest0;
    const int rest_from = rest0 + py_tail_start(rest_len, keep - n_initial);
    const int n_rest = n_all - rest_from;
    const int total = n_initial + n_rest;
    int skip = total > keep ? total - keep : 0; /* left-slice: the oldest tokens go first */
    int n = 0;
    for (int i = skip; i < n_initial; i++) out[n++] = all[i];
    skip = skip > n_initial ? skip - n_initial : 0;
    for (int i = rest_from + skip; i < n_all; i++) out[n++] = all[i];
    return n;
}

steno_status whisper_prompt_encode(const steno_tokenizer *t, const char *text, int n_text_ctx, int **ids, int *n) {
    *ids = NULL;
    *n = 0;
    size_t len;
    const char *s = steno_strip(text, &len);
    char *spaced = malloc(len + 2);
    if (!spaced) return steno_fail(STENO_E_NOMEM, "prompt: out of memory");
    spaced[0] = ' ';
    memcpy(spaced + 1, s, len);
    spaced[len + 1] = '\0';
    steno_status st = steno_tokenizer_encode(t, spaced, ids, n);
    free(spaced);
    if (st != STENO_OK) return st;
    if (n_text_ctx > 0 && *n >= n_text_ctx / 2) *n = n_text_ctx / 2 - 1;
    return STENO_OK;
}
