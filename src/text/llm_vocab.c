/* llm_vocab.c — vocabulary loading (GGUF metadata, llama2.c tokenizer.bin), the special-token
 * partition, detokenization and end-of-generation tokens; see llm_vocab.h. */
#include "text/llm_vocab.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "text/pretok/bpe_pre.h"
#include "text/utf8.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"

/* ------------------------------------------------------------------------------------------- */
/* strmap: open addressing, FNV-1a                                                               */

typedef struct {
    char *key; /* NULL = empty */
    size_t len;
    int value;
} sm_entry;

struct steno_strmap {
    sm_entry *e;
    size_t cap, n;
};

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

steno_strmap *steno_strmap_new(size_t expected) {
    steno_strmap *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    size_t cap = 16;
    while (cap < expected * 2 + 2) cap <<= 1;
    m->e = calloc(cap, sizeof *m->e);
    if (!m->e) {
        free(m);
        return NULL;
    }
    m->cap = cap;
    return m;
}

void steno_strmap_free(steno_strmap *m) {
    if (!m) return;
    for (size_t i = 0; i < m->cap; i++) free(m->e[i].key);
    free(m->e);
    free(m);
}

static int sm_grow(steno_strmap *m) {
    size_t ncap = m->cap * 2;
    sm_entry *ne = calloc(ncap, sizeof *ne);
    if (!ne) return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->e[i].key) continue;
        size_t j = fnv1a(m->e[i].key, m->e[i].len) & (ncap - 1);
        while (ne[j].key) j = (j + 1) & (ncap - 1);
        ne[j] = m->e[i];
    }
    free(m->e);
    m->e = ne;
    m->cap = ncap;
    return 0;
}

int steno_strmap_put(steno_strmap *m, const char *key, size_t len, int value) {
    if ((m->n + 1) * 2 > m->cap && sm_grow(m) != 0) return -1;
    size_t j = fnv1a(key, len) & (m->cap - 1);
    while (m->e[j].key) {
        if (m->e[j].len == len && memcmp(m->e[j].key, key, len) == 0) return 0; /* keep first */
        j = (j + 1) & (m->cap - 1);
    }
    char *k = malloc(len + 1);
    if (!k) return -1;
    memcpy(k, key, len);
    k[len] = '\0';
    m->e[j].key = k;
    m->e[j].len = len;
    m->e[j].value = value;
    m->n++;
    return 0;
}

int steno_strmap_get(const steno_strmap *m, const char *key, size_t len) {
    if (!m) return -1;
    size_t j = fnv1a(key, len) & (m->cap - 1);
    while (m->e[j].key) {
        if (m->e[j].len == len && memcmp(m->e[j].key, key, len) == 0) return m->e[j].value;
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

int steno_ivec_push(steno_ivec *a, int x) {
    if (a->n == a->cap) {
        int nc = a->cap ? a->cap * 2 : 64;
        int *p = realloc(a->v, (size_t)nc * sizeof(int));
        if (!p) return -1;
        a->v = p;
        a->cap = nc;
    }
    a->v[a->n++] = x;
    return 0;
}

/* ------------------------------------------------------------------------------------------- */

void steno_vocab_free(steno_vocab *v) {
    if (!v) return;
    if (v->text)
        for (int i = 0; i < v->n; i++) free(v->text[i]);
    free(v->text);
    free(v->len);
    free(v->score);
    free(v->attr);
    steno_strmap_free(v->ids);
    steno_strmap_free(v->merges);
    steno_bpe_free_pre(v);
    free(v->special);
    free(v->eog);
    free(v->pre);
    free(v);
}

int steno_vocab_find(const steno_vocab *v, const char *text, size_t len) {
    return steno_strmap_get(v->ids, text, len);
}

static steno_vocab *vocab_alloc(int n) {
    steno_vocab *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->n = n;
    v->text = calloc((size_t)n, sizeof(char *));
    v->len = calloc((size_t)n, sizeof(int));
    v->score = calloc((size_t)n, sizeof(float));
    v->attr = calloc((size_t)n, 1);
    v->ids = steno_strmap_new((size_t)n);
    if (!v->text || !v->len || !v->score || !v->attr || !v->ids) {
        steno_vocab_free(v);
        return NULL;
    }
    v->bos = v->eos = v->eot = v->unk = v->pad = -1;
    for (int i = 0; i < 256; i++) v->byte_tok[i] = -1;
    return v;
}

static int set_text(steno_vocab *v, int i, const char *s, size_t len) {
    v->text[i] = malloc(len + 1);
    if (!v->text[i]) return -1;
    memcpy(v->text[i], s, len);
    v->text[i][len] = '\0';
    v->len[i] = (int)len;
    return steno_strmap_put(v->ids, s, len, i);
}

static int cmp_special_len(const void *a, const void *b, void *ctx) {
    const steno_vocab *v = ctx;
    int ia = *(const int *)a, ib = *(const int *)b;
    if (v->len[ia] != v->len[ib]) return v->len[ib] - v->len[ia];
    return ia - ib;
}

static _Thread_local const steno_vocab *g_sort_vocab;
static int cmp_special(const void *a, const void *b) { return cmp_special_len(a, b, (void *)g_sort_vocab); }

/* Marks id as a control token (llama.cpp: "control-looking token ... its type will be
 * overridden"), which also decides whether the special-token partition cuts it out of text. */
static void make_control(steno_vocab *v, int id) {
    v->attr[id] |= STENO_TOK_CONTROL;
    v->attr[id] &= (uint8_t)~STENO_TOK_NORMAL;
}

static int find_first(const steno_vocab *v, const char *const *texts, size_t n) {
    for (size_t k = 0; k < n; k++) {
        int id = steno_vocab_find(v, texts[k], strlen(texts[k]));
        if (id >= 0) return id;
    }
    return -1;
}

static int eog_add(steno_vocab *v, int id) {
    if (id < 0) return 0;
    for (int j = 0; j < v->n_eog; j++)
        if (v->eog[j] == id) return 0;
    v->eog[v->n_eog++] = id;
    return 1;
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Special-token cache, end-of-generation set and the control attributes llama.cpp gives tokens by
 * their text (llama-vocab.cpp load at commit 0c1e57098, "auto-detect special tokens by text"):
 * the EOT, EOM and FIM tokens it detects and every EOG-looking token become control tokens, so
 * the partition treats them as llama.cpp does (e.g. Qwen2.5's normal "</s>" is cut out only with
 * parse_special). */
static int finish_vocab(steno_vocab *v) {
    static const char *eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                      "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                      "<｜end▁of▁sentence｜>",
                                      "<end_of_utterance>"};
    static const char *eom_texts[] = {"<|eom_id|>"};
    static const char *fim_pre[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                    "<｜fim▁begin｜>", "<PRE>",
                                    "▁<PRE>", "<|code_prefix|>", "<|prefix|>"};
    static const char *fim_suf[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                    "<｜fim▁hole｜>", "<SUF>",
                                    "▁<SUF>", "<|code_suffix|>", "<|suffix|>"};
    static const char *fim_mid[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                    "<｜fim▁end｜>", "<MID>",
                                    "▁<MID>", "<|code_middle|>", "<|middle|>"};
    static const char *fim_pad[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
    static const char *fim_rep[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
    static const char *fim_sep[] = {"<|file_sep|>"};
    static const char *eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
                                      "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
                                      "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
                                      "<turn|>", "<|tool_response>",
                                      "<｜end▁of▁sentence｜>",
                                      "[e~["};
    /* llama.cpp takes the first match in hash order; of several EOT candidates steno takes the
     * first in the list (all of them end generation either way) */
    if (v->eot < 0 && (v->eot = find_first(v, eot_texts, N_OF(eot_texts))) >= 0) make_control(v, v->eot);
    int eom = find_first(v, eom_texts, N_OF(eom_texts));
    if (eom >= 0) make_control(v, eom);
    const char *const *fims[] = {fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep};
    const size_t nfims[] = {N_OF(fim_pre), N_OF(fim_suf), N_OF(fim_mid), N_OF(fim_pad), N_OF(fim_rep), N_OF(fim_sep)};
    int fim_ids[6];
    for (int k = 0; k < 6; k++) {
        fim_ids[k] = find_first(v, fims[k], nfims[k]);
        if (fim_ids[k] >= 0) make_control(v, fim_ids[k]);
    }
    v->eog = malloc((N_OF(eog_texts) + 8) * sizeof(int));
    if (!v->eog) return -1;
    v->n_eog = 0;
    for (int k = 3; k < 6; k++) eog_add(v, fim_ids[k]); /* FIM pad, repo, file separator */
    for (size_t k = 0; k < N_OF(eog_texts); k++) {
        int id = steno_vocab_find(v, eog_texts[k], strlen(eog_texts[k]));
        if (id < 0) continue;
        eog_add(v, id);
        make_control(v, id);
    }
    /* gpt-oss: these always print */
    static const char *gptoss[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
    for (size_t k = 0; k < N_OF(gptoss); k++) {
        int id = steno_vocab_find(v, gptoss[k], strlen(gptoss[k]));
        if (id >= 0) v->attr[id] = STENO_TOK_USER_DEFINED;
    }
    eog_add(v, v->eos);
    eog_add(v, v->eot);
    eog_add(v, eom);
    /* o200k_harmony / solar-open: "<|end|>" is not an end of generation there */
    int has_return = 0, has_call = 0, has_flush = 0, end_at = -1, tool_resp = 0, s_at = -1;
    for (int j = 0; j < v->n_eog; j++) {
        const char *t = v->text[v->eog[j]];
        has_return |= strcmp(t, "<|return|>") == 0;
        has_call |= strcmp(t, "<|call|>") == 0 || strcmp(t, "<|calls|>") == 0;
        has_flush |= strcmp(t, "<|flush|>") == 0;
        tool_resp |= strcmp(t, "<|tool_response>") == 0 || strcmp(t, "<|plamo:eos|>") == 0;
        if (strcmp(t, "<|end|>") == 0) end_at = j;
        if (strcmp(t, "</s>") == 0) s_at = j;
    }
    int drop_end = end_at >= 0 && ((has_return && has_call) || (has_call && has_flush));
    int drop_s = s_at >= 0 && tool_resp; /* gemma4, plamo: a normal "</s>" */
    if (drop_end) v->attr[v->eog[end_at]] = STENO_TOK_USER_DEFINED;
    if (drop_s) v->attr[v->eog[s_at]] = STENO_TOK_NORMAL;
    int w = 0;
    for (int j = 0; j < v->n_eog; j++)
        if (!(drop_end && j == end_at) && !(drop_s && j == s_at)) v->eog[w++] = v->eog[j];
    v->n_eog = w;
    int ns = 0;
    for (int i = 0; i < v->n; i++)
        if ((v->attr[i] & (STENO_TOK_CONTROL | STENO_TOK_USER_DEFINED | STENO_TOK_UNKNOWN)) && v->len[i] > 0) ns++;
    v->special = malloc((size_t)(ns ? ns : 1) * sizeof(int));
    if (!v->special) return -1;
    v->n_special = 0;
    for (int i = 0; i < v->n; i++)
        if ((v->attr[i] & (STENO_TOK_CONTROL | STENO_TOK_USER_DEFINED | STENO_TOK_UNKNOWN)) && v->len[i] > 0)
            v->special[v->n_special++] = i;
    g_sort_vocab = v;
    qsort(v->special, (size_t)v->n_special, sizeof(int), cmp_special);
    return 0;
}

/* GPT-2's bytes_to_unicode(): printable bytes map to themselves, the others to U+0100.. in
 * order. */
static int g_b2u[256], g_u2b[512];
static pthread_once_t g_bytemap_once = PTHREAD_ONCE_INIT;

static void init_bytemap(void) {
    int n = 0;
    for (int i = 0; i < 512; i++) g_u2b[i] = -1;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        g_b2u[b] = printable ? b : 256 + n++;
        g_u2b[g_b2u[b]] = b;
    }
}

static int byte_to_unicode_cp(int b) {
    pthread_once(&g_bytemap_once, init_bytemap);
    return g_b2u[b & 255];
}

static int utf8_put(char *o, int cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

steno_status steno_vocab_from_gguf(const gguf_file *f, int n_vocab_model, steno_vocab **out) {
    *out = NULL;
    const char *fn = gguf_name(f);
    const gguf_str *model = gguf_get_str(f, "tokenizer.ggml.model");
    if (!model) return steno_fail(STENO_E_FORMAT, "%s: no tokenizer (tokenizer.ggml.model missing)", fn);
    int type;
    if (model->len == 5 && memcmp(model->ptr, "llama", 5) == 0) type = STENO_VOCAB_SPM;
    else if (model->len == 4 && memcmp(model->ptr, "gpt2", 4) == 0) type = STENO_VOCAB_BPE;
    else
        return steno_fail(STENO_E_UNSUPPORTED, "%s: tokenizer '%.*s' is not supported (steno reads 'llama' and 'gpt2')",
                          fn, (int)(model->len > 64 ? 64 : model->len), model->ptr);
    const gguf_kv *toks = gguf_find(f, "tokenizer.ggml.tokens");
    if (!toks || toks->type != GGUF_TYPE_ARRAY || toks->arr_type != GGUF_TYPE_STRING || toks->n == 0)
        return steno_fail(STENO_E_FORMAT, "%s: tokenizer.ggml.tokens is missing or not a string array", fn);
    if (toks->n > (uint64_t)n_vocab_model)
        return steno_fail(STENO_E_FORMAT, "%s: tokenizer.ggml.tokens has %llu entries but the model has %d rows",
                          fn, (unsigned long long)toks->n, n_vocab_model);
    int n = (int)toks->n;
    const gguf_kv *scores = gguf_find(f, "tokenizer.ggml.scores");
    if (scores && (scores->type != GGUF_TYPE_ARRAY || scores->n != toks->n ||
                   (scores->arr_type != GGUF_TYPE_FLOAT32 && scores->arr_type != GGUF_TYPE_FLOAT64)))
        return steno_fail(STENO_E_FORMAT, "%s: tokenizer.ggml.scores does not match the token list", fn);
    const gguf_kv *types = gguf_find(f, "tokenizer.ggml.token_type");
    if (types && (types->type != GGUF_TYPE_ARRAY || types->n != toks->n || types->arr_type == GGUF_TYPE_STRING ||
                  types->arr_type == GGUF_TYPE_FLOAT32 || types->arr_type == GGUF_TYPE_FLOAT64))
        return steno_fail(STENO_E_FORMAT, "%s: tokenizer.ggml.token_type does not match the token list", fn);

    steno_vocab *v = vocab_alloc(n);
    if (!v) return steno_fail(STENO_E_NOMEM, "%s: out of memory for the vocabulary", fn);
    v->type = type;
    for (int i = 0; i < n; i++) {
        if (set_text(v, i, toks->strs[i].ptr, toks->strs[i].len) != 0) {
            steno_vocab_free(v);
            return steno_fail(STENO_E_NOMEM, "%s: out of memory for the vocabulary", fn);
        }
        v->score[i] = scores ? (float)gguf_arr_float(scores, (uint64_t)i) : 0.0f;
        int t = types ? (int)gguf_arr_int(types, (uint64_t)i) : 1;
        /* llama_token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte */
        switch (t) {
        case 2: v->attr[i] = STENO_TOK_UNKNOWN; break;
        case 3: v->attr[i] = STENO_TOK_CONTROL; break;
        case 4: v->attr[i] = STENO_TOK_USER_DEFINED; break;
        case 5: v->attr[i] = STENO_TOK_UNUSED; break;
        case 6: v->attr[i] = STENO_TOK_BYTE; break;
        default: v->attr[i] = STENO_TOK_NORMAL; break;
        }
    }
    int64_t x;
#define TOKID(key, field)                                                                          \
    if (gguf_get_int(f, key, &x)) {                                                                \
        if (x < 0 || x >= n) {                                                                     \
            steno_vocab_free(v);                                                                   \
            return steno_fail(STENO_E_FORMAT, "%s: %s = %lld is not a token id (0..%d)", fn, key,  \
                              (long long)x, n - 1);                                               \
        }                                                                                          \
        v->field = (int)x;                                                                         \
    }
    TOKID("tokenizer.ggml.bos_token_id", bos)
    TOKID("tokenizer.ggml.eos_token_id", eos)
    TOKID("tokenizer.ggml.unknown_token_id", unk)
    TOKID("tokenizer.ggml.padding_token_id", pad)
    TOKID("tokenizer.ggml.eot_token_id", eot)
#undef TOKID
    /* llama-vocab.cpp defaults: SPM adds BOS and a space prefix; BPE adds neither. */
    v->add_bos = type == STENO_VOCAB_SPM;
    v->add_space_prefix = type == STENO_VOCAB_SPM;
    const int has_add_bos = gguf_get_int(f, "tokenizer.ggml.add_bos_token", &x);
    if (has_add_bos) v->add_bos = x != 0;
    if (gguf_get_int(f, "tokenizer.ggml.add_eos_token", &x)) v->add_eos = x != 0;
    if (gguf_get_int(f, "tokenizer.ggml.add_space_prefix", &x)) v->add_space_prefix = x != 0;
    if (v->add_bos && v->bos < 0) v->add_bos = 0;
    if (v->add_eos && v->eos < 0) v->add_eos = 0;
    if (type == STENO_VOCAB_SPM) {
        v->escape_whitespace = 1;
        char hex[8];
        for (int b = 0; b < 256; b++) {
            snprintf(hex, sizeof hex, "<0x%02X>", b);
            v->byte_tok[b] = steno_vocab_find(v, hex, strlen(hex));
        }
    } else {
        char u[4];
        for (int b = 0; b < 256; b++) v->byte_tok[b] = steno_vocab_find(v, u, (size_t)utf8_put(u, byte_to_unicode_cp(b)));
        const gguf_kv *merges = gguf_find(f, "tokenizer.ggml.merges");
        if (!merges || merges->type != GGUF_TYPE_ARRAY || merges->arr_type != GGUF_TYPE_STRING) {
            steno_vocab_free(v);
            return steno_fail(STENO_E_FORMAT, "%s: tokenizer.ggml.merges is missing (needed by a gpt2 tokenizer)", fn);
        }
        v->merges = steno_strmap_new((size_t)merges->n);
        if (!v->merges) {
            steno_vocab_free(v);
            return steno_fail(STENO_E_NOMEM, "%s: out of memory for the merges", fn);
        }
        for (uint64_t i = 0; i < merges->n && i < INT32_MAX; i++)
            if (steno_strmap_put(v->merges, merges->strs[i].ptr, merges->strs[i].len, (int)i) != 0) {
                steno_vocab_free(v);
                return steno_fail(STENO_E_NOMEM, "%s: out of memory for the merges", fn);
            }
        const gguf_str *pre = gguf_get_str(f, "tokenizer.ggml.pre");
        char prebuf[64] = "default";
        if (pre) snprintf(prebuf, sizeof prebuf, "%.*s", (int)(pre->len > 63 ? 63 : pre->len), pre->ptr);
        const char *why = NULL;
        if (steno_bpe_init_pre(v, prebuf, &why) != 0) {
            steno_vocab_free(v);
            if (why)
                return steno_fail(STENO_E_UNSUPPORTED, "%s: pre-tokenizer '%s' (tokenizer.ggml.pre) is not supported: %s",
                                  fn, prebuf, why);
            return steno_fail(STENO_E_UNSUPPORTED, "%s: pre-tokenizer '%s' (tokenizer.ggml.pre) is not supported", fn,
                              prebuf);
        }
        /* llama.cpp turns add_bos on for some pre types (llama3, tekken, chameleon) unless the
         * file says otherwise */
        if (!has_add_bos) v->add_bos = v->pre_add_bos && v->bos >= 0;
        if ((v->pre_raw & TEXT_PRE_FORCE_BOS) && v->bos >= 0) v->add_bos = 1;
    }
    if (finish_vocab(v) != 0) {
        steno_vocab_free(v);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory for the vocabulary", fn);
    }
    *out = v;
    return STENO_OK;
}

steno_status steno_vocab_from_llama2c(const llama2c_tokenizer *t, const char *name, steno_vocab **out) {
    *out = NULL;
    steno_vocab *v = vocab_alloc(t->n);
    if (!v) return steno_fail(STENO_E_NOMEM, "%s: out of memory for the vocabulary", name);
    v->type = STENO_VOCAB_SPM;
    v->llama2c = 1;
    v->escape_whitespace = 0;
    v->add_space_prefix = 1;
    v->add_bos = 1;
    for (int i = 0; i < t->n; i++) {
        if (set_text(v, i, t->pieces[i], (size_t)t->lens[i]) != 0) {
            steno_vocab_free(v);
            return steno_fail(STENO_E_NOMEM, "%s: out of memory for the vocabulary", name);
        }
        v->score[i] = t->scores[i];
        v->attr[i] = STENO_TOK_NORMAL;
    }
    /* run.c: encode() uses 1 as BOS and 2 as EOS; <unk> is 0; bytes are <0xXX> (ids 3..258). */
    if (t->n > 0) { v->unk = 0; v->attr[0] = STENO_TOK_UNKNOWN; }
    if (t->n > 1) { v->bos = 1; v->attr[1] = STENO_TOK_CONTROL; }
    if (t->n > 2) { v->eos = 2; v->attr[2] = STENO_TOK_CONTROL; }
    if (v->bos < 0) v->add_bos = 0;
    char hex[8];
    for (int b = 0; b < 256; b++) {
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        int id = steno_vocab_find(v, hex, strlen(hex));
        v->byte_tok[b] = id;
        if (id >= 0) v->attr[id] = STENO_TOK_BYTE;
    }
    if (finish_vocab(v) != 0) {
        steno_vocab_free(v);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory for the vocabulary", name);
    }
    *out = v;
    return STENO_OK;
}

/* ------------------------------------------------------------------------------------------- */
/* Special-token partition (llama-vocab.cpp tokenizer_st_partition)                              */

typedef struct {
    int token;         /* -1: raw text [off, off+len) */
    size_t off, len;
} fragment;

typedef struct {
    fragment *f;
    int n, cap;
} frag_list;

static int frag_push(frag_list *l, fragment x) {
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 16;
        fragment *p = realloc(l->f, (size_t)nc * sizeof *p);
        if (!p) return -1;
        l->f = p;
        l->cap = nc;
    }
    l->f[l->n++] = x;
    return 0;
}

static int partition(const steno_vocab *v, const char *text, size_t len, int parse_special, frag_list *out) {
    frag_list cur = {0}, next = {0};
    if (len > 0 && frag_push(&cur, (fragment){-1, 0, len}) != 0) return -1;
    for (int s = 0; s < v->n_special; s++) {
        int id = v->special[s];
        if (!parse_special && (v->attr[id] & (STENO_TOK_CONTROL | STENO_TOK_UNKNOWN))) continue;
        const char *st = v->text[id];
        size_t sl = (size_t)v->len[id];
        next.n = 0;
        int changed = 0;
        for (int i = 0; i < cur.n; i++) {
            fragment fr = cur.f[i];
            if (fr.token >= 0 || fr.len < sl) {
                if (frag_push(&next, fr) != 0) goto oom;
                continue;
            }
            size_t off = fr.off, rem = fr.len;
            for (;;) {
                const char *m = memmem(text + off, rem, st, sl);
                if (!m) {
                    if (rem > 0 && frag_push(&next, (fragment){-1, off, rem}) != 0) goto oom;
                    break;
                }
                changed = 1;
                size_t mo = (size_t)(m - text);
                if (mo > off && frag_push(&next, (fragment){-1, off, mo - off}) != 0) goto oom;
                if (frag_push(&next, (fragment){id, 0, 0}) != 0) goto oom;
                rem -= (mo - off) + sl;
                off = mo + sl;
                if (rem == 0) break;
            }
        }
        if (changed) {
            frag_list t = cur;
            cur = next;
            next = t;
        }
    }
    free(next.f);
    *out = cur;
    return 0;
oom:
    free(cur.f);
    free(next.f);
    return -1;
}

steno_status steno_vocab_tokenize(const steno_vocab *v, const char *text, size_t len, int add_special,
                                  int parse_special, int **tokens, int *n) {
    *tokens = NULL;
    *n = 0;
    frag_list frags = {0};
    steno_ivec out = {0};
    /* The byte-level BPE pre-tokenizer matches its regexes with PCRE2's UTF mode without a check
     * of its own (PCRE2_NO_UTF_CHECK: invalid UTF-8 there is undefined behaviour, and its JIT code
     * crashed on "\xffabc"), so the text is checked here. */
    if (v->type != STENO_VOCAB_SPM) {
        const size_t bad = steno_utf8_invalid_at(text, len);
        if (bad < len)
            return steno_fail(STENO_E_INVALID_ARG, "tokenizer: text is not valid UTF-8 (byte %zu: 0x%02x)", bad,
                              (unsigned)(unsigned char)text[bad]);
    }
    if (partition(v, text, len, parse_special, &frags) != 0) goto oom;
    if (add_special && v->add_bos && steno_ivec_push(&out, v->bos) != 0) goto oom;
    if (v->type == STENO_VOCAB_SPM) {
        int prev_special = 1;
        for (int i = 0; i < frags.n; i++) {
            fragment fr = frags.f[i];
            if (fr.token >= 0) {
                if (steno_ivec_push(&out, fr.token) != 0) goto oom;
                prev_special = 1;
                continue;
            }
            /* llama2.c adds its dummy prefix once, at the start of the text (run.c encode()). */
            int prefix = v->add_space_prefix && (v->llama2c ? (fr.off == 0) : prev_special);
            char *buf = malloc(fr.len + 1);
            if (!buf) goto oom;
            size_t bl = 0;
            if (prefix) buf[bl++] = ' ';
            memcpy(buf + bl, text + fr.off, fr.len);
            bl += fr.len;
            int rc = steno_spm_tokenize(v, buf, bl, &out);
            free(buf);
            if (rc != 0) goto oom;
            prev_special = 0;
        }
    } else {
        for (int i = 0; i < frags.n; i++) {
            fragment fr = frags.f[i];
            int rc;
            if (fr.token >= 0) {
                rc = steno_ivec_push(&out, fr.token);
            } else if (v->pre_raw & TEXT_PRE_ESCAPE) { /* llama_escape_whitespace: ' ' → U+2581 */
                char *esc = malloc(fr.len * 3 + 1);
                if (!esc) goto oom;
                size_t el = 0;
                for (size_t k = 0; k < fr.len; k++) {
                    if (text[fr.off + k] == ' ') {
                        memcpy(esc + el, "\xe2\x96\x81", 3);
                        el += 3;
                    } else {
                        esc[el++] = text[fr.off + k];
                    }
                }
                rc = steno_bpe_tokenize(v, esc, el, &out);
                free(esc);
            } else {
                rc = steno_bpe_tokenize(v, text + fr.off, fr.len, &out);
            }
            if (rc != 0) goto oom;
        }
    }
    if (add_special && v->add_eos && steno_ivec_push(&out, v->eos) != 0) goto oom;
    free(frags.f);
    if (!out.v && !(out.v = malloc(sizeof(int)))) goto oom;
    *tokens = out.v;
    *n = out.n;
    return STENO_OK;
oom:
    free(frags.f);
    free(out.v);
    return steno_fail(STENO_E_NOMEM, "tokenizer: out of memory");
}

/* ------------------------------------------------------------------------------------------- */
/* Detokenization                                                                                */

static int unicode_to_byte(int cp) {
    pthread_once(&g_bytemap_once, init_bytemap);
    return cp >= 0 && cp < 512 ? g_u2b[cp] : -1;
}

static int copy_out(char *buf, int cap, const char *s, int n) {
    if (n > cap) return -n;
    memcpy(buf, s, (size_t)n);
    return n;
}

int steno_vocab_piece(const steno_vocab *v, int token, int prev, int special, char *buf, int cap) {
    if (token < 0 || token >= v->n) return 0;
    uint8_t a = v->attr[token];
    const char *t = v->text[token];
    int tl = v->len[token];
    if (a & (STENO_TOK_CONTROL | STENO_TOK_UNKNOWN)) return special ? copy_out(buf, cap, t, tl) : 0;
    if (a & STENO_TOK_USER_DEFINED) return copy_out(buf, cap, t, tl);
    if (a & STENO_TOK_BYTE) {
        int b = -1;
        for (int i = 0; i < 256; i++)
            if (v->byte_tok[i] == token) { b = i; break; }
        if (b < 0) return copy_out(buf, cap, t, tl);
        char c = (char)b;
        return copy_out(buf, cap, &c, 1);
    }
    if (v->type == STENO_VOCAB_SPM) {
        if (v->llama2c) {
            /* run.c decode(): after BOS a leading space is dropped. */
            if (prev == v->bos && tl > 0 && t[0] == ' ') { t++; tl--; }
            return copy_out(buf, cap, t, tl);
        }
        /* U+2581 (e2 96 81) → ' ' */
        int o = 0;
        for (int i = 0; i < tl;) {
            if (i + 2 < tl && (uint8_t)t[i] == 0xE2 && (uint8_t)t[i + 1] == 0x96 && (uint8_t)t[i + 2] == 0x81) {
                if (o < cap) buf[o] = ' ';
                o++;
                i += 3;
            } else {
                if (o < cap) buf[o] = t[i];
                o++;
                i++;
            }
        }
        return o <= cap ? o : -o;
    }
    /* byte-level BPE: every UTF-8 character stands for one byte */
    int o = 0;
    for (int i = 0; i < tl;) {
        uint8_t c = (uint8_t)t[i];
        int cp, l;
        if (c < 0x80) { cp = c; l = 1; }
        else if ((c & 0xE0) == 0xC0 && i + 1 < tl) { cp = ((c & 0x1F) << 6) | (t[i + 1] & 0x3F); l = 2; }
        else if ((c & 0xF0) == 0xE0 && i + 2 < tl) { cp = ((c & 0x0F) << 12) | ((t[i + 1] & 0x3F) << 6) | (t[i + 2] & 0x3F); l = 3; }
        else { cp = -1; l = 1; }
        int b = cp >= 0 && cp < 512 ? unicode_to_byte(cp) : -1;
        if (b < 0) { /* not a byte-level char: copy as is */
            for (int k = 0; k < l; k++) { if (o < cap) buf[o] = t[i + k]; o++; }
        } else {
            if (o < cap) buf[o] = (char)b;
            o++;
        }
        i += l;
    }
    return o <= cap ? o : -o;
}

int steno_vocab_is_eog(const steno_vocab *v, int token) {
    for (int i = 0; i < v->n_eog; i++)
        if (v->eog[i] == token) return 1;
    return 0;
}
