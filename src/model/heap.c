/* heap.c: strobe record --heap's allocation sites ("strobe_heap") read from a trace (heap.h).
 *
 * Contents: a small walker over the array's elements (the reader's strobe_rd_obj_get reads an
 * object's members, not an array's elements); reading and summing the processes. The table and
 * the report's JSON are the CLI's (cli/heap_print.c). */
#include "heap.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/trace_reader.h"
#include "strobe/error.h"

/* ---- the walker ----------------------------------------------------------------------------- */

/* The JSON value that starts at text[*pos] (after blanks): *val and *len get its text, *pos
 * moves past it and past the comma after it. @return 1, 0 at the end, -1 on bad JSON. */
static int next_value(const char *text, size_t end, size_t *pos, const char **val, size_t *len) {
    size_t i = *pos;
    while (i < end && strchr(" \t\r\n", text[i]))
        i++;
    if (i >= end) return 0;
    size_t start = i;
    int depth = 0, in_str = 0;
    for (; i < end; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth < 0) return -1;
        } else if (c == ',' && depth == 0) {
            break;
        }
    }
    if (depth != 0 || in_str) return -1;
    size_t stop = i;
    while (stop > start && strchr(" \t\r\n", text[stop - 1]))
        stop--;
    *val = text + start;
    *len = stop - start;
    *pos = i < end ? i + 1 : i;
    return 1;
}

static int64_t get_int(const char *obj, size_t len, const char *key) {
    strobe_rd_value v;
    int64_t x = 0;
    if (strobe_rd_obj_get(obj, len, key, &v) == 1 && strobe_rd_value_int(&v, &x) == 0) return x;
    return 0;
}

/* ---- reading -------------------------------------------------------------------------------- */

static int same_stack(const md_heap_site *a, char **frames, size_t n) {
    if (a->nframes != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(a->frames[i], frames[i]) != 0) return 0;
    return 1;
}

static void free_frames(char **frames, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(frames[i]);
    free(frames);
}

/* Adds one site object (obj, len) to h. @return 0, STROBE_EINVAL or STROBE_ENOMEM. */
static int add_site(md_heap *h, const char *obj, size_t len, size_t *cap) {
    strobe_rd_value st;
    char **frames = NULL;
    size_t nf = 0, fcap = 0;
    if (strobe_rd_obj_get(obj, len, "stack", &st) == 1 && st.type == STROBE_RD_T_ARRAY) {
        size_t pos = 1;
        const char *v;
        size_t vl;
        int r;
        while ((r = next_value(st.raw, st.len - 1, &pos, &v, &vl)) == 1) {
            strobe_rd_value sv = {STROBE_RD_T_STRING, v, vl};
            char buf[1024];
            if (vl < 2 || v[0] != '"' || strobe_rd_value_str(&sv, buf, sizeof buf, NULL) != 0)
                snprintf(buf, sizeof buf, "??");
            if (nf == fcap) {
                fcap = fcap ? 2 * fcap : 16;
                char **w = realloc(frames, fcap * sizeof *w);
                if (w == NULL) goto oom;
                frames = w;
            }
            if ((frames[nf] = strdup(buf)) == NULL) goto oom;
            nf++;
        }
        if (r < 0) {
            free_frames(frames, nf);
            return STROBE_EINVAL;
        }
    }
    md_heap_site *s = NULL;
    for (size_t i = 0; i < h->n && s == NULL; i++)
        if (same_stack(&h->sites[i], frames, nf)) s = &h->sites[i];
    if (s != NULL) {
        free_frames(frames, nf);
    } else {
        if (h->n == *cap) {
            size_t c2 = *cap ? 2 * *cap : 64;
            md_heap_site *w = realloc(h->sites, c2 * sizeof *w);
            if (w == NULL) goto oom;
            h->sites = w;
            *cap = c2;
        }
        s = &h->sites[h->n++];
        memset(s, 0, sizeof *s);
        s->frames = frames;
        s->nframes = nf;
    }
    s->calls += (uint64_t)get_int(obj, len, "calls");
    s->temporary += (uint64_t)get_int(obj, len, "temporary");
    s->bytes += get_int(obj, len, "bytes");
    s->peak += get_int(obj, len, "peak");
    s->leaked += get_int(obj, len, "leaked");
    return 0;
oom:
    free_frames(frames, nf);
    return STROBE_ENOMEM;
}

int md_heap_read(const char *json, md_heap *h) {
    memset(h, 0, sizeof *h);
    if (json == NULL) return 1;
    size_t end = strlen(json), pos = 0, cap = 0;
    const char *proc;
    size_t plen;
    int r, rc = 0;
    while (rc == 0 && (r = next_value(json, end, &pos, &proc, &plen)) == 1) {
        if (plen < 2 || proc[0] != '{') {
            rc = STROBE_EINVAL;
            break;
        }
        h->processes++;
        int64_t rate = get_int(proc, plen, "sample_rate");
        if (rate > h->sample_rate) h->sample_rate = rate;
        h->calls += (uint64_t)get_int(proc, plen, "calls");
        h->temporary += (uint64_t)get_int(proc, plen, "temporary");
        h->missed_calls += (uint64_t)get_int(proc, plen, "missed_calls");
        h->unmapped_blocks += (uint64_t)get_int(proc, plen, "unmapped_blocks");
        h->bytes += get_int(proc, plen, "bytes");
        h->leaked += get_int(proc, plen, "leaked");
        h->peak += get_int(proc, plen, "peak");
        h->missed_bytes += get_int(proc, plen, "missed_bytes");
        h->site_count += (uint64_t)get_int(proc, plen, "site_count");
        strobe_rd_value sv;
        if (strobe_rd_obj_get(proc, plen, "sites", &sv) != 1 || sv.type != STROBE_RD_T_ARRAY)
            continue;
        size_t sp = 1;
        const char *so;
        size_t sl;
        int q;
        while (rc == 0 && (q = next_value(sv.raw, sv.len - 1, &sp, &so, &sl)) == 1)
            rc = sl >= 2 && so[0] == '{' ? add_site(h, so, sl, &cap) : STROBE_EINVAL;
        if (rc == 0 && q < 0) rc = STROBE_EINVAL;
    }
    if (rc == 0 && r < 0) rc = STROBE_EINVAL;
    if (rc != 0) {
        md_heap_free(h);
        return rc;
    }
    return h->processes ? 0 : 1;
}

int64_t md_heap_rate(const char *json) {
    size_t end = json ? strlen(json) : 0, pos = 0;
    const char *proc;
    size_t plen;
    int64_t rate = 0;
    while (next_value(json, end, &pos, &proc, &plen) == 1) {
        int64_t r = plen >= 2 && proc[0] == '{' ? get_int(proc, plen, "sample_rate") : 0;
        if (r > rate) rate = r;
    }
    return rate;
}

int64_t md_heap_weigh(int64_t b, int64_t rate) {
    double m = b < 0 ? -(double)b : (double)b;
    if (rate <= 0 || m >= (double)rate || m == 0) return b;
    return (int64_t)llround((double)b / -expm1(-m / (double)rate));
}

void md_heap_free(md_heap *h) {
    for (size_t i = 0; i < h->n; i++)
        free_frames(h->sites[i].frames, h->sites[i].nframes);
    free(h->sites);
    memset(h, 0, sizeof *h);
}

static int by_peak(const void *a, const void *b) {
    const md_heap_site *x = a, *y = b;
    if (x->peak != y->peak) return x->peak > y->peak ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return 0;
}

static int by_bytes(const void *a, const void *b) {
    const md_heap_site *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->peak != y->peak) return x->peak > y->peak ? -1 : 1;
    return 0;
}

void md_heap_sort(md_heap *h, int peak) {
    if (h->n) qsort(h->sites, h->n, sizeof *h->sites, peak ? by_peak : by_bytes);
}
