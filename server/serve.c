/* serve.c — the server's life: listen first (so /health answers 503 while the models load), load
 * the models into the scheduler, serve until SIGINT/SIGTERM, then shut down gracefully: stop
 * accepting, give in-flight requests shutdown_timeout seconds, cancel what is left, exit 0.
 * Also the connection watch of serve_internal.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/metrics.h"
#include "server/serve_internal.h"

server_opts server_default_opts(void) {
    server_opts o;
    memset(&o, 0, sizeof o);
    o.host = "127.0.0.1";
    o.port = 8080;
    o.whisper_opts = steno_whisper_default_options();
    o.spec = steno_spec_default_params();
    o.n_parallel = 1;
    o.whisper_batch = 1;
    o.max_queue = 64;
    o.prefill_chunk = 64;
    o.prompt_cache_bytes = (size_t)256 << 20;
    o.max_body_bytes = 26214400;
    o.max_audio_seconds = 7200;
    o.max_tokens = 4096;
    o.header_timeout = 15;
    o.body_timeout = 120;
    o.request_timeout = 600;
    o.shutdown_timeout = 30;
    o.max_connections = 256;
    return o;
}

/* ---------------------------------------------------------------------------- in-flight count */

static atomic_int g_in_flight;
static atomic_uint g_requests_ended;

void serve_request_begin(server_ctx *S) { atomic_fetch_add(&g_in_flight, 1); }
void serve_request_end(server_ctx *S) {
    atomic_fetch_add(&g_requests_ended, 1);
    atomic_fetch_sub(&g_in_flight, 1);
}
int serve_in_flight(void) { return atomic_load(&g_in_flight); }

/* --------------------------------------------------------------------------- connection watch */

typedef enum watch_phase { PHASE_HEADERS = 0, PHASE_BODY = 1, PHASE_BUSY = 2 } watch_phase;

typedef struct watch {
    int fd;
    watch_phase phase;
    double since;
    int cut;
    struct watch *prev, *next;
} watch;

static pthread_mutex_t g_watch_mu = PTHREAD_MUTEX_INITIALIZER;
static watch *g_watches;
static double g_header_timeout, g_body_timeout;

static void watch_set(struct MHD_Connection *c, watch_phase phase) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (!ci || !ci->socket_context) return;
    watch *w = ci->socket_context;
    pthread_mutex_lock(&g_watch_mu);
    w->phase = phase;
    w->since = sched_now();
    pthread_mutex_unlock(&g_watch_mu);
}

void serve_connection_body(struct MHD_Connection *c) { watch_set(c, PHASE_BODY); }
void serve_connection_busy(struct MHD_Connection *c) { watch_set(c, PHASE_BUSY); }
void serve_connection_idle(struct MHD_Connection *c) { watch_set(c, PHASE_HEADERS); }

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        watch *w = calloc(1, sizeof *w);
        if (!w) return;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        w->fd = ci ? ci->connect_fd : -1;
        w->since = sched_now();
        pthread_mutex_lock(&g_watch_mu);
        w->next = g_watches;
        if (g_watches) g_watches->prev = w;
        g_watches = w;
        pthread_mutex_unlock(&g_watch_mu);
        *socket_context = w;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        watch *w = *socket_context;
        pthread_mutex_lock(&g_watch_mu); /* the watcher never touches w's fd after this */
        if (w->prev) w->prev->next = w->next;
        else g_watches = w->next;
        if (w->next) w->next->prev = w->prev;
        pthread_mutex_unlock(&g_watch_mu);
        free(w);
        *socket_context = NULL;
    }
}

static volatile int g_watch_stop;

/* Every 200 ms: cut the connections past their phase's deadline. shutdown(2) makes MHD's next
 * read see the end of the stream, so MHD itself closes and frees the connection.
 * And when the server has gone idle after serving something, hand the heap's free pages back:
 * each connection thread allocates from its own glibc arena, and an arena keeps what a burst of
 * uploads freed until it is trimmed, so without this the resident size of an idle server drifts
 * with the largest burst it has seen (measured: +9..17 % over a 1000-request soak). */
static void *watch_main(void *arg) {
    unsigned trimmed_at = 0;
    while (!g_watch_stop) {
        const struct timespec ts = {0, 200000000L};
        nanosleep(&ts, NULL);
        const double now = sched_now();
        pthread_mutex_lock(&g_watch_mu);
        for (watch *w = g_watches; w; w = w->next) {
            const double limit = w->phase == PHASE_HEADERS ? g_header_timeout
                                 : w->phase == PHASE_BODY  ? g_body_timeout
                                                           : 0;
            if (limit > 0 && !w->cut && w->fd >= 0 && now - w->since > limit) {
                shutdown(w->fd, SHUT_RDWR);
                w->cut = 1;
            }
        }
        pthread_mutex_unlock(&g_watch_mu);
        const unsigned ended = atomic_load(&g_requests_ended);
        if (ended != trimmed_at && atomic_load(&g_in_flight) == 0) {
            malloc_trim(0);
            trimmed_at = ended;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------ start-up */

static pthread_t g_main_thread;

/* SIGINT/SIGTERM caught by a thread that does not block them (see serve's main): on to main, which
 * blocks them and takes them with sigwait (pthread_kill is async-signal-safe) */
static void forward_to_main(int sig) {
    const int saved = errno;
    pthread_kill(g_main_thread, sig);
    errno = saved;
}

static int resolve_host(const char *host, int port, struct sockaddr_storage *ss, int *v6) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    if (getaddrinfo(host, ports, &hints, &res) != 0 || !res) return -1;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return 0;
}

/* The scheduler's operator messages (the prompt cache's files). */
static void log_sched(void *user, const char *msg) {
    (void)user;
    fprintf(stderr, "steno serve: %s\n", msg);
}

/* libmicrohttpd's own messages (a client that left, a socket error) only with STENO_HTTP_DEBUG=1:
 * the access log already has one line per request, and every start-up failure is reported here. */
static void log_mhd(void *cls, const char *fmt, va_list ap) {
    const server_ctx *S = cls;
    const char *dbg = getenv("STENO_HTTP_DEBUG");
    if (S->o.quiet || !dbg || strcmp(dbg, "1") != 0) return;
    fputs("steno serve: http: ", stderr);
    vfprintf(stderr, fmt, ap);
}

static const char *basename_of(const char *p) {
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

int steno_server_run(const server_opts *opts) {
    server_ctx S;
    memset(&S, 0, sizeof S);
    S.o = *opts;
    S.started = (long)time(NULL);
    if (S.o.whisper_path)
        snprintf(S.whisper_id, sizeof S.whisper_id, "%s", S.o.whisper_id ? S.o.whisper_id : basename_of(S.o.whisper_path));
    if (S.o.llm_path) snprintf(S.llm_id, sizeof S.llm_id, "%s", S.o.llm_id ? S.o.llm_id : basename_of(S.o.llm_path));
    S.metrics = metrics_new();
    if (!S.metrics) {
        fprintf(stderr, "steno serve: out of memory\n");
        return 1;
    }
    g_header_timeout = S.o.header_timeout;
    g_body_timeout = S.o.body_timeout;

    /* every thread started from here on inherits the blocked signals; main takes them in sigwait.
     * Threads started before main (OpenBLAS starts its workers in a library constructor) do not
     * block them, and the kernel may hand a process signal to such a thread, whose default action
     * would kill the process mid-load (CI saw "exit status -2 after SIGINT"): the handler passes
     * it on to main, where it waits, blocked, for sigwait. */
    g_main_thread = pthread_self();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_to_main;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_storage ss;
    int v6 = 0;
    if (resolve_host(S.o.host, S.o.port, &ss, &v6) != 0) {
        fprintf(stderr, "steno serve: --host %s: not an address of this machine\n", S.o.host);
        metrics_free(S.metrics);
        return 2;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE;
    if (v6) flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)S.o.port, NULL, NULL, http_on_request, &S, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, &S,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_NOTIFY_COMPLETED, http_request_completed, &S, MHD_OPTION_NOTIFY_CONNECTION, on_connection, &S,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)S.o.max_connections, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)128 * 1024, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "steno serve: cannot listen on %s:%d: %s\n", S.o.host, S.o.port,
                errno ? strerror(errno) : "libmicrohttpd refused");
        metrics_free(S.metrics);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    const int port = di ? di->port : S.o.port;
    pthread_t watcher;
    g_watch_stop = 0;
    const int watching = pthread_create(&watcher, NULL, watch_main, NULL) == 0;
    fprintf(stderr, "steno serve: listening on http://%s%s%s:%d/ (loading models)\n", v6 ? "[" : "", S.o.host,
            v6 ? "]" : "", port);
    /* a script waits for this file: failing to write it is an error, not a silent hang */
    int port_file_failed = 0;
    if (S.o.port_file) {
        FILE *f = fopen(S.o.port_file, "w");
        if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0) {
            fprintf(stderr, "steno serve: --port-file %s: %s\n", S.o.port_file, strerror(errno ? errno : EIO));
            port_file_failed = 1;
        }
    }

    sched_params sp = sched_default_params();
    sp.whisper_path = S.o.whisper_path;
    sp.whisper_opts = S.o.whisper_opts;
    sp.llm_path = S.o.llm_path;
    sp.n_threads = S.o.n_threads;
    sp.n_parallel = S.o.n_parallel;
    sp.whisper_batch = S.o.whisper_batch;
    sp.max_queue = S.o.max_queue;
    sp.prefill_chunk = S.o.prefill_chunk;
    sp.llm_compute = (steno_llm_compute)S.o.llm_compute;
    sp.prompt_cache_bytes = S.o.prompt_cache_bytes;
    sp.kv_budget_bytes = S.o.kv_budget_bytes;
    sp.spec = S.o.spec;
    sp.prompt_cache_dir = S.o.prompt_cache_dir;
    sp.log = log_sched;
    sp.n_ctx = S.o.n_ctx;
    int rc = 0;
    if (port_file_failed) {
        rc = 1;
        goto stop;
    }
    if (sched_new(&sp, &S.sched) != STENO_OK) {
        fprintf(stderr, "steno serve: %s\n", steno_errmsg());
        rc = 1;
        goto stop;
    }
    S.ready = 1;
    if (S.whisper_id[0]) {
        /* --weights' spellings, in steno_weights order: a Lab type is named on the banner */
        static const char *const wnames[] = {"f16",  "f32",  "q8_0",      "q5_0",      "q5_1",      "q4_0",
                                             "q4_1", "mlx-q4g32", "mlx-q4g64", "mlx-q8g32", "mlx-q8g64"};
        const unsigned wt = (unsigned)S.o.whisper_opts.weights;
        fprintf(stderr, "steno serve: speech model %s (%s; weights %s%s; %s)\n",
                S.whisper_id, S.o.whisper_path, wt < sizeof wnames / sizeof *wnames ? wnames[wt] : "?",
                wt >= STENO_WEIGHTS_Q8_0 ? " (Lab)" : "", steno_system_info());
    }
    if (S.llm_id[0])
        fprintf(stderr, "steno serve: text model %s (%s, context %d per slot, --compute %s)\n", S.llm_id, S.o.llm_path,
                sched_n_ctx(S.sched), S.o.llm_compute == STENO_LLM_COMPUTE_FAST ? "fast" : "ggml");
    fprintf(stderr, "steno serve: ready: %d slot(s), queue %d, http://%s%s%s:%d/\n", sched_n_parallel(S.sched),
            S.o.max_queue, v6 ? "[" : "", S.o.host, v6 ? "]" : "", port);

    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    fprintf(stderr, "steno serve: %s: finishing %d request(s) in flight (up to %.0f s)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", atomic_load(&g_in_flight), S.o.shutdown_timeout);
stop:
    S.stopping = 1;
    {
        const MHD_socket ls = MHD_quiesce_daemon(d);
        if (ls != MHD_INVALID_SOCKET) close(ls);
    }
    /* the grace period; a second SIGINT/SIGTERM ends it at once */
    const double until = sched_now() + S.o.shutdown_timeout;
    while (atomic_load(&g_in_flight) > 0 && sched_now() < until) {
        const struct timespec ts = {0, 50000000L};
        if (sigtimedwait(&sigs, NULL, &ts) > 0) {
            fprintf(stderr, "steno serve: second signal: cancelling %d request(s)\n", atomic_load(&g_in_flight));
            break;
        }
    }
    /* what is left is cancelled; its handlers get a moment to answer 503 before the sockets close */
    if (S.sched) sched_cancel_all(S.sched);
    const double answer_by = sched_now() + 5.0;
    while (atomic_load(&g_in_flight) > 0 && sched_now() < answer_by) {
        const struct timespec ts = {0, 20000000L};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(d);
    g_watch_stop = 1;
    if (watching) pthread_join(watcher, NULL);
    sched_free(S.sched);
    metrics_free(S.metrics);
    if (rc == 0) fprintf(stderr, "steno serve: stopped\n");
    return rc;
}
