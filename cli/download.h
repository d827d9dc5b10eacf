/* download.h — HTTP(S) downloads for `steno pull` (cli/pull_cmd.c), on libcurl. Internal to the
 * CLI: the library itself never touches the network.
 *
 * Every function returns 0 or -1; on -1, err holds one line naming the URL or path and the reason
 * (no "steno:" prefix), for the caller to print. */
#ifndef STENO_CLI_DOWNLOAD_H
#define STENO_CLI_DOWNLOAD_H

#include <stddef.h>
#include <stdint.h>

/** Initializes libcurl once per process; call before the others. Returns 0 or -1 (err set). */
int steno_dl_init(char *err, size_t err_size);
void steno_dl_cleanup(void);

/** GETs url into a malloc'd, NUL-terminated buffer (*body, *len), refusing bodies over max bytes.
 *  endpoint names the server in "cannot reach ENDPOINT: ..." errors. On an HTTP error status,
 *  *http_status holds it (else 0) so the caller can word a 404 its own way. */
int steno_dl_get(const char *url, const char *endpoint, size_t max, char **body, size_t *len,
                 long *http_status, char *err, size_t err_size);

/** Downloads url into path, which must end up size bytes long. A shorter path is resumed with a
 *  Range request from its current length; a server answering 200 to that (Range ignored) restarts
 *  the file. progress: draw a bar (bytes, rate, ETA) on stderr, labelled label. */
int steno_dl_file(const char *url, const char *endpoint, const char *path, int64_t size,
                  const char *label, int progress, char *err, size_t err_size);

#endif
