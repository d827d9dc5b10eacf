/* fuzz_prompt_cache.c — libFuzzer target for the prompt cache's untrusted bytes: saved LLM states
 * (steno_llm_state_load → steno_kv_restore, every cache kind's snapshot parser) and the
 * safetensors entry files a --prompt-cache-dir holds (prompt_cache_new's loader).
 *
 * The first byte picks what the rest is:
 *   0, 1, 2  a state for a stories260K context — plain f32, rotating (--max-kv-size 16 --keep 2,
 *            reserve 4), plain f16 — loaded (stories260K's head_dim 8 cannot be quantized: the
 *            quantized snapshots' fields are covered by tests/unit/test_kv_snapshot.c's damage test);
 *            it must load (STENO_OK: the context then evaluates a token and saves a state that
 *            loads again) or be refused with STENO_E_FORMAT leaving an empty, usable context;
 *   3        an entry file in a directory, loaded by prompt_cache_new (a fixed model file hashed,
 *            the plain context's configuration): at most one entry, no crash, every refusal logged;
 *            a loaded entry is then restored into the plain context (which must stay usable).
 * Seeds: FUZZ_PROMPT_CACHE_SEED_DIR=dir writes a valid state of each kind and a valid entry file
 * there at start-up (scripts/fuzz_smoke.sh does). Run: scripts/fuzz.sh prompt_cache 10 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sched/prompt_cache.h"
#include "steno_llm.h"

#ifndef STENO_FUZZ_DEFAULT_MODEL
#define STENO_FUZZ_DEFAULT_MODEL "../shared/models/stories260K/stories260K.bin"
#endif

static steno_llm *g_m;
static steno_llm_ctx *g_ctx[3];
static char g_dir[64], g_model[128], g_cfg[4096];
static int g_logged;

static void quiet(void *user, const char *msg) {
    (void)user;
    (void)msg;
    g_logged++;
}

static void write_file(const char *path, const uint8_t *d, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f) != 0) abort();
}

static void usable(steno_llm_ctx *c) {
    const int tok = 5;
    if (steno_llm_n_past(c) + 1 >= 256) steno_llm_reset(c);
    if (steno_llm_eval(c, &tok, 1, NULL, 0) != STENO_OK) abort();
}

static void cleanup(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s.model", g_dir, g_dir);
    if (g_dir[0] && system(cmd) != 0) fprintf(stderr, "fuzz_prompt_cache: could not remove %s\n", g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *path = getenv("STENO_FUZZ_MODEL");
    if (steno_llm_load(path ? path : STENO_FUZZ_DEFAULT_MODEL, NULL, &g_m) != STENO_OK) {
        fprintf(stderr, "fuzz_prompt_cache: %s (set STENO_FUZZ_MODEL to stories260K.bin)\n", steno_errmsg());
        abort();
    }
    for (int k = 0; k < 3; k++) {
        steno_llm_ctx_params p = steno_llm_ctx_default_params();
        p.n_threads = 1;
        p.n_ctx = 256;
        p.n_batch = 16;
        if (k == 1) p.max_kv_size = 16, p.keep = 2, p.kv_reserve = 4;
        if (k == 2) p.kv_type = STENO_KV_F16;
        if (steno_llm_ctx_new(g_m, &p, &g_ctx[k]) != STENO_OK) {
            fprintf(stderr, "fuzz_prompt_cache: context %d: %s\n", k, steno_errmsg());
            abort();
        }
    }
    steno_llm_state_config(g_ctx[0], g_cfg, sizeof g_cfg);
    snprintf(g_dir, sizeof g_dir, "/tmp/steno-fuzz-pc-%ld", (long)getpid());
    mkdir(g_dir, 0700);
    atexit(cleanup);
    snprintf(g_model, sizeof g_model, "%s.model", g_dir);
    write_file(g_model, (const uint8_t *)"steno fuzz model\n", 17);
    const char *seeds = getenv("FUZZ_PROMPT_CACHE_SEED_DIR");
    if (seeds) {
        int toks[40];
        for (int i = 0; i < 40; i++) toks[i] = 1 + (i * 37) % 500;
        char p[4200];
        for (int k = 0; k < 3; k++) { /* a state of each kind, 40 tokens (the ring has wrapped) */
            steno_llm_reset(g_ctx[k]);
            if (steno_llm_eval(g_ctx[k], toks, 40, NULL, 0) != STENO_OK) abort();
            const size_t n = steno_llm_state_save(g_ctx[k], NULL, 0);
            uint8_t *b = malloc(n + 1);
            b[0] = (uint8_t)k;
            steno_llm_state_save(g_ctx[k], b + 1, n);
            snprintf(p, sizeof p, "%s/state_%d", seeds, k);
            write_file(p, b, n + 1);
            free(b);
            steno_llm_reset(g_ctx[k]);
        }
        /* an entry file: stored through the cache itself, then prefixed with the selector */
        char d[4200];
        snprintf(d, sizeof d, "%s.seed", g_dir);
        prompt_cache_params pp = {1 << 24, d, g_model, g_cfg, 4, quiet, NULL};
        prompt_cache *pc = prompt_cache_new(&pp);
        steno_llm_eval(g_ctx[0], toks, 20, NULL, 0);
        prompt_cache_store(pc, toks, 20, g_ctx[0]);
        prompt_cache_free(pc);
        steno_llm_reset(g_ctx[0]);
        char cmd[9000];
        snprintf(cmd, sizeof cmd, "f=$(ls %s/*.safetensors | head -1) && { printf '\\003'; cat \"$f\"; } > %s/entry && rm -rf %s",
                 d, seeds, d);
        if (system(cmd) != 0) abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int kind = data[0] % 4;
    if (kind < 3) {
        steno_llm_ctx *c = g_ctx[kind];
        const steno_status st = steno_llm_state_load(c, data + 1, size - 1);
        if (st == STENO_OK) {
            usable(c);
            const size_t n = steno_llm_state_save(c, NULL, 0);
            uint8_t *b = malloc(n);
            if (steno_llm_state_save(c, b, n) != n || steno_llm_state_load(c, b, n) != STENO_OK) abort();
            free(b);
        } else {
            if (st != STENO_E_FORMAT && st != STENO_E_NOMEM) abort();
            if (steno_llm_n_past(c) != 0) abort();
            usable(c);
        }
        steno_llm_reset(c);
        return 0;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/entry.safetensors", g_dir);
    write_file(path, data + 1, size - 1);
    g_logged = 0;
    prompt_cache_params pp = {1 << 24, g_dir, g_model, g_cfg, 4, quiet, NULL};
    prompt_cache *pc = prompt_cache_new(&pp);
    if (!pc) abort();
    prompt_cache_stats st;
    prompt_cache_get_stats(pc, &st);
    if (st.entries > 1 || (st.entries == 0 && g_logged == 0)) abort(); /* a refusal is always logged */
    if (st.entries == 1) { /* restore it with a prompt of its own tokens: any prefix */
        int toks[40];
        for (int i = 0; i < 40; i++) toks[i] = 1 + (i * 37) % 500;
        steno_llm_reset(g_ctx[0]);
        prompt_cache_restore(pc, toks, 39, 0, g_ctx[0]);
        usable(g_ctx[0]);
        steno_llm_reset(g_ctx[0]);
    }
    prompt_cache_free(pc);
    return 0;
}
