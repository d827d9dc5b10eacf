/* routes_audio.c — POST /v1/audio/transcriptions, /v1/audio/translations (OpenAI's audio API) and
 * whisper.cpp's POST /inference: the form's fields become steno_transcribe_params (the CLI's
 * option names are accepted as extra fields, with dashes or underscores), the uploaded file is
 * decoded in memory, the transcription runs as a scheduler job, and the answer is written in the
 * requested format, or streamed as Server-Sent Events (stream=true) segment by segment. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/audio_format.h"
#include "server/http.h"
#include "server/job_reply.h"
#include "server/serve_internal.h"
#include "text/utf8.h"

typedef struct audio_opts {
    steno_transcribe_params p;
    double temps[64];
    double clips[64];
    int suppress[256];
    char language[16];
    audio_format fmt;
    int words, segments; /* timestamp granularities */
    int stream;
    const char *task;
} audio_opts;

/* A field by any of its spellings: OpenAI's name, the CLI's with dashes or underscores. */
static const form_field *field_any(const http_req *r, const char *const *names) {
    for (; *names; names++) {
        const form_field *f = http_field(r, *names);
        if (f) return f;
    }
    return NULL;
}

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

static int parse_bool(const char *s, int *out) {
    if (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes")) *out = 1;
    else if (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "no") || !*s) *out = 0;
    else return -1;
    return 0;
}

static int parse_num(const char *s, double *out) {
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int *out) {
    double v;
    if (parse_num(s, &v) != 0 || v != floor(v) || v < -1e9 || v > 1e9) return -1;
    *out = (int)v;
    return 0;
}

/* Reads the form into o; on a bad value answers 400 naming the field and returns -1 with the
 * MHD result in *rc. */
static int read_options(http_req *r, audio_opts *o, int *rc) {
    const int inference = r->route == ROUTE_INFERENCE;
    o->p = steno_transcribe_default_params();
    o->fmt = AUDIO_JSON;
    o->segments = 1;
    o->task = r->route == ROUTE_TRANSLATIONS ? "translate" : "transcribe";
    const form_field *f;
#define BAD(param, ...)                                                                  \
    do {                                                                                 \
        *rc = http_send_error(r, 400, NULL, param, "invalid_value", __VA_ARGS__);         \
        return -1;                                                                       \
    } while (0)
    for (int i = 0; i < r->n_fields; i++) { /* every text field is UTF-8 (the file is bytes) */
        const form_field *g = &r->fields[i];
        if (g->filename || !strcmp(g->name, "file") || !g->name[0]) continue; /* unnamed parts are unused */
        char *clean = steno_utf8_sanitize(g->data, g->len);
        const int ok = clean && strlen(clean) == g->len && memcmp(clean, g->data, g->len) == 0;
        free(clean);
        if (!ok) {
            *rc = http_send_error(r, 400, NULL, g->name, "invalid_utf8", "%s: not valid UTF-8", g->name);
            return -1;
        }
    }
    if ((f = http_field(r, "response_format")) && audio_format_parse(f->data, &o->fmt) != 0)
        BAD("response_format", "response_format '%s' is not one of json, text, srt, vtt, verbose_json", f->data);
    if ((f = http_field(r, "stream")) && parse_bool(f->data, &o->stream) != 0)
        BAD("stream", "stream: expected true or false, got '%s'", f->data);
    const form_field *gran[4];
    const int n_gran = http_fields(r, "timestamp_granularities", gran, 4);
    if (n_gran) o->segments = 0;
    for (int i = 0; i < n_gran; i++) {
        if (!strcmp(gran[i]->data, "word")) o->words = 1;
        else if (!strcmp(gran[i]->data, "segment")) o->segments = 1;
        else BAD("timestamp_granularities[]", "timestamp_granularities: '%s' is not word or segment", gran[i]->data);
    }
    if (o->words && o->fmt != AUDIO_VERBOSE_JSON && !o->stream)
        BAD("timestamp_granularities[]", "timestamp_granularities needs response_format=verbose_json");
    /* language: a code or a full name */
    if ((f = http_field(r, "language")) && f->len && strcasecmp(f->data, "auto") != 0) {
        const char *code = audio_language_code(f->data);
        if (!code) BAD("language", "language '%s' is not a language Whisper knows", f->data);
        if (!steno_whisper_has_language(sched_whisper(r->srv->sched), code))
            BAD("language", "language '%s': the model %s cannot transcribe it", f->data, r->srv->whisper_id);
        snprintf(o->language, sizeof o->language, "%s", code);
        o->p.language = o->language;
    }
    if ((f = field_any(r, NAMES("prompt", "initial_prompt", "initial-prompt"))) && f->len) o->p.initial_prompt = f->data;
    if ((f = http_field(r, "translate"))) { /* whisper.cpp */
        int t;
        if (parse_bool(f->data, &t) != 0) BAD("translate", "translate: expected true or false, got '%s'", f->data);
        if (t) o->task = "translate";
    }
    if ((f = field_any(r, NAMES("task")))) {
        if (strcmp(f->data, "transcribe") && strcmp(f->data, "translate"))
            BAD("task", "task '%s' is not transcribe or translate", f->data);
        o->task = strcmp(f->data, "translate") == 0 ? "translate" : "transcribe";
    }
    o->p.task = strcmp(o->task, "translate") == 0 ? STENO_TASK_TRANSLATE : STENO_TASK_TRANSCRIBE;
    if (o->p.task == STENO_TASK_TRANSLATE && !steno_whisper_is_multilingual(sched_whisper(r->srv->sched)))
        BAD(NULL, "translation needs a multilingual model; %s is English-only", r->srv->whisper_id);
    /* the temperature ladder, as the CLI builds it: numpy.arange(t, 1 + 1e-6, increment) */
    double t0 = 0, inc = 0.2;
    int no_inc = 0;
    if ((f = http_field(r, "temperature")) && f->len && (parse_num(f->data, &t0) != 0 || t0 < 0 || t0 > 1))
        BAD("temperature", "temperature: expected a number from 0 to 1, got '%s'", f->data);
    if ((f = field_any(r, NAMES("temperature_increment_on_fallback", "temperature-increment-on-fallback",
                                "temperature_inc")))) {
        if (!strcasecmp(f->data, "none") || (inference && parse_num(f->data, &inc) == 0 && inc == 0)) no_inc = 1;
        else if (parse_num(f->data, &inc) != 0 || !(inc > 0))
            BAD("temperature_increment_on_fallback", "temperature_increment_on_fallback: expected a number > 0 or "
                                                     "None, got '%s'", f->data);
    }
    int nt = 0;
    if (no_inc) o->temps[nt++] = t0;
    else {
        const double n = ceil((1.0 + 1e-6 - t0) / inc);
        if (n > 64) BAD("temperature_increment_on_fallback", "more than 64 temperatures");
        for (int k = 0; k < (int)n; k++) o->temps[nt++] = t0 + k * inc;
        if (!nt) o->temps[nt++] = t0;
    }
    o->p.temperatures = o->temps;
    o->p.n_temperatures = nt;
    /* numbers and switches under the CLI's names */
    struct {
        const char *const *names;
        double *d;
        int *i;
        double lo, hi;
    } nums[] = {
        {NAMES("beam_size", "beam-size"), NULL, &o->p.beam_size, 0, 64},
        {NAMES("best_of", "best-of"), NULL, &o->p.best_of, 0, 64},
        {NAMES("patience"), &o->p.patience, NULL, 1e-9, 1e9},
        {NAMES("length_penalty", "length-penalty"), &o->p.length_penalty, NULL, 0, 1e9},
        {NAMES("compression_ratio_threshold", "compression-ratio-threshold"), &o->p.compression_ratio_threshold,
         NULL, -1e9, 1e9},
        {NAMES("logprob_threshold", "logprob-threshold"), &o->p.logprob_threshold, NULL, -1e30, 1e9},
        {NAMES("no_speech_threshold", "no-speech-threshold"), &o->p.no_speech_threshold, NULL, -1e9, 1e9},
        {NAMES("hallucination_silence_threshold", "hallucination-silence-threshold"),
         &o->p.hallucination_silence_threshold, NULL, -1e9, 1e9},
        {NAMES("max_initial_timestamp", "max-initial-timestamp"), &o->p.max_initial_timestamp, NULL, 0, 1e9},
    };
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        if (!(f = field_any(r, nums[k].names)) || !f->len) continue;
        double v;
        int iv;
        if (nums[k].i ? parse_int(f->data, &iv) != 0 : parse_num(f->data, &v) != 0)
            BAD(nums[k].names[0], "%s: expected a number, got '%s'", nums[k].names[0], f->data);
        if (nums[k].i) v = iv;
        char lo[32], hi[32];
        if (v < nums[k].lo || v > nums[k].hi)
            BAD(nums[k].names[0], "%s: %s is out of range (%s to %s)", nums[k].names[0], f->data,
                api_num_text(nums[k].lo, lo, sizeof lo), api_num_text(nums[k].hi, hi, sizeof hi));
        if (nums[k].i) *nums[k].i = iv;
        else *nums[k].d = v;
    }
    struct {
        const char *const *names;
        int *v;
    } bools[] = {
        {NAMES("word_timestamps", "word-timestamps"), &o->p.word_timestamps},
        {NAMES("condition_on_previous_text", "condition-on-previous-text"), &o->p.condition_on_previous_text},
        {NAMES("suppress_blank", "suppress-blank"), &o->p.suppress_blank},
        {NAMES("without_timestamps", "without-timestamps", "no_timestamps"), &o->p.without_timestamps},
        {NAMES("carry_initial_prompt", "carry-initial-prompt"), &o->p.carry_initial_prompt},
    };
    for (size_t k = 0; k < sizeof bools / sizeof bools[0]; k++)
        if ((f = field_any(r, bools[k].names)) && parse_bool(f->data, bools[k].v) != 0)
            BAD(bools[k].names[0], "%s: expected true or false, got '%s'", bools[k].names[0], f->data);
    if ((f = http_field(r, "seed")) && f->len) {
        double v;
        if (parse_num(f->data, &v) != 0 || v < 0 || v != floor(v)) BAD("seed", "seed: expected an integer >= 0");
        o->p.seed = (uint64_t)v;
    }
    if ((f = field_any(r, NAMES("prefix"))) && f->len) o->p.prefix = f->data;
    if ((f = field_any(r, NAMES("hotwords"))) && f->len) o->p.hotwords = f->data;
    if ((f = field_any(r, NAMES("suppress_tokens", "suppress-tokens")))) {
        int n = 0;
        char *save = NULL, *copy = strdup(f->data);
        if (!copy) BAD(NULL, "out of memory");
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int id;
            while (*t == ' ') t++;
            if (n == 256 || parse_int(t, &id) != 0 || id < -1 || id >= steno_whisper_n_vocab(sched_whisper(r->srv->sched))) {
                free(copy);
                BAD("suppress_tokens", "suppress_tokens: '%s' is not a list of token ids", f->data);
            }
            o->suppress[n++] = id;
        }
        free(copy);
        o->p.suppress_tokens = o->suppress;
        o->p.n_suppress_tokens = n;
    }
    if ((f = field_any(r, NAMES("clip_timestamps", "clip-timestamps"))) && f->len) {
        int n = 0;
        char *save = NULL, *copy = strdup(f->data);
        if (!copy) BAD(NULL, "out of memory");
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            double v;
            if (n == 64 || parse_num(t, &v) != 0 || v < 0) {
                free(copy);
                BAD("clip_timestamps", "clip_timestamps: '%s' is not a list of times", f->data);
            }
            o->clips[n++] = v;
        }
        free(copy);
        for (int i = 1; i < n; i += 2)
            if (o->clips[i] < o->clips[i - 1])
                BAD("clip_timestamps", "clip_timestamps: clip %d ends (%g s) before it starts (%g s)", i / 2 + 1,
                    o->clips[i], o->clips[i - 1]);
        o->p.clip_timestamps = o->clips;
        o->p.n_clip_timestamps = n;
    }
    if (o->words) o->p.word_timestamps = 1;
    if (o->p.word_timestamps && o->fmt == AUDIO_VERBOSE_JSON) o->words = 1;
    if (o->p.hallucination_silence_threshold >= 0 && !o->p.word_timestamps)
        BAD("hallucination_silence_threshold", "hallucination_silence_threshold needs word_timestamps");
    return 0;
#undef BAD
}

/* ------------------------------------------------------------------------------------ streaming */

typedef struct audio_stream {
    http_req *r;
    sched_job *job;
    int next_event, n_segments, finished;
    double last_send;
    sse_out out;
    char task[16];
} audio_stream;

static void stream_init(void *state, http_req *r, sched_job *job, void *arg) {
    audio_stream *s = state;
    const audio_opts *o = arg;
    s->r = r;
    s->job = job;
    s->last_send = sched_now();
    snprintf(s->task, sizeof s->task, "%s", o->task);
}

static void stream_done(void *user) {
    audio_stream *s = user;
    if (sched_job_get_state(s->job) != SCHED_DONE) sched_job_cancel(s->job);
    sched_job_release(s->job);
    sse_out_free(&s->out);
    free(s);
}

static long stream_next(void *user, char *buf, size_t cap) {
    audio_stream *s = user;
    for (;;) {
        const long n = sse_out_take(&s->out, buf, cap);
        if (n > 0) {
            s->last_send = sched_now();
            return n;
        }
        if (s->finished) return -1;
        int done = 0;
        const int have = sched_job_wait(s->job, s->next_event, 250, &done);
        if (s->next_event < have) {
            const sched_event *e = sched_job_event(s->job, s->next_event++);
            cJSON *ev = cJSON_CreateObject();
            cJSON_AddStringToObject(ev, "type", "transcript.text.delta");
            cJSON_AddStringToObject(ev, "delta", e->text);
            cJSON *seg = cJSON_AddObjectToObject(ev, "segment"); /* steno's addition: the timing */
            cJSON_AddNumberToObject(seg, "id", s->n_segments++);
            cJSON_AddNumberToObject(seg, "start", e->start);
            cJSON_AddNumberToObject(seg, "end", e->end);
            cJSON_AddStringToObject(seg, "text", e->text);
            if (sse_out_json(&s->out, ev) != 0) return -2;
            continue;
        }
        if (done) {
            const sched_outcome *o = sched_job_outcome(s->job);
            s->finished = 1;
            cJSON *ev = cJSON_CreateObject();
            if (o->status == STENO_OK && o->result) {
                cJSON_AddStringToObject(ev, "type", "transcript.text.done");
                char *text = audio_result_text(o->result);
                cJSON_AddStringToObject(ev, "text", text ? text : "");
                free(text);
                cJSON_AddStringToObject(ev, "language", audio_language_name(o->result->language));
                cJSON_AddNumberToObject(ev, "duration", o->result->duration);
                cJSON *usage = cJSON_AddObjectToObject(ev, "usage");
                cJSON_AddStringToObject(usage, "type", "duration");
                cJSON_AddNumberToObject(usage, "seconds", ceil(o->result->duration));
                s->r->audio_seconds = o->result->duration;
            } else {
                cJSON_Delete(ev);
                ev = http_job_error_json(o, "transcription", s->r->srv->o.request_timeout);
                cJSON_AddStringToObject(ev, "type", "error");
            }
            if (sse_out_json(&s->out, ev) != 0) return -2;
            continue;
        }
        if (sched_now() - s->last_send > 5.0) { /* an SSE comment keeps proxies and clients patient */
            static const char ping[] = ": ping\n\n";
            if (cap < sizeof ping - 1) return 0;
            memcpy(buf, ping, sizeof ping - 1);
            s->last_send = sched_now();
            return (long)(sizeof ping - 1);
        }
        if (http_client_gone(s->r)) return -2;
    }
}

/* -------------------------------------------------------------------------------------- handler */

int route_audio(http_req *r) {
    server_ctx *S = r->srv;
    if (!sched_whisper(S->sched))
        return http_send_error(r, 404, NULL, "model", "model_not_found",
                               "no speech model is loaded (start steno serve with --whisper-model)");
    const form_field *file = http_field(r, "file");
    if (!file || !file->filename)
        return http_send_error(r, 400, NULL, "file", "missing_file", "the form has no 'file' part with the audio");
    if (file->len == 0) return http_send_error(r, 400, NULL, "file", "invalid_audio", "the uploaded file is empty");
    const form_field *mf = http_field(r, "model");
    if (mf && mf->len && strcmp(mf->data, S->whisper_id) != 0 && strcmp(mf->data, "whisper-1") != 0)
        return http_send_error(r, 404, NULL, "model", "model_not_found",
                               "model '%s' is not loaded; this server serves '%s' (or say 'whisper-1')", mf->data,
                               S->whisper_id);
    audio_opts *o = calloc(1, sizeof *o);
    if (!o) return http_send_error(r, 503, NULL, NULL, "out_of_memory", "out of memory");
    int rc = 0;
    if (read_options(r, o, &rc) != 0) {
        free(o);
        return rc;
    }
    /* The job reads the upload window by window (steno_audio): a queued request holds its bytes,
     * not 64 kB per second of decoded audio. The copy outlives the connection if the job does. */
    const char *name = file->filename[0] ? file->filename : "file";
    void *bytes = malloc(file->len);
    steno_audio *audio = NULL;
    if (!bytes) {
        free(o);
        return http_send_error(r, 503, NULL, NULL, "out_of_memory", "out of memory");
    }
    memcpy(bytes, file->data, file->len);
    if (steno_audio_open_memory(bytes, file->len, name, &audio) != STENO_OK) {
        free(bytes);
        free(o);
        return http_send_error(r, 400, NULL, "file", "invalid_audio", "%s", steno_errmsg());
    }
    const double seconds = (double)steno_audio_n_samples(audio) / STENO_SAMPLE_RATE;
    if (S->o.max_audio_seconds > 0 && seconds > S->o.max_audio_seconds) {
        steno_audio_close(audio);
        free(bytes);
        free(o);
        return http_send_error(r, 413, NULL, "file", "audio_too_long",
                               "%s: %.1f s of audio; the limit is %.0f s (--max-audio-seconds)", name, seconds,
                               S->o.max_audio_seconds);
    }
    sched_transcribe_req req = {audio, bytes, o->p};
    sched_job *job = NULL;
    const steno_status st = sched_submit_transcribe(S->sched, &req, S->o.request_timeout, &job);
    if (st != STENO_OK) { /* the audio and its bytes were freed with the job */
        free(o);
        return http_send_sched_error(r, st, steno_errmsg());
    }
    if (job_reply(r, job, o->stream, sizeof(audio_stream), stream_init, o, stream_next, stream_done, &rc) !=
        JOB_REPLY_FINISHED) {
        free(o); /* a stream copied the task */
        return rc;
    }
    const sched_outcome *out = sched_job_outcome(job);
    if (out->status != STENO_OK || !out->result) {
        rc = http_send_job_error(r, out, "transcription");
    } else {
        const char *ct = NULL;
        size_t len = 0;
        char *body = audio_format_result(out->result, o->fmt, o->task, o->words, o->segments, &ct, &len);
        r->audio_seconds = out->result->duration;
        rc = body ? http_send(r, 200, ct, body, len) : http_send_error(r, 503, NULL, NULL, "out_of_memory", "out of memory");
        free(body);
    }
    sched_job_release(job);
    free(o);
    return rc;
}
