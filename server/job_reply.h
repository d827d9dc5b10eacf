/* job_reply.h — answering a submitted scheduler job the way the request asks: as a stream of
 * Server-Sent Events, or by waiting for it (the transcription and text endpoints share this). */
#ifndef STENO_SERVER_JOB_REPLY_H
#define STENO_SERVER_JOB_REPLY_H

#include <stddef.h>

#include "server/http.h"

/** What job_reply() did. */
typedef enum job_reply_result {
    JOB_REPLY_FINISHED = 0, /* waited and the job finished: the caller answers from its outcome */
    JOB_REPLY_STREAMING,    /* the stream was handed to MHD; the stream state owns what init took */
    JOB_REPLY_ANSWERED      /* out of memory (503 sent) or the client left: the job is released */
} job_reply_result;

/** With stream set: allocates a zeroed stream state of state_size bytes, lets init(state, r, job,
 *  arg) fill it, and answers text/event-stream through next and done; out of memory, cancels and
 *  releases the job and answers 503. Without: waits for the job (http_wait_job); if the client
 *  leaves, releases the job with nothing to answer. *rc gets the MHD result to return whenever the
 *  result is not JOB_REPLY_FINISHED. */
job_reply_result job_reply(http_req *r, sched_job *job, int stream, size_t state_size,
                           void (*init)(void *state, http_req *r, sched_job *job, void *arg), void *arg,
                           http_stream_next next, void (*done)(void *user), int *rc);

#endif
