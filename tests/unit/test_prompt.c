/* test_prompt.c — the decoder prompt of a window (src/whisper/decoder/prompt.c) against
 * tests/fixtures/oracle_options/prompts.json (tools/oracle_options.py):
 *   * get_prompt: faster-whisper 1.2.1 WhisperModel.get_prompt on previous tokens, prefix,
 *     hotwords and without_timestamps, with the text tokenized by steno's tokenizer
 *     (whisper_prompt_encode, which must equal faster-whisper's encode(" " + text.strip()));
 *   * carry: openai-whisper's carry_initial_prompt rule (and the plain rule), window by window;
 *   * the logit filters' first step after a forced prefix (CTranslate2's rules: text allowed,
 *     blank suppressed, no max_initial_timestamp).
 * The model's tokenizer is needed (a missing model fails the test). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "text/whisper_bpe.h"
#include "whisper/decoder/logit_filters.h"
#include "whisper/decoder/prompt.h"

static int *int_array(const cJSON *a, int *n) {
    *n = cJSON_GetArraySize(a);
    int *v = malloc(sizeof(int) * (size_t)(*n ? *n : 1));
    for (int i = 0; i < *n; i++) v[i] = cJSON_GetArrayItem(a, i)->valueint;
    return v;
}

static int same(const int *a, int na, const int *b, int nb) {
    return na == nb && (na == 0 || memcmp(a, b, sizeof(int) * (size_t)na) == 0);
}

static void print_diff(const char *name, const int *got, int ng, const int *want, int nw) {
    int k = 0;
    while (k < ng && k < nw && got[k] == want[k]) k++;
    fprintf(stderr, "  %s: lengths got %d want %d, first difference at %d (got %d, want %d)\n", name, ng, nw, k,
            k < ng ? got[k] : -1, k < nw ? want[k] : -1);
}

static void test_get_prompt(const cJSON *root, const steno_tokenizer *tok) {
    int n_sot;
    int *sot = int_array(cJSON_GetObjectItem(root, "sot_sequence"), &n_sot);
    const int N = cJSON_GetObjectItem(root, "max_length")->valueint;
    const cJSON *c;
    int n_cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "get_prompt")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        int n_prev, n_want;
        int *prev = int_array(cJSON_GetObjectItem(c, "previous"), &n_prev);
        int *want = int_array(cJSON_GetObjectItem(c, "prompt"), &n_want);
        const cJSON *jp = cJSON_GetObjectItem(c, "prefix"), *jh = cJSON_GetObjectItem(c, "hotwords");
        int *prefix = NULL, n_prefix = 0, *hot = NULL, n_hot = 0;
        /* faster-whisper tests the strings (`if prefix:`), steno the same in decoding.c */
        if (cJSON_IsString(jp) && *jp->valuestring)
            CHECK(whisper_prompt_encode(tok, jp->valuestring, N, &prefix, &n_prefix) == STENO_OK, "%s: encode", name);
        if (cJSON_IsString(jh) && *jh->valuestring)
            CHECK(whisper_prompt_encode(tok, jh->valuestring, N, &hot, &n_hot) == STENO_OK, "%s: encode", name);
        whisper_prompt_in in = {.n_text_ctx = N, .sot_prev = 50360, .no_timestamps = 50362,
                                .timestamp_begin = 50363, .sot_seq = sot, .n_sot_seq = n_sot,
                                .hotwords = hot, .n_hotwords = n_hot, .previous = prev, .n_previous = n_prev,
                                .prefix = prefix, .n_prefix = n_prefix,
                                .without_timestamps = cJSON_IsTrue(cJSON_GetObjectItem(c, "without_timestamps"))};
        const int cap = whisper_prompt_capacity(&in);
        int *out = malloc(sizeof(int) * (size_t)cap);
        whisper_prompt_layout lay;
        CHECK(whisper_prompt_build(&in, out, cap, &lay) == STENO_OK, "%s: build", name);
        /* faster-whisper's prompt may exceed the n_text_ctx positions (long hotwords + long previous
         * text): steno drops the oldest previous tokens so that one position stays free */
        int over = n_want > N ? n_want - N : 0;
        if (over) {
            const int at = 1 + n_hot; /* after <|startofprev|> + hotwords */
            memmove(want + at, want + at + over, sizeof(int) * (size_t)(n_want - at - over));
            n_want -= over;
            printf("get_prompt %-32s faster-whisper's prompt has %d tokens > %d positions: expecting its %d "
                   "oldest previous token(s) dropped\n", name, n_want + over, N, over);
        }
        CHECK(same(out, lay.n, want, n_want), "get_prompt %s: prompt differs from faster-whisper's", name);
        if (!same(out, lay.n, want, n_want)) print_diff(name, out, lay.n, want, n_want);
        CHECK(out[lay.sot_index] == sot[0], "%s: sot_index %d", name, lay.sot_index);
        CHECK(lay.sample_begin == lay.sot_index + n_sot + in.without_timestamps, "%s: sample_begin", name);
        CHECK(lay.n_forced == (n_prefix ? n_prefix + !in.without_timestamps : 0) &&
                  lay.sample_begin + lay.n_forced == lay.n,
              "%s: forced %d", name, lay.n_forced);
        printf("get_prompt %-32s %3d tokens (%d forced) %s\n", name, lay.n, lay.n_forced,
               same(out, lay.n, want, n_want) ? "equal" : "DIFFERENT");
        n_cases++;
        free(out);
        free(prev);
        free(want);
        free(prefix);
        free(hot);
    }
    CHECK(n_cases >= 10, "only %d get_prompt cases in the fixture", n_cases);
    free(sot);
}

static void test_encode(const cJSON *root, const steno_tokenizer *tok) {
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "encode")) {
        int n_want, *ids = NULL, n = 0;
        int *want = int_array(cJSON_GetObjectItem(c, "ids"), &n_want);
        CHECK(whisper_prompt_encode(tok, cJSON_GetObjectItem(c, "text")->valuestring, 0, &ids, &n) == STENO_OK,
              "encode");
        CHECK(same(ids, n, want, n_want), "encode(\" \" + strip(%.30s...)) differs", cJSON_GetObjectItem(c, "text")->valuestring);
        free(ids);
        free(want);
    }
}

static void test_carry(const cJSON *root) {
    const cJSON *c;
    int n_steps = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "carry")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const int n_initial = cJSON_GetObjectItem(c, "n_initial")->valueint;
        int n_all;
        int *all = int_array(cJSON_GetObjectItem(c, "all_tokens"), &n_all);
        int out[448 / 2];
        const cJSON *s;
        int w = 0;
        cJSON_ArrayForEach(s, cJSON_GetObjectItem(c, "steps")) {
            const int n_prefix_all = cJSON_GetObjectItem(s, "n_all")->valueint;
            const int reset = cJSON_GetObjectItem(s, "prompt_reset_since")->valueint;
            const int before = g_failures;
            for (int carry = 0; carry < 2; carry++) {
                int n_want;
                int *want = int_array(cJSON_GetObjectItem(s, carry ? "carry" : "plain"), &n_want);
                const int n = whisper_prompt_previous(all, n_prefix_all, n_initial, reset, carry, 448, out);
                CHECK(same(out, n, want, n_want), "%s window %d (%s): previous tokens differ", name, w,
                      carry ? "carry" : "plain");
                if (!same(out, n, want, n_want)) print_diff(name, out, n, want, n_want);
                free(want);
            }
            printf("carry %-14s window %d: reset_since %3d, %3d tokens before it: %s\n", name, w, reset,
                   n_prefix_all, g_failures == before ? "equal to openai's rule" : "DIFFERENT");
            w++;
            n_steps++;
        }
        free(all);
    }
    CHECK(n_steps >= 10, "only %d carry steps", n_steps);
}

static void test_filters_after_prefix(void) {
    enum { V = 51864, TB = 50363, EOT = 50256 };
    const int blank[] = {220, EOT}, suppress[] = {50257, 50360};
    whisper_filters f = {.n_vocab = V, .eot = EOT, .no_timestamps = 50362, .timestamp_begin = TB,
                         .suppress_blank = 1, .blank_ids = blank, .n_blank_ids = 2, .suppress_ids = suppress,
                         .n_suppress_ids = 2, .timestamps = 1, .max_initial_timestamp_index = 50};
    CHECK(whisper_filters_build(&f) == STENO_OK, "filters build");
    float *lg = malloc(sizeof(float) * V);
    /* the first position: without a prefix a timestamp <= <|1.00|> must come; after one, text may */
    for (int after = 0; after < 2; after++) {
        f.after_prefix = after;
        for (int i = 0; i < V; i++) lg[i] = 0.0f;
        lg[1002] = 5.0f;       /* a text token */
        lg[220] = 9.0f;        /* blank */
        lg[TB + 200] = 7.0f;   /* <|4.00|>: beyond max_initial_timestamp */
        lg[TB + 3] = 0.5f;
        whisper_filtered r = whisper_apply_filters(&f, NULL, 0, lg);
        CHECK(lg[220] == -INFINITY && lg[EOT] == -INFINITY, "after_prefix=%d: blank not suppressed", after);
        CHECK(lg[50362] == -INFINITY, "after_prefix=%d: <|notimestamps|> allowed", after);
        if (after) {
            CHECK(r.argmax == TB + 200, "after a prefix the first step has no timestamp rules: argmax %d", r.argmax);
            CHECK(lg[1002] == 5.0f, "after a prefix text stays allowed");
        } else {
            CHECK(r.argmax == TB + 3, "without a prefix a timestamp <= max_initial comes first: argmax %d", r.argmax);
            CHECK(lg[1002] == -INFINITY && lg[TB + 200] == -INFINITY, "first-step rules not applied");
        }
    }
    /* the next position after a prefix: the usual rules over the sampled tokens only */
    f.after_prefix = 1;
    for (int i = 0; i < V; i++) lg[i] = i < TB ? 0.0f : -20.0f;
    lg[220] = 3.0f;
    const int sampled[] = {1002};
    whisper_filtered r = whisper_apply_filters(&f, sampled, 1, lg);
    CHECK(r.argmax == 220 && lg[220] == 3.0f, "blank is allowed after the first sampled token: argmax %d", r.argmax);
    free(lg);
    whisper_filters_free(&f);
}

int main(void) {
    const char *src = getenv("STENO_SOURCE");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/oracle_options/prompts.json", src && *src ? src : ".");
    char *text = test_read_all(path);
    if (!text) {
        fprintf(stderr, "FAIL: cannot read %s (run tools/oracle_options.py)\n", path);
        return 1;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) {
        fprintf(stderr, "FAIL: %s is not JSON\n", path);
        return 1;
    }
    steno_tokenizer *tok = NULL;
    if (steno_tokenizer_load(test_model_dir(), &tok) != STENO_OK) {
        fprintf(stderr, "FAIL: tokenizer: %s\n", steno_errmsg());
        return 1;
    }
    test_encode(root, tok);
    test_get_prompt(root, tok);
    test_carry(root);
    test_filters_after_prefix();
    steno_tokenizer_free(tok);
    cJSON_Delete(root);
    return test_summary("test_prompt");
}
