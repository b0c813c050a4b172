/* sink.h: buffered byte output for the trace writers, to a file descriptor, to a gzip stream over
 * a file descriptor, or to memory.
 *
 * Writers format straight into the sink's buffer: strobe__sink_reserve() returns a pointer with
 * room for at least n bytes, the writer fills it and hands the new end back with
 * strobe__sink_commit(). That keeps the per-event cost at a few stores, with no call per field.
 * Errors are sticky: after the first failure every reserve returns NULL and close reports it, so a
 * writer may check only at the points where it needs a pointer. Not thread-safe. */
#ifndef STROBE_WRITERS_SINK_H
#define STROBE_WRITERS_SINK_H

#include <stddef.h>
#include <stdint.h>

/* The default buffer size: large enough that write() and gzwrite() calls are rare. */
#define STROBE__SINK_BUFFER (1u << 20)

typedef struct strobe__sink {
    char *buf;      /* bytes accepted and not yet written out */
    size_t len;     /* bytes used in buf */
    size_t cap;     /* size of buf */
    int fd;         /* the output file; -1 for a memory sink */
    void *gz;       /* a gzFile when compressing, else NULL */
    int err;        /* the first error (STROBE_EIO or STROBE_ENOMEM), 0 while none */
    int sys_errno;  /* errno of the failed system call behind err, 0 where none or unknown */
    uint64_t total; /* uncompressed bytes accepted so far */
} strobe__sink;

/* Opens a sink over `fd`, gzip-compressed at `gzip_level` (1..9) when that is nonzero. The sink
 * owns the descriptor from then on, also when opening fails. @return 0, STROBE_ENOMEM or
 * STROBE_EIO. */
int strobe__sink_open_fd(strobe__sink *s, int fd, int gzip_level);

/* Opens a sink that collects everything in memory (for tests and in-process consumers).
 * @return 0 or STROBE_ENOMEM. */
int strobe__sink_open_memory(strobe__sink *s);

/* Slow path of strobe__sink_reserve(): flushes, or grows the buffer. NULL after an error. */
char *strobe__sink_reserve_slow(strobe__sink *s, size_t n);

/* Returns where to write at least `n` more bytes, or NULL after an error (see s->err). */
static inline char *strobe__sink_reserve(strobe__sink *s, size_t n) {
    if (s->cap - s->len >= n) return s->buf + s->len;
    return strobe__sink_reserve_slow(s, n);
}

/* Accepts the bytes written since the last reserve, up to `end`. */
static inline void strobe__sink_commit(strobe__sink *s, char *end) {
    size_t len = (size_t)(end - s->buf);
    s->total += len - s->len;
    s->len = len;
}

/* Appends `n` bytes of any size. @return 0 or the sink's error. */
int strobe__sink_write(strobe__sink *s, const void *data, size_t n);

/* Writes out what is buffered, closes the gzip stream and the descriptor, and frees the buffer.
 * Every failure on the way (write, gzclose, close) is reported. @return 0, STROBE_EIO or
 * STROBE_ENOMEM (the first error the sink met). */
int strobe__sink_close(strobe__sink *s);

/* Memory sinks only: hands over the collected bytes (malloc'ed, NUL-terminated, *len set) and
 * closes the sink. NULL when the sink met an error (its buffer is freed). */
char *strobe__sink_take_memory(strobe__sink *s, size_t *len);

#endif /* STROBE_WRITERS_SINK_H */
