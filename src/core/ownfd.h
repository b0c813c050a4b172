/* ownfd.h: strobe's own descriptors in a program that closes or reuses descriptors it did not open
 * (daemons closing everything above 2, close_range(), dup2() over a range of numbers).
 *
 * strobe's descriptors are moved to high numbers, out of the way of a program's own, which the
 * kernel hands out lowest first; and every descriptor is checked to still be the file strobe
 * opened before strobe writes, reads or closes it, so that strobe never touches a file of the
 * program's that took over a number it had. What strobe then cannot write, it counts. */
#ifndef STROBE_CORE_OWNFD_H
#define STROBE_CORE_OWNFD_H

#include <stdint.h>

/* Moves `fd` to a high number (close-on-exec) and closes the original: past the soft
 * RLIMIT_NOFILE where the hard limit allows (at most 64 Ki), else near under it. Where no high
 * number is free, `fd` stays where it is.
 * @return the descriptor to use (`fd` itself when it was not moved; -1 when `fd` is -1). */
int strobe__fd_move_high(int fd);

/* open() with O_CLOEXEC, then strobe__fd_move_high(); where every number under the limit is
 * taken (EMFILE), one past it. @return the descriptor, or -1 with errno set. */
int strobe__fd_open(const char *path, int flags, int mode);

/* The identity of an open file (its device and inode), saved when strobe opens it. @return 0, or
 * -1 when fstat fails (errno set). */
int strobe__fd_identity(int fd, uint64_t *dev, uint64_t *ino);

/* Whether `fd` still is the file of identity (dev, ino). @return 1 or 0. */
int strobe__fd_is(int fd, uint64_t dev, uint64_t ino);

/* The kernel's id of the perf event behind `fd` (PERF_EVENT_IOC_ID). A descriptor that is not a
 * perf event fails the call, which has no effect on it. @return 0 and *id, or -1. */
int strobe__fd_perf_id(int fd, uint64_t *id);

#endif /* STROBE_CORE_OWNFD_H */
