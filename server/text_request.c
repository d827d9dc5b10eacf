/* text_request.c — see text_request.h. */
#include "server/text_request.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "text/utf8.h"

/* ------------------------------------------------------------------------------ reading the body */

#define BAD(param_, ...)                                                              \
    do {                                                                              \
        api_error_set(e, 400, param_, "invalid_value", __VA_ARGS__);                  \
        return -1;                                                                    \
    } while (0)

static int get_number(const text_limits *L, cJSON *body, const char *name, double lo, double hi, double *out, api_error *e) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) BAD(name, "%s: expected a number", name);
    char a[32], b[32], c[32];
    if (v->valuedouble < lo || v->valuedouble > hi)
        BAD(name, "%s: %s is out of range (%s to %s)", name, api_num_text(v->valuedouble, a, sizeof a),
            api_num_text(lo, b, sizeof b), api_num_text(hi, c, sizeof c));
    *out = v->valuedouble;
    return 1;
}

static int get_int(const text_limits *L, cJSON *body, const char *name, double lo, double hi, int *out, api_error *e) {
    double d;
    const int got = get_number(L, body, name, lo, hi, &d, e);
    if (got <= 0) return got;
    if (d != floor(d)) BAD(name, "%s: expected an integer", name);
    *out = (int)d;
    return 1;
}

static int get_bool(const text_limits *L, cJSON *body, const char *name, int *out, api_error *e) {
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

static int read_prompt_chat(const text_limits *L, cJSON *body, text_req *t, api_error *e) {
    const steno_llm *m = L->m;
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
        BAD("messages", "model '%s' has no chat template (tokenizer.chat_template) and no chat format steno knows; use /v1/completions",
            L->llm_id);
    if (st != STENO_OK) BAD("messages", "%s", steno_errmsg());
    return 0;
}

static int read_prompt_completion(const text_limits *L, cJSON *body, text_req *t, api_error *e) {
    const steno_llm *m = L->m;
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

int text_request_parse(const text_limits *L, cJSON *body, text_req *t, api_error *e) {
    if (!cJSON_IsObject(body)) BAD(NULL, "the body is not a JSON object");
    cJSON *model = cJSON_GetObjectItemCaseSensitive(body, "model");
    if (model && !cJSON_IsNull(model) && !cJSON_IsString(model)) BAD("model", "model: expected a string");
    if (cJSON_IsString(model) && model->valuestring[0] && strcmp(model->valuestring, L->llm_id) != 0) {
        api_error_set(e, 404, "model", "model_not_found", "model '%.200s' is not loaded; this server serves '%s'",
                      model->valuestring, L->llm_id);
        return -1;
    }
    /* what steno does not do is refused, not silently ignored */
    cJSON *tools = cJSON_GetObjectItemCaseSensitive(body, "tools");
    if (tools && !cJSON_IsNull(tools) && !(cJSON_IsArray(tools) && cJSON_GetArraySize(tools) == 0))
        BAD("tools", "tools: function calling is not supported");
    cJSON *rf = cJSON_GetObjectItemCaseSensitive(body, "response_format");
    cJSON *rft = cJSON_GetObjectItemCaseSensitive(rf, "type");
    if (rf && !cJSON_IsNull(rf) && !(cJSON_IsString(rft) && strcmp(rft->valuestring, "text") == 0))
        BAD("response_format", "response_format: only {\"type\": \"text\"} is supported");
    int n = 1;
    if (get_int(L, body, "n", 1, 1e9, &n, e) < 0) return -1;
    if (n != 1) BAD("n", "n: only 1 choice per request is supported");
    if (get_bool(L, body, "stream", &t->stream, e) < 0) return -1;
    cJSON *so = cJSON_GetObjectItemCaseSensitive(body, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so)) BAD("stream_options", "stream_options: expected an object");
        if (get_bool(L, so, "include_usage", &t->include_usage, e) < 0) return -1;
    }
    t->sp = steno_sampler_default_params();
    t->sp.seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)t;
    double d;
    int iv;
    if ((iv = get_number(L, body, "temperature", 0, 2, &d, e)) < 0) return -1;
    if (iv > 0) t->sp.temperature = (float)d;
    if ((iv = get_number(L, body, "top_p", 0, 1, &d, e)) < 0) return -1;
    if (iv > 0) t->sp.top_p = (float)d;
    if ((iv = get_number(L, body, "min_p", 0, 1, &d, e)) < 0) return -1;
    if (iv > 0) t->sp.min_p = (float)d;
    int k = 0;
    if ((iv = get_int(L, body, "top_k", 0, 1e9, &k, e)) < 0) return -1;
    if (iv > 0) t->sp.top_k = k;
    if ((iv = get_number(L, body, "presence_penalty", -2, 2, &d, e)) < 0) return -1;
    if (iv > 0) t->sp.presence_penalty = (float)d;
    if ((iv = get_number(L, body, "frequency_penalty", -2, 2, &d, e)) < 0) return -1;
    if (iv > 0) t->sp.frequency_penalty = (float)d;
    if ((iv = get_number(L, body, "repeat_penalty", 0, 10, &d, e)) < 0) return -1;
    if (iv > 0) t->sp.repeat_penalty = (float)d;
    if ((iv = get_number(L, body, "seed", -9.2e18, 9.2e18, &d, e)) < 0) return -1;
    if (iv > 0) t->sp.seed = (uint64_t)(int64_t)d;
    /* max_completion_tokens (chat) / max_tokens */
    t->max_tokens = 0;
    int mt = 0;
    if ((iv = get_int(L, body, "max_completion_tokens", 1, L->max_tokens, &mt, e)) < 0) return -1;
    if (iv == 0 && (iv = get_int(L, body, "max_tokens", 1, L->max_tokens, &mt, e)) < 0) return -1;
    t->max_tokens = iv > 0 ? mt : L->max_tokens;
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
        steno_llm_get_info(L->m, &info);
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
        if (get_bool(L, body, "logprobs", &t->logprobs, e) < 0) return -1;
        if (get_int(L, body, "top_logprobs", 0, SCHED_MAX_TOP, &t->top_logprobs, e) < 0) return -1;
        if (t->top_logprobs && !t->logprobs) BAD("top_logprobs", "top_logprobs needs logprobs: true");
    } else {
        cJSON *lp = cJSON_GetObjectItemCaseSensitive(body, "logprobs");
        if (lp && !cJSON_IsNull(lp)) {
            if (get_int(L, body, "logprobs", 0, 5, &t->top_logprobs, e) < 0) return -1;
            t->logprobs = 1;
        }
        if (get_bool(L, body, "echo", &t->echo, e) < 0) return -1;
    }
    return t->chat ? read_prompt_chat(L, body, t, e) : read_prompt_completion(L, body, t, e);
}
#undef BAD

void text_request_free(text_req *t) {
    if (!t) return;
    free(t->prompt);
    free(t->prompt_text);
    free(t);
}

int text_valid_utf8(const char *s) { return valid_utf8(s); }
