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

static const char *const g_languages[][2] = {
    {"en", "english"},    {"zh", "chinese"},     {"de", "german"},     {"es", "spanish"},    {"ru", "russian"},
    {"ko", "korean"},     {"fr", "french"},      {"ja", "japanese"},   {"pt", "portuguese"}, {"tr", "turkish"},
    {"pl", "polish"},     {"ca", "catalan"},     {"nl", "dutch"},      {"ar", "arabic"},     {"sv", "swedish"},
    {"it", "italian"},    {"id", "indonesian"},  {"hi", "hindi"},      {"fi", "finnish"},    {"vi", "vietnamese"},
    {"he", "hebrew"},     {"uk", "ukrainian"},   {"el", "greek"},      {"ms", "malay"},      {"cs", "czech"},
    {"ro", "romanian"},   {"da", "danish"},      {"hu", "hungarian"},  {"ta", "tamil"},      {"no", "norwegian"},
    {"th", "thai"},       {"ur", "urdu"},        {"hr", "croatian"},   {"bg", "bulgarian"},  {"lt", "lithuanian"},
    {"la", "latin"},      {"mi", "maori"},       {"ml", "malayalam"},  {"cy", "welsh"},      {"sk", "slovak"},
    {"te", "telugu"},     {"fa", "persian"},     {"lv", "latvian"},    {"bn", "bengali"},    {"sr", "serbian"},
    {"az", "azerbaijani"}, {"sl", "slovenian"},  {"kn", "kannada"},    {"et", "estonian"},   {"mk", "macedonian"},
    {"br", "breton"},     {"eu", "basque"},      {"is", "icelandic"},  {"hy", "armenian"},   {"ne", "nepali"},
    {"mn", "mongolian"},  {"bs", "bosnian"},     {"kk", "kazakh"},     {"sq", "albanian"},   {"sw", "swahili"},
    {"gl", "galician"},   {"mr", "marathi"},     {"pa", "punjabi"},    {"si", "sinhala"},    {"km", "khmer"},
    {"sn", "shona"},      {"yo", "yoruba"},      {"so", "somali"},     {"af", "afrikaans"},  {"oc", "occitan"},
    {"ka", "georgian"},   {"be", "belarusian"},  {"tg", "tajik"},      {"sd", "sindhi"},     {"gu", "gujarati"},
    {"am", "amharic"},    {"yi", "yiddish"},     {"lo", "lao"},        {"uz", "uzbek"},      {"fo", "faroese"},
    {"ht", "haitian creole"}, {"ps", "pashto"},  {"tk", "turkmen"},    {"nn", "nynorsk"},    {"mt", "maltese"},
    {"sa", "sanskrit"},   {"lb", "luxembourgish"}, {"my", "myanmar"},  {"bo", "tibetan"},    {"tl", "tagalog"},
    {"mg", "malagasy"},   {"as", "assamese"},    {"tt", "tatar"},      {"haw", "hawaiian"},  {"ln", "lingala"},
    {"ha", "hausa"},      {"ba", "bashkir"},     {"jw", "javanese"},   {"su", "sundanese"},  {"yue", "cantonese"},
};
#define N_LANGUAGES (int)(sizeof g_languages / sizeof g_languages[0])

const char *audio_language_name(const char *code) {
    for (int i = 0; i < N_LANGUAGES; i++)
        if (strcmp(g_languages[i][0], code) == 0) return g_languages[i][1];
    return code;
}

const char *audio_language_code(const char *s) {
    for (int i = 0; i < N_LANGUAGES; i++)
        if (strcasecmp(g_languages[i][0], s) == 0 || strcasecmp(g_languages[i][1], s) == 0) return g_languages[i][0];
    return NULL;
}

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
