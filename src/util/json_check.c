/* json_check.c: a non-allocating recursive-descent JSON validator with a depth limit. */
#include "json_check.h"

#include <string.h>

#define MAX_DEPTH 256

typedef struct {
    const unsigned char *p, *end;
} cur;

static void skip_ws(cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int lit(cur *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    c->p += n;
    return 1;
}

static int digits(cur *c) {
    const unsigned char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        c->p++;
    return c->p > start;
}

static int number(cur *c) {
    if (c->p < c->end && *c->p == '-') c->p++;
    if (c->p < c->end && *c->p == '0') {
        c->p++;
    } else if (!digits(c)) {
        return 0;
    }
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (!digits(c)) return 0;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (!digits(c)) return 0;
    }
    return 1;
}

static int hex4(cur *c) {
    if (c->end - c->p < 4) return 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = c->p[i];
        if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) return 0;
    }
    c->p += 4;
    return 1;
}

/* One UTF-8 sequence starting at c->p (a lead byte >= 0x80): well-formed, shortest form, no
 * surrogates. */
static int utf8_seq(cur *c) {
    unsigned char b = *c->p;
    int n;
    unsigned min;
    unsigned cp;
    if (b >= 0xC2 && b <= 0xDF) {
        n = 1, min = 0x80, cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 2, min = 0x800, cp = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 3, min = 0x10000, cp = b & 0x07;
    } else {
        return 0;
    }
    if (c->end - c->p <= n) return 0;
    for (int i = 1; i <= n; i++) {
        if ((c->p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (c->p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    c->p += n + 1;
    return 1;
}

static int string(cur *c) {
    c->p++; /* opening quote */
    while (c->p < c->end) {
        unsigned char ch = *c->p;
        if (ch == '"') {
            c->p++;
            return 1;
        }
        if (ch < 0x20) return 0;
        if (ch == '\\') {
            c->p++;
            if (c->p >= c->end) return 0;
            ch = *c->p++;
            if (ch == 'u') {
                if (!hex4(c)) return 0;
            } else if (!strchr("\"\\/bfnrt", ch) || ch == 0) {
                return 0;
            }
        } else if (ch >= 0x80) {
            if (!utf8_seq(c)) return 0;
        } else {
            c->p++;
        }
    }
    return 0;
}

static int value(cur *c, int depth);

static int container(cur *c, int depth, unsigned char close, int is_object) {
    if (depth >= MAX_DEPTH) return 0;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 1;
    }
    for (;;) {
        skip_ws(c);
        if (is_object) {
            if (c->p >= c->end || *c->p != '"' || !string(c)) return 0;
            skip_ws(c);
            if (c->p >= c->end || *c->p != ':') return 0;
            c->p++;
        }
        if (!value(c, depth + 1)) return 0;
        skip_ws(c);
        if (c->p >= c->end) return 0;
        if (*c->p == ',') {
            c->p++;
            continue;
        }
        if (*c->p == close) {
            c->p++;
            return 1;
        }
        return 0;
    }
}

static int value(cur *c, int depth) {
    skip_ws(c);
    if (c->p >= c->end) return 0;
    switch (*c->p) {
    case '{':
        return container(c, depth, '}', 1);
    case '[':
        return container(c, depth, ']', 0);
    case '"':
        return string(c);
    case 't':
        return lit(c, "true");
    case 'f':
        return lit(c, "false");
    case 'n':
        return lit(c, "null");
    default:
        return number(c);
    }
}

int strobe__json_valid(const char *s, size_t len) {
    if (s == NULL) return 0;
    cur c = {(const unsigned char *)s, (const unsigned char *)s + len};
    if (!value(&c, 0)) return 0;
    skip_ws(&c);
    return c.p == c.end;
}
