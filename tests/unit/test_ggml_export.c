/* test_ggml_export.c — `steno convert --to ggml` (whisper/convert/ggml_export.c) read back by an
 * independent parser that follows whisper.cpp's src/whisper.cpp: whisper_model_load:
 *   - magic and the 11 hparams equal the loaded model's dimensions, and (but n_vocab and ftype)
 *     the header of whisper.cpp's own models/for-tests-ggml-tiny.bin (tiny and tiny.en share them);
 *   - the mel filterbank bytes are bit-equal to for-tests-ggml-tiny.bin's (convert-pt-to-ggml.py
 *     writes mel_filters.npz as float32);
 *   - the vocabulary is exactly gpt2.tiktoken's 50257 ranks (base64 bytes, rank order);
 *   - the tensors: the complete openai state_dict name set (167 for a 4+4-layer model), each with
 *     consistent dims and type, the file ending right after the last one; the token embedding's
 *     float16 data equals the model's weights. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fp16.h"
#include "core/file.h"
#include "test_util.h"
#include "whisper/convert/ggml_export.h"
#include "whisper/model/model.h"

typedef struct {
    const uint8_t *p, *end;
    int bad;
} rd;

static int32_t get_i32(rd *r) {
    int32_t v = 0;
    if (r->end - r->p < 4) {
        r->bad = 1;
        return 0;
    }
    memcpy(&v, r->p, 4);
    r->p += 4;
    return v;
}

static const uint8_t *get_bytes(rd *r, size_t n) {
    if ((size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *q = r->p;
    r->p += n;
    return q;
}

static int b64val(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes one base64 word of a .tiktoken line into out (cap bytes); returns the length or -1. */
static int b64_decode(const char *s, size_t n, uint8_t *out, int cap) {
    int len = 0, bits = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < n && s[i] != '='; i++) {
        int v = b64val((unsigned char)s[i]);
        if (v < 0) return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (len >= cap) return -1;
            out[len++] = (uint8_t)(acc >> bits);
        }
    }
    return len;
}

int main(void) {
    char tiktoken[4096], fortests[4096], out_path[] = "/tmp/steno-ggml-export-XXXXXX";
    snprintf(tiktoken, sizeof tiktoken, "%s/models/whisper-test-assets/gpt2.tiktoken", test_shared_dir());
    snprintf(fortests, sizeof fortests, "%s/models/whisper-test-assets/for-tests-ggml-tiny.bin", test_shared_dir());

    whisper_model *m;
    if (whisper_model_load(test_model_dir(), &m) != STENO_OK) {
        fprintf(stderr, "FAIL: load: %s\n", steno_errmsg());
        return 1;
    }
    int fd = mkstemp(out_path);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    CHECK(whisper_write_ggml(m, out_path) == STENO_OK, "export: %s", steno_errmsg());

    char *file = NULL, *ref = NULL, *tt = NULL;
    size_t file_n = 0, ref_n = 0, tt_n = 0;
    CHECK(steno_read_file(out_path, (size_t)1 << 30, &file, &file_n) == STENO_OK, "read back: %s", steno_errmsg());
    CHECK(steno_read_file(fortests, (size_t)1 << 24, &ref, &ref_n) == STENO_OK, "read %s: %s", fortests, steno_errmsg());
    CHECK(steno_read_file(tiktoken, (size_t)1 << 24, &tt, &tt_n) == STENO_OK, "read %s: %s", tiktoken, steno_errmsg());
    if (!file || !ref || !tt) return test_summary("test_ggml_export");

    rd r = {(const uint8_t *)file, (const uint8_t *)file + file_n, 0};
    rd q = {(const uint8_t *)ref, (const uint8_t *)ref + ref_n, 0};
    CHECK(get_i32(&r) == 0x67676d6c && get_i32(&q) == 0x67676d6c, "magic");
    const int want[11] = {m->n_vocab,     m->n_audio_ctx,    m->n_audio_state, m->n_audio_head,
                          m->n_audio_layer, m->n_text_ctx,   m->n_text_state,  m->n_text_head,
                          m->n_text_layer,  m->n_mels,       1};
    for (int i = 0; i < 11; i++) {
        const int got = get_i32(&r), theirs = get_i32(&q);
        CHECK(got == want[i], "hparam %d: %d, model has %d", i, got, want[i]);
        if (i != 0) CHECK(got == theirs, "hparam %d: %d, whisper.cpp's tiny file has %d", i, got, theirs);
    }

    /* mel filters: n_mel, n_fft, then float32 values, bit-equal to whisper.cpp's file */
    const int nmel = get_i32(&r), nfft = get_i32(&r);
    CHECK(nmel == get_i32(&q) && nfft == get_i32(&q) && nmel == 80 && nfft == 201, "filter dims %d x %d", nmel, nfft);
    const size_t fb = (size_t)nmel * (size_t)nfft * 4;
    const uint8_t *f1 = get_bytes(&r, fb), *f2 = get_bytes(&q, fb);
    CHECK(f1 && f2 && memcmp(f1, f2, fb) == 0, "mel filters differ from whisper.cpp's for-tests-ggml-tiny.bin");

    /* vocabulary: gpt2.tiktoken in rank order */
    const int n_tok = get_i32(&r);
    CHECK(n_tok == m->special.eot, "vocabulary count %d, want the ranks below <|endoftext|> (%d)", n_tok, m->special.eot);
    const char *line = tt;
    int vocab_ok = 1, ranks = 0;
    for (int i = 0; i < n_tok && !r.bad; i++) {
        const int len = get_i32(&r);
        const uint8_t *bytes = get_bytes(&r, len > 0 ? (size_t)len : 0);
        if (line >= tt + tt_n) {
            vocab_ok = 0;
            break;
        }
        const char *sp = memchr(line, ' ', (size_t)(tt + tt_n - line));
        const char *nl = memchr(line, '\n', (size_t)(tt + tt_n - line));
        if (!sp || !nl) break;
        uint8_t want_b[256];
        const int wl = b64_decode(line, (size_t)(sp - line), want_b, (int)sizeof want_b);
        if (wl != len || !bytes || memcmp(bytes, want_b, (size_t)wl) != 0 || atoi(sp + 1) != i) {
            if (vocab_ok) fprintf(stderr, "FAIL: vocabulary token %d differs from gpt2.tiktoken\n", i);
            vocab_ok = 0;
        }
        ranks++;
        line = nl + 1;
    }
    CHECK(vocab_ok && ranks == n_tok, "vocabulary equals gpt2.tiktoken (%d ranks)", ranks);

    /* tensors until the end of the file */
    int n_tensors = 0, emb_ok = 0, dims_ok = 1;
    char seen_ln_post = 0, seen_dec_ln = 0, seen_cross = 0;
    while (!r.bad && r.p < r.end) {
        const int n_dims = get_i32(&r), name_len = get_i32(&r), ttype = get_i32(&r);
        if (n_dims < 1 || n_dims > 4 || name_len <= 0 || name_len > 200 || (ttype != 0 && ttype != 1)) {
            dims_ok = 0;
            break;
        }
        int64_t ne = 1;
        int32_t d[4] = {1, 1, 1, 1};
        for (int i = 0; i < n_dims; i++) ne *= (d[i] = get_i32(&r));
        char name[256];
        const uint8_t *nm = get_bytes(&r, (size_t)name_len);
        if (!nm || ne <= 0) {
            dims_ok = 0;
            break;
        }
        memcpy(name, nm, (size_t)name_len);
        name[name_len] = 0;
        const uint8_t *data = get_bytes(&r, (size_t)ne * (ttype ? 2 : 4));
        if (!data) {
            dims_ok = 0;
            break;
        }
        n_tensors++;
        if (!strcmp(name, "encoder.ln_post.weight")) seen_ln_post = 1;
        if (!strcmp(name, "decoder.ln.bias")) seen_dec_ln = 1;
        if (!strcmp(name, "decoder.blocks.3.cross_attn.value.bias")) seen_cross = 1;
        if (!strcmp(name, "decoder.token_embedding.weight")) {
            CHECK(ttype == 1 && d[0] == m->n_text_state && d[1] == m->n_vocab, "token embedding %dx%d type %d", d[1],
                  d[0], ttype);
            int same = 1;
            for (int64_t i = 0; i < ne && same; i += 997) {
                uint16_t h;
                memcpy(&h, data + 2 * i, 2);
                const float w = m->tok_emb ? m->tok_emb[i] : steno_fp16_to_f32(m->tok_emb16[i]);
                same = steno_fp16_to_f32(h) == w;
            }
            emb_ok = same;
        }
    }
    const int L_a = m->n_audio_layer, L_t = m->n_text_layer;
    CHECK(dims_ok && !r.bad && r.p == r.end, "tensor records are malformed or the file has trailing bytes");
    CHECK(n_tensors == 5 + 15 * L_a + 2 + 2 + 24 * L_t + 2, "%d tensors", n_tensors);
    CHECK(seen_ln_post && seen_dec_ln && seen_cross, "expected tensor names missing");
    CHECK(emb_ok, "token embedding data differs from the model's weights");

    /* a failed write (a directory that does not exist) reports the path and leaves nothing */
    CHECK(whisper_write_ggml(m, "/nonexistent-dir/x.bin") == STENO_E_IO, "write into a missing directory");
    CHECK(strstr(steno_errmsg(), "/nonexistent-dir/x.bin") != NULL, "error names the path: %s", steno_errmsg());

    free(file);
    free(ref);
    free(tt);
    unlink(out_path);
    whisper_model_free(m);
    return test_summary("test_ggml_export");
}
