/* window_group.h — decoding several 30-s windows together: each window's ordinary decoding loop
 * (decoding.c greedy, beam.c beam search / best-of, unchanged) runs as a member, and the
 * single-token decoder steps of all members run as the rows of one step
 * (fast.h whisper_fast_group_step).
 *
 * How: every member runs on a thread of its own, but only one thread computes at a time (a
 * baton): the driver hands the baton to each member in turn, in index order; a member runs its
 * loop (sampling, logit filters, prefill, reorders: on its own data, using the shared pool)
 * until it asks for a single-token step, then hands the baton back. When every member still
 * running waits on a step, the driver runs them all as one group step, in member order, and
 * starts the next round. A member that finishes (its window decoded) leaves the rounds, so
 * windows of different lengths end at different steps. Because a group step gives each row the
 * bits it would get alone, and a member's own computation never sees another member's data, every
 * member's tokens are exactly those of the same loop run alone, for any batch and thread count.
 * The driver and the members never compute at the same time, so the work runs on the pool's
 * threads only (the configured thread count).
 *
 * The same mechanism serves cross-request batching (the server's continuous batching, issue
 * #12): a request's decoding loop is a member; members may join a run at any round. */
#ifndef STENO_WHISPER_BATCH_H
#define STENO_WHISPER_BATCH_H

#include "whisper/fast.h"

typedef struct whisper_batch whisper_batch;

/** A member's work: returns its status; runs on a thread of the batch while holding the baton. */
typedef steno_status (*whisper_batch_job)(void *arg);

/** A batch of up to max_members members with up to max_rows decoder rows in all, stepping on f.
 *  Errors: STENO_E_INVALID_ARG, STENO_E_NOMEM. */
steno_status whisper_batch_create(whisper_fast *f, int max_members, int max_rows, whisper_batch **out);
void whisper_batch_free(whisper_batch *b);

/** Runs job(args[i]) for i in 0..n-1 as members, decs[i] being the fast decoder member i steps
 *  (its step hook is set for the run and cleared after). Returns when all have finished; st[i]
 *  gets each member's status and the first failing member's message becomes this thread's
 *  (steno_errmsg). Errors: the members', STENO_E_INVALID_ARG (n out of range), STENO_E_NOMEM
 *  (a thread could not start). Not reentrant: one run at a time per batch. */
steno_status whisper_batch_run(whisper_batch *b, int n, whisper_fast_decoder *const *decs, whisper_batch_job job,
                               void *const *args, steno_status *st);

/** Group steps run by the last whisper_batch_run, and rows stepped in all (benchmarks, tests). */
void whisper_batch_stats(const whisper_batch *b, long *steps, long *rows);

#endif
