/* profile_rd.c: "Profile" and "ProfileChunk" events read back as "cpu_sample" instants
 * (profile_rd.h).
 *
 * Contents: growing buffers; the profiles (nodes by id, time); reading a chunk's args with the
 * tokenizer; the samples' text. */
#include "profile_rd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_pull.h"
#include "strobe/error.h"

typedef struct node {
    int64_t id, parent; /* parent 0: none */
    char *frame;        /* "functionName (url:line)" ..., malloc'd; NULL for Chrome's "(root)" */
} node;

typedef struct profile {
    int64_t pid;
    char *id;
    int64_t t_ns; /* the last sample's time (ts units, ns), or the start */
    int has_t;
    node *nodes;
    size_t n, cap;
    /* Node ids -> index + 1 in nodes (open addressing, at most half full; 0: free), so that a
     * profile of many nodes with ids of any kind is read in linear time. */
    size_t *slots;
    size_t nslots;
} profile;

struct strobe__rd_prof {
    profile *v;
    size_t n, cap;
    /* The pending samples' texts, one after the other; ends[k] is where sample k's ends. */
    char *text;
    size_t len, text_cap;
    size_t *ends;
    size_t nends, ends_cap, next;
    uint64_t index;
    int64_t offset;
    char *stack; /* scratch: one sample's "Call stack" */
    size_t stack_cap;
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

static int put(strobe__rd_prof *p, const char *s, size_t n) {
    if (grow((void **)&p->text, &p->text_cap, p->len + n + 1, 1)) return STROBE_ENOMEM;
    memcpy(p->text + p->len, s, n);
    p->len += n;
    return 0;
}

static int put_lit(strobe__rd_prof *p, const char *s) {
    return put(p, s, strlen(s));
}

/* s[0..n) as a JSON string. */
static int put_string(strobe__rd_prof *p, const char *s, size_t n) {
    if (grow((void **)&p->text, &p->text_cap, p->len + 6 * n + 3, 1)) return STROBE_ENOMEM;
    char *o = p->text + p->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20) {
            o += snprintf(o, 7, "\\u%04x", c);
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    p->len = (size_t)(o - p->text);
    return 0;
}

/* ---- Reading ----------------------------------------------------------------------------- */

/* Skips the value whose first token is tok. @return 0, or -1 when the text ends or is bad. */
static int skip(strobe_jp *jp, int tok) {
    if (tok == STROBE_JP_OBJ_BEGIN || tok == STROBE_JP_ARR_BEGIN)
        tok = strobe_jp_skip_container(jp);
    return tok <= STROBE_JP_EOF ? -1 : 0;
}

static int num_int(const strobe_jp *jp, int tok, int64_t *out) {
    if (tok != STROBE_JP_NUMBER) return -1;
    char *end;
    long long v = strtoll(jp->num, &end, 10);
    if (end == jp->num || (*end != '\0' && *end != '.' && *end != 'e' && *end != 'E')) return -1;
    *out = v;
    return 0;
}

/* An array of numbers into *v (as integers, or as ns from microseconds when us). @return 0 or -1
 * (bad), STROBE_ENOMEM. */
static int read_numbers(strobe_jp *jp, int tok, int64_t **v, size_t *n, size_t *cap, int us) {
    if (tok != STROBE_JP_ARR_BEGIN) return skip(jp, tok) ? -1 : 0;
    while ((tok = strobe_jp_next(jp)) != STROBE_JP_ARR_END) {
        int64_t x = 0;
        if (tok != STROBE_JP_NUMBER) return -1;
        if (us ? strobe_rd_us_to_ns(jp->num, jp->num_len, &x) != 0 : num_int(jp, tok, &x) != 0)
            return -1;
        if (grow((void **)v, cap, *n + 1, sizeof **v)) return STROBE_ENOMEM;
        (*v)[(*n)++] = x;
    }
    return 0;
}

/* A callFrame object into "functionName (url:line)". */
static int read_frame(strobe_jp *jp, char **out) {
    char *fn = NULL, *url = NULL;
    int64_t line = -1;
    int tok, rc = 0;
    while (rc == 0 && (tok = strobe_jp_next(jp)) == STROBE_JP_KEY) {
        int which = strcmp(jp->str, "functionName") == 0 ? 1
                    : strcmp(jp->str, "url") == 0        ? 2
                    : strcmp(jp->str, "lineNumber") == 0 ? 3
                                                         : 0;
        tok = strobe_jp_next(jp);
        if ((which == 1 || which == 2) && tok == STROBE_JP_STRING) {
            char **dst = which == 1 ? &fn : &url;
            free(*dst);
            if ((*dst = strdup(jp->str)) == NULL) rc = STROBE_ENOMEM;
        } else if (which == 3 && tok == STROBE_JP_NUMBER) {
            if (num_int(jp, tok, &line)) line = -1;
        } else if (skip(jp, tok)) {
            rc = -1;
        }
    }
    if (rc == 0 && tok != STROBE_JP_OBJ_END) rc = -1;
    if (rc == 0) {
        const char *f = fn ? fn : "";
        int w = url && url[0] && line >= 0
                    ? asprintf(out, "%s (%s:%lld)", f, url, (long long)line + 1)
                : url && url[0] ? asprintf(out, "%s (%s)", f, url)
                                : asprintf(out, "%s", f);
        if (w < 0) {
            *out = NULL;
            rc = STROBE_ENOMEM;
        }
    }
    free(fn);
    free(url);
    return rc;
}

static size_t slot_of(const profile *f, int64_t id) {
    uint64_t h = (uint64_t)id * UINT64_C(0x9e3779b97f4a7c15);
    size_t k = (size_t)(h >> 17) & (f->nslots - 1);
    while (f->slots[k] && f->nodes[f->slots[k] - 1].id != id)
        k = (k + 1) & (f->nslots - 1);
    return k;
}

/* The index of node `id` in f->nodes, or f->n when there is none. */
static size_t index_of(const profile *f, int64_t id) {
    if (f->nslots == 0) return f->n;
    size_t k = slot_of(f, id);
    return f->slots[k] ? f->slots[k] - 1 : f->n;
}

/* Adds node index i (f->nodes[i], its id not yet in the table) to the table. */
static int index_add(profile *f, size_t i) {
    if (2 * (f->n + 1) > f->nslots) {
        size_t ns = f->nslots ? 2 * f->nslots : 64;
        while (2 * (f->n + 1) > ns)
            ns *= 2;
        size_t *sl = calloc(ns, sizeof *sl);
        if (sl == NULL) return STROBE_ENOMEM;
        free(f->slots);
        f->slots = sl;
        f->nslots = ns;
        for (size_t k = 0; k < f->n; k++)
            if (k != i) f->slots[slot_of(f, f->nodes[k].id)] = k + 1;
    }
    f->slots[slot_of(f, f->nodes[i].id)] = i + 1;
    return 0;
}

/* The nodes array into f (nodes already known by id are replaced). */
static int read_nodes(strobe_jp *jp, int tok, profile *f) {
    if (tok != STROBE_JP_ARR_BEGIN) return skip(jp, tok);
    while ((tok = strobe_jp_next(jp)) == STROBE_JP_OBJ_BEGIN) {
        node nd = {0, 0, NULL};
        int rc = 0, has_id = 0;
        while (rc == 0 && (tok = strobe_jp_next(jp)) == STROBE_JP_KEY) {
            int which = strcmp(jp->str, "id") == 0          ? 1
                        : strcmp(jp->str, "parent") == 0    ? 2
                        : strcmp(jp->str, "callFrame") == 0 ? 3
                                                            : 0;
            tok = strobe_jp_next(jp);
            if (which == 1)
                rc = num_int(jp, tok, &nd.id), has_id = rc == 0;
            else if (which == 2)
                rc = num_int(jp, tok, &nd.parent);
            else if (which == 3 && tok == STROBE_JP_OBJ_BEGIN)
                free(nd.frame), rc = read_frame(jp, &nd.frame);
            else
                rc = skip(jp, tok);
        }
        if (rc == 0 && tok != STROBE_JP_OBJ_END) rc = -1;
        if (rc == 0 && has_id && nd.parent == 0 && nd.frame && strcmp(nd.frame, "(root)") == 0) {
            free(nd.frame); /* Chrome's root: not a frame */
            nd.frame = NULL;
        }
        if (rc == 0 && has_id) {
            size_t k = index_of(f, nd.id);
            if (k < f->n) {
                free(f->nodes[k].frame); /* a node given again replaces the first */
                f->nodes[k] = nd;
                nd.frame = NULL;
            } else if (grow((void **)&f->nodes, &f->cap, f->n + 1, sizeof *f->nodes)) {
                rc = STROBE_ENOMEM;
            } else {
                f->nodes[f->n] = nd;
                nd.frame = NULL;
                rc = index_add(f, f->n);
                f->n++;
            }
        }
        free(nd.frame);
        if (rc) return rc;
    }
    return tok == STROBE_JP_ARR_END ? 0 : -1;
}

static const node *node_of(const profile *f, int64_t id) {
    size_t k = index_of(f, id);
    return k < f->n ? &f->nodes[k] : NULL;
}

static profile *profile_of(strobe__rd_prof *p, int64_t pid, const char *id) {
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i].pid == pid && strcmp(p->v[i].id, id) == 0) return &p->v[i];
    if (grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v)) return NULL;
    profile *f = &p->v[p->n];
    memset(f, 0, sizeof *f);
    f->pid = pid;
    if ((f->id = strdup(id)) == NULL) return NULL;
    p->n++;
    return f;
}

/* Writes a sample event's text: leaf node `leaf` at t_ns, line `line` (0: none). */
static int put_sample(strobe__rd_prof *p, const strobe_rd_event *ev, const profile *f, int64_t leaf,
                      int64_t line, int64_t t_ns) {
    /* The frames, innermost first; a cycle in bad input ends at the node count. */
    size_t sl = 0, depth = 0;
    const char *leaf_frame = NULL;
    for (const node *nd = node_of(f, leaf); nd && nd->frame && depth <= f->n;
         nd = nd->parent ? node_of(f, nd->parent) : NULL, depth++) {
        size_t fl = strlen(nd->frame);
        if (grow((void **)&p->stack, &p->stack_cap, sl + fl + 2, 1)) return STROBE_ENOMEM;
        if (sl) p->stack[sl++] = ';';
        memcpy(p->stack + sl, nd->frame, fl);
        sl += fl;
        if (leaf_frame == NULL) leaf_frame = nd->frame;
    }
    if (leaf_frame == NULL) return 0; /* the root or an unknown node: no frame to show */
    size_t name_len = strlen(leaf_frame);
    const char *loc = NULL;
    size_t loc_len = 0;
    if (name_len > 3 && leaf_frame[name_len - 1] == ')') {
        const char *o = strrchr(leaf_frame, '(');
        if (o && o > leaf_frame && o[-1] == ' ') {
            loc = o + 1;
            loc_len = (size_t)(leaf_frame + name_len - 1 - loc);
            name_len = (size_t)(o - 1 - leaf_frame);
        }
    }
    char num[64];
    int rc = put_lit(p, "{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_sample\", \"name\": ");
    if (rc == 0) rc = put_string(p, leaf_frame, name_len);
    if (rc == 0) rc = put_lit(p, ", \"pid\": ");
    if (rc == 0 && ev->pid.has_num) {
        rc = put(p, num, (size_t)snprintf(num, sizeof num, "%lld", (long long)ev->pid.num));
    } else if (rc == 0) {
        rc = put_string(p, ev->pid.str.s ? ev->pid.str.s : "", ev->pid.str.len);
    }
    if (rc == 0) rc = put_lit(p, ", \"tid\": ");
    if (rc == 0 && ev->tid.has_num) {
        rc = put(p, num, (size_t)snprintf(num, sizeof num, "%lld", (long long)ev->tid.num));
    } else if (rc == 0) {
        rc = put_string(p, ev->tid.str.s ? ev->tid.str.s : "", ev->tid.str.len);
    }
    int64_t a = t_ns < 0 ? -t_ns : t_ns;
    if (rc == 0)
        rc = put(p, num,
                 (size_t)snprintf(num, sizeof num, ", \"ts\": %s%lld.%03lld", t_ns < 0 ? "-" : "",
                                  (long long)(a / 1000), (long long)(a % 1000)));
    if (rc == 0) rc = put_lit(p, ", \"args\": {\"Call stack\": ");
    if (rc == 0) rc = put_string(p, p->stack, sl);
    if (rc == 0 && line > 0 && loc) {
        /* The leaf's file (its url, less a line of its own) and the sample's line. */
        size_t fl = loc_len;
        while (fl > 0 && loc[fl - 1] >= '0' && loc[fl - 1] <= '9')
            fl--;
        fl = fl < loc_len && fl > 0 && loc[fl - 1] == ':' ? fl - 1 : loc_len;
        int w = snprintf(num, sizeof num, ":%lld", (long long)line);
        size_t need = fl + (size_t)w;
        if (grow((void **)&p->stack, &p->stack_cap, need + 1, 1)) return STROBE_ENOMEM;
        memcpy(p->stack, loc, fl);
        memcpy(p->stack + fl, num, (size_t)w);
        rc = put_lit(p, ", \"Line\": ");
        if (rc == 0) rc = put_string(p, p->stack, need);
    }
    if (rc == 0) rc = put_lit(p, "}}");
    if (rc == 0 && grow((void **)&p->ends, &p->ends_cap, p->nends + 1, sizeof *p->ends))
        rc = STROBE_ENOMEM;
    if (rc == 0) p->ends[p->nends++] = p->len;
    return rc;
}

/* A chunk's (or a Profile's) args: {"data": {"startTime", "cpuProfile": {nodes, samples, lines},
 * "timeDeltas"}}. */
static int read_chunk(strobe__rd_prof *p, const strobe_rd_event *ev, profile *f) {
    strobe_jp jp;
    strobe_jp_init_mem(&jp, ev->args, ev->args_len);
    int64_t *samples = NULL, *lines = NULL, *deltas = NULL;
    size_t ns = 0, nl = 0, nd = 0, cs = 0, cl = 0, cd = 0;
    int rc = 0, tok = strobe_jp_next(&jp);
    if (tok != STROBE_JP_OBJ_BEGIN) rc = -1;
    while (rc == 0 && (tok = strobe_jp_next(&jp)) == STROBE_JP_KEY) {
        if (strcmp(jp.str, "data") != 0) {
            rc = skip(&jp, strobe_jp_next(&jp));
            continue;
        }
        if ((tok = strobe_jp_next(&jp)) != STROBE_JP_OBJ_BEGIN) {
            rc = skip(&jp, tok);
            continue;
        }
        while (rc == 0 && (tok = strobe_jp_next(&jp)) == STROBE_JP_KEY) {
            if (strcmp(jp.str, "startTime") == 0) {
                int64_t t;
                if ((tok = strobe_jp_next(&jp)) == STROBE_JP_NUMBER &&
                    strobe_rd_us_to_ns(jp.num, jp.num_len, &t) == 0) {
                    f->t_ns = t;
                    f->has_t = 1;
                } else {
                    rc = skip(&jp, tok);
                }
            } else if (strcmp(jp.str, "timeDeltas") == 0) {
                rc = read_numbers(&jp, strobe_jp_next(&jp), &deltas, &nd, &cd, 1);
            } else if (strcmp(jp.str, "cpuProfile") == 0) {
                if ((tok = strobe_jp_next(&jp)) != STROBE_JP_OBJ_BEGIN) {
                    rc = skip(&jp, tok);
                    continue;
                }
                while (rc == 0 && (tok = strobe_jp_next(&jp)) == STROBE_JP_KEY) {
                    if (strcmp(jp.str, "nodes") == 0)
                        rc = read_nodes(&jp, strobe_jp_next(&jp), f);
                    else if (strcmp(jp.str, "samples") == 0)
                        rc = read_numbers(&jp, strobe_jp_next(&jp), &samples, &ns, &cs, 0);
                    else if (strcmp(jp.str, "lines") == 0)
                        rc = read_numbers(&jp, strobe_jp_next(&jp), &lines, &nl, &cl, 0);
                    else
                        rc = skip(&jp, strobe_jp_next(&jp));
                }
            } else {
                rc = skip(&jp, strobe_jp_next(&jp));
            }
        }
    }
    /* What was read before a malformed part counts; the rest of the chunk is skipped. */
    if (!f->has_t && ev->has_ts) {
        f->t_ns = ev->ts_ns;
        f->has_t = 1;
    }
    for (size_t i = 0; i < ns && rc != STROBE_ENOMEM; i++) {
        if (i < nd) f->t_ns += deltas[i];
        int r2 = put_sample(p, ev, f, samples[i], i < nl ? lines[i] : 0, f->t_ns);
        if (r2) rc = r2;
    }
    strobe_jp_free(&jp);
    free(samples);
    free(lines);
    free(deltas);
    return rc == STROBE_ENOMEM ? rc : 0;
}

int strobe__rd_prof_feed(strobe__rd_prof **pp, const strobe_rd_event *ev) {
    if (ev->ph.len != 1 || ev->ph.s[0] != 'P' || ev->name.s == NULL ||
        (strcmp(ev->name.s, "Profile") != 0 && strcmp(ev->name.s, "ProfileChunk") != 0))
        return 0;
    strobe__rd_prof *p = *pp;
    if (p == NULL && (p = *pp = calloc(1, sizeof *p)) == NULL) return STROBE_ENOMEM;
    if (p->next == p->nends) p->next = p->nends = p->len = 0;
    char id[128] = "";
    if (ev->id.kind == STROBE_RD_ID_STRING && ev->id.str.len < sizeof id)
        memcpy(id, ev->id.str.s, ev->id.str.len + 1);
    else if (ev->id.has_num)
        snprintf(id, sizeof id, "%lld", (long long)ev->id.num);
    profile *f = profile_of(p, ev->pid.has_num ? ev->pid.num : 0, id);
    if (f == NULL) return STROBE_ENOMEM;
    p->index = ev->index;
    p->offset = ev->offset;
    int rc = ev->args ? read_chunk(p, ev, f) : 0;
    return rc ? rc : 1;
}

int strobe__rd_prof_next(strobe__rd_prof *p, const char **text, size_t *len, uint64_t *index,
                         int64_t *offset) {
    if (p == NULL || p->next >= p->nends) return 0;
    size_t a = p->next ? p->ends[p->next - 1] : 0;
    *text = p->text + a;
    *len = p->ends[p->next] - a;
    *index = p->index;
    *offset = p->offset;
    p->next++;
    return 1;
}

void strobe__rd_prof_free(strobe__rd_prof *p) {
    if (p == NULL) return;
    for (size_t i = 0; i < p->n; i++) {
        for (size_t k = 0; k < p->v[i].n; k++)
            free(p->v[i].nodes[k].frame);
        free(p->v[i].nodes);
        free(p->v[i].slots);
        free(p->v[i].id);
    }
    free(p->v);
    free(p->text);
    free(p->ends);
    free(p->stack);
    free(p);
}
