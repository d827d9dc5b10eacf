/* pull_cmd.c — `steno pull NAME|REPO|URL`: downloads a CTranslate2 Whisper model (the directory
 * faster-whisper uses) from a Hugging Face-style server into the model cache, where
 * `--model NAME` finds it.
 *
 *   int steno_cmd_pull(int argc, char **argv);   (declared in cli/commands.h)
 *
 * The repository's listing (<endpoint>/api/models/<repo>/tree/<revision>) gives each file's size
 * and hash (the LFS sha256, or the git blob sha1 of a small file); the files come from
 * <endpoint>/<repo>/resolve/<revision>/<file> into NAME.partial/ in the cache, are verified, and
 * the directory becomes NAME by one rename(2) (pull_stage.c). An interrupted pull resumes there.
 *
 * Exit status: 0 ok; 1 runtime error (one line "steno: pull: ..." on stderr); 2 usage error.
 */
#include "commands.h"
#include "download.h"
#include "options.h"
#include "pull_stage.h"
#include "steno.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_ENDPOINT "https://huggingface.co"
#define LISTING_MAX (16u << 20)

/* The short names faster-whisper's WhisperModel("NAME") accepts, and the repositories it maps
 * them to (faster_whisper/utils.py _MODELS). The one table of them. */
static const struct {
    const char *name, *repo;
} KNOWN[] = {
    {"tiny", "Systran/faster-whisper-tiny"},
    {"tiny.en", "Systran/faster-whisper-tiny.en"},
    {"base", "Systran/faster-whisper-base"},
    {"base.en", "Systran/faster-whisper-base.en"},
    {"small", "Systran/faster-whisper-small"},
    {"small.en", "Systran/faster-whisper-small.en"},
    {"medium", "Systran/faster-whisper-medium"},
    {"medium.en", "Systran/faster-whisper-medium.en"},
    {"large-v1", "Systran/faster-whisper-large-v1"},
    {"large-v2", "Systran/faster-whisper-large-v2"},
    {"large-v3", "Systran/faster-whisper-large-v3"},
    {"large-v3-turbo", "mobiuslabsgmbh/faster-whisper-large-v3-turbo"},
    {"turbo", "mobiuslabsgmbh/faster-whisper-large-v3-turbo"},
    {"distil-large-v3", "Systran/faster-distil-whisper-large-v3"},
};
#define N_KNOWN (sizeof KNOWN / sizeof KNOWN[0])

/* What a CTranslate2 Whisper directory may hold; anything else in the repository (README.md,
 * .gitattributes, other formats) is left on the server. */
static const char *const WANTED[] = {"model.bin",      "config.json",     "tokenizer.json",
                                     "vocabulary.txt", "vocabulary.json", "preprocessor_config.json"};

typedef struct {
    const char *arg, *revision, *name, *model_dir;
    bool force, progress, no_progress;
    steno_opt_list args;
} pull_opts;

static void pull_usage(FILE *f);

static bool parse_nonempty(const char *v, void *dst, steno_opt_error *err) {
    if (!*v) {
        snprintf(err->msg, sizeof err->msg, "the value is empty");
        return false;
    }
    *(const char **)dst = v;
    return true;
}

#define AT(field) STENO_OPT_AT(pull_opts, field)
static const steno_opt OPTIONS[] = {
    {STENO_OPT_CUSTOM, "--revision", "REV", AT(revision), .parse = parse_nonempty,
     .def = "main", .help = "branch, tag or commit to download"},
    {STENO_OPT_CUSTOM, "--name", "NAME", AT(name), .parse = parse_nonempty,
     .def = "the short name, or the repository's", .help = "install as NAME"},
    {STENO_OPT_CUSTOM, "--model-dir", "DIR", AT(model_dir), .parse = parse_nonempty,
     .def = "$STENO_MODELS_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/steno/models", .help = "the model cache"},
    {STENO_OPT_FLAG, "--force", .at = AT(force), .help = "replace an installed model of that name"},
    {STENO_OPT_FLAG, "--progress", .at = AT(progress),
     .help = "draw the progress bar even when stderr is not a terminal"},
    {STENO_OPT_FLAG, "--no-progress", .at = AT(no_progress), .help = "never draw it (wins over --progress)"},
    {STENO_OPT_HELP, "-h|--help", .help = "show this help"},
    {STENO_OPT_VERSION, "-V|--version", .help = "print the version"},
};
static const steno_opt ARGS = {STENO_OPT_LIST, .metavar = "NAME", .at = AT(args)};
#undef AT

static const steno_opts_spec SPEC = {
    .opts = OPTIONS, .n_opts = sizeof OPTIONS / sizeof OPTIONS[0], .positional = &ARGS,
    .err_prefix = "steno pull: ", .verb = "pull", .usage = pull_usage, .help_col = 25,
};

static void pull_usage(FILE *f) {
    fputs("usage: steno pull [options] NAME|OWNER/REPO|URL\n"
          "\n"
          "Downloads a Whisper model in CTranslate2 format (faster-whisper's model directories) into\n"
          "the model cache, where 'steno transcribe --model NAME' finds it. Every file's size and\n"
          "sha256 (from the repository's listing) is verified; the model appears only when all are.\n"
          "An interrupted pull resumes where it stopped (NAME.partial/ in the cache).\n"
          "\n"
          "arguments:\n"
          "  NAME                   a known name: tiny tiny.en base base.en small small.en medium\n"
          "                         medium.en large-v1 large-v2 large-v3 large-v3-turbo (turbo)\n"
          "                         distil-large-v3 (faster-whisper's repositories)\n"
          "  OWNER/REPO             a Hugging Face repository, e.g. Systran/faster-whisper-small\n"
          "  URL                    a repository's resolve root (or its tree/REV page), e.g.\n"
          "                         https://huggingface.co/Systran/faster-whisper-base/resolve/main\n"
          "\n"
          "options:\n",
          f);
    steno_opts_help(f, &SPEC, NULL);
    fputs("\n"
          "environment:\n"
          "  HF_ENDPOINT            the server (default: " DEFAULT_ENDPOINT ")\n"
          "  HF_TOKEN               a Hugging Face token, for gated or private repositories\n"
          "\n"
          "examples:\n"
          "  steno pull small.en && steno transcribe --model small.en talk.wav\n"
          "  steno pull Systran/faster-whisper-large-v3 --name large\n",
          f);
}

/* Returns -1 to go on, or the exit status (0 after --help, 2 after a usage error). */
static int parse_opts(int argc, char **argv, pull_opts *o) {
    *o = (pull_opts){.revision = "main", .progress = isatty(2)};
    const int parsed = steno_opts_parse(&SPEC, o, argc, argv);
    const int n = o->args.n;
    o->arg = n ? o->args.items[0] : NULL;
    steno_opt_list_free(&o->args);
    if (parsed >= 0) return parsed;
    if (o->no_progress) o->progress = false;
    if (n != 1) {
        fprintf(stderr, "steno pull: %s (see 'steno pull --help')\n", n ? "one model at a time" : "which model?");
        return 2;
    }
    return -1;
}

typedef struct {
    char endpoint[1024], repo[512], revision[256], name[256];
    char rev_url[800]; /* revision as a URL segment: a branch like refs/pr/1 has its '/' as %2F */
} pull_source;

static void copy_trimmed(char *dst, size_t size, const char *src, size_t len) {
    while (len > 0 && src[len - 1] == '/') len--;
    snprintf(dst, size, "%.*s", (int)len, src);
}

/* A repository is exactly OWNER/NAME: anything else would put '..' or extra segments in URLs. */
static int valid_repo(const char *r) {
    const char *slash = strchr(r, '/');
    return slash && slash != r && slash[1] && !strchr(slash + 1, '/') && !strstr(r, "..") &&
           !strpbrk(r, " ?#%\\");
}

/* NAME, OWNER/REPO or URL → where to download from and what to install as. */
static int resolve_source(const pull_opts *o, pull_source *s) {
    const char *arg = o->arg, *env = getenv("HF_ENDPOINT");
    copy_trimmed(s->endpoint, sizeof s->endpoint, env && *env ? env : DEFAULT_ENDPOINT,
                 strlen(env && *env ? env : DEFAULT_ENDPOINT));
    snprintf(s->revision, sizeof s->revision, "%s", o->revision);
    const char *scheme = strstr(arg, "://");
    if (scheme) {
        /* <endpoint>/<owner>/<repo>[/resolve/<revision>]: the repository is the two segments
         * before resolve/, so an endpoint with a path of its own (a mirror) still works. */
        char url[2048];
        copy_trimmed(url, sizeof url, arg, strlen(arg));
        /* resolve/REV as the issue names it, or tree/REV as a browser's address bar shows it */
        char *res = strstr(url, "/resolve/"), *tree = strstr(url, "/tree/");
        if (res || tree) {
            const char *rev = res ? res + 9 : tree + 6;
            copy_trimmed(s->revision, sizeof s->revision, rev, strlen(rev));
            *(res ? res : tree) = '\0';
        }
        char *host = url + (scheme - arg) + 3, *name_sl = strrchr(host, '/');
        char *owner_sl = NULL;
        if (name_sl) {
            *name_sl = '\0';
            owner_sl = strrchr(host, '/');
            *name_sl = '/';
        }
        if (!owner_sl || !s->revision[0]) {
            fprintf(stderr, "steno: pull: %s: not a repository URL (<endpoint>/OWNER/REPO[/resolve/REV])\n", arg);
            return 1;
        }
        snprintf(s->repo, sizeof s->repo, "%s", owner_sl + 1);
        copy_trimmed(s->endpoint, sizeof s->endpoint, url, (size_t)(owner_sl - url));
    } else if (strchr(arg, '/')) {
        snprintf(s->repo, sizeof s->repo, "%s", arg);
    } else {
        size_t i = 0;
        while (i < N_KNOWN && strcmp(KNOWN[i].name, arg) != 0) i++;
        if (i == N_KNOWN) {
            char list[512] = "";
            for (size_t k = 0; k < N_KNOWN; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                         KNOWN[k].name);
            fprintf(stderr, "steno: pull: unknown model '%s' (known: %s; or give OWNER/REPO or a URL)\n",
                    arg, list);
            return 1;
        }
        snprintf(s->repo, sizeof s->repo, "%s", KNOWN[i].repo);
        snprintf(s->name, sizeof s->name, "%s", arg);
    }
    if (!valid_repo(s->repo)) {
        fprintf(stderr, "steno: pull: %s: not a repository (OWNER/REPO)\n", arg);
        return 1;
    }
    if (!s->revision[0] || strpbrk(s->revision, " ?#%\\") || strstr(s->revision, "..")) {
        fprintf(stderr, "steno: pull: '%s' is not a revision (a branch, tag or commit)\n", s->revision);
        return 1;
    }
    char *w = s->rev_url;
    for (const char *c = s->revision; *c; c++) w += sprintf(w, *c == '/' ? "%%2F" : "%c", *c);
    if (o->name) snprintf(s->name, sizeof s->name, "%s", o->name);
    else if (!s->name[0]) snprintf(s->name, sizeof s->name, "%s", strchr(s->repo, '/') + 1);
    size_t n = strlen(s->name);
    if (!n || n > 200 || s->name[0] == '.' || strchr(s->name, '/') ||
        (n > 8 && !strcmp(s->name + n - 8, ".partial"))) {
        fprintf(stderr, "steno: pull: '%s' cannot name a model (no '/', no leading '.', no .partial)\n",
                s->name);
        return 1;
    }
    return 0;
}

/* ---- the listing ---------------------------------------------------------------------------- */

static int wanted(const char *path) {
    for (size_t i = 0; i < sizeof WANTED / sizeof WANTED[0]; i++)
        if (!strcmp(path, WANTED[i])) return 1;
    return 0;
}

static int is_hex(const char *s, size_t len) {
    if (!s || strlen(s) != len) return 0;
    for (size_t i = 0; i < len; i++)
        if (!strchr("0123456789abcdef", s[i])) return 0;
    return 1;
}

/* The Hub's tree listing: [{"type":"file","path","size","oid"(git blob sha1),
 * "lfs":{"oid"(sha256),"size"}}, ...]. Fills files (up to max) with what a Whisper directory
 * needs; returns the count, or -1 after printing why the listing is unusable. */
static int parse_listing(const char *json, const char *url, stage_file *files, int max) {
    cJSON *root = cJSON_Parse(json);
    int n = 0, has_model = 0, has_config = 0, has_vocab = 0;
    if (!cJSON_IsArray(root)) {
        fprintf(stderr, "steno: pull: %s: not a repository listing (expected a JSON array)\n", url);
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "path");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(e, "size");
        const cJSON *lfs = cJSON_GetObjectItemCaseSensitive(e, "lfs");
        const char *oid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "oid"));
        const char *sha = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(lfs, "oid"));
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "file") != 0 ||
            !cJSON_IsString(path) || !wanted(path->valuestring) || n == max)
            continue;
        if (!cJSON_IsNumber(size) || size->valuedouble < 0 || (!is_hex(sha, 64) && !is_hex(oid, 40))) {
            fprintf(stderr, "steno: pull: %s: %s has no size or hash in the listing\n", url,
                    path->valuestring);
            cJSON_Delete(root);
            return -1;
        }
        stage_file *f = &files[n++];
        memset(f, 0, sizeof *f);
        snprintf(f->path, sizeof f->path, "%s", path->valuestring);
        f->size = (int64_t)size->valuedouble;
        if (is_hex(sha, 64)) snprintf(f->sha256, sizeof f->sha256, "%s", sha);
        else snprintf(f->blob_sha1, sizeof f->blob_sha1, "%s", oid);
        has_model |= !strcmp(f->path, "model.bin");
        has_config |= !strcmp(f->path, "config.json");
        has_vocab |= !strcmp(f->path, "tokenizer.json") || !strncmp(f->path, "vocabulary.", 11);
    }
    cJSON_Delete(root);
    if (!has_model || !has_config || !has_vocab) {
        fprintf(stderr, "steno: pull: %s: no %s: not a CTranslate2 Whisper model\n", url,
                !has_model ? "model.bin" : !has_config ? "config.json" : "tokenizer.json or vocabulary.txt");
        return -1;
    }
    return n;
}

static int fetch_listing(const pull_source *s, stage_file *files, int max) {
    char url[4096], err[4096];
    snprintf(url, sizeof url, "%s/api/models/%s/tree/%s", s->endpoint, s->repo, s->rev_url);
    char *body = NULL;
    size_t len = 0;
    long status = 0;
    if (steno_dl_get(url, s->endpoint, LISTING_MAX, &body, &len, &status, err, sizeof err) != 0) {
        /* the Hub answers 401, not 404, for a repository it will not name to an anonymous client */
        if (status == 404)
            fprintf(stderr, "steno: pull: %s@%s not found at %s (HTTP 404 from %s)\n", s->repo,
                    s->revision, s->endpoint, url);
        else if (status == 401)
            fprintf(stderr, "steno: pull: %s@%s not found at %s, or gated/private: set HF_TOKEN "
                    "(HTTP 401 from %s)\n", s->repo, s->revision, s->endpoint, url);
        else fprintf(stderr, "steno: pull: %s\n", err);
        return -1;
    }
    int n = parse_listing(body, url, files, max);
    free(body);
    return n;
}

/* ---- the verb ------------------------------------------------------------------------------- */

static int pull(const pull_opts *o) {
    pull_source s;
    if (resolve_source(o, &s) != 0) return 1;
    char root[4096], dest[4400];
    steno_cli_models_root(o->model_dir, root, sizeof root);
    snprintf(dest, sizeof dest, "%s/%s", root, s.name);
    if (!o->force && access(dest, F_OK) == 0) {
        fprintf(stderr, "steno: %s is already installed in %s (--force downloads it again)\n", s.name,
                dest);
        return 0;
    }
    if (stage_mkdirs(root) != 0) return 1;
    stage_file files[16];
    int n = fetch_listing(&s, files, (int)(sizeof files / sizeof files[0]));
    if (n < 0) return 1;
    char source[2400];
    snprintf(source, sizeof source, "%s/%s/resolve/%s", s.endpoint, s.repo, s.rev_url);
    stage st;
    if (stage_open(&st, root, s.name, source) != 0) return 1;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) rc = stage_fetch(&st, &files[i], s.endpoint, o->progress);
    if (rc == 0) rc = stage_install(&st, dest, o->force);
    stage_close(&st);
    if (rc != 0) return 1;
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += files[i].size;
    printf("pulled %s (%s@%s, %.1f MB) into %s\n", s.name, s.repo, s.revision, (double)total / 1e6,
           dest);
    return 0;
}

int steno_cmd_pull(int argc, char **argv) {
    pull_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    char err[512];
    if (steno_dl_init(err, sizeof err) != 0) {
        fprintf(stderr, "steno: pull: %s\n", err);
        return 1;
    }
    rc = pull(&o);
    steno_dl_cleanup();
    return rc;
}
