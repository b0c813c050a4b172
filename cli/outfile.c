/* outfile.c: a command's -o OUT written whole or not at all (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_outfile_open(cli_outfile *o, const char *path, const char *mode, const char *tag) {
    struct stat st;
    o->path = path;
    o->tmp[0] = '\0';
    o->f = NULL;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        o->f = fopen(path, mode);
        return o->f ? 0 : errno;
    }
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(o->tmp, sizeof o->tmp, "%.*s.strobe-%s.XXXXXX", dir, path, tag) >=
        (int)sizeof o->tmp)
        return ENAMETOOLONG;
    int fd = mkstemp(o->tmp);
    if (fd < 0) return errno;
    /* mkstemp makes the file private; the output gets the mode a new file would. */
    mode_t mask = umask(0);
    umask(mask);
    int err = fchmod(fd, 0666 & ~mask) != 0 ? errno : 0;
    if (err == 0 && (o->f = fdopen(fd, mode)) == NULL) err = errno;
    if (err) {
        close(fd);
        unlink(o->tmp);
    }
    return err;
}

int cli_outfile_close(cli_outfile *o, int ok) {
    int err = fclose(o->f) != 0 ? errno : 0;
    if (o->tmp[0] == '\0') return err;
    if (ok && err == 0 && rename(o->tmp, o->path) != 0) err = errno;
    if (!ok || err) unlink(o->tmp);
    return err;
}
