/* backoff.h — the longer pauses of the adaptive draft length, shared by the one-request loop
 * (speculative.c) and the server's batched rows (sched/generate_job.c).
 *
 * steno_spec_len_update pauses drafting for 16 tokens when rounds keep failing, then tries again
 * with one-token drafts. A drafter that keeps failing after its pauses (an early exit or a draft
 * model that rarely agrees, a text with nothing to look up: counting "1, 2, 3, …" gives the lookup
 * two-token matches whose continuations never hold) pauses twice as long each time, up to 512
 * tokens: each retry costs a draft and a wider verify pass. An accepted draft resets it. Never
 * changes a token, only which rounds draft. Not thread-safe: one per decoding loop or row. */
#ifndef STENO_LLM_SPEC_BACKOFF_H
#define STENO_LLM_SPEC_BACKOFF_H

#include "steno_llm.h"

#define STENO_SPEC_BACKOFF_FIRST 16

/** After steno_spec_len_update for a round in which `accepted` drafts held; *backoff starts at
 *  STENO_SPEC_BACKOFF_FIRST. */
static inline void steno_spec_backoff(steno_spec_len *s, int *backoff, int accepted) {
    if (accepted > 0) *backoff = STENO_SPEC_BACKOFF_FIRST;
    else if (s->pause == STENO_SPEC_BACKOFF_FIRST && s->k == 0) { /* a pause just began */
        s->pause = *backoff;
        *backoff = *backoff < 256 ? 2 * *backoff : 512;
    }
}

#endif
