/* handle.c — the public Whisper handle of include/steno.h: loading a model (steno_whisper_load_ex:
 * path, weights, threads) with its default state, more states for concurrent requests, the
 * model's queries, and the transcription parameters' defaults (openai-whisper transcribe.py's and
 * decoding.py's defaults). */
#include "whisper/handle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "formats/sniff.h"
#include "kernels/quant/wq.h"
#include "whisper/model/language_tokens.h"

const whisper_model *whisper_handle_model(const steno_whisper *w) { return w->model; }
steno_whisper_state *whisper_handle_state(steno_whisper *w) { return w->state; }
whisper_fast *whisper_state_fast(steno_whisper_state *s) { return s->fast; }

steno_whisper_options steno_whisper_default_options(void) {
    steno_whisper_options o;
    memset(&o, 0, sizeof o);
    o.path = STENO_PATH_FAST;
    o.weights = STENO_WEIGHTS_F16;
    return o;
}

static int resolve_threads(int n_threads) {
    if (n_threads > 0) return n_threads;
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    return nc > 0 ? (int)nc : 1;
}

steno_status steno_whisper_load_ex(const char *model_dir, const steno_whisper_options *opts, steno_whisper **out) {
    steno_clear_error();
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "whisper load: no output pointer");
    *out = NULL;
    const steno_whisper_options o = opts ? *opts : steno_whisper_default_options();
    if (!model_dir) return steno_fail(STENO_E_INVALID_ARG, "model directory: none given");
    if (o.path != STENO_PATH_FAST && o.path != STENO_PATH_FAITHFUL)
        return steno_fail(STENO_E_INVALID_ARG, "path: unknown value %d", (int)o.path);
    if (o.path == STENO_PATH_FAITHFUL && o.audio_ctx != 0)
        return steno_fail(STENO_E_INVALID_ARG, "audio_ctx: only the fast path can reduce it");
    struct stat sb;
    const int found = stat(model_dir, &sb) == 0;
    if (!found && (errno == ENOENT || errno == ENOTDIR))
        return steno_fail(STENO_E_IO, "%s: no such model directory", model_dir);
    if (found && S_ISREG(sb.st_mode)) { /* a file: a whisper.cpp ggml model loads, others are named */
        const char *what = steno_sniff_model_file(model_dir);
        if (what && strcmp(what, "a CTranslate2 model.bin") == 0)
            return steno_fail(STENO_E_FORMAT, "%s: %s: give the directory that holds it (with config.json and "
                              "tokenizer.json or vocabulary.txt)", model_dir, what);
        if (!what || strcmp(what, "a whisper.cpp ggml model") != 0)
            return steno_fail(STENO_E_FORMAT, "%s: %s, not a Whisper model steno reads: a whisper.cpp ggml file, or a "
                              "CTranslate2, Hugging Face or MLX model directory", model_dir, what ? what : "a file");
    }
    steno_whisper *w = calloc(1, sizeof *w);
    if (w) w->state = calloc(1, sizeof *w->state);
    if (!w || !w->state) {
        free(w);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    /* steno_weights → kernels/quant/wq.h type, in the enum's order from STENO_WEIGHTS_Q8_0 */
    static const int WQ_OF[] = {STENO_T_Q8_0,  STENO_T_Q5_0,  STENO_T_Q5_1,  STENO_T_Q4_0, STENO_T_Q4_1,
                                WQ_MLX_Q4_G32, WQ_MLX_Q4_G64, WQ_MLX_Q8_G32, WQ_MLX_Q8_G64};
    const int wq_type = o.weights >= STENO_WEIGHTS_Q8_0 && o.weights <= STENO_WEIGHTS_MLX_Q8_G64
                            ? WQ_OF[o.weights - STENO_WEIGHTS_Q8_0] : 0;
    if ((int)o.weights < 0 || o.weights > STENO_WEIGHTS_MLX_Q8_G64 || (wq_type && o.path != STENO_PATH_FAST)) {
        free(w->state);
        free(w);
        if (wq_type)
            return steno_fail(STENO_E_INVALID_ARG, "weights %s: quantized weights run on the fast path only",
                              wq_name(wq_type));
        return steno_fail(STENO_E_INVALID_ARG, "weights %d: not a steno_weights value", (int)o.weights);
    }
    const int decoder_f16 = o.path == STENO_PATH_FAST && o.weights == STENO_WEIGHTS_F16;
    steno_status st = whisper_model_load_q(model_dir, decoder_f16, wq_type, &w->model);
    if (st != STENO_OK) {
        free(w->state);
        free(w);
        return st;
    }
    steno_whisper_state *s = w->state;
    s->n_threads = resolve_threads(o.n_threads);
    if (o.path == STENO_PATH_FAST) {
        if ((st = steno_pool_create(s->n_threads, &s->pool)) != STENO_OK ||
            (st = whisper_fast_create(w->model, o.weights == STENO_WEIGHTS_F32 ? VEC_F32 : VEC_F16, o.audio_ctx,
                                      s->pool, &s->fast)) != STENO_OK) {
            steno_whisper_free(w);
            return st;
        }
    }
    *out = w;
    return STENO_OK;
}

steno_status steno_whisper_load(const char *model_dir, int n_threads, steno_whisper **out) {
    steno_whisper_options o = steno_whisper_default_options();
    o.n_threads = n_threads;
    return steno_whisper_load_ex(model_dir, &o, out);
}

static void state_release(steno_whisper_state *s) {
    whisper_fast_free(s->fast);
    steno_pool_free(s->pool);
    free(s);
}

void steno_whisper_free(steno_whisper *w) {
    if (!w) return;
    if (w->state) state_release(w->state);
    whisper_model_free(w->model);
    free(w);
}

steno_status steno_whisper_state_new(const steno_whisper *w, int n_threads, steno_whisper_state **out) {
    steno_clear_error();
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "whisper state: no output pointer");
    *out = NULL;
    if (!w) return steno_fail(STENO_E_INVALID_ARG, "whisper state: no model");
    steno_whisper_state *s = calloc(1, sizeof *s);
    if (!s) return steno_fail(STENO_E_NOMEM, "out of memory");
    s->n_threads = n_threads > 0 ? n_threads : w->state->n_threads;
    steno_status st = STENO_OK;
    if (w->state->fast &&
        ((st = steno_pool_create(s->n_threads, &s->pool)) != STENO_OK ||
         (st = whisper_fast_share(w->state->fast, s->pool, &s->fast)) != STENO_OK)) {
        state_release(s);
        return st;
    }
    *out = s;
    return STENO_OK;
}

void steno_whisper_state_free(steno_whisper_state *s) {
    if (s) state_release(s);
}

int steno_whisper_is_multilingual(const steno_whisper *w) { return w->model->multilingual; }
int steno_whisper_has_language(const steno_whisper *w, const char *code) {
    if (!w->model->multilingual) return strcmp(code, "en") == 0;
    return whisper_language_token(w->model, code) >= 0;
}

int steno_whisper_n_vocab(const steno_whisper *w) { return w->model->n_vocab; }
int steno_whisper_n_text_layers(const steno_whisper *w) { return w->model->n_text_layer; }
void whisper_handle_parts(const steno_whisper *w, steno_whisper_state *s, const whisper_model **m,
                          whisper_fast **fast, int *n_threads) {
    if (!s) s = w->state;
    *m = w->model;
    *fast = s->fast;
    *n_threads = s->n_threads;
}

steno_transcribe_params steno_transcribe_default_params(void) {
    steno_transcribe_params p;
    memset(&p, 0, sizeof p);
    p.compression_ratio_threshold = 2.4;
    p.logprob_threshold = -1.0;
    p.no_speech_threshold = 0.6;
    p.condition_on_previous_text = 1;
    p.suppress_blank = 1;
    p.max_initial_timestamp = 1.0;
    p.hallucination_silence_threshold = -1;
    p.patience = 1.0;
    p.length_penalty = 1.0;
    p.best_of = 1;
    return p;
}
