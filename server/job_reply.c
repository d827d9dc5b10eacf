/* job_reply.c — a submitted job answered as a stream or waited for (server/job_reply.h). */
#include "server/job_reply.h"

#include <stdlib.h>

job_reply_result job_reply(http_req *r, sched_job *job, int stream, size_t state_size,
                           void (*init)(void *state, http_req *r, sched_job *job, void *arg), void *arg,
                           http_stream_next next, void (*done)(void *user), int *rc) {
    if (stream) {
        void *s = calloc(1, state_size);
        if (!s) {
            sched_job_cancel(job);
            sched_job_release(job);
            *rc = http_send_error(r, 503, NULL, NULL, "out_of_memory", "out of memory");
            return JOB_REPLY_ANSWERED;
        }
        init(s, r, job, arg);
        *rc = http_send_stream(r, "text/event-stream", next, done, s);
        return JOB_REPLY_STREAMING;
    }
    if (http_wait_job(r, job) != 0) { /* the client left: nothing to answer */
        sched_job_release(job);
        *rc = 0;
        return JOB_REPLY_ANSWERED;
    }
    return JOB_REPLY_FINISHED;
}
