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

void strobe__sink_view(strobe__sink *s, strobe__append *a) {
    if (a->cap - a->len < STROBE__APPEND_PAGE) (void)strobe__append_reserve(a, 0);
    s->app = a;
    s->fd = -1;
    s->gz = NULL;
    s->err = 0;
    s->sys_errno = 0;
    s->buf = a->buf;
    s->len = a->len;
    s->cap =
        a->buf && a->cap >= a->len + STROBE__APPEND_PAGE ? a->cap - STROBE__APPEND_PAGE : a->len;
}

char *strobe__sink_reserve_slow(strobe__sink *s, size_t n) {
    if (s->app) {
        if (s->err) return NULL;
        strobe__append *a = s->app;
        /* Room for what the view holds and n more, past the append's committed bytes; realloc
         * keeps the view's bytes. */
        if (strobe__append_reserve(a, s->len - a->len + n) == NULL) {
            fail(s, STROBE_ENOMEM);
            return NULL;
        }
        s->buf = a->buf;
        s->cap = a->cap - STROBE__APPEND_PAGE;
        return s->buf + s->len;
    }
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

/* ---- Append mode (see sink.h) ---------------------------------------------------------------- */

void strobe__append_init(strobe__append *a, int fd, int page_pad) {
    memset(a, 0, sizeof *a);
    a->fd = fd;
    a->page_pad = page_pad;
}

void strobe__append_free(strobe__append *a) {
    free(a->buf);
    free(a->marks);
    a->buf = NULL;
    a->marks = NULL;
    a->len = a->cap = a->mark_count = a->mark_cap = 0;
}

char *strobe__append_reserve(strobe__append *w, size_t n) {
    n += STROBE__APPEND_PAGE; /* room for jw_commit's padding */
    if (w->cap - w->len >= n) return w->buf + w->len;
    size_t cap = w->cap ? w->cap : 1 << 16;
    while (cap - w->len < n)
        cap *= 2;
    char *b = realloc(w->buf, cap);
    if (b == NULL) {
        if (!w->err) w->err = STROBE_ENOMEM;
        return NULL;
    }
    w->buf = b;
    w->cap = cap;
    return b + w->len;
}

/* Ends the text written since strobe__append_reserve at `end`. With page_pad, text of at most a
 * page that would cross a page boundary of the file is moved to the boundary, spaces before it
 * (JSON's whitespace between two events). */
void strobe__append_commit(strobe__append *w, char *end) {
    size_t start = w->len, n = (size_t)(end - (w->buf + start));
    uint64_t at = w->off + start;
    if (w->page_pad && n > 0 && n <= STROBE__APPEND_PAGE &&
        at / STROBE__APPEND_PAGE != (at + n - 1) / STROBE__APPEND_PAGE) {
        size_t pad = STROBE__APPEND_PAGE - (size_t)(at % STROBE__APPEND_PAGE);
        memmove(w->buf + start + pad, w->buf + start, n);
        memset(w->buf + start, ' ', pad);
        n += pad;
    }
    w->len = start + n;
}

void strobe__append_text(strobe__append *w, const char *text) {
    size_t n = strlen(text);
    char *p = strobe__append_reserve(w, n);
    if (p) strobe__append_commit(w, (char *)memcpy(p, text, n) + n);
}

/* Marks the end of `events` events at `end` of the bytes to write next. Events that end within a
 * page of the previous mark join its group (the group's end moves to theirs): a failed write
 * then keeps whole groups, at most a page of events fewer than it could, all of them counted,
 * and marking costs a compare and two adds per event. An event that cannot be marked (out of
 * memory) is counted lost. */
void strobe__append_mark(strobe__append *w, size_t end, uint64_t events) {
    size_t n = w->mark_count;
    if (n > 0 && end - (n > 1 ? w->marks[n - 2].end : 0) < STROBE__APPEND_PAGE) {
        w->marks[n - 1].end = end;
        w->marks[n - 1].events += events;
        w->pending += events;
        return;
    }
    if (w->mark_count == w->mark_cap) {
        size_t cap = w->mark_cap ? w->mark_cap * 2 : 1024;
        strobe__append_boundary *m = realloc(w->marks, cap * sizeof *m);
        if (m == NULL) {
            w->lost += events; /* written or not, it cannot be told apart: counted lost */
            return;
        }
        w->marks = m;
        w->mark_cap = cap;
    }
    w->marks[w->mark_count++] = (strobe__append_boundary){end, events};
    w->pending += events;
}

/* Appends the buffer at w->off followed by `closing`, in one pwrite(), and moves w->off past the
 * buffer only: the next append overwrites the closing text. The buffer's events count as written
 * when it is written whole. A write that fails part way (a full disk, a file size limit) keeps
 * the whole events before the failure, truncates the file after them (so that it ends between
 * two events, or after a whole packet), and counts the others lost; so do the events of every
 * later append, unless `retry` asks to try writing once more (at stop: the file may take the
 * closing once the cut part is gone). @return 0, STROBE_EIO or STROBE_ENOMEM. */
int strobe__append_flush(strobe__append *w, const char *closing, int retry) {
    size_t body = w->len;
    if (w->err && retry) w->err = 0;
    strobe__append_text(w, closing);
    size_t done = 0;
    if (!w->err) {
        while (done < w->len) {
            ssize_t n = pwrite(w->fd, w->buf + done, w->len - done, (off_t)(w->off + done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                w->err = STROBE_EIO;
                w->sys_errno = n < 0 ? errno : ENOSPC; /* pwrite writes nothing only when full */
                break;
            }
            done += (size_t)n;
        }
    }
    if (!w->err) {
        w->off += body;
        w->events += w->pending;
    } else {
        w->failed = 1;
        /* The whole events before the cut stay: the body's end is an event boundary too. */
        size_t keep = 0;
        uint64_t kept = 0;
        if (done >= body) {
            keep = body;
            kept = w->pending;
        } else {
            for (size_t i = 0; i < w->mark_count && w->marks[i].end <= done; i++) {
                keep = w->marks[i].end;
                kept += w->marks[i].events;
            }
        }
        if (done > keep && w->fd >= 0 && ftruncate(w->fd, (off_t)(w->off + keep)) != 0) {
            /* The cut part stays in the file: its events cannot be counted as written. */
            kept = 0;
            keep = 0;
        }
        w->off += keep;
        w->events += kept;
        w->lost += w->pending - kept;
    }
    w->pending = 0;
    w->mark_count = 0;
    w->len = 0;
    return w->err;
}
