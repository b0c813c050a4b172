/* json_profile.c: CPU samples as Chrome's "Profile" and "ProfileChunk" events (json_profile.h).
 *
 * Contents: growing arrays; a sample's frames out of its "Call stack" arg, Python frames one per
 * function; the profiles (one per track, a call tree each, nodes keyed by parent and frame);
 * writing them. */
#include "json_profile.h"

#include <stdlib.h>
#include <string.h>

#include "kineto.h"
#include "strobe/error.h"
#include "util/json_fmt.h"
#include "util/strpool.h"
#include "util/strtab.h"
#include "util/u64map.h"

/* Samples per "ProfileChunk": Chrome writes a chunk every few hundred samples; this keeps each
 * event line a few tens of kilobytes, far below what readers take in one piece. */
#define CHUNK_SAMPLES 1000u

typedef struct profile {
    uint32_t track;
    /* Node k (id k + 1) has parent parent[k] (an id; 0 for the root, node 0, "(root)") and frame
     * frame[k] (an id in frames). */
    uint32_t *parent, *frame;
    size_t nodes, node_cap;
    strobe__u64map children; /* (parent id << 32 | frame) -> node id */
    uint32_t *leaf, *line;   /* per sample: its leaf node id, its line (0: unknown) */
    int64_t *ts;             /* per sample: epoch ns */
    size_t n, cap;
} profile;

struct strobe__json_profiles {
    profile *v;
    size_t n, cap;
    strobe__u64map by_track; /* track -> index in v + 1 */
    strobe__pool pool;
    strobe__strtab frames;
    char *text; /* the "Call stack" being split, unescaped */
    size_t text_cap;
    char *frame; /* a Python frame rewritten as "function (file)" */
    size_t frame_cap;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (q == NULL) return STROBE_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

/* ---- A sample's frames ------------------------------------------------------------------- */

/* The value of string arg `key` of e: its bytes (JSON text still escaped when *json), or NULL. */
static const char *arg_of(const strobe__wr_event *e, const char *key, size_t *len, int *json) {
    for (size_t i = 0; i < e->nargs; i++) {
        const strobe__wr_arg *a = &e->args[i];
        if (a->name == NULL || a->s == NULL || strcmp(a->name, key) != 0) continue;
        if (a->type != STROBE__PFT_STRING && a->type != STROBE__PFT_JSON) return NULL;
        *len = a->slen == (size_t)-1 ? strlen(a->s) : a->slen;
        *json = a->type == STROBE__PFT_JSON;
        if (*json && (*len < 2 || a->s[0] != '"')) return NULL; /* not a JSON string */
        return a->s;
    }
    return NULL;
}

static unsigned hex4(const char *c) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char h = c[k];
        v = v * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
    }
    return v;
}

/* Unescapes JSON string text s[0..len) (with its quotes) into out (room for len bytes: no escape
 * grows). @return the bytes written. */
static size_t unescape(const char *s, size_t len, char *out) {
    size_t n = 0;
    const char *end = s + len - 1; /* the closing quote */
    for (const char *c = s + 1; c < end; c++) {
        if (*c != '\\') {
            out[n++] = *c;
            continue;
        }
        if (++c >= end) break;
        switch (*c) {
        case 'n':
            out[n++] = '\n';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 'b':
            out[n++] = '\b';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case 'u': {
            /* UTF-8 of a code point of the Basic Multilingual Plane (6 escaped bytes give at most
             * 3); a surrogate becomes U+FFFD. */
            if (end - c < 5) return n;
            unsigned v = hex4(c + 1);
            c += 4;
            if (v >= 0xd800 && v < 0xe000) v = 0xfffd;
            if (v < 0x80) {
                out[n++] = (char)v;
            } else if (v < 0x800) {
                out[n++] = (char)(0xc0 | (v >> 6));
                out[n++] = (char)(0x80 | (v & 0x3f));
            } else {
                out[n++] = (char)(0xe0 | (v >> 12));
                out[n++] = (char)(0x80 | ((v >> 6) & 0x3f));
                out[n++] = (char)(0x80 | (v & 0x3f));
            }
            break;
        }
        default: /* '"', '\\', '/' */
            out[n++] = *c;
            break;
        }
    }
    return n;
}

/* The line that ends "file:LINE" text t[0..n), 0 where it has none. */
static uint32_t line_of(const char *t, size_t n) {
    size_t i = n;
    while (i > 0 && t[i - 1] >= '0' && t[i - 1] <= '9')
        i--;
    if (i == n || i == 0 || t[i - 1] != ':' || n - i > 9) return 0;
    uint32_t v = 0;
    for (; i < n; i++)
        v = v * 10 + (uint32_t)(t[i] - '0');
    return v;
}

size_t strobe__py_frame_by_function(const char *t, size_t n, char *out, uint32_t *line) {
    for (size_t i = 1; i < n; i++) {
        if (t[i] != '(') continue;
        size_t j = i + 1;
        uint32_t v = 0;
        while (j < n && j - i <= 9 && t[j] >= '0' && t[j] <= '9')
            v = v * 10 + (uint32_t)(t[j++] - '0');
        if (j == i + 1 || j + 3 >= n || t[j] != ')' || t[j + 1] != ':' || t[j + 2] != ' ') continue;
        /* "function (file)": the function from j + 3 on, then the file t[0..i). */
        size_t func_n = n - (j + 3), k = func_n;
        memmove(out, t + j + 3, func_n);
        out[k++] = ' ';
        out[k++] = '(';
        memcpy(out + k, t, i);
        k += i;
        out[k++] = ')';
        *line = v;
        return k;
    }
    return 0;
}

/* ---- The profiles ------------------------------------------------------------------------ */

static profile *profile_of(strobe__json_profiles *p, uint32_t track) {
    int inserted = 0;
    uint64_t *slot = strobe__u64map_put(&p->by_track, track, &inserted);
    if (slot == NULL) return NULL;
    if (!inserted) return &p->v[*slot - 1];
    if (grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v)) return NULL;
    profile *f = &p->v[p->n];
    memset(f, 0, sizeof *f);
    f->track = track;
    /* The root, as Chrome names it. */
    int64_t root = strobe__strtab_intern(&p->frames, "(root)", 6);
    if (root < 0 || grow((void **)&f->parent, &f->node_cap, 1, sizeof *f->parent) ||
        (f->frame = malloc(f->node_cap * sizeof *f->frame)) == NULL)
        return NULL;
    f->parent[0] = 0;
    f->frame[0] = (uint32_t)root;
    f->nodes = 1;
    *slot = ++p->n;
    return f;
}

/* The child of node `parent` (an id) for frame `frame`, added when new. @return its id, 0 on
 * ENOMEM. */
static uint32_t child(profile *f, uint32_t parent, uint32_t frame) {
    int inserted = 0;
    uint64_t *slot = strobe__u64map_put(&f->children, (uint64_t)parent << 32 | frame, &inserted);
    if (slot == NULL) return 0;
    if (!inserted) return (uint32_t)*slot;
    size_t cap = f->node_cap;
    if (grow((void **)&f->parent, &f->node_cap, f->nodes + 1, sizeof *f->parent)) return 0;
    if (f->node_cap != cap) {
        uint32_t *fr = realloc(f->frame, f->node_cap * sizeof *fr);
        if (fr == NULL) return 0;
        f->frame = fr;
    }
    f->parent[f->nodes] = parent;
    f->frame[f->nodes] = frame;
    *slot = ++f->nodes;
    return (uint32_t)*slot;
}

int strobe__json_profiles_add(strobe__json_profiles **pp, const strobe__wr_event *e) {
    strobe__json_profiles *p = *pp;
    if (p == NULL) {
        if ((p = calloc(1, sizeof *p)) == NULL) return STROBE_ENOMEM;
        strobe__strtab_init(&p->frames, &p->pool);
        *pp = p;
    }
    profile *f = profile_of(p, e->track);
    if (f == NULL) return STROBE_ENOMEM;
    size_t len = 0;
    int json = 0;
    const char *stack = arg_of(e, STROBE_KINETO_ARG_CALL_STACK, &len, &json);
    if (stack == NULL) stack = "", len = 0, json = 0;
    if (grow((void **)&p->text, &p->text_cap, len + 1, 1)) return STROBE_ENOMEM;
    size_t n = json ? unescape(stack, len, p->text) : len;
    if (!json) memcpy(p->text, stack, len);
    /* Frames are innermost first: the tree is walked from the root, outermost first. A Python
     * frame becomes "function (file)", one node per function as native frames are (their line
     * is cut when they are symbolized: core/collect.c), which write_node turns into Chrome's
     * functionName and url; the innermost frame's line goes with the sample, as "lines". */
    uint32_t node = 1, py_line = 0;
    size_t end = n;
    while (n > 0) {
        size_t start = end;
        while (start > 0 && p->text[start - 1] != ';')
            start--;
        const char *ft = p->text + start;
        size_t fn = end - start;
        uint32_t fl;
        if (grow((void **)&p->frame, &p->frame_cap, fn + 1, 1)) return STROBE_ENOMEM;
        size_t pn = strobe__py_frame_by_function(ft, fn, p->frame, &fl);
        if (pn > 0) {
            ft = p->frame;
            fn = pn;
            if (start == 0) py_line = fl;
        }
        int64_t fr = strobe__strtab_intern(&p->frames, ft, fn);
        if (fr < 0) return STROBE_ENOMEM;
        node = child(f, node, (uint32_t)fr);
        if (node == 0) return STROBE_ENOMEM;
        if (start == 0) break;
        end = start - 1;
    }
    uint32_t line = 0;
    const char *l = arg_of(e, STROBE_KINETO_ARG_SAMPLE_LINE, &len, &json);
    if (l && json) {
        char buf[512];
        if (len < sizeof buf) line = line_of(buf, unescape(l, len, buf));
    } else if (l) {
        line = line_of(l, len);
    }
    if (line == 0) line = py_line;
    size_t cap = f->cap;
    if (grow((void **)&f->leaf, &f->cap, f->n + 1, sizeof *f->leaf)) return STROBE_ENOMEM;
    if (f->cap != cap) {
        uint32_t *li = realloc(f->line, f->cap * sizeof *li);
        if (li) f->line = li;
        int64_t *ts = li ? realloc(f->ts, f->cap * sizeof *ts) : NULL;
        if (ts) f->ts = ts;
        if (li == NULL || ts == NULL) {
            f->cap = cap; /* the old arrays stay as they were */
            return STROBE_ENOMEM;
        }
    }
    f->leaf[f->n] = node;
    f->line[f->n] = line;
    f->ts[f->n] = e->ts;
    f->n++;
    return 0;
}

/* ---- Writing ----------------------------------------------------------------------------- */

/* Microseconds since the base, rounded down: the profile's clock (Chrome's timeDeltas and
 * startTime are integer microseconds on the trace's clock). */
static int64_t us_of(int64_t ns, int64_t base) {
    int64_t d = ns - base;
    return d >= 0 ? d / 1000 : -((-d + 999) / 1000);
}

static char *put_u32(char *p, uint32_t v) {
    char tmp[12];
    int k = 0;
    do
        tmp[k++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (k > 0)
        *p++ = tmp[--k];
    return p;
}

#define LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) + sizeof(s) - 1)

/* The head of a profile event, up to and including its "args": {"data": {. */
static char *event_head(char *p, int *first, const char *name, uint32_t id,
                        const strobe__wr_track *t, int64_t ts, int64_t base) {
    p = *first ? LIT(p, "  {\"ph\": \"P\", \"cat\": \"")
               : LIT(p, ",\n  {\"ph\": \"P\", \"cat\": \"");
    *first = 0;
    p = LIT(p, STROBE_JSON_PROFILE_CAT "\", \"name\": \"");
    memcpy(p, name, strlen(name));
    p += strlen(name);
    p = LIT(p, "\", \"id\": \"0x");
    static const char hex[] = "0123456789abcdef";
    char tmp[8];
    int k = 0;
    do
        tmp[k++] = hex[id & 15];
    while ((id >>= 4) != 0);
    while (k > 0)
        *p++ = tmp[--k];
    p = LIT(p, "\", \"pid\": ");
    p = put_i64(p, t->pid);
    p = LIT(p, ", \"tid\": ");
    p = put_i64(p, t->tid);
    p = LIT(p, ", \"ts\": ");
    p = strobe__json_put_ts(p, ts, base);
    return LIT(p, ", \"args\": {\"data\": {");
}

/* Node k's object: {"id", "parent", "callFrame"}. */
static int write_node(strobe__sink *s, const strobe__json_profiles *pr, const profile *f, size_t k,
                      int comma) {
    const char *fr = strobe__strtab_str(&pr->frames, f->frame[k]);
    size_t n = pr->frames.lens[f->frame[k]], name_n = n, url_at = n, url_n = 0;
    uint32_t line = 0;
    /* "name (file)" or "name (file:line)": the location is the last " (...)". */
    if (k > 0 && n > 3 && fr[n - 1] == ')') {
        size_t o = n - 1;
        while (o > 0 && fr[o] != '(')
            o--;
        if (o >= 1 && fr[o] == '(' && fr[o - 1] == ' ' && o + 1 < n - 1) {
            name_n = o - 1;
            url_at = o + 1;
            url_n = n - 1 - url_at;
            line = line_of(fr + url_at, url_n);
            if (line) {
                while (fr[url_at + url_n - 1] != ':')
                    url_n--;
                url_n--;
            }
        }
    }
    char *p = strobe__sink_reserve(s, STROBE__JSON_STRING_MAX(name_n) +
                                          STROBE__JSON_STRING_MAX(url_n) + 200);
    if (p == NULL) return s->err;
    p = comma ? LIT(p, ", {\"id\": ") : LIT(p, "{\"id\": ");
    p = put_u32(p, (uint32_t)k + 1);
    if (k > 0) {
        p = LIT(p, ", \"parent\": ");
        p = put_u32(p, f->parent[k]);
    }
    p = LIT(p, ", \"callFrame\": {\"functionName\": ");
    p = strobe__json_put_string(p, fr, name_n);
    p = LIT(p, ", \"url\": ");
    p = strobe__json_put_string(p, fr + url_at, url_n);
    p = LIT(p, ", \"scriptId\": 0, \"lineNumber\": ");
    p = line ? put_u32(p, line - 1) : LIT(p, "-1");
    strobe__sink_commit(s, LIT(p, ", \"columnNumber\": -1}}"));
    return 0;
}

/* A list of one number per sample of [a, b): leaf ids (which 0), lines (1), or time deltas (2). */
static int write_numbers(strobe__sink *s, const profile *f, size_t a, size_t b, int which,
                         int64_t *prev_us, int64_t base) {
    for (size_t i = a; i < b; i++) {
        char *p = strobe__sink_reserve(s, 32);
        if (p == NULL) return s->err;
        if (i > a) p = LIT(p, ", ");
        if (which == 0) {
            p = put_u32(p, f->leaf[i]);
        } else if (which == 1) {
            p = put_u32(p, f->line[i]);
        } else {
            int64_t us = us_of(f->ts[i], base);
            p = put_i64(p, us - *prev_us);
            *prev_us = us;
        }
        strobe__sink_commit(s, p);
    }
    return 0;
}

static int write_profile(strobe__json_profiles *pr, const profile *f, uint32_t id,
                         strobe__writer *w, int *first) {
    strobe__sink *s = w->out;
    const strobe__wr_track *t = &w->tracks[f->track];
    int64_t base = w->base_ns, start_us = us_of(f->ts[0], base);
    char *p = strobe__sink_reserve(s, 512);
    if (p == NULL) return s->err;
    p = event_head(p, first, "Profile", id, t, f->ts[0], base);
    p = LIT(p, "\"startTime\": ");
    p = put_i64(p, start_us);
    strobe__sink_commit(s, LIT(p, "}}}"));
    size_t written = 1; /* nodes written so far (the root goes with the first chunk) */
    int64_t prev_us = start_us;
    int rc = 0;
    for (size_t a = 0; a < f->n && rc == 0; a += CHUNK_SAMPLES) {
        size_t b = f->n - a < CHUNK_SAMPLES ? f->n : a + CHUNK_SAMPLES;
        /* The nodes the chunk's samples reach that no earlier chunk had: a node's ancestors have
         * smaller ids, so all ids up to the chunk's largest leaf. */
        size_t upto = written;
        for (size_t i = a; i < b; i++)
            if (f->leaf[i] > upto) upto = f->leaf[i];
        if ((p = strobe__sink_reserve(s, 512)) == NULL) return s->err;
        p = event_head(p, first, "ProfileChunk", id, t, f->ts[a], base);
        strobe__sink_commit(s, LIT(p, "\"cpuProfile\": {\"nodes\": ["));
        for (size_t k = a == 0 ? 0 : written; k < upto && rc == 0; k++)
            rc = write_node(s, pr, f, k, k > (a == 0 ? 0 : written));
        if (rc == 0 && (p = strobe__sink_reserve(s, 64)) != NULL)
            strobe__sink_commit(s, LIT(p, "], \"samples\": ["));
        if (rc == 0) rc = write_numbers(s, f, a, b, 0, NULL, base);
        if (rc == 0 && (p = strobe__sink_reserve(s, 64)) != NULL)
            strobe__sink_commit(s, LIT(p, "], \"lines\": ["));
        if (rc == 0) rc = write_numbers(s, f, a, b, 1, NULL, base);
        if (rc == 0 && (p = strobe__sink_reserve(s, 64)) != NULL)
            strobe__sink_commit(s, LIT(p, "]}, \"timeDeltas\": ["));
        if (rc == 0) rc = write_numbers(s, f, a, b, 2, &prev_us, base);
        if (rc == 0 && (p = strobe__sink_reserve(s, 8)) != NULL)
            strobe__sink_commit(s, LIT(p, "]}}}"));
        written = upto;
        if (rc == 0) rc = s->err;
    }
    return rc ? rc : s->err;
}

int strobe__json_profiles_write(strobe__json_profiles *p, strobe__writer *w, int *first) {
    if (p == NULL) return 0;
    int rc = 0;
    for (size_t i = 0; i < p->n && rc == 0; i++)
        if (p->v[i].n) rc = write_profile(p, &p->v[i], (uint32_t)i + 1, w, first);
    return rc;
}

void strobe__json_profiles_free(strobe__json_profiles *p) {
    if (p == NULL) return;
    for (size_t i = 0; i < p->n; i++) {
        profile *f = &p->v[i];
        free(f->parent);
        free(f->frame);
        free(f->leaf);
        free(f->line);
        free(f->ts);
        strobe__u64map_free(&f->children);
    }
    free(p->v);
    free(p->text);
    free(p->frame);
    strobe__u64map_free(&p->by_track);
    strobe__strtab_release(&p->frames);
    strobe__pool_release(&p->pool);
    free(p);
}
