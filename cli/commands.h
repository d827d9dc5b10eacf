/* commands.h — the verbs of the `steno` command. Each takes the verb's own argv (argv[0] is the
 * verb) and returns the process exit status: 0 ok, 1 runtime error (one line on stderr), 2 usage
 * error. */
#ifndef STENO_CLI_COMMANDS_H
#define STENO_CLI_COMMANDS_H

#include <stddef.h>
#include <stdio.h>

/** `steno transcribe [options] FILE...` (cli/transcribe_cmd.c): openai-whisper's CLI. */
int steno_cmd_transcribe(int argc, char **argv);
/** Writes the help of `steno transcribe` to f. */
void steno_transcribe_usage(FILE *f);

/** `steno whisper-cli [options] FILE...` (cli/whisper_cli_cmd.c): whisper.cpp's whisper-cli flags,
 *  stdout lines and output files; also run when the binary's name is whisper-cli. */
int steno_cmd_whisper_cli(int argc, char **argv);

/** `steno convert --to ggml ...` (cli/convert_cmd.c): writes a model as a whisper.cpp ggml file. */
int steno_cmd_convert(int argc, char **argv);

/** `steno generate -m MODEL -p PROMPT ...` (cli/generate_cmd.c): text generation with an LLM. */
int steno_cmd_generate(int argc, char **argv);

/** `steno generate --parallel N -f PROMPTS.jsonl -m MODEL` (cli/generate_batch_cmd.c): many
 *  prompts through the continuous-batching scheduler; steno_cmd_generate hands over to it. */
int steno_cmd_generate_batch(int argc, char **argv);

/** `steno chat -m MODEL` (cli/chat_cmd.c): an interactive conversation with an LLM. */
int steno_cmd_chat(int argc, char **argv);

/** `steno perplexity -m MODEL -f TEXT --kv KIND` (cli/perplexity_cmd.c): scores a text, comparing
 *  a KV-cache kind with the plain cache. */
int steno_cmd_perplexity(int argc, char **argv);

/** `steno serve [options]` (cli/serve_cmd.c): the OpenAI-compatible HTTP server (server/). */
int steno_cmd_serve(int argc, char **argv);

/** `steno dump-l1 ...` (cli/dump_l1.c): dumps encoder output and step logits for the L1 parity
 *  check against the CTranslate2 oracle. */
int steno_cmd_dump_l1(int argc, char **argv);

/** `steno pull NAME|REPO|URL` (cli/pull_cmd.c): downloads a CTranslate2 Whisper model into the
 *  model cache. */
int steno_cmd_pull(int argc, char **argv);

/** `steno models` (cli/models_cmd.c): lists the models in the model cache. */
int steno_cmd_models(int argc, char **argv);

/** `steno vad [options] FILE...` (cli/vad_cmd.c): speech spans by Silero VAD (docs/VAD.md). */
int steno_cmd_vad(int argc, char **argv);
/** Writes the help of `steno vad` to f. */
void steno_vad_usage(FILE *f);

/** `steno stream [options] INPUT` (cli/stream_cmd.c): live transcription (docs/STREAMING.md). */
int steno_cmd_stream(int argc, char **argv);
/** Writes the help of `steno stream` to f. */
void steno_stream_usage(FILE *f);

/* ---- shared by the verbs (cli/model_path.c) ---------------------------------------------- */

/** The folder of named models: model_dir (--model-dir) if set, else $STENO_MODELS_DIR, else
 *  ${XDG_CACHE_HOME:-$HOME/.cache}/steno/models. */
void steno_cli_models_root(const char *model_dir, char *out, size_t size);

/** Where scripts/fetch_vad.sh installs the Silero VAD weights, under the models root. */
#define STENO_VAD_MODEL_FILE "silero_vad/silero_vad_v6.safetensors"

/** The VAD weights' path into out: model when given, else STENO_VAD_MODEL_FILE under
 *  steno_cli_models_root(model_dir). */
void steno_cli_vad_path(const char *model, const char *model_dir, char *out, size_t size);

/** Resolves `--model NAME|DIR` into out: a path containing '/' as given; else NAME under
 *  steno_cli_models_root(model_dir); else a directory NAME in the current directory. Returns 0, or
 *  1 after printing "steno: model NAME not found in ROOT; run 'steno pull NAME' ...". Whether the
 *  directory holds a usable model is left to the loader (its errors name the file). */
int steno_cli_model_path(const char *model, const char *model_dir, char *out, size_t size);

/** steno_cli_model_path for another option than --model: the error line names it,
 *  "steno: OPTION: model NAME not found in ROOT; ...". */
int steno_cli_option_model_path(const char *option, const char *model, const char *model_dir, char *out, size_t size);

#endif
