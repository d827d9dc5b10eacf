/* step_batcher.h — cross-request batching of Whisper decoder steps (the server's
 * --parallel slots): concurrent transcriptions, each running its own unchanged decoding loop on
 * its own thread (greedy, beam search, best-of sampling, any temperature, any window), hand their
 * single-token decoder steps to one batcher, which runs the steps of every member that is ready
 * as the rows of one whisper_fast_group_step: one pass over the decoder weights and the
 * vocabulary projection for all requests instead of one per request.
 *
 * Membership is free: a member joins at its first step (its step hook, fast.h
 * whisper_fast_set_step_hook, sends it here) and may leave at any point (whisper_xbatch_leave, or
 * simply by not stepping: encoding its next window, prefilling a prompt after a temperature
 * fallback, aligning words, being cancelled between windows, finishing).
 *
 * A round (rendezvous): a member that submits its step waits. The step runs, on the thread of the
 * member that completes the round, as soon as every member counted as running has submitted, or
 * once the round's first submission is `bound` old; the members that did not submit by then are
 * counted as away (not waited for) until their next submission. A member therefore never waits
 * more than one bound plus one step for a member that went off to encode, and a member that stops
 * stepping altogether (cancelled, failed, blocked) stalls no one. Submissions that arrive while a
 * step runs wait for the next round. bound = 1 ms + half the last step's duration: a member's own
 * work between two steps (logit filters, sampling, beam reorders) is far shorter than a step.
 *
 * Correctness does not depend on the timing: whisper_fast_group_step gives every row the bits its
 * own decoder's single-row step gives (the logit screen is not used on hooked steps: every logit
 * exact), so each request's tokens are those of its solo run whatever its company, arrival time or
 * the thread count.
 *
 * Threads: the group step runs on the batcher's own pool (n_threads: the machine's threads, not
 * one member's); only one step runs at a time, and the members wait on a condition variable
 * meanwhile. The members' encoder passes (whisper_xbatch_encode) run on the same pool, one 30-s
 * window at a time, never during a step, and a pass that waits goes before the next step (as
 * vLLM schedules prefills first): the requests that arrive together are encoded first and then
 * decode together, many rows a step, instead of each decoding alone between the others' passes;
 * a request already decoding pauses for a newcomer's pass. Encoder windows of different requests
 * are not merged into one GEMM (on a CPU the encoder's 1 500-row GEMMs are compute-bound
 * already). Each member's own pool still runs its prompt prefills, its window's cross-attention
 * K/V and word alignment. */
#ifndef STENO_WHISPER_XBATCH_H
#define STENO_WHISPER_XBATCH_H

#include "whisper/fast.h"

typedef struct whisper_xbatch whisper_xbatch;
typedef struct whisper_xbatch_member whisper_xbatch_member;

/** A batcher over src's weights (src must outlive it; shares of src step here) for up to
 *  max_members members and max_rows decoder rows per group step in all (a member whose step
 *  alone has more rows runs it by itself, on its own pool), stepping on a pool of n_threads
 *  threads that it owns. Errors: STENO_E_INVALID_ARG, STENO_E_NOMEM. */
steno_status whisper_xbatch_create(const whisper_fast *src, int n_threads, int max_members, int max_rows,
                                   whisper_xbatch **out);
/** The server's set-up: a batcher for the Whisper states ws[0..n-1] of w (each state's decoders
 *  step here from now on, as member i), stepping on n_threads threads, up to 8 rows per member
 *  in a step. *out = NULL (and STENO_OK) when w has no fast path (--path faithful: nothing to
 *  batch). Free the states before the batcher (their hooks point into it), and the batcher
 *  before w. Errors: those of whisper_xbatch_create. */
steno_status whisper_xbatch_attach(const steno_whisper *w, steno_whisper_state *const *ws, int n, int n_threads,
                                   whisper_xbatch **out);

/** Frees it; no member may be stepping. */
void whisper_xbatch_free(whisper_xbatch *x);

/** Member i (0..max_members-1); a member is used by one thread at a time. */
whisper_xbatch_member *whisper_xbatch_member_at(whisper_xbatch *x, int i);

/** The step hook (fast.h whisper_fast_step_hook) of a member: ctx is its whisper_xbatch_member.
 *  Install it with whisper_fast_set_step_hook on the member's whisper_fast share (or on one
 *  decoder). Blocks until the step has run; fills logits [B][n_vocab] exactly as
 *  whisper_fast_decoder_step_rows (B rows) or an unscreened whisper_fast_decoder_forward of one
 *  token would. Errors: those of whisper_fast_group_step (the message of the failed step). */
steno_status whisper_xbatch_step(void *member, whisper_fast_decoder *d, const int *tokens, int B, float *logits);

/** The member will not step for a while (its request ended): rounds stop waiting for it at once.
 *  Its next step joins again. Thread-safe. */
void whisper_xbatch_leave(whisper_xbatch_member *mb);

/** The encoder hook (fast.h whisper_fast_encode_hook) of a member: ctx is its
 *  whisper_xbatch_member. Runs the pass on the batcher's pool, one pass at a time and never
 *  during a group step; xa is exactly whisper_fast_encode's. Errors: those of whisper_fast_encode. */
steno_status whisper_xbatch_encode(void *member, const float *mel, float *xa);

/** Counters since creation (benchmarks, tests, /metrics). */
typedef struct whisper_xbatch_counters {
    long steps;            /* group steps run */
    long rows;             /* rows stepped in them in all */
    long timed_out;        /* steps whose round closed on the bound, not on every running member */
    long encodes;          /* encoder passes run */
    double step_seconds;   /* seconds spent in the group steps */
    double encode_seconds; /* and in the encoder passes */
} whisper_xbatch_counters;
/** Thread-safe. */
void whisper_xbatch_stats(whisper_xbatch *x, whisper_xbatch_counters *c);

#endif
