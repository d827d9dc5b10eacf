/* chat_cmd.c — `steno chat -m MODEL`: an interactive conversation with the model's chat template.
 *
 * Prototypes for cli/commands.h (wired by cli/main.c):
 *   int steno_cmd_generate(int argc, char **argv);   (cli/generate_cmd.c)
 *   int steno_cmd_chat(int argc, char **argv);
 *
 * Reads one user message per line from standard input ("/reset" starts over, end of input quits),
 * formats the whole conversation with the model's template (ChatML for SmolLM2, Gemma turns for
 * Gemma 3), evaluates only the tokens past the prefix already in the KV cache (rolling back what
 * differs), and streams the reply to standard output. Speeds go to standard error.
 * Exit status: 0 ok, 1 runtime error (one line on stderr), 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "llm_cli.h"

typedef struct {
    const char *system;
    int n_predict;
    steno_spec_params spec;
    const char *draft_model;
    steno_llm_spec_given given;
} chat_opts;

static void chat_usage(FILE *f);

/* chat's -n replaces the shared one: a reply, not the whole text, and another default */
static const steno_opt CHAT_OPTIONS[] = {
    {STENO_OPT_SECTION, .help = "chat:"},
    {STENO_OPT_STRING, "--system", "TEXT", STENO_OPT_AT(chat_opts, system), .def = "the template's, if any",
     .help = "system message"},
    {STENO_OPT_INT, "-n|--n-predict", "N", STENO_OPT_AT(chat_opts, n_predict), STENO_OPT_RANGE(-1, 1 << 24),
     .def = "512", .help = "at most N tokens per reply"},
    STENO_LLM_SPEC_OPTIONS(chat_opts, spec, draft_model, given),
};

static const steno_opts_spec CHAT_SPEC = {
    .opts = CHAT_OPTIONS, .n_opts = sizeof CHAT_OPTIONS / sizeof CHAT_OPTIONS[0], .err_prefix = "steno chat: ",
    .verb = "chat", .usage = chat_usage, .help_col = 27, .align_long = true, .shared = &steno_llm_cli_spec,
};

static void chat_usage(FILE *f) {
    fputs("usage: steno chat -m MODEL [options]\n"
          "\n"
          "Chats with an instruction-tuned model (SmolLM2, Gemma 3) using its chat template. Type a\n"
          "message and press Enter; '/reset' clears the conversation; end of input (Ctrl-D) quits.\n"
          "\n",
          f);
    steno_opts_help(f, &CHAT_SPEC, NULL);
}

typedef struct {
    steno_chat_msg *v;
    int n, cap;
} msg_list;

static int msg_push(msg_list *l, const char *role, char *content) {
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 8;
        steno_chat_msg *p = realloc(l->v, (size_t)nc * sizeof *p);
        if (!p) return -1;
        l->v = p;
        l->cap = nc;
    }
    l->v[l->n].role = role;
    l->v[l->n].content = content;
    l->n++;
    return 0;
}

/* A reply decoded speculatively: its text, and its tokens after the prompt's in the history. */
typedef struct {
    char *text;
    size_t len, cap;
    int *tok, n;
} spec_reply;

static int spec_piece(void *user, int token, const char *piece, int n) {
    spec_reply *r = user;
    r->tok[r->n++] = token;
    if (n <= 0) return 0;
    fwrite(piece, 1, (size_t)n, stdout);
    fflush(stdout);
    if (r->len + (size_t)n + 1 > r->cap) {
        char *nt = realloc(r->text, r->cap = (r->len + (size_t)n + 1) * 2);
        if (!nt) return 1; /* stops generation */
        r->text = nt;
    }
    memcpy(r->text + r->len, piece, (size_t)n);
    r->len += (size_t)n;
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int steno_cmd_chat(int argc, char **argv) {
    chat_opts co = {.system = NULL, .n_predict = 512, .spec = steno_spec_default_params()};
    steno_llm *dm = NULL;
    steno_llm *m;
    steno_llm_ctx *c;
    steno_sampler *s;
    llm_cli_opts lo;
    int rc = steno_llm_cli_parse(argc, argv, &CHAT_SPEC, &co, &lo);
    if (rc >= 0) return rc;
    if ((rc = steno_llm_cli_spec_check("chat", &co.spec, &co.given, co.draft_model)) != 0) return rc;
    if ((rc = steno_llm_cli_load(&lo, &m, &c, &s)) != 0) return rc;
    int n_predict = co.n_predict;
    if (n_predict < 0) n_predict = 512;
    if ((rc = steno_llm_cli_spec_setup("chat", m, lo.model, &lo.ctx, &co.spec, co.draft_model, &dm)) != 0) {
        steno_sampler_free(s);
        steno_llm_ctx_free(c);
        steno_llm_free(m);
        return rc;
    }
    steno_llm_info info;
    steno_llm_get_info(m, &info);
    msg_list msgs = {0};
    int *hist = NULL, n_hist = 0; /* tokens in the KV cache */
    float *logits = malloc((size_t)info.n_vocab * sizeof(float));
    char *line = NULL;
    size_t line_cap = 0;
    int tty = isatty(0);
    rc = 0;
    if (!logits) {
        fprintf(stderr, "steno: out of memory\n");
        rc = 1;
        goto out;
    }
    if (co.system) msg_push(&msgs, "system", strdup(co.system));
    for (;;) {
        if (tty) fputs("> ", stderr);
        ssize_t len = getline(&line, &line_cap, stdin);
        if (len < 0) break;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (len == 0) continue;
        if (strcmp(line, "/reset") == 0) {
            for (int i = 0; i < msgs.n; i++) free((char *)msgs.v[i].content);
            msgs.n = 0;
            if (co.system) msg_push(&msgs, "system", strdup(co.system));
            steno_llm_reset(c);
            n_hist = 0;
            continue;
        }
        if (msg_push(&msgs, "user", strdup(line)) != 0) {
            fprintf(stderr, "steno: out of memory\n");
            rc = 1;
            break;
        }
        char *text;
        if (steno_llm_chat_format(m, msgs.v, msgs.n, 1, &text) != STENO_OK) {
            fprintf(stderr, "steno: %s\n", steno_errmsg());
            rc = 1;
            break;
        }
        int *toks, nt;
        steno_status st = steno_llm_tokenize(m, text, strlen(text), 1, 1, &toks, &nt);
        free(text);
        if (st != STENO_OK) {
            fprintf(stderr, "steno: %s\n", steno_errmsg());
            rc = 1;
            break;
        }
        /* keep the common prefix in the cache; re-evaluate the rest (at least one token, for logits) */
        int common = 0;
        while (common < n_hist && common < nt && hist[common] == toks[common]) common++;
        if (common == nt) common--;
        if (n_hist > common && steno_llm_rollback(c, n_hist - common) != STENO_OK) {
            steno_llm_reset(c); /* a rotating cache may not hold that history any more */
            common = 0;
        }
        n_hist = common;
        int *nh = realloc(hist, (size_t)(nt + n_predict + 1) * sizeof(int));
        if (!nh) {
            free(toks);
            fprintf(stderr, "steno: out of memory\n");
            rc = 1;
            break;
        }
        hist = nh;
        if (co.spec.kind != STENO_DRAFT_NONE) { /* the reply decoded speculatively */
            memcpy(hist + common, toks + common, (size_t)(nt - common) * sizeof(int));
            spec_reply r = {malloc(256), 0, 256, hist + nt, 0};
            steno_gen_stats gs;
            steno_spec_stats ss;
            st = r.text ? steno_llm_generate_spec(c, s, toks + common, nt - common, n_predict, spec_piece, &r, &co.spec,
                                                  &gs, &ss)
                        : STENO_E_NOMEM;
            free(toks);
            n_hist = steno_llm_n_past(c); /* the prompt and the reply, but a last token not yet evaluated */
            fputc('\n', stdout);
            fflush(stdout);
            if (r.text) r.text[r.len] = '\0';
            msg_push(&msgs, "assistant", r.text ? r.text : strdup(""));
            if (st != STENO_OK) {
                fprintf(stderr, "steno: %s\n", steno_errmsg());
                rc = 1;
                break;
            }
            steno_llm_cli_spec_report(&co.spec, &ss, gs.n_generated);
            fprintf(stderr, "steno: prompt: %d new tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s (%.1f tok/s)\n",
                    gs.n_prompt, gs.prompt_seconds, gs.prompt_seconds > 0 ? gs.n_prompt / gs.prompt_seconds : 0.0,
                    gs.n_generated, gs.decode_seconds, gs.decode_seconds > 0 ? gs.n_generated / gs.decode_seconds : 0.0);
            continue;
        }
        double t0 = now_s();
        st = steno_llm_eval(c, toks + common, nt - common, logits, 0);
        double t1 = now_s();
        memcpy(hist + common, toks + common, (size_t)(nt - common) * sizeof(int));
        n_hist = nt;
        int prev = toks[nt - 1];
        free(toks);
        if (st != STENO_OK) {
            fprintf(stderr, "steno: %s\n", steno_errmsg());
            rc = 1;
            break;
        }
        size_t rcap = 256, rl = 0;
        char *reply = malloc(rcap);
        int n_gen = 0;
        for (int i = 0; i < n_predict && reply; i++) {
            int tok = steno_sampler_sample(s, logits, NULL, NULL);
            if (steno_llm_is_eog(m, tok)) break;
            char piece[256];
            int pl = steno_llm_token_piece(m, tok, prev, 0, piece, (int)sizeof piece);
            if (pl > 0) {
                fwrite(piece, 1, (size_t)pl, stdout);
                fflush(stdout);
                if (rl + (size_t)pl + 1 > rcap) {
                    char *nr = realloc(reply, rcap = (rl + (size_t)pl + 1) * 2);
                    if (!nr) break;
                    reply = nr;
                }
                memcpy(reply + rl, piece, (size_t)pl);
                rl += (size_t)pl;
            }
            prev = tok;
            n_gen++;
            if (i + 1 >= n_predict || steno_llm_n_past(c) + 1 > info.n_ctx_train) break;
            st = steno_llm_eval(c, &tok, 1, logits, 0);
            if (st != STENO_OK) break;
            hist[n_hist++] = tok;
        }
        double t2 = now_s();
        fputc('\n', stdout);
        fflush(stdout);
        if (reply) reply[rl] = '\0';
        msg_push(&msgs, "assistant", reply ? reply : strdup(""));
        if (st != STENO_OK) {
            fprintf(stderr, "steno: %s\n", steno_errmsg());
            rc = 1;
            break;
        }
        fprintf(stderr, "steno: prompt: %d new tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s (%.1f tok/s)\n",
                nt - common, t1 - t0, t1 > t0 ? (nt - common) / (t1 - t0) : 0.0, n_gen, t2 - t1,
                t2 > t1 ? n_gen / (t2 - t1) : 0.0);
    }
out:
    for (int i = 0; i < msgs.n; i++) free((char *)msgs.v[i].content);
    free(msgs.v);
    free(hist);
    free(logits);
    free(line);
    steno_sampler_free(s);
    steno_llm_ctx_free(c);
    steno_llm_free(m);
    steno_llm_free(dm);
    return rc;
}
