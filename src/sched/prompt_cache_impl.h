/* prompt_cache_impl.h — what prompt_cache.c (trie, LRU) and prompt_cache_disk.c (files) share. */
#ifndef STENO_SCHED_PROMPT_CACHE_IMPL_H
#define STENO_SCHED_PROMPT_CACHE_IMPL_H

#include <stdint.h>

#include "sched/prompt_cache.h"

typedef struct pc_node pc_node;

typedef struct pc_entry {
    int *tokens;
    int n;
    uint8_t *state;
    size_t state_bytes;
    int min_pos;                  /* steno_llm_min_rollback of the saved context */
    pc_node *node;                /* where the entry ends in the trie */
    struct pc_entry *prev, *next; /* LRU list, most recent first */
    char file[80];                /* "<key>.safetensors" when persisted, else "" */
} pc_entry;

struct prompt_cache {
    prompt_cache_params p;
    char *dir, *config;
    char model_sha256[65];
    pc_node *root;
    pc_entry *mru, *lru;
    prompt_cache_stats st;
};

/** Bytes an entry counts against the budget. */
size_t pc_entry_cost(const pc_entry *e);
/** Takes ownership of e (tokens, state): inserts it as the most recently used entry, evicting others
 *  to fit; frees it and returns 0 when it cannot fit. from_disk: its file exists already. */
int pc_insert(prompt_cache *pc, pc_entry *e, int from_disk);
void pc_log(const prompt_cache *pc, const char *fmt, ...);

/** prompt_cache_disk.c: the model's hash, writing and deleting an entry's file, loading a
 *  directory. 0 / -1 (logged). */
int pc_disk_init(prompt_cache *pc);
int pc_disk_write(prompt_cache *pc, pc_entry *e);
void pc_disk_remove(prompt_cache *pc, const pc_entry *e);
void pc_disk_load(prompt_cache *pc);

#endif
