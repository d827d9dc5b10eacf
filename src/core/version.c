/* version.c — steno_version() and steno_version_number(): the library's own version, from CMake's
 * project(VERSION) through the STENO_VERSION_STRING / STENO_VERSION_NUM compile definitions (set in
 * CMakeLists.txt; no generated file). A program compares them with the STENO_VERSION macro of the
 * header it was compiled against to see which library it runs with. */
#include "steno.h"

#ifndef STENO_VERSION_STRING
#error "STENO_VERSION_STRING is defined by CMakeLists.txt (the project version)"
#endif
#ifndef STENO_VERSION_NUM
#error "STENO_VERSION_NUM is defined by CMakeLists.txt (major*10000 + minor*100 + patch)"
#endif

const char *steno_version(void) { return STENO_VERSION_STRING; }

int steno_version_number(void) { return STENO_VERSION_NUM; }
