/* main.c — `steno <verb>`: dispatches to the verbs declared in commands.h. */
#include "commands.h"
#include "core/blas_core.h"
#include "steno.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__) /* GCC */
#define STENO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) /* clang */
#define STENO_ASAN 1
#endif
#endif
#ifdef STENO_ASAN
#include <sanitizer/lsan_interface.h>
#endif

static void usage(FILE *f) {
    fputs("usage: steno <command> [options] [args]\n"
          "\n"
          "steno is a local inference engine written in C: speech-to-text with Whisper models\n"
          "and text generation with small LLMs.\n"
          "\n"
          "commands:\n"
          "  serve         an OpenAI-compatible HTTP server for speech and chat (docs/SERVER.md)\n"
          "  transcribe    transcribe audio files to txt/vtt/srt/tsv/json (openai-whisper's CLI)\n"
          "  whisper-cli   whisper.cpp's whisper-cli flags and outputs (also: steno run as whisper-cli)\n"
          "  generate      generate text from a prompt with an LLM (GGUF or llama2.c model)\n"
          "  chat          chat with an LLM through its chat template (one message per line)\n"
          "  perplexity    score a text with an LLM; compare a quantized KV cache with the plain one\n"
          "  stream        live transcription of a pipe, a growing file or a URL (docs/STREAMING.md)\n"
          "  vad           speech spans of audio files (Silero VAD; faster-whisper's timestamps)\n"
          "  convert       write a model as a whisper.cpp ggml file\n"
          "  pull          download a Whisper model (CTranslate2) from Hugging Face into the cache\n"
          "  models        list the models in the cache: format, weight type, size, path\n"
          "  dump-l1       dump encoder output and decoder logits for the L1 parity check\n"
          "\n"
          "options:\n"
          "  -h, --help     show this help (and 'steno <command> --help' for a command's)\n"
          "  -V, --version  print the version\n",
          f);
}

static int dispatch(int argc, char **argv);

/* OpenBLAS chose its kernels when it loaded, before main; where it fell back to SSE3 on a CPU it
 * does not know, run again with the AVX2/AVX-512 ones (core/blas_core.h). The variable stays set in
 * the new process, so this happens once. The program's own path (not /proc/self/exe) keeps its
 * name in ps/pgrep/top; started as `ld.so steno ...` (AT_BASE 0: no interpreter was loaded for us)
 * the path is ld.so's and the arguments would be misread, so there is no re-exec. If the exec
 * fails, go on as we are. */
static void reexec_for_blas(int argc, char **argv) {
    /* a request for help or the version computes nothing: not worth a second process start
     * (~45 ms here, paid thousands of times by test_option_table). Only where it cannot be an
     * option's value: the command itself, or the last argument after one that is not an option
     * (`steno VERB --opt VALUE --help`; `--initial-prompt -h` still re-executes) */
    if (argc < 2) return;
    const char *last = argv[argc - 1];
    const int asks = !strcmp(last, "--help") || !strcmp(last, "-h") || !strcmp(last, "--version") || !strcmp(last, "-V");
    if (!strcmp(argv[1], "help") || (argc == 2 && asks) || (argc > 2 && asks && argv[argc - 2][0] != '-')) return;
    const char *core = steno_blas_core_request();
    if (!core || getauxval(AT_BASE) == 0) return;
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || (size_t)n >= sizeof self - 1) return;
    self[n] = '\0';
    if (setenv("OPENBLAS_CORETYPE", core, 1) != 0) return;
    execv(self, argv);
    unsetenv("OPENBLAS_CORETYPE");
}

/* A verb's output that could not be written (a full disk, a closed pipe, /dev/full) is a failure
 * even when the verb itself succeeded: the caller must not take a truncated result for a whole one. */
int main(int argc, char **argv) {
    reexec_for_blas(argc, argv);
    int rc = dispatch(argc, argv);
    errno = 0;
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) {
        fprintf(stderr, "steno: stdout: write error: %s\n", errno ? strerror(errno) : "I/O error");
        rc = 1;
    }
    if (rc != 0) {
        /* A failed run leaves without the shared libraries' destructors: OpenBLAS's joins its
         * server threads, and one that could not allocate its buffer (a tight `ulimit -v`: the
         * load fails for the same reason) retries for ever, so exit hung after the error line.
         * Our own streams are flushed here; the sanitizer build still checks for leaks. */
        fflush(NULL);
#ifdef STENO_ASAN
        __lsan_do_leak_check();
#endif
        _exit(rc);
    }
    return rc;
}

/* The binary run under the name whisper-cli (a symlink or a copy): whisper.cpp's CLI. */
static int invoked_as_whisper_cli(const char *argv0) {
    if (!argv0) return 0;
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    return strcmp(base, "whisper-cli") == 0;
}

static int dispatch(int argc, char **argv) {
    if (argc >= 1 && invoked_as_whisper_cli(argv[0])) return steno_cmd_whisper_cli(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *verb = argv[1];
    if (strcmp(verb, "-h") == 0 || strcmp(verb, "--help") == 0 || strcmp(verb, "help") == 0) {
        if (argc > 2 && strcmp(argv[2], "transcribe") == 0) steno_transcribe_usage(stdout);
        else if (argc > 2 && strcmp(argv[2], "vad") == 0) steno_vad_usage(stdout);
        else if (argc > 2 && strcmp(argv[2], "stream") == 0) steno_stream_usage(stdout);
        else if (argc > 2 && strcmp(argv[2], "whisper-cli") == 0) {
            char *h[] = {argv[2], "--help", NULL};
            return steno_cmd_whisper_cli(2, h);
        }
        else usage(stdout);
        return 0;
    }
    if (strcmp(verb, "-V") == 0 || strcmp(verb, "--version") == 0) {
        printf("steno %s\n", STENO_VERSION);
        return 0;
    }
    if (strcmp(verb, "serve") == 0) return steno_cmd_serve(argc - 1, argv + 1);
    if (strcmp(verb, "transcribe") == 0) return steno_cmd_transcribe(argc - 1, argv + 1);
    if (strcmp(verb, "whisper-cli") == 0) return steno_cmd_whisper_cli(argc - 1, argv + 1);
    if (strcmp(verb, "generate") == 0) return steno_cmd_generate(argc - 1, argv + 1);
    if (strcmp(verb, "chat") == 0) return steno_cmd_chat(argc - 1, argv + 1);
    if (strcmp(verb, "perplexity") == 0) return steno_cmd_perplexity(argc - 1, argv + 1);
    if (strcmp(verb, "convert") == 0) return steno_cmd_convert(argc - 1, argv + 1);
    if (strcmp(verb, "dump-l1") == 0) return steno_cmd_dump_l1(argc - 1, argv + 1);
    if (strcmp(verb, "pull") == 0) return steno_cmd_pull(argc - 1, argv + 1);
    if (strcmp(verb, "models") == 0) return steno_cmd_models(argc - 1, argv + 1);
    if (strcmp(verb, "vad") == 0) return steno_cmd_vad(argc - 1, argv + 1);
    if (strcmp(verb, "stream") == 0) return steno_cmd_stream(argc - 1, argv + 1);
    fprintf(stderr, "steno: unknown command '%s' (see 'steno --help')\n", verb);
    return 2;
}
