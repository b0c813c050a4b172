/* sink.c: see sink.h. */
#include "sink.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "strobe/error.h"

/* zlib keeps its own buffer in front of deflate; a larger one than its 8 KiB default means fewer
 * deflate calls per megabyte. */
#define GZ_BUFFER (256u * 1024u)

/* gzwrite() takes an unsigned length: larger writes are split. */
#define GZ_MAX_WRITE (1u << 30)

/* Records the first error. Zeroing the capacity sends every later reserve to the slow path,
 * which refuses: the error is sticky without a test on the fast path. */
static int fail(strobe__sink *s, int err) {
    if (s->err == 0) {
        s->err = err;
        s->sys_errno = err == STROBE_EIO ? errno : 0;
    }
    s->len = 0;
    s->cap = 0;
    return s->err;
}

int strobe__sink_open_fd(strobe__sink *s, int fd, int gzip_level) {
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->buf = malloc(STROBE__SINK_BUFFER);
    if (s->buf == NULL) {
        close(fd);
        s->fd = -1;
        return fail(s, STROBE_ENOMEM);
    }
    s->cap = STROBE__SINK_BUFFER;
    if (gzip_level > 0) {
        char mode[8];
        snprintf(mode, sizeof mode, "wb%d", gzip_level > 9 ? 9 : gzip_level);
        gzFile gz = gzdopen(fd, mode);
        /* gzdopen() fails only when it cannot allocate its state; the descriptor is still ours. */
        if (gz == NULL) {
            close(fd);
            free(s->buf);
            s->buf = NULL;
            s->fd = -1;
            return fail(s, STROBE_ENOMEM);
        }
        gzbuffer(gz, GZ_BUFFER);
        s->gz = gz;
    }
    return 0;
}

int strobe__sink_open_memory(strobe__sink *s) {
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->buf = malloc(STROBE__SINK_BUFFER);
    if (s->buf == NULL) return fail(s, STROBE_ENOMEM);
    s->cap = STROBE__SINK_BUFFER;
    return 0;
}

/* Writes `left` bytes at `p` to the file or the gzip stream. */
static int write_out(strobe__sink *s, const char *p, size_t left) {
    if (s->err) return s->err;
    if (s->gz) {
        while (left > 0) {
            unsigned n = left > GZ_MAX_WRITE ? GZ_MAX_WRITE : (unsigned)left;
            if (gzwrite((gzFile)s->gz, p, n) != (int)n) return fail(s, STROBE_EIO);
            p += n;
            left -= n;
        }
        return 0;
    }
    while (left > 0) {
        ssize_t n = write(s->fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(s, STROBE_EIO);
        }
        p += n;
        left -= (size_t)n;
    }
    return 0;
}

/* Writes the buffered bytes out and empties the buffer. */
static int flush(strobe__sink *s) {
    size_t len = s->len;
    s->len = 0;
    return write_out(s, s->buf, len);
}

static int grow(strobe__sink *s, size_t need) {
    size_t cap = s->cap ? s->cap : STROBE__SINK_BUFFER;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return fail(s, STROBE_ENOMEM);
        cap *= 2;
    }
    char *buf = realloc(s->buf, cap);
    if (buf == NULL) return fail(s, STROBE_ENOMEM);
    s->buf = buf;
    s->cap = cap;
    return 0;
}

char *strobe__sink_reserve_slow(strobe__sink *s, size_t n) {
    if (s->err || s->buf == NULL) return NULL;
    if (s->fd >= 0) {
        if (flush(s) != 0) return NULL;
        /* A single item larger than the buffer (a huge metadata value) grows it once. */
        if (n > s->cap && grow(s, n) != 0) return NULL;
    } else {
        if (n > SIZE_MAX - s->len || grow(s, s->len + n) != 0) return NULL;
    }
    return s->buf + s->len;
}

int strobe__sink_write(strobe__sink *s, const void *data, size_t n) {
    if (s->err) return s->err;
    /* Large blocks bypass the buffer rather than growing it. */
    if (s->fd >= 0 && n > s->cap) {
        if (flush(s) == 0 && write_out(s, data, n) == 0) s->total += n;
        return s->err;
    }
    char *p = strobe__sink_reserve(s, n);
    if (p == NULL) return s->err;
    memcpy(p, data, n);
    strobe__sink_commit(s, p + n);
    return 0;
}

int strobe__sink_close(strobe__sink *s) {
    if (s->fd >= 0) {
        if (s->err == 0) flush(s);
        if (s->gz) {
            /* gzclose() writes the last deflate block and the trailer, then closes the
             * descriptor: its result is the only sign that the tail of the file made it. */
            if (gzclose((gzFile)s->gz) != Z_OK) fail(s, STROBE_EIO);
            s->gz = NULL;
        } else if (close(s->fd) != 0) {
            fail(s, STROBE_EIO);
        }
        s->fd = -1;
    }
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
    return s->err;
}

char *strobe__sink_take_memory(strobe__sink *s, size_t *len) {
    char *p = s->fd < 0 ? strobe__sink_reserve(s, 1) : NULL;
    if (p == NULL) {
        strobe__sink_close(s);
        return NULL;
    }
    *p = '\0';
    char *buf = s->buf;
    *len = s->len;
    s->buf = NULL;
    s->len = s->cap = 0;
    return buf;
}
