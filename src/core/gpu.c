/* gpu.c: device activity into result events (see gpu.h).
 *
 * Contents:
 *   1. Small helpers: correlation id lookups, args in the result's pool.
 *   2. strobe__gpu_occupancy and strobe__gpu_copy_name.
 *   3. Host records: placing runtime/driver/sync/overhead calls as leaves of the CPU tree.
 *   4. Device records: one track per (device, stream), with gpu_user_annotation spans.
 *   5. Rebuilding the event array (threads stay contiguous, links are remapped), and
 *      strobe__gpu_merge itself.
 *
 * The merge never re-derives CPU nesting from times: the recorded tree is kept as it is, and
 * each host call becomes a leaf of the innermost recorded range that contains it (or of another
 * host call that contains it: a driver call inside its runtime call). A call that would overlap a
 * recorded sibling without nesting is cut at that sibling's edge, and counted in
 * stats.clipped_backend_events, so that the tree stays well formed whatever the clocks said. */
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/bigmem.h"
#include "trace/result_internal.h"
#include "trace/kineto.h"
#include "strobe/error.h"
#include "strobe/instrument.h"
#include "util/u64map.h"

#define NONE STROBE_NO_EVENT

/* ---- 1. Helpers ------------------------------------------------------------------------------ */

/* Correlation id -> value maps (util/u64map.h); id 0 means none and is never a key. */
static void corrmap_put(strobe__u64map *m, uint32_t key, uint64_t val, int *oom) {
    if (key == 0) return;
    int fresh;
    uint64_t *v = strobe__u64map_put(m, key, &fresh);
    if (v == NULL)
        *oom = 1;
    else if (fresh) /* the first insert wins */
        *v = val;
}

static int corrmap_get(const strobe__u64map *m, uint32_t key, uint64_t *val) {
    const uint64_t *v = key ? strobe__u64map_get(m, key) : NULL;
    if (v) *val = *v;
    return v != NULL;
}

/* Adds an arg to an event that is not yet in r->events. `key` is a literal; `json` is copied into
 * the pool. */
static int add_arg(strobe_result *r, strobe_event *e, const char *key, const char *json) {
    return strobe__event_add_arg(r, e, key, json, 1, 1);
}

static int add_arg_u64(strobe_result *r, strobe_event *e, const char *key, uint64_t v) {
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    return add_arg(r, e, key, num);
}

static int add_arg_i64(strobe_result *r, strobe_event *e, const char *key, int64_t v) {
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)v);
    return add_arg(r, e, key, num);
}

/* A finite double with a '.' whatever the locale (printf follows LC_NUMERIC). */
static int add_arg_f(strobe_result *r, strobe_event *e, const char *key, double v) {
    char num[48];
    if (!(v == v) || v > 1e300 || v < -1e300) v = 0;
    snprintf(num, sizeof num, "%.6f", v);
    for (char *p = num; *p; p++)
        if (*p == ',') *p = '.';
    return add_arg(r, e, key, num);
}

/* ---- 2. Occupancy and copy names ------------------------------------------------------------- */

/* The limits follow the CUDA occupancy calculator, simplified: registers are allocated per warp
 * in units of 256, shared memory per block without the driver's reserved 1 KiB; the resident
 * blocks per SM are the smallest of the four limits (warps, blocks, registers, shared memory). */
double strobe__gpu_occupancy(const strobe__gpu_device *dev, const strobe__gpu_act *k) {
    if (dev == NULL || k == NULL || dev->warp_size <= 0 || dev->max_threads_per_sm <= 0) return 0;
    int64_t threads = (int64_t)k->block[0] * k->block[1] * k->block[2];
    if (threads <= 0) return 0;
    int64_t warp = dev->warp_size;
    int64_t warps_per_block = (threads + warp - 1) / warp;
    int64_t max_warps = dev->max_threads_per_sm / warp;
    if (max_warps <= 0) return 0;
    int64_t blocks = max_warps / warps_per_block;
    if (dev->max_blocks_per_sm > 0 && blocks > dev->max_blocks_per_sm)
        blocks = dev->max_blocks_per_sm;
    if (k->registers_per_thread > 0 && dev->regs_per_sm > 0) {
        int64_t per_warp = ((int64_t)k->registers_per_thread * warp + 255) / 256 * 256;
        int64_t per_block = per_warp * warps_per_block;
        if (dev->regs_per_block > 0 && per_block > dev->regs_per_block) return 0;
        int64_t by_regs = dev->regs_per_sm / per_block;
        if (blocks > by_regs) blocks = by_regs;
    }
    int64_t smem = (int64_t)k->static_shared + k->dynamic_shared;
    if (smem > 0 && dev->shared_mem_per_sm > 0) {
        int64_t limit = dev->shared_mem_per_block_optin > 0 ? dev->shared_mem_per_block_optin
                                                            : dev->shared_mem_per_block;
        if (limit > 0 && smem > limit) return 0;
        int64_t by_smem = dev->shared_mem_per_sm / smem;
        if (blocks > by_smem) blocks = by_smem;
    }
    if (blocks <= 0) return 0;
    double occ = (double)(blocks * warps_per_block) / (double)max_warps;
    return occ > 1 ? 1 : occ;
}

static const char *copy_kind_name(unsigned k) {
    static const char *const names[] = STROBE_KINETO_MEMCPY_KIND_NAMES;
    return k < sizeof names / sizeof names[0] ? names[k] : "Unknown";
}

static const char *mem_kind_name(unsigned k) {
    static const char *const names[] = STROBE_KINETO_MEMORY_KIND_NAMES;
    return k < sizeof names / sizeof names[0] ? names[k] : "Unknown";
}

void strobe__gpu_copy_name(const strobe__gpu_act *a, char *buf, size_t size) {
    if (buf == NULL || size == 0) return;
    if (a->kind == STROBE__GPU_MEMSET)
        snprintf(buf, size, "Memset (%s)", mem_kind_name(a->dst_kind));
    else
        snprintf(buf, size, "Memcpy %s (%s -> %s)", copy_kind_name(a->copy_kind),
                 mem_kind_name(a->src_kind), mem_kind_name(a->dst_kind));
}

/* ---- 3. Host records ------------------------------------------------------------------------- */

/* A host record as a CPU event, waiting to be inserted. */
typedef struct hev {
    strobe_event e;
    const strobe__gpu_act *a;
    int64_t launch_ns;   /* the call's start as recorded (before any cut) */
    uint32_t thread;     /* result thread index (possibly a new one) */
    uint32_t parent_old; /* innermost recorded range containing it, or NONE */
    uint32_t parent_new; /* the host record it nests in, or NONE */
    uint32_t first_new, last_new, next_new;
} hev;

static int is_host(uint8_t kind) {
    return kind >= STROBE__GPU_RUNTIME && kind <= STROBE__GPU_OVERHEAD;
}

static int is_dev(uint8_t kind) {
    return kind <= STROBE__GPU_MEMSET;
}

static int cmp_host(const void *x, const void *y) {
    const strobe__gpu_act *a = *(const strobe__gpu_act *const *)x;
    const strobe__gpu_act *b = *(const strobe__gpu_act *const *)y;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1; /* outer first */
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;         /* runtime over driver */
    return 0;
}

/* Sorts a thread's tree events (not counters) by start, for the binary search. */
static int cmp_index(const void *x, const void *y, void *ctx) {
    const strobe_event *sort_events = ctx;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    const strobe_event *ea = &sort_events[a], *eb = &sort_events[b];
    if (ea->start_ns != eb->start_ns) return ea->start_ns < eb->start_ns ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int contains(const strobe_event *p, int64_t start, int64_t end) {
    return p->kind == STROBE_EVENT_RANGE && p->start_ns <= start && end <= p->end_ns;
}

typedef struct merge_ctx {
    strobe_result *r;
    hev *h; /* host records in window, grouped by tid, sorted */
    size_t nh;
    uint32_t *oldkid;      /* per recorded event: its first new child, NONE */
    uint32_t *oldlast;     /* per recorded event: its last new child */
    uint32_t *thread_root; /* per result thread (old and new): its first new root */
    uint32_t *thread_new;  /* per result thread: how many new events it gets */
    uint64_t next_fresh;   /* the next fresh "External id" */
    uint64_t clipped;
} merge_ctx;

/* Orders a thread's new events by their recorded parent, then start (outer first). */
static int cmp_placed(const void *x, const void *y, void *ctx) {
    const hev *sort_hev = ctx;
    const hev *a = &sort_hev[*(const uint32_t *)x], *b = &sort_hev[*(const uint32_t *)y];
    if (a->parent_old != b->parent_old) return a->parent_old < b->parent_old ? -1 : 1;
    if (a->e.start_ns != b->e.start_ns) return a->e.start_ns < b->e.start_ns ? -1 : 1;
    if (a->e.end_ns != b->e.end_ns) return a->e.end_ns > b->e.end_ns ? -1 : 1;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

/* Places the host records of one thread (h[i0..i1)) in its tree, in two steps. First each gets
 * its recorded parent (the innermost recorded range containing it) and is cut to fit in the gap
 * between that parent's recorded children where it starts. Then the records sharing a recorded
 * parent nest among themselves by time, each cut to fit in the one it starts in. */
static int place_thread(merge_ctx *c, size_t i0, size_t i1, uint32_t ti, int existing) {
    strobe_result *r = c->r;
    const strobe_event *ev = r->events;
    uint32_t *ord = NULL, n = 0, first_root = NONE;
    if (existing) {
        const strobe_thread_info *t = &r->threads[ti];
        ord = malloc((t->event_count ? t->event_count : 1) * sizeof *ord);
        if (ord == NULL) return STROBE_ENOMEM;
        for (size_t k = t->first_event; k < t->first_event + t->event_count; k++)
            if (ev[k].kind != STROBE_EVENT_COUNTER) ord[n++] = (uint32_t)k;
        for (uint32_t k = 0; k < n && first_root == NONE; k++)
            if (ev[ord[k]].parent == NONE) first_root = ord[k];
        if (n) qsort_r(ord, n, sizeof *ord, cmp_index, (void *)ev);
    }
    size_t m = i1 - i0;
    uint32_t *ix = malloc(m * sizeof *ix), *stack = malloc(m * sizeof *stack), depth = 0;
    if (ix == NULL || stack == NULL) {
        free(ord);
        free(ix);
        free(stack);
        return STROBE_ENOMEM;
    }
    for (size_t i = i0; i < i1; i++) {
        hev *x = &c->h[i];
        strobe_event *e = &x->e;
        e->thread_index = ti;
        ix[i - i0] = (uint32_t)i;
        /* The last recorded event starting at or before it; the innermost recorded range that
         * contains it is that event or one of its ancestors. */
        uint32_t lo = 0, hi = n;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (ev[ord[mid]].start_ns <= e->start_ns)
                lo = mid + 1;
            else
                hi = mid;
        }
        uint32_t j = lo ? ord[lo - 1] : NONE, p = j;
        while (p != NONE && !contains(&ev[p], e->start_ns, e->end_ns))
            p = ev[p].parent;
        x->parent_old = p;
        x->parent_new = NONE;
        /* The recorded children of p before and after its start bound it. */
        uint32_t prev = NONE, next;
        if (j != NONE && j != p) {
            prev = j;
            while (prev != NONE && ev[prev].parent != p)
                prev = ev[prev].parent;
        }
        next = prev != NONE ? ev[prev].next_sibling : (p != NONE ? ev[p].first_child : first_root);
        int cut = 0;
        if (prev != NONE && ev[prev].end_ns > e->start_ns) {
            e->start_ns = ev[prev].end_ns;
            cut = 1;
        }
        if (next != NONE && e->end_ns > ev[next].start_ns) {
            e->end_ns = ev[next].start_ns;
            cut = 1;
        }
        if (e->end_ns < e->start_ns) e->end_ns = e->start_ns;
        c->clipped += (uint64_t)cut;
    }
    qsort_r(ix, m, sizeof *ix, cmp_placed, (void *)c->h);
    uint32_t root_last = NONE;
    for (size_t k = 0; k < m; k++) {
        uint32_t self = ix[k];
        hev *x = &c->h[self];
        strobe_event *e = &x->e;
        if (k == 0 || c->h[ix[k - 1]].parent_old != x->parent_old) depth = 0;
        while (depth && c->h[stack[depth - 1]].e.end_ns <= e->start_ns)
            depth--;
        if (depth) {
            /* Inside the call on top (same start or later, as sorted). */
            hev *top = &c->h[stack[depth - 1]];
            if (e->end_ns > top->e.end_ns) {
                e->end_ns = top->e.end_ns;
                c->clipped++;
            }
            x->parent_new = stack[depth - 1];
        }
        /* Link it after the last new child of its parent (they come in start order). */
        uint32_t *head, *tail;
        if (x->parent_new != NONE) {
            head = &c->h[x->parent_new].first_new;
            tail = &c->h[x->parent_new].last_new;
        } else if (x->parent_old != NONE) {
            head = &c->oldkid[x->parent_old];
            tail = &c->oldlast[x->parent_old];
        } else {
            head = &c->thread_root[ti];
            tail = &root_last;
        }
        if (*head == NONE)
            *head = self;
        else
            c->h[*tail].next_new = self;
        *tail = self;
        stack[depth++] = self;
        c->thread_new[ti]++;
    }
    free(ix);
    free(stack);
    free(ord);
    return 0;
}

/* The "External id" of a host call: the innermost enclosing recorded range's, else the external
 * correlation record's, else (for a call with device work) a fresh id given to that range. */
static uint64_t external_id(merge_ctx *c, const hev *x, const strobe__u64map *ext, int has_work) {
    strobe_event *ev = c->r->events;
    for (uint32_t p = x->parent_old; p != NONE; p = ev[p].parent)
        if (ev[p].correlation_id) return ev[p].correlation_id;
    uint64_t id = 0;
    if (corrmap_get(ext, x->a->correlation, &id) && id) return id;
    if (!has_work) return 0;
    id = c->next_fresh++;
    if (x->parent_old != NONE) ev[x->parent_old].correlation_id = id;
    return id;
}

static const char *host_category(uint8_t kind) {
    switch (kind) {
    case STROBE__GPU_RUNTIME:
        return STROBE_KINETO_CAT_CUDA_RUNTIME;
    case STROBE__GPU_DRIVER:
        return STROBE_KINETO_CAT_CUDA_DRIVER;
    case STROBE__GPU_SYNC:
        return STROBE_KINETO_CAT_CUDA_SYNC;
    default:
        return STROBE_KINETO_CAT_OVERHEAD;
    }
}

/* ---- 4. Device records ----------------------------------------------------------------------- */

typedef struct dev_ev {
    strobe_event e;
    int annotation; /* 1: a gpu_user_annotation span (sorts before work with the same span) */
} dev_ev;

static int cmp_dev(const void *x, const void *y) {
    const dev_ev *a = x, *b = y;
    if (a->e.device_index != b->e.device_index)
        return a->e.device_index < b->e.device_index ? -1 : 1;
    if (a->e.tid != b->e.tid) return a->e.tid < b->e.tid ? -1 : 1;
    if (a->e.start_ns != b->e.start_ns) return a->e.start_ns < b->e.start_ns ? -1 : 1;
    if (a->e.end_ns != b->e.end_ns) return a->e.end_ns > b->e.end_ns ? -1 : 1;
    if (a->annotation != b->annotation) return a->annotation ? -1 : 1;
    return 0;
}

/* One (annotation, device, stream) with a piece of work, before reduction to spans. */
typedef struct ann_use {
    uint32_t ann;
    int16_t device;
    int64_t stream;
    int64_t start, end;
} ann_use;

static int cmp_ann(const void *x, const void *y) {
    const ann_use *a = x, *b = y;
    if (a->ann != b->ann) return a->ann < b->ann ? -1 : 1;
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
    return 0;
}

static const char *dev_category(uint8_t kind) {
    return kind == STROBE__GPU_KERNEL   ? STROBE_KINETO_CAT_KERNEL
           : kind == STROBE__GPU_MEMCPY ? STROBE_KINETO_CAT_GPU_MEMCPY
                                        : STROBE_KINETO_CAT_GPU_MEMSET;
}

static const strobe__gpu_device *find_device(const strobe__gpu_batch *b, uint32_t id) {
    for (size_t i = 0; i < b->device_count; i++)
        if (b->devices[i].id >= 0 && (uint32_t)b->devices[i].id == id) return &b->devices[i];
    return NULL;
}

/* Kineto's args of a kernel, copy or memset. */
static int device_args(strobe_result *r, strobe_event *e, const strobe__gpu_act *a,
                       const strobe__gpu_batch *b) {
    int rc = 0;
    char tmp[96];
    if (a->kind == STROBE__GPU_KERNEL)
        rc = add_arg_i64(r, e, STROBE_KINETO_ARG_QUEUED, a->queued_ns > 0 ? a->queued_ns : 0);
    if (rc == 0) rc = add_arg_u64(r, e, STROBE_KINETO_ARG_DEVICE, a->device);
    if (rc == 0) rc = add_arg_u64(r, e, STROBE_KINETO_ARG_CONTEXT, a->context);
    if (rc == 0) rc = add_arg_u64(r, e, STROBE_KINETO_ARG_STREAM, a->stream);
    if (rc == 0) rc = add_arg_u64(r, e, STROBE_KINETO_ARG_CORRELATION, a->correlation);
    if (rc) return rc;
    if (a->kind == STROBE__GPU_KERNEL) {
        const strobe__gpu_device *d = find_device(b, a->device);
        double blocks = -1, warps = -1, occ = 0;
        if (d && d->num_sms > 0 && d->warp_size > 0) {
            blocks = (double)a->grid[0] * a->grid[1] * a->grid[2] / d->num_sms;
            warps = blocks * ((double)a->block[0] * a->block[1] * a->block[2]) / d->warp_size;
            occ = strobe__gpu_occupancy(d, a);
            double max_warps = (double)d->max_threads_per_sm / d->warp_size;
            if (max_warps > 0 && warps / max_warps < occ) occ = warps / max_warps;
        }
        rc = add_arg_i64(r, e, STROBE_KINETO_ARG_REGISTERS_PER_THREAD, a->registers_per_thread);
        if (rc == 0)
            rc = add_arg_i64(r, e, STROBE_KINETO_ARG_SHARED_MEMORY,
                             (int64_t)a->static_shared + (int64_t)a->dynamic_shared);
        if (rc == 0) rc = add_arg_f(r, e, STROBE_KINETO_ARG_BLOCKS_PER_SM, blocks);
        if (rc == 0) rc = add_arg_f(r, e, STROBE_KINETO_ARG_WARPS_PER_SM, warps);
        snprintf(tmp, sizeof tmp, "[%d, %d, %d]", (int)a->grid[0], (int)a->grid[1],
                 (int)a->grid[2]);
        if (rc == 0) rc = add_arg(r, e, STROBE_KINETO_ARG_GRID, tmp);
        snprintf(tmp, sizeof tmp, "[%d, %d, %d]", (int)a->block[0], (int)a->block[1],
                 (int)a->block[2]);
        if (rc == 0) rc = add_arg(r, e, STROBE_KINETO_ARG_BLOCK, tmp);
        if (rc == 0) rc = add_arg_i64(r, e, STROBE_KINETO_ARG_OCCUPANCY, (int64_t)(occ * 100));
        if (rc == 0 && a->graph_id) rc = add_arg_u64(r, e, STROBE_KINETO_ARG_GRAPH_ID, a->graph_id);
        return rc;
    }
    rc = add_arg_u64(r, e, STROBE_KINETO_ARG_BYTES, a->bytes);
    /* Bytes per ns are GB/s. */
    int64_t dur = a->end_ns - a->start_ns;
    if (rc == 0)
        rc = add_arg_f(r, e, STROBE_KINETO_ARG_BANDWIDTH, dur > 0 ? (double)a->bytes / dur : 0);
    return rc;
}

/* ---- 5. Rebuilding and merging --------------------------------------------------------------- */

typedef struct frame {
    uint32_t out, old_next, new_next, last_out, depth;
} frame;

typedef struct builder {
    strobe_event *out;
    size_t count, cap;
    frame *st;
    size_t depth, st_cap;
} builder;

static int push_frame(builder *b, uint32_t out, uint32_t old_next, uint32_t new_next,
                      uint32_t depth) {
    if (b->depth == b->st_cap) {
        size_t cap = b->st_cap ? b->st_cap * 2 : 64;
        frame *f = realloc(b->st, cap * sizeof *f);
        if (f == NULL) return STROBE_ENOMEM;
        b->st = f;
        b->st_cap = cap;
    }
    b->st[b->depth++] = (frame){out, old_next, new_next, NONE, depth};
    return 0;
}

/* Writes thread ti (recorded events [f, f + n), plus its new host events) into b->out in tree
 * order, which is start order: the recorded tree with the new leaves merged into the children
 * lists by start. Counters go between, in their order, by start. */
static int emit_thread(builder *b, merge_ctx *c, uint32_t ti, size_t f, size_t n) {
    const strobe_event *ev = c->r->events;
    uint32_t first_root = NONE;
    for (size_t k = f; k < f + n && first_root == NONE; k++)
        if (ev[k].kind != STROBE_EVENT_COUNTER && ev[k].parent == NONE) first_root = (uint32_t)k;
    size_t counter = f;
    b->depth = 0;
    int rc = push_frame(b, NONE, first_root, c->thread_root[ti], 0);
    while (rc == 0 && b->depth) {
        frame *fr = &b->st[b->depth - 1];
        uint32_t o = fr->old_next, w = fr->new_next;
        if (o == NONE && w == NONE) {
            b->depth--;
            continue;
        }
        int take_old = o != NONE;
        if (o != NONE && w != NONE) {
            const strobe_event *eo = &ev[o], *en = &c->h[w].e;
            take_old = eo->start_ns < en->start_ns ||
                       (eo->start_ns == en->start_ns && eo->end_ns <= en->end_ns);
        }
        const strobe_event *src = take_old ? &ev[o] : &c->h[w].e;
        while (counter < f + n && b->count < b->cap) {
            if (ev[counter].kind != STROBE_EVENT_COUNTER) {
                counter++;
                continue;
            }
            if (ev[counter].start_ns > src->start_ns) break;
            strobe_event *ce = &b->out[b->count++];
            *ce = ev[counter++];
            ce->parent = ce->first_child = ce->next_sibling = NONE;
            ce->depth = 0;
            ce->thread_index = ti;
        }
        if (b->count >= b->cap) return STROBE_ENOMEM; /* a malformed tree: never loop */
        uint32_t k = (uint32_t)b->count++;
        strobe_event *e = &b->out[k];
        *e = *src;
        e->parent = fr->out;
        e->depth = fr->depth;
        e->first_child = e->next_sibling = NONE;
        e->thread_index = ti;
        if (fr->last_out != NONE)
            b->out[fr->last_out].next_sibling = k;
        else if (fr->out != NONE)
            b->out[fr->out].first_child = k;
        fr->last_out = k;
        uint32_t depth = fr->depth + 1;
        if (take_old) {
            fr->old_next = ev[o].next_sibling;
            if (ev[o].first_child != NONE || c->oldkid[o] != NONE)
                rc = push_frame(b, k, ev[o].first_child, c->oldkid[o], depth);
        } else {
            fr->new_next = c->h[w].next_new;
            if (c->h[w].first_new != NONE) rc = push_frame(b, k, NONE, c->h[w].first_new, depth);
        }
    }
    for (; rc == 0 && counter < f + n && b->count < b->cap; counter++) {
        if (ev[counter].kind != STROBE_EVENT_COUNTER) continue;
        strobe_event *ce = &b->out[b->count++];
        *ce = ev[counter];
        ce->parent = ce->first_child = ce->next_sibling = NONE;
        ce->depth = 0;
        ce->thread_index = ti;
    }
    return rc;
}

/* Appends one device track (d[0..n), sorted, one (device, stream)) nested by time: an event that
 * overlaps an earlier one without nesting in it ends at that one's end (counted). */
static int emit_track(builder *b, merge_ctx *c, dev_ev *d, size_t n, uint32_t ti) {
    uint32_t *st = malloc((n ? n : 1) * sizeof *st), depth = 0, root_last = NONE;
    uint32_t *last = malloc((n ? n : 1) * sizeof *last);
    if (st == NULL || last == NULL) {
        free(st);
        free(last);
        return STROBE_ENOMEM;
    }
    for (size_t i = 0; i < n && b->count < b->cap; i++) {
        strobe_event e = d[i].e;
        while (depth && b->out[st[depth - 1]].end_ns <= e.start_ns)
            depth--;
        if (depth && e.end_ns > b->out[st[depth - 1]].end_ns) {
            e.end_ns = b->out[st[depth - 1]].end_ns;
            c->clipped++;
        }
        uint32_t k = (uint32_t)b->count++;
        e.thread_index = ti;
        e.first_child = e.next_sibling = NONE;
        e.depth = depth;
        if (depth) {
            e.parent = st[depth - 1];
            if (last[depth - 1] == NONE)
                b->out[e.parent].first_child = k;
            else
                b->out[last[depth - 1]].next_sibling = k;
            last[depth - 1] = k;
        } else {
            e.parent = NONE;
            if (root_last != NONE) b->out[root_last].next_sibling = k;
            root_last = k;
        }
        b->out[k] = e;
        last[depth] = NONE;
        st[depth++] = k;
    }
    free(st);
    free(last);
    return 0;
}

static int device_props_json(strobe_result *r, const strobe__gpu_batch *b) {
    if (b->device_count == 0) return 0;
    size_t cap = 512 * b->device_count + 16, len = 0;
    char *s = malloc(cap);
    if (s == NULL) return STROBE_ENOMEM;
    s[len++] = '[';
    for (size_t i = 0; i < b->device_count; i++) {
        const strobe__gpu_device *d = &b->devices[i];
        /* The name as a JSON string: printable ASCII kept, anything else replaced. */
        char name[2 * sizeof d->name];
        size_t nl = 0;
        for (size_t k = 0; k < sizeof d->name && d->name[k]; k++) {
            unsigned char ch = (unsigned char)d->name[k];
            if (ch == '"' || ch == '\\') name[nl++] = '\\';
            name[nl++] = (ch < 0x20 || ch >= 0x7f) ? '?' : (char)ch;
        }
        name[nl] = '\0';
        len += (size_t)snprintf(
            s + len, cap - len,
            "%s{\"id\": %d, \"name\": \"%s\", \"totalGlobalMem\": %llu, \"computeMajor\": %d, "
            "\"computeMinor\": %d, \"maxThreadsPerBlock\": %d, \"maxThreadsPerMultiprocessor\": "
            "%d, \"regsPerBlock\": %d, \"warpSize\": %d, \"sharedMemPerBlock\": %d, \"numSms\": "
            "%d, \"regsPerMultiprocessor\": %d, \"sharedMemPerBlockOptin\": %d, "
            "\"sharedMemPerMultiprocessor\": %d}",
            i ? ", " : "", (int)d->id, name, (unsigned long long)d->total_global_mem,
            (int)d->compute_major, (int)d->compute_minor, (int)d->max_threads_per_block,
            (int)d->max_threads_per_sm, (int)d->regs_per_block, (int)d->warp_size,
            (int)d->shared_mem_per_block, (int)d->num_sms, (int)d->regs_per_sm,
            (int)d->shared_mem_per_block_optin, (int)d->shared_mem_per_sm);
        if (len >= cap) len = cap - 1;
    }
    if (len + 2 > cap) len = cap - 2;
    s[len++] = ']';
    s[len] = '\0';
    r->device_props = strobe__pool_strdup(&r->pool, s);
    free(s);
    return r->device_props ? 0 : STROBE_ENOMEM;
}

static int in_window(const strobe_result *r, const strobe__gpu_act *a) {
    return a->start_ns >= r->trace_start_ns && a->end_ns <= r->trace_end_ns &&
           a->end_ns >= a->start_ns;
}

int strobe__gpu_merge(struct strobe_result *r, const strobe__gpu_batch *b) {
    if (r == NULL || b == NULL) return 0;
    merge_ctx c;
    memset(&c, 0, sizeof c);
    c.r = r;
    strobe__u64map launch = {0}, ext = {0}, work = {0};
    int oom = 0;
    const strobe__gpu_act **hp = NULL;
    dev_ev *dv = NULL;
    ann_use *au = NULL;
    builder bld = {0};
    strobe_thread_info *threads = NULL;
    size_t nd = 0, nau = 0, nthreads = r->thread_count, outside = 0;
    int rc = 0;

    size_t nhost = 0, ndev = 0;
    for (size_t i = 0; i < b->act_count; i++) {
        const strobe__gpu_act *a = &b->acts[i];
        if (!in_window(r, a) || !(is_host(a->kind) || is_dev(a->kind))) {
            outside++;
            continue;
        }
        if (is_host(a->kind))
            nhost++;
        else
            ndev++;
    }
    hp = malloc((nhost ? nhost : 1) * sizeof *hp);
    c.h = calloc(nhost ? nhost : 1, sizeof *c.h);
    dv = calloc(ndev ? ndev : 1, sizeof *dv);
    c.oldkid = malloc((r->event_count ? r->event_count : 1) * sizeof *c.oldkid);
    c.oldlast = malloc((r->event_count ? r->event_count : 1) * sizeof *c.oldlast);
    if (hp == NULL || c.h == NULL || dv == NULL || c.oldkid == NULL || c.oldlast == NULL)
        goto nomem;
    if (strobe__u64map_reserve(&launch, nhost) || strobe__u64map_reserve(&ext, b->ext_count) ||
        strobe__u64map_reserve(&work, ndev))
        goto nomem;
    for (size_t i = 0; i < r->event_count; i++)
        c.oldkid[i] = NONE;
    for (size_t i = 0; i < b->ext_count; i++)
        corrmap_put(&ext, b->ext[i].correlation, b->ext[i].external, &oom);
    for (size_t i = 0; i < b->act_count; i++) {
        const strobe__gpu_act *a = &b->acts[i];
        if (!in_window(r, a)) continue;
        if (is_host(a->kind)) hp[c.nh++] = a;
        if (is_dev(a->kind)) corrmap_put(&work, a->correlation, 1, &oom);
    }
    if (oom) goto nomem;
    if (c.nh) qsort(hp, c.nh, sizeof *hp, cmp_host);

    /* Fresh external ids start above every id the result and the batch hold. */
    uint64_t max_id = 0;
    for (size_t i = 0; i < r->event_count; i++)
        if (r->events[i].correlation_id > max_id) max_id = r->events[i].correlation_id;
    for (size_t i = 0; i < b->ext_count; i++)
        if (b->ext[i].external > max_id) max_id = b->ext[i].external;
    c.next_fresh = max_id + 1;

    /* Threads: the recorded ones, then one per unknown calling tid. */
    size_t ngroups = 0;
    for (size_t i = 0; i < c.nh; i++)
        ngroups += i == 0 || hp[i]->tid != hp[i - 1]->tid;
    threads = malloc((r->thread_count + ngroups + ndev + 1) * sizeof *threads);
    c.thread_root = malloc((r->thread_count + ngroups + 1) * sizeof *c.thread_root);
    c.thread_new = calloc(r->thread_count + ngroups + 1, sizeof *c.thread_new);
    if (threads == NULL || c.thread_root == NULL || c.thread_new == NULL) goto nomem;
    if (r->thread_count) memcpy(threads, r->threads, r->thread_count * sizeof *threads);
    for (size_t i = 0; i < r->thread_count + ngroups + 1; i++)
        c.thread_root[i] = NONE;

    for (size_t i = 0; i < c.nh; i++) {
        const strobe__gpu_act *a = hp[i];
        hev *x = &c.h[i];
        x->a = a;
        x->launch_ns = a->start_ns;
        x->first_new = x->last_new = x->next_new = NONE;
        strobe_event *e = &x->e;
        e->name = a->name                           ? a->name
                  : a->kind == STROBE__GPU_SYNC     ? "cuda_sync"
                  : a->kind == STROBE__GPU_OVERHEAD ? "CUPTI overhead"
                                                    : "cuda_api";
        e->name = strobe__pool_strdup(&r->pool, e->name);
        if (e->name == NULL) goto nomem;
        e->category = host_category(a->kind);
        e->start_ns = a->start_ns;
        e->end_ns = a->end_ns;
        e->tid = a->tid;
        e->kind = STROBE_EVENT_RANGE;
        e->scope = STROBE_RECORD_SCOPE_FUNCTION;
        e->device_type = STROBE_DEVICE_CPU;
        e->device_index = -1;
    }
    /* Place each tid's calls in its thread's tree. */
    for (size_t i = 0; i < c.nh && rc == 0;) {
        size_t j = i;
        while (j < c.nh && hp[j]->tid == hp[i]->tid)
            j++;
        uint32_t ti = NONE;
        for (size_t t = 0; t < r->thread_count && ti == NONE; t++)
            if (r->threads[t].tid == hp[i]->tid && r->threads[t].device_type == STROBE_DEVICE_CPU)
                ti = (uint32_t)t;
        int existing = ti != NONE;
        if (!existing) {
            ti = (uint32_t)nthreads++;
            memset(&threads[ti], 0, sizeof threads[ti]);
            threads[ti].tid = hp[i]->tid;
            threads[ti].name = "";
            threads[ti].device_type = STROBE_DEVICE_CPU;
            threads[ti].device_index = -1;
        }
        rc = place_thread(&c, i, j, ti, existing);
        i = j;
    }
    if (rc) goto fail;

    /* Host-side linking: "External id", "correlation", "cbid". */
    for (size_t i = 0; i < c.nh; i++) {
        hev *x = &c.h[i];
        const strobe__gpu_act *a = x->a;
        uint64_t unused;
        int has_work = corrmap_get(&work, a->correlation, &unused);
        if (a->kind == STROBE__GPU_RUNTIME || a->kind == STROBE__GPU_DRIVER) {
            x->e.correlation_id = external_id(&c, x, &ext, has_work);
            if (a->cbid) rc = add_arg_u64(r, &x->e, STROBE_KINETO_ARG_CBID, a->cbid);
            if (rc == 0 && a->correlation)
                rc = add_arg_u64(r, &x->e, STROBE_KINETO_ARG_CORRELATION, a->correlation);
            if (has_work) corrmap_put(&launch, a->correlation, i, &oom);
            if (oom) rc = STROBE_ENOMEM;
        } else if (a->kind == STROBE__GPU_SYNC) {
            rc = add_arg_u64(r, &x->e, STROBE_KINETO_ARG_DEVICE, a->device);
            if (rc == 0) rc = add_arg_u64(r, &x->e, STROBE_KINETO_ARG_CONTEXT, a->context);
            if (rc == 0) rc = add_arg_u64(r, &x->e, STROBE_KINETO_ARG_STREAM, a->stream);
            if (rc == 0 && a->correlation)
                rc = add_arg_u64(r, &x->e, STROBE_KINETO_ARG_CORRELATION, a->correlation);
        }
        if (rc) goto fail;
    }

    /* Device work, each linked to its launch. */
    size_t ann_cap = 0, next_arg = 0;
    for (size_t i = 0; i < b->act_count; i++) {
        const strobe__gpu_act *a = &b->acts[i];
        if (!is_dev(a->kind) || !in_window(r, a)) continue;
        dev_ev *d = &dv[nd++];
        strobe_event *e = &d->e;
        char cname[128];
        if (a->kind == STROBE__GPU_KERNEL) {
            e->name = strobe__pool_strdup(&r->pool, a->name ? a->name : "kernel");
        } else {
            strobe__gpu_copy_name(a, cname, sizeof cname);
            e->name = strobe__pool_strdup(&r->pool, cname);
        }
        if (e->name == NULL) goto nomem;
        e->category = dev_category(a->kind);
        e->start_ns = a->start_ns;
        e->end_ns = a->end_ns;
        e->tid = (int64_t)a->stream;
        e->kind = STROBE_EVENT_RANGE;
        e->device_type = STROBE_DEVICE_CUDA;
        e->device_index = (int16_t)a->device;
        uint64_t li = 0, id = 0;
        if (corrmap_get(&launch, a->correlation, &li)) {
            const hev *x = &c.h[li];
            e->correlation_id = x->e.correlation_id;
            if (e->start_ns < x->launch_ns) {
                int64_t dur = e->end_ns - e->start_ns;
                e->start_ns = x->launch_ns;
                e->end_ns =
                    dur <= r->trace_end_ns - e->start_ns ? e->start_ns + dur : r->trace_end_ns;
                r->stats.cuda_moved_events++;
            }
            /* Every user annotation around the launch spans this work on its stream. */
            for (uint32_t p = x->parent_old; p != NONE; p = r->events[p].parent) {
                if (r->events[p].scope != STROBE_RECORD_SCOPE_USER_SCOPE ||
                    r->events[p].kind != STROBE_EVENT_RANGE)
                    continue;
                if (nau == ann_cap) {
                    size_t cap = ann_cap ? ann_cap * 2 : 64;
                    ann_use *n = realloc(au, cap * sizeof *n);
                    if (n == NULL) goto nomem;
                    au = n;
                    ann_cap = cap;
                }
                au[nau++] = (ann_use){p, e->device_index, e->tid, e->start_ns, e->end_ns};
            }
        } else if (corrmap_get(&ext, a->correlation, &id)) {
            e->correlation_id = id;
        }
        rc = device_args(r, e, a, b);
        /* The backend's own args of this record (args are in act order). */
        while (rc == 0 && next_arg < b->arg_count && b->args[next_arg].act < i)
            next_arg++;
        for (; rc == 0 && next_arg < b->arg_count && b->args[next_arg].act == i; next_arg++) {
            const char *key = strobe__pool_strdup(&r->pool, b->args[next_arg].key);
            rc = key ? strobe__event_add_arg(r, e, key, b->args[next_arg].json, 1, 1)
                     : STROBE_ENOMEM;
        }
        if (rc) goto fail;
    }
    if (nau) qsort(au, nau, sizeof *au, cmp_ann);
    size_t nspans = 0;
    for (size_t i = 0; i < nau; i++)
        nspans += i == 0 || cmp_ann(&au[i], &au[i - 1]) != 0;
    if (nspans) {
        dev_ev *n = realloc(dv, (nd + nspans) * sizeof *n);
        if (n == NULL) goto nomem;
        dv = n;
    }
    for (size_t i = 0; i < nau;) {
        size_t j = i;
        int64_t lo = au[i].start, hi = au[i].end;
        while (j < nau && cmp_ann(&au[j], &au[i]) == 0) {
            if (au[j].start < lo) lo = au[j].start;
            if (au[j].end > hi) hi = au[j].end;
            j++;
        }
        const strobe_event *ae = &r->events[au[i].ann];
        dev_ev *d = &dv[nd++];
        memset(d, 0, sizeof *d);
        d->annotation = 1;
        d->e.name = ae->name;
        d->e.category = STROBE_KINETO_CAT_GPU_USER_ANNOTATION;
        d->e.start_ns = lo;
        d->e.end_ns = hi;
        d->e.tid = au[i].stream;
        d->e.kind = STROBE_EVENT_RANGE;
        d->e.scope = STROBE_RECORD_SCOPE_USER_SCOPE;
        d->e.device_type = STROBE_DEVICE_CUDA;
        d->e.device_index = au[i].device;
        d->e.correlation_id = ae->correlation_id;
        i = j;
    }
    if (nd) qsort(dv, nd, sizeof *dv, cmp_dev);
    size_t ntracks = 0;
    for (size_t i = 0; i < nd; i++)
        ntracks += i == 0 || dv[i].e.device_index != dv[i - 1].e.device_index ||
                   dv[i].e.tid != dv[i - 1].e.tid;
    if (ntracks > ndev + 1) {
        strobe_thread_info *n = realloc(threads, (nthreads + ntracks) * sizeof *n);
        if (n == NULL) goto nomem;
        threads = n;
    }

    /* Rebuild: the recorded threads (with their new leaves), new CPU threads, device tracks. */
    bld.cap = r->event_count + c.nh + nd;
    size_t map_bytes = (bld.cap ? bld.cap : 1) * sizeof(strobe_event);
    bld.out = strobe__big_map(map_bytes, 0);
    if (bld.out == NULL) goto nomem;
    strobe__big_populate(bld.out, map_bytes);
    for (size_t t = 0; t < nthreads && rc == 0; t++) {
        size_t first = bld.count;
        size_t f = t < r->thread_count ? r->threads[t].first_event : 0;
        size_t n = t < r->thread_count ? r->threads[t].event_count : 0;
        if (c.thread_new[t] == 0) {
            /* Untouched: copied, links shifted. */
            for (size_t k = f; k < f + n; k++) {
                strobe_event *e = &bld.out[bld.count++];
                *e = r->events[k];
                int64_t delta = (int64_t)first - (int64_t)f;
                if (e->parent != NONE) e->parent = (uint32_t)(e->parent + delta);
                if (e->first_child != NONE) e->first_child = (uint32_t)(e->first_child + delta);
                if (e->next_sibling != NONE) e->next_sibling = (uint32_t)(e->next_sibling + delta);
            }
        } else {
            rc = emit_thread(&bld, &c, (uint32_t)t, f, n);
        }
        threads[t].first_event = first;
        threads[t].event_count = bld.count - first;
    }
    for (size_t i = 0; i < nd && rc == 0;) {
        size_t j = i;
        while (j < nd && dv[j].e.device_index == dv[i].e.device_index && dv[j].e.tid == dv[i].e.tid)
            j++;
        uint32_t ti = (uint32_t)nthreads++;
        strobe_thread_info *th = &threads[ti];
        memset(th, 0, sizeof *th);
        char tname[48];
        snprintf(tname, sizeof tname, STROBE_KINETO_STREAM_THREAD_FMT, (long long)dv[i].e.tid);
        th->tid = dv[i].e.tid;
        th->name = strobe__pool_strdup(&r->pool, tname);
        th->device_type = STROBE_DEVICE_CUDA;
        th->device_index = dv[i].e.device_index;
        th->first_event = bld.count;
        if (th->name == NULL) goto nomem;
        rc = emit_track(&bld, &c, dv + i, j - i, ti);
        th->event_count = bld.count - th->first_event;
        i = j;
    }
    if (rc == 0 && bld.count != bld.cap) rc = STROBE_ENOMEM; /* cannot happen on a sound tree */
    if (rc) goto fail;
    if (device_props_json(r, b)) goto nomem;
    if (b->clock_method) {
        char meta[160];
        snprintf(meta, sizeof meta, "{\"method\": \"%s\", \"offset_ns\": %lld}",
                 strcmp(b->clock_method, "calibrated") == 0 ? "calibrated" : "callback",
                 (long long)b->clock_offset_ns);
        if (strobe__result_set_meta(r, "strobe_gpu_clock", meta)) goto nomem;
    }

    /* Commit. */
    strobe__big_unmap(r->events, r->events_map_bytes);
    r->events = bld.out;
    r->events_map_bytes = map_bytes;
    r->event_count = bld.count;
    bld.out = NULL;
    free(r->threads);
    r->threads = threads;
    r->thread_count = nthreads;
    threads = NULL;
    r->stats.clipped_backend_events += c.clipped;
    r->stats.cuda_outside_window += outside + b->outside_window;
    r->stats.cuda_dropped_records += b->dropped_records;
    goto done;

nomem:
    rc = STROBE_ENOMEM;
fail:
    if (bld.out) strobe__big_unmap(bld.out, (bld.cap ? bld.cap : 1) * sizeof(strobe_event));
done:
    free(bld.st);
    free(threads);
    free(hp);
    free(c.h);
    free(dv);
    free(au);
    free(c.oldkid);
    free(c.oldlast);
    free(c.thread_root);
    free(c.thread_new);
    strobe__u64map_free(&launch);
    strobe__u64map_free(&ext);
    strobe__u64map_free(&work);
    return rc;
}
