/* routes_text.c — POST /v1/chat/completions and POST /v1/completions (OpenAI's text API): the JSON
 * body is validated field by field (a wrong type or range is a 400 naming the field), the prompt
 * is built with the model's chat template (chat) or tokenized as the CLI's generate does
 * (completions), the generation runs as a scheduler job, and the answer is one JSON object or a
 * stream of chunk objects ending in `data: [DONE]`. Stop strings are matched on the decoded text
 * with hold-back in the job (text/stop_text.h), so no partial stop string is ever sent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/http.h"
#include "server/serve_internal.h"
#include "text/utf8.h"

#define MAX_STOP 16
#define MAX_BIAS 1024

typedef struct text_req {
    int chat;
    int stream, include_usage, logprobs, top_logprobs, echo;
    int max_tokens;
    steno_sampler_params sp;
    steno_logit_bias bias[MAX_BIAS];
    const char *stop[MAX_STOP];
    int n_stop;
    int *prompt;
    int n_prompt;
    char *prompt_text; /* completions with echo */
    char id[48];
    long created;
} text_req;

/* ------------------------------------------------------------------------------ reading the body */

#define BAD(param, ...)                                                              \
    do {                                                                             \
        *rc = http_send_error(r, 400, NULL, param, "invalid_value", __VA_ARGS__);     \
        return -1;                                                                   \
    } while (0)

static int get_number(http_req *r, cJSON *body, const char *name, double lo, double hi, double *out, int *rc) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) BAD(name, "%s: expected a number", name);
    if (v->valuedouble < lo || v->valuedouble > hi) BAD(name, "%s: %g is out of range (%g to %g)", name, v->valuedouble, lo, hi);
    *out = v->valuedouble;
    return 1;
}

static int get_int(http_req *r, cJSON *body, const char *name, double lo, double hi, int *out, int *rc) {
    double d;
    const int got = get_number(r, body, name, lo, hi, &d, rc);
    if (got <= 0) return got;
    if (d != floor(d)) BAD(name, "%s: expected an integer", name);
    *out = (int)d;
    return 1;
}

static int get_bool(http_req *r, cJSON *body, const char *name, int *out, int *rc) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) BAD(name, "%s: expected true or false", name);
    *out = cJSON_IsTrue(v);
    return 1;
}

static int valid_utf8(const char *s) {
    char *clean = steno_utf8_sanitize(s, strlen(s));
    const int ok = clean && strcmp(clean, s) == 0;
    free(clean);
    return ok;
}

/* Message content: a string, or OpenAI's array of parts of which the text parts are joined. */
static char *message_text(cJSON *content) {
    if (cJSON_IsString(content)) return strdup(content->valuestring);
    if (cJSON_IsNull(content)) return strdup("");
    if (!cJSON_IsArray(content)) return NULL;
    size_t len = 0;
    char *out = calloc(1, 1);
    cJSON *part;
    cJSON_ArrayForEach(part, content) {
        cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text)) {
            free(out);
            return NULL;
        }
        const size_t n = strlen(text->valuestring);
        char *o = out ? realloc(out, len + n + 1) : NULL;
        if (!o) {
            free(out);
            return NULL;
        }
        memcpy(o + len, text->valuestring, n + 1);
        out = o;
        len += n;
    }
    return out;
}

static int read_prompt_chat(http_req *r, cJSON *body, text_req *t, int *rc) {
    const steno_llm *m = sched_llm(r->srv->sched);
    cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
        BAD("messages", "messages: expected a non-empty array of {role, content}");
    const int n = cJSON_GetArraySize(msgs);
    if (n > 4096) BAD("messages", "messages: %d messages (at most 4096)", n);
    steno_chat_msg *cm = calloc((size_t)n, sizeof *cm);
    char **texts = calloc((size_t)n, sizeof *texts);
    int ok = cm && texts, i = 0;
    cJSON *msg;
    char why[160] = "out of memory";
    cJSON_ArrayForEach(msg, msgs) {
        if (!ok) break;
        cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
        if (!cJSON_IsObject(msg) || !cJSON_IsString(role)) {
            snprintf(why, sizeof why, "messages[%d]: expected an object with a string 'role'", i);
            ok = 0;
            break;
        }
        const char *rl = role->valuestring;
        if (!strcmp(rl, "developer")) rl = "system";
        if (strcmp(rl, "system") && strcmp(rl, "user") && strcmp(rl, "assistant")) {
            snprintf(why, sizeof why, "messages[%d].role: '%.40s' is not system, developer, user or assistant", i, rl);
            ok = 0;
            break;
        }
        texts[i] = message_text(cJSON_GetObjectItemCaseSensitive(msg, "content"));
        if (!texts[i] || !valid_utf8(texts[i])) {
            snprintf(why, sizeof why, "messages[%d].content: expected a UTF-8 string or an array of text parts", i);
            ok = 0;
            break;
        }
        cm[i].role = rl;
        cm[i].content = texts[i];
        i++;
    }
    char *text = NULL;
    steno_status st = STENO_OK;
    if (ok) {
        st = steno_llm_chat_format(m, cm, n, 1, &text);
        if (st == STENO_OK) st = steno_llm_tokenize(m, text, strlen(text), 1, 1, &t->prompt, &t->n_prompt);
    }
    for (int k = 0; texts && k < n; k++) free(texts[k]);
    free(texts);
    free(cm);
    free(text);
    if (!ok) BAD("messages", "%s", why);
    if (st == STENO_E_UNSUPPORTED) /* the library's message names the file; the client knows the id */
        BAD("messages", "model '%s' has no chat template steno knows (ChatML or Gemma turns); use /v1/completions",
            r->srv->llm_id);
    if (st != STENO_OK) BAD("messages", "%s", steno_errmsg());
    return 0;
}

static int read_prompt_completion(http_req *r, cJSON *body, text_req *t, int *rc) {
    const steno_llm *m = sched_llm(r->srv->sched);
    cJSON *p = cJSON_GetObjectItemCaseSensitive(body, "prompt");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
        p = cJSON_GetArrayItem(p, 0);
    if (cJSON_IsArray(p)) { /* token ids */
        const int n = cJSON_GetArraySize(p);
        steno_llm_info info;
        steno_llm_get_info(m, &info);
        if (n == 0) BAD("prompt", "prompt: an empty array");
        t->prompt = malloc(sizeof(int) * (size_t)n);
        if (!t->prompt) BAD(NULL, "out of memory");
        cJSON *v;
        cJSON_ArrayForEach(v, p) {
            if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
                v->valuedouble >= info.n_vocab)
                BAD("prompt", "prompt: expected a string, or an array of token ids below %d", info.n_vocab);
            t->prompt[t->n_prompt++] = (int)v->valuedouble;
        }
        return 0;
    }
    if (!cJSON_IsString(p)) BAD("prompt", "prompt: expected a string (one prompt per request)");
    if (!valid_utf8(p->valuestring)) BAD("prompt", "prompt: invalid UTF-8");
    if (t->echo && !(t->prompt_text = strdup(p->valuestring))) BAD(NULL, "out of memory");
    if (steno_llm_tokenize(m, p->valuestring, strlen(p->valuestring), 1, 0, &t->prompt, &t->n_prompt) != STENO_OK)
        BAD("prompt", "%s", steno_errmsg());
    if (t->n_prompt == 0) {
        steno_llm_info info;
        steno_llm_get_info(m, &info);
        if (info.bos < 0) BAD("prompt", "prompt: empty, and the model has no BOS token to start from");
        t->prompt[0] = info.bos;
        t->n_prompt = 1;
    }
    return 0;
}

static int read_request(http_req *r, cJSON *body, text_req *t, int *rc) {
    server_ctx *S = r->srv;
    if (!cJSON_IsObject(body)) BAD(NULL, "the body is not a JSON object");
    cJSON *model = cJSON_GetObjectItemCaseSensitive(body, "model");
    if (model && !cJSON_IsNull(model) && !cJSON_IsString(model)) BAD("model", "model: expected a string");
    if (cJSON_IsString(model) && model->valuestring[0] && strcmp(model->valuestring, S->llm_id) != 0) {
        *rc = http_send_error(r, 404, NULL, "model", "model_not_found",
                              "model '%s' is not loaded; this server serves '%s'", model->valuestring, S->llm_id);
        return -1;
    }
    int n = 1;
    if (get_int(r, body, "n", 1, 1e9, &n, rc) < 0) return -1;
    if (n != 1) BAD("n", "n: only 1 choice per request is supported");
    if (get_bool(r, body, "stream", &t->stream, rc) < 0) return -1;
    cJSON *so = cJSON_GetObjectItemCaseSensitive(body, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so)) BAD("stream_options", "stream_options: expected an object");
        if (get_bool(r, so, "include_usage", &t->include_usage, rc) < 0) return -1;
    }
    t->sp = steno_sampler_default_params();
    t->sp.seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)t;
    double d;
    int iv;
    if ((iv = get_number(r, body, "temperature", 0, 2, &d, rc)) < 0) return -1;
    if (iv > 0) t->sp.temperature = (float)d;
    if ((iv = get_number(r, body, "top_p", 0, 1, &d, rc)) < 0) return -1;
    if (iv > 0) t->sp.top_p = (float)d;
    if ((iv = get_number(r, body, "min_p", 0, 1, &d, rc)) < 0) return -1;
    if (iv > 0) t->sp.min_p = (float)d;
    int k = 0;
    if ((iv = get_int(r, body, "top_k", 0, 1e9, &k, rc)) < 0) return -1;
    if (iv > 0) t->sp.top_k = k;
    if ((iv = get_number(r, body, "presence_penalty", -2, 2, &d, rc)) < 0) return -1;
    if (iv > 0) t->sp.presence_penalty = (float)d;
    if ((iv = get_number(r, body, "frequency_penalty", -2, 2, &d, rc)) < 0) return -1;
    if (iv > 0) t->sp.frequency_penalty = (float)d;
    if ((iv = get_number(r, body, "repeat_penalty", 0, 10, &d, rc)) < 0) return -1;
    if (iv > 0) t->sp.repeat_penalty = (float)d;
    if ((iv = get_number(r, body, "seed", -9.2e18, 9.2e18, &d, rc)) < 0) return -1;
    if (iv > 0) t->sp.seed = (uint64_t)(int64_t)d;
    /* max_completion_tokens (chat) / max_tokens */
    t->max_tokens = 0;
    int mt = 0;
    if ((iv = get_int(r, body, "max_completion_tokens", 1, 1e9, &mt, rc)) < 0) return -1;
    if (iv == 0 && (iv = get_int(r, body, "max_tokens", 1, 1e9, &mt, rc)) < 0) return -1;
    if (iv > 0 && mt > S->o.max_tokens)
        BAD(cJSON_GetObjectItemCaseSensitive(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens",
            "max_tokens: %d is more than this server's limit of %d (--max-tokens)", mt, S->o.max_tokens);
    t->max_tokens = iv > 0 ? mt : S->o.max_tokens;
    /* stop */
    cJSON *stop = cJSON_GetObjectItemCaseSensitive(body, "stop");
    if (cJSON_IsString(stop)) t->stop[t->n_stop++] = stop->valuestring;
    else if (cJSON_IsArray(stop)) {
        cJSON *v;
        cJSON_ArrayForEach(v, stop) {
            if (!cJSON_IsString(v)) BAD("stop", "stop: expected a string or an array of strings");
            if (t->n_stop == MAX_STOP) BAD("stop", "stop: at most %d strings", MAX_STOP);
            t->stop[t->n_stop++] = v->valuestring;
        }
    } else if (stop && !cJSON_IsNull(stop)) BAD("stop", "stop: expected a string or an array of strings");
    /* logit_bias: {"token id": bias in [-100, 100]} */
    cJSON *lb = cJSON_GetObjectItemCaseSensitive(body, "logit_bias");
    if (lb && !cJSON_IsNull(lb)) {
        if (!cJSON_IsObject(lb)) BAD("logit_bias", "logit_bias: expected an object of token id → bias");
        steno_llm_info info;
        steno_llm_get_info(sched_llm(S->sched), &info);
        cJSON *v;
        cJSON_ArrayForEach(v, lb) {
            char *end;
            const long id = strtol(v->string, &end, 10);
            if (end == v->string || *end || id < 0 || id >= info.n_vocab)
                BAD("logit_bias", "logit_bias: key '%.40s' is not a token id below %d", v->string, info.n_vocab);
            if (!cJSON_IsNumber(v) || v->valuedouble < -100 || v->valuedouble > 100)
                BAD("logit_bias", "logit_bias: the bias of token %ld must be a number from -100 to 100", id);
            if (t->sp.n_logit_bias == MAX_BIAS) BAD("logit_bias", "logit_bias: at most %d entries", MAX_BIAS);
            t->bias[t->sp.n_logit_bias++] =
                (steno_logit_bias){(int)id, v->valuedouble <= -100 ? -INFINITY : (float)v->valuedouble};
        }
        t->sp.logit_bias = t->bias;
    }
    /* log-probabilities: chat {logprobs: bool, top_logprobs: 0..20}; completions {logprobs: 0..5} */
    if (t->chat) {
        if (get_bool(r, body, "logprobs", &t->logprobs, rc) < 0) return -1;
        if (get_int(r, body, "top_logprobs", 0, SCHED_MAX_TOP, &t->top_logprobs, rc) < 0) return -1;
        if (t->top_logprobs && !t->logprobs) BAD("top_logprobs", "top_logprobs needs logprobs: true");
    } else {
        cJSON *lp = cJSON_GetObjectItemCaseSensitive(body, "logprobs");
        if (lp && !cJSON_IsNull(lp)) {
            if (get_int(r, body, "logprobs", 0, 5, &t->top_logprobs, rc) < 0) return -1;
            t->logprobs = 1;
        }
        if (get_bool(r, body, "echo", &t->echo, rc) < 0) return -1;
    }
    return t->chat ? read_prompt_chat(r, body, t, rc) : read_prompt_completion(r, body, t, rc);
}
#undef BAD

/* ----------------------------------------------------------------------------------- the answer */

static cJSON *token_logprob_json(const steno_llm *m, int token, const char *piece, int len, float lp) {
    cJSON *o = cJSON_CreateObject();
    char *s = steno_utf8_sanitize(piece, (size_t)len);
    cJSON_AddStringToObject(o, "token", s ? s : "");
    free(s);
    cJSON_AddNumberToObject(o, "logprob", lp);
    cJSON *bytes = cJSON_AddArrayToObject(o, "bytes");
    for (int i = 0; i < len; i++) cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)piece[i]));
    return o;
}

/* chat: {"token","logprob","bytes","top_logprobs":[...]} for one token event */
static cJSON *chat_logprob(const steno_llm *m, const sched_event *e) {
    cJSON *o = token_logprob_json(m, e->token, e->piece, e->piece_len, e->logprob);
    cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
    for (int k = 0; k < e->n_top; k++) {
        char piece[256];
        int pl = steno_llm_token_piece(m, e->top[k].token, -1, 0, piece, (int)sizeof piece);
        if (pl < 0) pl = 0;
        cJSON_AddItemToArray(top, token_logprob_json(m, e->top[k].token, piece, pl, e->top[k].logprob));
    }
    return o;
}

static cJSON *usage_json(const sched_outcome *o) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", o->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", o->n_generated);
    cJSON_AddNumberToObject(u, "total_tokens", o->n_prompt + o->n_generated);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", o->n_cached);
    return u;
}

static cJSON *envelope(const text_req *t, const char *object, const char *model) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", t->id);
    cJSON_AddStringToObject(root, "object", object);
    cJSON_AddNumberToObject(root, "created", (double)t->created);
    cJSON_AddStringToObject(root, "model", model);
    cJSON_AddStringToObject(root, "system_fingerprint", "steno-" STENO_VERSION);
    return root;
}

static const char *finish_name(const sched_outcome *o) { return o->finish == SCHED_FINISH_STOP ? "stop" : "length"; }

static int send_whole(http_req *r, text_req *t, sched_job *job) {
    const steno_llm *m = sched_llm(r->srv->sched);
    const sched_outcome *o = sched_job_outcome(job);
    cJSON *root = envelope(t, t->chat ? "chat.completion" : "text_completion", r->srv->llm_id);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, c);
    cJSON_AddNumberToObject(c, "index", 0);
    int done = 0;
    const int n_ev = sched_job_wait(job, 0, 0, &done);
    if (t->chat) {
        cJSON *msg = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        cJSON_AddStringToObject(msg, "content", o->text ? o->text : "");
        if (t->logprobs) {
            cJSON *lp = cJSON_AddObjectToObject(c, "logprobs"), *content = cJSON_AddArrayToObject(lp, "content");
            for (int i = 0; i < n_ev; i++) {
                const sched_event *e = sched_job_event(job, i);
                if (e->token >= 0) cJSON_AddItemToArray(content, chat_logprob(m, e));
            }
        } else {
            cJSON_AddNullToObject(c, "logprobs");
        }
    } else {
        size_t pl = t->prompt_text ? strlen(t->prompt_text) : 0, tl = o->text ? strlen(o->text) : 0;
        char *text = malloc(pl + tl + 1);
        if (text) {
            memcpy(text, t->prompt_text ? t->prompt_text : "", pl);
            memcpy(text + pl, o->text ? o->text : "", tl + 1);
        }
        cJSON_AddStringToObject(c, "text", text ? text : "");
        free(text);
        if (t->logprobs) { /* the legacy layout: parallel arrays */
            cJSON *lp = cJSON_AddObjectToObject(c, "logprobs");
            cJSON *toks = cJSON_AddArrayToObject(lp, "tokens"), *tlp = cJSON_AddArrayToObject(lp, "token_logprobs");
            cJSON *top = cJSON_AddArrayToObject(lp, "top_logprobs"), *off = cJSON_AddArrayToObject(lp, "text_offset");
            size_t at = pl;
            for (int i = 0; i < n_ev; i++) {
                const sched_event *e = sched_job_event(job, i);
                if (e->token < 0) continue;
                char *s = steno_utf8_sanitize(e->piece, (size_t)e->piece_len);
                cJSON_AddItemToArray(toks, cJSON_CreateString(s ? s : ""));
                free(s);
                cJSON_AddItemToArray(tlp, cJSON_CreateNumber(e->logprob));
                cJSON *alt = cJSON_CreateObject();
                for (int k = 0; k < e->n_top; k++) {
                    char piece[256];
                    int n = steno_llm_token_piece(m, e->top[k].token, -1, 0, piece, (int)sizeof piece);
                    char *ps = steno_utf8_sanitize(piece, n > 0 ? (size_t)n : 0);
                    if (ps && !cJSON_GetObjectItemCaseSensitive(alt, ps))
                        cJSON_AddNumberToObject(alt, ps, e->top[k].logprob);
                    free(ps);
                }
                cJSON_AddItemToArray(top, alt);
                cJSON_AddItemToArray(off, cJSON_CreateNumber((double)at));
                at += (size_t)e->piece_len;
            }
        } else {
            cJSON_AddNullToObject(c, "logprobs");
        }
    }
    cJSON_AddStringToObject(c, "finish_reason", finish_name(o));
    cJSON_AddItemToObject(root, "usage", usage_json(o));
    return http_send_json(r, 200, root);
}

typedef struct text_stream {
    http_req *r;
    text_req *t;
    sched_job *job;
    int next_event, sent_role, finished;
    double last_send;
    sse_out out;
} text_stream;

static void text_req_free(text_req *t) {
    if (!t) return;
    free(t->prompt);
    free(t->prompt_text);
    free(t);
}

static void text_stream_done(void *user) {
    text_stream *s = user;
    if (sched_job_get_state(s->job) != SCHED_DONE) sched_job_cancel(s->job);
    sched_job_release(s->job);
    sse_out_free(&s->out);
    text_req_free(s->t);
    free(s);
}

static cJSON *chunk(text_stream *s, cJSON **choice) {
    cJSON *root =
        envelope(s->t, s->t->chat ? "chat.completion.chunk" : "text_completion", s->r->srv->llm_id);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    *choice = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, *choice);
    cJSON_AddNumberToObject(*choice, "index", 0);
    return root;
}

static long text_stream_next(void *user, char *buf, size_t cap) {
    text_stream *s = user;
    const steno_llm *m = sched_llm(s->r->srv->sched);
    for (;;) {
        const long n = sse_out_take(&s->out, buf, cap);
        if (n > 0) {
            s->last_send = sched_now();
            return n;
        }
        if (s->finished) return -1;
        cJSON *choice;
        if (s->t->chat && !s->sent_role) { /* OpenAI's first chunk: the role */
            cJSON *root = chunk(s, &choice);
            cJSON *delta = cJSON_AddObjectToObject(choice, "delta");
            cJSON_AddStringToObject(delta, "role", "assistant");
            cJSON_AddStringToObject(delta, "content", "");
            cJSON_AddNullToObject(choice, "logprobs");
            cJSON_AddNullToObject(choice, "finish_reason");
            s->sent_role = 1;
            if (sse_out_json(&s->out, root) != 0) return -2;
            continue;
        }
        int done = 0;
        const int have = sched_job_wait(s->job, s->next_event, 250, &done);
        if (s->next_event < have) {
            const sched_event *e = sched_job_event(s->job, s->next_event++);
            if (!e->text[0] && !(s->t->logprobs && e->token >= 0)) continue;
            cJSON *root = chunk(s, &choice);
            if (s->t->chat) {
                cJSON *delta = cJSON_AddObjectToObject(choice, "delta");
                cJSON_AddStringToObject(delta, "content", e->text);
                if (s->t->logprobs && e->token >= 0) {
                    cJSON *lp = cJSON_AddObjectToObject(choice, "logprobs");
                    cJSON_AddItemToArray(cJSON_AddArrayToObject(lp, "content"), chat_logprob(m, e));
                } else {
                    cJSON_AddNullToObject(choice, "logprobs");
                }
            } else {
                cJSON_AddStringToObject(choice, "text", e->text);
                cJSON_AddNullToObject(choice, "logprobs");
            }
            cJSON_AddNullToObject(choice, "finish_reason");
            if (sse_out_json(&s->out, root) != 0) return -2;
            continue;
        }
        if (done) {
            const sched_outcome *o = sched_job_outcome(s->job);
            s->finished = 1;
            s->r->prompt_tokens = o->n_prompt;
            s->r->completion_tokens = o->n_generated;
            if (o->status != STENO_OK) {
                cJSON *err = http_error_json(o->deadline_passed ? 504 : 500, NULL, NULL,
                                             o->deadline_passed ? "deadline_exceeded" : NULL,
                                             o->deadline_passed ? "the request's deadline passed" : o->errmsg);
                if (sse_out_json(&s->out, err) != 0) return -2;
            } else {
                cJSON *root = chunk(s, &choice);
                if (s->t->chat) cJSON_AddObjectToObject(choice, "delta");
                else cJSON_AddStringToObject(choice, "text", "");
                cJSON_AddNullToObject(choice, "logprobs");
                cJSON_AddStringToObject(choice, "finish_reason", finish_name(o));
                if (sse_out_json(&s->out, root) != 0) return -2;
                if (s->t->include_usage) {
                    cJSON *u = envelope(s->t, s->t->chat ? "chat.completion.chunk" : "text_completion",
                                        s->r->srv->llm_id);
                    cJSON_AddArrayToObject(u, "choices");
                    cJSON_AddItemToObject(u, "usage", usage_json(o));
                    if (sse_out_json(&s->out, u) != 0) return -2;
                }
            }
            if (sse_out_raw(&s->out, "data: [DONE]\n\n") != 0) return -2;
            continue;
        }
        if (sched_now() - s->last_send > 5.0) {
            if (sse_out_raw(&s->out, ": ping\n\n") != 0) return -2;
            continue;
        }
        if (http_client_gone(s->r)) return -2;
    }
}

static int route_text(http_req *r, int chat) {
    server_ctx *S = r->srv;
    if (!sched_llm(S->sched))
        return http_send_error(r, 404, NULL, "model", "model_not_found",
                               "no text model is loaded (start steno serve with --llm-model)");
    if (!valid_utf8(r->body)) return http_send_error(r, 400, NULL, NULL, "invalid_utf8", "the body is not valid UTF-8");
    cJSON *body = cJSON_ParseWithLength(r->body, r->body_len);
    if (!body) return http_send_error(r, 400, NULL, NULL, "invalid_json", "the body is not valid JSON");
    text_req *t = calloc(1, sizeof *t);
    if (!t) {
        cJSON_Delete(body);
        return http_send_error(r, 503, NULL, NULL, "out_of_memory", "out of memory");
    }
    t->chat = chat;
    t->created = (long)time(NULL);
    static unsigned long long counter;
    snprintf(t->id, sizeof t->id, "%s-%lx%llx", chat ? "chatcmpl" : "cmpl", t->created,
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    int rc = 0;
    if (read_request(r, body, t, &rc) != 0) {
        cJSON_Delete(body);
        text_req_free(t);
        return rc;
    }
    if (t->n_prompt >= sched_n_ctx(S->sched)) {
        cJSON_Delete(body);
        const int n = t->n_prompt;
        text_req_free(t);
        return http_send_error(r, 400, NULL, "messages", "context_length_exceeded",
                               "the prompt has %d tokens; the context holds %d (--ctx-size)", n, sched_n_ctx(S->sched));
    }
    if (t->max_tokens > sched_n_ctx(S->sched) - t->n_prompt) t->max_tokens = sched_n_ctx(S->sched) - t->n_prompt;
    sched_generate_req req = {t->prompt, t->n_prompt, t->max_tokens, t->sp, t->stop, t->n_stop,
                              t->logprobs ? t->top_logprobs : 0};
    sched_job *job = NULL;
    const steno_status st = sched_submit_generate(S->sched, &req, S->o.request_timeout, &job);
    cJSON_Delete(body); /* the stop strings were copied into the job */
    memset(t->stop, 0, sizeof t->stop);
    if (st != STENO_OK) {
        text_req_free(t);
        return http_send_sched_error(r, st, steno_errmsg());
    }
    if (t->stream) {
        text_stream *s = calloc(1, sizeof *s);
        if (!s) {
            sched_job_cancel(job);
            sched_job_release(job);
            text_req_free(t);
            return http_send_error(r, 503, NULL, NULL, "out_of_memory", "out of memory");
        }
        *s = (text_stream){.r = r, .t = t, .job = job, .last_send = sched_now()};
        return http_send_stream(r, "text/event-stream", text_stream_next, text_stream_done, s);
    }
    if (http_wait_job(r, job) != 0) {
        sched_job_release(job);
        text_req_free(t);
        return 0;
    }
    const sched_outcome *o = sched_job_outcome(job);
    r->prompt_tokens = o->n_prompt;
    r->completion_tokens = o->n_generated;
    if (o->status != STENO_OK) {
        if (o->deadline_passed)
            rc = http_send_error(r, 504, NULL, NULL, "deadline_exceeded",
                                 "the generation did not finish within %.0f s (--request-timeout)", S->o.request_timeout);
        else rc = http_send_error(r, o->cancelled ? 503 : 500, NULL, NULL, NULL, "%s", o->errmsg);
    } else {
        rc = send_whole(r, t, job);
    }
    sched_job_release(job);
    text_req_free(t);
    return rc;
}

int route_chat(http_req *r) { return route_text(r, 1); }
int route_completions(http_req *r) { return route_text(r, 0); }
