/* oplink.c: operator ancestry and the device-work correlation chain (see oplink.h).
 *
 * Contents: ancestry walks, id -> event lookups (util/u64map.h), the operator at a time on a
 * thread, and md_link. */
#include "oplink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strobe/error.h"
#include "util/u64map.h"

uint32_t md_row_parent(const md_model *m, uint32_t i) {
    uint32_t p = md_parent(m, i);
    while (p != MD_NONE && !md_is_row(md_kind_of(m, p)))
        p = md_parent(m, p);
    return p;
}

uint32_t md_op_parent(const md_model *m, uint32_t i) {
    uint32_t p = md_parent(m, i);
    while (p != MD_NONE && !md_is_op(md_kind_of(m, p)))
        p = md_parent(m, p);
    return p;
}

/* ---- torch's CPU tree ---------------------------------------------------------------------- */

int md_left_out(const char *name) {
    static const char *const names[] = {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(name, names[k]) == 0) return 1;
    return 0;
}

int md_in_cpu_tree(const md_model *m, const md_event *e) {
    return md_is_row(e->kind) && e->has_time && !e->bad && !md_left_out(md_str(m, e->name));
}

int md_cpu_tree(const md_model *m, uint32_t *parent, int64_t *self, uint8_t *merged) {
    /* Children per event, held at 2: only "exactly one" matters. */
    uint32_t *stack = NULL;
    uint8_t *nchild = calloc(m->count ? m->count : 1, sizeof *nchild);
    size_t cap = 0;
    if (nchild == NULL) return STROBE_ENOMEM;
    for (size_t i = 0; i < m->count; i++) {
        parent[i] = MD_NONE;
        self[i] = 0;
        merged[i] = 0;
    }
    /* The tree: a stack per thread, popped by what neither starts inside nor ends within. */
    for (size_t t = 0; t < m->thread_count; t++) {
        const md_thread *th = &m->threads[t];
        size_t depth = 0;
        for (size_t k = 0; k < th->count; k++) {
            uint32_t i = th->order[k];
            const md_event e_ev = md_at(m, i), *e = &e_ev;
            if (!md_in_cpu_tree(m, e)) continue;
            int64_t end = md_add_sat(e->ts, e->dur);
            while (depth) {
                uint32_t top = stack[depth - 1];
                int64_t top_end = md_add_sat(md_ts(m, top), md_dur(m, top));
                if (e->ts < top_end && end <= top_end) break;
                depth--;
            }
            if (depth) {
                parent[i] = stack[depth - 1];
                if (nchild[parent[i]] < 2) nchild[parent[i]]++;
            }
            if (depth == cap) {
                cap = cap ? cap * 2 : 64;
                uint32_t *s = realloc(stack, cap * sizeof *s);
                if (s == NULL) {
                    free(stack);
                    free(nchild);
                    return STROBE_ENOMEM;
                }
                stack = s;
            }
            stack[depth++] = i;
        }
    }
    free(stack);
    /* torch's _remove_dup_nodes: an event that is the only child of one of its name is merged
     * into it (its children become the parent's), top down, so that a chain of them folds into
     * the outermost. Parents come before their children in each thread's order. */
    for (size_t t = 0; t < m->thread_count; t++) {
        const md_thread *th = &m->threads[t];
        for (size_t k = 0; k < th->count; k++) {
            uint32_t i = th->order[k], p = parent[i];
            const md_event e = md_at(m, i);
            if (!md_in_cpu_tree(m, &e)) continue;
            while (p != MD_NONE && merged[p])
                p = parent[p];
            parent[i] = p;
            if (p != MD_NONE && nchild[p] == 1 && md_name_of(m, p) == md_name_of(m, i)) {
                merged[i] = 1;
                nchild[p] = nchild[i];
            }
        }
    }
    for (size_t i = 0; i < m->count; i++) {
        const md_event e = md_at(m, i);
        if (merged[i] || !md_in_cpu_tree(m, &e)) continue;
        self[i] = md_add_sat(self[i], md_dur(m, i));
        if (parent[i] != MD_NONE) self[parent[i]] = md_sub_sat(self[parent[i]], md_dur(m, i));
    }
    free(nchild);
    return 0;
}

/* An open event of the tree on one thread. */
typedef struct open_ev {
    uint32_t i, first; /* the event; its first child */
    uint8_t nchild;    /* its children, held at 2 */
    uint8_t merged;
    int64_t end, self; /* its end; its self time so far */
} open_ev;

typedef struct self_walk {
    const md_model *m;
    uint8_t *merged; /* a bit per event */
    open_ev *stack;
    size_t depth, cap;
    int (*fn)(void *, uint32_t, int64_t);
    void *ctx;
} self_walk;

static int bit(const uint8_t *b, uint32_t i) {
    return b[i >> 3] >> (i & 7) & 1;
}

/* Pops the top: in pass 1 its only child is merged into it when of its name (md_cpu_tree's
 * top-down merging comes to this: a merged event's parent ends up with the child count of its
 * only child); in pass 2 its self time is complete. */
static int self_pop(self_walk *w, int pass) {
    const open_ev *o = &w->stack[--w->depth];
    if (pass == 1) {
        if (o->nchild == 1 && md_name_of(w->m, o->first) == md_name_of(w->m, o->i))
            w->merged[o->first >> 3] |= (uint8_t)(1u << (o->first & 7));
        return 0;
    }
    return o->merged ? 0 : w->fn(w->ctx, o->i, o->self);
}

int md_cpu_selfs(const md_model *m, int (*fn)(void *ctx, uint32_t i, int64_t self), void *ctx) {
    self_walk w = {.m = m, .fn = fn, .ctx = ctx};
    int err = 0;
    w.merged = calloc((m->count + 8) / 8, 1);
    if (w.merged == NULL) return STROBE_ENOMEM;
    for (int pass = 1; pass <= 2 && !err; pass++) {
        for (size_t t = 0; t < m->thread_count && !err; t++) {
            const md_thread *th = &m->threads[t];
            for (size_t k = 0; k < th->count && !err; k++) {
                uint32_t i = th->order[k];
                const md_event e_ev = md_at(m, i), *e = &e_ev;
                if (!md_in_cpu_tree(m, e)) continue;
                int64_t end = md_add_sat(e->ts, e->dur);
                while (w.depth && !err) {
                    const open_ev *top = &w.stack[w.depth - 1];
                    if (e->ts < top->end && end <= top->end) break;
                    err = self_pop(&w, pass);
                }
                if (err) break;
                if (w.depth == w.cap) {
                    size_t cap = w.cap ? w.cap * 2 : 64;
                    open_ev *s = realloc(w.stack, cap * sizeof *s);
                    if (s == NULL) {
                        err = STROBE_ENOMEM;
                        break;
                    }
                    w.stack = s;
                    w.cap = cap;
                }
                open_ev *o = &w.stack[w.depth++], *p = w.depth > 1 ? o - 1 : NULL;
                *o = (open_ev){.i = i, .first = MD_NONE, .end = end};
                if (pass == 1) {
                    if (p && p->nchild++ == 0) p->first = i;
                    if (p && p->nchild > 2) p->nchild = 2;
                    continue;
                }
                /* A merged event adds nothing; its children are its parent's. */
                while (p && p->merged)
                    p = p == w.stack ? NULL : p - 1;
                if (bit(w.merged, i)) {
                    o->merged = 1;
                    continue;
                }
                o->self = md_add_sat(0, e->dur);
                if (p) p->self = md_sub_sat(p->self, e->dur);
            }
            while (w.depth && !err)
                err = self_pop(&w, pass);
            w.depth = 0;
        }
    }
    free(w.stack);
    free(w.merged);
    return err;
}

/* ---- int64 -> event lookups ----------------------------------------------------------------- */

/* The event an id maps to; ids are non-negative (a negative one is absent), as are the map's
 * keys. */
static uint32_t idmap_get(const strobe__u64map *h, int64_t key) {
    if (key < 0) return MD_NONE;
    const uint64_t *v = strobe__u64map_get(h, (uint64_t)key);
    return v ? (uint32_t)*v : MD_NONE;
}

/* ---- The operator at a time on a thread ------------------------------------------------------ */

/* The innermost operator of thread t that contains time ts: the last event starting at or
 * before ts, then up its parents until one contains ts. */
static uint32_t op_at(const md_model *m, const md_thread *t, int64_t ts) {
    size_t lo = 0, hi = t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (md_ts(m, t->order[mid]) <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo > 0) {
        const md_event e_ev = md_at(m, t->order[lo - 1]), *e = &e_ev;
        /* Flows and counters take no part in the nesting (their parent is never set). */
        if (e->has_time && e->kind != MD_COUNTER && e->kind != MD_FLOW_START &&
            e->kind != MD_FLOW_STEP && e->kind != MD_FLOW_END)
            break;
        lo--;
    }
    if (lo == 0) return MD_NONE;
    uint32_t p = t->order[lo - 1];
    while (p != MD_NONE) {
        const md_event e_ev = md_at(m, p), *e = &e_ev;
        if (md_is_op(e->kind) && e->ts <= ts && ts < e->ts + e->dur) return p;
        p = e->parent;
    }
    return MD_NONE;
}

/* A thread with a string tid that spells a number (" 7", "-3": the reader takes only plain digits
 * as numbers), for pairing with the thread of that numeric tid in the same process. */
typedef struct twin_key {
    int64_t pid, tid;
    uint8_t pid_kind;
    uint32_t thread;
} twin_key;

static int by_twin_key(const void *a, const void *b) {
    const twin_key *x = a, *y = b;
    if (x->pid_kind != y->pid_kind) return x->pid_kind < y->pid_kind ? -1 : 1;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

/* twin[t]: the thread with the same pid (kind and value) whose string tid spells thread t's
 * numeric tid (the first such thread), or MD_NONE. Sorted keys and a binary search per thread, as
 * a trace may hold as many threads as events. @return 0 or STROBE_ENOMEM. */
static int string_twins(const md_model *m, uint32_t *twin) {
    size_t n = 0;
    twin_key *keys = malloc((m->thread_count ? m->thread_count : 1) * sizeof *keys);
    if (keys == NULL) return STROBE_ENOMEM;
    for (size_t k = 0; k < m->thread_count; k++) {
        const md_thread *o = &m->threads[k];
        twin[k] = MD_NONE;
        if (o->tid_kind != MD_ID_STR || o->tid_str == 0) continue;
        const char *s = md_str(m, o->tid_str);
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || *end != '\0' || errno == ERANGE) continue;
        keys[n++] = (twin_key){o->pid, (int64_t)v, o->pid_kind, (uint32_t)k};
    }
    qsort(keys, n, sizeof *keys, by_twin_key);
    for (size_t t = 0; n && t < m->thread_count; t++) {
        const md_thread *th = &m->threads[t];
        if (th->tid_kind != MD_ID_NUM) continue;
        twin_key want = {th->pid, th->tid, th->pid_kind, 0};
        size_t lo = 0, hi = n; /* the first key not below want */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (by_twin_key(&keys[mid], &want) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n && keys[lo].pid_kind == th->pid_kind && keys[lo].pid == th->pid &&
            keys[lo].tid == th->tid)
            twin[t] = keys[lo].thread;
    }
    free(keys);
    return 0;
}

int md_link(const md_model *m, uint32_t *owner) {
    /* Size the maps by what goes into them, so that they never need to grow. */
    size_t nc = 0, ne = 0;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if ((e->kind == MD_RUNTIME || e->kind == MD_DRIVER) && e->corr >= 0) nc++;
        if (md_is_op(e->kind) && e->ext_id >= 0) ne++;
    }
    strobe__u64map by_corr = {0}, by_ext = {0};
    if (strobe__u64map_reserve(&by_corr, nc + 1) || strobe__u64map_reserve(&by_ext, ne + 1)) {
        strobe__u64map_free(&by_corr);
        strobe__u64map_free(&by_ext);
        return STROBE_ENOMEM;
    }
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if ((e->kind == MD_RUNTIME || e->kind == MD_DRIVER) && e->corr >= 0) {
            uint64_t *v = strobe__u64map_put(&by_corr, (uint64_t)e->corr, NULL);
            if (v == NULL) goto nomem;
            *v = i;
        }
        if (md_is_op(e->kind) && e->ext_id >= 0) {
            /* Nested operators may share an External id; the innermost (latest start) is the one
             * that launched the work. */
            int fresh;
            uint64_t *v = strobe__u64map_put(&by_ext, (uint64_t)e->ext_id, &fresh);
            if (v == NULL) goto nomem;
            if (fresh || md_ts(m, *v) <= e->ts) *v = i;
        }
    }
    uint32_t *twin = calloc(m->thread_count ? m->thread_count : 1, sizeof *twin);
    if (twin == NULL || string_twins(m, twin)) {
        free(twin);
        goto nomem;
    }

    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        uint32_t o = MD_NONE;
        if (md_is_device_work(e->kind)) {
            uint32_t rt = idmap_get(&by_corr, e->corr);
            if (rt != MD_NONE) o = md_op_parent(m, rt);
            if (o == MD_NONE) o = idmap_get(&by_ext, e->ext_id);
            if (o == MD_NONE && rt != MD_NONE) o = idmap_get(&by_ext, md_at(m, rt).ext_id);
        } else if (e->kind == MD_MEMORY && e->has_time) {
            o = md_op_parent(m, (uint32_t)i);
            if (o == MD_NONE && twin[e->thread] != MD_NONE)
                o = op_at(m, &m->threads[twin[e->thread]], e->ts);
        }
        if (o != MD_NONE) owner[i] = o + 1;
    }
    free(twin);
    strobe__u64map_free(&by_corr);
    strobe__u64map_free(&by_ext);
    return 0;
nomem:
    strobe__u64map_free(&by_corr);
    strobe__u64map_free(&by_ext);
    return STROBE_ENOMEM;
}
