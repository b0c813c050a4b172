/* od_proto.c: the on-demand control protocol's lines (od_proto.h). */
#include "od_proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strobe/error.h"

void strobe__od_errf(char *err, size_t cap, const char *fmt, ...) {
    if (err == NULL || cap == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

static int needs_escape(unsigned char c) {
    return c <= 0x20 || c >= 0x7f || c == '%' || c == '=';
}

int strobe__od_encode(const char *src, size_t len, char *dst, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        size_t need = needs_escape(c) ? 3 : 1;
        if (o + need >= cap) return STROBE_ERANGE;
        if (need == 3) {
            dst[o++] = '%';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        } else {
            dst[o++] = (char)c;
        }
    }
    if (o >= cap) return STROBE_ERANGE;
    dst[o] = '\0';
    return (int)o;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes `len` encoded bytes. A NUL byte (%00) is refused: values are C strings. */
static int decode(const char *src, size_t len, char *dst, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        if (c == '%') {
            if (i + 2 >= len) return STROBE_EFORMAT;
            int h = hexval(src[i + 1]), l = hexval(src[i + 2]);
            if (h < 0 || l < 0 || (h == 0 && l == 0)) return STROBE_EFORMAT;
            c = (char)(h << 4 | l);
            i += 2;
        } else if ((unsigned char)c <= 0x20 || (unsigned char)c >= 0x7f) {
            return STROBE_EFORMAT;
        }
        if (o + 1 >= cap) return STROBE_ERANGE;
        dst[o++] = c;
    }
    if (cap == 0) return STROBE_ERANGE;
    dst[o] = '\0';
    return (int)o;
}

/* Strips a trailing "\n" (and "\r\n"). */
static size_t trim_len(const char *line, size_t len) {
    if (len > 0 && line[len - 1] == '\n') len--;
    if (len > 0 && line[len - 1] == '\r') len--;
    return len;
}

int strobe__od_word0(const char *line, size_t len, char *out, size_t cap) {
    len = trim_len(line, len);
    size_t n = 0;
    while (n < len && line[n] != ' ')
        n++;
    if (n == 0 || n + 1 > cap) return n == 0 ? STROBE_EFORMAT : STROBE_ERANGE;
    memcpy(out, line, n);
    out[n] = '\0';
    return 0;
}

int strobe__od_get(const char *line, size_t len, const char *key, char *out, size_t cap) {
    len = trim_len(line, len);
    size_t klen = strlen(key);
    size_t i = 0;
    /* Skip the verb: keys follow it. */
    while (i < len && line[i] != ' ')
        i++;
    while (i < len) {
        while (i < len && line[i] == ' ')
            i++;
        size_t w = i;
        while (i < len && line[i] != ' ')
            i++;
        if (i - w > klen && memcmp(line + w, key, klen) == 0 && line[w + klen] == '=')
            return decode(line + w + klen + 1, i - w - klen - 1, out, cap);
    }
    return STROBE_EINVAL;
}

int strobe__od_parse_num(const char *s, int64_t max, int64_t *out) {
    if (s == NULL || s[0] == '\0' || strlen(s) > 19) return STROBE_EINVAL;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return STROBE_EINVAL;
        v = v * 10 + (*p - '0');
        if (v > max) return STROBE_ERANGE;
    }
    if (v < 1) return STROBE_ERANGE;
    *out = v;
    return 0;
}

static const struct {
    const char *name;
    uint32_t bit;
} flag_names[] = {
    {"record_shapes", STROBE__OD_RECORD_SHAPES}, {"profile_memory", STROBE__OD_PROFILE_MEMORY},
    {"with_stack", STROBE__OD_WITH_STACK},       {"with_flops", STROBE__OD_WITH_FLOPS},
    {"with_modules", STROBE__OD_WITH_MODULES},
};

/* Activity names, with the bits of strobe_activity (session.h) they stand for. */
static const struct {
    const char *name;
    uint32_t bit;
} activity_names[] = {{"cpu", 1u << 0}, {"cuda", 1u << 1}};

/* Parses a comma-separated list of names from `table` into bits. */
#define PARSE_LIST(s, table, out, what)                                                            \
    do {                                                                                           \
        const char *p_ = (s);                                                                      \
        uint32_t bits_ = 0;                                                                        \
        for (;;) {                                                                                 \
            const char *e_ = strchr(p_, ',');                                                      \
            size_t n_ = e_ ? (size_t)(e_ - p_) : strlen(p_);                                       \
            size_t k_;                                                                             \
            for (k_ = 0; k_ < sizeof table / sizeof table[0]; k_++)                                \
                if (strlen(table[k_].name) == n_ && memcmp(table[k_].name, p_, n_) == 0) break;    \
            if (k_ == sizeof table / sizeof table[0]) {                                            \
                strobe__od_errf(err, errcap, "unknown %s '%.*s'", what, (int)(n_ > 40 ? 40 : n_),  \
                                p_);                                                               \
                return STROBE_EFORMAT;                                                             \
            }                                                                                      \
            bits_ |= table[k_].bit;                                                                \
            if (!e_) break;                                                                        \
            p_ = e_ + 1;                                                                           \
        }                                                                                          \
        (out) = bits_;                                                                             \
    } while (0)

int strobe__od_parse_request(const char *line, size_t len, strobe__od_request *req, char *err,
                             size_t errcap) {
    if (errcap > 0) err[0] = '\0';
    memset(req, 0, sizeof *req);
    req->roundup = 1;
    if (line == NULL) {
        strobe__od_errf(err, errcap, "no request");
        return STROBE_EFORMAT;
    }
    len = trim_len(line, len);
    if (len == 0) {
        strobe__od_errf(err, errcap, "empty request");
        return STROBE_EFORMAT;
    }
    if (len >= STROBE__OD_MAX_LINE) {
        strobe__od_errf(err, errcap, "request longer than %d bytes", STROBE__OD_MAX_LINE - 1);
        return STROBE_EFORMAT;
    }
    if (memchr(line, '\0', len) || memchr(line, '\n', len)) {
        strobe__od_errf(err, errcap, "request holds a NUL or a newline");
        return STROBE_EFORMAT;
    }
    size_t v = 0;
    while (v < len && line[v] != ' ')
        v++;
    static const struct {
        const char *name;
        strobe__od_verb verb;
    } verbs[] = {{"status", STROBE__OD_STATUS},
                 {"trigger", STROBE__OD_TRIGGER},
                 {"memory-profile", STROBE__OD_MEMORY},
                 {"dump", STROBE__OD_DUMP}};
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (strlen(verbs[i].name) == v && memcmp(verbs[i].name, line, v) == 0)
            req->verb = verbs[i].verb;
    if (req->verb == 0) {
        strobe__od_errf(err, errcap, "unknown request '%.*s'", (int)(v > 40 ? 40 : v), line);
        return STROBE_EFORMAT;
    }
    /* Each key once: a bit per known key. */
    enum { K_DUR = 1, K_ITER = 2, K_ROUND = 4, K_OUT = 8, K_FLAGS = 16, K_ACT = 32, K_TMO = 64 };
    unsigned seen = 0;
    char val[STROBE__OD_MAX_PATH];
    size_t i = v;
    while (i < len) {
        if (line[i] != ' ' || i + 1 >= len || line[i + 1] == ' ') {
            strobe__od_errf(err, errcap, "words must be separated by single spaces");
            return STROBE_EFORMAT;
        }
        i++;
        size_t w = i;
        while (i < len && line[i] != ' ')
            i++;
        const char *eq = memchr(line + w, '=', i - w);
        if (eq == NULL || eq == line + w) {
            strobe__od_errf(err, errcap, "'%.*s' is not key=value", (int)(i - w > 40 ? 40 : i - w),
                            line + w);
            return STROBE_EFORMAT;
        }
        size_t klen = (size_t)(eq - (line + w));
        if (decode(eq + 1, (size_t)(line + i - eq - 1), val, sizeof val) < 0) {
            strobe__od_errf(err, errcap, "bad value for '%.*s' (bad escape, or too long)",
                            (int)(klen > 40 ? 40 : klen), line + w);
            return STROBE_EFORMAT;
        }
        static const struct {
            const char *name;
            unsigned bit;
        } keys[] = {{"duration_ms", K_DUR}, {"iterations", K_ITER}, {"roundup", K_ROUND},
                    {"output", K_OUT},      {"flags", K_FLAGS},     {"activities", K_ACT},
                    {"timeout_ms", K_TMO}};
        unsigned bit = 0;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (strlen(keys[k].name) == klen && memcmp(keys[k].name, line + w, klen) == 0)
                bit = keys[k].bit;
        if (bit == 0) {
            strobe__od_errf(err, errcap, "unknown key '%.*s'", (int)(klen > 40 ? 40 : klen),
                            line + w);
            return STROBE_EFORMAT;
        }
        if (seen & bit) {
            strobe__od_errf(err, errcap, "key '%.*s' given twice", (int)klen, line + w);
            return STROBE_EFORMAT;
        }
        seen |= bit;
        switch (bit) {
        case K_DUR:
            if (strobe__od_parse_num(val, STROBE__OD_MAX_DURATION_MS, &req->duration_ms) != 0) {
                strobe__od_errf(err, errcap, "duration_ms must be 1..%lld",
                                STROBE__OD_MAX_DURATION_MS);
                return STROBE_EFORMAT;
            }
            break;
        case K_ITER:
            if (strobe__od_parse_num(val, STROBE__OD_MAX_ITERATIONS, &req->iterations) != 0) {
                strobe__od_errf(err, errcap, "iterations must be 1..%lld",
                                STROBE__OD_MAX_ITERATIONS);
                return STROBE_EFORMAT;
            }
            break;
        case K_ROUND:
            if (strobe__od_parse_num(val, STROBE__OD_MAX_ITERATIONS, &req->roundup) != 0) {
                strobe__od_errf(err, errcap, "roundup must be 1..%lld", STROBE__OD_MAX_ITERATIONS);
                return STROBE_EFORMAT;
            }
            break;
        case K_TMO:
            if (strobe__od_parse_num(val, STROBE__OD_MAX_TIMEOUT_MS, &req->timeout_ms) != 0) {
                strobe__od_errf(err, errcap, "timeout_ms must be 1..%lld",
                                STROBE__OD_MAX_TIMEOUT_MS);
                return STROBE_EFORMAT;
            }
            break;
        case K_OUT:
            if (val[0] != '/') {
                strobe__od_errf(err, errcap, "output must be an absolute path");
                return STROBE_EFORMAT;
            }
            strcpy(req->output, val);
            break;
        case K_FLAGS:
            PARSE_LIST(val, flag_names, req->flags, "flag");
            break;
        case K_ACT:
            PARSE_LIST(val, activity_names, req->activities, "activity");
            break;
        }
    }
    /* What each verb needs, and what it does not take. */
    unsigned allowed = 0, required = 0;
    switch (req->verb) {
    case STROBE__OD_STATUS:
        break;
    case STROBE__OD_TRIGGER:
        allowed = K_DUR | K_ITER | K_ROUND | K_OUT | K_FLAGS | K_ACT | K_TMO;
        required = K_OUT;
        break;
    case STROBE__OD_MEMORY:
        allowed = K_DUR | K_OUT | K_TMO;
        required = K_OUT | K_DUR;
        break;
    case STROBE__OD_DUMP:
        allowed = required = K_OUT;
        break;
    }
    if (seen & ~allowed) {
        strobe__od_errf(err, errcap, "a key this request does not take");
        return STROBE_EFORMAT;
    }
    if ((seen & required) != required) {
        strobe__od_errf(err, errcap, "%s",
                        (required & ~seen & K_OUT) ? "output= is required"
                                                   : "duration_ms= is required");
        return STROBE_EFORMAT;
    }
    if (req->verb == STROBE__OD_TRIGGER) {
        if ((seen & K_DUR) && (seen & K_ITER)) {
            strobe__od_errf(err, errcap, "duration_ms and iterations exclude each other");
            return STROBE_EFORMAT;
        }
        if (!(seen & (K_DUR | K_ITER))) {
            strobe__od_errf(err, errcap, "one of duration_ms= or iterations= is required");
            return STROBE_EFORMAT;
        }
        if ((seen & K_ROUND) && !(seen & K_ITER)) {
            strobe__od_errf(err, errcap, "roundup goes with iterations");
            return STROBE_EFORMAT;
        }
    }
    return 0;
}

/* Appends " key=<encoded value>". */
static int put_kv(char *buf, size_t cap, size_t *o, const char *key, const char *value) {
    int n = snprintf(buf + *o, cap - *o, " %s=", key);
    if (n < 0 || (size_t)n >= cap - *o) return STROBE_ERANGE;
    *o += (size_t)n;
    int e = strobe__od_encode(value, strlen(value), buf + *o, cap - *o);
    if (e < 0) return STROBE_ERANGE;
    *o += (size_t)e;
    return 0;
}

static int put_num(char *buf, size_t cap, size_t *o, const char *key, int64_t v) {
    char s[24];
    snprintf(s, sizeof s, "%lld", (long long)v);
    return put_kv(buf, cap, o, key, s);
}

int strobe__od_format_request(const strobe__od_request *req, char *buf, size_t cap) {
    const char *verb = req->verb == STROBE__OD_STATUS    ? "status"
                       : req->verb == STROBE__OD_TRIGGER ? "trigger"
                       : req->verb == STROBE__OD_MEMORY  ? "memory-profile"
                       : req->verb == STROBE__OD_DUMP    ? "dump"
                                                         : NULL;
    if (verb == NULL || cap < 2) return STROBE_ERANGE;
    size_t o = (size_t)snprintf(buf, cap, "%s", verb);
    if (o >= cap) return STROBE_ERANGE;
    if (req->output[0] && put_kv(buf, cap, &o, "output", req->output) != 0) return STROBE_ERANGE;
    if (req->duration_ms && put_num(buf, cap, &o, "duration_ms", req->duration_ms) != 0)
        return STROBE_ERANGE;
    if (req->iterations && put_num(buf, cap, &o, "iterations", req->iterations) != 0)
        return STROBE_ERANGE;
    if (req->iterations && req->roundup > 1 && put_num(buf, cap, &o, "roundup", req->roundup) != 0)
        return STROBE_ERANGE;
    if (req->timeout_ms && put_num(buf, cap, &o, "timeout_ms", req->timeout_ms) != 0)
        return STROBE_ERANGE;
    char list[256];
    size_t l = 0;
    list[0] = '\0';
    for (size_t i = 0; i < sizeof flag_names / sizeof flag_names[0]; i++)
        if (req->flags & flag_names[i].bit)
            l += (size_t)snprintf(list + l, sizeof list - l, "%s%s", l ? "," : "",
                                  flag_names[i].name);
    if (l && put_kv(buf, cap, &o, "flags", list) != 0) return STROBE_ERANGE;
    l = 0;
    list[0] = '\0';
    for (size_t i = 0; i < sizeof activity_names / sizeof activity_names[0]; i++)
        if (req->activities & activity_names[i].bit)
            l += (size_t)snprintf(list + l, sizeof list - l, "%s%s", l ? "," : "",
                                  activity_names[i].name);
    if (l && put_kv(buf, cap, &o, "activities", list) != 0) return STROBE_ERANGE;
    if (o + 2 > cap || o + 1 >= STROBE__OD_MAX_LINE) return STROBE_ERANGE;
    buf[o++] = '\n';
    buf[o] = '\0';
    return (int)o;
}

int strobe__od_socket_dir(char *buf, size_t cap) {
    const char *env = getenv("STROBE_RUNTIME_DIR");
    int n;
    if (env != NULL && env[0] != '\0') {
        n = snprintf(buf, cap, "%s", env);
    } else {
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        struct stat sb;
        if (xdg != NULL && xdg[0] == '/' && stat(xdg, &sb) == 0 && S_ISDIR(sb.st_mode) &&
            sb.st_uid == geteuid())
            n = snprintf(buf, cap, "%s/strobe", xdg);
        else
            n = snprintf(buf, cap, "/tmp/strobe-%lu", (unsigned long)geteuid());
    }
    return n < 0 || (size_t)n >= cap ? STROBE_ERANGE : 0;
}

int strobe__od_prepare_dir(const char *dir, int create, char *err, size_t errcap) {
    struct stat sb;
    if (lstat(dir, &sb) != 0) {
        if (errno != ENOENT || !create) {
            strobe__od_errf(err, errcap, "%s: %s", dir, strerror(errno));
            return STROBE_ESYS;
        }
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            strobe__od_errf(err, errcap, "cannot create %s: %s", dir, strerror(errno));
            return STROBE_ESYS;
        }
        if (lstat(dir, &sb) != 0) {
            strobe__od_errf(err, errcap, "%s: %s", dir, strerror(errno));
            return STROBE_ESYS;
        }
    }
    if (!S_ISDIR(sb.st_mode)) {
        strobe__od_errf(err, errcap, "%s is not a folder (a link or a file is refused)", dir);
        return STROBE_EINVAL;
    }
    if (sb.st_uid != geteuid()) {
        strobe__od_errf(err, errcap, "%s belongs to uid %lu, not to this user", dir,
                        (unsigned long)sb.st_uid);
        return STROBE_EINVAL;
    }
    if (sb.st_mode & 022) {
        strobe__od_errf(err, errcap, "%s is writable by other users (mode %03o)", dir,
                        (unsigned)(sb.st_mode & 0777));
        return STROBE_EINVAL;
    }
    return 0;
}
