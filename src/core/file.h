/* file.h — reading a whole small file (JSON configs, vocabularies) into memory. */
#ifndef STENO_CORE_FILE_H
#define STENO_CORE_FILE_H

#include <stddef.h>

#include "steno.h"

/** Reads path into *buf (malloc'd, NUL-terminated; the caller frees) and its length into *len.
 *  Errors name path: STENO_E_IO (cannot open, a directory, read error), STENO_E_FORMAT (larger
 *  than max_bytes), STENO_E_NOMEM. */
steno_status steno_read_file(const char *path, size_t max_bytes, char **buf, size_t *len);

#endif
