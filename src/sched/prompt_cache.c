/* prompt_cache.c — the token trie and LRU of saved LLM states (see prompt_cache.h). */
#include "sched/prompt_cache_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* A radix-tree node: the edge from its parent carries lab[0..nlab); children start with distinct
 * tokens. A node with no entry has at least two children (runs are merged), except the root. */
struct pc_node {
    int *lab;
    int nlab;
    pc_node **kid;
    int nkid, capkid;
    pc_node *parent;
    pc_entry *e;
};

void pc_log(const prompt_cache *pc, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (pc->p.log) pc->p.log(pc->p.log_user, msg);
    else fprintf(stderr, "steno: %s\n", msg);
}

size_t pc_entry_cost(const pc_entry *e) { return e->state_bytes + sizeof(int) * (size_t)e->n + sizeof *e + 64; }

static void entry_free(pc_entry *e) {
    if (!e) return;
    free(e->tokens);
    free(e->state);
    free(e);
}

/* ----------------------------------------------------------------------------------- the trie */

static pc_node *node_new(const int *lab, int nlab, pc_node *parent) {
    pc_node *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    if (nlab > 0) {
        n->lab = malloc(sizeof(int) * (size_t)nlab);
        if (!n->lab) {
            free(n);
            return NULL;
        }
        memcpy(n->lab, lab, sizeof(int) * (size_t)nlab);
    }
    n->nlab = nlab;
    n->parent = parent;
    return n;
}

static int add_kid(pc_node *n, pc_node *k) {
    if (n->nkid == n->capkid) {
        const int cap = n->capkid ? 2 * n->capkid : 2;
        pc_node **a = realloc(n->kid, sizeof *a * (size_t)cap);
        if (!a) return -1;
        n->kid = a;
        n->capkid = cap;
    }
    n->kid[n->nkid++] = k;
    k->parent = n;
    return 0;
}

static pc_node *find_kid(const pc_node *n, int tok) {
    for (int i = 0; i < n->nkid; i++)
        if (n->kid[i]->lab[0] == tok) return n->kid[i];
    return NULL;
}

static void replace_kid(pc_node *n, pc_node *old, pc_node *nw) {
    for (int i = 0; i < n->nkid; i++)
        if (n->kid[i] == old) {
            n->kid[i] = nw;
            nw->parent = n;
            return;
        }
}

static void remove_kid(pc_node *n, pc_node *k) {
    for (int i = 0; i < n->nkid; i++)
        if (n->kid[i] == k) {
            n->kid[i] = n->kid[--n->nkid];
            return;
        }
}

static void node_free_tree(pc_node *n) {
    if (!n) return;
    for (int i = 0; i < n->nkid; i++) node_free_tree(n->kid[i]);
    free(n->kid);
    free(n->lab);
    free(n);
}

/* The node where tokens[0..n) ends, created (splitting an edge) if needed; NULL when out of memory. */
static pc_node *trie_place(pc_node *root, const int *tokens, int n) {
    pc_node *cur = root;
    int i = 0;
    while (i < n) {
        pc_node *k = find_kid(cur, tokens[i]);
        if (!k) {
            pc_node *leaf = node_new(tokens + i, n - i, cur);
            if (!leaf || add_kid(cur, leaf) != 0) {
                node_free_tree(leaf);
                return NULL;
            }
            return leaf;
        }
        int m = 1;
        while (m < k->nlab && i + m < n && k->lab[m] == tokens[i + m]) m++;
        if (m < k->nlab) { /* split k's edge after m tokens */
            pc_node *mid = node_new(k->lab, m, cur);
            int *rest = malloc(sizeof(int) * (size_t)(k->nlab - m));
            if (!mid || !rest) {
                node_free_tree(mid);
                free(rest);
                return NULL;
            }
            memcpy(rest, k->lab + m, sizeof(int) * (size_t)(k->nlab - m));
            if (add_kid(mid, k) != 0) {
                node_free_tree(mid);
                free(rest);
                return NULL;
            }
            replace_kid(cur, k, mid);
            k->parent = mid;
            free(k->lab);
            k->lab = rest;
            k->nlab -= m;
        }
        cur = find_kid(cur, tokens[i]);
        i += m;
    }
    return cur;
}

/* After n lost its entry: drops empty leaves and merges single-child runs upwards. */
static void trie_prune(pc_node *root, pc_node *n) {
    while (n != root && !n->e && n->nkid == 0) {
        pc_node *p = n->parent;
        remove_kid(p, n);
        node_free_tree(n);
        n = p;
    }
    if (n != root && !n->e && n->nkid == 1) {
        pc_node *k = n->kid[0];
        int *lab = malloc(sizeof(int) * (size_t)(n->nlab + k->nlab));
        if (!lab) return; /* an unmerged run is still a valid trie */
        memcpy(lab, n->lab, sizeof(int) * (size_t)n->nlab);
        memcpy(lab + n->nlab, k->lab, sizeof(int) * (size_t)k->nlab);
        free(k->lab);
        k->lab = lab;
        k->nlab += n->nlab;
        replace_kid(n->parent, n, k);
        n->nkid = 0;
        node_free_tree(n);
    }
}

/* The entry under n that a prompt sharing `common` tokens with it can use (min_pos <= common),
 * the shortest first (the least to roll back). */
static pc_entry *best_under(const pc_node *n, int common, pc_entry *best) {
    if (n->e && n->e->min_pos <= common && (!best || n->e->n < best->n)) best = n->e;
    for (int i = 0; i < n->nkid; i++) best = best_under(n->kid[i], common, best);
    return best;
}

/* ------------------------------------------------------------------------------------ the LRU */

static void lru_unlink(prompt_cache *pc, pc_entry *e) {
    if (e->prev) e->prev->next = e->next;
    else pc->mru = e->next;
    if (e->next) e->next->prev = e->prev;
    else pc->lru = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push_front(prompt_cache *pc, pc_entry *e) {
    e->prev = NULL;
    e->next = pc->mru;
    if (pc->mru) pc->mru->prev = e;
    pc->mru = e;
    if (!pc->lru) pc->lru = e;
}

static void evict(prompt_cache *pc, pc_entry *e) {
    lru_unlink(pc, e);
    pc_node *n = e->node;
    n->e = NULL;
    trie_prune(pc->root, n);
    if (e->file[0]) pc_disk_remove(pc, e);
    pc->st.entries--;
    pc->st.bytes -= pc_entry_cost(e);
    pc->st.evicted++;
    entry_free(e);
}

int pc_insert(prompt_cache *pc, pc_entry *e, int from_disk) {
    const size_t cost = pc_entry_cost(e);
    if (cost > pc->p.budget_bytes) {
        entry_free(e);
        return 0;
    }
    while (pc->lru && pc->st.bytes + cost > pc->p.budget_bytes) evict(pc, pc->lru);
    pc_node *n = trie_place(pc->root, e->tokens, e->n);
    if (!n) {
        entry_free(e);
        return 0;
    }
    if (n->e) { /* the same tokens: the newer state replaces the older */
        pc_entry *old = n->e;
        lru_unlink(pc, old);
        if (old->file[0] && !(from_disk && strcmp(old->file, e->file) == 0)) pc_disk_remove(pc, old);
        pc->st.entries--;
        pc->st.bytes -= pc_entry_cost(old);
        entry_free(old);
    }
    n->e = e;
    e->node = n;
    lru_push_front(pc, e);
    pc->st.entries++;
    pc->st.bytes += cost;
    pc->st.stored++;
    if (pc->dir && !from_disk) pc_disk_write(pc, e);
    return 1;
}

/* ------------------------------------------------------------------------------------- the API */

prompt_cache *prompt_cache_new(const prompt_cache_params *p) {
    prompt_cache *pc = calloc(1, sizeof *pc);
    if (!pc) return NULL;
    pc->p = *p;
    if (pc->p.min_tokens <= 0) pc->p.min_tokens = 16;
    pc->root = node_new(NULL, 0, NULL);
    pc->config = strdup(p->config ? p->config : "");
    if (!pc->root || !pc->config || (p->dir && !(pc->dir = strdup(p->dir)))) {
        prompt_cache_free(pc);
        return NULL;
    }
    if (pc->dir) {
        if (pc_disk_init(pc) != 0) {
            prompt_cache_free(pc);
            return NULL;
        }
        pc_disk_load(pc);
    }
    return pc;
}

void prompt_cache_free(prompt_cache *pc) {
    if (!pc) return;
    for (pc_entry *e = pc->mru, *nx; e; e = nx) {
        nx = e->next;
        entry_free(e);
    }
    node_free_tree(pc->root);
    free(pc->dir);
    free(pc->config);
    free(pc);
}

int prompt_cache_store(prompt_cache *pc, const int *tokens, int n, const steno_llm_ctx *ctx) {
    if (n < pc->p.min_tokens || n != steno_llm_n_past(ctx)) return 0;
    pc_node *cur = pc->root;
    for (int i = 0; cur && i < n;) { /* already there: only mark it used */
        pc_node *k = find_kid(cur, tokens[i]);
        if (!k || k->nlab > n - i || memcmp(k->lab, tokens + i, sizeof(int) * (size_t)k->nlab) != 0) {
            cur = NULL;
            break;
        }
        i += k->nlab;
        cur = k;
    }
    if (cur && cur->e) {
        lru_unlink(pc, cur->e);
        lru_push_front(pc, cur->e);
        return 1;
    }
    const size_t size = steno_llm_state_save(ctx, NULL, 0);
    if (size + sizeof(int) * (size_t)n + sizeof(pc_entry) + 64 > pc->p.budget_bytes) return 0;
    pc_entry *e = calloc(1, sizeof *e);
    if (!e) return 0;
    e->tokens = malloc(sizeof(int) * (size_t)n);
    e->state = malloc(size);
    if (!e->tokens || !e->state || steno_llm_state_save(ctx, e->state, size) != size) {
        entry_free(e);
        return 0;
    }
    memcpy(e->tokens, tokens, sizeof(int) * (size_t)n);
    e->n = n;
    e->state_bytes = size;
    e->min_pos = steno_llm_min_rollback(ctx);
    return pc_insert(pc, e, 0);
}

int prompt_cache_restore(prompt_cache *pc, const int *prompt, int limit, int better_than, steno_llm_ctx *ctx) {
    /* walk the prompt down the trie, remembering each node reached and the tokens shared there */
    enum { MAXD = 512 };
    const pc_node *path[MAXD];
    int depth[MAXD], np = 0, d = 0;
    const pc_node *cur = pc->root;
    while (d < limit && np < MAXD) {
        const pc_node *k = find_kid(cur, prompt[d]);
        if (!k) break;
        int m = 1;
        while (m < k->nlab && d + m < limit && k->lab[m] == prompt[d + m]) m++;
        path[np] = k;
        depth[np++] = d + m;
        if (m < k->nlab) break;
        d += m;
        cur = k;
    }
    pc_entry *e = NULL;
    int common = 0;
    for (int i = np - 1; i >= 0 && depth[i] > better_than; i--)
        if ((e = best_under(path[i], depth[i], NULL))) {
            common = depth[i];
            break;
        }
    if (!e) {
        pc->st.misses++;
        return 0;
    }
    if (steno_llm_state_load(ctx, e->state, e->state_bytes) != STENO_OK ||
        (steno_llm_n_past(ctx) != e->n && steno_fail(STENO_E_FORMAT, "it holds %d tokens", steno_llm_n_past(ctx))) ||
        steno_llm_rollback(ctx, e->n - common) != STENO_OK) {
        pc_log(pc, "prompt cache: an entry of %d tokens could not be restored (%s); dropped", e->n, steno_errmsg());
        steno_llm_reset(ctx);
        evict(pc, e);
        pc->st.misses++;
        return 0;
    }
    lru_unlink(pc, e);
    lru_push_front(pc, e);
    pc->st.hits++;
    return common;
}

void prompt_cache_get_stats(const prompt_cache *pc, prompt_cache_stats *st) { *st = pc->st; }
