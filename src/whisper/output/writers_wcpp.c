/* writers_wcpp.c — output writers in whisper.cpp's layouts (examples/cli/cli.cpp: output_txt,
 * output_vtt, output_srt, output_csv, output_json, output_lrc; examples/common-whisper.cpp:
 * to_timestamp). Formats of steno_write_result / steno_write_result_wcpp:
 *   "wcpp-txt"  each segment's text as decoded (its leading space kept), one per line;
 *   "wcpp-vtt"  "WEBVTT\n\n", then "HH:MM:SS.mmm --> HH:MM:SS.mmm\n<text>\n\n" per segment;
 *   "wcpp-srt"  "<1 + offset_n + i>\nHH:MM:SS,mmm --> HH:MM:SS,mmm\n<text>\n\n";
 *   "csv"       "start,end,text\n", then "<ms>,<ms>,\"<text with \" doubled>\"\n";
 *   "lrc"       "[by:whisper.cpp]\n", then "[mm:ss.cc]<text>\n" (segment starts);
 *   "wcpp-json" whisper.cpp's -oj JSON (tab-indented, its own key order and escaping: only '"' and
 *               '\\' are escaped), "wcpp-json-full" -ojf: adds each segment's "tokens".
 * whisper.cpp's times are centiseconds (t0, t1); a steno segment's seconds are rounded to them.
 * Differences (documented in README.md "For whisper.cpp users"): "systeminfo" names steno; the
 * "model" object is filled from the loaded model (zeros without one); -ojf tokens carry "text" and
 * "id" only (steno keeps no per-token probability, token timestamps or DTW times).
 */
#include "steno.h"
#include "core/error.h"
#include "whisper/handle.h"
#include "whisper/model/model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* seconds → whisper.cpp's centisecond ticks */
static int64_t ticks(double seconds) {
    if (!isfinite(seconds) || seconds < 0) return 0;
    return (int64_t)llround(seconds * 100.0);
}

/* common-whisper.cpp to_timestamp(t, comma) */
static void to_timestamp(char *buf, size_t size, int64_t t, int comma) {
    int64_t msec = t * 10;
    int64_t hr = msec / (1000 * 60 * 60);
    msec -= hr * (1000 * 60 * 60);
    int64_t min = msec / (1000 * 60);
    msec -= min * (1000 * 60);
    int64_t sec = msec / 1000;
    msec -= sec * 1000;
    snprintf(buf, size, "%02d:%02d:%02d%s%03d", (int)hr, (int)min, (int)sec, comma ? "," : ".", (int)msec);
}

static const char *seg_text(const steno_segment *s) { return s->text ? s->text : ""; }

static void write_txt(const steno_result *r, FILE *f) {
    for (int i = 0; i < r->n_segments; i++) fprintf(f, "%s\n", seg_text(&r->segments[i]));
}

static void write_vtt(const steno_result *r, FILE *f) {
    fputs("WEBVTT\n\n", f);
    for (int i = 0; i < r->n_segments; i++) {
        char a[32], b[32];
        to_timestamp(a, sizeof a, ticks(r->segments[i].start), 0);
        to_timestamp(b, sizeof b, ticks(r->segments[i].end), 0);
        fprintf(f, "%s --> %s\n%s\n\n", a, b, seg_text(&r->segments[i]));
    }
}

static void write_srt(const steno_result *r, int offset_n, FILE *f) {
    for (int i = 0; i < r->n_segments; i++) {
        char a[32], b[32];
        to_timestamp(a, sizeof a, ticks(r->segments[i].start), 1);
        to_timestamp(b, sizeof b, ticks(r->segments[i].end), 1);
        fprintf(f, "%d\n%s --> %s\n%s\n\n", i + 1 + offset_n, a, b, seg_text(&r->segments[i]));
    }
}

static void write_csv(const steno_result *r, FILE *f) {
    fputs("start,end,text\n", f);
    for (int i = 0; i < r->n_segments; i++) {
        const steno_segment *s = &r->segments[i];
        fprintf(f, "%lld,%lld,\"", (long long)(10 * ticks(s->start)), (long long)(10 * ticks(s->end)));
        for (const char *p = seg_text(s); *p; p++) {
            if (*p == '"') fputc('"', f);
            fputc(*p, f);
        }
        fputs("\"\n", f);
    }
}

static void write_lrc(const steno_result *r, FILE *f) {
    fputs("[by:whisper.cpp]\n", f);
    for (int i = 0; i < r->n_segments; i++) {
        int64_t msec = ticks(r->segments[i].start) * 10;
        int64_t min = msec / (1000 * 60);
        msec -= min * (1000 * 60);
        int64_t sec = msec / 1000;
        msec -= sec * 1000;
        fprintf(f, "[%02d:%02d.%02d]%s\n", (int)min, (int)sec, (int)(msec / 10), seg_text(&r->segments[i]));
    }
}

/* ---- JSON (cli.cpp output_json) ---------------------------------------------------------- */

typedef struct {
    FILE *f;
    int indent;
} jw;

static void j_indent(jw *j) {
    for (int i = 0; i < j->indent; i++) fputc('\t', j->f);
}
static void j_start_obj(jw *j, const char *name) {
    j_indent(j);
    if (name) fprintf(j->f, "\"%s\": {\n", name);
    else fputs("{\n", j->f);
    j->indent++;
}
static void j_end_obj(jw *j, int end) {
    j->indent--;
    j_indent(j);
    fputs(end ? "}\n" : "},\n", j->f);
}
static void j_start_arr(jw *j, const char *name) {
    j_indent(j);
    fprintf(j->f, "\"%s\": [\n", name);
    j->indent++;
}
static void j_end_arr(jw *j, int end) {
    j->indent--;
    j_indent(j);
    fputs(end ? "]\n" : "],\n", j->f);
}
static void j_value(jw *j, const char *name) {
    j_indent(j);
    fprintf(j->f, "\"%s\": ", name);
}
/* escape_double_quotes_and_backslashes: only '"' and '\\' */
static void j_s(jw *j, const char *name, const char *val, int end) {
    j_value(j, name);
    fputc('"', j->f);
    for (const char *p = val ? val : ""; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', j->f);
        fputc(*p, j->f);
    }
    fputs(end ? "\"\n" : "\",\n", j->f);
}
static void j_i(jw *j, const char *name, long long val, int end) {
    j_value(j, name);
    fprintf(j->f, "%lld%s", val, end ? "\n" : ",\n");
}
static void j_b(jw *j, const char *name, int val, int end) {
    j_value(j, name);
    fprintf(j->f, "%s%s", val ? "true" : "false", end ? "\n" : ",\n");
}
static void j_times(jw *j, int64_t t0, int64_t t1, int end) {
    char a[32], b[32];
    to_timestamp(a, sizeof a, t0, 1);
    to_timestamp(b, sizeof b, t1, 1);
    j_start_obj(j, "timestamps");
    j_s(j, "from", a, 0);
    j_s(j, "to", b, 1);
    j_end_obj(j, 0);
    j_start_obj(j, "offsets");
    j_i(j, "from", (long long)(t0 * 10), 0);
    j_i(j, "to", (long long)(t1 * 10), 1);
    j_end_obj(j, end);
}

/* whisper.cpp's whisper_model_type_readable, by encoder depth */
static const char *model_type(const whisper_model *m) {
    if (!m) return "unknown";
    switch (m->n_audio_layer) {
    case 4: return "tiny";
    case 6: return "base";
    case 12: return "small";
    case 24: return "medium";
    case 32: return "large";
    default: return "unknown";
    }
}

/* whisper.cpp's whisper_token_to_str: vocabulary text; [_BEG_] and [_TT_n] for timestamps */
static void token_str(const whisper_model *m, int id, char *buf, size_t size) {
    buf[0] = 0;
    if (!m) return;
    const int beg = m->special.timestamp_begin;
    if (id == beg) { snprintf(buf, size, "[_BEG_]"); return; }
    if (id > beg) { snprintf(buf, size, "[_TT_%d]", id - beg); return; }
    size_t len = 0;
    const char *b = steno_tokenizer_token_bytes(m->tokenizer, id, &len);
    if (!b) return;
    if (len >= size) len = size - 1;
    memcpy(buf, b, len);
    buf[len] = 0;
}

static void write_json(const steno_result *r, const steno_wcpp_info *info, int full, FILE *f) {
    const whisper_model *m = NULL;
    if (info && info->model) {
        whisper_fast *fast;
        int nt;
        whisper_handle_parts(info->model, NULL, &m, &fast, &nt);
    }
    jw j = {f, 0};
    char sysinfo[64];
    snprintf(sysinfo, sizeof sysinfo, "steno %s", STENO_VERSION);
    j_start_obj(&j, NULL);
    j_s(&j, "systeminfo", sysinfo, 0);
    j_start_obj(&j, "model");
    j_s(&j, "type", model_type(m), 0);
    j_b(&j, "multilingual", m ? m->multilingual : 0, 0);
    j_i(&j, "vocab", m ? m->n_vocab : 0, 0);
    j_start_obj(&j, "audio");
    j_i(&j, "ctx", m ? m->n_audio_ctx : 0, 0);
    j_i(&j, "state", m ? m->n_audio_state : 0, 0);
    j_i(&j, "head", m ? m->n_audio_head : 0, 0);
    j_i(&j, "layer", m ? m->n_audio_layer : 0, 1);
    j_end_obj(&j, 0);
    j_start_obj(&j, "text");
    j_i(&j, "ctx", m ? m->n_text_ctx : 0, 0);
    j_i(&j, "state", m ? m->n_text_state : 0, 0);
    j_i(&j, "head", m ? m->n_text_head : 0, 0);
    j_i(&j, "layer", m ? m->n_text_layer : 0, 1);
    j_end_obj(&j, 0);
    j_i(&j, "mels", m ? m->n_mels : 0, 0);
    j_i(&j, "ftype", m ? (m->decoder_f16 ? 1 : 0) : 0, 1);
    j_end_obj(&j, 0);
    j_start_obj(&j, "params");
    j_s(&j, "model", info && info->model_path ? info->model_path : "", 0);
    j_s(&j, "language", info && info->language ? info->language : r->language, 0);
    j_b(&j, "translate", info ? info->translate : 0, 1);
    j_end_obj(&j, 0);
    j_start_obj(&j, "result");
    j_s(&j, "language", r->language, 1);
    j_end_obj(&j, 0);
    j_start_arr(&j, "transcription");
    for (int i = 0; i < r->n_segments; i++) {
        const steno_segment *s = &r->segments[i];
        j_start_obj(&j, NULL);
        j_times(&j, ticks(s->start), ticks(s->end), 0);
        j_s(&j, "text", seg_text(s), !full);
        if (full) {
            j_start_arr(&j, "tokens");
            for (int k = 0; k < s->n_tokens; k++) {
                char t[256];
                token_str(m, s->tokens[k], t, sizeof t);
                j_start_obj(&j, NULL);
                j_s(&j, "text", t, 0);
                j_i(&j, "id", s->tokens[k], 1);
                j_end_obj(&j, k == s->n_tokens - 1);
            }
            j_end_arr(&j, 1);
        }
        j_end_obj(&j, i == r->n_segments - 1);
    }
    j_end_arr(&j, 1);
    j_end_obj(&j, 1);
}

int steno_wcpp_format(const char *format) {
    static const char *const names[] = {"wcpp-txt", "wcpp-vtt", "wcpp-srt", "csv", "lrc", "wcpp-json",
                                        "wcpp-json-full"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(format, names[i]) == 0) return 1;
    return 0;
}

steno_status steno_write_result_wcpp(const steno_result *r, const char *format, const steno_wcpp_info *info,
                                     void *FILE_stream) {
    FILE *f = FILE_stream;
    if (!r || !format || !f) return steno_fail(STENO_E_INVALID_ARG, "steno_write_result_wcpp: NULL argument");
    if (r->n_segments < 0 || (r->n_segments > 0 && !r->segments))
        return steno_fail(STENO_E_INVALID_ARG, "steno_write_result_wcpp: result has no segments array");
    if (strcmp(format, "wcpp-txt") == 0) write_txt(r, f);
    else if (strcmp(format, "wcpp-vtt") == 0) write_vtt(r, f);
    else if (strcmp(format, "wcpp-srt") == 0) write_srt(r, info ? info->offset_n : 0, f);
    else if (strcmp(format, "csv") == 0) write_csv(r, f);
    else if (strcmp(format, "lrc") == 0) write_lrc(r, f);
    else if (strcmp(format, "wcpp-json") == 0) write_json(r, info, 0, f);
    else if (strcmp(format, "wcpp-json-full") == 0) write_json(r, info, 1, f);
    else
        return steno_fail(STENO_E_INVALID_ARG,
                          "output format '%s': expected wcpp-txt, wcpp-vtt, wcpp-srt, csv, lrc, wcpp-json or "
                          "wcpp-json-full",
                          format);
    if (fflush(f) != 0 || ferror(f)) return steno_fail(STENO_E_IO, "writing %s output: write error", format);
    return STENO_OK;
}
