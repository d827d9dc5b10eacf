/* sniff.c — names a model file's format from its first bytes (sniff.h). */
#include "formats/sniff.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "formats/ct2.h"

const char *steno_sniff_model_file(const char *path) {
    unsigned char b[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    const size_t n = fread(b, 1, sizeof b, f);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fclose(f);
    if (n >= 4 && (memcmp(b, "lmgg", 4) == 0 || memcmp(b, "tjgg", 4) == 0 || memcmp(b, "fmgg", 4) == 0))
        return "a whisper.cpp ggml model";
    if (n >= 4 && memcmp(b, "GGUF", 4) == 0) return "a GGUF file";
    if (n >= 9 && b[8] == '{') {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--) len = len << 8 | b[i];
        if (size > 8 && len <= (uint64_t)size - 8) return "a safetensors file";
    }
    if (n >= 4 && memcmp(b, "PK\3\4", 4) == 0) return "a zip archive (a PyTorch .pt/.bin checkpoint or an .npz)";
    if (n >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) return "a Python pickle (a PyTorch checkpoint)";
    ct2_model *c = NULL;
    if (ct2_open(path, &c) == STENO_OK) {
        ct2_close(c);
        steno_clear_error();
        return "a CTranslate2 model.bin";
    }
    steno_clear_error();
    if (n >= 2 && b[0] == 0x08 && b[1] > 0 && b[1] < 16) return "an ONNX model";
    return NULL;
}
