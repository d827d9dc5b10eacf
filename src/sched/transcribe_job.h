/* transcribe_job.h — a transcription as a scheduler job: its part of the job (the audio it reads
 * and its parameters) and the transcription workers' slots. Not part of the scheduler's interface. */
#ifndef STENO_SCHED_TRANSCRIBE_JOB_H
#define STENO_SCHED_TRANSCRIBE_JOB_H

#include "sched/job.h"
#include "whisper/decoder/step_batcher.h"

/* A transcription worker's slot: the Whisper state a running job uses. */
typedef struct sched_slot {
    steno_whisper_state *ws;
    whisper_xbatch_member *xm; /* the slot's place in s->xbatch, or NULL */
} sched_slot;

/* A JOB_TRANSCRIBE job. */
typedef struct transcribe_job {
    sched_job base;           /* first: a sched_job of kind JOB_TRANSCRIBE is a transcribe_job */
    steno_audio *audio;       /* owned, with the bytes it reads */
    void *audio_bytes;
    steno_transcribe_params tp;
    void *owned[16];          /* copies of the params' strings and arrays */
    int n_owned;
} transcribe_job;

static inline transcribe_job *transcribe_job_of(sched_job *j) { return (transcribe_job *)j; }

/** Copies the request's data into j (the params' strings and arrays). Errors: STENO_E_NOMEM. */
steno_status transcribe_job_init(transcribe_job *j, const sched_transcribe_req *r);
/** Frees what the job owns: the audio, its bytes, the copies (not j itself). */
void transcribe_job_free_part(transcribe_job *j);
/** Runs j on slot, writing j->base.out (status, result). */
void transcribe_job_run(const steno_whisper *w, sched_slot *slot, transcribe_job *j);

#endif
