/* test_vad_spans.c — steno_vad_spans_from_probs against faster-whisper 1.2.1's
 * get_speech_timestamps on given probability sequences (tests/fixtures/vad/spans_cases.json,
 * written by tools/vad_fixtures.py: seeded random runs of probabilities, some at the thresholds'
 * float32 neighbours, and random options), span for span; steno_vad_default_options gives
 * VadOptions' defaults; steno_vad_n_frames; NULL outputs and out-of-range options are refused.
 * No weights needed: the network's parity is tests/py/test_vad.py. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "steno.h"
#include "test_util.h"

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void test_cases(void) {
    const char *src = getenv("STENO_SOURCE");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/vad/spans_cases.json", src && *src ? src : ".");
    char *text = test_read_all(path);
    CHECK(text != NULL, "%s is readable (set STENO_SOURCE)", path);
    if (!text) return;
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    CHECK(cJSON_GetArraySize(cases) > 100, "spans_cases.json has cases");
    int n_cases = 0, n_spans = 0, n_equal = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        size_t n_samples = (size_t)num(c, "n_samples"), n_probs = steno_vad_n_frames(n_samples), k = 0;
        float *probs = malloc(sizeof(float) * n_probs);
        const cJSON *run;
        cJSON_ArrayForEach(run, cJSON_GetObjectItemCaseSensitive(c, "runs")) {
            float v = (float)cJSON_GetArrayItem(run, 0)->valuedouble;
            for (int j = 0; j < cJSON_GetArrayItem(run, 1)->valueint && k < n_probs; j++) probs[k++] = v;
        }
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(c, "options");
        steno_vad_options opts = steno_vad_default_options();
        opts.threshold = num(o, "threshold");
        opts.neg_threshold = num(o, "neg_threshold");
        opts.min_speech_duration_ms = (int)num(o, "min_speech_duration_ms");
        opts.max_speech_duration_s = num(o, "max_speech_duration_s") < 0 ? INFINITY : num(o, "max_speech_duration_s");
        opts.min_silence_duration_ms = (int)num(o, "min_silence_duration_ms");
        opts.speech_pad_ms = (int)num(o, "speech_pad_ms");
        steno_speech_span *spans = NULL;
        int n = -1;
        steno_status st = steno_vad_spans_from_probs(probs, n_probs, n_samples, &opts, &spans, &n);
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "spans");
        int equal = st == STENO_OK && k == n_probs && n == cJSON_GetArraySize(want);
        for (int i = 0; equal && i < n; i++) {
            const cJSON *w = cJSON_GetArrayItem(want, i);
            equal = spans[i].start == (int64_t)cJSON_GetArrayItem(w, 0)->valuedouble &&
                    spans[i].end == (int64_t)cJSON_GetArrayItem(w, 1)->valuedouble;
        }
        CHECK(equal, "case %d (%zu samples): %d spans, faster-whisper %d", n_cases, n_samples, n,
              cJSON_GetArraySize(want));
        n_equal += equal;
        n_spans += cJSON_GetArraySize(want);
        n_cases++;
        free(spans);
        free(probs);
    }
    printf("spans from probabilities: %d of %d cases (%d spans) equal to faster-whisper's\n", n_equal, n_cases,
           n_spans);
    cJSON_Delete(root);
}

static void test_defaults_and_errors(void) {
    steno_vad_options o = steno_vad_default_options();
    CHECK(o.threshold == 0.5 && o.neg_threshold < 0 && o.min_speech_duration_ms == 0 &&
              isinf(o.max_speech_duration_s) && o.min_silence_duration_ms == 2000 && o.speech_pad_ms == 400 &&
              o.n_threads == 0,
          "steno_vad_default_options() gives faster-whisper 1.2.1's VadOptions defaults");
    CHECK(steno_vad_n_frames(0) == 1 && steno_vad_n_frames(511) == 1 && steno_vad_n_frames(512) == 2 &&
              steno_vad_n_frames(1023) == 2,
          "steno_vad_n_frames pads to the next multiple of 512 (a whole frame when already one)");
    float p[2] = {0.9f, 0.9f};
    steno_speech_span *spans = (steno_speech_span *)p;
    int n = 5;
    CHECK(steno_vad_spans_from_probs(p, 2, 600, NULL, NULL, &n) == STENO_E_INVALID_ARG, "NULL spans refused");
    CHECK(steno_vad_spans_from_probs(p, 2, 600, &o, &spans, NULL) == STENO_E_INVALID_ARG && spans == NULL,
          "NULL n_spans refused, *spans cleared");
    o.threshold = 1.5;
    CHECK(steno_vad_spans_from_probs(p, 2, 600, &o, &spans, &n) == STENO_E_INVALID_ARG && n == 0,
          "threshold 1.5 refused");
    o = steno_vad_default_options();
    o.max_speech_duration_s = 0;
    CHECK(steno_vad_spans_from_probs(p, 2, 600, &o, &spans, &n) == STENO_E_INVALID_ARG, "max speech 0 s refused");
    CHECK(steno_vad_spans_from_probs(p, 2, 600, NULL, &spans, &n) == STENO_OK && n == 1 && spans[0].start == 0 &&
              spans[0].end == 600,
          "speech from the first frame to the end: one span [0, 600)");
    free(spans);
    steno_vad *vad = (steno_vad *)p;
    CHECK(steno_vad_load("/nonexistent/silero.safetensors", &vad) == STENO_E_IO && vad == NULL,
          "a missing weights file: STENO_E_IO, *out cleared");
    steno_vad_free(NULL);
}

int main(void) {
    test_defaults_and_errors();
    test_cases();
    return test_summary("test_vad_spans");
}
