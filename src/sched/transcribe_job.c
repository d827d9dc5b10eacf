/* transcribe_job.c — a transcription as a scheduler job: the job takes the request's opened audio
 * and copies its parameters, steno_transcribe_audio_with_state runs on the slot's Whisper state, and each new
 * segment becomes an event (the server streams them). Cancellation and the deadline are polled
 * before every 30-s window (steno_transcribe_params.should_abort) and after every segment. */
#include "sched/transcribe_job.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static void *keep(transcribe_job *j, const void *src, size_t bytes, int *fail) {
    if (!src) return NULL;
    if (j->n_owned == (int)(sizeof j->owned / sizeof j->owned[0])) {
        *fail = 1;
        return NULL;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        *fail = 1;
        return NULL;
    }
    memcpy(p, src, bytes);
    j->owned[j->n_owned++] = p;
    return p;
}

static const char *keep_str(transcribe_job *j, const char *s, int *fail) {
    return s ? keep(j, s, strlen(s) + 1, fail) : NULL;
}

steno_status transcribe_job_init(transcribe_job *j, const sched_transcribe_req *r) {
    int fail = 0;
    steno_transcribe_params p = r->params;
    if (p.temperatures && p.n_temperatures > 0)
        p.temperatures = keep(j, p.temperatures, sizeof(double) * (size_t)p.n_temperatures, &fail);
    if (p.suppress_tokens && p.n_suppress_tokens > 0)
        p.suppress_tokens = keep(j, p.suppress_tokens, sizeof(int) * (size_t)p.n_suppress_tokens, &fail);
    if (p.clip_timestamps && p.n_clip_timestamps > 0)
        p.clip_timestamps = keep(j, p.clip_timestamps, sizeof(double) * (size_t)p.n_clip_timestamps, &fail);
    p.initial_prompt = keep_str(j, p.initial_prompt, &fail);
    p.prefix = keep_str(j, p.prefix, &fail);
    p.hotwords = keep_str(j, p.hotwords, &fail);
    p.language = keep_str(j, p.language, &fail);
    p.prepend_punctuations = keep_str(j, p.prepend_punctuations, &fail);
    p.append_punctuations = keep_str(j, p.append_punctuations, &fail);
    p.verbose = 0;
    p.on_progress = NULL;
    j->tp = p;
    return fail ? steno_fail(STENO_E_NOMEM, "out of memory") : STENO_OK;
}

void transcribe_job_free_part(transcribe_job *j) {
    steno_audio_close(j->audio);
    free(j->audio_bytes);
    for (int i = 0; i < j->n_owned; i++) free(j->owned[i]);
}

static int on_segment(void *user, const steno_segment *sg) {
    sched_job *j = user;
    sched_event *ev = calloc(1, sizeof *ev);
    if (ev && (ev->text = strdup(sg->text ? sg->text : ""))) {
        ev->kind = SCHED_EV_SEGMENT;
        ev->start = sg->start;
        ev->end = sg->end;
        job_push_event(j, ev);
    } else {
        free(ev);
    }
    return job_should_stop(j);
}

static int should_abort(void *user) { return job_should_stop(user); }

void transcribe_job_run(const steno_whisper *w, sched_slot *slot, transcribe_job *j) {
    steno_transcribe_params p = j->tp;
    p.on_segment = on_segment;
    p.should_abort = should_abort;
    p.user = &j->base;
    j->base.out.status = steno_transcribe_audio_with_state(w, slot->ws, j->audio, &p, &j->base.out.result);
    if (slot->xm) whisper_xbatch_leave(slot->xm); /* the next rounds stop waiting for this slot */
}
