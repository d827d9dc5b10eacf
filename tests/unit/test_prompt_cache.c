/* test_prompt_cache.c — the prompt cache (src/sched/prompt_cache.c) on stories260K.
 *
 * 1. Trie: a fixed-seed run stores the states of token sequences drawn from a few shared stems
 *    (so that edges split and merge) under a byte budget that evicts, and looks up random prompts.
 *    Each lookup must return exactly the longest prefix a brute-force scan of the live entries
 *    finds (an entry of n tokens serves a prompt sharing c of them when c >= its min position
 *    and c < the lookup's limit), and the restored context must give the next token's logits
 *    bit-identical to evaluating the prompt's prefix from scratch.
 * 2. Sliding windows: the same with a rotating cache (--max-kv-size 24 --keep 2, reserve 4), where
 *    an entry only serves prompts that share nearly all of it.
 * 3. Persistence: entries written to a directory load into a new cache and restore bit-identically;
 *    a truncated file, a file of another configuration, one with a flipped state byte, a
 *    stranger's file, a directory named *.safetensors and a newest file larger than the whole
 *    budget are each ignored with a log line naming the file and the reason, and the rest load.
 * The model directory: $STENO_SHARED/models/stories260K. */
#include <dirent.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/prompt_cache.h"
#include "steno_llm.h"
#include "test_util.h"
#include "rng.h"

enum { MAXN = 96, NSEQ = 200 };

static uint32_t g_seed = 5;
static int rnd(int n) { return (int)((rng_lcg_ansi(&g_seed) >> 8) % (uint32_t)n); }

typedef struct {
    int tok[MAXN];
    int n, min_pos, live;
} seq;

static seq g_seqs[NSEQ]; /* every sequence stored in a run, in order */
static int g_nseq;
static char g_log[64][512];
static int g_nlog;

static void logger(void *user, const char *msg) {
    (void)user;
    if (g_nlog < 64) snprintf(g_log[g_nlog++], sizeof g_log[0], "%s", msg);
    printf("  log: %s\n", msg);
}

static void make_seq(seq *s, const int stems[4][MAXN]) {
    const int *stem = stems[rnd(4)];
    s->n = 20 + rnd(MAXN - 20);
    const int share = rnd(s->n);
    for (int i = 0; i < s->n; i++) s->tok[i] = i < share ? stem[i] : 1 + rnd(500);
}

/* The logits after tokens[0..n) evaluated from scratch on a fresh context. */
static void fresh_logits(steno_llm *m, const steno_llm_ctx_params *cp, const int *tokens, int n, float *out) {
    steno_llm_ctx *c;
    CHECK(steno_llm_ctx_new(m, cp, &c) == STENO_OK, "%s", steno_errmsg());
    CHECK(steno_llm_eval(c, tokens, n, out, 0) == STENO_OK, "%s", steno_errmsg());
    steno_llm_ctx_free(c);
}

static int common_prefix(const int *a, int na, const int *b, int nb) {
    int c = 0;
    while (c < na && c < nb && a[c] == b[c]) c++;
    return c;
}

static void trie_run(steno_llm *m, const steno_llm_ctx_params *cp, const char *name, size_t budget) {
    int stems[4][MAXN];
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < MAXN; i++) stems[s][i] = 1 + rnd(500);
    steno_llm_ctx *c, *probe;
    CHECK(steno_llm_ctx_new(m, cp, &c) == STENO_OK && steno_llm_ctx_new(m, cp, &probe) == STENO_OK, "%s", steno_errmsg());
    char cfg[4096];
    steno_llm_state_config(c, cfg, sizeof cfg);
    prompt_cache_params pp = {budget, NULL, NULL, cfg, 4, logger, NULL};
    prompt_cache *pc = prompt_cache_new(&pp);
    CHECK(pc != NULL, "prompt_cache_new");
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    float *want = malloc(sizeof(float) * (size_t)info.n_vocab), *got = malloc(sizeof(float) * (size_t)info.n_vocab);
    int lookups = 0, hits = 0, exact = 0;
    g_nseq = 0;
    for (int it = 0; it < 160; it++) {
        if (rnd(3) == 0 && g_nseq < NSEQ) { /* store a new sequence's state */
            seq *s = &g_seqs[g_nseq++];
            make_seq(s, stems);
            steno_llm_reset(c);
            CHECK(steno_llm_eval(c, s->tok, s->n, NULL, 0) == STENO_OK, "%s", steno_errmsg());
            s->min_pos = steno_llm_min_rollback(c);
            for (int k = 0; k < g_nseq; k++) /* the same tokens replace an entry */
                if (&g_seqs[k] != s && g_seqs[k].live && g_seqs[k].n == s->n &&
                    !memcmp(g_seqs[k].tok, s->tok, sizeof(int) * (size_t)s->n))
                    g_seqs[k].live = 0;
            s->live = prompt_cache_store(pc, s->tok, s->n, c);
            continue;
        }
        /* a prompt: a live sequence's prefix plus new tokens, or a stem's */
        int prompt[MAXN + 8], np;
        const seq *base = g_nseq ? &g_seqs[rnd(g_nseq)] : NULL;
        if (base && rnd(4)) {
            np = 1 + rnd(base->n);
            memcpy(prompt, base->tok, sizeof(int) * (size_t)np);
        } else {
            np = 1 + rnd(MAXN);
            memcpy(prompt, stems[rnd(4)], sizeof(int) * (size_t)np);
        }
        const int extra = rnd(8);
        for (int i = 0; i < extra; i++) prompt[np++] = 1 + rnd(500);
        const int limit = np - 1 > 0 ? np - 1 : 1;
        const int better = rnd(4) == 0 ? rnd(limit) : 0;
        /* brute force over the entries the cache must still hold (evicted ones may be gone: the
         * answer must be at least the best among those known live and at most the best of all) */
        int best_all = 0;
        for (int k = 0; k < g_nseq; k++) {
            const seq *s = &g_seqs[k];
            int cm = common_prefix(s->tok, s->n, prompt, limit);
            if (cm >= s->min_pos && cm > best_all && s->live) best_all = cm;
        }
        steno_llm_reset(probe);
        const int r = prompt_cache_restore(pc, prompt, limit, better, probe);
        lookups++;
        prompt_cache_stats st;
        prompt_cache_get_stats(pc, &st);
        if (r > 0) {
            hits++;
            CHECK(r > better && r <= limit, "%s: restored %d (better than %d, limit %d)", name, r, better, limit);
            CHECK(steno_llm_n_past(probe) == r, "%s: context holds %d, restore said %d", name, steno_llm_n_past(probe), r);
            /* the next token's logits equal the uncached evaluation's */
            CHECK(steno_llm_eval(probe, prompt + r, 1, got, 0) == STENO_OK, "%s", steno_errmsg());
            fresh_logits(m, cp, prompt, r + 1, want);
            CHECK(memcmp(got, want, sizeof(float) * (size_t)info.n_vocab) == 0,
                  "%s: lookup %d: logits after restoring %d tokens differ from the uncached run", name, lookups, r);
        }
        /* every live entry was kept unless evicted; what the cache returns is the longest usable */
        if (best_all > better) {
            CHECK(r <= best_all || st.evicted > 0, "%s: restored %d, longer than any entry shares (%d)", name, r, best_all);
            if (st.evicted == 0) CHECK(r == best_all, "%s: restored %d, the best entry shares %d", name, r, best_all);
            exact += r == best_all;
        } else {
            CHECK(r == 0, "%s: restored %d, no entry shares more than %d", name, r, better);
        }
    }
    prompt_cache_stats st;
    prompt_cache_get_stats(pc, &st);
    printf("%-28s %d lookups, %d hits (%d the brute-force best), %d entries / %zu bytes kept, %llu stored, %llu evicted\n",
           name, lookups, hits, exact, st.entries, st.bytes, st.stored, st.evicted);
    CHECK(hits > 10, "%s: too few hits to test anything", name);
    CHECK(st.bytes <= budget, "%s: %zu bytes held over the budget of %zu", name, st.bytes, budget);
    prompt_cache_free(pc);
    steno_llm_ctx_free(c);
    steno_llm_ctx_free(probe);
    free(want);
    free(got);
}

static int log_has(const char *a, const char *b) {
    for (int i = 0; i < g_nlog; i++)
        if (strstr(g_log[i], a) && strstr(g_log[i], b)) return 1;
    return 0;
}

static void persistence(steno_llm *m, const steno_llm_ctx_params *cp, const char *model_path) {
    char dir[] = "/tmp/steno-pc-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    steno_llm_ctx *c;
    CHECK(steno_llm_ctx_new(m, cp, &c) == STENO_OK, "%s", steno_errmsg());
    char cfg[4096];
    steno_llm_state_config(c, cfg, sizeof cfg);
    prompt_cache_params pp = {1 << 26, dir, model_path, cfg, 4, logger, NULL};
    prompt_cache *pc = prompt_cache_new(&pp);
    int toks[4][40];
    for (int s = 0; s < 4; s++) {
        for (int i = 0; i < 40; i++) toks[s][i] = 1 + rnd(500);
        steno_llm_reset(c);
        CHECK(steno_llm_eval(c, toks[s], 40, NULL, 0) == STENO_OK, "%s", steno_errmsg());
        CHECK(prompt_cache_store(pc, toks[s], 40, c) == 1, "store %d", s);
    }
    prompt_cache_free(pc);
    /* damage three of the four files; add a stranger */
    char names[8][300];
    int nf = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strstr(de->d_name, ".safetensors") && nf < 8) snprintf(names[nf++], sizeof names[0], "%s/%s", dir, de->d_name);
    if (d) closedir(d);
    CHECK(nf == 4, "%d files written, expected 4", nf);
    if (nf == 4) {
        CHECK(truncate(names[0], 1000) == 0, "truncate");
        FILE *f = fopen(names[1], "r+b"); /* the last state byte */
        fseek(f, -1, SEEK_END);
        int ch = fgetc(f);
        fseek(f, -1, SEEK_END);
        fputc(ch ^ 0x40, f);
        fclose(f);
    }
    char stranger[400];
    snprintf(stranger, sizeof stranger, "%s/stranger.safetensors", dir);
    FILE *f = fopen(stranger, "wb");
    static const char junk[] = "\x10\0\0\0\0\0\0\0{\"a\":1}         ";
    fwrite(junk, 1, sizeof junk - 1, f);
    fclose(f);
    /* the newest file, larger than the whole budget: skipped, and the older ones still load */
    char big[400];
    snprintf(big, sizeof big, "%s/big.safetensors", dir);
    f = fopen(big, "wb");
    fclose(f);
    CHECK(truncate(big, (off_t)pp.budget_bytes + 4096) == 0, "truncate");
    char sub[400];
    snprintf(sub, sizeof sub, "%s/sub.safetensors", dir);
    mkdir(sub, 0755);
    /* a header length and nothing else (fuzz_prompt_cache's find: read one byte past the end) */
    char eight[400];
    snprintf(eight, sizeof eight, "%s/eight.safetensors", dir);
    f = fopen(eight, "wb");
    fwrite("\xff\xff`1@\0\0\0", 1, 8, f);
    fclose(f);
    g_nlog = 0;
    pc = prompt_cache_new(&pp);
    CHECK(pc != NULL, "reload");
    CHECK(log_has("big.safetensors", "ignoring"), "no log line for the file over the budget");
    CHECK(log_has("sub.safetensors", "not a regular file"), "no log line for the directory");
    CHECK(log_has("eight.safetensors", "not a steno prompt-cache file"), "no log line for the 8-byte file");
    unlink(eight);
    unlink(big);
    rmdir(sub);
    prompt_cache_stats st;
    prompt_cache_get_stats(pc, &st);
    CHECK(st.entries == 2, "%d entries reloaded, expected the 2 undamaged ones", st.entries);
    CHECK(log_has(names[0] + strlen(dir) + 1, "truncated"), "no log line for the truncated file");
    CHECK(log_has(names[1] + strlen(dir) + 1, "does not verify"), "no log line for the damaged state");
    CHECK(log_has("stranger.safetensors", "not a steno prompt-cache file"), "no log line for the stranger");
    /* a reloaded entry restores bit-identically */
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    float *want = malloc(sizeof(float) * (size_t)info.n_vocab), *got = malloc(sizeof(float) * (size_t)info.n_vocab);
    int restored = 0;
    for (int s = 0; s < 4; s++) {
        steno_llm_reset(c);
        const int r = prompt_cache_restore(pc, toks[s], 30, 0, c);
        if (!r) continue;
        restored++;
        CHECK(r == 30, "restored %d of 30", r);
        CHECK(steno_llm_eval(c, toks[s] + 30, 1, got, 0) == STENO_OK, "%s", steno_errmsg());
        fresh_logits(m, cp, toks[s], 31, want);
        CHECK(memcmp(got, want, sizeof(float) * (size_t)info.n_vocab) == 0, "reloaded entry %d: logits differ", s);
    }
    CHECK(restored == 2, "%d reloaded entries restored, expected 2", restored);
    prompt_cache_free(pc);
    /* another configuration ignores every file */
    steno_llm_ctx_params cp2 = *cp;
    cp2.kv_type = STENO_KV_F16;
    steno_llm_ctx *c2;
    CHECK(steno_llm_ctx_new(m, &cp2, &c2) == STENO_OK, "%s", steno_errmsg());
    steno_llm_state_config(c2, cfg, sizeof cfg);
    g_nlog = 0;
    pc = prompt_cache_new(&pp);
    prompt_cache_get_stats(pc, &st);
    CHECK(st.entries == 0 && log_has("", "another KV-cache configuration"), "a foreign configuration's files were used");
    prompt_cache_free(pc);
    steno_llm_ctx_free(c2);
    printf("persistence: 4 written, 2 damaged + 1 stranger ignored with log lines, 2 restored bit-identically\n");
    /* clean up */
    d = opendir(dir);
    char p[700];
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
    if (d) closedir(d);
    rmdir(dir);
    free(want);
    free(got);
    steno_llm_ctx_free(c);
}

int main(void) {
    const char *sh = getenv("STENO_SHARED");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/stories260K/stories260K.bin", sh && *sh ? sh : "../shared");
    steno_llm *m;
    if (steno_llm_load(path, NULL, &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        return 1;
    }
    steno_llm_ctx_params cp = steno_llm_ctx_default_params();
    cp.n_threads = 1;
    cp.n_batch = 16;
    size_t bpt;
    steno_llm_ctx *c;
    steno_llm_ctx_new(m, &cp, &c);
    steno_llm_kv_usage(c, &bpt, NULL);
    steno_llm_ctx_free(c);
    /* room for about a dozen entries: the run stores more, so the LRU evicts */
    trie_run(m, &cp, "plain cache", 12 * 60 * bpt);
    trie_run(m, &cp, "plain cache, no eviction", (size_t)1 << 28);
    steno_llm_ctx_params rp = cp;
    rp.max_kv_size = 24;
    rp.keep = 2;
    rp.kv_reserve = 4;
    trie_run(m, &rp, "rotating 24 keep 2", (size_t)1 << 28);
    persistence(m, &cp, path);
    steno_llm_free(m);
    printf("%d checks, %d failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
