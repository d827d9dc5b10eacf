/* test_llm_spec.c — speculative decoding (steno_llm_generate_spec) is exact.
 *
 * 1. The ngram drafter on hand-made histories (longest suffix first, latest occurrence, k cap).
 * 2. Exactness: for prompts that repeat text (so drafts are found and partly accepted), the tokens
 *    generated with the ngram drafter — a fixed draft length and adaptive — equal steno_llm_generate's
 *    token for token, at temperature 0 and at temperature 0.8 with a seed (the sampler runs on the
 *    same logits with the same random draws), and the caches end holding the same bytes for every
 *    position the next token can attend to (a ring grown for a verify block keeps more history).
 *    stories260K plain and with --max-kv-size 64 --keep 4 (rounds roll back across ring wraps);
 *    SmolLM2 plain, q8 quantized from token 20 (a verify block spans the conversion point) and
 *    tq3; Gemma 3 (sliding-window layers). Under ASan+UBSan: stories260K only.
 * 3. The same exactness with the layers drafter (the target's first k layers: stories260K plain and
 *    across the ring wrap, both temperatures; SmolLM2 plain, tq3 and q8 from token 60, Gemma 3, at
 *    temperature 0) and the model drafter (a second load of the same file: stories260K across the
 *    wrap, SmolLM2 at temperature 0); a draft of another vocabulary, a missing draft model and a
 *    layer count out of range refused.
 * 4. --spec-verify rejection end to end (stories260K): greedy-identical at temperature 0; at 1,
 *    sampled drafts kept.
 * 5. The process's verdict table (spec/verdict.h): a layers drafter recorded as unable to pay
 *    is not run at all by the next adaptive generation (no round, no draft), one recorded as paying
 *    drafts from the first step (no timed plain step first), and the generation's own rounds are
 *    added to the record; the text equals plain decoding's either way. Each exactness case clears
 *    the table first, so that its adaptive run probes afresh.
 * Every case prints the drafted / accepted counts; a case with nothing accepted at temperature 0
 * fails (it would test nothing) — for layers/model drafters with a fixed k only (adaptive may
 * rightly pause a drafter that rarely agrees). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/verdict.h"
#include "llm/model.h"
#include "spec/backoff.h"
#include "llm/spec/draft.h"
#include "steno_llm.h"
#include "test_util.h"

enum { MAXTOK = 512 };

typedef struct {
    int tok[MAXTOK];
    int n;
} rec;

static int record(void *user, int token, const char *piece, int n) {
    (void)piece;
    (void)n;
    rec *r = user;
    if (r->n < MAXTOK) r->tok[r->n++] = token;
    return 0;
}

static void drafter(void) {
    const int h1[] = {1, 2, 3, 4, 9, 1, 2, 3, 4, 7, 5, 1, 2, 3};
    int d[8];
    /* suffix "1 2 3" last occurred at 5..7, followed by 4 7 5 1 2 3 */
    int n = steno_spec_ngram_draft(h1, 14, 1, 4, 4, d);
    CHECK(n == 4 && d[0] == 4 && d[1] == 7 && d[2] == 5 && d[3] == 1, "ngram draft 1: %d [%d %d %d %d]", n, d[0], d[1],
          d[2], d[3]);
    /* k larger than what follows the match: only what exists */
    const int h2[] = {5, 6, 8, 5, 6};
    n = steno_spec_ngram_draft(h2, 5, 1, 4, 8, d);
    CHECK(n == 3 && d[0] == 8 && d[1] == 5 && d[2] == 6, "ngram draft 2: %d", n);
    /* no earlier occurrence of even one token */
    const int h3[] = {1, 2, 3, 4};
    CHECK(steno_spec_ngram_draft(h3, 4, 1, 4, 8, d) == 0, "ngram draft 3 found something");
    /* ngram_min 2: a single-token match is not enough */
    const int h4[] = {7, 1, 9, 2, 1};
    CHECK(steno_spec_ngram_draft(h4, 5, 2, 4, 8, d) == 0, "ngram draft 4: a 1-gram used with ngram_min 2");
    CHECK(steno_spec_ngram_draft(h4, 5, 1, 4, 2, d) == 2 && d[0] == 9 && d[1] == 2, "ngram draft 5");
    /* a g-token match proposes at most 3g tokens: "4 5" matched at 1..2 is followed by 9 more */
    const int h5[] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 4, 5};
    n = steno_spec_ngram_draft(h5, 14, 1, 4, 8, d);
    CHECK(n == 6 && d[0] == 6 && d[5] == 11, "ngram draft 6: %d tokens after a 2-token match", n);
    const int h6[] = {3, 7, 8, 9, 10, 11, 3};
    n = steno_spec_ngram_draft(h6, 7, 1, 4, 8, d);
    CHECK(n == 3 && d[0] == 7 && d[2] == 9, "ngram draft 7: %d tokens after a 1-token match", n);
    /* the default lookup starts at two tokens */
    CHECK(steno_spec_default_params().ngram_min == 2 && steno_spec_default_params().ngram_max == 4,
          "default ngram lengths");
}

/* The adaptive length's rules without a model (steno_spec_len_update, steno_spec_backoff): +2 after
 * a fully kept round; a round keeping under half its drafts is a miss, two misses halve k, k 0
 * pauses 16 tokens; a pause that follows a failed retry doubles (to 512), a kept draft resets it. */
static void adaptive_rules(void) {
    steno_spec_len s = {.k = 4, .kmax = 8, .adaptive = 1};
    int backoff = STENO_SPEC_BACKOFF_FIRST;
    steno_spec_len_update(&s, 4, 4);
    CHECK(s.k == 6 && s.misses == 0, "full round: k %d", s.k);
    steno_spec_len_update(&s, 6, 3); /* half kept: paid, not a miss */
    CHECK(s.k == 6 && s.misses == 0, "half kept: k %d misses %d", s.k, s.misses);
    steno_spec_len_update(&s, 6, 2); /* under half: a miss */
    CHECK(s.k == 6 && s.misses == 1, "under half: k %d misses %d", s.k, s.misses);
    steno_spec_len_update(&s, 6, 1);
    CHECK(s.k == 3 && s.misses == 0, "two misses halve: k %d", s.k);
    steno_spec_len_update(&s, 3, 0), steno_spec_len_update(&s, 3, 0);
    CHECK(s.k == 1, "k %d after four misses", s.k);
    steno_spec_len_update(&s, 1, 0), steno_spec_backoff(&s, &backoff, 0);
    steno_spec_len_update(&s, 1, 0), steno_spec_backoff(&s, &backoff, 0);
    CHECK(s.k == 0 && s.pause == 16 && backoff == 32, "first pause: k %d pause %d backoff %d", s.k, s.pause, backoff);
    for (int want = 32; want <= 512; want = want < 512 ? 2 * want : 1024) {
        /* the pause runs out (steno_spec_len_next), k = 1 drafts fail twice: a longer pause */
        while (s.pause > 0) s.pause--;
        s.k = 1;
        steno_spec_len_update(&s, 1, 0), steno_spec_backoff(&s, &backoff, 0);
        steno_spec_len_update(&s, 1, 0), steno_spec_backoff(&s, &backoff, 0);
        CHECK(s.k == 0 && s.pause == want, "pause %d, want %d", s.pause, want);
    }
    CHECK(backoff == 512, "backoff %d at its cap", backoff);
    s.k = 1, s.pause = 0;
    steno_spec_len_update(&s, 1, 1), steno_spec_backoff(&s, &backoff, 1);
    CHECK(backoff == STENO_SPEC_BACKOFF_FIRST && s.k == 3, "a kept draft resets: backoff %d k %d", backoff, s.k);
    steno_spec_len f = {.k = 8, .kmax = 8, .adaptive = 0};
    steno_spec_len_update(&f, 8, 0), steno_spec_len_update(&f, 8, 0);
    CHECK(f.k == 8 && f.pause == 0, "a fixed length changed: k %d", f.k);
}

/* The rows the next token can attend to, in every layer: the same bytes at the same positions,
 * and the same key center and sinks (a ring's size and layout may differ). */
static int slot_of(const steno_kv_state *st, int p) {
    for (int s = 0; s < st->n_slots; s++)
        if (st->pos[s] == p) return s;
    return -1;
}

static int same_visible(const steno_llm_ctx *a, const steno_llm_ctx *b) {
    if (a->n_past != b->n_past) return 0;
    for (int l = 0; l < a->m->hp.n_layer; l++) {
        const steno_kv_cache *x = a->kv[l], *y = b->kv[l];
        steno_kv_state sa, sb;
        x->ops->state(x, &sa);
        y->ops->state(y, &sb);
        if (sa.offset != sb.offset || sa.k_row_bytes != sb.k_row_bytes || sa.v_row_bytes != sb.v_row_bytes ||
            x->quantized != y->quantized || x->center_set != y->center_set)
            return 0;
        const steno_kv_params *p = &x->p;
        const int q = sa.offset;
        for (int pp = 0; pp < q; pp++) {
            const int vis = p->kind == STENO_KV_PLAIN || pp < p->keep || q - pp < p->max_size - p->keep;
            if (!vis) continue;
            const int i = slot_of(&sa, pp), j = slot_of(&sb, pp);
            if (i < 0 || j < 0 || memcmp(sa.k + (size_t)i * sa.k_row_bytes, sb.k + (size_t)j * sb.k_row_bytes, sa.k_row_bytes) ||
                memcmp(sa.v + (size_t)i * sa.v_row_bytes, sb.v + (size_t)j * sb.v_row_bytes, sa.v_row_bytes))
                return 0;
        }
        const size_t nc = (size_t)p->n_kv_heads * p->head_dim_k;
        if (x->center_set && memcmp(x->k_center, y->k_center, nc * sizeof(float))) return 0;
        const size_t ns = (size_t)p->sink * p->n_kv_heads;
        if (x->sink_k && (memcmp(x->sink_k, y->sink_k, ns * p->head_dim_k * sizeof(float)) ||
                          memcmp(x->sink_v, y->sink_v, ns * p->head_dim_v * sizeof(float))))
            return 0;
    }
    return 1;
}

static int g_accepted_total;

static int g_temps = 2; /* 2: temperatures 0 and 0.8; 1: 0 only (the large models' drafter variants:
                           verification at 0.8 is the same code, run with ngram on them) */

static void exact_with(const char *label, steno_llm *m, const steno_llm_ctx_params *cp, const char *text, int n_predict,
                       const steno_spec_params *base) {
    int *toks = NULL, nt = 0;
    CHECK(steno_llm_tokenize(m, text, strlen(text), 1, 1, &toks, &nt) == STENO_OK && nt > 0, "%s: tokenize", label);
    for (int temp = 0; temp < g_temps; temp++)
        for (int adaptive = 0; adaptive <= 1; adaptive++) {
            steno_sampler_params sp = steno_sampler_default_params();
            sp.temperature = temp ? 0.8f : 0.0f;
            sp.seed = 1234;
            steno_llm_info info;
            steno_llm_get_info(m, &info);
            steno_sampler *s1, *s2;
            steno_llm_ctx *c1, *c2;
            CHECK(steno_sampler_new(&sp, info.n_vocab, &s1) == STENO_OK && steno_sampler_new(&sp, info.n_vocab, &s2) == STENO_OK,
                  "sampler");
            CHECK(steno_llm_ctx_new(m, cp, &c1) == STENO_OK && steno_llm_ctx_new(m, cp, &c2) == STENO_OK, "%s: %s", label,
                  steno_errmsg());
            rec plain = {{0}, 0}, spec = {{0}, 0};
            steno_gen_stats g1, g2;
            steno_spec_stats ss;
            CHECK(steno_llm_generate(c1, s1, toks, nt, n_predict, record, &plain, &g1) == STENO_OK, "%s: %s", label,
                  steno_errmsg());
            steno_spec_params p = *base;
            p.adaptive = adaptive;
            p.n_draft = adaptive ? 8 : 5;
            steno_spec_verdict_clear(); /* each case probes its drafter afresh */
            CHECK(steno_llm_generate_spec(c2, s2, toks, nt, n_predict, record, &spec, &p, &g2, &ss) == STENO_OK, "%s: %s",
                  label, steno_errmsg());
            int diff = -1;
            for (int i = 0; i < plain.n || i < spec.n; i++)
                if (i >= plain.n || i >= spec.n || plain.tok[i] != spec.tok[i]) {
                    diff = i;
                    break;
                }
            CHECK(diff < 0, "%s temp %.1f %s: speculative tokens differ from plain decoding at %d (%d vs %d tokens)",
                  label, sp.temperature, adaptive ? "adaptive" : "k=5", diff, spec.n, plain.n);
            CHECK(g1.stop_reason == g2.stop_reason, "%s: stop reasons differ", label);
            CHECK(same_visible(c1, c2), "%s temp %.1f: after speculative decoding the caches hold other rows for "
                  "the next token than after plain decoding", label, sp.temperature);
            printf("%-40s temp %.1f %-8s: %3d tokens identical to plain decoding; %3d of %3d drafted accepted, %3d "
                   "target passes\n",
                   label, sp.temperature, adaptive ? "adaptive" : "k=5", spec.n, ss.accepted, ss.drafted, ss.target_calls);
            /* an untrained early exit agrees with its model less often than a lookup of repeated text:
             * adaptive may rightly pause it for most of a short run */
            if (!temp && (!adaptive || base->kind == STENO_DRAFT_NGRAM))
                CHECK(ss.accepted > 0, "%s: no draft accepted at temperature 0: nothing was tested", label);
            g_accepted_total += ss.accepted;
            steno_sampler_free(s1);
            steno_sampler_free(s2);
            steno_llm_ctx_free(c1);
            steno_llm_ctx_free(c2);
        }
    free(toks);
}

static void exact(const char *label, steno_llm *m, const steno_llm_ctx_params *cp, const char *text, int n_predict) {
    steno_spec_params p = steno_spec_default_params();
    p.kind = STENO_DRAFT_NGRAM;
    exact_with(label, m, cp, text, n_predict, &p);
}

/* The layers drafter: its first k layers draft (their own cache, rolled back with the target's). */
static void exact_layers(const char *label, steno_llm *m, const steno_llm_ctx_params *cp, const char *text,
                         int n_predict, int k) {
    steno_spec_params p = steno_spec_default_params();
    p.kind = STENO_DRAFT_LAYERS;
    p.draft_layers = k;
    char l2[160];
    snprintf(l2, sizeof l2, "%s [layers %d]", label, k);
    exact_with(l2, m, cp, text, n_predict, &p);
}

/* The model drafter: a separately loaded model (the same file loaded again here: tests have no
 * second model with the target's vocabulary; tools/gguf_requant.py makes real drafts for the
 * benchmark) drafts from its own context. */
static void exact_model(const char *label, steno_llm *m, const char *draft_path, const steno_llm_ctx_params *cp,
                        const char *text, int n_predict) {
    steno_llm *dm;
    CHECK(steno_llm_load(draft_path, NULL, &dm) == STENO_OK, "%s: %s", draft_path, steno_errmsg());
    steno_spec_params p = steno_spec_default_params();
    p.kind = STENO_DRAFT_MODEL;
    p.draft_model = dm;
    char l2[160];
    snprintf(l2, sizeof l2, "%s [draft model]", label);
    exact_with(l2, m, cp, text, n_predict, &p);
    steno_llm_free(dm);
}

/* A draft over another vocabulary is refused with one line naming it. */
static void foreign_draft(steno_llm *m, const char *draft_path) {
    steno_llm *dm;
    CHECK(steno_llm_load(draft_path, NULL, &dm) == STENO_OK, "%s: %s", draft_path, steno_errmsg());
    steno_spec_params p = steno_spec_default_params();
    p.kind = STENO_DRAFT_MODEL;
    p.draft_model = dm;
    steno_llm_ctx *c;
    steno_sampler *s;
    steno_sampler_params sp = steno_sampler_default_params();
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    CHECK(steno_llm_ctx_new(m, NULL, &c) == STENO_OK && steno_sampler_new(&sp, info.n_vocab, &s) == STENO_OK, "ctx");
    const int tok[1] = {info.bos >= 0 ? info.bos : 1};
    const steno_status st = steno_llm_generate_spec(c, s, tok, 1, 4, NULL, NULL, &p, NULL, NULL);
    CHECK(st == STENO_E_INVALID_ARG && strstr(steno_errmsg(), "vocabulary") && strstr(steno_errmsg(), draft_path),
          "a draft over another vocabulary: status %d, '%s'", (int)st, steno_errmsg());
    printf("foreign draft refused: %s\n", steno_errmsg());
    p.kind = STENO_DRAFT_MODEL;
    p.draft_model = NULL;
    CHECK(steno_llm_generate_spec(c, s, tok, 1, 4, NULL, NULL, &p, NULL, NULL) == STENO_E_INVALID_ARG,
          "draft kind model without a model accepted");
    p.kind = STENO_DRAFT_LAYERS;
    p.draft_layers = 1000;
    CHECK(steno_llm_generate_spec(c, s, tok, 1, 4, NULL, NULL, &p, NULL, NULL) == STENO_E_INVALID_ARG &&
              strstr(steno_errmsg(), "--draft-layers"),
          "--draft-layers 1000 accepted: %s", steno_errmsg());
    /* the default lookup starts at 2: a caller who lowers only the maximum is told what to set */
    p = steno_spec_default_params();
    p.kind = STENO_DRAFT_NGRAM;
    p.ngram_max = 1;
    CHECK(steno_llm_generate_spec(c, s, tok, 1, 4, NULL, NULL, &p, NULL, NULL) == STENO_E_INVALID_ARG &&
              strstr(steno_errmsg(), "ngram_min 2 / ngram_max 1") && strstr(steno_errmsg(), "needs ngram_min 1"),
          "ngram_max 1 over the default minimum: %s", steno_errmsg());
    p.ngram_min = 1;
    CHECK(steno_llm_generate_spec(c, s, tok, 1, 4, NULL, NULL, &p, NULL, NULL) == STENO_OK, "ngram 1..1: %s",
          steno_errmsg());
    steno_sampler_free(s);
    steno_llm_ctx_free(c);
    steno_llm_free(dm);
}

/* --spec-verify rejection end to end: at temperature 0 it is greedy verification (the text equals
 * plain decoding's); at temperature 1 a layers drafter samples its drafts from its own distribution
 * and the target keeps them by Leviathan et al.'s rule (the distribution is checked by
 * test_spec_rejection; here: it runs, returns in-vocabulary tokens, and keeps drafts). Prints the
 * acceptance of both verifications over 4 seeds. */
static void rejection_e2e(steno_llm *m, const steno_llm_ctx_params *cp, const char *text, int n_predict, int k) {
    int *toks = NULL, nt = 0;
    CHECK(steno_llm_tokenize(m, text, strlen(text), 1, 1, &toks, &nt) == STENO_OK && nt > 0, "tokenize");
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    for (int kind = 0; kind < 2; kind++) {
        steno_spec_params p = steno_spec_default_params();
        p.kind = kind ? STENO_DRAFT_LAYERS : STENO_DRAFT_NGRAM;
        p.draft_layers = k;
        p.verify = STENO_SPEC_VERIFY_REJECTION;
        steno_sampler_params sp = steno_sampler_default_params();
        sp.temperature = 0;
        steno_sampler *s1, *s2;
        steno_llm_ctx *c1, *c2;
        CHECK(steno_sampler_new(&sp, info.n_vocab, &s1) == STENO_OK && steno_sampler_new(&sp, info.n_vocab, &s2) == STENO_OK &&
                  steno_llm_ctx_new(m, cp, &c1) == STENO_OK && steno_llm_ctx_new(m, cp, &c2) == STENO_OK,
              "%s", steno_errmsg());
        rec plain = {{0}, 0}, spec = {{0}, 0};
        steno_spec_stats ss;
        CHECK(steno_llm_generate(c1, s1, toks, nt, n_predict, record, &plain, NULL) == STENO_OK, "%s", steno_errmsg());
        CHECK(steno_llm_generate_spec(c2, s2, toks, nt, n_predict, record, &spec, &p, NULL, &ss) == STENO_OK, "%s",
              steno_errmsg());
        CHECK(plain.n == spec.n && !memcmp(plain.tok, spec.tok, sizeof(int) * (size_t)plain.n),
              "rejection verification at temperature 0 (%s) differs from plain decoding", kind ? "layers" : "ngram");
        printf("rejection, temperature 0, %-6s: %3d tokens identical to plain decoding; %d of %d drafted accepted\n",
               kind ? "layers" : "ngram", spec.n, ss.accepted, ss.drafted);
        steno_sampler_free(s1);
        steno_sampler_free(s2);
        steno_llm_ctx_free(c1);
        steno_llm_ctx_free(c2);
    }
    for (int v = 0; v < 2; v++) {
        int acc = 0, dr = 0, ntok = 0;
        for (int seed = 1; seed <= 4; seed++) {
            steno_spec_params p = steno_spec_default_params();
            p.kind = STENO_DRAFT_LAYERS;
            p.draft_layers = k;
            p.adaptive = 0;
            p.n_draft = 4;
            p.verify = v ? STENO_SPEC_VERIFY_REJECTION : STENO_SPEC_VERIFY_EXACT;
            steno_sampler_params sp = steno_sampler_default_params();
            sp.temperature = 1.0f;
            sp.seed = (uint64_t)seed;
            steno_sampler *s;
            steno_llm_ctx *c;
            CHECK(steno_sampler_new(&sp, info.n_vocab, &s) == STENO_OK && steno_llm_ctx_new(m, cp, &c) == STENO_OK, "%s",
                  steno_errmsg());
            rec r = {{0}, 0};
            steno_spec_stats ss;
            CHECK(steno_llm_generate_spec(c, s, toks, nt, n_predict, record, &r, &p, NULL, &ss) == STENO_OK, "%s",
                  steno_errmsg());
            for (int i = 0; i < r.n; i++) CHECK(r.tok[i] >= 0 && r.tok[i] < info.n_vocab, "token %d out of range", r.tok[i]);
            acc += ss.accepted;
            dr += ss.drafted;
            ntok += r.n;
            steno_sampler_free(s);
            steno_llm_ctx_free(c);
        }
        printf("temperature 1, layers %d, %-9s verification: %d of %d drafted accepted (%.1f %%), %d tokens\n", k,
               v ? "rejection" : "exact", acc, dr, dr ? 100.0 * acc / dr : 0.0, ntok);
        if (v) CHECK(acc > 0, "rejection verification kept no sampled draft at temperature 1");
    }
    free(toks);
}

/* 5: what an earlier generation recorded decides the next one's drafting. */
static void verdicts(steno_llm *m, const steno_llm_ctx_params *cp, const char *text, int n_predict) {
    int *toks = NULL, nt = 0;
    CHECK(steno_llm_tokenize(m, text, strlen(text), 1, 1, &toks, &nt) == STENO_OK && nt > 0, "verdicts: tokenize");
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    steno_spec_params p = steno_spec_default_params();
    p.kind = STENO_DRAFT_LAYERS;
    p.draft_layers = 3;
    steno_sampler_params sp = steno_sampler_default_params();
    sp.temperature = 0.0f;
    steno_llm_ctx *c;
    steno_sampler *s;
    CHECK(steno_llm_ctx_new(m, cp, &c) == STENO_OK && steno_sampler_new(&sp, info.n_vocab, &s) == STENO_OK, "ctx");
    rec plain = {{0}, 0};
    CHECK(steno_llm_generate(c, s, toks, nt, n_predict, record, &plain, NULL) == STENO_OK, "%s", steno_errmsg());
    llm_drafter dr;
    memset(&dr, 0, sizeof dr);
    CHECK(llm_drafter_open(&dr, c, &p) == STENO_OK, "%s", steno_errmsg());
    int key[STENO_SPEC_VKEY];
    llm_drafter_verdict_key(&dr, c, &p, key);
    llm_drafter_close(&dr);
    for (int pays = 0; pays <= 1; pays++) {
        steno_spec_verdict_clear();
        steno_spec_cost rec0;
        steno_spec_cost_init(&rec0);
        steno_spec_cost_plain(&rec0, 0.010);
        for (int r = 0; r < 2; r++) { /* hopeless: d + v = 0.9 p; paying: 0.1 p, every draft accepted */
            steno_spec_cost_round(&rec0, pays ? 0.0005 : 0.008, 1, pays ? 0.0105 : 0.011);
            steno_spec_cost_outcome(&rec0, 1, pays);
        }
        CHECK(pays ? !steno_spec_cost_hopeless(&rec0) && !steno_spec_cost_unpaid(&rec0, 8)
                   : steno_spec_cost_hopeless(&rec0) != 0,
              "verdicts: the recorded costs do not say what the case needs");
        steno_spec_verdict_put(key, &rec0);
        steno_llm_reset(c);
        steno_sampler_free(s);
        CHECK(steno_sampler_new(&sp, info.n_vocab, &s) == STENO_OK, "sampler");
        rec spec = {{0}, 0};
        steno_spec_stats ss;
        CHECK(steno_llm_generate_spec(c, s, toks, nt, n_predict, record, &spec, &p, NULL, &ss) == STENO_OK, "%s",
              steno_errmsg());
        CHECK(spec.n == plain.n && !memcmp(spec.tok, plain.tok, sizeof(int) * (size_t)plain.n),
              "verdicts (%s): tokens differ from plain decoding", pays ? "paying" : "hopeless");
        steno_spec_cost after;
        CHECK(steno_spec_verdict_get(key, &after), "verdicts: nothing recorded under the drafter's key");
        if (!pays) {
            CHECK(ss.rounds == 0 && ss.drafted == 0, "a drafter recorded as hopeless drafted: %d rounds, %d tokens",
                  ss.rounds, ss.drafted);
            CHECK(after.rounds == 2, "the hopeless record changed: %d rounds", after.rounds);
        } else {
            CHECK(ss.rounds > 0 && ss.target_calls > 0, "a drafter recorded as paying did not draft");
            CHECK(after.rounds == 2 + ss.rounds, "the record holds %d rounds, want 2 + %d", after.rounds, ss.rounds);
        }
        printf("verdict table, drafter recorded as %-8s: %d rounds, %d of %d drafted accepted, %d tokens as plain\n",
               pays ? "paying" : "hopeless", ss.rounds, ss.accepted, ss.drafted, spec.n);
    }
    steno_spec_verdict_clear();
    steno_sampler_free(s);
    steno_llm_ctx_free(c);
    free(toks);
}

static const char *REPEAT =
    "Once upon a time there was a little dog named Tim. Tim liked to play in the park. Once upon a time there was "
    "a little dog named Tim. Tim liked to play in the park. Once upon a time there was a little dog";
static const char *CHAT =
    "<|im_start|>user\nRepeat this text exactly: The library opens at nine in the morning and closes at six in the "
    "evening. Books may be borrowed for three weeks and renewed twice.<|im_end|>\n<|im_start|>assistant\n";

int main(void) {
    const char *san = getenv("STENO_SANITIZE");
    const int sanitize = san && !strcmp(san, "1");
    drafter();
    adaptive_rules();
    char path[4200];
    snprintf(path, sizeof path, "%s/models/stories260K/stories260K.bin", test_shared_dir());
    steno_llm *m;
    if (steno_llm_load(path, NULL, &m) != STENO_OK) {
        fprintf(stderr, "FAIL: %s\n", steno_errmsg());
        return 1;
    }
    steno_llm_ctx_params cp = steno_llm_ctx_default_params();
    cp.n_threads = 2;
    exact("stories260K plain", m, &cp, REPEAT, 200);
    steno_llm_ctx_params rp = cp;
    rp.max_kv_size = 64;
    rp.keep = 4;
    rp.kv_reserve = 8;
    exact("stories260K rotating(64, keep 4, reserve 8)", m, &rp, REPEAT, 200);
    exact_layers("stories260K plain", m, &cp, REPEAT, 120, 3);
    exact_layers("stories260K rotating(64, keep 4, reserve 8)", m, &rp, REPEAT, 200, 3);
    rejection_e2e(m, &rp, REPEAT, 200, 3);
    exact_model("stories260K rotating(64, keep 4, reserve 8)", m, path, &rp, REPEAT, 120);
    verdicts(m, &cp, REPEAT, 60);
    char stories[4200];
    snprintf(stories, sizeof stories, "%s", path);
    steno_llm_free(m);
    if (!sanitize) {
        const char *names[] = {"smollm2", "gemma3"};
        for (int i = 0; i < 2; i++) {
            if (steno_llm_resolve(names[i], path, sizeof path) != STENO_OK || steno_llm_load(path, NULL, &m) != STENO_OK) {
                CHECK(0, "%s (the test script fetches it: bash scripts/fetch_llm_models.sh %s)", steno_errmsg(), names[i]);
                continue;
            }
            steno_llm_ctx_params p = steno_llm_ctx_default_params();
            p.n_threads = 2;
            p.n_ctx = 512;
            char label[96];
            snprintf(label, sizeof label, "%s plain", names[i]);
            exact(label, m, &p, i == 0 ? CHAT : REPEAT, 48);
            g_temps = 1;
            exact_layers(label, m, &p, i == 0 ? CHAT : REPEAT, 48, i == 0 ? 20 : 12);
            if (i == 0) {
                exact_model(label, m, path, &p, CHAT, 32);
                foreign_draft(m, stories);
            }
            if (i == 0) {
                steno_llm_ctx_params q = p;
                q.kv_quant = STENO_KV_QUANT_Q8;
                q.kv_quant_start = 60;
                g_temps = 2;
                exact("smollm2 q8 from token 60", m, &q, CHAT, 48);
                q.kv_quant = STENO_KV_QUANT_TQ3;
                q.kv_quant_start = 0;
                exact("smollm2 tq3", m, &q, CHAT, 48);
                g_temps = 1;
                exact_layers("smollm2 tq3", m, &q, CHAT, 32, 20);
                q.kv_quant = STENO_KV_QUANT_Q8;
                q.kv_quant_start = 60;
                exact_layers("smollm2 q8 from token 60", m, &q, CHAT, 32, 20);
                g_temps = 2;
            }
            steno_llm_free(m);
        }
    }
    printf("%d draft tokens accepted in all; %d checks, %d failures\n", g_accepted_total, g_checks, g_failures);
    return g_failures ? 1 : 0;
}
