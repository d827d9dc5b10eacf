/* json_file.h — reading a whole JSON file (configs, tokenizers) into a cJSON tree. */
#ifndef STENO_CORE_JSON_FILE_H
#define STENO_CORE_JSON_FILE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "steno.h"

/** Reads path (at most max_bytes, see steno_read_file) and parses it into *root (the caller
 *  frees it with cJSON_Delete). A parse error is STENO_E_FORMAT "<path>: not JSON (line N)", N
 *  being where cJSON stopped; with name_empty set an empty file reads "<path>: not JSON (empty
 *  file)" instead. */
steno_status steno_json_load(const char *path, size_t max_bytes, int name_empty, cJSON **root);

#endif
