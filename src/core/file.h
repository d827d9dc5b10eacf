/* file.h — reading a whole small file (JSON configs, vocabularies) into memory, and mapping a
 * large one (model weights) read-only. */
#ifndef STENO_CORE_FILE_H
#define STENO_CORE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "steno.h"

/** Reads path into *buf (malloc'd, NUL-terminated; the caller frees) and its length into *len.
 *  Errors name path: STENO_E_IO (cannot open, a directory, read error), STENO_E_FORMAT (larger
 *  than max_bytes), STENO_E_NOMEM. */
steno_status steno_read_file(const char *path, size_t max_bytes, char **buf, size_t *len);

/** A whole file mapped read-only. An empty file (where allowed) is data "" with mapped 0. */
typedef struct steno_mapped_file {
    const uint8_t *data;
    size_t size;
    int mapped; /* 1: data is an mmap the owner unmaps with steno_unmap_file */
} steno_mapped_file;

/** How a format words the errors of steno_map_file; each line is "<path>: <words>", and the
 *  formats keep the wording their tests and users already know. */
typedef struct steno_map_words {
    const char *open;        /* before strerror when open fails: "" or "cannot open: " */
    const char *stat;        /* before strerror when fstat fails; NULL: said as not_regular */
    const char *dir;         /* a directory (STENO_E_IO); NULL: said as not_regular */
    const char *not_regular; /* any other non-regular file (STENO_E_IO); NULL: mapped as is */
    const char *empty;       /* a 0-byte file (STENO_E_FORMAT); NULL: data "" */
    const char *too_large;   /* over SIZE_MAX / 2 bytes (STENO_E_FORMAT); NULL: no check */
    int map_names_size;      /* 1: "cannot map N bytes: ..." rather than "cannot map: ..." */
} steno_map_words;

/** Maps path read-only into *out; errors are STENO_E_IO or STENO_E_FORMAT worded by w. */
steno_status steno_map_file(const char *path, const steno_map_words *w, steno_mapped_file *out);

/** Unmaps what steno_map_file mapped (nothing for an empty file); f may be zeroed. */
void steno_unmap_file(const steno_mapped_file *f);

#endif
