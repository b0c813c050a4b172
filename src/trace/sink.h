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
    struct strobe__append *app; /* a view of an append sink's buffer (strobe__sink_view) */
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

/* Makes `s` a view of `a`'s buffer: bytes written to `s` go after the append sink's, uncommitted,
 * until the caller commits them there (strobe__append_commit(a, s->buf + s->len)) and calls this
 * again, which also drops what was written since and clears an error. Growing the view grows `a`,
 * keeping the room a commit's padding needs. Such a sink is never closed (it owns nothing). */
void strobe__sink_view(strobe__sink *s, struct strobe__append *a);

/* ---- Append mode: a file that is a whole trace after every append (the JSON stream) ----------
 *
 * Text is gathered in a buffer and appended at `off`, with closing text after it, in one
 * pwrite(); `off` moves past the text only, so the next append overwrites the closing text. With
 * page_pad no committed piece of text (an event) crosses a page of the file: a write that a
 * SIGKILL cuts short leaves whole pages, so the file then ends between two events. Each event's
 * end is marked (strobe__append_mark): a write that fails part way (a full disk, a file size
 * limit) keeps the whole events before the failure, truncates the file after them and counts
 * the others in `lost`, as it counts the events of every later append; nothing is counted in
 * `events` before it is in the file. Not thread-safe. */

/* The page of the file system's page cache (see above). */
#define STROBE__APPEND_PAGE 4096u

typedef struct strobe__append_boundary {
    size_t end;
    uint64_t events;
} strobe__append_boundary;

typedef struct strobe__append {
    int fd;       /* the file; the caller opens and closes it */
    uint64_t off; /* file offset of the closing text */
    char *buf;
    size_t len, cap;
    int err;       /* the first error since the last retry; appends fail while set */
    int failed;    /* a write failed (err may be cleared for a last try) */
    int sys_errno; /* the system's reason for the last failed write (ENOSPC ...), 0: none */
    int page_pad;  /* no committed text crosses a page boundary of the file */
    strobe__append_boundary *marks;
    size_t mark_count, mark_cap;
    uint64_t pending; /* events in buf, not yet written */
    uint64_t events;  /* events in the file */
    uint64_t lost;    /* events not in the file */
} strobe__append;

/* Starts an append sink over `fd` at offset 0. */
void strobe__append_init(strobe__append *a, int fd, int page_pad);

/* Room for `n` more bytes (and page padding); NULL when out of memory (a->err set). */
char *strobe__append_reserve(strobe__append *a, size_t n);

/* Ends the text written since the last reserve at `end`; with page_pad, text of at most a page
 * that would cross a page boundary of the file is moved to the boundary, spaces before it. */
void strobe__append_commit(strobe__append *a, char *end);

/* Appends a NUL-terminated text (reserve and commit). */
void strobe__append_text(strobe__append *a, const char *text);

/* Marks the end of `events` events at `end` of the bytes to write next (an offset in buf). */
void strobe__append_mark(strobe__append *a, size_t end, uint64_t events);

/* Writes the buffer at `off` followed by `closing`, and moves `off` past the buffer only. After a
 * failed write every later append fails (its events counted lost) unless `retry` asks for one
 * more try. @return 0, STROBE_EIO or STROBE_ENOMEM. */
int strobe__append_flush(strobe__append *a, const char *closing, int retry);

/* Frees the buffers (the descriptor is the caller's). */
void strobe__append_free(strobe__append *a);

#endif /* STROBE_WRITERS_SINK_H */
