/* pull_stage.h — the staging directory of `steno pull` (cli/pull_cmd.c): files are downloaded into
 * ROOT/NAME.partial/, verified (size and sha256, or git blob sha1 for small non-LFS files), and
 * the directory becomes ROOT/NAME by one rename(2), so the cache never holds a half-installed
 * model. A pull that stopped leaves NAME.partial/ for the next one to resume.
 *
 * Functions returning int give 0, or -1 after printing one line "steno: pull: ..." on stderr. */
#ifndef STENO_CLI_PULL_STAGE_H
#define STENO_CLI_PULL_STAGE_H

#include <stdint.h>

typedef struct {
    char path[128];      /* the file's name in the repository (and in the model directory) */
    int64_t size;
    char sha256[65];     /* hex; empty when only blob_sha1 is known */
    char blob_sha1[41];  /* git's blob id, sha1("blob <size>\0" + content); hex or empty */
} stage_file;

typedef struct {
    char dir[4400];      /* ROOT/NAME.partial */
    char root[4096];
    char name[256];
    char source[2400];   /* <endpoint>/<repo>/resolve/<revision>: what dir is a copy of */
    int lock_fd;
} stage;

/** mkdir -p path, naming the path that could not be made. */
int stage_mkdirs(const char *path);

/** Opens (creating or reusing) ROOT/NAME.partial for source, holding a lock so that two pulls of
 *  NAME do not write the same files. A staging directory of another source is emptied first. */
int stage_open(stage *s, const char *root, const char *name, const char *source);

/** Makes f complete and verified in the staging directory: kept when already so, else resumed
 *  or downloaded from source/f->path. A file that fails verification is deleted. */
int stage_fetch(stage *s, const stage_file *f, const char *endpoint, int progress);

/** Renames the staging directory to dest. With force an existing dest is renamed away first and
 *  deleted only after the new one is in place (and put back if that fails). */
int stage_install(stage *s, const char *dest, int force);

void stage_close(stage *s);

/** rm -rf path (no symlinks followed). Returns 0 or -1 with errno set. */
int stage_remove_tree(const char *path);

#endif
