/* test_mel.c — the Slaney filterbank and the log-mel spectrogram (src/audio/mel.c) against
 * openai-whisper (whisper/audio.py).
 *
 *   - steno_mel_filters() against whisper/assets/mel_filters.npz ($STENO_SHARED), read here with
 *     zlib (the npz members are deflated) and a small .npy header parser;
 *   - steno_log_mel() of jfk.wav against the fixtures in $STENO_SOURCE/tests/fixtures/mel/, written
 *     by tools/mel_reference.py (a numpy re-creation of log_mel_spectrogram's torch code);
 *   - properties: filter shapes and areas, a sine's peak mel bin, frame counts (torch.stft with
 *     center=True keeps 1 + len/160 frames; Whisper drops the last), the max − 8 clamp, argument
 *     errors. */
#include "audio/mel.h"
#include "steno.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define N_BINS 201

static int n_pass, n_fail;

static void check(const char *what, int ok) {
    if (ok) { n_pass++; return; }
    n_fail++;
    fprintf(stderr, "FAIL %s\n", what);
}

static const char *env_or(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            unsigned char *p = realloc(buf, cap);
            if (!p) { free(buf); fclose(f); return NULL; }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* ---- .npz (zip of .npy) ---- */

static uint32_t le16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const unsigned char *p) { return le16(p) | le16(p + 2) << 16; }

/* Returns the malloc'd bytes of member `name` of a zip archive, via its central directory. */
static unsigned char *zip_member(const unsigned char *zip, size_t zlen, const char *name, size_t *out_len) {
    size_t eocd = 0;
    int found = 0;
    for (size_t i = zlen >= 22 ? zlen - 22 : 0;; i--) {
        if (le32(zip + i) == 0x06054b50) { eocd = i; found = 1; break; }
        if (i == 0) break;
    }
    if (!found) return NULL;
    uint32_t n_entries = le16(zip + eocd + 10), cd = le32(zip + eocd + 16);
    for (uint32_t e = 0; e < n_entries; e++) {
        if (cd + 46 > zlen || le32(zip + cd) != 0x02014b50) return NULL;
        uint32_t method = le16(zip + cd + 10), csize = le32(zip + cd + 20), usize = le32(zip + cd + 24);
        uint32_t fnlen = le16(zip + cd + 28), xlen = le16(zip + cd + 30), clen = le16(zip + cd + 32);
        uint32_t lho = le32(zip + cd + 42);
        if (fnlen == strlen(name) && memcmp(zip + cd + 46, name, fnlen) == 0) {
            if (lho + 30 > zlen) return NULL;
            size_t data = lho + 30 + le16(zip + lho + 26) + le16(zip + lho + 28);
            if (data + csize > zlen) return NULL;
            unsigned char *out = malloc(usize ? usize : 1);
            if (!out) return NULL;
            if (method == 0 && csize == usize) {
                memcpy(out, zip + data, usize);
            } else if (method == 8) {
                z_stream zs = {0};
                if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) { free(out); return NULL; }
                zs.next_in = (unsigned char *)zip + data;
                zs.avail_in = csize;
                zs.next_out = out;
                zs.avail_out = usize;
                int ret = inflate(&zs, Z_FINISH);
                inflateEnd(&zs);
                if (ret != Z_STREAM_END || zs.total_out != usize) { free(out); return NULL; }
            } else {
                free(out);
                return NULL;
            }
            *out_len = usize;
            return out;
        }
        cd += 46 + fnlen + xlen + clen;
    }
    return NULL;
}

/* Parses a little-endian float32, C-order, 2-D .npy; returns a pointer into npy. */
static const float *npy_f32_2d(const unsigned char *npy, size_t len, int *rows, int *cols) {
    if (len < 10 || memcmp(npy, "\x93NUMPY", 6) != 0) return NULL;
    size_t hlen, hoff;
    if (npy[6] == 1) { hlen = le16(npy + 8); hoff = 10; }
    else { hlen = le32(npy + 8); hoff = 12; }
    if (hoff + hlen > len) return NULL;
    char hdr[512];
    if (hlen >= sizeof hdr) return NULL;
    memcpy(hdr, npy + hoff, hlen);
    hdr[hlen] = '\0';
    if (!strstr(hdr, "'descr': '<f4'") || !strstr(hdr, "'fortran_order': False")) return NULL;
    const char *sh = strstr(hdr, "'shape': (");
    if (!sh || sscanf(sh, "'shape': (%d, %d)", rows, cols) != 2) return NULL;
    if (hoff + hlen + (size_t)*rows * *cols * 4 > len) return NULL;
    return (const float *)(npy + hoff + hlen); /* 64-byte aligned header: the data is aligned */
}

static void test_filters_vs_npz(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/models/whisper-test-assets/mel_filters.npz", env_or("STENO_SHARED", "../shared"));
    size_t zlen = 0;
    unsigned char *zip = read_file(path, &zlen);
    check("mel_filters.npz is readable (set STENO_SHARED)", zip != NULL);
    if (!zip) { fprintf(stderr, "  cannot read %s\n", path); return; }
    for (int n_mels = 80; n_mels <= 128; n_mels += 48) {
        char member[32];
        snprintf(member, sizeof member, "mel_%d.npy", n_mels);
        size_t nlen = 0;
        unsigned char *npy = zip_member(zip, zlen, member, &nlen);
        int rows = 0, cols = 0;
        const float *ref = npy ? npy_f32_2d(npy, nlen, &rows, &cols) : NULL;
        check("npz member parses as <f4 2-D .npy", ref != NULL);
        check("npz filter shape is [n_mels][201]", ref && rows == n_mels && cols == N_BINS);
        if (!ref || rows != n_mels || cols != N_BINS) { free(npy); continue; }
        float *ours = malloc(sizeof(float) * n_mels * N_BINS);
        check("steno_mel_filters ok", steno_mel_filters(n_mels, ours) == STENO_OK);
        double max_rel = 0.0, peak = 0.0;
        for (int i = 0; i < n_mels * N_BINS; i++) peak = fmax(peak, fabs(ref[i]));
        for (int i = 0; i < n_mels * N_BINS; i++) max_rel = fmax(max_rel, fabs((double)ours[i] - ref[i]) / peak);
        printf("filters %d vs mel_filters.npz: max |diff| / max |w| = %.3g\n", n_mels, max_rel);
        check("filters match mel_filters.npz to 1e-6 relative", max_rel <= 1e-6);
        free(ours);
        free(npy);
    }
    free(zip);
}

/* ---- filterbank properties ---- */

static void test_filter_properties(void) {
    float *w = malloc(sizeof(float) * 128 * N_BINS);
    check("n_mels 64 is rejected", steno_mel_filters(64, w) == STENO_E_INVALID_ARG);
    check("error message names n_mels", strstr(steno_errmsg(), "n_mels") != NULL);
    for (int n_mels = 80; n_mels <= 128; n_mels += 48) {
        check("filters ok", steno_mel_filters(n_mels, w) == STENO_OK);
        int nonneg = 1, nonempty = 1, peaks_rise = 1, area_ok = 1, prev_peak = -1;
        for (int m = 0; m < n_mels; m++) {
            const float *row = w + m * N_BINS;
            double sum = 0.0;
            int peak = 0;
            for (int k = 0; k < N_BINS; k++) {
                if (row[k] < 0.0f) nonneg = 0;
                sum += row[k];
                if (row[k] > row[peak]) peak = k;
            }
            if (sum <= 0.0) nonempty = 0;
            if (peak < prev_peak) peaks_rise = 0;
            prev_peak = peak;
            /* Slaney norm: every triangle has unit area in Hz; sampled every 40 Hz, the sum of a
             * filter several bins wide (the top quarter) is within a few % of 1/40 */
            if (m >= 3 * n_mels / 4 && fabs(sum * 40.0 - 1.0) > 0.05) area_ok = 0;
        }
        check("filter weights are >= 0", nonneg);
        check("every filter has weight", nonempty);
        check("filter peaks rise with the mel index", peaks_rise);
        check("wide filters have unit area in Hz (Slaney norm)", area_ok);
    }
    free(w);
}

/* ---- log-mel properties ---- */

static void test_frame_counts(void) {
    const size_t lens[] = {201, 300, 400, 479, 480, 481, 16000, 16159, 16160, 16161, 176000};
    float *x = calloc(176000, sizeof(float));
    for (size_t i = 0; i < 176000; i++) x[i] = (float)sin(0.01 * (double)i) * 0.1f;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        steno_mel m;
        steno_status st = steno_log_mel(x, lens[i], 0, 80, &m);
        char what[96];
        snprintf(what, sizeof what, "n=%zu pad=0 gives %zu frames", lens[i], lens[i] / 160);
        check(what, st == STENO_OK && m.n_frames == (int)(lens[i] / 160) && m.n_mels == 80);
        steno_mel_free(&m);
    }
    steno_mel m;
    check("n=0 pad=480000 gives 3000 frames",
          steno_log_mel(NULL, 0, 480000, 80, &m) == STENO_OK && m.n_frames == 3000);
    /* all-zero input: every mel power clamps to 1e-10 → log10 = -10 → (-10 + 4) / 4 */
    int all = 1;
    for (size_t i = 0; i < (size_t)80 * 3000; i++) all &= m.data[i] == -1.5f;
    check("silence is -1.5 everywhere", all);
    steno_mel_free(&m);
    check("n=176000 pad=480000, 128 mels gives 4100 frames",
          steno_log_mel(x, 176000, 480000, 128, &m) == STENO_OK && m.n_frames == 4100 && m.n_mels == 128);
    steno_mel_free(&m);
    check("n=200 pad=0 is too short for reflect padding", steno_log_mel(x, 200, 0, 80, &m) == STENO_E_INVALID_ARG);
    check("too-short error says so", strstr(steno_errmsg(), "too short") != NULL);
    check("n=0 pad=0 is rejected", steno_log_mel(x, 0, 0, 80, &m) == STENO_E_INVALID_ARG);
    check("n=100 pad=101 is enough", steno_log_mel(x, 100, 101, 80, &m) == STENO_OK && m.n_frames == 1);
    steno_mel_free(&m);
    check("n_mels 81 is rejected", steno_log_mel(x, 1000, 0, 81, &m) == STENO_E_INVALID_ARG);
    check("a failed call leaves an empty mel", m.data == NULL && m.n_frames == 0);
    free(x);
}

static void test_sine_peak(void) {
    /* a tone at a bin's centre frequency peaks in the mel filter that weighs that bin most */
    const double freqs[] = {440.0, 1000.0, 3000.0, 6000.0};
    float *w = malloc(sizeof(float) * 80 * N_BINS);
    steno_mel_filters(80, w);
    float *x = malloc(sizeof(float) * 16000);
    for (size_t f = 0; f < sizeof freqs / sizeof freqs[0]; f++) {
        const int bin = (int)lround(freqs[f] / 40.0);
        for (int i = 0; i < 16000; i++) x[i] = 0.5f * (float)sin(2.0 * M_PI * bin * 40.0 * i / 16000.0);
        int want = 0;
        for (int mm = 0; mm < 80; mm++)
            if (w[mm * N_BINS + bin] > w[want * N_BINS + bin]) want = mm;
        steno_mel m;
        if (steno_log_mel(x, 16000, 0, 80, &m) != STENO_OK) { check("sine log-mel ok", 0); continue; }
        const int t = m.n_frames / 2;
        int got = 0;
        for (int mm = 0; mm < 80; mm++)
            if (m.data[mm * m.n_frames + t] > m.data[got * m.n_frames + t]) got = mm;
        char what[96];
        snprintf(what, sizeof what, "%.0f Hz tone peaks at mel bin %d (got %d)", bin * 40.0, want, got);
        check(what, got == want);
        steno_mel_free(&m);
    }
    free(x);
    free(w);
}

static void test_clamp(void) {
    /* a loud tone then silence: the output spans exactly 2.0 (8 decades / 4) below its max, and the
     * silent frames sit on the floor */
    float *x = calloc(32000, sizeof(float));
    for (int i = 0; i < 16000; i++) x[i] = 0.9f * (float)sin(2.0 * M_PI * 1000.0 * i / 16000.0);
    steno_mel m;
    check("clamp log-mel ok", steno_log_mel(x, 32000, 0, 80, &m) == STENO_OK);
    float lo = INFINITY, hi = -INFINITY;
    size_t total = (size_t)m.n_mels * m.n_frames;
    for (size_t i = 0; i < total; i++) { lo = fminf(lo, m.data[i]); hi = fmaxf(hi, m.data[i]); }
    /* in float32 as Whisper: floor = ((max_log - 8) + 4) / 4 with max_log = 4 * hi - 4 */
    printf("clamp: max %.6f min %.6f (span %.6f)\n", hi, lo, hi - lo);
    check("values span at most 2.0", hi - lo <= 2.0f + 1e-6f);
    check("silence sits on the floor (max - 2.0)", fabsf(m.data[79 * m.n_frames + m.n_frames - 1] - (hi - 2.0f)) < 1e-5f);
    check("the floor is reached", fabsf(lo - (hi - 2.0f)) < 1e-5f);
    steno_mel_free(&m);
    free(x);
}

/* ---- fixtures from tools/mel_reference.py ---- */

static void test_fixtures(void) {
    const char *src = env_or("STENO_SOURCE", ".");
    const char *shared = env_or("STENO_SHARED", "../shared");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/mel/index.tsv", src);
    FILE *idx = fopen(path, "r");
    check("tests/fixtures/mel/index.tsv is readable (set STENO_SOURCE)", idx != NULL);
    if (!idx) return;
    char line[1024];
    int n_fixtures = 0;
    while (fgets(line, sizeof line, idx)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char fname[256], clip[512], ranges[256];
        int n_mels, n_frames;
        size_t padding;
        if (sscanf(line, "%255[^\t]\t%511[^\t]\t%d\t%zu\t%d\t%255s", fname, clip, &n_mels, &padding, &n_frames,
                   ranges) != 6) {
            check("index.tsv line parses", 0);
            continue;
        }
        n_fixtures++;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", shared, clip);
        float *samples = NULL;
        size_t n = 0;
        steno_status st = steno_audio_load(p, &samples, &n);
        check("fixture clip loads", st == STENO_OK);
        if (st != STENO_OK) { fprintf(stderr, "  %s\n", steno_errmsg()); continue; }
        steno_mel m;
        st = steno_log_mel(samples, n, padding, n_mels, &m);
        free(samples);
        check("fixture log-mel ok", st == STENO_OK);
        if (st != STENO_OK) continue;
        check("fixture frame count matches", m.n_frames == n_frames);

        snprintf(p, sizeof p, "%s/tests/fixtures/mel/%s", src, fname);
        size_t len = 0;
        unsigned char *blob = read_file(p, &len);
        int kept = 0;
        for (const char *r = ranges; *r;) {
            int a, k, used;
            if (sscanf(r, "%d+%d%n", &a, &k, &used) != 2) break;
            kept += k;
            r += used + (r[used] == ',');
        }
        check("fixture file has n_mels x kept frames floats", blob && len == (size_t)n_mels * kept * 4);
        if (!blob || len != (size_t)n_mels * kept * 4 || m.n_frames != n_frames) { free(blob); steno_mel_free(&m); continue; }
        double max_diff = 0.0;
        int col = 0;
        for (const char *r = ranges; *r;) {
            int a, k, used;
            if (sscanf(r, "%d+%d%n", &a, &k, &used) != 2) break;
            for (int mm = 0; mm < n_mels; mm++)
                for (int t = 0; t < k; t++) {
                    float ref;
                    memcpy(&ref, blob + ((size_t)mm * kept + col + t) * 4, 4); /* little-endian hosts */
                    max_diff = fmax(max_diff, fabs((double)m.data[(size_t)mm * m.n_frames + a + t] - ref));
                }
            col += k;
            r += used + (r[used] == ',');
        }
        printf("log-mel %s (%s, %d mels, frames %s) vs reference: max |diff| = %.3g\n", fname, clip, n_mels,
               ranges, max_diff);
        check("log-mel matches the reference within 1e-4", max_diff < 1e-4);
        free(blob);
        steno_mel_free(&m);
    }
    fclose(idx);
    check("at least one mel fixture", n_fixtures > 0);
}

int main(void) {
    test_filters_vs_npz();
    test_filter_properties();
    test_frame_counts();
    test_sine_peak();
    test_clamp();
    test_fixtures();
    printf("test_mel: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
