/* tokenizer_config.c — the tokenizer and decoding config of a Whisper model read from any format
 * (tokenizer_config.h). */
#include "whisper/model/tokenizer_config.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/file.h"

static int is_file(const char *p) {
    struct stat s;
    return stat(p, &s) == 0 && S_ISREG(s.st_mode);
}

steno_status whisper_special_strings(int n_vocab, int n_base, const char ***out, int *n, char **arena) {
    *out = NULL;
    *arena = NULL;
    *n = 0;
    const int n_langs = n_vocab >= 51866 ? 100 : 99;
    const int eot = n_vocab - 1509 - n_langs;
    if (eot < n_base || eot - n_base > 1 || n_base < 256)
        return steno_fail(STENO_E_FORMAT, "a vocabulary of %d tokens over %d BPE ranks is not Whisper's", n_vocab,
                          n_base);
    const int count = n_vocab - n_base;
    const char **s = malloc((size_t)count * sizeof *s);
    char *a = malloc(1501 * 10 + (size_t)n_langs * 10);
    if (!s || !a) {
        free(s);
        free(a);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    int k = 0;
    size_t pos = 0;
    for (int i = n_base; i < eot; i++) s[k++] = ""; /* an unused rank (multilingual 50256) */
    s[k++] = "<|endoftext|>";
    s[k++] = "<|startoftranscript|>";
    for (int i = 0; i < n_langs; i++) {
        s[k++] = a + pos;
        pos += (size_t)snprintf(a + pos, 10, "<|%s|>", whisper_language_code_at(i)) + 1;
    }
    static const char *const tail[] = {"<|translate|>", "<|startoflm|>"};
    s[k++] = tail[0];
    s[k++] = "<|transcribe|>";
    s[k++] = tail[1];
    s[k++] = "<|startofprev|>";
    s[k++] = "<|nocaptions|>";
    s[k++] = "<|notimestamps|>";
    for (int i = 0; i <= 1500; i++) {
        s[k++] = a + pos;
        pos += (size_t)snprintf(a + pos, 10, "<|%d.%02d|>", i / 50, (i % 50) * 2) + 1;
    }
    *out = s;
    *n = k;
    *arena = a;
    return STENO_OK;
}

steno_status whisper_non_speech_tokens(const steno_tokenizer *tok, int **ids, int *n) {
    /* openai-whisper whisper/tokenizer.py: Tokenizer.non_speech_tokens */
    static const char *const symbols[] = {
        "\"", "#", "(", ")", "*", "+", "/", ":", ";", "<", "=", ">", "@", "[", "\\", "]", "^", "_", "`", "{", "|",
        "}", "~", "\u300c", "\u300d", "\u300e", "\u300f", "<<", ">>", "<<<", ">>>", "--", "---", "-(", "-[", "('",
        "(\"", "((", "))", "(((", ")))", "[[", "]]", "{{", "}}", "\u266a\u266a", "\u266a\u266a\u266a",
        /* miscellaneous: always their first token */
        "\u2669", "\u266a", "\u266b", "\u266c", "\u266d", "\u266e", "\u266f"};
    const int n_sym = (int)(sizeof symbols / sizeof symbols[0]), first_misc = n_sym - 7;
    int cap = 4 + 2 * n_sym, cnt = 0;
    int *r = malloc((size_t)cap * sizeof *r);
    if (!r) return steno_fail(STENO_E_NOMEM, "out of memory");
    steno_status st = STENO_OK;
    char buf[64];
    for (int s = -2; s < n_sym && st == STENO_OK; s++) {
        for (int v = 0; v < 2 && st == STENO_OK; v++) {
            if (s < 0 && v) break;
            if (s == -2) snprintf(buf, sizeof buf, " -");
            else if (s == -1) snprintf(buf, sizeof buf, " '");
            else snprintf(buf, sizeof buf, "%s%s", v ? " " : "", symbols[s]);
            int *t = NULL, nt = 0;
            if ((st = steno_tokenizer_encode(tok, buf, &t, &nt)) != STENO_OK) break;
            if (nt >= 1 && (s < 0 || nt == 1 || s >= first_misc)) r[cnt++] = t[0];
            free(t);
        }
    }
    if (st != STENO_OK) {
        free(r);
        return st;
    }
    for (int i = 1; i < cnt; i++) /* sort (insertion; < 120 ids) */
        for (int j = i; j > 0 && r[j - 1] > r[j]; j--) {
            const int x = r[j];
            r[j] = r[j - 1];
            r[j - 1] = x;
        }
    int u = 0;
    for (int i = 0; i < cnt; i++)
        if (u == 0 || r[u - 1] != r[i]) r[u++] = r[i];
    *ids = r;
    *n = u;
    return STENO_OK;
}

static int b64(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* A .tiktoken file ("base64(token) rank" lines, ranks 0, 1, ... in order) into rank tables. */
static steno_status read_tiktoken(const char *path, uint8_t **arena, const uint8_t ***tok, int32_t **len, int *n) {
    char *buf = NULL;
    size_t blen = 0;
    steno_status st = steno_read_file(path, 64u << 20, &buf, &blen);
    if (st != STENO_OK) return st;
    int lines = 0;
    for (size_t i = 0; i < blen; i++) lines += buf[i] == '\n';
    *arena = malloc(blen + 1);
    *tok = malloc((size_t)(lines + 1) * sizeof **tok);
    *len = malloc((size_t)(lines + 1) * sizeof **len);
    if (!*arena || !*tok || !*len) {
        free(buf);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    }
    size_t pos = 0;
    int k = 0;
    for (char *line = buf; line < buf + blen && *line;) {
        char *nl = memchr(line, '\n', (size_t)(buf + blen - line));
        char *end = nl ? nl : buf + blen;
        char *sp = memchr(line, ' ', (size_t)(end - line));
        if (!sp || atoi(sp + 1) != k) {
            free(buf);
            return steno_fail(STENO_E_FORMAT, "%s: line %d: not \"base64 rank\" in rank order", path, k + 1);
        }
        (*tok)[k] = *arena + pos;
        int bits = 0, acc = 0, l = 0;
        for (char *c = line; c < sp; c++) {
            if (*c == '=') break;
            const int v = b64((unsigned char)*c);
            if (v < 0) {
                free(buf);
                return steno_fail(STENO_E_FORMAT, "%s: line %d: bad base64", path, k + 1);
            }
            acc = (acc << 6) | v;
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                (*arena)[pos++] = (uint8_t)(acc >> bits);
                acc &= (1 << bits) - 1;
                l++;
            }
        }
        (*len)[k++] = l;
        line = nl ? nl + 1 : buf + blen;
    }
    free(buf);
    *n = k;
    return STENO_OK;
}

static steno_status tokenizer_from_ranks(const wtab *w, const char *path, steno_tokenizer **tok) {
    const uint8_t *const *t = w->tok;
    const int32_t *l = w->tok_len;
    int n = w->n_tok;
    uint8_t *arena = NULL;
    const uint8_t **tt = NULL;
    int32_t *tl = NULL;
    steno_status st = STENO_OK;
    if (!t) { /* an mlx folder: mlx-whisper's own rank files, when put beside the weights */
        char p[4096];
        const int multi = w->dims.n_vocab >= 51865;
        snprintf(p, sizeof p, "%s/%s", path, multi ? "multilingual.tiktoken" : "gpt2.tiktoken");
        if (!is_file(p))
            return steno_fail(STENO_E_FORMAT,
                              "%s: no tokenizer: put tokenizer.json (steno convert writes one) or mlx-whisper's %s "
                              "beside the weights",
                              path, multi ? "multilingual.tiktoken" : "gpt2.tiktoken");
        if ((st = read_tiktoken(p, &arena, &tt, &tl, &n)) != STENO_OK) goto done;
        t = tt;
        l = tl;
    }
    const char **sp = NULL;
    char *sa = NULL;
    int ns = 0;
    if ((st = whisper_special_strings(w->dims.n_vocab, n, &sp, &ns, &sa)) != STENO_OK) {
        char why[256]; /* the message is rebuilt around the thread's last one: copy it first */
        snprintf(why, sizeof why, "%s", steno_errmsg());
        st = steno_fail(STENO_E_FORMAT, "%s: %s", path, why);
        goto done;
    }
    st = steno_tokenizer_from_ranks(t, l, n, sp, ns, tok);
    free(sp);
    free(sa);
done:
    free(arena);
    free(tt);
    free(tl);
    return st;
}

static int find_id(const steno_tokenizer *t, const char *s) { return steno_tokenizer_token_id(t, s); }

static steno_status derive_config(const wtab *w, const char *path, const steno_tokenizer *tok, whisper_config *c) {
    memset(c, 0, sizeof *c);
    int *ns = NULL, nn = 0;
    steno_status st = whisper_non_speech_tokens(tok, &ns, &nn);
    if (st != STENO_OK) return st;
    static const char *const extra[] = {"<|startoftranscript|>", "<|translate|>", "<|transcribe|>",
                                        "<|startoflm|>",         "<|startofprev|>", "<|nocaptions|>"};
    c->suppress_ids = malloc((size_t)(nn + 6) * sizeof *c->suppress_ids);
    c->suppress_ids_begin = malloc(2 * sizeof *c->suppress_ids_begin);
    c->lang_ids = malloc(100 * sizeof *c->lang_ids);
    const int L = w->dims.n_text_layer, H = w->dims.n_text_head;
    c->alignment_heads = malloc((size_t)(L - L / 2) * (size_t)H * sizeof *c->alignment_heads);
    if (!c->suppress_ids || !c->suppress_ids_begin || !c->lang_ids || !c->alignment_heads) {
        free(ns);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    memcpy(c->suppress_ids, ns, (size_t)nn * sizeof *ns);
    c->n_suppress_ids = nn;
    free(ns);
    for (int i = 0; i < 6; i++) {
        int id = find_id(tok, extra[i]);
        if (id < 0 && i == 5) id = find_id(tok, "<|nospeech|>");
        if (id >= 0) c->suppress_ids[c->n_suppress_ids++] = id;
    }
    c->suppress_ids_begin[0] = 220;
    c->suppress_ids_begin[1] = find_id(tok, "<|endoftext|>");
    c->n_suppress_ids_begin = 2;
    for (int i = 0; i < 100; i++) {
        char code[16];
        const char *lc = whisper_language_code_at(i);
        snprintf(code, sizeof code, "<|%s|>", lc ? lc : "");
        const int id = lc ? find_id(tok, code) : -1;
        if (id >= 0) c->lang_ids[c->n_lang_ids++] = id;
    }
    /* alignment heads: generation_config.json (Hugging Face) when present */
    char p[4096];
    snprintf(p, sizeof p, "%s/generation_config.json", path);
    if (is_file(p)) {
        char *buf = NULL;
        size_t len = 0;
        if ((st = steno_read_file(p, 16u << 20, &buf, &len)) != STENO_OK) return st;
        cJSON *j = cJSON_ParseWithLength(buf, len);
        free(buf);
        const cJSON *ah = cJSON_GetObjectItemCaseSensitive(j, "alignment_heads"), *e;
        if (cJSON_IsArray(ah) && cJSON_GetArraySize(ah) <= (L - L / 2) * H) {
            cJSON_ArrayForEach(e, ah) {
                const cJSON *a = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
                if (!cJSON_IsArray(e) || !cJSON_IsNumber(a) || !cJSON_IsNumber(b) || a->valuedouble < 0 ||
                    a->valuedouble >= L || b->valuedouble < 0 || b->valuedouble >= H) {
                    cJSON_Delete(j);
                    return steno_fail(STENO_E_FORMAT, "%s: alignment_heads: not (layer, head) pairs of the decoder", p);
                }
                c->alignment_heads[c->n_alignment_heads][0] = (int)a->valuedouble;
                c->alignment_heads[c->n_alignment_heads][1] = (int)b->valuedouble;
                c->n_alignment_heads++;
            }
        }
        cJSON_Delete(j);
    }
    if (c->n_alignment_heads == 0)
        for (int l = L / 2; l < L; l++)
            for (int h = 0; h < H; h++) {
                c->alignment_heads[c->n_alignment_heads][0] = l;
                c->alignment_heads[c->n_alignment_heads][1] = h;
                c->n_alignment_heads++;
            }
    return STENO_OK;
}

steno_status whisper_side_load(const wtab *w, const char *path, whisper_config *cfg, steno_tokenizer **tok) {
    *tok = NULL;
    memset(cfg, 0, sizeof *cfg);
    char p[4096];
    steno_status st;
    const int dir = strcmp(w->format, "ggml") != 0;
    char a[4096], b[4096], c[4096];
    snprintf(a, sizeof a, "%s/vocabulary.txt", path);
    snprintf(b, sizeof b, "%s/vocabulary.json", path);
    snprintf(c, sizeof c, "%s/tokenizer.json", path);
    if (dir && (is_file(a) || is_file(b) || is_file(c))) st = steno_tokenizer_load(path, tok);
    else st = tokenizer_from_ranks(w, path, tok);
    if (st != STENO_OK) return st;
    if (steno_tokenizer_n_vocab(*tok) != w->dims.n_vocab) {
        st = steno_fail(STENO_E_FORMAT, "%s: the vocabulary has %d tokens, the weights %d", path,
                        steno_tokenizer_n_vocab(*tok), w->dims.n_vocab);
        goto fail;
    }
    snprintf(p, sizeof p, "%s/config.json", path);
    /* a CTranslate2 directory's config.json is its decoding config (and must parse); HF and MLX
     * folders' config.json is the model's dimensions, read by their readers */
    const int ct2_config = strcmp(w->format, "ct2") == 0 && is_file(p);
    st = ct2_config ? whisper_config_load(p, cfg) : derive_config(w, path, *tok, cfg);
    if (st != STENO_OK) goto fail;
    return STENO_OK;
fail:
    whisper_config_free(cfg);
    steno_tokenizer_free(*tok);
    *tok = NULL;
    return st;
}
