/* outpath.c: where an on-demand trace may be written (od_internal.h).
 *
 * A request names a path; the traced process writes it with its own rights, so the path is the
 * one thing a requester controls that reaches the file system. The rules: absolute, no ".."
 * component, the folder inside an allowed folder after every link is resolved, and the file itself
 * not a link or anything but a regular file. The folder is opened once and the result checked
 * through the descriptor (its /proc/self/fd link), so that swapping a folder for a link after the
 * check cannot redirect the write: the save goes through the same descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "od_internal.h"
#include "strobe/error.h"

static void set_err(char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

/* 1 when `p` (resolved) is `root` (resolved) or inside it. */
static int inside(const char *p, const char *root) {
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return 1;
    return strncmp(p, root, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* 1 when the resolved folder `real` is inside one of the allowed folders. */
static int allowed(const char *real, const char *roots) {
    char list[8192];
    if (roots == NULL) {
        const char *tmp = getenv("TMPDIR");
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd) == NULL) cwd[0] = '\0';
        snprintf(list, sizeof list, "/tmp:%s:%s", tmp && tmp[0] == '/' ? tmp : "/tmp", cwd);
    } else {
        snprintf(list, sizeof list, "%s", roots);
    }
    char *save = NULL;
    for (char *r = strtok_r(list, ":", &save); r != NULL; r = strtok_r(NULL, ":", &save)) {
        char rr[PATH_MAX];
        if (r[0] != '/' || realpath(r, rr) == NULL) continue;
        if (inside(real, rr)) return 1;
    }
    return 0;
}

/* The rank of this process in a parallel job, from the launcher's variables (the order `strobe
 * record` reads them in), or NULL. */
static const char *launcher_rank(void) {
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && v[0]) return v;
    }
    return NULL;
}

/* Writes `path` with %p (this process's pid), %r (its rank; 0 when none is set) and %% (a '%')
 * expanded into out, so that one request reaches every rank of a job with a file name of its own.
 * Any other '%' is kept as it is. @return 0, or -1 when it does not fit. */
static int expand(const char *path, char *out, size_t cap) {
    const char *rank = launcher_rank();
    size_t o = 0;
    for (const char *s = path; *s; s++) {
        char num[32];
        const char *add = s;
        size_t len = 1;
        if (s[0] == '%' && s[1] == 'p') {
            snprintf(num, sizeof num, "%ld", (long)getpid());
            add = num;
        } else if (s[0] == '%' && s[1] == 'r') {
            /* Only digits and a sign: a rank variable cannot add '/' or ".." to the path. */
            add = rank && strspn(rank, "-0123456789") == strlen(rank) && strlen(rank) < 24 ? rank
                                                                                           : "0";
        }
        if (add != s) {
            len = strlen(add);
            s++;
        } else if (s[0] == '%' && s[1] == '%') {
            s++; /* the pair is written as one '%' */
        }
        if (o + len >= cap) return -1;
        memcpy(out + o, add, len);
        o += len;
    }
    out[o] = '\0';
    return 0;
}

int strobe__od_check_output(const char *path_pattern, const char *roots, int *dirfd,
                            char *save_path, size_t cap, char *path_out, size_t path_cap, char *err,
                            size_t errcap) {
    *dirfd = -1;
    if (path_out && path_cap) path_out[0] = '\0';
    char path[PATH_MAX];
    if (path_pattern && expand(path_pattern, path, sizeof path) != 0) {
        set_err(err, errcap, "the output path is too long");
        return STROBE_ERANGE;
    }
    size_t n = path_pattern ? strlen(path) : 0;
    if (n == 0 || path[0] != '/') {
        set_err(err, errcap, "the output path must be absolute");
        return STROBE_EINVAL;
    }
    if (n >= PATH_MAX) {
        set_err(err, errcap, "the output path is too long");
        return STROBE_ERANGE;
    }
    /* No ".." anywhere: a path that climbs is refused before anything is resolved. */
    for (const char *c = path; *c;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 2 && c[0] == '.' && c[1] == '.') {
            set_err(err, errcap, "'..' is not allowed in an output path");
            return STROBE_EINVAL;
        }
        if (!e) break;
        c = e + 1;
    }
    const char *slash = strrchr(path, '/');
    const char *base = slash + 1;
    if (base[0] == '\0' || strcmp(base, ".") == 0) {
        set_err(err, errcap, "the output path names a folder, not a file");
        return STROBE_EINVAL;
    }
    char folder[PATH_MAX];
    size_t flen = (size_t)(slash - path);
    if (flen == 0) flen = 1; /* "/name": the root folder */
    memcpy(folder, path, flen);
    folder[flen] = '\0';

    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errcap, "cannot open the folder %s: %s", folder, strerror(errno));
        return STROBE_ESYS;
    }
    char link[64], real[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t rl = readlink(link, real, sizeof real - 1);
    if (rl <= 0) {
        set_err(err, errcap, "cannot resolve the folder %s: %s", folder,
                rl < 0 ? strerror(errno) : "empty");
        close(fd);
        return STROBE_ESYS;
    }
    real[rl] = '\0';
    if (!allowed(real, roots)) {
        set_err(err, errcap,
                "%s resolves to %s, outside the folders this process writes traces to (%s)", folder,
                real, roots ? roots : "the temp folder and its working directory");
        close(fd);
        return STROBE_EINVAL;
    }
    struct stat sb;
    if (fstatat(fd, base, &sb, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(sb.st_mode)) {
        set_err(err, errcap, "%s exists and is %s", path,
                S_ISLNK(sb.st_mode) ? "a link (refused)" : "not a regular file");
        close(fd);
        return STROBE_EINVAL;
    }
    if (faccessat(fd, ".", W_OK, AT_EACCESS) != 0) {
        set_err(err, errcap, "cannot write into %s: %s", folder, strerror(errno));
        close(fd);
        return STROBE_ESYS;
    }
    int w = snprintf(save_path, cap, "%s/%s", link, base);
    if (w < 0 || (size_t)w >= cap) {
        set_err(err, errcap, "the output path is too long");
        close(fd);
        return STROBE_ERANGE;
    }
    if (path_out && snprintf(path_out, path_cap, "%s", path) >= (int)path_cap) {
        set_err(err, errcap, "the output path is too long");
        close(fd);
        return STROBE_ERANGE;
    }
    *dirfd = fd;
    return 0;
}
