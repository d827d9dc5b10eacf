/* metrics.h — the server's Prometheus metrics (text exposition format 0.0.4): requests by
 * endpoint and status, latency histograms by endpoint, audio seconds transcribed, tokens prompted
 * and generated, and the gauges the caller passes at render time (queue depth, in flight).
 * Thread-safe: one lock around every update and the rendering. */
#ifndef STENO_SERVER_METRICS_H
#define STENO_SERVER_METRICS_H

#include "server/http.h"

typedef struct server_metrics server_metrics;

server_metrics *metrics_new(void);
void metrics_free(server_metrics *m);
/** One finished request: its endpoint, status (499: the client left first), wall seconds, and
 *  what it processed. */
void metrics_request_done(server_metrics *m, route_id route, int status, double seconds, double audio_seconds,
                          int prompt_tokens, int generated_tokens);
/** The exposition text (malloc'd), with the gauges given. NULL when out of memory. */
typedef struct metrics_gauges {
    int queued, running, in_flight, ready;
    unsigned long long jobs_completed, jobs_cancelled, jobs_failed; /* the scheduler's totals */
    int cache_entries;            /* the prompt cache (zeros without one) */
    size_t cache_bytes;
    unsigned long long cache_hits, cache_misses, cache_evicted;
    long whisper_steps, whisper_rows, whisper_encodes; /* batched across transcriptions (--whisper-batch) */
    double whisper_step_seconds, whisper_encode_seconds;
} metrics_gauges;
char *metrics_render(server_metrics *m, const metrics_gauges *g);

#endif
