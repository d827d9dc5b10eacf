/* test_llm_tokenize_pre.c — steno's byte-level BPE pre-tokenizers give llama.cpp's token ids.
 *
 * Each tests/fixtures/tokenizer/llm_pre/<name>.json holds llama.cpp's ids (commit 0c1e57098,
 * through llama-cpp-python 0.3.36; made by tools/llm_ref/make_pre_fixtures.py) for the fixture
 * text tests/fixtures/llm/tokenizer_text.txt tokenized with a real vocabulary whose
 * tokenizer.ggml.pre was relabelled to that pre type. Here the same vocabulary is loaded from the
 * model file as is, the pre-tokenizer re-initialised for the pre type and each of its aliases
 * (steno_bpe_init_pre; no GGUF is rewritten), and the ids must be identical. qwen2-chat.json
 * checks Qwen2.5's special tokens (BOS/EOS/EOT, add_bos_token false, the end-of-generation set,
 * <|im_start|> parsed or not) and
 * spm-gemma3.json the SentencePiece tokenizer on the same text.
 * The pre types steno refuses (EXCLUDED, with the reason) and unknown names must fail to
 * initialise.
 * Models come from scripts/fetch_llm_models.sh ($STENO_MODELS_DIR, else
 * $XDG_CACHE_HOME/steno/models, else ~/.cache/steno/models). A missing model is a FAILURE.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "text/llm_vocab.h"

#include "test_util.h"

/* Pre types llama.cpp knows that steno refuses at load, and why. */
static const struct {
    const char *name, *reason;
} EXCLUDED[] = {
    {"whitespace", "llama.cpp aborts on it with a gpt2 vocabulary (GGML_ASSERT in find_bpe_rank), so there is no "
                   "reference; its own 'whitespace' tokenizer model is another tokenizer"},
};

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = '\0';
        if (len) *len = (size_t)n;
    }
    return b;
}

static void models_dir(char *dir, size_t cap) {
    const char *e;
    if ((e = getenv("STENO_MODELS_DIR")) && *e) snprintf(dir, cap, "%s", e);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(dir, cap, "%s/steno/models", e);
    else snprintf(dir, cap, "%s/.cache/steno/models", getenv("HOME") ? getenv("HOME") : "");
}

/* One loaded vocabulary per source file (the fixtures share two). */
static struct {
    char path[1024];
    gguf_file *f;
    steno_vocab *v;
    int add_bos; /* as loaded: gemma4's forced BOS must not leak into the next pre type */
} g_vocabs[4];
static int g_nvocabs;

static steno_vocab *vocab_for(const char *rel) {
    char dir[900], path[1024];
    models_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (int i = 0; i < g_nvocabs; i++)
        if (strcmp(g_vocabs[i].path, path) == 0) return g_vocabs[i].v;
    if (g_nvocabs == 4) return NULL;
    gguf_file *f;
    if (gguf_open(path, &f) != STENO_OK) {
        fprintf(stderr, "FAIL: %s (run scripts/fetch_llm_models.sh)\n", steno_errmsg());
        return NULL;
    }
    steno_vocab *v;
    if (steno_vocab_from_gguf(f, 1 << 30, &v) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        gguf_close(f);
        return NULL;
    }
    snprintf(g_vocabs[g_nvocabs].path, sizeof g_vocabs[0].path, "%s", path);
    g_vocabs[g_nvocabs].f = f;
    g_vocabs[g_nvocabs].add_bos = v->add_bos;
    g_vocabs[g_nvocabs++].v = v;
    return v;
}

/* Tokenizes text and compares with the case's ids; prints the first difference. */
static int same_ids(const steno_vocab *v, const char *label, const char *text, size_t len, const cJSON *cs) {
    int add = cJSON_IsTrue(cJSON_GetObjectItem(cs, "add_special"));
    int parse = cJSON_IsTrue(cJSON_GetObjectItem(cs, "parse_special"));
    const cJSON *ids = cJSON_GetObjectItem(cs, "ids");
    int nr = cJSON_GetArraySize(ids);
    int *t = NULL, n = 0;
    if (steno_vocab_tokenize(v, text, len, add, parse, &t, &n) != STENO_OK) {
        fprintf(stderr, "FAIL %s: %s\n", label, steno_errmsg());
        return 0;
    }
    int k = 0;
    while (k < n && k < nr && t[k] == cJSON_GetArrayItem(ids, k)->valueint) k++;
    int ok = k == n && k == nr;
    if (!ok) {
        fprintf(stderr, "FAIL %s (add_special %d, parse_special %d): %d ids, llama.cpp %d; first difference at %d:",
                label, add, parse, n, nr, k);
        for (int j = k < 3 ? 0 : k - 3; j < k + 6 && j < n; j++) {
            char piece[64];
            int pl = steno_vocab_piece(v, t[j], -1, 1, piece, (int)sizeof piece - 1);
            piece[pl > 0 ? pl : 0] = '\0';
            fprintf(stderr, " %d'%s'", t[j], piece);
        }
        fprintf(stderr, " | llama.cpp");
        for (int j = k < 3 ? 0 : k - 3; j < k + 6 && j < nr; j++) {
            int id = cJSON_GetArrayItem(ids, j)->valueint;
            char piece[64];
            int pl = steno_vocab_piece(v, id, -1, 1, piece, (int)sizeof piece - 1);
            piece[pl > 0 ? pl : 0] = '\0';
            fprintf(stderr, " %d'%s'", id, piece);
        }
        fputc('\n', stderr);
    }
    free(t);
    return ok;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void) {
    const char *src = getenv("STENO_SOURCE");
    if (!src || !*src) src = ".";
    char path[2048];
    snprintf(path, sizeof path, "%s/tests/fixtures/llm/tokenizer_text.txt", src);
    size_t tlen = 0;
    char *text = read_all(path, &tlen);
    CHECK(text != NULL, "cannot read %s", path);
    if (!text) return 1;

    char dirpath[1024];
    snprintf(dirpath, sizeof dirpath, "%s/tests/fixtures/tokenizer/llm_pre", src);
    DIR *d = opendir(dirpath);
    CHECK(d != NULL, "cannot open %s", dirpath);
    if (!d) return 1;
    char *files[128];
    int nf = 0;
    struct dirent *de;
    while ((de = readdir(d)) && nf < 128) {
        size_t l = strlen(de->d_name);
        if (l > 5 && strcmp(de->d_name + l - 5, ".json") == 0) files[nf++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(files, (size_t)nf, sizeof files[0], cmp_str);

    int types = 0, types_ok = 0, names = 0;
    for (int i = 0; i < nf; i++) {
        snprintf(path, sizeof path, "%s/%s", dirpath, files[i]);
        char *js = read_all(path, NULL);
        cJSON *root = js ? cJSON_Parse(js) : NULL;
        free(js);
        CHECK(root != NULL, "cannot parse %s", path);
        if (!root) continue;
        steno_vocab *v = vocab_for(cJSON_GetObjectItem(root, "source_vocab")->valuestring);
        CHECK(v != NULL, "%s: vocabulary not loaded", files[i]);
        const cJSON *pre = cJSON_GetObjectItem(root, "pre");
        const cJSON *cases = cJSON_GetObjectItem(root, "cases");
        const cJSON *chat = cJSON_GetObjectItem(root, "chat_text");
        int ok = v != NULL;
        const cJSON *sp = cJSON_GetObjectItem(root, "specials");
        if (v && sp) { /* BOS/EOS/EOT, add_bos and the end-of-generation set as llama.cpp has them */
            const cJSON *eog = cJSON_GetObjectItem(sp, "eog");
            int same = v->bos == cJSON_GetObjectItem(sp, "bos")->valueint &&
                       v->eos == cJSON_GetObjectItem(sp, "eos")->valueint &&
                       v->eot == cJSON_GetObjectItem(sp, "eot")->valueint &&
                       v->add_bos == cJSON_IsTrue(cJSON_GetObjectItem(sp, "add_bos")) &&
                       v->n_eog == cJSON_GetArraySize(eog);
            for (int k = 0; same && k < cJSON_GetArraySize(eog); k++)
                same = steno_vocab_is_eog(v, cJSON_GetArrayItem(eog, k)->valueint);
            if (!same) {
                fprintf(stderr, "FAIL %s: special tokens: steno bos %d eos %d eot %d add_bos %d, %d EOG ids:", files[i],
                        v->bos, v->eos, v->eot, v->add_bos, v->n_eog);
                for (int k = 0; k < v->n_eog; k++) fprintf(stderr, " %d", v->eog[k]);
                fputc('\n', stderr);
                ok = 0;
            }
        }
        if (v && cJSON_IsString(pre)) {
            /* the pre type and each alias, on the same ids */
            const cJSON *aliases = cJSON_GetObjectItem(root, "aliases");
            const int na = cJSON_GetArraySize(aliases);
            /* "gpt2" is steno's own earlier spelling of "gpt-2" (llama.cpp does not know it) */
            const int extra = strcmp(pre->valuestring, "gpt-2") == 0;
            for (int a = -1; a < na + extra; a++) {
                const char *name = a < 0 ? pre->valuestring : a < na ? cJSON_GetArrayItem(aliases, a)->valuestring : "gpt2";
                const char *why = NULL;
                for (int k = 0; k < g_nvocabs; k++)
                    if (g_vocabs[k].v == v) v->add_bos = g_vocabs[k].add_bos;
                if (steno_bpe_init_pre(v, name, &why) != 0) {
                    fprintf(stderr, "FAIL %s: pre type '%s' refused (%s)\n", files[i], name, why ? why : "unknown");
                    ok = 0;
                    continue;
                }
                names++;
                char label[256];
                snprintf(label, sizeof label, "%s [%s]", files[i], name);
                for (int c = 0; c < cJSON_GetArraySize(cases); c++) {
                    const cJSON *cs = cJSON_GetArrayItem(cases, c);
                    const int on_chat = chat && !cJSON_GetObjectItem(cs, "text");
                    const char *t = on_chat ? chat->valuestring : text;
                    if (!same_ids(v, label, t, on_chat ? strlen(t) : tlen, cs)) ok = 0;
                }
            }
        } else if (v) {
            for (int c = 0; c < cJSON_GetArraySize(cases); c++)
                if (!same_ids(v, files[i], text, tlen, cJSON_GetArrayItem(cases, c))) ok = 0;
        }
        types++;
        types_ok += ok;
        CHECK(ok, "%s: ids differ from llama.cpp's", files[i]);
        if (ok) printf("%s: %d case(s) as llama.cpp\n", files[i], cJSON_GetArraySize(cases));
        cJSON_Delete(root);
        free(files[i]);
    }
    CHECK(types > 0, "no fixtures under %s", dirpath);

    /* refused pre types: a reason, never a tokenization; unknown ones: no reason */
    if (g_nvocabs > 0) {
        steno_vocab *v = g_vocabs[0].v;
        for (size_t k = 0; k < sizeof EXCLUDED / sizeof EXCLUDED[0]; k++) {
            const char *why = NULL;
            CHECK(steno_bpe_init_pre(v, EXCLUDED[k].name, &why) != 0 && why != NULL,
                  "pre type '%s' should be refused with a reason (%s)", EXCLUDED[k].name, EXCLUDED[k].reason);
        }
        const char *why = "x";
        CHECK(steno_bpe_init_pre(v, "no-such-pre", &why) != 0 && why == NULL, "an unknown pre type is refused");
    }
    printf("%d/%d fixtures (%d pre-type names) tokenize exactly as llama.cpp; %zu name(s) refused\n", types_ok, types,
           names, sizeof EXCLUDED / sizeof EXCLUDED[0]);
    for (int i = 0; i < g_nvocabs; i++) {
        steno_vocab_free(g_vocabs[i].v);
        gguf_close(g_vocabs[i].f);
    }
    free(text);
    return test_summary("test_llm_tokenize_pre");
}
