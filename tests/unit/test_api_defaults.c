/* test_api_defaults.c — the API-stability pieces of include/steno.h (docs/API.md): steno_version()
 * and steno_version_number() agree with the header's STENO_VERSION macros, and every input
 * struct's default function gives the documented defaults (steno_writer_default_options: all
 * "not set", and writing with it equals writing with NULL options). Also: NULL output pointers are
 * refused with STENO_E_INVALID_ARG, never dereferenced, and steno_llm_resolve never returns a
 * truncated path as a success. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steno.h"
#include "steno_llm.h"
#include "test_util.h"

static void test_version(void) {
    CHECK(strcmp(steno_version(), STENO_VERSION) == 0, "steno_version() %s, header %s", steno_version(),
          STENO_VERSION);
    CHECK(steno_version_number() == STENO_VERSION_NUMBER, "steno_version_number() %d, header %d",
          steno_version_number(), STENO_VERSION_NUMBER);
    char s[32];
    snprintf(s, sizeof s, "%d.%d.%d", STENO_VERSION_MAJOR, STENO_VERSION_MINOR, STENO_VERSION_PATCH);
    CHECK(strcmp(s, STENO_VERSION) == 0, "STENO_VERSION_MAJOR/MINOR/PATCH give %s, STENO_VERSION %s", s,
          STENO_VERSION);
}

/* Renders r as srt into memory with opts. */
static char *render(const steno_result *r, const steno_writer_options *opts) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    steno_status st = steno_write_result_ex(r, "srt", opts, f);
    fclose(f);
    if (st != STENO_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void test_writer_defaults(void) {
    steno_writer_options o = steno_writer_default_options();
    CHECK(o.max_line_width == 0 && o.max_line_count == 0 && o.max_words_per_line == 0 && o.highlight_words == 0,
          "steno_writer_default_options() is not all 'not set'");

    steno_word words[2] = {{" Hello", 0.0, 0.5, 0.9}, {" world.", 0.5, 1.0, 0.8}};
    steno_segment seg = {.id = 0, .start = 0.0, .end = 1.0, .text = " Hello world.", .words = words, .n_words = 2};
    steno_result r = {.text = " Hello world.", .language = "en", .segments = &seg, .n_segments = 1,
                      .duration = 1.0, .word_timestamps = 1};
    char *a = render(&r, &o), *b = render(&r, NULL);
    CHECK(a && b && strcmp(a, b) == 0, "defaults and NULL options differ:\n%s\n--\n%s", a ? a : "(error)",
          b ? b : "(error)");
    free(a);
    free(b);
}

static void test_null_and_short_buffers(void) {
    CHECK(steno_whisper_load("/nonexistent", 1, NULL) == STENO_E_INVALID_ARG, "steno_whisper_load(out NULL)");
    CHECK(steno_whisper_load_ex("/nonexistent", NULL, NULL) == STENO_E_INVALID_ARG, "steno_whisper_load_ex(out NULL)");
    CHECK(steno_whisper_state_new(NULL, 1, NULL) == STENO_E_INVALID_ARG, "steno_whisper_state_new(out NULL)");
    CHECK(steno_transcribe(NULL, NULL, 0, NULL, NULL) == STENO_E_INVALID_ARG, "steno_transcribe(out NULL)");
    steno_result *r = (steno_result *)1;
    CHECK(steno_transcribe(NULL, NULL, 0, NULL, &r) == STENO_E_INVALID_ARG && !r, "steno_transcribe(w NULL)");
    CHECK(strstr(steno_errmsg(), "no model") != NULL, "message %s", steno_errmsg());
    char buf[8];
    CHECK(steno_llm_resolve("/tmp/a-path-longer-than-eight", buf, sizeof buf) == STENO_E_INVALID_ARG,
          "steno_llm_resolve: a path that does not fit");
    CHECK(strstr(steno_errmsg(), "longer than the buffer") != NULL, "message %s", steno_errmsg());
    CHECK(steno_llm_resolve("/tmp/x", NULL, 0) == STENO_E_INVALID_ARG, "steno_llm_resolve(buf NULL)");
    setenv("STENO_MODELS_DIR", "/tmp", 1);
    CHECK(steno_llm_resolve("smollm2", buf, sizeof buf) == STENO_E_INVALID_ARG, "steno_llm_resolve: a name that does not fit");
}

int main(void) {
    test_version();
    test_null_and_short_buffers();
    test_writer_defaults();
    printf("%d passed, %d failed\n", g_checks - g_failures, g_failures);
    return g_failures ? 1 : 0;
}
