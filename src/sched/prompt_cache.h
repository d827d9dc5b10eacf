/* prompt_cache.h — saved LLM states keyed by their token prefixes (the server's prompt cache).
 *
 * An entry is a context's state (steno_llm_state_save: every layer's KV rows as stored, key
 * centers, sinks) after n tokens, kept with those tokens. Entries sit in a token trie (a radix
 * tree over token ids, one node per shared run), so that the entry sharing the longest prefix with
 * a new prompt is found by one walk down the prompt; a byte budget evicts the least recently used
 * entries. Restoring an entry and rolling it back to the shared prefix gives the context exactly
 * the caches it would have after evaluating that prefix (llama-server's prompt cache and
 * `--cache-reuse`, vLLM's automatic prefix caching by blocks). Sliding-window layers (Gemma 3) hold
 * only their ring — the window plus kv_reserve tokens — so an entry of n tokens serves prompts that
 * share at least its min_pos (steno_llm_min_rollback) of them; a plain-cache model's entry serves
 * any shared prefix.
 *
 * Persistence (dir != NULL): every entry is also a file <dir>/<key>.safetensors — tensors
 * "tokens" (I32 [n]) and "state" (U8 [bytes]), and a header whose __metadata__ names the format,
 * the model's SHA-256, the cache configuration (steno_llm_state_config), the token ids and the
 * state's SHA-256. prompt_cache_new loads the directory's files, newest first, within the budget;
 * a file whose header does not match this model and configuration, or whose state does not verify,
 * is ignored with a log line, never used. Evicting an entry deletes its file.
 *
 * Thread-safety: none; the batch engine's thread is the only user (the counters are read with
 * prompt_cache_stats under the caller's own lock if needed). */
#ifndef STENO_SCHED_PROMPT_CACHE_H
#define STENO_SCHED_PROMPT_CACHE_H

#include <stddef.h>

#include "steno_llm.h"

typedef struct prompt_cache prompt_cache;

typedef struct prompt_cache_params {
    size_t budget_bytes;    /* RAM for entries (states + tokens); 0 disables the cache */
    const char *dir;        /* persistence directory, or NULL */
    const char *model_path; /* hashed (SHA-256) to name the model in the files; needed with dir */
    const char *config;     /* steno_llm_state_config of the contexts served */
    int min_tokens;         /* shorter states are not kept (<= 0: 16) */
    void (*log)(void *user, const char *msg); /* one line per event worth an operator's eye */
    void *log_user;
} prompt_cache_params;

/** Creates the cache and loads dir's entries (see above). NULL when out of memory, or when dir is
 *  set and cannot be created or the model cannot be hashed (logged). */
prompt_cache *prompt_cache_new(const prompt_cache_params *p);
void prompt_cache_free(prompt_cache *pc);

/** Keeps a copy of ctx's state as the entry for tokens[0..n) (n = steno_llm_n_past(ctx)),
 *  evicting least recently used entries to fit the budget. An entry with the same tokens is only
 *  marked used. Returns 1 when stored (or already there), 0 when not kept (too short, larger than
 *  the budget, out of memory). */
int prompt_cache_store(prompt_cache *pc, const int *tokens, int n, const steno_llm_ctx *ctx);

/** Restores into ctx the entry that shares the longest usable prefix with prompt[0..limit) and
 *  rolls ctx back to that prefix. Returns the prefix length (ctx holds exactly those tokens; their
 *  ids are prompt[0..len)), or 0 when no entry shares at least `better_than` + 1 tokens (ctx is
 *  then untouched) or the restore failed (ctx is reset; logged). */
int prompt_cache_restore(prompt_cache *pc, const int *prompt, int limit, int better_than, steno_llm_ctx *ctx);

typedef struct prompt_cache_stats {
    int entries;
    size_t bytes;
    unsigned long long hits, misses, stored, evicted;
} prompt_cache_stats;
void prompt_cache_get_stats(const prompt_cache *pc, prompt_cache_stats *st);

#endif
