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
#include "server/job_reply.h"
#include "server/serve_internal.h"
#include "server/text_request.h"
#include "text/utf8.h"


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

/* completions' legacy layout (parallel arrays): one token event appended at text offset at */
static void legacy_logprob_add(const steno_llm *m, cJSON *toks, cJSON *tlp, cJSON *top, cJSON *off,
                               const sched_event *e, size_t at) {
    char *s = steno_utf8_sanitize(e->piece, (size_t)e->piece_len);
    cJSON_AddItemToArray(toks, cJSON_CreateString(s ? s : ""));
    free(s);
    cJSON_AddItemToArray(tlp, cJSON_CreateNumber(e->logprob));
    cJSON *alt = cJSON_CreateObject();
    for (int k = 0; k < e->n_top; k++) {
        char piece[256];
        int n = steno_llm_token_piece(m, e->top[k].token, -1, 0, piece, (int)sizeof piece);
        char *ps = steno_utf8_sanitize(piece, n > 0 ? (size_t)n : 0);
        if (ps && !cJSON_GetObjectItemCaseSensitive(alt, ps)) cJSON_AddNumberToObject(alt, ps, e->top[k].logprob);
        free(ps);
    }
    cJSON_AddItemToArray(top, alt);
    cJSON_AddItemToArray(off, cJSON_CreateNumber((double)at));
}

static cJSON *usage_json(const sched_outcome *o) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", o->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", o->n_generated);
    cJSON_AddNumberToObject(u, "total_tokens", o->n_prompt + o->n_generated);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", o->n_cached);
    if (o->spec_on) {
        cJSON *sp = cJSON_AddObjectToObject(u, "speculation"); /* steno serve --draft-kind */
        cJSON_AddNumberToObject(sp, "drafted", o->spec_drafted);
        cJSON_AddNumberToObject(sp, "accepted", o->spec_accepted);
        cJSON_AddNumberToObject(sp, "target_calls", o->spec_passes);
    }
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
                legacy_logprob_add(m, toks, tlp, top, off, e, at);
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
    size_t text_at; /* completions with logprobs: the text offset of the next token */
    double last_send;
    sse_out out;
} text_stream;


static void text_stream_init(void *state, http_req *r, sched_job *job, void *arg) {
    *(text_stream *)state = (text_stream){.r = r, .t = arg, .job = job, .last_send = sched_now()};
}

static void text_stream_done(void *user) {
    text_stream *s = user;
    if (sched_job_get_state(s->job) != SCHED_DONE) sched_job_cancel(s->job);
    sched_job_release(s->job);
    sse_out_free(&s->out);
    text_request_free(s->t);
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
                if (s->t->logprobs && e->token >= 0) { /* the legacy arrays, one token each chunk */
                    cJSON *lp = cJSON_AddObjectToObject(choice, "logprobs");
                    legacy_logprob_add(m, cJSON_AddArrayToObject(lp, "tokens"),
                                       cJSON_AddArrayToObject(lp, "token_logprobs"),
                                       cJSON_AddArrayToObject(lp, "top_logprobs"),
                                       cJSON_AddArrayToObject(lp, "text_offset"), e, s->text_at);
                    s->text_at += (size_t)e->piece_len;
                } else {
                    cJSON_AddNullToObject(choice, "logprobs");
                }
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
                cJSON *err = http_job_error_json(o, "generation", s->r->srv->o.request_timeout);
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
    if (!text_valid_utf8(r->body)) return http_send_error(r, 400, NULL, NULL, "invalid_utf8", "the body is not valid UTF-8");
    /* one JSON value and nothing after it (trailing bytes, or a NUL inside, are not silently dropped) */
    const char *end = NULL;
    cJSON *body = strlen(r->body) == r->body_len ? cJSON_ParseWithOpts(r->body, &end, 1) : NULL;
    if (!body) return http_send_error(r, 400, NULL, NULL, "invalid_json", "the body is not one valid JSON value");
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
    const text_limits limits = {sched_llm(S->sched), S->llm_id, S->o.max_tokens};
    api_error e;
    if (text_request_parse(&limits, body, t, &e) != 0) {
        cJSON_Delete(body);
        text_request_free(t);
        return http_send_api_error(r, &e);
    }
    if (t->n_prompt >= sched_n_ctx(S->sched)) {
        cJSON_Delete(body);
        const int n = t->n_prompt;
        text_request_free(t);
        return http_send_error(r, 400, NULL, chat ? "messages" : "prompt", "context_length_exceeded",
                               "the prompt has %d tokens; the context holds %d (--ctx-size)", n, sched_n_ctx(S->sched));
    }
    if (t->max_tokens > sched_n_ctx(S->sched) - t->n_prompt) t->max_tokens = sched_n_ctx(S->sched) - t->n_prompt;
    sched_generate_req req = {t->prompt, t->n_prompt, t->max_tokens, t->sp, t->stop, t->n_stop,
                              t->logprobs ? t->top_logprobs : 0, t->logprobs};
    sched_job *job = NULL;
    const steno_status st = sched_submit_generate(S->sched, &req, S->o.request_timeout, &job);
    cJSON_Delete(body); /* the stop strings were copied into the job */
    memset(t->stop, 0, sizeof t->stop);
    if (st != STENO_OK) {
        text_request_free(t);
        return http_send_sched_error(r, st, steno_errmsg());
    }
    const job_reply_result how =
        job_reply(r, job, t->stream, sizeof(text_stream), text_stream_init, t, text_stream_next, text_stream_done, &rc);
    if (how != JOB_REPLY_FINISHED) {
        if (how == JOB_REPLY_ANSWERED) text_request_free(t); /* else the stream owns it */
        return rc;
    }
    const sched_outcome *o = sched_job_outcome(job);
    r->prompt_tokens = o->n_prompt;
    r->completion_tokens = o->n_generated;
    if (o->status != STENO_OK) {
        rc = http_send_job_error(r, o, "generation");
    } else {
        rc = send_whole(r, t, job);
    }
    sched_job_release(job);
    text_request_free(t);
    return rc;
}

int route_chat(http_req *r) { return route_text(r, 1); }
int route_completions(http_req *r) { return route_text(r, 0); }
