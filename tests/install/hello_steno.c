/* hello_steno.c — the smallest program using the installed library: transcribes one audio file
 * with a Whisper model and prints the text. Built by tests/install/install_tree.py against an
 * installed prefix, once through pkg-config and once through find_package(steno).
 *   hello_steno <model dir> <audio file>
 * Exit status: 0 on success, 1 when the library fails (its message on stderr), 2 for usage. */
#include <steno.h>
#include <steno_llm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: hello_steno <model dir> <audio file>\n");
        return 2;
    }
    /* the header compiled against and the library loaded must agree on the major version */
    if (steno_version_number() / 10000 != STENO_VERSION_MAJOR) {
        fprintf(stderr, "hello_steno: header %s, library %s\n", STENO_VERSION, steno_version());
        return 1;
    }
    printf("steno %s\n", steno_version());

    float *samples = NULL;
    size_t n = 0;
    steno_whisper *w = NULL;
    steno_result *r = NULL;
    int rc = 1;
    if (steno_audio_load(argv[2], &samples, &n) != STENO_OK) goto done;
    steno_whisper_options wo = steno_whisper_default_options();
    wo.n_threads = 2;
    if (steno_whisper_load_ex(argv[1], &wo, &w) != STENO_OK) goto done;
    steno_transcribe_params p = steno_transcribe_default_params();
    if (steno_transcribe(w, samples, n, &p, &r) != STENO_OK) goto done;
    steno_writer_options o = steno_writer_default_options();
    if (steno_write_result_ex(r, "txt", &o, stdout) != STENO_OK) goto done;
    rc = 0;
done:
    if (rc != 0) fprintf(stderr, "hello_steno: %s\n", steno_errmsg());
    steno_result_free(r);
    steno_whisper_free(w);
    free(samples);
    return rc;
}
