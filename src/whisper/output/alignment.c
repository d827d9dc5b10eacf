/* alignment.c — word-level timestamps (see alignment.h for the pipeline and the references). */
#include "whisper/output/alignment.h"
#include "whisper/model/language_tokens.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "text/utf8.h"
#include "whisper/decoder/decoding.h"

#define MEDIAN_FILTER_WIDTH 7
#define TOKENS_PER_SECOND 50.0  /* encoder positions per second (20 ms each) */
#define FRAMES_PER_SECOND 100.0 /* mel frames per second (10 ms each) */

/* ------------------------------------------------------------------ the attention matrix → DTW */

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* CTranslate2 ops::MedianFilter (= openai's median_filter): width w along rows of length n,
 * reflect padding; rows no longer than w/2 are copied unchanged. */
static void median_filter_row(const float *in, int n, int w, float *out) {
    const int r = w / 2;
    if (n <= r) {
        memcpy(out, in, sizeof(float) * (size_t)n);
        return;
    }
    float win[MEDIAN_FILTER_WIDTH];
    for (int j = 0; j < n; j++) {
        for (int k = -r; k <= r; k++) {
            int rd = abs(j + k);
            if (rd >= n) rd = n - (rd - n) - 2;
            win[k + r] = in[rd];
        }
        qsort(win, (size_t)w, sizeof(float), cmp_float);
        out[j] = win[r];
    }
}

/* CTranslate2 negative_dtw (= openai's dtw_cpu on -x): cost and trace over x [n][m] with the
 * same tie-breaking (diagonal, then up, else left); returns the path's text index for each step
 * via jump_frames: jump_frames[i] = frame where text row i is entered (n entries). */
static steno_status negative_dtw(const float *x, int n, int m, int *jump_frames) {
    const size_t W = (size_t)m + 1;
    float *cost = malloc(sizeof(float) * (size_t)(n + 1) * W);
    signed char *trace = malloc((size_t)(n + 1) * W);
    if (!cost || !trace) {
        free(cost);
        free(trace);
        return steno_fail(STENO_E_NOMEM, "word timestamps: out of memory");
    }
    for (size_t i = 0; i < (size_t)(n + 1) * W; i++) {
        cost[i] = INFINITY;
        trace[i] = -1;
    }
    cost[0] = 0;
    for (int j = 1; j <= m; j++) {
        for (int i = 1; i <= n; i++) {
            const float c0 = cost[(size_t)(i - 1) * W + j - 1], c1 = cost[(size_t)(i - 1) * W + j],
                        c2 = cost[(size_t)i * W + j - 1];
            float c;
            signed char t;
            if (c0 < c1 && c0 < c2) c = c0, t = 0;
            else if (c1 < c0 && c1 < c2) c = c1, t = 1;
            else c = c2, t = 2;
            cost[(size_t)i * W + j] = -x[(size_t)(i - 1) * m + j - 1] + c;
            trace[(size_t)i * W + j] = t;
        }
    }
    for (int k = 0; k <= m; k++) trace[k] = 2;
    for (int k = 0; k <= n; k++) trace[(size_t)k * W] = 1;
    /* Backtrace from (n, m); the path visits (i-1, j-1) pairs in reverse. Walking backwards, the
     * last pair seen with text index i is the first one in forward order: its frame is where
     * row i starts (numpy: time_indices[jumps]). */
    for (int i = 0; i < n; i++) jump_frames[i] = 0;
    int i = n, j = m;
    while (i > 0 || j > 0) {
        if (i - 1 >= 0) jump_frames[i - 1] = j - 1;
        const signed char t = trace[(size_t)i * W + j];
        if (t == 0) i--, j--;
        else if (t == 1) i--;
        else j--;
    }
    free(cost);
    free(trace);
    return STENO_OK;
}

/* ------------------------------------------------------------------ tokens → words */

typedef struct wt_word {
    char *text; /* malloc'd */
    int n_tok;
    double start, end, prob;
} wt_word;

static void words_free(wt_word *w, int n) {
    for (int i = 0; w && i < n; i++) free(w[i].text);
    free(w);
}

/* UTF-8 → code points (after U+FFFD replacement of invalid bytes). */
static int utf8_decode_all(const char *s, uint32_t *out) {
    const unsigned char *u = (const unsigned char *)s;
    int n = 0;
    while (*u) {
        uint32_t c = *u;
        int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (len == 2) c &= 0x1F;
        else if (len == 3) c &= 0x0F;
        else if (len == 4) c &= 0x07;
        for (int k = 1; k < len && u[k]; k++) c = (c << 6) | (u[k] & 0x3F);
        out[n++] = c;
        for (int k = 0; k < len && *u; k++) u++;
    }
    return n;
}

/* Bytes of text tokens (specials, i.e. ids >= eot, decode to "" as the HF tokenizer does). */
static char *tokens_bytes(const whisper_model *m, const int *ids, int n, size_t *len) {
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t l = 0;
        if (ids[i] < m->special.eot) steno_tokenizer_token_bytes(m->tokenizer, ids[i], &l);
        total += l;
    }
    char *b = malloc(total + 1);
    if (!b) return NULL;
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] >= m->special.eot) continue;
        size_t l = 0;
        const char *t = steno_tokenizer_token_bytes(m->tokenizer, ids[i], &l);
        if (t) memcpy(b + o, t, l), o += l;
    }
    b[o] = '\0';
    *len = o;
    return b;
}

static const char k_py_punctuation[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"; /* string.punctuation */

/* Python's `s.strip() in chars` (a substring test; an empty s is always in). */
static int stripped_in(const char *s, const char *chars) {
    size_t len;
    const char *b = steno_strip(s, &len);
    char buf[256];
    if (len >= sizeof buf) return 0;
    memcpy(buf, b, len);
    buf[len] = '\0';
    return strstr(chars, buf) != NULL;
}

/* faster-whisper Tokenizer.split_to_word_tokens: languages written without spaces between words
 * are split per token at Unicode boundaries (tokenizer.py: "zh", "ja", "th", "lo", "my", "yue"). */
static int splits_on_unicode(const whisper_model *m, int lang_token) {
    if (!m->multilingual || lang_token < m->special.lang_first ||
        lang_token >= m->special.lang_first + whisper_n_languages(m))
        return 0;
    char code[16];
    whisper_language_code(m, lang_token - m->special.lang_first, code);
    static const char *const k[] = {"zh", "ja", "th", "lo", "my", "yue"};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(code, k[i]) == 0) return 1;
    return 0;
}

/* faster-whisper Tokenizer.split_to_word_tokens on tokens [n] (the text tokens and eot):
 * split_tokens_on_unicode (a piece ends where the decoded text has no replacement character
 * that the whole text lacks), then, unless on_unicode (zh, ja, th, lo, my, yue), pieces are joined
 * into words that start at a space, a punctuation piece or a special token. */
static steno_status split_words(const whisper_model *m, const int *tok, int n, int on_unicode, wt_word **out,
                                int *n_out) {
    *out = NULL;
    *n_out = 0;
    size_t flen;
    char *fb = tokens_bytes(m, tok, n, &flen);
    char *full = fb ? steno_utf8_sanitize(fb, flen) : NULL;
    free(fb);
    uint32_t *fcp = full ? malloc(sizeof(uint32_t) * (strlen(full) + 1)) : NULL;
    wt_word *w = calloc((size_t)n + 1, sizeof *w);
    if (!full || !fcp || !w) {
        free(full);
        free(fcp);
        free(w);
        return steno_fail(STENO_E_NOMEM, "word timestamps: out of memory");
    }
    const int n_full = utf8_decode_all(full, fcp);
    free(full);
    int nw = 0, begin = 0, unicode_offset = 0;
    steno_status st = STENO_OK;
    for (int i = 0; i < n; i++) {
        size_t bl;
        char *bytes = tokens_bytes(m, tok + begin, i + 1 - begin, &bl);
        char *dec = bytes ? steno_utf8_sanitize(bytes, bl) : NULL;
        free(bytes);
        uint32_t *cp = dec ? malloc(sizeof(uint32_t) * (strlen(dec) + 1)) : NULL;
        if (!dec || !cp) {
            free(dec);
            free(cp);
            st = steno_fail(STENO_E_NOMEM, "word timestamps: out of memory");
            break;
        }
        const int nc = utf8_decode_all(dec, cp);
        int repl = -1;
        for (int k = 0; k < nc && repl < 0; k++)
            if (cp[k] == 0xFFFD) repl = k;
        free(cp);
        const int ends = repl < 0 || (repl + unicode_offset < n_full && fcp[repl + unicode_offset] == 0xFFFD);
        if (!ends) {
            free(dec);
            continue;
        }
        const int n_tok = i + 1 - begin;
        const int special = tok[begin] >= m->special.eot;
        const int join = !on_unicode && nw > 0 && !special && dec[0] != ' ' && !stripped_in(dec, k_py_punctuation);
        if (join) {
            const size_t a = strlen(w[nw - 1].text), b = strlen(dec);
            char *t = realloc(w[nw - 1].text, a + b + 1);
            if (!t) {
                free(dec);
                st = steno_fail(STENO_E_NOMEM, "word timestamps: out of memory");
                break;
            }
            memcpy(t + a, dec, b + 1);
            w[nw - 1].text = t;
            w[nw - 1].n_tok += n_tok;
            free(dec);
        } else {
            w[nw].text = dec;
            w[nw].n_tok = n_tok;
            nw++;
        }
        unicode_offset += nc;
        begin = i + 1;
    }
    free(fcp);
    if (st != STENO_OK) {
        words_free(w, nw);
        return st;
    }
    *out = w;
    *n_out = nw;
    return STENO_OK;
}

/* Python's `s in chars` (substring). */
static int in_set(const char *s, const char *chars) { return strstr(chars, s) != NULL; }

static steno_status concat_into(char **dst, const char *a, const char *b) {
    const size_t la = strlen(a), lb = strlen(b);
    char *t = malloc(la + lb + 1);
    if (!t) return steno_fail(STENO_E_NOMEM, "word timestamps: out of memory");
    memcpy(t, a, la);
    memcpy(t + la, b, lb + 1);
    free(*dst);
    *dst = t;
    return STENO_OK;
}

/* timing.py / faster-whisper merge_punctuations. */
static steno_status merge_punctuations(wt_word *w, int n, const char *prepended, const char *appended) {
    steno_status st;
    for (int i = n - 2, j = n - 1; i >= 0; i--) {
        if (w[i].text[0] == ' ' && stripped_in(w[i].text, prepended)) {
            char *merged = NULL;
            if ((st = concat_into(&merged, w[i].text, w[j].text)) != STENO_OK) return st;
            free(w[j].text);
            w[j].text = merged;
            w[j].n_tok += w[i].n_tok;
            w[i].text[0] = '\0';
            w[i].n_tok = 0;
        } else {
            j = i;
        }
    }
    for (int i = 0, j = 1; j < n; j++) {
        const size_t lp = strlen(w[i].text);
        if (!(lp > 0 && w[i].text[lp - 1] == ' ') && in_set(w[j].text, appended)) {
            char *merged = NULL;
            if ((st = concat_into(&merged, w[i].text, w[j].text)) != STENO_OK) return st;
            free(w[i].text);
            w[i].text = merged;
            w[i].n_tok += w[j].n_tok;
            w[j].text[0] = '\0';
            w[j].n_tok = 0;
        } else {
            i = j;
        }
    }
    return STENO_OK;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Python's round(x, 2) for the times here (multiples of 0.01 up to float error). */
static double round2(double x) { return nearbyint(x * 100.0) / 100.0; }

/* ------------------------------------------------------------------ find_alignment */

/* faster-whisper find_alignment: words of text [n_text] with start/end relative to the window
 * (seconds) and probability. *words NULL and *n_words 0 when nothing aligns. */
static steno_status find_alignment(whisper_decode_ctx *dc, const int *text, int n_text, int num_frames,
                                   wt_word **words, int *n_words) {
    const whisper_model *m = dc->m;
    const whisper_special *sp = &m->special;
    *words = NULL;
    *n_words = 0;
    if (n_text == 0) return STENO_OK;
    /* openai's model.alignment_heads; default: every head of the last half of the layers */
    int (*heads)[2] = NULL;
    int n_heads = m->config.n_alignment_heads;
    if (n_heads > 0) {
        heads = malloc(sizeof *heads * (size_t)n_heads);
        if (heads) memcpy(heads, m->config.alignment_heads, sizeof *heads * (size_t)n_heads);
    } else {
        n_heads = (m->n_text_layer - m->n_text_layer / 2) * m->n_text_head;
        heads = malloc(sizeof *heads * (size_t)n_heads);
        for (int l = m->n_text_layer / 2, k = 0; heads && l < m->n_text_layer; l++)
            for (int h = 0; h < m->n_text_head; h++, k++) heads[k][0] = l, heads[k][1] = h;
    }
    int seq[8];
    int n_sot = 0;
    seq[n_sot++] = sp->sot;
    if (m->multilingual) { /* the window's SOT sequence (faster-whisper: tokenizer.sot_sequence) */
        seq[n_sot++] = dc->lang_token;
        seq[n_sot++] = dc->task_token;
    }
    const int T = n_sot + 1 + n_text + 1;
    const int A = dc->fast ? whisper_fast_audio_ctx(dc->fast) : m->n_audio_ctx;
    int nf = num_frames / 2; /* the second convolution has stride 2 */
    if (nf > A) nf = A;
    int *tokens = malloc(sizeof(int) * (size_t)T);
    float *scores = nf > 0 ? malloc(sizeof(float) * (size_t)n_heads * T * nf) : NULL;
    float *matrix = nf > 0 ? calloc((size_t)T * nf, sizeof(float)) : NULL;
    float *col = malloc(sizeof(float) * (size_t)(nf > 0 ? nf : 1));
    double *probs = malloc(sizeof(double) * (size_t)n_text);
    int *jumps = malloc(sizeof(int) * (size_t)(n_text + 1));
    wt_word *w = NULL;
    int nw = 0;
    steno_status st = STENO_OK;
    if (!heads || !tokens || (nf > 0 && (!scores || !matrix)) || !col || !probs || !jumps) {
        st = steno_fail(STENO_E_NOMEM, "word timestamps: out of memory");
        goto done;
    }
    if (T > m->n_text_ctx) {
        st = steno_fail(STENO_E_INVALID_ARG, "word timestamps: %d tokens exceed n_text_ctx %d", T, m->n_text_ctx);
        goto done;
    }
    if (nf <= 0) goto done; /* a window shorter than the encoder stride has nothing to align */
    memcpy(tokens, seq, sizeof(int) * (size_t)n_sot);
    tokens[n_sot] = sp->no_timestamps;
    memcpy(tokens + n_sot + 1, text, sizeof(int) * (size_t)n_text);
    tokens[T - 1] = sp->eot;

    whisper_xattn_capture cap = {(const int(*)[2])heads, n_heads, T, nf, scores};
    if (dc->fast) {
        whisper_fast_decoder_reset(dc->fdec);
        whisper_fast_decoder_set_capture(dc->fdec, &cap);
        st = whisper_fast_decoder_forward(dc->fdec, tokens, T, dc->logits);
        whisper_fast_decoder_set_capture(dc->fdec, NULL);
    } else {
        whisper_decoder_reset(&dc->dec);
        dc->dec.capture = &cap;
        st = whisper_decoder_forward(&dc->dec, tokens, T, dc->logits, 0);
        dc->dec.capture = NULL;
    }
    if (st != STENO_OK) goto done;

    /* text token probabilities: softmax over the text vocabulary [0, eot) at the position before
     * each text token (CTranslate2 align's token_probs) */
    for (int t = 0; t < n_text; t++) {
        const int pos = n_sot + t;
        if (dc->fast) whisper_fast_decoder_logits_at(dc->fdec, pos, dc->row);
        else whisper_decoder_logits_at(&dc->dec, pos, dc->row);
        float mx = -INFINITY;
        for (int v = 0; v < sp->eot; v++) mx = dc->row[v] > mx ? dc->row[v] : mx;
        double sum = 0.0;
        for (int v = 0; v < sp->eot; v++) sum += exp((double)dc->row[v] - mx);
        probs[t] = (float)(exp((double)dc->row[text[t]] - mx) / sum);
    }

    /* softmax over the window's frames, normalize each (head, frame) over tokens, median filter,
     * mean over heads */
    for (int i = 0; i < n_heads; i++) {
        float *S = scores + (size_t)i * T * nf;
        for (int t = 0; t < T; t++) {
            float *r = S + (size_t)t * nf, mx = -INFINITY;
            for (int a = 0; a < nf; a++) mx = r[a] > mx ? r[a] : mx;
            double sum = 0.0;
            for (int a = 0; a < nf; a++) sum += (r[a] = expf(r[a] - mx));
            const float inv = (float)(1.0 / sum);
            for (int a = 0; a < nf; a++) r[a] *= inv;
        }
        for (int a = 0; a < nf; a++) {
            double mean = 0.0, var = 0.0;
            for (int t = 0; t < T; t++) mean += S[(size_t)t * nf + a];
            mean /= T;
            for (int t = 0; t < T; t++) {
                const double d = S[(size_t)t * nf + a] - mean;
                var += d * d;
            }
            var /= T;
            const float mu = (float)mean, inv = (float)(1.0 / sqrt(var));
            for (int t = 0; t < T; t++) S[(size_t)t * nf + a] = (S[(size_t)t * nf + a] - mu) * inv;
        }
        for (int t = 0; t < T; t++) {
            median_filter_row(S + (size_t)t * nf, nf, MEDIAN_FILTER_WIDTH, col);
            float *mr = matrix + (size_t)t * nf;
            for (int a = 0; a < nf; a++) mr[a] += col[a];
        }
    }
    for (size_t k = 0; k < (size_t)T * nf; k++) matrix[k] /= (float)n_heads;

    /* rows of the text tokens and eot: positions n_sot … n_sot + n_text */
    if ((st = negative_dtw(matrix + (size_t)n_sot * nf, n_text + 1, nf, jumps)) != STENO_OK) goto done;

    tokens[n_sot + 1 + n_text] = sp->eot;
    if ((st = split_words(m, tokens + n_sot + 1, n_text + 1, splits_on_unicode(m, dc->lang_token), &w, &nw)) !=
        STENO_OK)
        goto done;
    if (nw <= 1) { /* only eot */
        words_free(w, nw);
        w = NULL;
        nw = 0;
        goto done;
    }
    nw--; /* the eot "word" has no boundary after it */
    free(w[nw].text);
    w[nw].text = NULL;
    for (int i = 0, b = 0; i < nw; i++) {
        const int e = b + w[i].n_tok;
        w[i].start = jumps[b] / TOKENS_PER_SECOND;
        w[i].end = jumps[e] / TOKENS_PER_SECOND;
        double s = 0.0;
        for (int k = b; k < e; k++) s += probs[k];
        w[i].prob = e > b ? s / (e - b) : NAN;
        b = e;
    }
done:
    free(heads);
    free(tokens);
    free(scores);
    free(matrix);
    free(col);
    free(probs);
    free(jumps);
    if (st != STENO_OK) {
        words_free(w, nw);
        return st;
    }
    *words = w;
    *n_words = nw;
    return STENO_OK;
}

/* ------------------------------------------------------------------ add_word_timestamps */

void whisper_wt_segments_clear(whisper_wt_segment *segs, int n) {
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < segs[i].n_words; k++) free(segs[i].words[k].word);
        free(segs[i].words);
        segs[i].words = NULL;
        segs[i].n_words = 0;
    }
}

steno_status whisper_add_word_timestamps(whisper_decode_ctx *dc, whisper_wt_segment *segs, int n_segs, int seek,
                                         int num_frames, const char *prepend, const char *append,
                                         double last_speech_timestamp) {
    if (n_segs == 0) return STENO_OK;
    const int eot = dc->m->special.eot;
    if (!prepend) prepend = WHISPER_PREPEND_PUNCTUATIONS;
    if (!append) append = WHISPER_APPEND_PUNCTUATIONS;
    int n_text = 0;
    for (int s = 0; s < n_segs; s++)
        for (int k = 0; k < segs[s].n_tokens; k++) n_text += segs[s].tokens[k] < eot;
    int *text = malloc(sizeof(int) * (size_t)(n_text + 1));
    double *dur = malloc(sizeof(double) * (size_t)(n_text + 1));
    if (!text || !dur) {
        free(text);
        free(dur);
        return steno_fail(STENO_E_NOMEM, "word timestamps: out of memory");
    }
    n_text = 0;
    for (int s = 0; s < n_segs; s++)
        for (int k = 0; k < segs[s].n_tokens; k++)
            if (segs[s].tokens[k] < eot) text[n_text++] = segs[s].tokens[k];
    wt_word *w = NULL;
    int nw = 0;
    steno_status st = find_alignment(dc, text, n_text, num_frames, &w, &nw);
    free(text);
    if (st != STENO_OK) {
        free(dur);
        return st;
    }

    /* median and maximum word duration (nonzero durations; median capped at 0.7 s) */
    int nd = 0;
    for (int i = 0; i < nw; i++)
        if (w[i].end - w[i].start != 0) dur[nd++] = w[i].end - w[i].start;
    double median = 0.0;
    if (nd > 0) {
        qsort(dur, (size_t)nd, sizeof(double), cmp_double);
        median = nd % 2 ? dur[nd / 2] : (dur[nd / 2 - 1] + dur[nd / 2]) / 2.0;
    }
    free(dur);
    if (median > 0.7) median = 0.7;
    const double max_duration = median * 2;
    if (nd > 0) { /* truncate long words at sentence boundaries */
        static const char sentence_end[] = ".\xe3\x80\x82!\xef\xbc\x81?\xef\xbc\x9f"; /* .。!！?？ */
        for (int i = 1; i < nw; i++) {
            if (w[i].end - w[i].start > max_duration) {
                if (in_set(w[i].text, sentence_end)) w[i].end = w[i].start + max_duration;
                else if (in_set(w[i - 1].text, sentence_end)) w[i].start = w[i].end - max_duration;
            }
        }
    }
    if ((st = merge_punctuations(w, nw, prepend, append)) != STENO_OK) goto done;

    const double time_offset = seek / FRAMES_PER_SECOND;
    int wi = 0;
    for (int s = 0; s < n_segs; s++) {
        whisper_wt_segment *sg = &segs[s];
        int seg_text = 0, saved = 0, n = 0;
        for (int k = 0; k < sg->n_tokens; k++) seg_text += sg->tokens[k] < eot;
        sg->words = malloc(sizeof(steno_word) * (size_t)(nw + 1));
        if (!sg->words) {
            st = steno_fail(STENO_E_NOMEM, "word timestamps: out of memory");
            goto done;
        }
        steno_word *out = sg->words;
        while (wi < nw && saved < seg_text) {
            const wt_word *t = &w[wi];
            if (t->text[0]) {
                out[n].word = t->text;
                w[wi].text = NULL; /* moved */
                out[n].start = round2(time_offset + t->start);
                out[n].end = round2(time_offset + t->end);
                out[n].probability = t->prob;
                n++;
                sg->n_words = n;
            }
            saved += t->n_tok;
            wi++;
        }
        sg->n_words = n;
        if (n > 0) {
            /* the first and second word after a pause are not longer than twice the median */
            if (out[0].end - last_speech_timestamp > median * 4 &&
                (out[0].end - out[0].start > max_duration ||
                 (n > 1 && out[1].end - out[0].start > max_duration * 2))) {
                if (n > 1 && out[1].end - out[1].start > max_duration) {
                    const double boundary = fmax(out[1].end / 2, out[1].end - max_duration);
                    out[0].end = out[1].start = boundary;
                }
                out[0].start = fmax(0, out[0].end - max_duration);
            }
            /* prefer the segment-level start timestamp if the first word is too long */
            if (sg->start < out[0].end && sg->start - 0.5 > out[0].start)
                out[0].start = fmax(0, fmin(out[0].end - median, sg->start));
            else
                sg->start = out[0].start;
            /* prefer the segment-level end timestamp if the last word is too long */
            if (sg->end > out[n - 1].start && sg->end + 0.5 < out[n - 1].end)
                out[n - 1].end = fmax(out[n - 1].start + median, sg->end);
            else
                sg->end = out[n - 1].end;
            last_speech_timestamp = sg->end;
        }
    }
done:
    if (st != STENO_OK) whisper_wt_segments_clear(segs, n_segs);
    words_free(w, nw);
    return st;
}

/* ------------------------------------------------------------------ hallucination guard */

/* transcribe.py word_anomaly_score: improbable, very short or very long words. */
static double word_anomaly_score(const steno_word *w) {
    const double d = w->end - w->start;
    double score = 0.0;
    if (w->probability < 0.15) score += 1.0;
    if (d < 0.133) score += (0.133 - d) * 15;
    if (d > 2.0) score += d - 2.0;
    return score;
}

int whisper_segment_is_anomaly(const whisper_wt_segment *s) {
    /* the punctuation string of faster-whisper's generate_segments (prepend + append sets) */
    static const char punctuation[] = WHISPER_PREPEND_PUNCTUATIONS WHISPER_APPEND_PUNCTUATIONS;
    if (!s || s->n_words == 0) return 0;
    double score = 0.0;
    int n = 0;
    for (int i = 0; i < s->n_words && n < 8; i++) {
        if (in_set(s->words[i].word, punctuation)) continue;
        score += word_anomaly_score(&s->words[i]);
        n++;
    }
    return score >= 3 || score + 0.01 >= n;
}
