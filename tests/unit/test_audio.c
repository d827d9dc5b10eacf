/* test_audio.c — steno_audio_load() (src/audio/decode.c) on real clips from $STENO_SHARED/audio.
 *
 * openai-whisper's load_audio() is `ffmpeg -ac 1 -ar 16000 -f s16le` then int16 / 32768, so:
 *   - a 16-bit 16 kHz mono WAV must come back bit-identical to its PCM / 32768;
 *   - 48 kHz, 22.05 kHz (FLAC) and 8 kHz inputs come back with n_in · 16000 / rate samples (the
 *     resampler is drained at the end, so only rounding separates the two);
 *   - stdin ("-"), a stereo file (down-mixed), a zero-sample file and a truncated file load;
 *   - missing files, directories and non-audio files fail with one line naming the input;
 *   - steno_audio_load_memory() over a file's bytes gives the path loader's samples bit for bit
 *     (16 kHz WAV, FLAC, 8 kHz WAV, 48 kHz WAV), and garbage bytes fail with one line naming the
 *     caller's name. */
#include "steno.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rng.h"

static int n_pass, n_fail;

static void check(const char *what, int ok) {
    if (ok) { n_pass++; return; }
    n_fail++;
    fprintf(stderr, "FAIL %s\n", what);
}

static const char *shared_dir(void) {
    const char *v = getenv("STENO_SHARED");
    return v && *v ? v : "../shared";
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static uint32_t le16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const unsigned char *p) { return le16(p) | le16(p + 2) << 16; }

/* Finds the "data" chunk of a RIFF/WAVE file: offset and size in bytes (0 if none). */
static size_t wav_data(const unsigned char *w, size_t len, size_t *size) {
    if (len < 12 || memcmp(w, "RIFF", 4) != 0 || memcmp(w + 8, "WAVE", 4) != 0) return 0;
    for (size_t off = 12; off + 8 <= len;) {
        uint32_t sz = le32(w + off + 4);
        if (memcmp(w + off, "data", 4) == 0) {
            *size = sz <= len - off - 8 ? sz : len - off - 8;
            return off + 8;
        }
        off += 8 + sz + (sz & 1);
    }
    return 0;
}

/* Number of input frames and sample rate of a WAV (fmt chunk) or FLAC (STREAMINFO) file. */
static int clip_length(const char *path, uint64_t *frames, int *rate) {
    size_t len;
    unsigned char *b = read_file(path, &len);
    if (!b) return 0;
    int ok = 0;
    if (len > 42 && memcmp(b, "fLaC", 4) == 0) {
        const unsigned char *si = b + 8; /* STREAMINFO follows its 4-byte block header */
        *rate = (int)((uint32_t)si[10] << 12 | (uint32_t)si[11] << 4 | si[12] >> 4);
        *frames = (uint64_t)(si[13] & 0x0f) << 32 | (uint64_t)si[14] << 24 | (uint64_t)si[15] << 16 |
                  (uint64_t)si[16] << 8 | si[17];
        ok = 1;
    } else if (len > 44 && memcmp(b, "RIFF", 4) == 0) {
        size_t size = 0, off = wav_data(b, len, &size);
        /* the fmt chunk comes first in these files */
        int channels = (int)le16(b + 22), bits = (int)le16(b + 34);
        *rate = (int)le32(b + 24);
        if (off && channels > 0 && bits > 0) { *frames = size / (size_t)(channels * bits / 8); ok = 1; }
    }
    free(b);
    return ok;
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* A 16-bit PCM WAV header for `frames` frames of `channels` channels. */
static void wav_header(unsigned char h[44], int channels, int rate, uint32_t frames) {
    uint32_t data = frames * (uint32_t)channels * 2;
    memcpy(h, "RIFF", 4);
    uint32_t v[] = {36 + data};
    memcpy(h + 4, v, 4);
    memcpy(h + 8, "WAVEfmt ", 8);
    uint32_t fmt_size = 16, byte_rate = (uint32_t)(rate * channels * 2);
    uint16_t pcm = 1, ch = (uint16_t)channels, align = (uint16_t)(channels * 2), bits = 16;
    memcpy(h + 16, &fmt_size, 4);
    memcpy(h + 20, &pcm, 2);
    memcpy(h + 22, &ch, 2);
    memcpy(h + 24, &rate, 4);
    memcpy(h + 28, &byte_rate, 4);
    memcpy(h + 32, &align, 2);
    memcpy(h + 34, &bits, 2);
    memcpy(h + 36, "data", 4);
    memcpy(h + 40, &data, 4);
}

static void test_bit_exact_16k(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/audio/jfk.wav", shared_dir());
    size_t len = 0, size = 0;
    unsigned char *w = read_file(path, &len);
    size_t off = w ? wav_data(w, len, &size) : 0;
    check("jfk.wav is readable (set STENO_SHARED)", off != 0);
    if (!off) { free(w); return; }
    float *x = NULL;
    size_t n = 0;
    check("jfk.wav loads", steno_audio_load(path, &x, &n) == STENO_OK);
    check("jfk.wav has 176000 samples", n == size / 2 && n == 176000);
    size_t mismatches = 0;
    for (size_t i = 0; x && i < n && i < size / 2; i++) {
        int16_t s = (int16_t)le16(w + off + 2 * i);
        if (x[i] != (float)s / 32768.0f) mismatches++;
    }
    printf("jfk.wav: %zu samples, %zu differ from int16 / 32768\n", n, mismatches);
    check("16 kHz s16 mono decodes bit-exactly to int16 / 32768", mismatches == 0);

    /* the same bytes through stdin */
    float *y = NULL;
    size_t ny = 0;
    int saved = dup(0);
    FILE *in = freopen(path, "rb", stdin);
    check("stdin redirected", in != NULL);
    steno_status st = steno_audio_load("-", &y, &ny);
    check("\"-\" reads stdin", st == STENO_OK && ny == n && y && memcmp(x, y, n * sizeof(float)) == 0);
    if (st != STENO_OK) fprintf(stderr, "  %s\n", steno_errmsg());
    dup2(saved, 0);
    close(saved);
    free(y);
    free(x);
    free(w);
}

static void test_resampled(void) {
    const char *clips[] = {"alsa_Front_Center.wav", "ljspeech_LJ001-0001.flac", "asterisk_en_demo-congrats.wav",
                           "ls_dev-clean_1272-128104-0004_8k.wav", "ls_dev-clean_1272-128104-0001.flac"};
    for (size_t i = 0; i < sizeof clips / sizeof clips[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/audio/%s", shared_dir(), clips[i]);
        uint64_t frames = 0;
        int rate = 0;
        if (!clip_length(path, &frames, &rate)) { check("clip header parses", 0); continue; }
        float *x = NULL;
        size_t n = 0;
        steno_status st = steno_audio_load(path, &x, &n);
        check("clip loads", st == STENO_OK);
        if (st != STENO_OK) { fprintf(stderr, "  %s\n", steno_errmsg()); continue; }
        const double want = (double)frames * 16000.0 / rate;
        float peak = 0.0f;
        int in_range = 1;
        for (size_t k = 0; k < n; k++) {
            peak = fmaxf(peak, fabsf(x[k]));
            if (!(x[k] >= -1.0f && x[k] < 1.0f)) in_range = 0;
        }
        printf("%s: %d Hz, %llu frames -> %zu samples (expected %.1f), peak %.3f\n", clips[i], rate,
               (unsigned long long)frames, n, want, peak);
        char what[256];
        snprintf(what, sizeof what, "%s: %zu samples, expected %.1f +- 2", clips[i], n, want);
        check(what, fabs((double)n - want) <= 2.0);
        check("samples in [-1, 1)", in_range);
        check("not silent", peak > 0.01f);
        free(x);
    }
}

static void test_memory(void) {
    const char *clips[] = {"jfk.wav", "ljspeech_LJ001-0001.flac", "ls_dev-clean_1272-128104-0004_8k.wav",
                           "alsa_Front_Center.wav"};
    for (size_t i = 0; i < sizeof clips / sizeof clips[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/audio/%s", shared_dir(), clips[i]);
        size_t len = 0;
        unsigned char *bytes = read_file(path, &len);
        check("clip is readable", bytes != NULL);
        if (!bytes) continue;
        float *x = NULL, *y = NULL;
        size_t nx = 0, ny = 0;
        steno_status sx = steno_audio_load(path, &x, &nx);
        steno_status sy = steno_audio_load_memory(bytes, len, clips[i], &y, &ny);
        if (sy != STENO_OK) fprintf(stderr, "  %s\n", steno_errmsg());
        int same = sx == STENO_OK && sy == STENO_OK && nx == ny && nx > 0 && memcmp(x, y, nx * sizeof(float)) == 0;
        printf("%s from memory: %zu samples, path loader %zu, %s\n", clips[i], ny, nx,
               same ? "bit-identical" : "DIFFERENT");
        char what[256];
        snprintf(what, sizeof what, "%s: memory loader is bit-identical to the path loader", clips[i]);
        check(what, same);
        free(x);
        free(y);
        free(bytes);
    }

    /* garbage: one line, naming the caller's name */
    unsigned char junk[4096];
    uint32_t r = 12345;
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(rng_lcg_ansi(&r) >> 24);
    float *x = (float *)junk;
    size_t n = 99;
    steno_status st = steno_audio_load_memory(junk, sizeof junk, "upload.xyz", &x, &n);
    printf("garbage from memory: %s\n", steno_errmsg());
    check("garbage bytes are STENO_E_FORMAT", st == STENO_E_FORMAT);
    check("message names the upload: 'upload.xyz: ...'", strncmp(steno_errmsg(), "upload.xyz: ", 12) == 0);
    check("message is one line", strchr(steno_errmsg(), '\n') == NULL);
    check("failure leaves *samples NULL and n 0", x == NULL && n == 0);
    st = steno_audio_load_memory(junk, 0, NULL, &x, &n);
    check("an empty buffer is STENO_E_FORMAT, named 'memory'",
          st == STENO_E_FORMAT && strncmp(steno_errmsg(), "memory: ", 8) == 0);
    check("NULL data with size > 0 is STENO_E_INVALID_ARG",
          steno_audio_load_memory(NULL, 10, "x", &x, &n) == STENO_E_INVALID_ARG);
}

/* issue 19: a 76-byte IMA ADPCM WAV declaring 1 000 000 032 Hz cost 27 s and 2.2 GB in swresample */
static void test_declared_bounds(void) {
    static const unsigned char hostile[76] = {
        'R', 'I', 'F', 'F', 0x56, 0x08, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 0x14, 0, 0, 0,
        0x11, 0, 0x01, 0, 0x20, 0xca, 0x9a, 0x3b, 0, 0, 0, 0, 0x80, 0, 0, 0, [64] = 'd', 'a', 't', 'a'};
    float *x = NULL;
    size_t n = 0;
    steno_status st = steno_audio_load_memory(hostile, sizeof hostile, "hostile.wav", &x, &n);
    printf("issue 19 WAV from memory: %s\n", steno_errmsg());
    check("a 1 GHz WAV is STENO_E_FORMAT naming the rate",
          st == STENO_E_FORMAT && strstr(steno_errmsg(), "hostile.wav: declared sample rate 1000000032 Hz") != NULL);

    /* the bounds themselves are inclusive: 1 kHz, 768 kHz and 64 channels decode */
    const struct { int rate, channels; steno_status want; } cases[] = {
        {STENO_AUDIO_MIN_RATE, 1, STENO_OK},      {STENO_AUDIO_MAX_RATE, 1, STENO_OK},
        {16000, STENO_AUDIO_MAX_CHANNELS, STENO_OK}, {STENO_AUDIO_MIN_RATE - 1, 1, STENO_E_FORMAT},
        {STENO_AUDIO_MAX_RATE + 1, 2, STENO_E_FORMAT}, {16000, STENO_AUDIO_MAX_CHANNELS + 1, STENO_E_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum { FRAMES = 1000 };
        size_t bytes = 44 + (size_t)FRAMES * 2 * (size_t)cases[i].channels;
        unsigned char *w = calloc(1, bytes);
        wav_header(w, cases[i].channels, cases[i].rate, FRAMES);
        st = steno_audio_load_memory(w, bytes, "bounds.wav", &x, &n);
        char what[128];
        snprintf(what, sizeof what, "%d Hz, %d channels: status %d", cases[i].rate, cases[i].channels, cases[i].want);
        check(what, st == cases[i].want);
        if (st != STENO_OK) printf("%d Hz, %d channels: %s\n", cases[i].rate, cases[i].channels, steno_errmsg());
        free(x);
        x = NULL;
        free(w);
    }
}

static void test_made_up_files(const char *dir) {
    char path[4200];
    unsigned char h[44];
    float *x = NULL;
    size_t n = 99;

    /* stereo 8 kHz with L = R: the default down-mix (each channel × 1/√2, then normalised) keeps
     * the signal, to within one s16 step */
    enum { FRAMES = 8000 };
    int16_t *pcm = malloc(sizeof(int16_t) * 2 * FRAMES);
    unsigned char *file = malloc(44 + sizeof(int16_t) * 2 * FRAMES);
    for (int i = 0; i < FRAMES; i++) pcm[2 * i] = pcm[2 * i + 1] = (int16_t)lrint(12000.0 * sin(2.0 * M_PI * 300.0 * i / 8000.0));
    wav_header(h, 2, 8000, FRAMES);
    memcpy(file, h, 44);
    memcpy(file + 44, pcm, sizeof(int16_t) * 2 * FRAMES);
    snprintf(path, sizeof path, "%s/stereo.wav", dir);
    check("write stereo.wav", write_file(path, file, 44 + sizeof(int16_t) * 2 * FRAMES));
    check("stereo 8 kHz loads", steno_audio_load(path, &x, &n) == STENO_OK);
    check("stereo 8 kHz → 16000 samples", n >= 15998 && n <= 16002);
    double rms = 0.0;
    for (size_t i = 1000; x && i < 15000 && i < n; i++) rms += (double)x[i] * x[i];
    rms = sqrt(rms / 14000.0);
    printf("stereo L=R 300 Hz tone, amplitude %.4f: mono RMS %.4f (expected %.4f)\n", 12000.0 / 32768,
           rms, 12000.0 / 32768 / sqrt(2.0));
    check("stereo down-mix keeps the level of identical channels", fabs(rms - 12000.0 / 32768 / sqrt(2.0)) < 2e-3);
    free(x);
    x = NULL;

    /* zero-sample file */
    wav_header(h, 1, 16000, 0);
    snprintf(path, sizeof path, "%s/empty.wav", dir);
    check("write empty.wav", write_file(path, h, 44));
    steno_status st = steno_audio_load(path, &x, &n);
    check("a zero-sample WAV loads with n = 0", st == STENO_OK && n == 0 && x != NULL);
    if (st != STENO_OK) fprintf(stderr, "  %s\n", steno_errmsg());
    free(x);
    x = NULL;

    /* truncated: the header promises 8000 frames, 1001 bytes of them are there */
    wav_header(h, 2, 8000, FRAMES);
    snprintf(path, sizeof path, "%s/truncated.wav", dir);
    check("write truncated.wav", write_file(path, file, 44 + 1001));
    st = steno_audio_load(path, &x, &n);
    printf("truncated WAV (250 stereo frames at 8 kHz): status %d, %zu samples%s%s\n", st, n,
           st ? ": " : "", st ? steno_errmsg() : "");
    check("a truncated WAV decodes what is there, or fails cleanly",
          (st == STENO_OK && n >= 490 && n <= 510) || st == STENO_E_FORMAT);
    free(x);
    x = NULL;

    /* header only, cut inside the fmt chunk */
    snprintf(path, sizeof path, "%s/cut_header.wav", dir);
    check("write cut_header.wav", write_file(path, file, 30));
    st = steno_audio_load(path, &x, &n);
    check("a WAV cut inside its header fails cleanly or is empty", st == STENO_E_FORMAT || (st == STENO_OK && n == 0));
    free(x);
    x = NULL;

    /* text */
    snprintf(path, sizeof path, "%s/notes.wav", dir);
    const char *text = "these are not samples\n";
    check("write notes.wav", write_file(path, text, strlen(text)));
    st = steno_audio_load(path, &x, &n);
    check("a text file is STENO_E_FORMAT", st == STENO_E_FORMAT);
    check("message: 'notes.wav: not an audio file (...)'",
          strstr(steno_errmsg(), "notes.wav: not an audio file (") != NULL);
    printf("text file: %s\n", steno_errmsg());
    check("failure leaves *samples NULL and n 0", x == NULL && n == 0);

    /* missing, directory, empty file */
    snprintf(path, sizeof path, "%s/missing.wav", dir);
    st = steno_audio_load(path, &x, &n);
    check("missing file is STENO_E_IO", st == STENO_E_IO);
    check("message: 'missing.wav: no such file'", strstr(steno_errmsg(), "missing.wav: no such file") != NULL);
    st = steno_audio_load(dir, &x, &n);
    check("directory is STENO_E_IO", st == STENO_E_IO && strstr(steno_errmsg(), ": is a directory") != NULL);
    printf("directory: %s\n", steno_errmsg());
    snprintf(path, sizeof path, "%s/zero_bytes.wav", dir);
    check("write zero_bytes.wav", write_file(path, "", 0));
    st = steno_audio_load(path, &x, &n);
    check("an empty file is STENO_E_FORMAT", st == STENO_E_FORMAT);
    check("message: 'zero_bytes.wav: empty file (0 bytes)'",
          strstr(steno_errmsg(), "zero_bytes.wav: empty file (0 bytes)") != NULL);
    printf("empty file: %s\n", steno_errmsg());
    check("NULL path is STENO_E_INVALID_ARG", steno_audio_load(NULL, &x, &n) == STENO_E_INVALID_ARG);

    free(pcm);
    free(file);
}

int main(void) {
    test_bit_exact_16k();
    test_resampled();
    test_memory();
    test_declared_bounds();

    char dir[] = "/tmp/steno_test_audio_XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    test_made_up_files(dir);
    const char *names[] = {"stereo.wav", "empty.wav", "truncated.wav", "cut_header.wav", "notes.wav", "zero_bytes.wav"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);

    printf("test_audio: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
