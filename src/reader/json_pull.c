/* json_pull.c: the streaming JSON tokenizer (see json_pull.h for the contract).
 *
 * Contents:
 *   1. Errors and input: fail(), fill() (refills the window and spills an open capture).
 *   2. Captures.
 *   3. Lexing: whitespace, strings (with \u escapes and surrogate pairs), numbers, literals.
 *   4. Grammar: strobe_jp_next() and strobe_jp_skip_container().
 *
 * Every read goes through the window buf[pos..len); nothing reads past len, and a refill only
 * happens when the window is empty, so the byte just read can always be pushed back. */
#include "json_pull.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strobe/error.h"

enum { ST_VALUE, ST_KEY, ST_COMMA, ST_DONE };

/* ---- 1. Errors and input ------------------------------------------------------------------ */

int strobe_jp_fail(strobe_jp *jp, int err, int64_t off, const char *fmt, ...) {
    if (jp->err) return STROBE_JP_ERROR;
    jp->err = err;
    jp->err_off = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(jp->err_msg, sizeof jp->err_msg, fmt, ap);
    va_end(ap);
    return STROBE_JP_ERROR;
}

static int fail_nomem(strobe_jp *jp) {
    return strobe_jp_fail(jp, STROBE_ENOMEM, strobe_jp_offset(jp), "out of memory");
}

static int grow(strobe_jp *jp, char **p, size_t *cap, size_t need, int is_inline) {
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) return fail_nomem(jp);
        ncap *= 2;
    }
    char *np = is_inline ? malloc(ncap) : realloc(*p, ncap);
    if (!np) return fail_nomem(jp);
    if (is_inline) memcpy(np, *p, *cap);
    *p = np;
    *cap = ncap;
    return 0;
}

/* Appends raw input to the capture, dropping the leading whitespace (and commas) while nothing has
 * been kept yet, and enforcing the capture limit as the text grows, not after. */
static int cap_append(strobe_jp *jp, const unsigned char *p, size_t n) {
    if (jp->cap_len == 0) {
        size_t i = 0;
        while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t' ||
                         (jp->cap_trim && p[i] == ',')))
            i++;
        jp->cap_off += (int64_t)i;
        p += i;
        n -= i;
    }
    if (n == 0) return 0;
    if (n > jp->max_capture - jp->cap_len)
        return strobe_jp_fail(jp, STROBE_EFORMAT, jp->cap_off,
                              "value larger than the limit of %zu bytes", jp->max_capture);
    if (jp->cap_len + n > jp->cap_cap && grow(jp, &jp->cap, &jp->cap_cap, jp->cap_len + n, 0))
        return STROBE_JP_ERROR;
    memcpy(jp->cap + jp->cap_len, p, n);
    jp->cap_len += n;
    return 0;
}

/* Refills the empty window. @return 1 when bytes are available, 0 at end of input, -1 on error. */
static int fill(strobe_jp *jp) {
    if (jp->err) return -1;
    if (!jp->gz && !jp->src && !jp->mem_chunk) return 0;
    if (jp->pos < jp->len) return 1;
    if (jp->capturing) {
        if (cap_append(jp, jp->buf + jp->cap_from, jp->len - jp->cap_from)) return -1;
        jp->cap_from = 0;
    }
    jp->base_off += (int64_t)jp->len;
    jp->len = jp->pos = 0;
    if (jp->src) {
        const void *text = NULL;
        long n = jp->src(jp->src_ctx, &text);
        if (n < 0) {
            /* The source keeps its own message; the caller asks it. */
            strobe_jp_fail(jp, (int)n, jp->base_off, "the input's source failed");
            return -1;
        }
        if (n == 0) return 0;
        jp->buf = text; /* read in place: valid until the next call */
        jp->len = (size_t)n;
        return 1;
    }
    if (!jp->gz) {
        size_t left = jp->mem_len - (size_t)jp->base_off;
        if (left == 0) return 0;
        jp->buf = jp->mem + jp->base_off;
        jp->len = left < jp->mem_chunk ? left : jp->mem_chunk;
        return 1;
    }
    int n = gzread(jp->gz, jp->block, STROBE_JP_BLOCK);
    int zerr = Z_OK;
    const char *zmsg = n <= 0 ? gzerror(jp->gz, &zerr) : NULL;
    if (n < 0 || (n == 0 && zerr != Z_OK && zerr != Z_STREAM_END)) {
        /* A damaged or cut gzip stream is malformed input; a failing read is an I/O error. */
        /* zlib prefixes its message with the path, which the caller prints already. */
        const char *why = zmsg && *zmsg ? zmsg : "decompression failed";
        for (const char *s = strstr(why, ": "); s; s = strstr(s + 2, ": "))
            why = s + 2;
        if (zerr == Z_ERRNO)
            strobe_jp_fail(jp, STROBE_EIO, jp->base_off, "read error: %s", why);
        else
            strobe_jp_fail(jp, STROBE_EFORMAT, jp->base_off, "gzip: %s", why);
        return -1;
    }
    if (n == 0) {
        jp->gz_sum.eof = 1;
        return 0;
    }
    strobe_rd_gzsum_add(&jp->gz_sum, jp->block, (size_t)n);
    jp->buf = jp->block;
    jp->len = (size_t)n;
    return 1;
}

/* Returns the next byte and consumes it, -1 at end of input, -2 on error. */
static inline int getbyte(strobe_jp *jp) {
    if (jp->pos == jp->len) {
        int r = fill(jp);
        if (r <= 0) return r == 0 ? -1 : -2;
    }
    return jp->buf[jp->pos++];
}

void strobe_jp_init_mem(strobe_jp *jp, const void *data, size_t len) {
    memset(jp, 0, sizeof *jp);
    jp->buf = jp->mem = data;
    jp->len = jp->mem_len = data ? len : 0;
    jp->max_depth = 512;
    jp->max_string = (size_t)64 << 20;
    jp->max_capture = (size_t)256 << 20;
    jp->str = jp->str_inline;
    jp->str_cap = sizeof jp->str_inline;
    jp->state = ST_VALUE;
}

void strobe_jp_set_chunk(strobe_jp *jp, size_t chunk) {
    jp->mem_chunk = chunk;
    jp->len = chunk && chunk < jp->mem_len ? chunk : jp->mem_len;
}

int strobe_jp_init_gz(strobe_jp *jp, gzFile gz) {
    strobe_jp_init_mem(jp, NULL, 0);
    jp->block = malloc(STROBE_JP_BLOCK);
    if (!jp->block) return STROBE_ENOMEM;
    jp->buf = jp->block;
    jp->gz = gz;
    return 0;
}

int strobe_jp_init_src(strobe_jp *jp, long (*src)(void *ctx, const void **text), void *ctx) {
    strobe_jp_init_mem(jp, NULL, 0);
    jp->src = src;
    jp->src_ctx = ctx;
    return 0;
}

void strobe_jp_free(strobe_jp *jp) {
    if (jp->str && jp->str != jp->str_inline) free(jp->str);
    free(jp->cap);
    free(jp->block);
    jp->str = jp->str_inline;
    jp->str_cap = sizeof jp->str_inline;
    jp->str_len = 0;
    jp->cap = NULL;
    jp->cap_cap = jp->cap_len = 0;
    jp->block = NULL;
    jp->buf = NULL;
    jp->len = jp->pos = 0;
}

/* ---- 2. Captures -------------------------------------------------------------------------- */

void strobe_jp_capture_begin(strobe_jp *jp, int trim_commas) {
    jp->capturing = 1;
    jp->cap_trim = trim_commas;
    jp->cap_from = jp->pos;
    jp->cap_len = 0;
    jp->cap_off = strobe_jp_offset(jp);
}

int strobe_jp_capture_end(strobe_jp *jp, const char **text, size_t *len, int64_t *off) {
    jp->capturing = 0;
    if (jp->err) return jp->err;
    if (jp->cap_len == 0) {
        /* Nothing was spilled: the whole capture is still in the window, so point into it. */
        const unsigned char *p = jp->buf + jp->cap_from, *e = jp->buf + jp->pos;
        while (p < e &&
               (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || (jp->cap_trim && *p == ',')))
            p++;
        jp->cap_off += p - (jp->buf + jp->cap_from);
        if ((size_t)(e - p) > jp->max_capture) {
            strobe_jp_fail(jp, STROBE_EFORMAT, jp->cap_off,
                           "value larger than the limit of %zu bytes", jp->max_capture);
            return jp->err;
        }
        *text = (const char *)p;
        *len = (size_t)(e - p);
    } else {
        if (cap_append(jp, jp->buf + jp->cap_from, jp->pos - jp->cap_from)) return jp->err;
        *text = jp->cap;
        *len = jp->cap_len;
    }
    *off = jp->cap_off;
    return 0;
}

/* ---- 3. Lexing ---------------------------------------------------------------------------- */

/* Returns the next non-whitespace byte without consuming it, -1 at end of input, -2 on error. */
static int peek_nonws(strobe_jp *jp) {
    for (;;) {
        while (jp->pos < jp->len) {
            unsigned char c = jp->buf[jp->pos];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
            jp->pos++;
        }
        int r = fill(jp);
        if (r <= 0) return r == 0 ? -1 : -2;
    }
}

static int str_put(strobe_jp *jp, const void *p, size_t n) {
    if (jp->skip) return 0;
    if (n > jp->max_string - jp->str_len)
        return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off,
                              "string longer than the limit of %zu bytes", jp->max_string);
    if (jp->str_len + n + 1 > jp->str_cap &&
        grow(jp, &jp->str, &jp->str_cap, jp->str_len + n + 1, jp->str == jp->str_inline))
        return STROBE_JP_ERROR;
    memcpy(jp->str + jp->str_len, p, n);
    jp->str_len += n;
    return 0;
}

static int put_utf8(strobe_jp *jp, uint32_t cp) {
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (cp >> 18));
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return str_put(jp, b, n);
}

/* Reads the four hex digits of a \u escape. @return the code unit, or -1 (error recorded). */
static long read_hex4(strobe_jp *jp) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int64_t off = strobe_jp_offset(jp);
        int c = getbyte(jp);
        if (c == -2) return -1;
        if (c == -1) {
            strobe_jp_fail(jp, STROBE_EFORMAT, off, "unterminated string");
            return -1;
        }
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) {
            strobe_jp_fail(jp, STROBE_EFORMAT, off, "invalid \\u escape in string");
            return -1;
        }
        v = v * 16 + d;
    }
    return v;
}

/* Decodes one escape sequence after its backslash. A lone surrogate (which JSON allows but UTF-8
 * cannot encode) becomes U+FFFD, as other tolerant decoders do, rather than failing the trace. */
static int read_escape(strobe_jp *jp) {
    uint32_t pending = 0; /* a high surrogate waiting for its low half */
    for (;;) {
        int64_t off = strobe_jp_offset(jp) - 1; /* the backslash */
        int c = getbyte(jp);
        if (c == -2) return STROBE_JP_ERROR;
        if (c == -1) return strobe_jp_fail(jp, STROBE_EFORMAT, off, "unterminated string");
        if (c != 'u') {
            if (pending && put_utf8(jp, 0xFFFD)) return STROBE_JP_ERROR;
            char out;
            switch (c) {
            case '"':
                out = '"';
                break;
            case '\\':
                out = '\\';
                break;
            case '/':
                out = '/';
                break;
            case 'b':
                out = '\b';
                break;
            case 'f':
                out = '\f';
                break;
            case 'n':
                out = '\n';
                break;
            case 'r':
                out = '\r';
                break;
            case 't':
                out = '\t';
                break;
            default:
                if (c >= 0x20 && c < 0x7F)
                    return strobe_jp_fail(jp, STROBE_EFORMAT, off,
                                          "invalid escape '\\%c' in string", c);
                return strobe_jp_fail(jp, STROBE_EFORMAT, off, "invalid escape in string");
            }
            return str_put(jp, &out, 1);
        }
        long u = read_hex4(jp);
        if (u < 0) return STROBE_JP_ERROR;
        if (pending) {
            if (u >= 0xDC00 && u <= 0xDFFF)
                return put_utf8(jp, 0x10000 + ((pending - 0xD800) << 10) + ((uint32_t)u - 0xDC00));
            if (put_utf8(jp, 0xFFFD)) return STROBE_JP_ERROR;
            pending = 0;
        }
        if (u >= 0xD800 && u <= 0xDBFF) {
            /* A high surrogate pairs only with a \u escape that follows at once. */
            pending = (uint32_t)u;
            c = getbyte(jp);
            if (c == '\\') continue;
            if (c == -2) return STROBE_JP_ERROR;
            if (c >= 0) jp->pos--; /* not an escape: read it again as string text */
            return put_utf8(jp, 0xFFFD);
        }
        return put_utf8(jp, u >= 0xDC00 && u <= 0xDFFF ? 0xFFFD : (uint32_t)u);
    }
}

/* Returns the end of the run of plain string bytes (not '"', '\\' or a control character) that
 * starts at p. Strings are most of a trace, so the run is scanned eight bytes at a time with the
 * usual "has a zero byte" bit trick, and byte by byte only in the word where it ends. */
static inline const unsigned char *plain_run(const unsigned char *p, const unsigned char *e) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (e - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t quote = w ^ (ones * '"'), bslash = w ^ (ones * '\\');
        /* x - 0x01.. sets the high bit of each byte of x that is 0 (or that a borrow reaches,
         * which only happens above a byte that is 0); w - 0x20.. does so for bytes below 0x20.
         * Masking with ~byte keeps bytes whose own high bit was clear. */
        uint64_t stop =
            ((quote - ones) & ~quote) | ((bslash - ones) & ~bslash) | ((w - ones * 0x20) & ~w);
        if (stop & highs) break;
        p += 8;
    }
    while (p < e && *p != '"' && *p != '\\' && *p >= 0x20)
        p++;
    return p;
}

/* Reads a string after its opening quote into jp->str (or only checks it in skip mode). Bytes
 * other than quotes, backslashes and control characters are copied in runs; UTF-8 is passed
 * through unchecked, because names in real traces are not always valid UTF-8. */
static int read_string(strobe_jp *jp) {
    jp->str_len = 0;
    for (;;) {
        if (jp->pos == jp->len) {
            int r = fill(jp);
            if (r < 0) return STROBE_JP_ERROR;
            if (r == 0)
                return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off, "unterminated string");
        }
        const unsigned char *p = jp->buf + jp->pos, *e = jp->buf + jp->len;
        const unsigned char *q = plain_run(p, e);
        if (q > p && str_put(jp, p, (size_t)(q - p))) return STROBE_JP_ERROR;
        jp->pos = (size_t)(q - jp->buf);
        if (q == e) continue;
        unsigned char c = *q;
        jp->pos++;
        if (c == '"') break;
        if (c == '\\') {
            if (read_escape(jp)) return STROBE_JP_ERROR;
            continue;
        }
        return strobe_jp_fail(jp, STROBE_EFORMAT, jp->base_off + (int64_t)jp->pos - 1,
                              "control character 0x%02x in string", c);
    }
    if (!jp->skip) jp->str[jp->str_len] = '\0';
    return 0;
}

/* Reads a number into jp->num and checks it against the JSON grammar:
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int read_number(strobe_jp *jp) {
    size_t n = 0;
    for (;;) {
        if (jp->pos == jp->len) {
            int r = fill(jp);
            if (r < 0) return STROBE_JP_ERROR;
            if (r == 0) break;
        }
        unsigned char c = jp->buf[jp->pos];
        if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'))
            break;
        if (n == STROBE_JP_NUM_MAX)
            return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off,
                                  "number longer than %d characters", STROBE_JP_NUM_MAX);
        jp->num[n++] = (char)c;
        jp->pos++;
    }
    jp->num[n] = '\0';
    jp->num_len = n;
    const char *s = jp->num;
    size_t i = 0;
    if (s[i] == '-') i++;
    if (s[i] == '0') {
        i++;
    } else if (s[i] >= '1' && s[i] <= '9') {
        while (s[i] >= '0' && s[i] <= '9')
            i++;
    } else {
        goto bad;
    }
    if (s[i] == '.') {
        i++;
        if (!(s[i] >= '0' && s[i] <= '9')) goto bad;
        while (s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (s[i] == 'e' || s[i] == 'E') {
        i++;
        if (s[i] == '+' || s[i] == '-') i++;
        if (!(s[i] >= '0' && s[i] <= '9')) goto bad;
        while (s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i == n) return 0;
bad:
    return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off, "invalid number '%.40s'", jp->num);
}

static int read_literal(strobe_jp *jp, const char *word, int tok) {
    for (size_t i = 0; word[i]; i++) {
        int64_t off = strobe_jp_offset(jp);
        int c = getbyte(jp);
        if (c == -2) return STROBE_JP_ERROR;
        if (c != (unsigned char)word[i]) {
            if (c == -1) return strobe_jp_fail(jp, STROBE_EFORMAT, off, "unexpected end of input");
            return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off,
                                  "invalid literal (expected '%s')", word);
        }
    }
    return tok;
}

/* ---- 4. Grammar --------------------------------------------------------------------------- */

static inline int top_is_object(const strobe_jp *jp) {
    unsigned d = jp->depth - 1;
    return (int)((jp->stack[d / 64] >> (d % 64)) & 1);
}

static void after_value(strobe_jp *jp) {
    if (jp->depth == 0) {
        jp->state = ST_DONE;
        jp->complete = 1;
    } else {
        jp->state = ST_COMMA;
    }
}

static int push(strobe_jp *jp, int is_object) {
    size_t max = jp->max_depth < STROBE_JP_DEPTH_CAP ? jp->max_depth : STROBE_JP_DEPTH_CAP;
    if (jp->depth >= max)
        return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off, "nesting deeper than %zu levels",
                              max);
    unsigned d = jp->depth++;
    uint64_t bit = (uint64_t)1 << (d % 64);
    if (is_object)
        jp->stack[d / 64] |= bit;
    else
        jp->stack[d / 64] &= ~bit;
    jp->state = is_object ? ST_KEY : ST_VALUE;
    jp->first = 1;
    return is_object ? STROBE_JP_OBJ_BEGIN : STROBE_JP_ARR_BEGIN;
}

static int pop(strobe_jp *jp) {
    int was_object = top_is_object(jp);
    jp->depth--;
    jp->pos++;
    after_value(jp);
    return was_object ? STROBE_JP_OBJ_END : STROBE_JP_ARR_END;
}

/* Describes an unexpected byte for a message: printable ASCII as itself, others in hex. */
static const char *describe(int c, char *buf, size_t cap) {
    if (c >= 0x21 && c < 0x7F)
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02x", (unsigned)c & 0xFF);
    return buf;
}

int strobe_jp_next(strobe_jp *jp) {
    char d[16];
    if (jp->err) return STROBE_JP_ERROR;
    for (;;) {
        int c = peek_nonws(jp);
        if (c == -2) return STROBE_JP_ERROR;
        jp->tok_off = strobe_jp_offset(jp);
        switch (jp->state) {
        case ST_DONE:
            if (c == -1) return STROBE_JP_EOF;
            return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off,
                                  "unexpected %s after the end of the JSON value",
                                  describe(c, d, sizeof d));
        case ST_COMMA: {
            if (c == -1) return STROBE_JP_EOF;
            int obj = top_is_object(jp);
            if (c == ',') {
                jp->pos++;
                jp->state = obj ? ST_KEY : ST_VALUE;
                jp->first = 0;
                continue;
            }
            if (c == (obj ? '}' : ']')) return pop(jp);
            return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off, "expected ',' or '%c', found %s",
                                  obj ? '}' : ']', describe(c, d, sizeof d));
        }
        case ST_KEY:
            if (c == -1) return STROBE_JP_EOF;
            if (c == '}' && jp->first) return pop(jp);
            if (c != '"')
                return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off,
                                      "expected a string key%s, found %s",
                                      jp->first ? " or '}'" : "", describe(c, d, sizeof d));
            jp->pos++;
            {
                int saved = jp->skip;
                jp->skip = 0; /* keys are always decoded: callers compare them */
                int r = read_string(jp);
                jp->skip = saved;
                if (r) return STROBE_JP_ERROR;
            }
            c = peek_nonws(jp);
            if (c == -2) return STROBE_JP_ERROR;
            if (c != ':') {
                if (c == -1) return STROBE_JP_EOF;
                return strobe_jp_fail(jp, STROBE_EFORMAT, strobe_jp_offset(jp),
                                      "expected ':' after an object key, found %s",
                                      describe(c, d, sizeof d));
            }
            jp->pos++;
            jp->state = ST_VALUE;
            jp->first = 0;
            return STROBE_JP_KEY;
        case ST_VALUE:
            if (c == -1) return STROBE_JP_EOF;
            switch (c) {
            case '{':
                jp->pos++;
                return push(jp, 1);
            case '[':
                jp->pos++;
                return push(jp, 0);
            case ']':
                if (jp->first && jp->depth > 0 && !top_is_object(jp)) return pop(jp);
                break;
            case '"':
                jp->pos++;
                if (read_string(jp)) return STROBE_JP_ERROR;
                after_value(jp);
                return STROBE_JP_STRING;
            case 't':
            case 'f':
            case 'n': {
                int tok = c == 't'   ? read_literal(jp, "true", STROBE_JP_TRUE)
                          : c == 'f' ? read_literal(jp, "false", STROBE_JP_FALSE)
                                     : read_literal(jp, "null", STROBE_JP_NULL);
                if (tok == STROBE_JP_ERROR) return tok;
                after_value(jp);
                return tok;
            }
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    if (read_number(jp)) return STROBE_JP_ERROR;
                    after_value(jp);
                    return STROBE_JP_NUMBER;
                }
            }
            /* A UTF-8 byte order mark is not JSON, but some tools write one: skip it. Byte 0xEF
             * cannot start a value, so consuming it here loses nothing when it is no mark. */
            if (c == 0xEF && jp->tok_off == 0 && jp->depth == 0) {
                jp->pos++;
                int c1 = getbyte(jp), c2 = c1 == 0xBB ? getbyte(jp) : -1;
                if (c2 == 0xBF) continue;
                if (c1 == -2 || c2 == -2) return STROBE_JP_ERROR;
            }
            return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off, "expected a value, found %s",
                                  describe(c, d, sizeof d));
        }
        return strobe_jp_fail(jp, STROBE_EFORMAT, jp->tok_off, "internal tokenizer state");
    }
}

int strobe_jp_skip_container(strobe_jp *jp) {
    unsigned target = jp->depth - 1;
    int saved = jp->skip;
    jp->skip = 1;
    int tok;
    do {
        tok = strobe_jp_next(jp);
    } while (tok > STROBE_JP_EOF &&
             !((tok == STROBE_JP_OBJ_END || tok == STROBE_JP_ARR_END) && jp->depth == target));
    jp->skip = saved;
    return tok;
}

/* Finds the first '"' or '\\' at or after p (e when there is none), eight bytes at a time. */
static inline const unsigned char *quote_or_bslash(const unsigned char *p, const unsigned char *e) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (e - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t quote = w ^ (ones * '"'), bslash = w ^ (ones * '\\');
        if ((((quote - ones) & ~quote) | ((bslash - ones) & ~bslash)) & highs) break;
        p += 8;
    }
    while (p < e && *p != '"' && *p != '\\')
        p++;
    return p;
}

/* Bytes that strobe_jp_skip_unchecked() stops at outside strings: 1 a quote, 2 an opening bracket,
 * 3 a closing one. */
static const unsigned char skip_class[256] = {
    ['"'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 3, [']'] = 3};

int strobe_jp_skip_unchecked(strobe_jp *jp) {
    if (jp->err) return STROBE_JP_ERROR;
    unsigned target = jp->depth - 1;
    int in_str = 0, esc = 0;
    for (;;) {
        if (jp->pos == jp->len) {
            int r = fill(jp);
            if (r < 0) return STROBE_JP_ERROR;
            if (r == 0) return STROBE_JP_EOF;
        }
        const unsigned char *p = jp->buf + jp->pos, *e = jp->buf + jp->len;
        while (p < e) {
            if (esc) {
                esc = 0;
                p++;
                continue;
            }
            if (in_str) {
                p = quote_or_bslash(p, e);
                if (p == e) break;
                if (*p == '"')
                    in_str = 0;
                else
                    esc = 1;
                p++;
                continue;
            }
            unsigned char cls = 0, c = 0;
            while (p < e && (cls = skip_class[c = *p++]) == 0) {
            }
            if (cls == 0) break; /* the window ended */
            if (cls == 1) {
                in_str = 1;
            } else if (cls == 2) {
                size_t max =
                    jp->max_depth < STROBE_JP_DEPTH_CAP ? jp->max_depth : STROBE_JP_DEPTH_CAP;
                if (jp->depth >= max) {
                    jp->pos = (size_t)(p - jp->buf);
                    return strobe_jp_fail(jp, STROBE_EFORMAT, strobe_jp_offset(jp) - 1,
                                          "nesting deeper than %zu levels", max);
                }
                unsigned d = jp->depth++;
                uint64_t bit = (uint64_t)1 << (d % 64);
                if (c == '{')
                    jp->stack[d / 64] |= bit;
                else
                    jp->stack[d / 64] &= ~bit;
            } else {
                jp->pos = (size_t)(p - jp->buf);
                if (top_is_object(jp) != (c == '}'))
                    return strobe_jp_fail(jp, STROBE_EFORMAT, strobe_jp_offset(jp) - 1,
                                          "mismatched '%c'", c);
                jp->depth--;
                if (jp->depth == target) {
                    after_value(jp);
                    return c == '}' ? STROBE_JP_OBJ_END : STROBE_JP_ARR_END;
                }
            }
        }
        jp->pos = (size_t)(p - jp->buf);
    }
}
