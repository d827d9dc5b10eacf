/* download.c — libcurl transfers for `steno pull`: a small GET into memory (the repository listing)
 * and a resumable file download with a progress bar (download.h). */
#include "download.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int steno_dl_init(char *err, size_t err_size) {
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(err, err_size, "libcurl: %s", curl_easy_strerror(rc));
        return -1;
    }
    return 0;
}

void steno_dl_cleanup(void) { curl_global_cleanup(); }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The options every transfer shares. A stalled connection (under 1 byte/s for 60 s) fails instead
 * of hanging forever; redirects are followed because the Hub answers resolve/ with a 302 to its
 * CDN. HF_TOKEN (as huggingface_hub reads it) opens gated and private repositories; libcurl does
 * not forward a custom Authorization header to another host on a redirect. */
static CURL *new_handle(const char *url, char *errbuf, struct curl_slist **headers) {
    CURL *h = curl_easy_init();
    if (!h) return NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "steno-pull/1");
    *headers = NULL;
    const char *token = getenv("HF_TOKEN");
    if (token && *token) {
        char auth[4096];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        *headers = curl_slist_append(NULL, auth);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
    }
    return h;
}

/* One line for a failed transfer: unreachable servers name the endpoint (the user's network or
 * HF_ENDPOINT is wrong), HTTP errors the URL (the repository, revision or file is wrong). */
static void describe(CURL *h, CURLcode rc, const char *errbuf, const char *url,
                     const char *endpoint, long *http_status, char *err, size_t err_size) {
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (http_status) *http_status = rc == CURLE_HTTP_RETURNED_ERROR ? code : 0;
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
        snprintf(err, err_size, "cannot reach %s: %s", endpoint, why);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        if (code == 0) snprintf(err, err_size, "cannot reach %s: %s", endpoint, why);
        else snprintf(err, err_size, "%s: transfer stalled: %s", url, why);
        break;
    case CURLE_HTTP_RETURNED_ERROR:
        snprintf(err, err_size, "%s: HTTP %ld%s", url, code,
                 code == 404   ? " (not found)"
                 : code == 401 ? " (unauthorized: a gated or private repository needs HF_TOKEN)"
                 : code == 403 ? " (forbidden)"
                               : "");
        break;
    default:
        snprintf(err, err_size, "%s: %s", url, why);
    }
}

/* ---- a small body into memory ----------------------------------------------------------------- */

typedef struct {
    FILE *mem; /* open_memstream: grows the buffer and keeps it NUL-terminated */
    size_t len, max;
    int too_big;
} membuf;

static size_t mem_write(char *p, size_t size, size_t n, void *ud) {
    membuf *m = ud;
    size_t add = size * n;
    if (m->len + add > m->max) {
        m->too_big = 1;
        return 0;
    }
    m->len += add;
    return fwrite(p, 1, add, m->mem);
}

int steno_dl_get(const char *url, const char *endpoint, size_t max, char **body, size_t *len,
                 long *http_status, char *err, size_t err_size) {
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers;
    *http_status = 0;
    CURL *h = new_handle(url, errbuf, &headers);
    if (!h) {
        snprintf(err, err_size, "%s: cannot start a transfer (libcurl)", url);
        return -1;
    }
    char *data = NULL;
    size_t data_len = 0;
    membuf m = {.mem = open_memstream(&data, &data_len), .max = max};
    if (!m.mem) {
        snprintf(err, err_size, "%s: %s", url, strerror(errno));
        curl_easy_cleanup(h);
        curl_slist_free_all(headers);
        return -1;
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mem_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &m);
    CURLcode rc = curl_easy_perform(h);
    int ok = rc == CURLE_OK;
    if (!ok && m.too_big) snprintf(err, err_size, "%s: response larger than %zu bytes", url, max);
    else if (!ok) describe(h, rc, errbuf, url, endpoint, http_status, err, err_size);
    curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    if (fclose(m.mem) != 0 && ok) {
        snprintf(err, err_size, "%s: %s", url, strerror(errno));
        ok = 0;
    }
    if (!ok) {
        free(data);
        return -1;
    }
    *body = data;
    *len = data_len;
    return 0;
}

/* ---- a file, resumed ---------------------------------------------------------------------------- */

typedef struct {
    CURL *h;
    int fd;
    const char *path;
    int64_t offset;       /* bytes already in the file when this request started */
    int64_t written;      /* bytes this request wrote */
    int64_t size;         /* the file's final size */
    int checked;          /* the response status has been looked at */
    int write_errno;      /* a failed write(2): the disk, not the network */
    int bad_range;        /* a 206 for some other range than the one asked for */
    char content_range[128];
    /* progress */
    int progress;
    const char *label;
    double t0, last_draw;
} sink;

static size_t header_cb(char *p, size_t size, size_t n, void *ud) {
    sink *s = ud;
    size_t len = size * n;
    static const char key[] = "content-range:";
    if (len > sizeof key - 1 && strncasecmp(p, key, sizeof key - 1) == 0) {
        size_t v = len - (sizeof key - 1);
        if (v >= sizeof s->content_range) v = sizeof s->content_range - 1;
        memcpy(s->content_range, p + sizeof key - 1, v);
        s->content_range[v] = '\0';
    }
    return len;
}

/* The first body bytes decide what they continue: a 206 must start where the file stops; a 200
 * is the whole file again (a server or CDN that ignores Range), so the partial copy is dropped. */
static int check_response(sink *s) {
    long code = 0;
    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
    if (code == 206) {
        int64_t start = -1;
        if (sscanf(s->content_range, " bytes %" SCNd64 "-", &start) != 1 || start != s->offset) {
            s->bad_range = 1;
            return -1;
        }
        return 0;
    }
    if (s->offset > 0) {
        if (ftruncate(s->fd, 0) != 0 || lseek(s->fd, 0, SEEK_SET) != 0) {
            s->write_errno = errno;
            return -1;
        }
        s->offset = 0;
    }
    return 0;
}

static size_t file_write(char *p, size_t size, size_t n, void *ud) {
    sink *s = ud;
    size_t len = size * n, done = 0;
    if (!s->checked) {
        s->checked = 1;
        if (check_response(s) != 0) return 0;
    }
    while (done < len) {
        ssize_t w = write(s->fd, p + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            s->write_errno = w < 0 ? errno : ENOSPC;
            return 0;
        }
        done += (size_t)w;
    }
    s->written += (int64_t)len;
    return len;
}

static void human(double bytes, char *out, size_t size) {
    if (bytes >= 1e9) snprintf(out, size, "%.2f GB", bytes / 1e9);
    else if (bytes >= 1e6) snprintf(out, size, "%.1f MB", bytes / 1e6);
    else snprintf(out, size, "%.0f kB", bytes / 1e3);
}

static void draw(sink *s, int final) {
    double t = now_s(), el = t - s->t0;
    if (!final && t - s->last_draw < 0.2) return;
    s->last_draw = t;
    int64_t have = s->offset + s->written;
    double rate = el > 0 ? (double)s->written / el : 0;
    char a[32], b[32], r[32], eta[32] = "--:--";
    human((double)have, a, sizeof a);
    human((double)s->size, b, sizeof b);
    human(rate, r, sizeof r);
    if (rate > 0 && s->size >= have) {
        long left = (long)((double)(s->size - have) / rate);
        snprintf(eta, sizeof eta, "%ld:%02ld", left / 60, left % 60);
    }
    int pct = s->size > 0 ? (int)(100.0 * (double)have / (double)s->size) : 100;
    char bar[21];
    int fill = pct / 5;
    for (int i = 0; i < 20; i++) bar[i] = i < fill ? '#' : '.';
    bar[20] = '\0';
    fprintf(stderr, "\r%-22.22s [%s] %3d%%  %s / %s  %s/s  ETA %s   ", s->label, bar, pct, a, b, r,
            eta);
    if (final) fputc('\n', stderr);
    fflush(stderr);
}

static int xfer_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                   curl_off_t ulnow) {
    sink *s = ud;
    if (s->progress) draw(s, 0);
    return 0;
}

int steno_dl_file(const char *url, const char *endpoint, const char *path, int64_t size,
                  const char *label, int progress, char *err, size_t err_size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || lseek(fd, st.st_size, SEEK_SET) < 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    sink s = {.fd = fd, .path = path, .offset = st.st_size, .size = size, .progress = progress,
              .label = label, .t0 = now_s()};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers;
    CURL *h = new_handle(url, errbuf, &headers);
    if (!h) {
        snprintf(err, err_size, "%s: cannot start a transfer (libcurl)", url);
        close(fd);
        return -1;
    }
    s.h = h;
    /* CURLOPT_RANGE, not RESUME_FROM: libcurl fails a resumed transfer answered 200, where a
     * fresh copy of the whole file is as good (check_response restarts the file). */
    char range[64];
    snprintf(range, sizeof range, "%" PRId64 "-", s.offset);
    if (s.offset > 0) curl_easy_setopt(h, CURLOPT_RANGE, range);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, file_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, xfer_cb);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &s);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    CURLcode rc = curl_easy_perform(h);
    if (progress && rc == CURLE_OK) draw(&s, 1);
    else if (progress) fputc('\n', stderr);
    int64_t have = s.offset + s.written;
    int ret = -1;
    /* The file is flushed before it can be verified and renamed into place: an install that
     * survives a crash must not hold a file that only looked complete in the page cache. */
    if (s.write_errno) snprintf(err, err_size, "%s: %s", path, strerror(s.write_errno));
    else if (s.bad_range)
        snprintf(err, err_size, "%s: server sent Content-Range '%s' for a request from byte %" PRId64,
                 url, s.content_range, s.offset);
    else if (rc == CURLE_PARTIAL_FILE || (rc == CURLE_OK && have < size))
        snprintf(err, err_size,
                 "%s: connection closed after %" PRId64 " of %" PRId64
                 " bytes (run steno pull again to resume)",
                 url, have, size);
    else if (rc != CURLE_OK) describe(h, rc, errbuf, url, endpoint, NULL, err, err_size);
    else if (fsync(fd) != 0) snprintf(err, err_size, "%s: %s", path, strerror(errno));
    else ret = 0;
    curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    if (close(fd) != 0 && ret == 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        ret = -1;
    }
    return ret;
}
