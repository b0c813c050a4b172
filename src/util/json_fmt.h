/* json_fmt.h: formatting JSON text straight into a buffer, for the JSON writer and the streaming
 * output: integers, microsecond timestamps from integer nanoseconds, doubles and escaped strings.
 * The caller reserves room first (the _MAX macros). The per-event paths use the static inline
 * versions; the strobe__json_put_* functions are the same, out of line. */
#ifndef STROBE_UTIL_JSON_FMT_H
#define STROBE_UTIL_JSON_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The most bytes strobe__json_put_ts() writes: a sign, 17 integer digits, a point, 3 decimals. */
#define STROBE__JSON_TS_MAX 24
/* The most bytes strobe__json_put_double() writes. */
#define STROBE__JSON_DOUBLE_MAX 32
/* The most bytes strobe__json_put_string() writes for `n` input bytes: two quotes, and six bytes
 * per input byte (a \u00XX escape, or a \ufffd for a byte of invalid UTF-8). */
#define STROBE__JSON_STRING_MAX(n) (6 * (size_t)(n) + 2)

/* Writes (ns - base_ns) as microseconds with exactly three decimals ("1234.567", "-0.001"),
 * computed from the integers alone. Returns the new end. */
char *strobe__json_put_ts(char *p, int64_t ns, int64_t base_ns);

/* Writes s[0..n) as a quoted JSON string: '"', '\\' and control characters escaped, invalid UTF-8
 * replaced by U+FFFD, valid UTF-8 kept as it is. Returns the new end. */
char *strobe__json_put_string(char *p, const char *s, size_t n);

/* Writes a finite double as a JSON number, the shortest of %.15g / %.17g that reads back exactly,
 * whatever the C locale. Returns the new end, or NULL (nothing written) for NaN and infinities. */
char *strobe__json_put_double(char *p, double v);

static const char digit_pairs[201] = "00010203040506070809"
                                     "10111213141516171819"
                                     "20212223242526272829"
                                     "30313233343536373839"
                                     "40414243444546474849"
                                     "50515253545556575859"
                                     "60616263646566676869"
                                     "70717273747576777879"
                                     "80818283848586878889"
                                     "90919293949596979899";

/* Two digits at a time from the right: half the divisions of the digit-by-digit loop. */
static inline char *put_u64(char *p, uint64_t v) {
    char tmp[20];
    char *t = tmp + sizeof tmp;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        t -= 2;
        memcpy(t, digit_pairs + 2 * r, 2);
    }
    if (v >= 10) {
        t -= 2;
        memcpy(t, digit_pairs + 2 * v, 2);
    } else {
        *--t = (char)('0' + v);
    }
    size_t n = (size_t)(tmp + sizeof tmp - t);
    memcpy(p, t, n);
    return p + n;
}

static inline char *put_i64(char *p, int64_t v) {
    if (v < 0) {
        *p++ = '-';
        /* Negating in unsigned arithmetic is defined also for INT64_MIN. */
        return put_u64(p, 0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

static inline char *put_ts(char *p, int64_t ns, int64_t base_ns) {
    /* The difference of two int64 values always fits in 64 bits as a magnitude and a sign, even
     * where the signed subtraction would overflow. */
    uint64_t mag;
    if (ns >= base_ns) {
        mag = (uint64_t)ns - (uint64_t)base_ns;
    } else {
        mag = (uint64_t)base_ns - (uint64_t)ns;
        *p++ = '-';
    }
    p = put_u64(p, mag / 1000);
    unsigned frac = (unsigned)(mag % 1000);
    p[0] = '.';
    p[1] = (char)('0' + frac / 100);
    memcpy(p + 2, digit_pairs + 2 * (frac % 100), 2);
    return p + 4;
}

/* Bytes that leave the fast path of put_string(): control characters, '"', '\\', DEL (escaped
 * so that traces stay printable), and every byte of a multi-byte UTF-8 sequence (checked). */
/* clang-format off */
#define ROW(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
static const unsigned char special[256] = {
    ROW(1),                                         /* 0x00 */
    ROW(1),                                         /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20: '"' */
    ROW(0),                                         /* 0x30 */
    ROW(0),                                         /* 0x40 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x50: '\\' */
    ROW(0),                                         /* 0x60 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, /* 0x70: DEL */
    ROW(1), ROW(1), ROW(1), ROW(1),                 /* 0x80..0xbf */
    ROW(1), ROW(1), ROW(1), ROW(1),                 /* 0xc0..0xff */
};
#undef ROW
/* clang-format on */

static const char hex_digits[16] = "0123456789abcdef";

static inline char *put_u_escape(char *p, unsigned c) {
    memcpy(p, "\\u00", 4);
    p[4] = hex_digits[(c >> 4) & 0xf];
    p[5] = hex_digits[c & 0xf];
    return p + 6;
}

static inline char *put_replacement(char *p) {
    memcpy(p, "\\ufffd", 6);
    return p + 6;
}

/* The length of the well-formed UTF-8 sequence at u (lead byte >= 0x80), or 0 when it is not one
 * (stray continuation, overlong form, surrogate, above U+10FFFF, or cut short). `*bad` gets how
 * many bytes make up the ill-formed prefix, so that it becomes one U+FFFD (Unicode's "maximal
 * subpart" practice) rather than one per byte. */
static inline size_t utf8_len(const unsigned char *u, const unsigned char *end, size_t *bad) {
    unsigned c = u[0];
    unsigned lo = 0x80, hi = 0xBF;
    size_t n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0; /* overlong below U+0800 */
        if (c == 0xED) hi = 0x9F; /* surrogates U+D800..U+DFFF */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90; /* overlong below U+10000 */
        if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
        *bad = 1;
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (u + i >= end || u[i] < lo || u[i] > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return n;
}

static inline char *put_string(char *p, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s, *end = u + n;
    *p++ = '"';
    while (u < end) {
        /* The fast path: plain ASCII, copied byte by byte with one table lookup. */
        unsigned c = *u;
        if (!special[c]) {
            *p++ = (char)c;
            u++;
            continue;
        }
        if (c >= 0x80) {
            size_t bad = 0, len = utf8_len(u, end, &bad);
            if (len) {
                memcpy(p, u, len);
                p += len;
                u += len;
            } else {
                p = put_replacement(p);
                u += bad;
            }
            continue;
        }
        u++;
        switch (c) {
        case '"':
            *p++ = '\\', *p++ = '"';
            break;
        case '\\':
            *p++ = '\\', *p++ = '\\';
            break;
        case '\n':
            *p++ = '\\', *p++ = 'n';
            break;
        case '\t':
            *p++ = '\\', *p++ = 't';
            break;
        case '\r':
            *p++ = '\\', *p++ = 'r';
            break;
        case '\b':
            *p++ = '\\', *p++ = 'b';
            break;
        case '\f':
            *p++ = '\\', *p++ = 'f';
            break;
        default:
            p = put_u_escape(p, c);
            break;
        }
    }
    *p++ = '"';
    return p;
}

#endif /* STROBE_UTIL_JSON_FMT_H */
