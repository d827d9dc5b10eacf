/* verdict.h — the process's memory of what adaptive speculation measured (cost.h): a
 * small table from what sets a drafter's costs (a key of STENO_SPEC_VKEY ints: the model's shape
 * and weights, the drafter, the thread count, ...; the caller's choice, its first int naming the
 * caller's domain so that Whisper's and the LLM's keys never meet) to the costs and acceptance last
 * recorded under it. A process that decodes many requests (a directory of audio files, a server,
 * the turns of `steno chat`) then times a drafter once instead of paying its probe rounds in every
 * request, and does not probe again one that was judged unable to pay. Speed only: never a token.
 * Thread-safe (one mutex); 32 entries, the last one replaced when full. */
#ifndef STENO_CORE_SPEC_VERDICT_H
#define STENO_CORE_SPEC_VERDICT_H

#include "spec/cost.h"

#define STENO_SPEC_VKEY 12
#define STENO_SPEC_VERDICT_WHISPER 0x57 /* key[0] of whisper/decoder/spec/spec.c */
#define STENO_SPEC_VERDICT_LLM 0x4c     /* key[0] of llm/spec/speculative.c */

/** Copies the costs recorded under key into *out: 1, or 0 (nothing recorded, *out unchanged). */
int steno_spec_verdict_get(const int key[STENO_SPEC_VKEY], steno_spec_cost *out);
/** Records c under key (replacing what was there). */
void steno_spec_verdict_put(const int key[STENO_SPEC_VKEY], const steno_spec_cost *c);
/** Forgets every entry (tests). */
void steno_spec_verdict_clear(void);

#endif
