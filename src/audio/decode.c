/* decode.c — steno_audio_load() and steno_audio_load_memory(): any container/codec FFmpeg reads
 * → 16 kHz mono float32. Both open the container (a path, or a buffer behind a custom AVIOContext)
 * and then share one decoder path (load_opened), so the same bytes give the same samples.
 *
 * Follows openai-whisper's load_audio() (whisper/audio.py), which runs
 *   ffmpeg -i FILE -f s16le -ac 1 -acodec pcm_s16le -ar 16000 -
 * and divides the int16 samples by 32768. We do the same in-process: libswresample with default
 * options converts to s16 mono 16 kHz (so the down-mix matrix, the resampling filter and its integer
 * arithmetic for s16 inputs are the ones the ffmpeg CLI uses), then each sample is divided by
 * 32768.0f. For 16-bit 16 kHz mono inputs the result is bit-identical to openai-whisper's.
 */
#include "audio/stream.h"
#include "core/error.h"
#include "steno.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>

static pthread_once_t g_log_once = PTHREAD_ONCE_INIT;

/* FFmpeg logs warnings (e.g. about truncated files) to stderr, but the library reports problems
 * only through steno_errmsg(). Keep a caller's explicit choice of log level, though. */
static void quiet_ffmpeg_log(void) {
    if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_QUIET);
}

/* Growable buffer of s16 samples. */
typedef struct pcm_buf {
    int16_t *data;
    size_t n, cap;
} pcm_buf;

static int pcm_reserve(pcm_buf *b, size_t extra) {
    if (extra <= b->cap - b->n) return 0;
    if (extra > SIZE_MAX / sizeof(int16_t) - b->n) return -1;
    size_t cap = b->cap ? b->cap : 16000 * 4;
    while (cap - b->n < extra) {
        if (cap > SIZE_MAX / 2 / sizeof(int16_t)) { cap = b->n + extra; break; }
        cap *= 2;
    }
    int16_t *p = realloc(b->data, cap * sizeof(int16_t));
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

typedef struct decoder {
    const char *name; /* the input as shown in error messages */
    AVFormatContext *fmt;
    AVCodecContext *dec;
    int stream;
    SwrContext *swr;
    /* the input format swr was configured for; a change mid-stream re-creates it */
    enum AVSampleFormat swr_fmt;
    int swr_rate;
    AVChannelLayout swr_layout;
    AVPacket *pkt;
    AVFrame *frame;
    pcm_buf out;     /* decoded s16 samples not yet consumed */
    size_t out_base; /* samples consumed and dropped before out.data[0] (streaming) */
    int eof;         /* the demuxer ended and the decoder and resampler are drained */
    int read_error; /* the AVERROR that ended reading early (0: end of file) */
    unsigned char head[4096]; /* the input's first bytes (a WAV header's promise is read from them) */
    size_t head_n;
    int live; /* a live input (audio_stream_open_live): no length limit, consumed as it goes */
} decoder;

static steno_status fail_av(const decoder *d, steno_status st, const char *what, int err) {
    char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
    av_strerror(err, buf, sizeof buf);
    return steno_fail(st, "%s: %s (%s)", d->name, what, buf);
}

/* The decoded output is capped at STENO_AUDIO_MAX_SECONDS: the only bound on memory that holds for
 * every codec, since what a real file expands to is not bounded by its size (a FLAC block of
 * constant samples or an Opus/Vorbis silence packet turns a few bytes into thousands of samples). */
#define MAX_OUT_SAMPLES ((size_t)STENO_AUDIO_MAX_SECONDS * STENO_SAMPLE_RATE)

/* Runs swr on in_n samples of in (NULL, 0 = drain) and appends the s16 output. */
static steno_status resample_append(decoder *d, const uint8_t **in, int in_n) {
    for (;;) {
        int cap = swr_get_out_samples(d->swr, in_n);
        if (cap < 0) return fail_av(d, STENO_E_FORMAT, "cannot resample", cap);
        if (cap == 0 && in_n == 0) return STENO_OK;
        cap += 32;
        if (!d->live && d->out_base + d->out.n + (size_t)cap > MAX_OUT_SAMPLES + 32)
            return steno_fail(STENO_E_FORMAT, "%s: audio is longer than %d s (the limit)", d->name,
                              STENO_AUDIO_MAX_SECONDS);
        if (pcm_reserve(&d->out, (size_t)cap) != 0)
            return steno_fail(STENO_E_NOMEM, "%s: out of memory decoding audio", d->name);
        uint8_t *dst = (uint8_t *)(d->out.data + d->out.n);
        int got = swr_convert(d->swr, &dst, cap, in, in_n);
        if (got < 0) return fail_av(d, STENO_E_FORMAT, "cannot resample", got);
        d->out.n += (size_t)got;
        /* with input, one call consumes all of it; when draining, repeat until nothing is left */
        if (in_n > 0 || got == 0) return STENO_OK;
    }
}

/* The bounds of steno.h (STENO_AUDIO_MIN_RATE ..), checked on what the stream declares and again on
 * every frame before a resampler is set up for it: swresample's filter bank grows with the ratio
 * of the rates (a 1 GHz "WAV" made it build 2 GB of filters for a file with no samples). */
static steno_status check_declared(const decoder *d, int rate, int channels) {
    if (rate <= 0) return steno_fail(STENO_E_FORMAT, "%s: audio stream has no sample rate", d->name);
    if (rate < STENO_AUDIO_MIN_RATE || rate > STENO_AUDIO_MAX_RATE)
        return steno_fail(STENO_E_FORMAT, "%s: declared sample rate %d Hz is outside %d..%d Hz", d->name, rate,
                          STENO_AUDIO_MIN_RATE, STENO_AUDIO_MAX_RATE);
    if (channels <= 0) return steno_fail(STENO_E_FORMAT, "%s: audio stream has no channels", d->name);
    if (channels > STENO_AUDIO_MAX_CHANNELS)
        return steno_fail(STENO_E_FORMAT, "%s: declared channel count %d is outside 1..%d", d->name, channels,
                          STENO_AUDIO_MAX_CHANNELS);
    return STENO_OK;
}

static steno_status setup_swr(decoder *d, const AVFrame *f) {
    AVChannelLayout in_layout = {0};
    int ret;
    if (f->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || f->ch_layout.nb_channels <= 0) {
        int nch = f->ch_layout.nb_channels > 0 ? f->ch_layout.nb_channels : d->dec->ch_layout.nb_channels;
        if (nch <= 0) return steno_fail(STENO_E_FORMAT, "%s: audio stream has no channels", d->name);
        av_channel_layout_default(&in_layout, nch);
    } else if ((ret = av_channel_layout_copy(&in_layout, &f->ch_layout)) < 0) {
        return fail_av(d, STENO_E_NOMEM, "cannot read channel layout", ret);
    }
    steno_status st = check_declared(d, f->sample_rate, in_layout.nb_channels);
    if (st != STENO_OK) {
        av_channel_layout_uninit(&in_layout);
        return st;
    }
    AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
    SwrContext *swr = NULL;
    ret = swr_alloc_set_opts2(&swr, &mono, AV_SAMPLE_FMT_S16, STENO_SAMPLE_RATE, &in_layout,
                              (enum AVSampleFormat)f->format, f->sample_rate, 0, NULL);
    if (ret >= 0) ret = swr_init(swr);
    if (ret < 0 && swr && in_layout.order != AV_CHANNEL_ORDER_NATIVE) {
        /* swresample builds no down-mix for a channel count without a standard layout (9..15,
         * 17..23, 25..64 channels of unknown order); average them with equal weights, which is
         * what its own down-mix does for channels whose roles it cannot tell apart */
        double matrix[STENO_AUDIO_MAX_CHANNELS];
        for (int c = 0; c < in_layout.nb_channels; c++) matrix[c] = 1.0 / in_layout.nb_channels;
        ret = swr_set_matrix(swr, matrix, in_layout.nb_channels);
        if (ret >= 0) ret = swr_init(swr);
    }
    if (ret < 0) {
        swr_free(&swr);
        av_channel_layout_uninit(&in_layout);
        return fail_av(d, STENO_E_FORMAT, "cannot convert audio", ret);
    }
    av_channel_layout_uninit(&in_layout);
    av_channel_layout_uninit(&d->swr_layout);
    if ((ret = av_channel_layout_copy(&d->swr_layout, &f->ch_layout)) < 0) {
        swr_free(&swr);
        return fail_av(d, STENO_E_NOMEM, "cannot read channel layout", ret);
    }
    d->swr = swr;
    d->swr_fmt = (enum AVSampleFormat)f->format;
    d->swr_rate = f->sample_rate;
    return STENO_OK;
}

static int same_input_format(const decoder *d, const AVFrame *f) {
    return f->format == d->swr_fmt && f->sample_rate == d->swr_rate &&
           av_channel_layout_compare(&f->ch_layout, &d->swr_layout) == 0;
}

static steno_status consume_frame(decoder *d, const AVFrame *f) {
    steno_status st;
    if (f->nb_samples <= 0) return STENO_OK;
    if (d->swr && !same_input_format(d, f)) {
        /* the stream changed rate/layout mid-way: finish the old conversion first */
        if ((st = resample_append(d, NULL, 0)) != STENO_OK) return st;
        swr_free(&d->swr);
    }
    if (!d->swr && (st = setup_swr(d, f)) != STENO_OK) return st;
    return resample_append(d, (const uint8_t **)f->extended_data, f->nb_samples);
}

/* Receives every frame the decoder has ready. Decode errors in single frames are skipped, as the
 * ffmpeg CLI does, so a damaged file still yields the audio around the damage. */
static steno_status drain_decoder(decoder *d) {
    for (;;) {
        int ret = avcodec_receive_frame(d->dec, d->frame);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return STENO_OK;
        if (ret == AVERROR(ENOMEM)) return steno_fail(STENO_E_NOMEM, "%s: out of memory decoding audio", d->name);
        if (ret < 0) continue;
        steno_status st = consume_frame(d, d->frame);
        av_frame_unref(d->frame);
        if (st != STENO_OK) return st;
    }
}

/* Maps avformat_open_input's failure to a status and one line naming the input. */
static steno_status fail_open(const decoder *d, int ret) {
    if (ret == AVERROR(ENOENT)) return steno_fail(STENO_E_IO, "%s: no such file", d->name);
    if (ret == AVERROR(EACCES) || ret == AVERROR(EISDIR) || ret == AVERROR(EIO))
        return fail_av(d, STENO_E_IO, "cannot open", ret);
    if (ret == AVERROR(ENOMEM)) return steno_fail(STENO_E_NOMEM, "%s: out of memory", d->name);
    /* say so rather than "not an audio file" (the server's upload check says the same) */
    if (!d->live && d->head_n == 0) return steno_fail(STENO_E_FORMAT, "%s: empty file (0 bytes)", d->name);
    return fail_av(d, STENO_E_FORMAT, "not an audio file", ret);
}

/* Opens a path (not "-": stdin is read into memory) with avformat's own I/O. */
static steno_status open_path(decoder *d, const char *path) {
    const char *url;
    char *file_url = NULL;
    {
        struct stat sb;
        if (stat(path, &sb) != 0) {
            if (errno == ENOENT || errno == ENOTDIR) return steno_fail(STENO_E_IO, "%s: no such file", path);
            return steno_fail(STENO_E_IO, "%s: %s", path, strerror(errno));
        }
        if (S_ISDIR(sb.st_mode)) return steno_fail(STENO_E_IO, "%s: is a directory", path);
        FILE *f = fopen(path, "rb");
        if (f) {
            d->head_n = fread(d->head, 1, sizeof d->head, f);
            fclose(f);
        }
        /* "file:" stops avformat from reading a local name such as "a:b.wav" as a protocol */
        size_t len = strlen(path);
        file_url = malloc(len + 6);
        if (!file_url) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
        memcpy(file_url, "file:", 5);
        memcpy(file_url + 5, path, len + 1);
        url = file_url;
    }
    int ret = avformat_open_input(&d->fmt, url, NULL, NULL);
    free(file_url);
    return ret < 0 ? fail_open(d, ret) : STENO_OK;
}

/* An in-memory file behind a custom AVIOContext: the same demuxers and decoders see the same
 * bytes as through the "file:" protocol (seekable, size known), so the samples are the same. */
typedef struct mem_file {
    const uint8_t *data;
    size_t size, pos;
} mem_file;

static int mem_read(void *opaque, uint8_t *buf, int len) {
    mem_file *m = opaque;
    if (m->pos >= m->size) return AVERROR_EOF;
    size_t n = m->size - m->pos;
    if (len >= 0 && n > (size_t)len) n = (size_t)len;
    memcpy(buf, m->data + m->pos, n);
    m->pos += n;
    return (int)n;
}

static int64_t mem_seek(void *opaque, int64_t offset, int whence) {
    mem_file *m = opaque;
    whence &= ~AVSEEK_FORCE;
    if (whence == AVSEEK_SIZE) return m->size > INT64_MAX ? AVERROR(EINVAL) : (int64_t)m->size;
    int64_t base;
    if (whence == SEEK_SET) base = 0;
    else if (whence == SEEK_CUR) base = (int64_t)m->pos;
    else if (whence == SEEK_END) base = (int64_t)m->size;
    else return AVERROR(EINVAL);
    if ((offset > 0 && base > INT64_MAX - offset) || base + offset < 0) return AVERROR(EINVAL);
    /* past the end is allowed (as lseek); the next read then reports EOF */
    m->pos = (size_t)(base + offset);
    return base + offset;
}

/* the AVIOContext's buffer size: avformat reads and probes through it */
enum { MEM_IO_BUFFER = 64 * 1024 };

static steno_status open_memory(decoder *d, mem_file *m, AVIOContext **pb) {
    unsigned char *buf = av_malloc(MEM_IO_BUFFER);
    if (!buf) return steno_fail(STENO_E_NOMEM, "%s: out of memory", d->name);
    *pb = avio_alloc_context(buf, MEM_IO_BUFFER, 0, m, mem_read, NULL, mem_seek);
    if (!*pb) {
        av_free(buf);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", d->name);
    }
    d->fmt = avformat_alloc_context();
    if (!d->fmt) return steno_fail(STENO_E_NOMEM, "%s: out of memory", d->name);
    d->fmt->pb = *pb;
    d->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    /* An uploaded playlist or concat list must not make avformat open other URLs or local files:
     * the buffer is the whole input, so nested opens get an empty protocol whitelist. */
    AVDictionary *opts = NULL;
    av_dict_set(&opts, "protocol_whitelist", "none", 0);
    /* the name doubles as the URL avformat's probe scores by extension, as a path's would */
    int ret = avformat_open_input(&d->fmt, d->name, NULL, &opts);
    av_dict_free(&opts);
    return ret < 0 ? fail_open(d, ret) : STENO_OK; /* on failure avformat freed d->fmt */
}

/* After the container is open: find the audio stream and open its decoder. */
static steno_status open_stream(decoder *d) {
    int ret = avformat_find_stream_info(d->fmt, NULL);
    if (ret < 0) return fail_av(d, STENO_E_FORMAT, "not an audio file", ret);

    const AVCodec *codec = NULL;
    ret = av_find_best_stream(d->fmt, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
    if (ret == AVERROR_STREAM_NOT_FOUND) return steno_fail(STENO_E_FORMAT, "%s: no audio stream", d->name);
    if (ret == AVERROR_DECODER_NOT_FOUND || (ret >= 0 && !codec)) {
        const char *cname = ret >= 0 ? avcodec_get_name(d->fmt->streams[ret]->codecpar->codec_id) : "unknown";
        return steno_fail(STENO_E_UNSUPPORTED, "%s: no decoder for audio codec %s", d->name, cname);
    }
    if (ret < 0) return fail_av(d, STENO_E_FORMAT, "no usable audio stream", ret);
    d->stream = ret;
    AVStream *s = d->fmt->streams[ret];
    /* a rate the demuxer could not know yet (0) is left to the decoder; its frames are checked */
    if (s->codecpar->sample_rate != 0 || s->codecpar->ch_layout.nb_channels != 0) {
        steno_status st = check_declared(d, s->codecpar->sample_rate ? s->codecpar->sample_rate : STENO_AUDIO_MIN_RATE,
                                         s->codecpar->ch_layout.nb_channels ? s->codecpar->ch_layout.nb_channels : 1);
        if (st != STENO_OK) return st;
    }

    d->dec = avcodec_alloc_context3(codec);
    if (!d->dec) return steno_fail(STENO_E_NOMEM, "%s: out of memory", d->name);
    ret = avcodec_parameters_to_context(d->dec, s->codecpar);
    if (ret < 0) return fail_av(d, STENO_E_FORMAT, "bad audio stream parameters", ret);
    d->dec->pkt_timebase = s->time_base;
    ret = avcodec_open2(d->dec, codec, NULL);
    if (ret < 0) return fail_av(d, STENO_E_FORMAT, "cannot open audio decoder", ret);
    return STENO_OK;
}

/* Reads one packet and appends what it decodes to d->out; at the end of the input, drains the
 * decoder and the resampler and sets d->eof. */
static steno_status decode_step(decoder *d) {
    steno_status st;
    if (d->eof) return STENO_OK;
    int ret = av_read_frame(d->fmt, d->pkt);
    /* a read error after the header (e.g. a truncated file) ends the stream, as in the ffmpeg CLI */
    if (ret < 0) {
        if (ret != AVERROR_EOF) d->read_error = ret;
        avcodec_send_packet(d->dec, NULL);
        if ((st = drain_decoder(d)) != STENO_OK) return st;
        if (d->swr && (st = resample_append(d, NULL, 0)) != STENO_OK) return st;
        d->eof = 1;
        return STENO_OK;
    }
    if (d->pkt->stream_index == d->stream) {
        ret = avcodec_send_packet(d->dec, d->pkt);
        /* EAGAIN cannot happen here: each send is followed by a full receive loop */
        if (ret == AVERROR(ENOMEM)) {
            av_packet_unref(d->pkt);
            return steno_fail(STENO_E_NOMEM, "%s: out of memory decoding audio", d->name);
        }
    }
    av_packet_unref(d->pkt);
    return drain_decoder(d);
}

static steno_status decode_all(decoder *d) {
    steno_status st = STENO_OK;
    while (!d->eof && st == STENO_OK) st = decode_step(d);
    return st;
}

static uint32_t le32(const unsigned char *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* Seconds of audio a RIFF/WAVE header's data chunk declares (its size over the fmt chunk's byte
 * rate), or -1 when head is not a WAV header or the size is unknown (0 or 0xFFFFFFFF: a WAV written
 * to a pipe). avformat's wav demuxer clamps the duration to the bytes present, so the promise is
 * read here. */
static double wav_declared_seconds(const unsigned char *h, size_t n) {
    if (n < 12 || memcmp(h, "RIFF", 4) != 0 || memcmp(h + 8, "WAVE", 4) != 0) return -1;
    uint32_t byte_rate = 0;
    for (size_t pos = 12; pos + 8 <= n;) {
        const uint32_t size = le32(h + pos + 4);
        if (memcmp(h + pos, "fmt ", 4) == 0 && pos + 20 <= n) byte_rate = le32(h + pos + 16);
        if (memcmp(h + pos, "data", 4) == 0)
            return byte_rate == 0 || size == 0 || size == 0xFFFFFFFFu ? -1 : (double)size / byte_rate;
        if (size > n - pos - 8) break;
        pos += 8 + size + (size & 1);
    }
    return -1;
}

/* A file that decoded only in part gets a warning (steno_warnmsg): a read error, or less audio than
 * its header declares. Durations the demuxer only estimated from the bit rate (MP3 without a Xing
 * header) are not a promise and are not compared; 1 % (at least 0.1 s) is left for codec delay
 * and padding. */
static void warn_partial(const decoder *d) {
    const size_t total = d->out_base + d->out.n;
    const double got = (double)total / STENO_SAMPLE_RATE;
    if (d->read_error && d->read_error != AVERROR_EOF) {
        char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
        av_strerror(d->read_error, buf, sizeof buf);
        steno_warn("%s: read error after %.1f s of audio (%s); using what was decoded", d->name, got, buf);
        return;
    }
    const AVStream *s = d->fmt->streams[d->stream];
    double declared = wav_declared_seconds(d->head, d->head_n);
    if (declared < 0 && d->fmt->duration_estimation_method == AVFMT_DURATION_FROM_BITRATE) return;
    if (declared >= 0) {
        if (declared > 0 && total == 0)
            steno_warn("%s: no audio data: the header declares %.1f s of audio", d->name, declared);
        else if (got < declared - fmax(0.1, 0.01 * declared))
            steno_warn("%s: truncated: the header declares %.1f s of audio, %.1f s decoded", d->name, declared, got);
        return;
    }
    if (s->duration != AV_NOPTS_VALUE && s->duration > 0) declared = (double)s->duration * av_q2d(s->time_base);
    else if (d->fmt->duration != AV_NOPTS_VALUE && d->fmt->duration > 0) declared = (double)d->fmt->duration / AV_TIME_BASE;
    if (declared > 0 && got < declared - fmax(0.1, 0.01 * declared))
        steno_warn("%s: truncated: the header declares %.1f s of audio, %.1f s decoded", d->name, declared, got);
}

/* Frees everything the decoder holds but a custom AVIOContext, which its opener owns. */
static void decoder_release(decoder *d) {
    swr_free(&d->swr);
    av_channel_layout_uninit(&d->swr_layout);
    av_frame_free(&d->frame);
    av_packet_free(&d->pkt);
    avcodec_free_context(&d->dec);
    avformat_close_input(&d->fmt);
    free(d->out.data);
    d->out = (pcm_buf){0};
}

/* The one decoder path behind both loaders: d->fmt is open (by path or over memory); decode,
 * convert to float and release everything but the AVIOContext, which the caller owns. */
static steno_status load_opened(decoder *d, steno_status st, float **samples, size_t *n_samples) {
    if (st == STENO_OK) st = open_stream(d);
    if (st == STENO_OK) {
        d->pkt = av_packet_alloc();
        d->frame = av_frame_alloc();
        st = (d->pkt && d->frame) ? decode_all(d) : steno_fail(STENO_E_NOMEM, "%s: out of memory", d->name);
        if (st == STENO_OK) warn_partial(d);
    }
    float *out = NULL;
    if (st == STENO_OK) {
        /* malloc(0) may return NULL; always hand back a freeable non-NULL pointer */
        out = malloc((d->out.n ? d->out.n : 1) * sizeof(float));
        if (!out) {
            st = steno_fail(STENO_E_NOMEM, "%s: out of memory", d->name);
        } else {
            /* as openai-whisper: int16 / 32768 */
            for (size_t i = 0; i < d->out.n; i++) out[i] = (float)d->out.data[i] / 32768.0f;
        }
    }
    const size_t n = d->out.n;
    decoder_release(d);
    if (st != STENO_OK) return st;
    *samples = out;
    *n_samples = n;
    return STENO_OK;
}

/* Standard input is read whole before decoding: avformat cannot seek a pipe, and an MP4/M4A whose
 * moov atom (its index) comes after the audio then yields no samples at all. */
#define MAX_STDIN_BYTES ((size_t)4 << 30)

steno_status audio_read_stdin(unsigned char **data, size_t *size) {
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) return steno_fail(STENO_E_NOMEM, "stdin: out of memory");
    for (;;) {
        if (n == cap) {
            if (cap >= MAX_STDIN_BYTES) {
                free(buf);
                return steno_fail(STENO_E_INVALID_ARG, "stdin: more than %zu GiB; give the file's path instead",
                                  MAX_STDIN_BYTES >> 30);
            }
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return steno_fail(STENO_E_NOMEM, "stdin: out of memory (%zu MB read)", n >> 20);
            }
            buf = nb;
            cap *= 2;
        }
        const size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (got == 0) break;
    }
    if (ferror(stdin)) {
        free(buf);
        return steno_fail(STENO_E_IO, "stdin: read error: %s", strerror(errno));
    }
    *data = buf;
    *size = n;
    return STENO_OK;
}

static steno_status load_memory(const void *data, size_t size, const char *name, float **samples,
                                size_t *n_samples);

steno_status steno_audio_load(const char *path, float **samples, size_t *n_samples) {
    if (!path || !samples || !n_samples)
        return steno_fail(STENO_E_INVALID_ARG, "steno_audio_load: NULL argument");
    *samples = NULL;
    *n_samples = 0;
    steno_clear_warning();
    pthread_once(&g_log_once, quiet_ffmpeg_log);

    if (strcmp(path, "-") == 0) {
        unsigned char *data = NULL;
        size_t size = 0;
        steno_status st = audio_read_stdin(&data, &size);
        if (st == STENO_OK) st = load_memory(data, size, "stdin", samples, n_samples);
        free(data);
        return st;
    }
    decoder d = {.name = path, .stream = -1, .swr_fmt = AV_SAMPLE_FMT_NONE};
    return load_opened(&d, open_path(&d, path), samples, n_samples);
}

steno_status steno_audio_load_memory(const void *data, size_t size, const char *name, float **samples,
                                     size_t *n_samples) {
    if ((!data && size) || !samples || !n_samples)
        return steno_fail(STENO_E_INVALID_ARG, "steno_audio_load_memory: NULL argument");
    *samples = NULL;
    *n_samples = 0;
    steno_clear_warning();
    pthread_once(&g_log_once, quiet_ffmpeg_log);
    return load_memory(data, size, name, samples, n_samples);
}

static steno_status load_memory(const void *data, size_t size, const char *name, float **samples,
                                size_t *n_samples) {
    decoder d = {.name = name && *name ? name : "memory", .stream = -1, .swr_fmt = AV_SAMPLE_FMT_NONE};
    d.head_n = size < sizeof d.head ? size : sizeof d.head;
    if (d.head_n) memcpy(d.head, data, d.head_n);
    mem_file m = {.data = data, .size = size};
    AVIOContext *pb = NULL;
    steno_status st = load_opened(&d, open_memory(&d, &m, &pb), samples, n_samples);
    /* a custom AVIOContext outlives avformat_close_input; its buffer may have been replaced */
    if (pb) av_freep(&pb->buffer);
    avio_context_free(&pb);
    return st;
}

/* ---- streaming: the same decoder path, consumed a block at a time (audio/stream.h) ---- */

struct audio_stream {
    decoder d;
    char *name;
    mem_file m;
    AVIOContext *pb; /* custom I/O of a memory stream */
    size_t rpos;     /* samples of d.out already handed out */
    int fd;          /* a live input's descriptor (-1: none or not ours) */
    int follow_ms;   /* a live regular file: how long to wait for it to grow at its end */
    int regular;
};

static steno_status stream_start(audio_stream *s, steno_status st, audio_stream **out) {
    decoder *d = &s->d;
    if (st == STENO_OK) st = open_stream(d);
    if (st == STENO_OK) {
        d->pkt = av_packet_alloc();
        d->frame = av_frame_alloc();
        if (!d->pkt || !d->frame) st = steno_fail(STENO_E_NOMEM, "%s: out of memory", d->name);
    }
    if (st != STENO_OK) {
        audio_stream_close(s);
        return st;
    }
    *out = s;
    return STENO_OK;
}

static audio_stream *stream_new(const char *name) {
    audio_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->name = strdup(name);
    if (!s->name) {
        free(s);
        return NULL;
    }
    s->d = (decoder){.name = s->name, .stream = -1, .swr_fmt = AV_SAMPLE_FMT_NONE};
    s->fd = -1;
    return s;
}

steno_status audio_stream_open_path(const char *path, audio_stream **out) {
    *out = NULL;
    pthread_once(&g_log_once, quiet_ffmpeg_log);
    audio_stream *s = stream_new(path);
    if (!s) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    return stream_start(s, open_path(&s->d, path), out);
}

steno_status audio_stream_open_memory(const void *data, size_t size, const char *name, audio_stream **out) {
    *out = NULL;
    pthread_once(&g_log_once, quiet_ffmpeg_log);
    audio_stream *s = stream_new(name && *name ? name : "memory");
    if (!s) return steno_fail(STENO_E_NOMEM, "%s: out of memory", name && *name ? name : "memory");
    decoder *d = &s->d;
    d->head_n = size < sizeof d->head ? size : sizeof d->head;
    if (d->head_n) memcpy(d->head, data, d->head_n);
    s->m = (mem_file){.data = data, .size = size};
    return stream_start(s, open_memory(d, &s->m, &s->pb), out);
}

steno_status audio_stream_read(audio_stream *s, float *dst, size_t cap, size_t *got) {
    decoder *d = &s->d;
    *got = 0;
    while (d->out.n - s->rpos < cap && !d->eof) {
        /* drop what was handed out before the buffer grows again */
        if (s->rpos > 0) {
            memmove(d->out.data, d->out.data + s->rpos, sizeof(int16_t) * (d->out.n - s->rpos));
            d->out.n -= s->rpos;
            d->out_base += s->rpos;
            s->rpos = 0;
        }
        steno_status st = decode_step(d);
        if (st != STENO_OK) return st;
    }
    size_t k = d->out.n - s->rpos;
    if (k > cap) k = cap;
    const int16_t *src = d->out.data + s->rpos;
    for (size_t i = 0; i < k; i++) dst[i] = (float)src[i] / 32768.0f; /* as load_opened */
    s->rpos += k;
    *got = k;
    return STENO_OK;
}

void audio_stream_warn_partial(const audio_stream *s) {
    if (s->d.eof) warn_partial(&s->d);
}

void audio_stream_close(audio_stream *s) {
    if (!s) return;
    decoder_release(&s->d);
    if (s->pb) av_freep(&s->pb->buffer);
    avio_context_free(&s->pb);
    if (s->fd > 0) close(s->fd);
    free(s->name);
    free(s);
}

/* ---- live input: a pipe, a file still being written, a URL (audio/stream.h) ---- */

/* Reads what the descriptor has; at the end of a regular file, waits up to follow_ms (polling
 * every 50 ms) for it to grow before reporting the end: a recorder appends to it. */
static int live_read(void *opaque, uint8_t *buf, int len) {
    audio_stream *s = opaque;
    int waited = 0;
    for (;;) {
        ssize_t k = read(s->fd < 0 ? 0 : s->fd, buf, (size_t)len);
        if (k > 0) return (int)k;
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return AVERROR(errno);
        if (!s->regular || waited >= s->follow_ms) return AVERROR_EOF;
        nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
        waited += 50;
    }
}

steno_status audio_stream_open_live(const char *path, const char *format, int rate, int follow_ms,
                                    audio_stream **out) {
    *out = NULL;
    pthread_once(&g_log_once, quiet_ffmpeg_log);
    const int is_stdin = strcmp(path, "-") == 0, is_url = !is_stdin && strstr(path, "://") != NULL;
    audio_stream *s = stream_new(is_stdin ? "stdin" : path);
    if (!s) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    decoder *d = &s->d;
    d->live = 1;
    const AVInputFormat *ifmt = NULL;
    AVDictionary *opts = NULL;
    if (format) {
        ifmt = av_find_input_format(format);
        if (!ifmt) {
            audio_stream_close(s);
            return steno_fail(STENO_E_INVALID_ARG, "%s: unknown input format '%s'", d->name, format);
        }
        char r[32];
        snprintf(r, sizeof r, "%d", rate);
        av_dict_set(&opts, "sample_rate", r, 0);
        av_dict_set(&opts, "ch_layout", "mono", 0);
    }
    int ret;
    if (is_url) {
        ret = avformat_open_input(&d->fmt, path, ifmt, &opts);
    } else {
        if (!is_stdin) {
            s->fd = open(path, O_RDONLY | O_CLOEXEC);
            if (s->fd < 0) {
                av_dict_free(&opts);
                const int e = errno;
                audio_stream_close(s);
                return steno_fail(STENO_E_IO, "%s: %s", path, e == ENOENT ? "no such file" : strerror(e));
            }
        }
        struct stat sb = {0};
        if (fstat(s->fd < 0 ? 0 : s->fd, &sb) == 0) s->regular = S_ISREG(sb.st_mode) && !is_stdin;
        if (S_ISDIR(sb.st_mode)) {
            av_dict_free(&opts);
            audio_stream_close(s);
            return steno_fail(STENO_E_IO, "%s: is a directory", path);
        }
        s->follow_ms = follow_ms;
        unsigned char *buf = av_malloc(MEM_IO_BUFFER);
        if (buf) s->pb = avio_alloc_context(buf, MEM_IO_BUFFER, 0, s, live_read, NULL, NULL);
        if (!buf || !s->pb) av_free(buf);
        d->fmt = s->pb ? avformat_alloc_context() : NULL;
        if (!d->fmt) {
            av_dict_free(&opts);
            audio_stream_close(s);
            return steno_fail(STENO_E_NOMEM, "%s: out of memory", d->name);
        }
        /* small reads: a live source's first packet should not wait for 64 KiB */
        s->pb->max_packet_size = 4096;
        d->fmt->pb = s->pb;
        d->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
        /* as for memory input: the bytes must not make avformat open other URLs or files */
        av_dict_set(&opts, "protocol_whitelist", "none", 0);
        ret = avformat_open_input(&d->fmt, d->name, ifmt, &opts);
    }
    av_dict_free(&opts);
    /* a URL that cannot be reached (404, connection refused, unknown protocol) is not a format
     * error: only one whose bytes avformat cannot recognize is "not an audio file" */
    const int unreachable = is_url && ret < 0 && ret != AVERROR_INVALIDDATA && ret != AVERROR(ENOMEM);
    return stream_start(s, ret < 0 ? unreachable ? fail_av(d, STENO_E_IO, "cannot open", ret) : fail_open(d, ret) : STENO_OK,
                        out);
}
