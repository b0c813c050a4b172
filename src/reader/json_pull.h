/* json_pull.h: a streaming pull tokenizer for JSON (RFC 8259), the lowest layer of the reader.
 *
 * The tokenizer reads from memory, from a zlib gzFile (which reads gzip and plain files alike) or
 * from a source function (the Perfetto decoder's JSON text) in 64 KiB blocks, and hands out one
 * token per call: container brackets, object keys, strings (escapes decoded to UTF-8), numbers
 * (kept as their text, so that callers can parse them exactly) and literals. It checks the grammar
 * itself, so a caller only ever sees well-formed token sequences, and it enforces limits (nesting
 * depth, string length, number length, size of a captured value) so that no input can make it use
 * unbounded memory. Errors carry the byte offset in the decoded stream and a short reason.
 *
 * End of input is reported as a token (STROBE_JP_EOF), not as an error, so that the trace reader
 * can accept an event array that a crashed program never closed; strobe_jp_depth() and
 * strobe_jp_complete() tell the caller where the input stopped.
 *
 * A "capture" records the raw text of a stretch of input (one event, one metadata value). While
 * the stretch stays inside one input block, the capture points into the block and copies nothing.
 *
 * Not thread-safe: one tokenizer belongs to one thread at a time. */
#ifndef STROBE_READER_JSON_PULL_H
#define STROBE_READER_JSON_PULL_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "gz_tail.h"

/* Hard ceiling for the nesting depth option; the stack is a bit array of this many levels. */
#define STROBE_JP_DEPTH_CAP 4096
/* Longest number text accepted (JSON allows any length; a trace never needs more). */
#define STROBE_JP_NUM_MAX 512
/* Size of one input block read from a gzFile. */
#define STROBE_JP_BLOCK (64 * 1024)

typedef enum strobe_jp_tok {
    STROBE_JP_ERROR = -1, /* see jp->err, jp->err_off, jp->err_msg; sticky */
    STROBE_JP_EOF = 0,    /* end of input; complete or not: see strobe_jp_complete() */
    STROBE_JP_OBJ_BEGIN,
    STROBE_JP_OBJ_END,
    STROBE_JP_ARR_BEGIN,
    STROBE_JP_ARR_END,
    STROBE_JP_KEY,    /* decoded key in jp->str (the ':' after it is consumed) */
    STROBE_JP_STRING, /* decoded string in jp->str */
    STROBE_JP_NUMBER, /* number text in jp->num, valid JSON number grammar */
    STROBE_JP_TRUE,
    STROBE_JP_FALSE,
    STROBE_JP_NULL
} strobe_jp_tok;

typedef struct strobe_jp {
    /* Input window: buf[pos..len) is unread; base_off is the stream offset of buf[0]. */
    const unsigned char *buf;
    size_t len, pos;
    int64_t base_off;
    gzFile gz;                                 /* NULL for memory input */
    long (*src)(void *ctx, const void **text); /* a source function, or NULL */
    void *src_ctx;
    unsigned char *block;     /* owned input block for gzFile input */
    strobe_rd_gzsum gz_sum;   /* what gzread() gave, for the check of data after it (gz_tail.h) */
    const unsigned char *mem; /* memory input, and the window size when it is fed in pieces */
    size_t mem_len, mem_chunk;

    /* Limits (set by the init functions to defaults; the caller may lower or raise them). */
    size_t max_depth;  /* at most STROBE_JP_DEPTH_CAP */
    size_t max_string; /* decoded bytes in one string or key */
    size_t max_capture;

    /* Grammar state. */
    int state, first, complete;
    unsigned depth;
    uint64_t stack[STROBE_JP_DEPTH_CAP / 64]; /* bit set: level is an object */

    /* Current token. tok_off is the stream offset of its first byte. */
    int64_t tok_off;
    char *str; /* NUL-terminated; may also hold NUL bytes from \u0000: use str_len */
    size_t str_len, str_cap;
    char str_inline[128];
    char num[STROBE_JP_NUM_MAX + 1];
    size_t num_len;
    int skip; /* when set, strings are checked but not stored (skipping a value) */

    /* Capture of raw text. */
    int capturing, cap_trim;
    size_t cap_from; /* index in buf where the not yet copied part of the capture starts */
    char *cap;
    size_t cap_len, cap_cap;
    int64_t cap_off; /* stream offset of the first captured byte (after trimming) */

    /* Error: code (a negative STROBE_E* value), stream offset and reason. */
    int err;
    int64_t err_off;
    char err_msg[160];
} strobe_jp;

/* Prepares a tokenizer over data[0..len), which must outlive it. Allocates nothing up front. */
void strobe_jp_init_mem(strobe_jp *jp, const void *data, size_t len);

/* Feeds memory input in windows of chunk bytes instead of all at once, as a file would be read,
 * so that tests and fuzzers reach the code paths of tokens and captures that straddle windows.
 * Call right after strobe_jp_init_mem(); 0 restores one window. */
void strobe_jp_set_chunk(strobe_jp *jp, size_t chunk);

/* Prepares a tokenizer over an open gzFile (not closed by the tokenizer).
 * @return 0, or STROBE_ENOMEM. */
int strobe_jp_init_gz(strobe_jp *jp, gzFile gz);

/* Prepares a tokenizer over a source function, which points *text to the next piece of input
 * (read in place, so it must stay valid until the next call) and returns its length, 0 at the
 * end of the input, or a negative STROBE_E* error (the tokenizer then fails with that code, and
 * the caller asks the source why). @return 0. */
int strobe_jp_init_src(strobe_jp *jp, long (*src)(void *ctx, const void **text), void *ctx);

/* Frees what the tokenizer allocated (not the gzFile). Safe on a zeroed or freed tokenizer. */
void strobe_jp_free(strobe_jp *jp);

/* Reads the next token. @return a strobe_jp_tok value. */
int strobe_jp_next(strobe_jp *jp);

/* Skips the rest of the container whose BEGIN token was just returned.
 * @return the container's END token, STROBE_JP_EOF (input ended inside it) or STROBE_JP_ERROR. */
int strobe_jp_skip_container(strobe_jp *jp);

/* As strobe_jp_skip_container(), but fast: only strings and brackets are followed, so that
 * malformed JSON inside the container goes unnoticed (a look-ahead whose input the main pass
 * checks anyway). @return the container's END token, STROBE_JP_EOF or STROBE_JP_ERROR. */
int strobe_jp_skip_unchecked(strobe_jp *jp);

/* Current nesting depth (0 at top level, 1 inside the outermost container, ...). */
static inline unsigned strobe_jp_depth(const strobe_jp *jp) {
    return jp->depth;
}

/* 1 once the top-level value has been read completely. */
static inline int strobe_jp_complete(const strobe_jp *jp) {
    return jp->complete;
}

/* Stream offset of the next unread byte. */
static inline int64_t strobe_jp_offset(const strobe_jp *jp) {
    return jp->base_off + (int64_t)jp->pos;
}

/* Starts recording raw input from the next unread byte. Leading whitespace is dropped, and with
 * trim_commas also leading commas (used between array elements). */
void strobe_jp_capture_begin(strobe_jp *jp, int trim_commas);

/* Stops recording and returns the text read since strobe_jp_capture_begin(), without the trimmed
 * prefix. *text stays valid until the next call that reads input or starts a capture.
 * @return 0, or a negative error (the capture limit was exceeded; jp->err is set). */
int strobe_jp_capture_end(strobe_jp *jp, const char **text, size_t *len, int64_t *off);

/* Records an error at a stream offset unless one is already recorded; returns STROBE_JP_ERROR. */
int strobe_jp_fail(strobe_jp *jp, int err, int64_t off, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif /* STROBE_READER_JSON_PULL_H */
