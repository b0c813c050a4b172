/* ownfd.c: strobe's own descriptors kept out of the program's way (see ownfd.h). */
#include "ownfd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* The highest base tried: a descriptor near a soft limit of a million would grow the process's
 * descriptor table to megabytes. */
#define HIGH_MAX 65536
/* Room left under the base for strobe's descriptors (the sampler's events take several per
 * thread). */
#define HIGH_ROOM 256

/* Runs F_DUPFD_CLOEXEC from the soft RLIMIT_NOFILE up, with the soft limit raised to the hard one
 * (at most HIGH_MAX) for the call and restored at once: a descriptor past the soft limit stays
 * valid, and a program that keeps within its limit (close loops up to sysconf(_SC_OPEN_MAX),
 * dup2() over every number below it) never reaches it. A program thread reading the limit in
 * those microseconds sees the raised one. @return the new descriptor, or -1. */
static int dup_past_limit(int fd, const struct rlimit *rl) {
    rlim_t soft = rl->rlim_cur, hard = rl->rlim_max;
    if (soft == RLIM_INFINITY || soft >= HIGH_MAX || hard <= soft) return -1;
    struct rlimit up = {hard == RLIM_INFINITY || hard > HIGH_MAX ? HIGH_MAX : hard, hard};
    if (up.rlim_cur <= soft || setrlimit(RLIMIT_NOFILE, &up) != 0) return -1;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)soft);
    (void)setrlimit(RLIMIT_NOFILE, rl);
    return high;
}

int strobe__fd_move_high(int fd) {
    if (fd < 0) return fd;
    struct rlimit rl;
    int saved = errno;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return fd;
    int high = dup_past_limit(fd, &rl);
    rlim_t lim = rl.rlim_cur;
    if (lim == RLIM_INFINITY || lim > HIGH_MAX) lim = HIGH_MAX;
    /* Else bases under the limit, from the top down: the first with a free number past it wins.
     * A program that loops up to its limit closing descriptors still closes these: the callers
     * recover from that. */
    long bases[] = {(long)lim - HIGH_ROOM / 4, (long)lim - HIGH_ROOM, (long)lim / 2};
    for (size_t i = 0; high < 0 && i < sizeof bases / sizeof bases[0]; i++) {
        if (bases[i] <= fd || bases[i] < 64) continue;
        high = fcntl(fd, F_DUPFD_CLOEXEC, (int)bases[i]);
    }
    errno = saved;
    if (high < 0) return fd;
    close(fd);
    return high;
}

int strobe__fd_open(const char *path, int flags, int mode) {
    int fd = open(path, flags | O_CLOEXEC, mode);
    if (fd < 0 && errno == EMFILE) {
        /* Every number under the limit is taken (a program that dup2()ed over all of them): one
         * past it, as above. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            rl.rlim_cur < rl.rlim_max) {
            struct rlimit up = {rl.rlim_cur + 1, rl.rlim_max};
            if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
                fd = open(path, flags | O_CLOEXEC, mode);
                int e = errno;
                (void)setrlimit(RLIMIT_NOFILE, &rl);
                errno = e;
            }
        }
    }
    return strobe__fd_move_high(fd);
}

int strobe__fd_identity(int fd, uint64_t *dev, uint64_t *ino) {
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) return -1;
    *dev = (uint64_t)sb.st_dev;
    *ino = (uint64_t)sb.st_ino;
    return 0;
}

int strobe__fd_is(int fd, uint64_t dev, uint64_t ino) {
    uint64_t d, i;
    int saved = errno;
    int ok = strobe__fd_identity(fd, &d, &i) == 0 && d == dev && i == ino;
    errno = saved;
    return ok;
}

int strobe__fd_perf_id(int fd, uint64_t *id) {
    if (fd < 0) return -1;
    int saved = errno;
    uint64_t v = 0;
    int rc = ioctl(fd, PERF_EVENT_IOC_ID, &v);
    errno = saved;
    if (rc != 0) return -1;
    *id = v;
    return 0;
}
