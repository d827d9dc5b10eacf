/* test_writers.c — steno_write_result() against openai-whisper's whisper/utils.py writers.
 *
 * The expected texts below were produced by utils.py's WriteTXT / WriteVTT / WriteSRT / WriteTSV /
 * WriteJSON code (format_timestamp: round() half to even; json.dump defaults) on the same result
 * built here by hand. Edge cases: 3599.9995 s (3599999.5 ms, rounds to even → 01:00:00.000),
 * 0.0015 s (1.5 ms → 2), hours > 0 in VTT, "-->" in subtitle text, tabs in TSV, Python's Unicode
 * whitespace in strip() (U+3000, U+00A0), quotes/newlines/DEL/non-BMP characters in JSON,
 * -Infinity, -0.0, 5e-324 and 1e+19 as Python's repr() writes them. */
#include "steno.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_pass, n_fail;

static void check_text(const char *what, const char *got, const char *want) {
    if (strcmp(got, want) == 0) { n_pass++; return; }
    n_fail++;
    size_t i = 0;
    while (got[i] && got[i] == want[i]) i++;
    fprintf(stderr, "FAIL %s: differs at byte %zu\n--- got:\n%s\n--- want:\n%s\n---\n", what, i,
            got, want);
}

static void check(const char *what, int ok) {
    if (ok) { n_pass++; return; }
    n_fail++;
    fprintf(stderr, "FAIL %s\n", what);
}

/* Runs steno_write_result into memory; returns a malloc'd string (NULL on failure). */
static char *render(const steno_result *r, const char *fmt, steno_status *st) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) { perror("open_memstream"); exit(1); }
    *st = steno_write_result(r, fmt, f);
    fclose(f);
    return buf;
}

static const char *expected_txt =
    "Hello world.\n"
    "And so --> on\t\"quoted\"\n"
    "caf\303\251 \360\237\230\200 \177\\\n"
    "\n";

static const char *expected_vtt =
    "WEBVTT\n"
    "\n"
    "00:00.000 --> 00:05.000\n"
    "Hello world.\n"
    "\n"
    "01:00:00.000 --> 01:00:00.000\n"
    "And so -> on\t\"quoted\"\n"
    "\n"
    "01:02:03.062 --> 02:03:04.012\n"
    "caf\303\251 \360\237\230\200 \177\\\n"
    "\n"
    "00:00.000 --> 00:00.002\n"
    "\n"
    "\n";

static const char *expected_srt =
    "1\n"
    "00:00:00,000 --> 00:00:05,000\n"
    "Hello world.\n"
    "\n"
    "2\n"
    "01:00:00,000 --> 01:00:00,000\n"
    "And so -> on\t\"quoted\"\n"
    "\n"
    "3\n"
    "01:02:03,062 --> 02:03:04,012\n"
    "caf\303\251 \360\237\230\200 \177\\\n"
    "\n"
    "4\n"
    "00:00:00,000 --> 00:00:00,002\n"
    "\n"
    "\n";

static const char *expected_tsv =
    "start\tend\ttext\n"
    "0\t5000\tHello world.\n"
    "3600000\t3600000\tAnd so --> on \"quoted\"\n"
    "3723062\t7384012\tcaf\303\251 \360\237\230\200 \177\\\n"
    "0\t2\t\n";

static const char *expected_json =
    "{\"text\": \" Hello world.  And so --> on\\t\\\"quoted\\\"\\n caf\\u00e9 \\ud83d\\ude00 \\u007f\\\\\", "
    "\"segments\": [{\"id\": 0, \"seek\": 0, \"start\": 0.0, \"end\": 5.0, "
    "\"text\": \" Hello world.  \", \"tokens\": [50363, 15496, 995, 13, 50613], "
    "\"temperature\": 0.0, \"avg_logprob\": -0.25, "
    "\"compression_ratio\": 1.0588235294117647, \"no_speech_prob\": 0.0123}, {\"id\": 1, "
    "\"seek\": 500, \"start\": 3599.9995, \"end\": 3600.0005, "
    "\"text\": \" And so --> on\\t\\\"quoted\\\"\\n\", \"tokens\": [50613, 843], "
    "\"temperature\": 0.2, \"avg_logprob\": -0.3333333333333333, \"compression_ratio\": 2.4, "
    "\"no_speech_prob\": 1e-05}, {\"id\": 2, \"seek\": 360000, \"start\": 3723.0625, "
    "\"end\": 7384.0125, \"text\": \"\\u3000caf\\u00e9 \\ud83d\\ude00 \\u007f\\\\\\u00a0\", "
    "\"tokens\": [], \"temperature\": 1.0, \"avg_logprob\": -Infinity, "
    "\"compression_ratio\": 0.0, \"no_speech_prob\": 0.6000000000000001}, {\"id\": 3, "
    "\"seek\": 0, \"start\": 0.0005, \"end\": 0.0015, \"text\": \"\", \"tokens\": [1], "
    "\"temperature\": 0.6000000000000001, \"avg_logprob\": -0.0, "
    "\"compression_ratio\": 1.2345678901234567e+19, \"no_speech_prob\": 5e-324}], "
    "\"language\": \"en\"}";


int main(void) {
    int tok0[] = {50363, 15496, 995, 13, 50613}, tok1[] = {50613, 843}, tok3[] = {1};
    steno_segment segs[4] = {
        {.id = 0, .seek = 0, .start = 0.0, .end = 5.0, .text = " Hello world.  ", .tokens = tok0,
         .n_tokens = 5, .temperature = 0.0, .avg_logprob = -0.25,
         .compression_ratio = 1.0588235294117647, .no_speech_prob = 0.0123},
        {.id = 1, .seek = 500, .start = 3599.9995, .end = 3600.0005,
         .text = " And so --> on\t\"quoted\"\n", .tokens = tok1, .n_tokens = 2, .temperature = 0.2,
         .avg_logprob = -1.0 / 3, .compression_ratio = 2.4, .no_speech_prob = 1e-05},
        {.id = 2, .seek = 360000, .start = 3723.0625, .end = 7384.0125,
         .text = "\u3000caf\u00e9 \U0001F600 \x7f\\\u00a0", .tokens = NULL, .n_tokens = 0,
         .temperature = 1.0, .avg_logprob = -INFINITY, .compression_ratio = 0.0,
         .no_speech_prob = 0.6000000000000001},
        {.id = 3, .seek = 0, .start = 0.0005, .end = 0.0015, .text = "", .tokens = tok3,
         .n_tokens = 1, .temperature = 0.6000000000000001, .avg_logprob = -0.0,
         .compression_ratio = 12345678901234567890.0, .no_speech_prob = 5e-324},
    };
    steno_result r = {
        .text = " Hello world.  And so --> on\t\"quoted\"\n caf\u00e9 \U0001F600 \x7f\\",
        .language = "en", .segments = segs, .n_segments = 4, .duration = 7384.0125};

    const char *fmts[5] = {"txt", "vtt", "srt", "tsv", "json"};
    const char *want[5] = {expected_txt, expected_vtt, expected_srt, expected_tsv, expected_json};
    for (int i = 0; i < 5; i++) {
        steno_status st;
        char *got = render(&r, fmts[i], &st);
        check(fmts[i], st == STENO_OK);
        check_text(fmts[i], got, want[i]);
        free(got);
    }

    /* An empty transcript (silence, zero samples): what utils.py writes for segments == []. */
    steno_result empty = {.text = "", .language = "en", .segments = NULL, .n_segments = 0};
    const char *want_empty[5] = {"", "WEBVTT\n\n", "", "start\tend\ttext\n",
                                 "{\"text\": \"\", \"segments\": [], \"language\": \"en\"}"};
    for (int i = 0; i < 5; i++) {
        steno_status st;
        char *got = render(&empty, fmts[i], &st);
        char what[32];
        snprintf(what, sizeof what, "empty %s", fmts[i]);
        check(what, st == STENO_OK);
        check_text(what, got, want_empty[i]);
        free(got);
    }

    /* An unknown format is an argument error with a message naming it. */
    steno_status st;
    char *got = render(&r, "docx", &st);
    check("unknown format → STENO_E_INVALID_ARG", st == STENO_E_INVALID_ARG);
    check("unknown format message names it", strstr(steno_errmsg(), "docx") != NULL);
    free(got);

    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
