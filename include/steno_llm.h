/*
 * steno_llm.h — the public C API of steno's text generation: GGUF and llama2.c models (Llama family,
 * Gemma 3), tokenizers, KV caches (plain, rotating; f16/f32 or quantized rows), sampling, chat templates.
 *
 * Shape (as steno.h, after whisper.cpp and SQLite):
 *   steno_llm       a loaded model: mmap'd weights, configuration, tokenizer. Immutable after load;
 *                   one model may serve several contexts, each used by one thread at a time.
 *   steno_llm_ctx   one sequence: per-layer KV caches, scratch buffers, a thread pool.
 *   steno_sampler   the sampling chain with its RNG and token history.
 * Parameters come from *_default_params() functions so that new fields never break callers.
 * Every fallible function returns a steno_status; steno_errmsg() (steno.h) then names the input and
 * the reason ("model.gguf: tensor 'blk.0.attn_q.weight' extends past the end of the file ...").
 * The library never exits or aborts on bad input.
 * Units: token ids are int32; positions count tokens from 0; times are seconds; sizes are bytes.
 */
#ifndef STENO_LLM_H
#define STENO_LLM_H

#include <stddef.h>
#include <stdint.h>

#include "steno.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct steno_llm steno_llm;
typedef struct steno_llm_ctx steno_llm_ctx;
typedef struct steno_sampler steno_sampler;

/* ---------------------------------------------------------------------------------------------
 * Models
 * ------------------------------------------------------------------------------------------- */

typedef struct steno_llm_load_params {
    /* llama2.c checkpoints: the tokenizer file; NULL → tokenizer.bin, then tok<vocab>.bin, beside
     * the model. Ignored for GGUF (the tokenizer is in the file). */
    const char *tokenizer_path;
} steno_llm_load_params;

steno_llm_load_params steno_llm_default_load_params(void);

/** Resolves MODEL for steno_llm_load: an existing path is returned as is; a known name
 *  ("smollm2", "gemma3") becomes its file in the model cache
 *  ${STENO_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steno/models}/<name>/ (fetched by
 *  scripts/fetch_llm_models.sh). Writes the path, NUL-terminated, into buf[0..n).
 *  Errors: STENO_E_IO (a known name whose file is absent: the message says how to fetch it; or an
 *  unknown name that is not a file), STENO_E_INVALID_ARG (no model, buf NULL, or the path does not
 *  fit in n bytes: nothing truncated is ever returned as a success). */
steno_status steno_llm_resolve(const char *model, char *buf, size_t n);

/** Loads a model: a .gguf file (architectures "llama", "gemma3"; tensor types f32, f16, bf16,
 *  q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q6_K) or a llama2.c checkpoint (legacy format) with its
 *  tokenizer. The configuration is read from the file's own metadata. path may be a known name
 *  (steno_llm_resolve). On success *out is owned by the caller (steno_llm_free).
 *  Errors: STENO_E_IO, STENO_E_FORMAT (malformed or inconsistent file), STENO_E_UNSUPPORTED
 *  (architecture, tensor type or tokenizer steno does not implement), STENO_E_NOMEM. */
steno_status steno_llm_load(const char *path, const steno_llm_load_params *params, steno_llm **out);
void steno_llm_free(steno_llm *m);

/** A model's configuration (from the file's metadata). Strings are owned by the model. */
typedef struct steno_llm_info {
    const char *arch;         /* "llama" or "gemma3" */
    const char *name;         /* general.name, or the file name */
    const char *format;       /* "gguf" or "llama2c" */
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    int sliding_window;       /* 0 when every layer is global */
    int bos, eos, eot;        /* -1 when absent */
    size_t weight_bytes;      /* bytes of tensor data mapped */
} steno_llm_info;

void steno_llm_get_info(const steno_llm *m, steno_llm_info *info);

/* ---------------------------------------------------------------------------------------------
 * Tokens
 * ------------------------------------------------------------------------------------------- */

/** Tokenizes UTF-8 text of len bytes. add_special: prepend BOS (and append EOS) as the model's
 *  tokenizer asks; parse_special: control tokens written in the text ("<|im_start|>") become
 *  tokens. *tokens is malloc'd (caller frees); *n_tokens its length. Errors: STENO_E_NOMEM. */
steno_status steno_llm_tokenize(const steno_llm *m, const char *text, size_t len, int add_special, int parse_special,
                                int **tokens, int *n_tokens);

/** Writes the UTF-8 bytes of token's text (no NUL) into buf, at most cap bytes; returns the count,
 *  or minus the count needed when cap is too small. prev: the previous token or -1 (llama2.c
 *  tokenizers drop the space after BOS). special: print control tokens too. */
int steno_llm_token_piece(const steno_llm *m, int token, int prev, int special, char *buf, int cap);

/** 1 if token ends generation (EOS, end-of-turn tokens). */
int steno_llm_is_eog(const steno_llm *m, int token);

/* ---------------------------------------------------------------------------------------------
 * Contexts (one sequence and its KV caches)
 * ------------------------------------------------------------------------------------------- */

typedef enum steno_kv_type { STENO_KV_AUTO = 0, STENO_KV_F32 = 1, STENO_KV_F16 = 2 } steno_kv_type;

/** Quantized KV caches (docs/LLM.md "KV caches"): Q8/Q4 = MLX affine groups of kv_group elements
 *  for keys and values; TQ4/TQ3/TQ2 = TurboQuant: keys affine per vector (kv_key_bits), values
 *  Walsh–Hadamard-rotated and Lloyd-Max coded with 4/3/2 bits. */
typedef enum steno_kv_quant {
    STENO_KV_QUANT_PLAIN = 0,
    STENO_KV_QUANT_Q8 = 1,
    STENO_KV_QUANT_Q4 = 2,
    STENO_KV_QUANT_TQ4 = 3,
    STENO_KV_QUANT_TQ3 = 4,
    STENO_KV_QUANT_TQ2 = 5
} steno_kv_quant;

/** Arithmetic of the forward pass. GGML (default): llama.cpp's CPU backend bit for bit — each
 *  activation row quantized to the weight type's vec_dot type (q8_0/q8_1/q8_K/f16) before the
 *  integer dot products, GELU from ggml's f16 table. F32: evaluation precision — weights
 *  dequantized to f32 and multiplied with f32 activations (OpenBLAS sgemm), GELU's tanh form in f32
 *  (no f16 table); about
 *  as fast in prefill, slower in decode; used to measure what a KV cache kind costs without the
 *  activation-rounding noise (`steno perplexity --compute f32`). */
/*  FAST (Lab): q4_0/q4_1/q8_0/q4_K/q5_0/q6_K weight matrices repacked eight rows at a time at the first
 *  FAST context (kernels/gemm/matmul_x8.h: exact integer block dots, one float rounding per block instead
 *  of ggml's eight lane partials; the model holds the repacked copy beside the file's); every other
 *  type, and the rest of the forward pass, as GGML. Not bit-identical to llama.cpp; identical for
 *  any thread count and batch size; its gate against GGML and F32 is in docs/LLM.md ("Fast path"). */
typedef enum steno_llm_compute {
    STENO_LLM_COMPUTE_GGML = 0,
    STENO_LLM_COMPUTE_F32 = 1,
    STENO_LLM_COMPUTE_FAST = 2
} steno_llm_compute;

typedef struct steno_llm_ctx_params {
    int n_threads;     /* <= 0: all online CPUs */
    int n_ctx;         /* positions this context may hold; <= 0: the model's training context */
    int n_batch;       /* tokens per forward pass when evaluating a prompt (default 256) */
    steno_kv_type kv_type; /* AUTO: f32 for llama2.c models (bit-faithful to run.c), f16 for GGUF
                              (llama.cpp's default cache type) */
    int max_kv_size;   /* > 0: every global layer uses a rotating cache of this many slots (keys
                          visible per query); sliding-window layers keep their own window */
    int keep;          /* rotating caches selected by max_kv_size: leading tokens never evicted */
    int kv_reserve;    /* rotating caches: tokens of history kept beyond the window for rollback
                          (default 32) */
    steno_kv_quant kv_quant; /* PLAIN (default): kv_type rows; else quantized rows, every layer */
    int kv_group;      /* Q8/Q4 group size (default 32, as llama.cpp's q8_0/q4_0 blocks; 64 = mlx-lm's) */
    int kv_quant_start;/* tokens held as kv_type rows before the caches convert (default 0) */
    int kv_key_bits;   /* TQ*: key bits, 8 (default) or 4 */
    steno_llm_compute compute; /* GGML (default) or F32, see above */
    int kv_sink;       /* quantized caches: leading positions kept unquantized beside their codes,
                          the attention sinks (0..4096, default 4; 0 = mlx-lm's cache; llm/kvcache.h) */
    int kv_rotate;     /* quantized caches: 1 = keys, and Q8/Q4 values, Walsh–Hadamard rotated before
                          encoding (outliers spread over the head; needs power-of-two head dims);
                          0 = mlx-lm's codes; -1 (default) = 1 when the head dims are powers of two.
                          steno_llm_ctx_get_params reports the resolved 0/1 */
    int kv_center;     /* quantized caches: 1 (default) = keys encoded minus the mean key of the first
                          quantized tokens (kept until reset); 0 = raw keys (llm/kvcache.h) */
} steno_llm_ctx_params;

steno_llm_ctx_params steno_llm_ctx_default_params(void);

/** Creates a context over m (m must outlive it). Errors: STENO_E_INVALID_ARG, STENO_E_NOMEM. */
steno_status steno_llm_ctx_new(const steno_llm *m, const steno_llm_ctx_params *params, steno_llm_ctx **out);
void steno_llm_ctx_free(steno_llm_ctx *c);

/** Evaluates n tokens at positions n_past..n_past+n-1 (in chunks of n_batch), appending them to
 *  the KV caches. logits: NULL, or n_vocab floats receiving the logits of the last token, or, with
 *  logits_all, n × n_vocab floats (row t for token t). Errors: STENO_E_INVALID_ARG (token out of
 *  range, context full), STENO_E_NOMEM. On error the caches are rolled back to n_past. */
steno_status steno_llm_eval(steno_llm_ctx *c, const int *tokens, int n, float *logits, int logits_all);

/** One sequence of a batched evaluation: n_tokens tokens appended to ctx's KV caches at ctx's
 *  positions, and (logits not NULL) the n_vocab logits of its last token.
 *  A plain record passed as an array (no default function): every field is set by the caller and
 *  its size is part of the ABI, so it never grows within one SONAME (docs/API.md). */
typedef struct steno_llm_seq {
    steno_llm_ctx *ctx;
    const int *tokens;
    int n_tokens;
    float *logits;  /* NULL, or n_vocab floats (n_tokens × n_vocab with logits_all) */
    int logits_all; /* the logits of every token (a speculative verify block), not only the last */
} steno_llm_seq;

/** Evaluates several independent sequences in one forward pass (continuous batching's step):
 *  their tokens are packed, so the projections and the MLP read each weight once for all of
 *  them, while RoPE and attention use each sequence's own positions and KV caches. exec lends its
 *  scratch buffers and thread pool (it may be one of the seqs' contexts); the total token count
 *  must fit its n_batch. Each sequence's caches and logits are bit-identical to what
 *  steno_llm_eval of the same tokens on its own context gives (the kernels compute every row
 *  alone, in a fixed order), for any company and any thread count, with the GGML compute mode;
 *  with STENO_LLM_COMPUTE_F32 the OpenBLAS product may vary with the batch. Exceptions: a
 *  quantized cache with kv_quant_start > 0 converts at the first update that begins past that
 *  point, so where the prompt is cut into chunks matters to it, as it does for steno_llm_eval.
 *  All contexts must be over the same model, distinct, in exec's compute mode.
 *  Errors: STENO_E_INVALID_ARG (bad token, context full, too many tokens for exec's n_batch, a
 *  context over another model or mode, a context twice), STENO_E_NOMEM; on error every
 *  sequence's caches are rolled back where they can be (as steno_llm_eval: always for plain
 *  caches; a rotating ring after a wrap or a quantized cache that converted during the pass
 *  may not — reset such a context after a failure). Thread-safety: the contexts are not shared with other
 *  threads during the call. */
steno_status steno_llm_eval_batch(steno_llm_ctx *exec, const steno_llm_seq *seqs, int n_seqs);

/** Tokens in the KV caches (= position of the next token). */
int steno_llm_n_past(const steno_llm_ctx *c);

/** Rolls the caches back by n tokens (speculative rejection, regeneration). Rotating caches refuse
 *  (STENO_E_INVALID_ARG, nothing changed) when the ring no longer holds the history the next token
 *  needs; see steno_llm_ctx_params.kv_reserve. */
steno_status steno_llm_rollback(steno_llm_ctx *c, int n);

/** Empties the caches. */
void steno_llm_reset(steno_llm_ctx *c);

/** The context's state — every layer's KV cache (the held rows in their storage format, dtype or
 *  quantized codes; key centers; attention sinks) and the position — as one byte string, for the
 *  prompt cache and for saving a conversation (llama.cpp's llama_state_seq_get_data/set_data).
 *  steno_llm_state_save(c, NULL, 0) returns the size in bytes; with cap >= that size it writes the
 *  state into buf and returns the size; with a smaller cap it writes nothing and returns 0.
 *  steno_llm_state_load restores a state into a context of the same model whose
 *  steno_llm_state_config is equal: afterwards evaluation, sampling and rollback give bit-identical
 *  results to the source context's at the moment of the save (a sliding-window layer's ring holds
 *  its window plus kv_reserve tokens, so the restored context can roll back as far as the source
 *  could). The bytes are in host byte order and not checked for damage: a caller that keeps them
 *  outside the process checksums them (the server's prompt cache does). Errors: STENO_E_FORMAT (a
 *  different layer count or cache configuration, or inconsistent sizes; the message names the layer
 *  and the reason), STENO_E_NOMEM; on error the context is reset. Not thread-safe per context. */
size_t steno_llm_state_save(const steno_llm_ctx *c, void *buf, size_t cap);
steno_status steno_llm_state_load(steno_llm_ctx *c, const void *buf, size_t n);

/** What a state depends on besides the weights, as text (per layer: cache kind, element type,
 *  geometry, window/keep/reserve, quantization): two contexts whose strings are equal can exchange
 *  states. Writes at most cap bytes (NUL-terminated) and returns the full length (snprintf's rule). */
int steno_llm_state_config(const steno_llm_ctx *c, char *buf, size_t cap);

/** The smallest position, other than 0, that steno_llm_rollback can bring the context back to: 0
 *  when every position is reachable (plain caches); with sliding-window layers, how far their
 *  rings' history reaches. */
int steno_llm_min_rollback(const steno_llm_ctx *c);

/** KV-cache memory: bytes per cached token (all layers) and bytes allocated now. */
void steno_llm_kv_usage(const steno_llm_ctx *c, size_t *bytes_per_token, size_t *bytes_allocated);

/** KV-cache bytes the context allocates once it holds n_tokens, fed max_update tokens at a time
 *  at most (all layers: plain caches grow in steps of 256 tokens, sliding-window rings are fixed).
 *  An estimate for admission (the server's --kv-budget), exact for the storage rows. */
size_t steno_llm_kv_bytes_at(const steno_llm_ctx *c, int n_tokens, int max_update);

/** Empties the caches (as steno_llm_reset) and frees their storage down to an empty context's.
 *  STENO_E_NOMEM leaves them reset. */
steno_status steno_llm_release(steno_llm_ctx *c);

/** The parameters the context was created with (defaults resolved). */
steno_llm_ctx_params steno_llm_ctx_get_params(const steno_llm_ctx *c);

/** Bytes per cached token (all layers) once every cache holds quantized rows (= the current figure
 *  for PLAIN), and the same for kv_type rows, for comparison. */
void steno_llm_kv_quant_usage(const steno_llm_ctx *c, size_t *quantized_bpt, size_t *plain_bpt);

/* ---------------------------------------------------------------------------------------------
 * Sampling (the order of llama.cpp's common sampler chain)
 * ------------------------------------------------------------------------------------------- */

/** A plain record passed as an array (steno_sampler_params.logit_bias); frozen within one SONAME,
 *  as steno_llm_seq (docs/API.md). */
typedef struct steno_logit_bias {
    int token;
    float bias; /* added to the logit; -INFINITY bans the token */
} steno_logit_bias;

typedef struct steno_sampler_params {
    float temperature;       /* <= 0: greedy (argmax, lowest id on ties). default 0.8 */
    int top_k;               /* <= 0: off. default 40 */
    float top_p;             /* >= 1: off. default 0.95 */
    float min_p;             /* <= 0: off. default 0.05 */
    float repeat_penalty;    /* 1: off. default 1.0 */
    float presence_penalty;  /* 0: off */
    float frequency_penalty; /* 0: off */
    int penalty_last_n;      /* tokens of history the penalties see; default 64; -1: all */
    uint64_t seed;           /* same seed, same model, same prompt → same tokens */
    const steno_logit_bias *logit_bias; /* copied by steno_sampler_new */
    int n_logit_bias;
    int n_probs;             /* > 0: report this many top log-probabilities per token */
} steno_sampler_params;

steno_sampler_params steno_sampler_default_params(void);

/** A sampler for a vocabulary of n_vocab tokens. Errors: STENO_E_INVALID_ARG, STENO_E_NOMEM. */
steno_status steno_sampler_new(const steno_sampler_params *params, int n_vocab, steno_sampler **out);
void steno_sampler_free(steno_sampler *s);

/** One candidate's log-probability (natural log, of the model's distribution after logit bias and
 *  penalties, before temperature and truncation). */
typedef struct steno_token_logprob {
    int token;
    float logprob;
} steno_token_logprob;

/** Samples a token from logits (n_vocab floats; modified in place) and records it in the history
 *  used by the penalties. With params.n_probs > 0, top (n_probs entries, may be NULL) receives the
 *  most likely tokens; *logprob (may be NULL) the chosen token's log-probability. */
int steno_sampler_sample(steno_sampler *s, float *logits, steno_token_logprob *top, float *logprob);

/** Speculative verification by rejection sampling at one position (Leviathan et al. 2023, arXiv
 *  2211.17192, Algorithm 1; the residual rule of vLLM's RejectionSampler and llama.cpp's
 *  examples/speculative): p is the distribution steno_sampler_sample would draw from logits (bias,
 *  penalties, top-k, top-p, min-p, temperature; modified in place as there); draft is the drafted
 *  token and q the draft's distribution at this position (n_vocab floats summing to 1, draft drawn
 *  from it), or NULL for a deterministic draft (q = 1 at draft: a greedy or n-gram drafter). The
 *  draft is kept with probability min(1, p(draft)/q(draft)) (*accepted = 1); otherwise the token
 *  is drawn from norm(max(0, p - q)) (*accepted = 0). Either way the result is distributed as p,
 *  and it alone enters the penalty history. One or two random draws; none at temperature <= 0,
 *  where it is the argmax (accepted iff it equals draft), as steno_sampler_sample's. */
int steno_sampler_verify(steno_sampler *s, float *logits, int draft, const float *q, int *accepted);

/** The distribution steno_sampler_sample would draw from logits (modified in place as there), as
 *  n_vocab probabilities into probs (0 outside the truncation; the argmax's 1 at temperature <= 0).
 *  Neither draws nor records anything: the sampler's state is unchanged. */
void steno_sampler_dist(steno_sampler *s, float *logits, float *probs);
/** The sampler's temperature. */
float steno_sampler_temperature(const steno_sampler *s);

/** Adds tokens to the penalty history without sampling (the prompt, with llama.cpp's defaults). */
void steno_sampler_accept(steno_sampler *s, int token);

/* ---------------------------------------------------------------------------------------------
 * Generation and chat
 * ------------------------------------------------------------------------------------------- */

/** Why steno_llm_generate stopped. */
typedef enum steno_stop_reason {
    STENO_STOP_EOG = 0,       /* an end-of-generation token was sampled */
    STENO_STOP_N_PREDICT = 1, /* n_predict tokens were generated */
    STENO_STOP_CTX_FULL = 2,  /* the context (n_ctx) is full */
    STENO_STOP_CALLBACK = 3,  /* the token callback asked to stop */
    STENO_STOP_ERROR = 4      /* an evaluation failed (see the returned status) */
} steno_stop_reason;

typedef struct steno_gen_stats {
    int n_prompt, n_generated;
    double prompt_seconds, decode_seconds;
    steno_stop_reason stop_reason;
} steno_gen_stats;

/** Called for each generated token with its text (bytes, may be empty or an incomplete UTF-8
 *  sequence). Return non-zero to stop. */
typedef int (*steno_token_cb)(void *user, int token, const char *piece, int piece_len);

/** Evaluates prompt (n_prompt tokens, appended to what the context holds), then samples up to
 *  n_predict tokens (< 0: until end of generation or the context is full), stopping at an
 *  end-of-generation token (not passed to cb). stats may be NULL. */
steno_status steno_llm_generate(steno_llm_ctx *c, steno_sampler *s, const int *prompt, int n_prompt, int n_predict,
                                steno_token_cb cb, void *user, steno_gen_stats *stats);

/* ---------------------------------------------------------------------------------------------
 * Speculative decoding (src/llm/spec/speculative.c)
 * ------------------------------------------------------------------------------------------- */

typedef enum steno_draft_kind {
    STENO_DRAFT_NONE = 0,  /* plain decoding */
    STENO_DRAFT_NGRAM = 1, /* prompt lookup: the continuation of the latest earlier match of the
                              last ngram_max..ngram_min tokens (llama.cpp's --lookup, "ngram") */
    STENO_DRAFT_MODEL = 2, /* a separate draft model with the same vocabulary (draft_model), its
                              own KV cache; greedy drafts (llama.cpp's --model-draft) */
    STENO_DRAFT_LAYERS = 3 /* self-speculation: the target's first draft_layers layers, its final
                              norm and output head, with their own KV cache (LayerSkip's
                              early exit, Elhoushi et al. 2024, arXiv 2404.16710, without training) */
} steno_draft_kind;

typedef enum steno_spec_verify {
    STENO_SPEC_VERIFY_EXACT = 0,    /* the sampler runs on each verified position as plain decoding
                                       would: the text is identical to plain decoding's (default) */
    STENO_SPEC_VERIFY_REJECTION = 1 /* Leviathan et al. 2023 (arXiv 2211.17192) Algorithm 1: draft x
                                       kept with probability min(1, p(x)/q(x)), else a sample of
                                       norm(max(0, p - q)); the same distribution as the target's,
                                       not the same text. At temperature 0, identical to EXACT */
} steno_spec_verify;

typedef struct steno_spec_params {
    steno_draft_kind kind;
    int n_draft;          /* most draft tokens per round (default 8; capped at kv_reserve with
                             sliding-window layers, and at n_batch - 1) */
    int adaptive;         /* 1 (default): start at 4, +2 after a fully accepted round, halve after
                             two rounds that kept under half their drafts, pause 16 tokens at 0
                             (steno_llm_generate_spec and the server's rows: doubled after each
                             pause that ends in another failure, up to 512; reset by an accepted
                             draft) */
    int ngram_min, ngram_max; /* n-gram lengths the lookup tries, longest first (default 2..4:
                                 a one-token match mostly proposes what does not follow; it was
                                 1..4 in earlier 3.0.0 builds); a g-token match proposes at most
                                 3g tokens. ngram_max 1 needs ngram_min 1 set too (the CLI
                                 lowers it for --ngram-max 1 alone); else STENO_E_INVALID_ARG */
    int draft_layers;     /* STENO_DRAFT_LAYERS: layers of the target that draft (1..n_layer - 1;
                             default 0 = n_layer / 4, at least 1) */
    const steno_llm *draft_model; /* STENO_DRAFT_MODEL: the draft (same vocabulary as the target's:
                             every token's text equal, else STENO_E_INVALID_ARG); borrowed, outlives
                             the call. NULL by default */
    steno_spec_verify verify; /* EXACT (default) or REJECTION */
} steno_spec_params;

typedef struct steno_spec_stats {
    int rounds;       /* target passes that verified a draft */
    int drafted;      /* draft tokens proposed */
    int accepted;     /* draft tokens that equalled the sampled token */
    int target_calls; /* target passes during decoding (rounds and plain steps) */
} steno_spec_stats;

steno_spec_params steno_spec_default_params(void);

/** steno_llm_generate with speculative decoding: each round the drafter of p->kind (ngram, a draft
 *  model, or the target's first layers) proposes up to n_draft tokens, the target evaluates them in
 *  one pass, and each position is verified in turn; drafts are kept while they hold, the rest
 *  rolled back (no recomputation). With p->verify EXACT the sampler runs on each position's logits
 *  exactly as plain decoding runs it and a draft holds while it equals the sampled token: the
 *  tokens — and the sampler's state and random draws — are identical to steno_llm_generate's with
 *  the same sampler and seed, at any temperature, for every cache kind (no verify block straddles
 *  a quantized cache's conversion point, kv_quant_start), and the caches end holding the same rows
 *  for every position the next token can see (a sliding-window ring grown to hold a verify block
 *  keeps more history besides). With REJECTION, steno_sampler_verify decides (the target's
 *  distribution, another text; identical at temperature 0), and the model drafters sample their
 *  drafts at temperature > 0. MODEL and LAYERS drafters run in a context of their own on c's
 *  thread pool, created and freed by the call. spec_stats may be NULL. Errors: those of
 *  steno_llm_generate, STENO_E_INVALID_ARG (params, a draft model of another vocabulary, a layer
 *  count out of range). Not thread-safe per context (nor per draft model: its contexts are the
 *  call's, its weights read-only, so one draft model may serve concurrent calls). */
steno_status steno_llm_generate_spec(steno_llm_ctx *c, steno_sampler *s, const int *prompt, int n_prompt,
                                     int n_predict, steno_token_cb cb, void *user, const steno_spec_params *p,
                                     steno_gen_stats *stats, steno_spec_stats *spec_stats);

/** The draft length of one sequence, round after round (shared by steno_llm_generate_spec and the
 *  server's rows): k, and the adaptive rule of steno_spec_params. State owned by the caller's
 *  storage but written only by the functions below: initialize it with steno_spec_len_init (not a
 *  default function: it depends on the context), read k/kmax, never set fields. Its size is part of
 *  the ABI (frozen within one SONAME, docs/API.md). Not thread-safe per struct. */
typedef struct steno_spec_len {
    int k, kmax, adaptive, misses, pause;
} steno_spec_len;
/** kmax = p->n_draft (0 when p->kind is NONE), at most cap (> 0: the caller's verify-block room)
 *  and, with rotating layers, at most c's kv_reserve (a rejected draft must be undone). */
void steno_spec_len_init(steno_spec_len *s, const steno_spec_params *p, const steno_llm_ctx *c, int cap);
/** Draft tokens for the next round: k, or 0 while paused; at most the context's room after the
 *  pending token, `remaining` tokens to generate, and (a quantized cache before its conversion)
 *  what keeps the verify block before kv_quant_start. */
int steno_spec_len_next(steno_spec_len *s, const steno_llm_ctx *c, int remaining);
/** After a verified round of `drafted` tokens of which `accepted` held. */
void steno_spec_len_update(steno_spec_len *s, int drafted, int accepted);

/** The ngram drafter alone: up to k tokens (at most 3g after a g-token match) into draft proposed
 *  after hist[0..n); returns the count (0: no earlier occurrence of even an ngram_min-token
 *  suffix). */
int steno_spec_ngram_draft(const int *hist, int n, int ngram_min, int ngram_max, int k, int *draft);

/** One message of a conversation, passed as an array; a plain record frozen within one SONAME, as
 *  steno_llm_seq (docs/API.md). The strings are only read during the call. */
typedef struct steno_chat_msg {
    const char *role;    /* "system", "user", "assistant" */
    const char *content; /* UTF-8 */
} steno_chat_msg;

/** Formats a conversation with the model's chat template: the file's tokenizer.chat_template
 *  rendered by steno's Jinja interpreter (byte-exact with Python's jinja2 as transformers runs
 *  it; docs/LLM.md "Chat templates"), or, for a file without one, ChatML or Gemma's turn format
 *  recognised from the vocabulary. Ends with the assistant's opening when add_generation_prompt.
 *  *out is malloc'd. Tokenize it with add_special = 1 and parse_special = 1: BOS comes from the
 *  tokenizer where the model wants one (a BOS the template writes is dropped then, as llama.cpp
 *  does). Errors: STENO_E_FORMAT (the template fails; the message names its line),
 *  STENO_E_UNSUPPORTED (no template and no known format), STENO_E_NOMEM. */
steno_status steno_llm_chat_format(const steno_llm *m, const steno_chat_msg *msgs, int n_msgs,
                                   int add_generation_prompt, char **out);

#ifdef __cplusplus
}
#endif
#endif /* STENO_LLM_H */
