/* language.c — spoken-language detection for multilingual Whisper models (see language.h). */
#include "whisper/longform/language.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/mel.h"
#include "core/blas_core.h"
#include "core/error.h"
#include "whisper/handle.h"
#include "whisper/longform/mel_input.h"

steno_status whisper_detect_language(whisper_decode_ctx *c, const float *xa, float *probs) {
    const whisper_model *m = c->m;
    const int n_lang = whisper_n_languages(m), first = m->special.lang_first;
    if (n_lang == 0)
        return steno_fail(STENO_E_UNSUPPORTED, "language detection: the model is English-only");
    const int sot = m->special.sot;
    steno_status st;
    if (c->fast) {
        whisper_fast_decoder_set_audio(c->fdec, xa);
        st = whisper_fast_decoder_forward(c->fdec, &sot, 1, c->logits);
    } else {
        whisper_decoder_set_audio(&c->dec, xa);
        st = whisper_decoder_forward(&c->dec, &sot, 1, c->logits, 0);
    }
    if (st != STENO_OK) return st;
    /* softmax over the language tokens only: the others are masked to -inf */
    const float *z = c->logits + first;
    float mx = z[0];
    for (int i = 1; i < n_lang; i++) mx = z[i] > mx ? z[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n_lang; i++) sum += exp((double)z[i] - mx);
    for (int i = 0; i < n_lang; i++) probs[i] = (float)(exp((double)z[i] - mx) / sum);
    return STENO_OK;
}

steno_status whisper_detect_and_set_language(whisper_decode_ctx *c, const float *xa, char *code, double *prob) {
    const int n_lang = whisper_n_languages(c->m);
    float *probs = malloc(sizeof(float) * (size_t)(n_lang ? n_lang : 1));
    if (!probs) return steno_fail(STENO_E_NOMEM, "out of memory");
    steno_status st = whisper_detect_language(c, xa, probs);
    if (st == STENO_OK) {
        int best = 0;
        for (int i = 1; i < n_lang; i++)
            if (probs[i] > probs[best]) best = i; /* first maximum, like torch.argmax */
        c->lang_token = c->m->special.lang_first + best;
        whisper_language_code(c->m, best, code);
        *prob = probs[best];
    }
    free(probs);
    return st;
}

steno_status whisper_resolve_language(const whisper_model *m, const steno_transcribe_params *p, int *lang_token) {
    *lang_token = -1;
    if (p->task != STENO_TASK_TRANSCRIBE && p->task != STENO_TASK_TRANSLATE)
        return steno_fail(STENO_E_INVALID_ARG, "task: unknown value %d", p->task);
    if (!m->multilingual) {
        if (p->task == STENO_TASK_TRANSLATE)
            return steno_fail(STENO_E_UNSUPPORTED, "task translate: the model is English-only");
        if (p->language && strcmp(p->language, "en") != 0)
            return steno_fail(STENO_E_UNSUPPORTED, "language '%s': the model is English-only", p->language);
        return STENO_OK;
    }
    if (p->language && (*lang_token = whisper_language_token(m, p->language)) < 0)
        return steno_fail(STENO_E_INVALID_ARG, "language '%s': not a language of this model", p->language);
    return STENO_OK;
}

/* Sort by descending probability, then by code (qsort is not stable). */
static int cmp_prob(const void *a, const void *b) {
    const steno_language_prob *x = a, *y = b;
    if (x->probability != y->probability) return x->probability < y->probability ? 1 : -1;
    return strcmp(x->code, y->code);
}

steno_status steno_detect_language(steno_whisper *w, const float *samples, size_t n, steno_language_prob *out,
                                   int cap, int *n_out) {
    return steno_detect_language_with_state(w, NULL, samples, n, out, cap, n_out);
}

static steno_status detect_mel(const steno_whisper *w, steno_whisper_state *state, const whisper_mel_input *in,
                               steno_language_prob *out, int cap, int *n_out);

steno_status steno_detect_language_with_state(const steno_whisper *w, steno_whisper_state *state,
                                              const float *samples, size_t n, steno_language_prob *out, int cap,
                                              int *n_out) {
    steno_clear_error();
    if (n_out) *n_out = 0;
    if (!w || (!samples && n) || (!out && cap > 0) || cap < 0 || !n_out)
        return steno_fail(STENO_E_INVALID_ARG, "detect_language: bad arguments");
    const whisper_model *m;
    whisper_fast *fast;
    int n_threads;
    whisper_handle_parts(w, state, &m, &fast, &n_threads);
    if (whisper_n_languages(m) == 0) return detect_mel(w, state, NULL, out, cap, n_out);
    /* the whole input's log-mel: its global maximum sets the clamp of the first window */
    steno_mel mel = {0};
    steno_status st = steno_log_mel(samples, n, STENO_CHUNK_SAMPLES, m->n_mels, &mel);
    if (st != STENO_OK) return st;
    const whisper_mel_input in = {n, &mel, NULL};
    st = detect_mel(w, state, &in, out, cap, n_out);
    steno_mel_free(&mel);
    return st;
}

steno_status steno_detect_language_audio(steno_whisper *w, steno_audio *a, steno_language_prob *out, int cap,
                                         int *n_out) {
    return steno_detect_language_audio_with_state(w, NULL, a, out, cap, n_out);
}

steno_status steno_detect_language_audio_with_state(const steno_whisper *w, steno_whisper_state *state, steno_audio *a,
                                                    steno_language_prob *out, int cap, int *n_out) {
    steno_clear_error();
    if (n_out) *n_out = 0;
    if (!w || !a || (!out && cap > 0) || cap < 0 || !n_out)
        return steno_fail(STENO_E_INVALID_ARG, "detect_language: bad arguments");
    const whisper_mel_input in = {steno_audio_n_samples(a), NULL, a};
    return detect_mel(w, state, &in, out, cap, n_out);
}

/* The first window of `in` exactly as steno_transcribe builds it: the first <= 3000 content
 * frames, zeros after. */
static steno_status detect_mel(const steno_whisper *w, steno_whisper_state *state, const whisper_mel_input *in,
                               steno_language_prob *out, int cap, int *n_out) {
    const whisper_model *m;
    whisper_fast *fast;
    int n_threads;
    whisper_handle_parts(w, state, &m, &fast, &n_threads);
    const int n_lang = whisper_n_languages(m);
    if (n_lang == 0)
        return steno_fail(STENO_E_UNSUPPORTED, "language detection needs a multilingual model; this one is "
                                               "English-only");
    openblas_set_num_threads(fast ? 1 : n_threads);
    const int audio_ctx = fast ? whisper_fast_audio_ctx(fast) : m->n_audio_ctx;
    const int n_frames_window = 2 * m->n_audio_ctx;

    whisper_decode_ctx dc;
    int dc_ready = 0;
    float *window = NULL, *xa = NULL, *probs = NULL;
    steno_language_prob *all = NULL;
    steno_status st = STENO_OK;
    window = malloc(sizeof(float) * (size_t)m->n_mels * n_frames_window);
    xa = malloc(sizeof(float) * (size_t)audio_ctx * m->n_audio_state);
    probs = malloc(sizeof(float) * (size_t)n_lang);
    all = malloc(sizeof *all * (size_t)n_lang);
    if (!window || !xa || !probs || !all) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    const int content = whisper_mel_content_frames(in);
    const int seg = content < 2 * audio_ctx ? content : 2 * audio_ctx;
    if ((st = whisper_mel_window(in, m->n_mels, 0, seg, window, n_frames_window)) != STENO_OK) goto done;
    st = fast ? whisper_fast_encode(fast, window, xa) : whisper_encode(m, window, xa);
    if (st != STENO_OK) goto done;
    const steno_transcribe_params p = steno_transcribe_default_params();
    if ((st = whisper_decode_ctx_init(&dc, m, fast, &p)) != STENO_OK) goto done;
    dc_ready = 1;
    if ((st = whisper_detect_language(&dc, xa, probs)) != STENO_OK) goto done;
    for (int i = 0; i < n_lang; i++) {
        whisper_language_code(m, i, all[i].code);
        all[i].probability = probs[i];
    }
    qsort(all, (size_t)n_lang, sizeof *all, cmp_prob);
    *n_out = cap < n_lang ? cap : n_lang;
    if (*n_out) memcpy(out, all, sizeof *all * (size_t)*n_out);
done:
    if (dc_ready) whisper_decode_ctx_free(&dc);
    free(window);
    free(xa);
    free(probs);
    free(all);
    return st;
}
