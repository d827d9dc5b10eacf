/* audio_format.c — a transcription result in the response formats of OpenAI's audio API (json,
 * text, srt, vtt, verbose_json) and whisper.cpp's server, plus the language names OpenAI writes
 * (openai-whisper whisper/tokenizer.py LANGUAGES). srt and vtt come from steno's writers, so they
 * equal the CLI's files byte for byte. */
#include "server/audio_format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text/utf8.h"


const char *audio_language_name(const char *code) {
    const char *name = steno_language_name(code);
    return name ? name : code;
}

const char *audio_language_code(const char *s) { return steno_language_code(s); }

int audio_format_parse(const char *s, audio_format *out) {
    static const char *const names[] = {"json", "text", "srt", "vtt", "verbose_json"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (audio_format)i;
            return 0;
        }
    return -1;
}

char *audio_result_text(const steno_result *res) {
    size_t n = 0;
    const char *t = steno_strip(res->text ? res->text : "", &n);
    return strndup(t, n);
}

static double round3(double x) { return nearbyint(x * 1000.0) / 1000.0; }

cJSON *audio_verbose_json(const steno_result *res, const char *task, int words, int segments) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "task", task);
    cJSON_AddStringToObject(root, "language", audio_language_name(res->language));
    cJSON_AddNumberToObject(root, "duration", round3(res->duration));
    char *text = audio_result_text(res);
    cJSON_AddStringToObject(root, "text", text ? text : "");
    free(text);
    if (segments) {
        cJSON *segs = cJSON_AddArrayToObject(root, "segments");
        for (int i = 0; i < res->n_segments; i++) {
            const steno_segment *sg = &res->segments[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "id", sg->id);
            cJSON_AddNumberToObject(o, "seek", sg->seek);
            cJSON_AddNumberToObject(o, "start", round3(sg->start));
            cJSON_AddNumberToObject(o, "end", round3(sg->end));
            cJSON_AddStringToObject(o, "text", sg->text ? sg->text : "");
            cJSON_AddItemToObject(o, "tokens", cJSON_CreateIntArray(sg->tokens, sg->n_tokens));
            cJSON_AddNumberToObject(o, "temperature", sg->temperature);
            cJSON_AddNumberToObject(o, "avg_logprob", sg->avg_logprob);
            cJSON_AddNumberToObject(o, "compression_ratio", sg->compression_ratio);
            cJSON_AddNumberToObject(o, "no_speech_prob", sg->no_speech_prob);
            cJSON_AddItemToArray(segs, o);
        }
    }
    if (words) {
        /* OpenAI's words carry no leading space; the probability is steno's addition */
        cJSON *ws = cJSON_AddArrayToObject(root, "words");
        for (int i = 0; i < res->n_segments; i++)
            for (int k = 0; k < res->segments[i].n_words; k++) {
                const steno_word *w = &res->segments[i].words[k];
                size_t n = 0;
                const char *t = steno_strip(w->word ? w->word : "", &n);
                char *word = strndup(t, n);
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "word", word ? word : "");
                free(word);
                cJSON_AddNumberToObject(o, "start", w->start);
                cJSON_AddNumberToObject(o, "end", w->end);
                cJSON_AddNumberToObject(o, "probability", w->probability);
                cJSON_AddItemToArray(ws, o);
            }
    }
    return root;
}

char *audio_format_result(const steno_result *res, audio_format fmt, const char *task, int words, int segments,
                          const char **content_type, size_t *len) {
    char *out = NULL;
    *len = 0;
    if (fmt == AUDIO_JSON || fmt == AUDIO_VERBOSE_JSON) {
        cJSON *root;
        if (fmt == AUDIO_VERBOSE_JSON) {
            root = audio_verbose_json(res, task, words, segments);
        } else {
            root = cJSON_CreateObject();
            char *text = audio_result_text(res);
            cJSON_AddStringToObject(root, "text", text ? text : "");
            free(text);
            cJSON *usage = cJSON_AddObjectToObject(root, "usage");
            cJSON_AddStringToObject(usage, "type", "duration");
            cJSON_AddNumberToObject(usage, "seconds", ceil(res->duration));
        }
        out = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        *content_type = "application/json";
        if (out) *len = strlen(out);
        return out;
    }
    if (fmt == AUDIO_TEXT) {
        char *text = audio_result_text(res);
        if (!text) return NULL;
        const size_t n = strlen(text);
        out = malloc(n + 2);
        if (out) {
            memcpy(out, text, n);
            out[n] = '\n';
            out[n + 1] = '\0';
            *len = n + 1;
        }
        free(text);
        *content_type = "text/plain; charset=utf-8";
        return out;
    }
    FILE *f = open_memstream(&out, len);
    if (!f) return NULL;
    const steno_status st = steno_write_result(res, fmt == AUDIO_SRT ? "srt" : "vtt", f);
    if (fclose(f) != 0 || st != STENO_OK) {
        free(out);
        return NULL;
    }
    *content_type = fmt == AUDIO_SRT ? "application/x-subrip; charset=utf-8" : "text/vtt; charset=utf-8";
    return out;
}
