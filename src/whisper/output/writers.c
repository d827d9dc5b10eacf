/* writers.c — output writers: TXT, VTT, SRT, TSV and JSON.
 *
 * Byte-compatible with openai-whisper's whisper/utils.py (WriteTXT, WriteVTT, WriteSRT, WriteTSV,
 * WriteJSON, format_timestamp) for results without word timestamps:
 *   - timestamps: milliseconds = round(seconds * 1000.0) with Python's round() (half to even),
 *     split into hours, minutes, seconds; hours shown when always_include_hours or hours > 0;
 *   - text: str.strip() (Python's Unicode whitespace set), "-->" → "->" in subtitles, "\t" → " "
 *     in TSV;
 *   - JSON: json.dump() defaults: ", " and ": " separators, ensure_ascii (\uXXXX escapes, UTF-16
 *     surrogate pairs above U+FFFF), floats as Python's repr() (shortest round-trip digits),
 *     NaN/Infinity as Python writes them.
 */
#include "steno.h"
#include "core/error.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 ------------------------------------------------------------------------------- */

/* Decodes one code point at s[0..n). Returns its length in bytes (>= 1); *cp = U+FFFD and length 1
 * for an invalid or truncated sequence (one replacement per bad byte). */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; v = c & 0x07; min = 0x10000; }
    else { *cp = 0xFFFD; return 1; }
    if (len > n) { *cp = 0xFFFD; return 1; }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) { *cp = 0xFFFD; return 1; }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) { *cp = 0xFFFD; return 1; }
    *cp = v;
    return len;
}

/* Python's str.isspace() (the whitespace str.strip() removes). */
static bool py_isspace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* str.strip(): the byte range [*b, *e) of s without leading/trailing Python whitespace. */
static void py_strip(const char *s, size_t *b, size_t *e) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = s ? strlen(s) : 0, i = 0, first = n, last = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_next(u + i, n - i, &cp);
        if (!py_isspace(cp)) {
            if (first == n) first = i;
            last = i + len;
        }
        i += len;
    }
    if (first == n) { *b = *e = 0; return; }
    *b = first;
    *e = last;
}

/* ---- format_timestamp -------------------------------------------------------------------- */

/* Python's round(x) for a finite double: nearest integer, ties to even (nearbyint under the
 * default FE_TONEAREST mode). */
static long long py_round(double x) { return (long long)nearbyint(x); }

/* utils.py format_timestamp(seconds, always_include_hours, decimal_marker). Negative or
 * non-finite times (which utils.py rejects with an assert) are written as 0. */
static void format_timestamp(char *buf, size_t size, double seconds, bool always_include_hours,
                             char decimal_marker) {
    if (!(seconds >= 0) || !isfinite(seconds)) seconds = 0;
    long long ms = py_round(seconds * 1000.0);
    long long hours = ms / 3600000;
    ms -= hours * 3600000;
    long long minutes = ms / 60000;
    ms -= minutes * 60000;
    long long secs = ms / 1000;
    ms -= secs * 1000;
    if (always_include_hours || hours > 0)
        snprintf(buf, size, "%02lld:%02lld:%02lld%c%03lld", hours, minutes, secs, decimal_marker,
                 ms);
    else
        snprintf(buf, size, "%02lld:%02lld%c%03lld", minutes, secs, decimal_marker, ms);
}

/* ---- Python float repr ------------------------------------------------------------------- */

/* Adds delta (+1 or -1) to the last digit of the decimal digit string d (length n, no sign).
 * Returns false when the result would change length (999 + 1, 100 - 1): such a neighbour has a
 * different exponent, and the correctly rounded candidate is then the only one worth trying. */
static bool digits_step(char *d, int n, int delta) {
    for (int i = n - 1; i >= 0; i--) {
        int v = d[i] - '0' + delta;
        if (v >= 0 && v <= 9) { d[i] = (char)('0' + v); break; }
        if (i == 0) return false;
        d[i] = delta > 0 ? '0' : '9';
    }
    return d[0] != '0';
}

/* Shortest decimal digits that read back as |x| (x finite, non-zero): fills digits (no trailing
 * zeros) and *e so that |x| = D.DDD × 10^(*e). Follows repr()'s contract (David Gay's shortest
 * mode): the fewest digits, and among those the closest to x. */
static void shortest_digits(double x, char *digits, int *e) {
    char tmp[64];
    double ax = fabs(x);
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, ax);
        /* tmp = D[.DDD]e±XX */
        char d[32];
        int nd = 0;
        const char *p = tmp;
        for (; *p && *p != 'e'; p++)
            if (*p != '.') d[nd++] = *p;
        d[nd] = '\0';
        int ex = atoi(p + 1);
        bool ok = strtod(tmp, NULL) == ax;
        if (!ok && prec < 17) {
            /* The correctly rounded candidate misses the round-trip interval, which is narrower
             * below a power of two; a neighbour with the same digit count may still hit it. */
            const int deltas[2] = {1, -1};
            for (int k = 0; k < 2 && !ok; k++) {
                char c[32];
                memcpy(c, d, (size_t)nd + 1);
                if (!digits_step(c, nd, deltas[k])) continue;
                char s[64];
                snprintf(s, sizeof s, "%c%s%se%d", c[0], nd > 1 ? "." : "", c + 1, ex);
                if (strtod(s, NULL) == ax) {
                    memcpy(d, c, (size_t)nd + 1);
                    ok = true;
                }
            }
        }
        if (ok || prec == 17) {
            while (nd > 1 && d[nd - 1] == '0') d[--nd] = '\0';
            memcpy(digits, d, (size_t)nd + 1);
            *e = ex;
            return;
        }
    }
}

/* repr(float(x)) as Python 3 writes it, and json.dump's NaN / Infinity / -Infinity. */
static void py_float_repr(char *buf, size_t size, double x) {
    if (isnan(x)) { snprintf(buf, size, "NaN"); return; }
    if (isinf(x)) { snprintf(buf, size, x > 0 ? "Infinity" : "-Infinity"); return; }
    const char *sign = signbit(x) ? "-" : "";
    if (x == 0) { snprintf(buf, size, "%s0.0", sign); return; }
    char d[32];
    int e;
    shortest_digits(x, d, &e);
    int nd = (int)strlen(d);
    int decpt = e + 1; /* |x| = 0.DIGITS × 10^decpt */
    char *o = buf, *end = buf + size - 1; /* size >= 40 always fits: ≤ 17 digits + 22 */
#define PUT(c) do { if (o < end) *o++ = (c); } while (0)
    if (*sign) PUT('-');
    if (decpt <= -4 || decpt > 16) {
        PUT(d[0]);
        if (nd > 1) { PUT('.'); for (int i = 1; i < nd; i++) PUT(d[i]); }
        snprintf(o, (size_t)(end - o) + 1, "e%c%02d", e < 0 ? '-' : '+', abs(e));
        return;
    }
    if (decpt <= 0) {
        PUT('0'); PUT('.');
        for (int i = 0; i < -decpt; i++) PUT('0');
        for (int i = 0; i < nd; i++) PUT(d[i]);
    } else {
        for (int i = 0; i < decpt; i++) PUT(i < nd ? d[i] : '0');
        PUT('.');
        if (decpt >= nd) PUT('0');
        else for (int i = decpt; i < nd; i++) PUT(d[i]);
    }
#undef PUT
    *o = '\0';
}

/* ---- writers ----------------------------------------------------------------------------- */

/* Writes s[b..e) with every occurrence of `from` replaced by `to`. */
static void put_replaced(FILE *f, const char *s, size_t b, size_t e, const char *from,
                         const char *to) {
    size_t nf = strlen(from);
    size_t i = b;
    while (i < e) {
        if (nf && e - i >= nf && memcmp(s + i, from, nf) == 0) {
            fputs(to, f);
            i += nf;
        } else {
            fputc(s[i++], f);
        }
    }
}

static void write_txt(const steno_result *r, FILE *f) {
    for (int i = 0; i < r->n_segments; i++) {
        const char *t = r->segments[i].text ? r->segments[i].text : "";
        size_t b, e;
        py_strip(t, &b, &e);
        fwrite(t + b, 1, e - b, f);
        fputc('\n', f);
    }
}

/* ---- subtitles from words (utils.py SubtitlesWriter.iterate_result) --------------------------- */

/* len(s) in code points. */
static size_t cp_len(const char *s, size_t n) {
    size_t i = 0, k = 0;
    while (i < n) {
        uint32_t cp;
        i += utf8_next((const unsigned char *)s + i, n - i, &cp);
        k++;
    }
    return k;
}

typedef struct sub_word {
    char *text; /* the word as shown: stripped at a line start, "\n" before a line break */
    double start, end;
} sub_word;

typedef struct sub_out {
    FILE *f;
    bool srt;
    int index;
} sub_out;

static void emit_cue(sub_out *o, const char *start, const char *end, const char *text) {
    if (o->srt) fprintf(o->f, "%d\n", ++o->index);
    fprintf(o->f, "%s --> %s\n%s\n\n", start, end, text);
}

/* Writes one subtitle (a list of words) as a cue, or one cue per word with highlight_words. */
static void emit_subtitle(sub_out *o, const sub_word *w, int n, bool highlight) {
    char start[64], end[64], last[64];
    const char dm = o->srt ? ',' : '.';
    format_timestamp(start, sizeof start, w[0].start, o->srt, dm);
    format_timestamp(end, sizeof end, w[n - 1].end, o->srt, dm);
    size_t total = 1;
    for (int i = 0; i < n; i++) total += strlen(w[i].text) + 7;
    char *text = malloc(total), *hl = malloc(total);
    if (!text || !hl) {
        free(text);
        free(hl);
        return;
    }
    text[0] = '\0';
    for (int i = 0; i < n; i++) strcat(text, w[i].text);
    if (!highlight) {
        emit_cue(o, start, end, text);
    } else {
        snprintf(last, sizeof last, "%s", start);
        for (int i = 0; i < n; i++) {
            char ws[64], we[64];
            format_timestamp(ws, sizeof ws, w[i].start, o->srt, dm);
            format_timestamp(we, sizeof we, w[i].end, o->srt, dm);
            if (strcmp(last, ws) != 0) emit_cue(o, last, ws, text);
            /* re.sub(r"^(\s*)(.*)$", r"\1<u>\2</u>", word) */
            char *p = hl;
            for (int j = 0; j < n; j++) {
                const char *t = w[j].text;
                if (j != i) {
                    p += sprintf(p, "%s", t);
                    continue;
                }
                size_t b, e, len = strlen(t);
                py_strip(t, &b, &e);
                if (e == 0) b = len; /* all whitespace: \s* takes it all, (.*) is empty */
                p += sprintf(p, "%.*s<u>%s</u>", (int)b, t, t + b);
            }
            emit_cue(o, ws, we, hl);
            snprintf(last, sizeof last, "%s", we);
        }
    }
    free(text);
    free(hl);
}

static char *dup_range(const char *s, size_t b, size_t e, const char *prefix) {
    const size_t lp = strlen(prefix);
    char *t = malloc(lp + e - b + 1);
    if (!t) return NULL;
    memcpy(t, prefix, lp);
    memcpy(t + lp, s + b, e - b);
    t[lp + e - b] = '\0';
    return t;
}

static void write_word_subtitles(const steno_result *r, FILE *f, bool srt, const steno_writer_options *opt) {
    const int max_line_count = opt ? opt->max_line_count : 0;
    const bool preserve_segments = !max_line_count || !(opt && opt->max_line_width);
    const size_t max_line_width = opt && opt->max_line_width ? (size_t)opt->max_line_width : 1000;
    const int max_words_per_line = opt && opt->max_words_per_line ? opt->max_words_per_line : 1000;
    const bool highlight = opt && opt->highlight_words;
    int total = 0;
    for (int i = 0; i < r->n_segments; i++) total += r->segments[i].n_words;
    sub_word *sub = malloc(sizeof *sub * (size_t)(total + 1));
    if (!sub) return;
    int n = 0, line_count = 1;
    size_t line_len = 0;
    sub_out o = {f, srt, 0};
    double last = r->segments[0].start; /* get_start(segments) or 0.0 */
    for (int i = 0, found = 0; i < r->n_segments && !found; i++)
        if (r->segments[i].n_words) last = r->segments[i].words[0].start, found = 1;
    for (int si = 0; si < r->n_segments; si++) {
        const steno_segment *s = &r->segments[si];
        for (int chunk = 0; chunk < s->n_words; chunk += max_words_per_line) {
            const int count = s->n_words - chunk < max_words_per_line ? s->n_words - chunk : max_words_per_line;
            for (int i = 0; i < count; i++) {
                const steno_word *w = &s->words[chunk + i];
                const char *word = w->word ? w->word : "";
                const size_t wlen = cp_len(word, strlen(word));
                const bool long_pause = !preserve_segments && w->start - last > 3.0;
                const bool has_room = line_len + wlen <= max_line_width;
                const bool seg_break = i == 0 && n > 0 && preserve_segments;
                char *text;
                if (line_len > 0 && has_room && !long_pause && !seg_break) {
                    line_len += wlen; /* line continuation */
                    text = dup_range(word, 0, strlen(word), "");
                } else { /* new line */
                    size_t b, e;
                    py_strip(word, &b, &e);
                    const char *prefix = "";
                    if ((n > 0 && max_line_count && (long_pause || line_count >= max_line_count)) || seg_break) {
                        emit_subtitle(&o, sub, n, highlight); /* subtitle break */
                        for (int k = 0; k < n; k++) free(sub[k].text);
                        n = 0;
                        line_count = 1;
                    } else if (line_len > 0) {
                        line_count++; /* line break */
                        prefix = "\n";
                    }
                    line_len = cp_len(word + b, e - b);
                    text = dup_range(word, b, e, prefix);
                }
                if (!text) continue;
                sub[n++] = (sub_word){text, w->start, w->end};
                last = w->start;
            }
        }
    }
    if (n > 0) emit_subtitle(&o, sub, n, highlight);
    for (int k = 0; k < n; k++) free(sub[k].text);
    free(sub);
}

static void write_subtitles(const steno_result *r, FILE *f, bool srt, const steno_writer_options *opt) {
    if (!srt) fputs("WEBVTT\n\n", f);
    if (r->word_timestamps && r->n_segments > 0) {
        write_word_subtitles(r, f, srt, opt);
        return;
    }
    for (int i = 0; i < r->n_segments; i++) {
        const steno_segment *s = &r->segments[i];
        char start[128], end[128];
        format_timestamp(start, sizeof start, s->start, srt, srt ? ',' : '.');
        format_timestamp(end, sizeof end, s->end, srt, srt ? ',' : '.');
        if (srt) fprintf(f, "%d\n", i + 1);
        fprintf(f, "%s --> %s\n", start, end);
        const char *t = s->text ? s->text : "";
        size_t b, e;
        py_strip(t, &b, &e);
        put_replaced(f, t, b, e, "-->", "->");
        fputs("\n\n", f);
    }
}

static void write_tsv(const steno_result *r, FILE *f) {
    fputs("start\tend\ttext\n", f);
    for (int i = 0; i < r->n_segments; i++) {
        const steno_segment *s = &r->segments[i];
        double st = isfinite(s->start) ? s->start : 0, en = isfinite(s->end) ? s->end : 0;
        fprintf(f, "%lld\t%lld\t", py_round(1000 * st), py_round(1000 * en));
        const char *t = s->text ? s->text : "";
        size_t b, e;
        py_strip(t, &b, &e);
        put_replaced(f, t, b, e, "\t", " ");
        fputc('\n', f);
    }
}

/* json.dumps(str) with ensure_ascii=True. */
static void json_string(FILE *f, const char *s) {
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)u), i = 0;
    fputc('"', f);
    while (i < n) {
        uint32_t cp;
        i += utf8_next(u + i, n - i, &cp);
        switch (cp) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (cp >= 0x20 && cp <= 0x7E) {
                fputc((int)cp, f);
            } else if (cp > 0xFFFF) {
                uint32_t v = cp - 0x10000;
                fprintf(f, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                fprintf(f, "\\u%04x", cp);
            }
        }
    }
    fputc('"', f);
}

static void json_float(FILE *f, double x) {
    char buf[64];
    py_float_repr(buf, sizeof buf, x);
    fputs(buf, f);
}

static void write_json(const steno_result *r, FILE *f) {
    fputs("{\"text\": ", f);
    json_string(f, r->text);
    fputs(", \"segments\": [", f);
    for (int i = 0; i < r->n_segments; i++) {
        const steno_segment *s = &r->segments[i];
        if (i) fputs(", ", f);
        fprintf(f, "{\"id\": %d, \"seek\": %d, \"start\": ", s->id, s->seek);
        json_float(f, s->start);
        fputs(", \"end\": ", f);
        json_float(f, s->end);
        fputs(", \"text\": ", f);
        json_string(f, s->text);
        fputs(", \"tokens\": [", f);
        for (int k = 0; s->tokens && k < s->n_tokens; k++) fprintf(f, k ? ", %d" : "%d", s->tokens[k]);
        fputs("], \"temperature\": ", f);
        json_float(f, s->temperature);
        fputs(", \"avg_logprob\": ", f);
        json_float(f, s->avg_logprob);
        fputs(", \"compression_ratio\": ", f);
        json_float(f, s->compression_ratio);
        fputs(", \"no_speech_prob\": ", f);
        json_float(f, s->no_speech_prob);
        if (r->word_timestamps) { /* openai's add_word_timestamps adds "words" to every segment */
            fputs(", \"words\": [", f);
            for (int k = 0; k < s->n_words; k++) {
                const steno_word *w = &s->words[k];
                fputs(k ? ", {\"word\": " : "{\"word\": ", f);
                json_string(f, w->word);
                fputs(", \"start\": ", f);
                json_float(f, w->start);
                fputs(", \"end\": ", f);
                json_float(f, w->end);
                fputs(", \"probability\": ", f);
                json_float(f, w->probability);
                fputc('}', f);
            }
            fputc(']', f);
        }
        fputc('}', f);
    }
    fputs("], \"language\": ", f);
    json_string(f, r->language);
    fputc('}', f);
}

int steno_wcpp_format(const char *format); /* writers_wcpp.c */

steno_writer_options steno_writer_default_options(void) {
    steno_writer_options o = {0};
    return o;
}

steno_status steno_write_result(const steno_result *r, const char *format, void *FILE_stream) {
    return steno_write_result_ex(r, format, NULL, FILE_stream);
}

steno_status steno_write_result_ex(const steno_result *r, const char *format, const steno_writer_options *opts,
                                   void *FILE_stream) {
    FILE *f = FILE_stream;
    if (!r || !format || !f) return steno_fail(STENO_E_INVALID_ARG, "steno_write_result: NULL argument");
    if (r->n_segments < 0 || (r->n_segments > 0 && !r->segments))
        return steno_fail(STENO_E_INVALID_ARG, "steno_write_result: result has no segments array");
    if (steno_wcpp_format(format)) return steno_write_result_wcpp(r, format, NULL, f);
    if (strcmp(format, "txt") == 0) write_txt(r, f);
    else if (strcmp(format, "vtt") == 0) write_subtitles(r, f, false, opts);
    else if (strcmp(format, "srt") == 0) write_subtitles(r, f, true, opts);
    else if (strcmp(format, "tsv") == 0) write_tsv(r, f);
    else if (strcmp(format, "json") == 0) write_json(r, f);
    else
        return steno_fail(STENO_E_INVALID_ARG,
                          "output format '%s': expected txt, vtt, srt, tsv, json, csv or lrc", format);
    if (fflush(f) != 0 || ferror(f))
        return steno_fail(STENO_E_IO, "writing %s output: write error", format);
    return STENO_OK;
}
