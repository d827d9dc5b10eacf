/* generate_batch_cmd.c — `steno generate --parallel N -f prompts.jsonl`: many prompts through the
 * server's continuous-batching scheduler (src/sched), without HTTP.
 *
 * Input: one JSON value per line — a string (the prompt), or an object with "prompt" and
 * optionally "max_tokens", "temperature", "top_p", "top_k", "seed" (blank lines are skipped).
 * Every prompt is submitted at once; the scheduler runs N of them as rows of one batched pass and
 * queues the rest. Output: one JSON object per input line, in input order, on stdout:
 *   {"index": i, "text": "...", "prompt_tokens": n, "completion_tokens": n, "finish_reason": "stop"|"length"}
 * and on stderr the aggregate: prompts, generated tokens, wall seconds, tokens/s. A bad line is a
 * one-line error naming the file and its line number (exit 2) before anything runs; a runtime
 * error is one line "steno: <input>: <reason>" (exit 1), as the other verbs. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "sched/sched.h"
#include "steno_llm.h"

typedef struct {
    char *prompt;
    int line;
    int max_tokens;
    steno_sampler_params sp;
} batch_item;

typedef struct {
    const char *model, *file;
    int parallel, n_predict, threads, n_ctx, chunk, compute;
    bool no_bos, ignore_eos;
    double temp;
    unsigned long long seed;
} batch_opts;

static void usage(FILE *f);

#define AT(field) STENO_OPT_AT(batch_opts, field)
static const steno_opt OPTIONS[] = {
    {STENO_OPT_STRING, "-m|--model", "NAME|FILE", AT(model), .help = "the LLM (smollm2, gemma3, qwen2.5-coder-0.5b, a .gguf or llama2.c file)"},
    {STENO_OPT_INT, "--parallel", "N", AT(parallel), STENO_OPT_RANGE(1, 256), .help = "rows decoded together"},
    {STENO_OPT_STRING, "-f|--file", "PATH", AT(file), .help = "the prompts (- = standard input)"},
    {STENO_OPT_INT, "-n|--n-predict", "N", AT(n_predict), STENO_OPT_RANGE(1, 1 << 20), .def = "128",
     .help = "default max_tokens per prompt"},
    {STENO_OPT_DOUBLE, "--temp", "T", AT(temp), STENO_OPT_RANGE(0, 100), .def = "0 = greedy",
     .help = "default temperature"},
    {STENO_OPT_U64, "-s|--seed", "N", AT(seed), STENO_OPT_RANGE(0, 9007199254740991.0), .def = "0",
     .help = "default seed"},
    {STENO_OPT_INT, "-t|--threads", "N", AT(threads), STENO_OPT_RANGE(0, 256), .def = "0: the CPUs",
     .help = "threads of the batched pass, in all"},
    {STENO_OPT_INT, "-c|--ctx-size", "N", AT(n_ctx), STENO_OPT_RANGE(16, 1 << 20),
     .def = "min(4096, the model's)", .help = "context per row in tokens"},
    {STENO_OPT_INT, "--prefill-chunk", "N", AT(chunk), STENO_OPT_RANGE(1, 3840), .def = "64",
     .help = "prompt tokens fed per pass"},
    {STENO_OPT_FLAG, "--no-bos", .at = AT(no_bos), .help = "do not add the BOS token"},
    {STENO_OPT_FLAG, "--ignore-eos", .at = AT(ignore_eos),
     .help = "never end at an end-of-generation token (its logit set to -inf, as plain generate's): every "
             "prompt generates exactly its max_tokens, for benchmarks"},
    {STENO_OPT_CHOICE, "--compute", NULL, AT(compute), .choices = "ggml|fast",
     .values = (const int[]){STENO_LLM_COMPUTE_GGML, STENO_LLM_COMPUTE_FAST}, .def = "ggml",
     .help = "arithmetic: llama.cpp's, or the fast path (Lab; docs/LLM.md)"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
#undef AT

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .err_prefix = "steno generate: ",
    .verb = "generate --parallel 1", .usage = usage, .help_col = 26,
};

static void usage(FILE *f) {
    fputs("usage: steno generate --parallel N -f PROMPTS.jsonl -m MODEL [options]\n"
          "\n"
          "Generates a completion for every line of PROMPTS.jsonl (a JSON string, or an object with\n"
          "\"prompt\" and optional \"max_tokens\" (1..1048576), \"temperature\" (0..100), \"top_p\"\n"
          "(0..1), \"top_k\", \"seed\"; other keys are ignored), N at a time as rows of one\n"
          "continuously batched pass (the server's scheduler). Prints one JSON object per line, in\n"
          "input order; the aggregate speed goes to standard error. Every line is checked and\n"
          "tokenized before the run: one bad or over-long prompt stops it with its line number.\n"
          "\n",
          f);
    steno_opts_help(f, &SPEC, NULL);
}

/* The whole stream, NUL-terminated, its length in *len; NULL on a read error (errno set). */
static char *read_stream(FILE *f, size_t *len) {
    size_t cap = 65536, n = 0, r;
    char *b = malloc(cap);
    while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                errno = ENOMEM;
                return NULL;
            }
            b = nb;
        }
    }
    if (b && ferror(f)) {
        free(b);
        return NULL;
    }
    if (b) b[n] = '\0';
    *len = n;
    return b;
}

/* Parses one line into it; returns NULL or the reason it is refused (in why_buf or static). */
static const char *parse_line(const char *line, batch_item *it, char *why_buf, size_t why_size) {
    cJSON *v = cJSON_ParseWithOpts(line, NULL, 1);
    if (!v) return "not one JSON value";
    const char *why = NULL;
    const cJSON *p = cJSON_IsString(v) ? v : cJSON_GetObjectItemCaseSensitive(v, "prompt");
    if (!cJSON_IsString(p)) why = "no \"prompt\" string";
    const struct {
        const char *key;
        double lo, hi;
    } num[] = {{"max_tokens", 1, 1 << 20}, {"temperature", 0, 100}, {"top_p", 0, 1}, {"top_k", 0, 1 << 20},
               {"seed", 0, 9007199254740991.0}};
    for (size_t k = 0; !why && cJSON_IsObject(v) && k < sizeof num / sizeof num[0]; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, num[k].key);
        if (!x) continue;
        const int integral = k != 1 && k != 2;
        if (!cJSON_IsNumber(x) || x->valuedouble < num[k].lo || x->valuedouble > num[k].hi ||
            (integral && x->valuedouble != (double)(long long)x->valuedouble)) {
            snprintf(why_buf, why_size, "\"%s\": need %s in %.15g..%.15g", num[k].key, integral ? "an integer" : "a number",
                     num[k].lo, num[k].hi);
            why = why_buf;
            break;
        }
        if (k == 0) it->max_tokens = (int)x->valuedouble;
        else if (k == 1) it->sp.temperature = (float)x->valuedouble;
        else if (k == 2) it->sp.top_p = (float)x->valuedouble;
        else if (k == 3) it->sp.top_k = (int)x->valuedouble;
        else it->sp.seed = (uint64_t)x->valuedouble;
    }
    if (!why && !(it->prompt = strdup(p->valuestring))) why = "out of memory";
    cJSON_Delete(v);
    return why;
}

int steno_cmd_generate_batch(int argc, char **argv) {
    batch_opts o = {.n_predict = 128};
    const int parsed = steno_opts_parse(&SPEC, &o, argc, argv);
    if (parsed >= 0) return parsed;
    const char *model = o.model, *file = o.file;
    const int parallel = o.parallel, n_predict = o.n_predict, threads = o.threads, n_ctx = o.n_ctx, chunk = o.chunk;
    const int no_bos = o.no_bos;
    const double temp = o.temp;
    const unsigned long long seed = o.seed;
    if (!model || !file || parallel <= 0) {
        fprintf(stderr, "steno generate: --parallel needs -m MODEL and -f PROMPTS.jsonl\n");
        return 2;
    }
    FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "steno: %s: %s\n", file, strerror(errno));
        return 1;
    }
    size_t len = 0;
    errno = 0;
    char *text = read_stream(f, &len);
    const int read_errno = errno;
    if (f != stdin) fclose(f);
    if (!text) {
        fprintf(stderr, "steno: %s: %s\n", file, read_errno ? strerror(read_errno) : "cannot read");
        return 1;
    }
    /* parse every line before anything runs */
    batch_item *items = NULL;
    int n = 0, cap = 0, rc = 0, line_no = 0;
    for (char *line = text, *next, *end = text + len; line < end; line = next) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        next = nl ? nl + 1 : end;
        if (nl) *nl = '\0';
        line_no++;
        if (memchr(line, '\0', (size_t)((nl ? nl : end) - line))) {
            fprintf(stderr, "steno generate: %s line %d: contains a NUL byte\n", file, line_no);
            rc = 2;
            goto out;
        }
        if (strspn(line, " \t\r") == strlen(line)) continue;
        if (n == cap) {
            batch_item *ni = realloc(items, sizeof *items * (size_t)(cap = cap ? 2 * cap : 64));
            if (!ni) {
                fprintf(stderr, "steno: %s: out of memory\n", file);
                rc = 1;
                goto out;
            }
            items = ni;
        }
        batch_item *it = &items[n];
        memset(it, 0, sizeof *it);
        it->max_tokens = n_predict;
        it->line = line_no;
        it->sp = steno_sampler_default_params();
        it->sp.temperature = (float)temp;
        it->sp.seed = seed;
        char why_buf[160];
        const char *why = parse_line(line, it, why_buf, sizeof why_buf);
        if (why) {
            fprintf(stderr, "steno generate: %s line %d: %s\n", file, line_no, why);
            rc = 2;
            goto out;
        }
        n++;
    }
    if (n == 0) {
        fprintf(stderr, "steno generate: %s: no prompts\n", file);
        rc = 2;
        goto out;
    }
    char path[4096];
    if (steno_llm_resolve(model, path, sizeof path) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        rc = 1;
        goto out;
    }
    sched_params sp = sched_default_params();
    sp.llm_path = path;
    sp.n_parallel = parallel;
    sp.n_threads_batch = threads;
    sp.max_queue = n;
    sp.n_ctx = n_ctx;
    sp.prefill_chunk = chunk;
    sp.llm_compute = (steno_llm_compute)o.compute;
    steno_sched *s = NULL;
    if (sched_new(&sp, &s) != STENO_OK) {
        fprintf(stderr, "steno: %s\n", steno_errmsg());
        rc = 1;
        goto out;
    }
    /* --ignore-eos: every end-of-generation token banned, for every prompt (the scheduler copies it) */
    steno_logit_bias *eog = NULL;
    int n_eog = 0;
    if (o.ignore_eos) {
        steno_llm_info info;
        steno_llm_get_info(sched_llm(s), &info);
        for (int t = 0; t < info.n_vocab; t++) n_eog += steno_llm_is_eog(sched_llm(s), t) != 0;
        eog = malloc(sizeof *eog * (size_t)(n_eog ? n_eog : 1));
        for (int t = 0, k = 0; eog && t < info.n_vocab; t++)
            if (steno_llm_is_eog(sched_llm(s), t)) eog[k++] = (steno_logit_bias){t, -INFINITY};
    }
    sched_job **jobs = o.ignore_eos && !eog ? NULL : calloc((size_t)n, sizeof *jobs);
    if (!jobs) {
        fprintf(stderr, "steno: %s: out of memory\n", file);
        rc = 1;
    }
    const double t0 = sched_now();
    for (int i = 0; jobs && i < n; i++) {
        int *toks = NULL, nt = 0;
        const steno_status ts =
            steno_llm_tokenize(sched_llm(s), items[i].prompt, strlen(items[i].prompt), !no_bos, 0, &toks, &nt);
        if (ts != STENO_OK || nt == 0) {
            fprintf(stderr, "steno: %s line %d: %s\n", file, items[i].line,
                    ts != STENO_OK ? steno_errmsg() : "the prompt has no tokens (drop --no-bos)");
            free(toks);
            rc = 1;
            break;
        }
        sched_generate_req r = {toks, nt, items[i].max_tokens, items[i].sp, NULL, 0, 0, 0};
        if (eog) {
            r.sampler.logit_bias = eog;
            r.sampler.n_logit_bias = n_eog;
        }
        const steno_status st = sched_submit_generate(s, &r, 0, &jobs[i]);
        free(toks);
        if (st != STENO_OK) {
            fprintf(stderr, "steno: %s line %d: %s\n", file, items[i].line, steno_errmsg());
            rc = 1;
            break;
        }
    }
    if (rc != 0)
        for (int i = 0; jobs && i < n && jobs[i]; i++) sched_job_cancel(jobs[i]);
    long long generated = 0;
    for (int i = 0; jobs && i < n && jobs[i]; i++) {
        int done = 0;
        while (!done) sched_job_wait(jobs[i], 1 << 30, 1000, &done);
        const sched_outcome *o = sched_job_outcome(jobs[i]);
        if (rc == 0 && o->status != STENO_OK) {
            fprintf(stderr, "steno: %s line %d: %s\n", file, items[i].line, o->errmsg);
            rc = 1;
            for (int k = i + 1; k < n && jobs[k]; k++) sched_job_cancel(jobs[k]); /* the run has failed */
        }
        if (rc == 0) {
            cJSON *out = cJSON_CreateObject();
            cJSON_AddNumberToObject(out, "index", i);
            cJSON_AddStringToObject(out, "text", o->text ? o->text : "");
            cJSON_AddNumberToObject(out, "prompt_tokens", o->n_prompt);
            cJSON_AddNumberToObject(out, "completion_tokens", o->n_generated);
            cJSON_AddStringToObject(out, "finish_reason", o->finish == SCHED_FINISH_STOP ? "stop" : "length");
            char *js = cJSON_PrintUnformatted(out);
            if (js) puts(js);
            free(js);
            cJSON_Delete(out);
        }
        generated += o->n_generated;
        sched_job_release(jobs[i]); /* its events are not needed any more */
        jobs[i] = NULL;
    }
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        fprintf(stderr, "steno: standard output: %s\n", strerror(errno));
        rc = 1;
    }
    const double wall = sched_now() - t0;
    if (rc == 0)
        fprintf(stderr, "steno generate: %d prompts, %lld tokens generated in %.2f s = %.1f tokens/s (--parallel %d)\n",
                n, generated, wall, wall > 0 ? generated / wall : 0.0, parallel);
    for (int i = 0; jobs && i < n; i++)
        if (jobs[i]) {
            sched_job_cancel(jobs[i]);
            sched_job_release(jobs[i]);
        }
    free(jobs);
    free(eog);
    sched_free(s);
out:
    for (int i = 0; i < n; i++) free(items[i].prompt);
    free(items);
    free(text);
    return rc;
}
