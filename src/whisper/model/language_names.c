/* language_names.c — Whisper's language table, code and full name (steno.h steno_language_name,
 * steno_language_code): openai-whisper whisper/tokenizer.py LANGUAGES in its order (the language
 * tokens' order), then TO_LANGUAGE_CODE's aliases. One table for the CLI (--language, "Detected
 * language: German") and the server (verbose_json's "language": "german"). */
#include <stddef.h>
#include <strings.h>
#include <string.h>

#include "steno.h"

static const char *const k_languages[][2] = {
    {"en", "english"}, {"zh", "chinese"}, {"de", "german"}, {"es", "spanish"},
    {"ru", "russian"}, {"ko", "korean"}, {"fr", "french"}, {"ja", "japanese"},
    {"pt", "portuguese"}, {"tr", "turkish"}, {"pl", "polish"}, {"ca", "catalan"},
    {"nl", "dutch"}, {"ar", "arabic"}, {"sv", "swedish"}, {"it", "italian"},
    {"id", "indonesian"}, {"hi", "hindi"}, {"fi", "finnish"}, {"vi", "vietnamese"},
    {"he", "hebrew"}, {"uk", "ukrainian"}, {"el", "greek"}, {"ms", "malay"},
    {"cs", "czech"}, {"ro", "romanian"}, {"da", "danish"}, {"hu", "hungarian"},
    {"ta", "tamil"}, {"no", "norwegian"}, {"th", "thai"}, {"ur", "urdu"},
    {"hr", "croatian"}, {"bg", "bulgarian"}, {"lt", "lithuanian"}, {"la", "latin"},
    {"mi", "maori"}, {"ml", "malayalam"}, {"cy", "welsh"}, {"sk", "slovak"},
    {"te", "telugu"}, {"fa", "persian"}, {"lv", "latvian"}, {"bn", "bengali"},
    {"sr", "serbian"}, {"az", "azerbaijani"}, {"sl", "slovenian"}, {"kn", "kannada"},
    {"et", "estonian"}, {"mk", "macedonian"}, {"br", "breton"}, {"eu", "basque"},
    {"is", "icelandic"}, {"hy", "armenian"}, {"ne", "nepali"}, {"mn", "mongolian"},
    {"bs", "bosnian"}, {"kk", "kazakh"}, {"sq", "albanian"}, {"sw", "swahili"},
    {"gl", "galician"}, {"mr", "marathi"}, {"pa", "punjabi"}, {"si", "sinhala"},
    {"km", "khmer"}, {"sn", "shona"}, {"yo", "yoruba"}, {"so", "somali"},
    {"af", "afrikaans"}, {"oc", "occitan"}, {"ka", "georgian"}, {"be", "belarusian"},
    {"tg", "tajik"}, {"sd", "sindhi"}, {"gu", "gujarati"}, {"am", "amharic"},
    {"yi", "yiddish"}, {"lo", "lao"}, {"uz", "uzbek"}, {"fo", "faroese"},
    {"ht", "haitian creole"}, {"ps", "pashto"}, {"tk", "turkmen"}, {"nn", "nynorsk"},
    {"mt", "maltese"}, {"sa", "sanskrit"}, {"lb", "luxembourgish"}, {"my", "myanmar"},
    {"bo", "tibetan"}, {"tl", "tagalog"}, {"mg", "malagasy"}, {"as", "assamese"},
    {"tt", "tatar"}, {"haw", "hawaiian"}, {"ln", "lingala"}, {"ha", "hausa"},
    {"ba", "bashkir"}, {"jw", "javanese"}, {"su", "sundanese"}, {"yue", "cantonese"},
    /* aliases */
    {"my", "burmese"}, {"ca", "valencian"}, {"nl", "flemish"}, {"ht", "haitian"},
    {"lb", "letzeburgesch"}, {"ps", "pushto"}, {"pa", "panjabi"}, {"ro", "moldavian"},
    {"ro", "moldovan"}, {"si", "sinhalese"}, {"es", "castilian"}, {"zh", "mandarin"},
};

#define N_LANGUAGES (sizeof k_languages / sizeof k_languages[0])

const char *steno_language_name(const char *code) {
    if (!code) return NULL;
    for (size_t i = 0; i < N_LANGUAGES; i++) /* the first match: LANGUAGES' name, not an alias */
        if (strcmp(code, k_languages[i][0]) == 0) return k_languages[i][1];
    return NULL;
}

const char *steno_language_code(const char *code_or_name) {
    if (!code_or_name) return NULL;
    for (size_t i = 0; i < N_LANGUAGES; i++)
        if (strcasecmp(code_or_name, k_languages[i][0]) == 0 || strcasecmp(code_or_name, k_languages[i][1]) == 0)
            return k_languages[i][0];
    return NULL;
}

/* The i-th language of LANGUAGES (the order of the language tokens), or NULL past the 100th. */
const char *whisper_language_code_at(int i) {
    return i >= 0 && i < 100 ? k_languages[i][0] : NULL;
}
