/* test_writers.c — steno_write_result() against openai-whisper's whisper/utils.py writers.
 *
 * The expected texts below were produced by utils.py's WriteTXT / WriteVTT / WriteSRT / WriteTSV /
 * WriteJSON code (format_timestamp: round() half to even; json.dump defaults) on the same result
 * built here by hand. Edge cases: 3599.9995 s (3599999.5 ms, rounds to even → 01:00:00.000),
 * 0.0015 s (1.5 ms → 2), hours > 0 in VTT, "-->" in subtitle text, tabs in TSV, Python's Unicode
 * whitespace in strip() (U+3000, U+00A0), quotes/newlines/DEL/non-BMP characters in JSON,
 * -Infinity, -0.0, 5e-324 and 1e+19 as Python's repr() writes them.
 *
 * Word timestamps: the expected srt/vtt/json of a result with words were produced by utils.py
 * (openai-whisper, SubtitlesWriter.iterate_result: max_line_width, max_line_count,
 * max_words_per_line, highlight_words; WriteJSON with segment "words") on the same result; the
 * word " caf\u00e9" checks that line widths count characters, not bytes. */
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

/* Runs steno_write_result_ex into memory; returns a malloc'd string (NULL on failure). */
static char *render_ex(const steno_result *r, const char *fmt, const steno_writer_options *o, steno_status *st) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) { perror("open_memstream"); exit(1); }
    *st = o ? steno_write_result_ex(r, fmt, o, f) : steno_write_result(r, fmt, f);
    fclose(f);
    return buf;
}

static char *render(const steno_result *r, const char *fmt, steno_status *st) { return render_ex(r, fmt, NULL, st); }

/* utils.py output for the word result below: per case, srt then vtt; the last entry is JSON. */
static const char *const expected_words[] = {
    /* plain.srt */
    "1\n"
    "00:00:00,000 --> 00:00:04,200\n"
    "Hello, wonderful world.\n"
    "\n"
    "2\n"
    "00:00:08,000 --> 00:00:10,000\n"
    "And so -> caf\303\251 on\n"
    "\n"
    "",
    /* plain.vtt */
    "WEBVTT\n"
    "\n"
    "00:00.000 --> 00:04.200\n"
    "Hello, wonderful world.\n"
    "\n"
    "00:08.000 --> 00:10.000\n"
    "And so -> caf\303\251 on\n"
    "\n"
    "",
    /* width.srt */
    "1\n"
    "00:00:00,000 --> 00:00:04,200\n"
    "Hello,\n"
    "wonderful\n"
    "world.\n"
    "\n"
    "2\n"
    "00:00:08,000 --> 00:00:10,000\n"
    "And so ->\n"
    "caf\303\251 on\n"
    "\n"
    "",
    /* width.vtt */
    "WEBVTT\n"
    "\n"
    "00:00.000 --> 00:04.200\n"
    "Hello,\n"
    "wonderful\n"
    "world.\n"
    "\n"
    "00:08.000 --> 00:10.000\n"
    "And so ->\n"
    "caf\303\251 on\n"
    "\n"
    "",
    /* width_count.srt */
    "1\n"
    "00:00:00,000 --> 00:00:01,100\n"
    "Hello,\n"
    "wonderful\n"
    "\n"
    "2\n"
    "00:00:01,100 --> 00:00:04,200\n"
    "world.\n"
    "\n"
    "3\n"
    "00:00:08,000 --> 00:00:10,000\n"
    "And so ->\n"
    "caf\303\251 on\n"
    "\n"
    "",
    /* width_count.vtt */
    "WEBVTT\n"
    "\n"
    "00:00.000 --> 00:01.100\n"
    "Hello,\n"
    "wonderful\n"
    "\n"
    "00:01.100 --> 00:04.200\n"
    "world.\n"
    "\n"
    "00:08.000 --> 00:10.000\n"
    "And so ->\n"
    "caf\303\251 on\n"
    "\n"
    "",
    /* words2.srt */
    "1\n"
    "00:00:00,000 --> 00:00:01,100\n"
    "Hello, wonderful\n"
    "\n"
    "2\n"
    "00:00:01,100 --> 00:00:04,200\n"
    "world.\n"
    "\n"
    "3\n"
    "00:00:08,000 --> 00:00:08,600\n"
    "And so\n"
    "\n"
    "4\n"
    "00:00:08,600 --> 00:00:09,400\n"
    "-> caf\303\251\n"
    "\n"
    "5\n"
    "00:00:09,400 --> 00:00:10,000\n"
    "on\n"
    "\n"
    "",
    /* words2.vtt */
    "WEBVTT\n"
    "\n"
    "00:00.000 --> 00:01.100\n"
    "Hello, wonderful\n"
    "\n"
    "00:01.100 --> 00:04.200\n"
    "world.\n"
    "\n"
    "00:08.000 --> 00:08.600\n"
    "And so\n"
    "\n"
    "00:08.600 --> 00:09.400\n"
    "-> caf\303\251\n"
    "\n"
    "00:09.400 --> 00:10.000\n"
    "on\n"
    "\n"
    "",
    /* highlight.srt */
    "1\n"
    "00:00:00,000 --> 00:00:00,500\n"
    "<u>Hello,</u> wonderful world.\n"
    "\n"
    "2\n"
    "00:00:00,500 --> 00:00:00,520\n"
    "Hello, wonderful world.\n"
    "\n"
    "3\n"
    "00:00:00,520 --> 00:00:01,100\n"
    "Hello, <u>wonderful</u> world.\n"
    "\n"
    "4\n"
    "00:00:01,100 --> 00:00:04,200\n"
    "Hello, wonderful <u>world.</u>\n"
    "\n"
    "5\n"
    "00:00:08,000 --> 00:00:08,300\n"
    "<u>And</u> so -> caf\303\251 on\n"
    "\n"
    "6\n"
    "00:00:08,300 --> 00:00:08,600\n"
    "And <u>so</u> -> caf\303\251 on\n"
    "\n"
    "7\n"
    "00:00:08,600 --> 00:00:08,900\n"
    "And so <u>-></u> caf\303\251 on\n"
    "\n"
    "8\n"
    "00:00:08,900 --> 00:00:09,400\n"
    "And so -> <u>caf\303\251</u> on\n"
    "\n"
    "9\n"
    "00:00:09,400 --> 00:00:10,000\n"
    "And so -> caf\303\251 <u>on</u>\n"
    "\n"
    "",
    /* highlight.vtt */
    "WEBVTT\n"
    "\n"
    "00:00.000 --> 00:00.500\n"
    "<u>Hello,</u> wonderful world.\n"
    "\n"
    "00:00.500 --> 00:00.520\n"
    "Hello, wonderful world.\n"
    "\n"
    "00:00.520 --> 00:01.100\n"
    "Hello, <u>wonderful</u> world.\n"
    "\n"
    "00:01.100 --> 00:04.200\n"
    "Hello, wonderful <u>world.</u>\n"
    "\n"
    "00:08.000 --> 00:08.300\n"
    "<u>And</u> so -> caf\303\251 on\n"
    "\n"
    "00:08.300 --> 00:08.600\n"
    "And <u>so</u> -> caf\303\251 on\n"
    "\n"
    "00:08.600 --> 00:08.900\n"
    "And so <u>-></u> caf\303\251 on\n"
    "\n"
    "00:08.900 --> 00:09.400\n"
    "And so -> <u>caf\303\251</u> on\n"
    "\n"
    "00:09.400 --> 00:10.000\n"
    "And so -> caf\303\251 <u>on</u>\n"
    "\n"
    "",
    /* width_count1_hl.srt */
    "1\n"
    "00:00:00,000 --> 00:00:00,500\n"
    "<u>Hello,</u> wonderful\n"
    "\n"
    "2\n"
    "00:00:00,500 --> 00:00:00,520\n"
    "Hello, wonderful\n"
    "\n"
    "3\n"
    "00:00:00,520 --> 00:00:01,100\n"
    "Hello, <u>wonderful</u>\n"
    "\n"
    "4\n"
    "00:00:01,100 --> 00:00:04,200\n"
    "<u>world.</u>\n"
    "\n"
    "5\n"
    "00:00:08,000 --> 00:00:08,300\n"
    "<u>And</u> so -> caf\303\251\n"
    "\n"
    "6\n"
    "00:00:08,300 --> 00:00:08,600\n"
    "And <u>so</u> -> caf\303\251\n"
    "\n"
    "7\n"
    "00:00:08,600 --> 00:00:08,900\n"
    "And so <u>-></u> caf\303\251\n"
    "\n"
    "8\n"
    "00:00:08,900 --> 00:00:09,400\n"
    "And so -> <u>caf\303\251</u>\n"
    "\n"
    "9\n"
    "00:00:09,400 --> 00:00:10,000\n"
    "<u>on</u>\n"
    "\n"
    "",
    /* width_count1_hl.vtt */
    "WEBVTT\n"
    "\n"
    "00:00.000 --> 00:00.500\n"
    "<u>Hello,</u> wonderful\n"
    "\n"
    "00:00.500 --> 00:00.520\n"
    "Hello, wonderful\n"
    "\n"
    "00:00.520 --> 00:01.100\n"
    "Hello, <u>wonderful</u>\n"
    "\n"
    "00:01.100 --> 00:04.200\n"
    "<u>world.</u>\n"
    "\n"
    "00:08.000 --> 00:08.300\n"
    "<u>And</u> so -> caf\303\251\n"
    "\n"
    "00:08.300 --> 00:08.600\n"
    "And <u>so</u> -> caf\303\251\n"
    "\n"
    "00:08.600 --> 00:08.900\n"
    "And so <u>-></u> caf\303\251\n"
    "\n"
    "00:08.900 --> 00:09.400\n"
    "And so -> <u>caf\303\251</u>\n"
    "\n"
    "00:09.400 --> 00:10.000\n"
    "<u>on</u>\n"
    "\n"
    "",
    /* json */
    "{\"text\": \" Hello, wonderful world. And so -> caf\\u00e9 on\", \"segments\": [{\"id\": 0, \"seek\": 0, \"start\": 0.0, \"end\": 4.2, \"text\": \" Hello, wonderful world.\", \"tokens\": [1, 2], \"temperature\": 0.0, \"avg_logprob\": -0.25, \"compression_ratio\": 1.5, \"no_speech_prob\": 0.01, \"words\": [{\"word\": \" Hello,\", \"start\": 0.0, \"end\": 0.5, \"probability\": 0.9}, {\"word\": \" wonderful\", \"start\": 0.52, \"end\": 1.1, \"probability\": 0.8}, {\"word\": \" world.\", \"start\": 1.1, \"end\": 4.2, \"probability\": 0.125}]}, {\"id\": 1, \"seek\": 0, \"start\": 8.0, \"end\": 10.0, \"text\": \" And so -> caf\\u00e9 on\", \"tokens\": [3], \"temperature\": 0.0, \"avg_logprob\": -0.5, \"compression_ratio\": 1.0, \"no_speech_prob\": 0.02, \"words\": [{\"word\": \" And\", \"start\": 8.0, \"end\": 8.3, \"probability\": 0.5}, {\"word\": \" so\", \"start\": 8.3, \"end\": 8.6, \"probability\": 0.5}, {\"word\": \" ->\", \"start\": 8.6, \"end\": 8.9, \"probability\": 0.5}, {\"word\": \" caf\\u00e9\", \"start\": 8.9, \"end\": 9.4, \"probability\": 0.5}, {\"word\": \" on\", \"start\": 9.4, \"end\": 10.0, \"probability\": 0.5}]}, {\"id\": 2, \"seek\": 1000, \"start\": 10.0, \"end\": 10.0, \"text\": \"\", \"tokens\": [], \"temperature\": 0.0, \"avg_logprob\": -0.5, \"compression_ratio\": 1.0, \"no_speech_prob\": 0.02, \"words\": []}], \"language\": \"en\"}",
};

static void check_words(void) {
    int t0[] = {1, 2}, t1[] = {3};
    steno_word w0[] = {{" Hello,", 0.0, 0.5, 0.9}, {" wonderful", 0.52, 1.1, 0.8}, {" world.", 1.1, 4.2, 0.125}};
    steno_word w1[] = {{" And", 8.0, 8.3, 0.5}, {" so", 8.3, 8.6, 0.5}, {" ->", 8.6, 8.9, 0.5},
                       {" caf\u00e9", 8.9, 9.4, 0.5}, {" on", 9.4, 10.0, 0.5}};
    steno_segment segs[3] = {
        {.id = 0, .seek = 0, .start = 0.0, .end = 4.2, .text = " Hello, wonderful world.", .tokens = t0,
         .n_tokens = 2, .avg_logprob = -0.25, .compression_ratio = 1.5, .no_speech_prob = 0.01, .words = w0,
         .n_words = 3},
        {.id = 1, .seek = 0, .start = 8.0, .end = 10.0, .text = " And so -> caf\u00e9 on", .tokens = t1,
         .n_tokens = 1, .avg_logprob = -0.5, .compression_ratio = 1.0, .no_speech_prob = 0.02, .words = w1,
         .n_words = 5},
        {.id = 2, .seek = 1000, .start = 10.0, .end = 10.0, .text = "", .tokens = NULL, .n_tokens = 0,
         .avg_logprob = -0.5, .compression_ratio = 1.0, .no_speech_prob = 0.02},
    };
    steno_result r = {.text = " Hello, wonderful world. And so -> caf\u00e9 on", .language = "en",
                      .segments = segs, .n_segments = 3, .duration = 10.0, .word_timestamps = 1};
    const steno_writer_options cases[] = {
        {0, 0, 0, 0},  /* plain: cues from words, one per segment */
        {12, 0, 0, 0}, /* max_line_width 12 */
        {12, 2, 0, 0}, /* max_line_width 12, max_line_count 2 */
        {0, 0, 2, 0},  /* max_words_per_line 2 */
        {0, 0, 0, 1},  /* highlight_words */
        {16, 1, 0, 1}, /* max_line_width 16, max_line_count 1, highlight_words */
    };
    const char *names[] = {"plain", "width", "width_count", "words2", "highlight", "width_count1_hl"};
    for (int c = 0; c < 6; c++) {
        for (int k = 0; k < 2; k++) {
            steno_status st;
            char *got = render_ex(&r, k ? "vtt" : "srt", &cases[c], &st);
            char what[64];
            snprintf(what, sizeof what, "words %s.%s", names[c], k ? "vtt" : "srt");
            check(what, st == STENO_OK);
            check_text(what, got ? got : "", expected_words[2 * c + k]);
            free(got);
        }
    }
    steno_status st;
    char *got = render(&r, "json", &st);
    check("words json", st == STENO_OK);
    check_text("words json", got ? got : "", expected_words[12]);
    free(got);
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

    check_words();

    /* An unknown format is an argument error with a message naming it. */
    steno_status st;
    char *got = render(&r, "docx", &st);
    check("unknown format → STENO_E_INVALID_ARG", st == STENO_E_INVALID_ARG);
    check("unknown format message names it", strstr(steno_errmsg(), "docx") != NULL);
    free(got);

    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
