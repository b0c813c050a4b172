/* kseq.c: HTA's frequent CUDA kernel sequences (`strobe kernels --sequences`), from
 * CudaKernelAnalysis.get_frequent_cuda_kernel_sequences and _overlay_frequent_patterns_with_trace
 * (hta/analyzers/cuda_kernel_analysis.py), over HTA's call graph (CallGraph,
 * hta/common/trace_call_graph.py; CallStackGraph, hta/common/trace_call_stack.py).
 *
 * HTA's definitions, over the chosen rank's rows as HTA keeps them (hta.h):
 *   - call stacks: per CPU thread (not one whose pid or tid is 0, which HTA takes for a GPU), its
 *     rows without a stream, by CallStackGraph's walk over their ends in HTA's order (see
 *     ks_less): an opening end's parent is the top of a stack, and it is pushed; a closing end
 *     pops the top (whichever row that is); depth 0 for the outermost. A kernel (a GPU row) is a
 *     child of its launch, the CPU row its index_correlation names (hta.h), one level deeper;
 *   - num_kernels and kernel_dur_sum of a row: the kernels under it, and their durations;
 *   - candidates: the rows of the graph whose name holds the operator name (a substring); the
 *     roots are the candidates of the smallest depth among them with num_kernels >=
 *     min_pattern_len, in file order;
 *   - a root's pattern: its name, then the names of the kernels under it by start, joined by "|";
 *     per pattern: count, "GPU kernel duration (us)" (the roots' kernel_dur_sum summed) and
 *     "CPU op duration (us)" (the roots' durations summed); all patterns, by count (largest
 *     first) then pattern;
 *   - the overlaid trace (-o): the trace's events as they are, but that an event under the root of
 *     one of the first top_k patterns (the root, its descendants and their kernels) gets
 *     args.Patterns = {pattern: count} of those patterns; with HTA's compress_other_kernels (its
 *     default, always on here), every other X event gets empty args and, when its name is one of
 *     HTA's symbols (the names and categories of the rows it keeps, of all the traces given), the
 *     symbol's id as its name, as does any other event with empty args; the "PyTorch Profiler"
 *     event of pid "Spans" gets the symbols, {"id": "name"}, as its args.
 * Choices where HTA leaves one open: the symbol ids number the symbols in order of first
 * appearance (rank by rank, in file order, a row's cat before its name; HTA's come from a Python
 * set, so they differ from run to run); ties in start keep file order; a zero-length row's end
 * against a negative-length row's (HTA raises there) takes the general order; HTA's link of a
 * backward thread's first operators under the main thread's annotations, which changes depths, is
 * not done; a pattern that a root's args already name is added, not merged; no overlay is written
 * when there is no pattern (as in HTA). HTA writes "overlaid_" + the trace's name into output_dir;
 * here -o names the file (a name ending in .gz is gzip'd). String pids and tids (Kineto's "stream
 * 7", "Spans") are written as numbers, named by process_name and thread_name events at the end of
 * the array (idmap.h), as viewers want numbers.
 *
 * Contents: options, the call graph, patterns, the overlaid trace (HTA's symbols, events
 * rewritten), the command. */
#include "kseq.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "hta.h"
#include "idmap.h"
#include "reader/json_pull.h"
#include "reader/trace_reader.h"
#include "strobe/error.h"

int cli_kseq_wanted(int argc, char **argv) {
    int first = 0, want = 0;
    for (int o; (o = cli_getopt(argc, argv, ":n:f:o:j:qhV", cmd_kernels_options, &first)) != -1;)
        want |= o == CLI_KSEQ_OPT_OUTPUT || (o >= CLI_KSEQ_OPT_SEQUENCES && o <= CLI_KSEQ_OPT_RANK);
    return want;
}

typedef struct kseq_opts {
    const char *op, *out;
    unsigned long long min_len, top_k;
    int64_t rank;
    int format, quiet;
} kseq_opts;

/* ---- the call graph ------------------------------------------------------------------------ */

/* A node: a CPU row of a CPU thread, or a kernel (thread MD_NONE) under its launch. */
typedef struct ks_node {
    cli_hta_row w;
    uint32_t thread;
    int32_t depth;
    uint32_t size;    /* the node and its CPU descendants: nodes [k, k + size) in CPU order */
    int64_t nkern;    /* kernels under it (CPU rows), or 1 */
    int64_t kern_dur; /* their durations summed */
} ks_node;

typedef struct ks_kernel {
    uint32_t parent; /* its launch's node */
    cli_hta_row w;
} ks_kernel;

typedef struct ks_graph {
    ks_node *nodes; /* CPU nodes, thread by thread, in the order of their open ends */
    size_t n;
    ks_kernel *kern; /* sorted by parent, start, file order */
    size_t nk;
} ks_graph;

static int kern_cmp(const void *a, const void *b) {
    const ks_kernel *x = a, *y = b;
    if (x->parent != y->parent) return x->parent < y->parent ? -1 : 1;
    if (x->w.ts != y->w.ts) return x->w.ts < y->w.ts ? -1 : 1;
    return (x->w.ev > y->w.ev) - (x->w.ev < y->w.ev);
}

static int by_ev(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* An end of a row: HTA's (index, dur, kind, time), kind -1 opening, 1 closing. */
typedef struct ks_end {
    uint32_t thread, ev;
    int64_t dur, time;
    int kind;
    uint32_t node;
} ks_end;

/* HTA's order of ends (_less_than and _cmp_events_with_zero_duration in
 * hta/common/trace_call_stack.py): by time; the two ends of one row, opening first; with a
 * zero-length row, its ends inside a positive one's that open before or close after them, and
 * two zero-length rows nested by index; a close before an open; of two opens the longer first, of
 * two closes the shorter; then by index (opens ascending, closes descending). Threads apart. */
static int ks_less(const ks_end *x, const ks_end *y) {
    if (x->time != y->time) return x->time < y->time;
    if (x->ev == y->ev) return x->kind < 0;
    if (x->dur == 0 || y->dur == 0) {
        if (x->dur == 0 && y->dur > 0) return y->kind > 0;
        if (x->dur > 0 && y->dur == 0) return x->kind < 0;
        if (x->dur == 0 && y->dur == 0) {
            if (x->kind < 0 && y->kind < 0) return x->ev < y->ev;
            if (x->kind > 0 && y->kind > 0) return x->ev > y->ev;
            return x->kind < 0;
        }
        /* one zero, one negative (HTA raises here): fall through to the general order */
    }
    if (x->kind > 0 && y->kind < 0) return 1;
    if (x->kind < 0 && y->kind > 0) return 0;
    if (x->kind < 0 && x->dur != y->dur) return x->dur > y->dur;
    if (x->kind > 0 && x->dur != y->dur) return x->dur < y->dur;
    return x->kind < 0 ? x->ev < y->ev : x->ev > y->ev;
}

static int ks_end_cmp(const void *a, const void *b) {
    const ks_end *x = a, *y = b;
    if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
    if (ks_less(x, y)) return -1;
    return ks_less(y, x) ? 1 : 0;
}

static void graph_free(ks_graph *g) {
    free(g->nodes);
    free(g->kern);
    memset(g, 0, sizeof *g);
}

static int graph_build(const cli_hta_rank *r, ks_graph *g) {
    const md_model *m = &r->m;
    memset(g, 0, sizeof *g);
    g->nodes = malloc((r->cpu_count + 1) * sizeof *g->nodes);
    g->kern = malloc((r->count + 1) * sizeof *g->kern);
    uint32_t *stack = malloc((r->cpu_count + 1) * sizeof *stack);
    uint32_t *evs = malloc((r->cpu_count + 1) * sizeof *evs);
    cli_hta_iters it = {0};
    int rc = g->nodes && g->kern && stack && evs ? cli_hta_iters_init(&it, r) : STROBE_ENOMEM;
    cli_hta_row w;
    for (size_t i = 0; rc == 0 && cli_hta_cpu_next(r, &i, &w); i++) {
        uint32_t t = md_thread_of(m, w.ev);
        const md_thread *th = &m->threads[t];
        if ((th->pid_kind == MD_ID_NUM && th->pid == 0) ||
            (th->tid_kind == MD_ID_NUM && th->tid == 0))
            continue; /* HTA's GPU thread */
        ks_node *nd = &g->nodes[g->n++];
        memset(nd, 0, sizeof *nd);
        nd->w = w;
        nd->thread = t;
    }
    /* Nesting, as CallStackGraph._construct_call_stack_graph does it: per thread, the opening
     * and closing ends of its rows sorted by HTA's order (ks_end_cmp); an open end's parent is the
     * stack's top, and it is pushed; a close end pops the top, whichever row that is. The nodes
     * are then put in the order of their open ends, so that a node's descendants, opened while
     * it was on the stack, follow it: nodes [k, k + size). */
    ks_end *ends = rc ? NULL : malloc((2 * g->n + 1) * sizeof *ends);
    ks_node *sorted = rc ? NULL : malloc((g->n + 1) * sizeof *sorted);
    if (rc == 0 && (ends == NULL || sorted == NULL)) rc = STROBE_ENOMEM;
    for (size_t k = 0; rc == 0 && k < g->n; k++) {
        const ks_node *nd = &g->nodes[k];
        int64_t dur = nd->w.end - nd->w.ts;
        ends[2 * k] = (ks_end){nd->thread, nd->w.ev, dur, nd->w.ts, -1, (uint32_t)k};
        ends[2 * k + 1] = (ks_end){nd->thread, nd->w.ev, dur, nd->w.end, 1, (uint32_t)k};
    }
    if (rc == 0) cli_qsort(ends, 2 * g->n, sizeof *ends, ks_end_cmp);
    size_t sp = 0, opened = 0;
    for (size_t k = 0; rc == 0 && k <= 2 * g->n; k++) {
        const ks_end *e = k < 2 * g->n ? &ends[k] : NULL;
        if (e == NULL || (k > 0 && e->thread != ends[k - 1].thread)) {
            for (; sp > 0; sp--) /* the thread's rows never closed */
                sorted[stack[sp - 1]].size = (uint32_t)(opened - stack[sp - 1]);
        }
        if (e == NULL) break;
        if (e->kind < 0) {
            sorted[opened] = g->nodes[e->node];
            sorted[opened].depth = (int32_t)sp;
            stack[sp++] = (uint32_t)opened++;
        } else if (sp > 0) {
            sp--;
            sorted[stack[sp]].size = (uint32_t)(opened - stack[sp]);
        }
    }
    if (rc == 0) {
        free(g->nodes);
        g->nodes = sorted;
        sorted = NULL;
    }
    free(sorted);
    free(ends);
    /* The nodes' events, for finding a launch's node. */
    for (size_t k = 0; rc == 0 && k < g->n; k++)
        evs[k] = g->nodes[k].w.ev;
    if (rc == 0) cli_qsort(evs, g->n, sizeof *evs, by_ev);
    uint32_t *node_of = NULL; /* node of evs[k] */
    if (rc == 0) {
        node_of = malloc((g->n + 1) * sizeof *node_of);
        if (node_of == NULL) rc = STROBE_ENOMEM;
    }
    for (size_t k = 0; rc == 0 && k < g->n; k++) {
        uint32_t *p = bsearch(&g->nodes[k].w.ev, evs, g->n, sizeof *evs, by_ev);
        node_of[p - evs] = (uint32_t)k;
    }
    /* Kernels, under their launch: the CPU row their correlation id last names. */
    uint32_t last_ev = MD_NONE;
    for (size_t k = 0; rc == 0 && k < r->count; k++) {
        const md_event e = md_at(m, r->rows[k].ev);
        if (!cli_hta_is_gpu_row(m, &e) || e.corr == -1 || r->rows[k].ev == last_ev) continue;
        last_ev = r->rows[k].ev; /* a kernel the restriction repeats is one node */
        size_t lo = 0, hi = it.ncorr;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (it.cr[mid].corr <= e.corr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0 || it.cr[lo - 1].corr != e.corr) continue;
        uint32_t pev = (uint32_t)it.cr[lo - 1].ev;
        uint32_t *p = g->n ? bsearch(&pev, evs, g->n, sizeof *evs, by_ev) : NULL;
        if (p == NULL) continue;
        g->kern[g->nk].parent = node_of[p - evs];
        g->kern[g->nk].w = r->rows[k];
        g->kern[g->nk++].w.mult = 1;
    }
    if (rc == 0) cli_qsort(g->kern, g->nk, sizeof *g->kern, kern_cmp);
    /* num_kernels and kernel_dur_sum: prefix sums over the CPU order, a subtree being a range. */
    int64_t *cnt = rc ? NULL : calloc(g->n + 1, sizeof *cnt), *dur = NULL;
    if (cnt) dur = calloc(g->n + 1, sizeof *dur);
    if (rc == 0 && (cnt == NULL || dur == NULL)) rc = STROBE_ENOMEM;
    for (size_t k = 0; rc == 0 && k < g->nk; k++) {
        cnt[g->kern[k].parent + 1]++;
        dur[g->kern[k].parent + 1] += g->kern[k].w.end - g->kern[k].w.ts;
    }
    for (size_t k = 0; rc == 0 && k < g->n; k++) {
        cnt[k + 1] += cnt[k];
        dur[k + 1] += dur[k];
    }
    for (size_t k = 0; rc == 0 && k < g->n; k++) {
        ks_node *nd = &g->nodes[k];
        nd->nkern = cnt[k + nd->size] - cnt[k];
        nd->kern_dur = dur[k + nd->size] - dur[k];
    }
    free(cnt);
    free(dur);
    free(node_of);
    free(stack);
    free(evs);
    cli_hta_iters_free(&it);
    if (rc) graph_free(g);
    return rc;
}

/* ---- patterns ------------------------------------------------------------------------------ */

/* A root: a CPU node (kernel MD_NONE) or a kernel (kernel its index in g->kern). */
typedef struct ks_root {
    uint32_t node, kernel;
    uint32_t *names; /* the pattern: the root's name, its kernels' names (string ids) */
    size_t len;
    int64_t gpu, cpu;
} ks_root;

typedef struct ks_pattern {
    char *text;
    int64_t count, gpu, cpu;
    size_t first, n; /* its roots: roots[first .. first + n) */
} ks_pattern;

static int root_cmp(const void *a, const void *b) {
    const ks_root *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    for (size_t k = 0; k < n; k++)
        if (x->names[k] != y->names[k]) return x->names[k] < y->names[k] ? -1 : 1;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    uint32_t ex = x->kernel == MD_NONE ? x->node : x->kernel,
             ey = y->kernel == MD_NONE ? y->node : y->kernel;
    return (ex > ey) - (ex < ey);
}

static int pattern_cmp(const void *a, const void *b) {
    const ks_pattern *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->text, y->text);
}

typedef struct ks_result {
    ks_root *roots;
    size_t nroots;
    ks_pattern *pat;
    size_t npat;
} ks_result;

static void result_free(ks_result *res) {
    for (size_t k = 0; k < res->nroots; k++)
        free(res->roots[k].names);
    for (size_t k = 0; k < res->npat; k++)
        free(res->pat[k].text);
    free(res->roots);
    free(res->pat);
    memset(res, 0, sizeof *res);
}

/* The kernels under CPU node k: g->kern entries whose parent is in [k, k + size). */
static void kernels_under(const ks_graph *g, uint32_t k, size_t *lo, size_t *hi) {
    size_t a = 0, b = g->nk;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (g->kern[mid].parent < k)
            a = mid + 1;
        else
            b = mid;
    }
    *lo = a;
    b = g->nk;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (g->kern[mid].parent < k + g->nodes[k].size)
            a = mid + 1;
        else
            b = mid;
    }
    *hi = a;
}

static int kw_cmp(const void *a, const void *b) {
    const cli_hta_row *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

static int find_patterns(const cli_hta_rank *r, const ks_graph *g, const kseq_opts *o,
                         ks_result *res) {
    const md_model *m = &r->m;
    memset(res, 0, sizeof *res);
    int32_t min_depth = INT32_MAX;
    /* Candidates: CPU nodes and kernels whose name holds the operator name. */
    for (size_t k = 0; k < g->n; k++)
        if (g->nodes[k].depth < min_depth &&
            strstr(md_str(m, md_name_of(m, g->nodes[k].w.ev)), o->op))
            min_depth = g->nodes[k].depth;
    for (size_t k = 0; k < g->nk; k++) {
        int32_t d = g->nodes[g->kern[k].parent].depth + 1;
        if (d < min_depth && strstr(md_str(m, md_name_of(m, g->kern[k].w.ev)), o->op))
            min_depth = d;
    }
    size_t cap = 16;
    res->roots = malloc(cap * sizeof *res->roots);
    if (res->roots == NULL) return STROBE_ENOMEM;
    cli_hta_row *kw = malloc((g->nk + 1) * sizeof *kw);
    if (kw == NULL) return STROBE_ENOMEM;
    int rc = 0;
    for (size_t k = 0; rc == 0 && min_depth != INT32_MAX && k < g->n + g->nk; k++) {
        ks_root rt = {MD_NONE, MD_NONE, NULL, 0, 0, 0};
        size_t nkw = 0;
        if (k < g->n) {
            const ks_node *nd = &g->nodes[k];
            if (nd->depth != min_depth || nd->nkern < 0 ||
                (unsigned long long)nd->nkern < o->min_len ||
                !strstr(md_str(m, md_name_of(m, nd->w.ev)), o->op))
                continue;
            size_t lo, hi;
            kernels_under(g, (uint32_t)k, &lo, &hi);
            for (size_t j = lo; j < hi; j++)
                kw[nkw++] = g->kern[j].w;
            cli_qsort(kw, nkw, sizeof *kw, kw_cmp);
            rt.node = (uint32_t)k;
            rt.gpu = nd->kern_dur;
            rt.cpu = nd->w.end - nd->w.ts;
            rt.names = malloc((nkw + 1) * sizeof *rt.names);
            if (rt.names) rt.names[0] = md_name_of(m, nd->w.ev);
        } else {
            const ks_kernel *kn = &g->kern[k - g->n];
            if (g->nodes[kn->parent].depth + 1 != min_depth || o->min_len > 1 ||
                !strstr(md_str(m, md_name_of(m, kn->w.ev)), o->op))
                continue;
            kw[nkw++] = kn->w;
            rt.kernel = (uint32_t)(k - g->n);
            rt.gpu = rt.cpu = kn->w.end - kn->w.ts;
            rt.names = malloc((nkw + 1) * sizeof *rt.names);
            if (rt.names) rt.names[0] = md_name_of(m, kn->w.ev);
        }
        if (rt.names == NULL) {
            rc = STROBE_ENOMEM;
            break;
        }
        for (size_t j = 0; j < nkw; j++)
            rt.names[j + 1] = md_name_of(m, kw[j].ev);
        rt.len = nkw + 1;
        if (res->nroots == cap) {
            ks_root *v = realloc(res->roots, (cap *= 2) * sizeof *v);
            if (v == NULL) {
                free(rt.names);
                rc = STROBE_ENOMEM;
                break;
            }
            res->roots = v;
        }
        res->roots[res->nroots++] = rt;
    }
    free(kw);
    if (rc) return rc;
    cli_qsort(res->roots, res->nroots, sizeof *res->roots, root_cmp);
    res->pat = malloc((res->nroots + 1) * sizeof *res->pat);
    if (res->pat == NULL) return STROBE_ENOMEM;
    for (size_t a = 0, b; a < res->nroots; a = b) {
        const ks_root *x = &res->roots[a];
        ks_pattern *p = &res->pat[res->npat];
        memset(p, 0, sizeof *p);
        size_t len = 1;
        for (size_t j = 0; j < x->len; j++)
            len += strlen(md_str(m, x->names[j])) + 1;
        p->text = malloc(len);
        if (p->text == NULL) return STROBE_ENOMEM;
        res->npat++;
        p->text[0] = '\0';
        for (size_t j = 0; j < x->len; j++) {
            if (j) strcat(p->text, "|");
            strcat(p->text, md_str(m, x->names[j]));
        }
        p->first = a;
        for (b = a; b < res->nroots && res->roots[b].len == x->len &&
                    memcmp(res->roots[b].names, x->names, x->len * sizeof *x->names) == 0;
             b++) {
            p->count++;
            p->gpu += res->roots[b].gpu;
            p->cpu += res->roots[b].cpu;
        }
        p->n = b - a;
    }
    cli_qsort(res->pat, res->npat, sizeof *res->pat, pattern_cmp);
    return 0;
}

/* ---- the overlaid trace -------------------------------------------------------------------- */

/* HTA's symbols: strings of the rows it keeps, numbered in order of first appearance. */
typedef struct ks_syms {
    char **key;
    uint32_t *id;
    size_t cap, n;
    char **by_id; /* the strings in id order */
} ks_syms;

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static long sym_find(const ks_syms *t, const char *s) {
    if (t->cap == 0) return -1;
    for (size_t i = str_hash(s) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (t->key[i] == NULL) return -1;
        if (strcmp(t->key[i], s) == 0) return (long)t->id[i];
    }
}

static int sym_add(ks_syms *t, const char *s) {
    if (sym_find(t, s) >= 0) return 0;
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        char **key = calloc(cap, sizeof *key);
        uint32_t *id = calloc(cap, sizeof *id);
        char **by_id = realloc(t->by_id, cap * sizeof *by_id);
        if (key == NULL || id == NULL || by_id == NULL) {
            free(key);
            free(id);
            if (by_id) t->by_id = by_id;
            return STROBE_ENOMEM;
        }
        t->by_id = by_id;
        for (size_t k = 0; k < t->cap; k++) {
            if (t->key[k] == NULL) continue;
            size_t i = str_hash(t->key[k]) & (cap - 1);
            while (key[i])
                i = (i + 1) & (cap - 1);
            key[i] = t->key[k];
            id[i] = t->id[k];
        }
        free(t->key);
        free(t->id);
        t->key = key;
        t->id = id;
        t->cap = cap;
    }
    char *c = strdup(s);
    if (c == NULL) return STROBE_ENOMEM;
    size_t i = str_hash(s) & (t->cap - 1);
    while (t->key[i])
        i = (i + 1) & (t->cap - 1);
    t->key[i] = c;
    t->id[i] = (uint32_t)t->n;
    t->by_id[t->n++] = c;
    return 0;
}

static void syms_free(ks_syms *t) {
    for (size_t k = 0; k < t->n; k++)
        free(t->by_id[k]);
    free(t->key);
    free(t->id);
    free(t->by_id);
    memset(t, 0, sizeof *t);
}

static int syms_build(const cli_hta_set *s, ks_syms *t) {
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const md_model *m = &s->ranks[k].m;
        for (size_t i = 0; rc == 0 && i < m->count; i++) {
            const md_event e = md_at(m, (uint32_t)i);
            if (!cli_hta_is_row(m, &e)) continue;
            rc = sym_add(t, md_str(m, e.cat));
            if (rc == 0) rc = sym_add(t, md_str(m, e.name));
        }
    }
    return rc;
}

/* What each file index of an event gets: the top patterns it is in (sorted pairs). */
typedef struct ks_mark {
    uint64_t index;
    uint32_t pattern;
} ks_mark;

static int mark_cmp(const void *a, const void *b) {
    const ks_mark *x = a, *y = b;
    if (x->index != y->index) return x->index < y->index ? -1 : 1;
    return (x->pattern > y->pattern) - (x->pattern < y->pattern);
}

/* The output: a FILE or a gzFile. */
typedef struct ks_out {
    FILE *f;
    gzFile gz;
    char *buf; /* the FILE's memory when gz (open_memstream is not needed: gz writes through) */
    int err;
} ks_out;

static void out_write(ks_out *o, const char *s, size_t n) {
    if (o->err || n == 0) return;
    if (o->gz) {
        if (gzwrite(o->gz, s, (unsigned)n) != (int)n) o->err = 1;
    } else if (fwrite(s, 1, n, o->f) != n) {
        o->err = 1;
    }
}

static void out_str(ks_out *o, const char *s) {
    out_write(o, s, strlen(s));
}

/* A JSON string through cli_json_str (a memory stream, then out). */
static void out_json_str(ks_out *o, const char *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    if (mf == NULL) {
        o->err = 1;
        return;
    }
    cli_json_str(mf, s);
    if (fclose(mf) != 0) o->err = 1;
    out_write(o, buf, len);
    free(buf);
}

/* Writes event e (raw) with its name and args replaced as the overlay says (see the top). */
static int write_event(ks_out *o, const strobe_rd_event *e, const ks_syms *sy, const ks_mark *marks,
                       size_t nmarks, const ks_pattern *pat) {
    /* The patterns of this event. */
    size_t lo = 0, hi = nmarks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (marks[mid].index < e->index)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (e->raw_len == 0 || e->raw[0] != '{') { /* not an object (a bad event): as it is */
        out_write(o, e->raw, e->raw_len);
        return 0;
    }
    size_t mfirst = lo, mlast = lo;
    while (mlast < nmarks && marks[mlast].index == e->index)
        mlast++;
    int in_pattern = mlast > mfirst, is_x = e->ph.s && strcmp(e->ph.s, "X") == 0;
    int profiler = e->name.s && strstr(e->name.s, "PyTorch Profiler") &&
                   e->pid.kind == STROBE_RD_ID_STRING && e->pid.str.s &&
                   strcmp(e->pid.str.s, "Spans") == 0;
    int empty_args = 0;
    if (e->args) {
        const char *p = e->args + 1, *end = e->args + e->args_len - 1;
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
            p++;
        empty_args = p == end;
    }
    int drop_args = !in_pattern && is_x;
    /* The name becomes its symbol id when the args end up empty. */
    int args_empty_after = !in_pattern && (drop_args || empty_args);
    long sym = args_empty_after && e->name.s ? sym_find(sy, e->name.s) : -1;
    int rewrite_args = in_pattern || drop_args || profiler;
    if (!rewrite_args && sym < 0) {
        out_write(o, e->raw, e->raw_len);
        return 0;
    }
    strobe_jp jp;
    strobe_jp_init_mem(&jp, e->raw, e->raw_len);
    int rc = 0, t = strobe_jp_next(&jp), n = 0, args_done = 0;
    if (t != STROBE_JP_OBJ_BEGIN) rc = STROBE_EFORMAT;
    out_str(o, "{");
    while (rc == 0 && (t = strobe_jp_next(&jp)) == STROBE_JP_KEY) {
        char key[16];
        size_t klen = jp.str_len < sizeof key - 1 ? jp.str_len : sizeof key - 1;
        memcpy(key, jp.str, klen);
        key[klen] = '\0';
        int is_name = jp.str_len == 4 && strcmp(key, "name") == 0;
        int is_args = jp.str_len == 4 && strcmp(key, "args") == 0;
        const char *kraw = NULL;
        size_t krlen = 0;
        /* The key's raw text: re-encode the decoded key. */
        char *kbuf = malloc(jp.str_len + 1);
        if (kbuf == NULL) {
            rc = STROBE_ENOMEM;
            break;
        }
        memcpy(kbuf, jp.str, jp.str_len);
        kbuf[jp.str_len] = '\0';
        strobe_jp_capture_begin(&jp, 0);
        t = strobe_jp_next(&jp);
        if ((t == STROBE_JP_OBJ_BEGIN || t == STROBE_JP_ARR_BEGIN) &&
            strobe_jp_skip_container(&jp) <= STROBE_JP_EOF)
            t = STROBE_JP_ERROR;
        int64_t off;
        if (t <= STROBE_JP_EOF || strobe_jp_capture_end(&jp, &kraw, &krlen, &off) != 0) {
            free(kbuf);
            rc = STROBE_EFORMAT;
            break;
        }
        out_str(o, n++ ? ", " : "");
        out_json_str(o, kbuf);
        out_str(o, ": ");
        free(kbuf);
        if (is_name && sym >= 0) {
            char b[32];
            snprintf(b, sizeof b, "\"%ld\"", sym);
            out_str(o, b);
        } else if (is_args && rewrite_args) {
            args_done = 1;
            if (profiler) {
                out_str(o, "{");
                for (size_t k = 0; k < sy->n; k++) {
                    char b[32];
                    snprintf(b, sizeof b, "%s\"%zu\": ", k ? ", " : "", k);
                    out_str(o, b);
                    out_json_str(o, sy->by_id[k]);
                }
                out_str(o, "}");
            } else if (in_pattern) {
                /* The args, with "Patterns" added last. */
                size_t len = krlen;
                while (len > 0 && kraw[len - 1] != '}')
                    len--;
                if (t != STROBE_JP_OBJ_BEGIN || len < 2 || kraw[0] != '{') {
                    out_str(o, "{");
                } else {
                    const char *p = kraw + 1;
                    while (p < kraw + len - 1 &&
                           (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
                        p++;
                    out_write(o, kraw, len - 1);
                    if (p < kraw + len - 1) out_str(o, ", ");
                }
                out_str(o, "\"Patterns\": {");
                for (size_t k = mfirst; k < mlast; k++) {
                    char b[32];
                    out_str(o, k > mfirst ? ", " : "");
                    out_json_str(o, pat[marks[k].pattern].text);
                    snprintf(b, sizeof b, ": %" PRId64, pat[marks[k].pattern].count);
                    out_str(o, b);
                }
                out_str(o, "}}");
            } else {
                out_str(o, "{}");
            }
        } else {
            out_write(o, kraw, krlen);
        }
    }
    if (rc == 0 && t != STROBE_JP_OBJ_END) rc = STROBE_EFORMAT;
    if (rc == 0 && rewrite_args && !args_done) {
        /* No args member: add one. */
        out_str(o, n ? ", \"args\": " : "\"args\": ");
        if (profiler) {
            out_str(o, "{");
            for (size_t k = 0; k < sy->n; k++) {
                char b[32];
                snprintf(b, sizeof b, "%s\"%zu\": ", k ? ", " : "", k);
                out_str(o, b);
                out_json_str(o, sy->by_id[k]);
            }
            out_str(o, "}");
        } else if (in_pattern) {
            out_str(o, "{\"Patterns\": {");
            for (size_t k = mfirst; k < mlast; k++) {
                char b[32];
                out_str(o, k > mfirst ? ", " : "");
                out_json_str(o, pat[marks[k].pattern].text);
                snprintf(b, sizeof b, ": %" PRId64, pat[marks[k].pattern].count);
                out_str(o, b);
            }
            out_str(o, "}}");
        } else {
            out_str(o, "{}");
        }
    }
    out_str(o, "}");
    strobe_jp_free(&jp);
    return rc;
}

/* The event indexes under the first top_k patterns, as sorted (index, pattern) pairs. */
static int collect_marks(const ks_graph *g, const ks_result *res, const md_model *m, size_t top_k,
                         ks_mark **out, size_t *nout) {
    size_t n = 0, cap = 64;
    ks_mark *v = malloc(cap * sizeof *v);
    if (v == NULL) return STROBE_ENOMEM;
#define KS_PUSH(ev, p)                                                                             \
    do {                                                                                           \
        if (n == cap) {                                                                            \
            ks_mark *g2 = realloc(v, (cap *= 2) * sizeof *v);                                      \
            if (g2 == NULL) {                                                                      \
                free(v);                                                                           \
                return STROBE_ENOMEM;                                                              \
            }                                                                                      \
            v = g2;                                                                                \
        }                                                                                          \
        v[n++] = (ks_mark){md_at(m, (ev)).index, (uint32_t)(p)};                                   \
    } while (0)
    for (size_t p = 0; p < top_k && p < res->npat; p++) {
        const ks_pattern *pt = &res->pat[p];
        for (size_t r = pt->first; r < pt->first + pt->n; r++) {
            const ks_root *rt = &res->roots[r];
            if (rt->kernel != MD_NONE) {
                KS_PUSH(g->kern[rt->kernel].w.ev, p);
                continue;
            }
            for (uint32_t k = rt->node; k < rt->node + g->nodes[rt->node].size; k++)
                KS_PUSH(g->nodes[k].w.ev, p);
            size_t lo, hi;
            kernels_under(g, rt->node, &lo, &hi);
            for (size_t k = lo; k < hi; k++)
                KS_PUSH(g->kern[k].w.ev, p);
        }
    }
#undef KS_PUSH
    cli_qsort(v, n, sizeof *v, mark_cmp);
    size_t u = 0; /* an event twice under one pattern counts once */
    for (size_t k = 0; k < n; k++)
        if (u == 0 || mark_cmp(&v[u - 1], &v[k]) != 0) v[u++] = v[k];
    *out = v;
    *nout = u;
    return 0;
}

/* The output as a FILE, for the id map's writes (idmap.h). */
static ssize_t out_cookie_write(void *cookie, const char *buf, size_t n) {
    ks_out *o = cookie;
    out_write(o, buf, n);
    return o->err ? -1 : (ssize_t)n;
}

/* Writes event e as write_event() does, its string ids as numbers of the map `ids`, through of
 * (a FILE over o). */
static int write_mapped(ks_out *o, FILE *of, cli_idmap *ids, const strobe_rd_event *e,
                        const ks_syms *sy, const ks_mark *marks, size_t nmarks,
                        const ks_pattern *pat) {
    if (!cli_idmap_wants(e)) return write_event(o, e, sy, marks, nmarks, pat);
    ks_out mo = {0};
    char *buf = NULL;
    size_t len = 0;
    if ((mo.f = open_memstream(&buf, &len)) == NULL) return STROBE_ENOMEM;
    int rc = write_event(&mo, e, sy, marks, nmarks, pat);
    if (fclose(mo.f) != 0 || mo.err) rc = rc ? rc : STROBE_ENOMEM;
    if (rc == 0) rc = cli_idmap_put_event(ids, of, e, buf, len);
    if (rc == 0 && fflush(of) != 0) o->err = 1;
    free(buf);
    return rc;
}

/* Ends the event array, after nev events: the names of the ids the map made, the bracket. */
static void end_events(ks_out *o, FILE *of, const cli_idmap *ids, size_t nev) {
    cli_idmap_put_names(ids, of, nev);
    if (fflush(of) != 0) o->err = 1;
    out_str(o, "\n]");
}

/* Writes the overlaid trace of `path` to o->out. @return 0, a STROBE_E* code, or CLI_HTA_REPORTED.
 */
static int write_overlay(const kseq_opts *opt, const char *path, const cli_hta_set *s,
                         const ks_graph *g, const ks_result *res, const md_model *m) {
    ks_syms sy = {0};
    ks_mark *marks = NULL;
    size_t nmarks = 0;
    int rc = syms_build(s, &sy);
    if (rc == 0) rc = collect_marks(g, res, m, opt->top_k, &marks, &nmarks);
    ks_out o = {0};
    cli_idmap ids = {0};
    if (rc == 0) rc = cli_idmap_reserve(&ids, m);
    if (rc == 0) {
        if (cli_ends_with(opt->out, ".gz"))
            o.gz = gzopen(opt->out, "wb");
        else
            o.f = fopen(opt->out, "wb");
        if (o.gz == NULL && o.f == NULL) {
            fprintf(stderr, "strobe kernels: %s: %s\n", cli_esc(opt->out), strerror(errno));
            rc = CLI_HTA_REPORTED;
        }
    }
    FILE *of = NULL;
    if (rc == 0 &&
        (of = fopencookie(&o, "w", (cookie_io_functions_t){NULL, out_cookie_write, NULL, NULL})) ==
            NULL)
        rc = STROBE_ENOMEM;
    strobe_rd *rd = NULL;
    if (rc == 0 && (rc = strobe_rd_open(&rd, path, NULL)) != 0) {
        fprintf(stderr, "strobe kernels: %s\n", cli_esc(strobe_rd_errmsg(rd)));
        rc = CLI_HTA_REPORTED;
    }
    strobe_rd_item it;
    int nmeta = 0, events_open = 0, r;
    size_t nev = 0;
    while (rc == 0 && (r = strobe_rd_next(rd, &it)) > 0) {
        if (r == STROBE_RD_META) {
            if (events_open) {
                end_events(&o, of, &ids, nev);
                events_open = 0;
            }
            out_str(&o, nmeta++ ? ",\n" : "{\n");
            out_json_str(&o, it.meta->key.s ? it.meta->key.s : "");
            out_str(&o, ": ");
            out_write(&o, it.meta->value.raw, it.meta->value.len);
            continue;
        }
        if (!events_open && nev == 0) {
            out_str(&o, nmeta++ ? ",\n\"traceEvents\": [\n" : "{\n\"traceEvents\": [\n");
            events_open = 1;
        } else if (!events_open) {
            rc = STROBE_EFORMAT; /* events after a later member: not a Kineto trace */
            break;
        }
        out_str(&o, nev++ ? ",\n" : "");
        rc = write_mapped(&o, of, &ids, it.event, &sy, marks, nmarks, res->pat);
    }
    if (rc == 0 && r < 0) {
        fprintf(stderr, "strobe kernels: %s\n", cli_esc(strobe_rd_errmsg(rd)));
        rc = CLI_HTA_REPORTED;
    }
    if (rc == 0) {
        if (nev == 0) out_str(&o, nmeta++ ? ",\n\"traceEvents\": [" : "{\n\"traceEvents\": [");
        if (events_open || nev == 0) end_events(&o, of, &ids, nev);
        out_str(&o, "\n}\n");
    }
    int close_err = 0;
    if (of && fclose(of) != 0) close_err = 1;
    cli_idmap_free(&ids);
    if (o.gz) close_err = gzclose(o.gz) != Z_OK;
    if (o.f) close_err = fclose(o.f) != 0;
    if (rc == 0 && (o.err || close_err)) {
        fprintf(stderr, "strobe kernels: %s: write failed\n", cli_esc(opt->out));
        rc = CLI_HTA_REPORTED;
    }
    if (rc != 0 && (o.gz || o.f)) unlink(opt->out);
    strobe_rd_close(rd);
    free(marks);
    syms_free(&sy);
    return rc;
}

/* ---- the command --------------------------------------------------------------------------- */

static int run(const kseq_opts *o, const cli_hta_set *s) {
    const cli_hta_rank *r = NULL;
    for (size_t k = 0; k < s->count; k++)
        if (s->ranks[k].rank == o->rank) r = &s->ranks[k];
    if (r == NULL) {
        fprintf(stderr, "strobe kernels: no trace of rank %" PRId64 " among those given\n",
                o->rank);
        return CLI_HTA_REPORTED;
    }
    ks_graph g;
    ks_result res = {0};
    int rc = graph_build(r, &g);
    if (rc == 0) rc = find_patterns(r, &g, o, &res);
    static const char *const cols[] = {"pattern", "count", "GPU kernel duration (us)",
                                       "CPU op duration (us)"};
    static const uint8_t text[] = {1, 0, 0, 0};
    cli_hta_table t = {cols, text, 4, NULL, 0, 0};
    for (size_t p = 0; rc == 0 && p < res.npat; p++)
        rc = CLI_HTA_ROW(&t, CLI_HTA_TEXT(res.pat[p].text), CLI_HTA_INT(res.pat[p].count),
                         CLI_HTA_INT(res.pat[p].gpu), CLI_HTA_INT(res.pat[p].cpu));
    if (rc == 0 && res.npat == 0)
        fprintf(stderr,
                "strobe kernels: no operator whose name holds \"%s\" launched %llu kernels or "
                "more%s\n",
                cli_esc(o->op), o->min_len, o->out ? "; no overlaid trace written" : "");
    if (rc == 0 && res.npat && o->out) rc = write_overlay(o, r->m.path, s, &g, &res, &r->m);
    if (rc == 0) cli_hta_table_print(&t, o->format, stdout);
    cli_hta_table_free(&t);
    result_free(&res);
    graph_free(&g);
    return rc;
}

int cli_kseq_main(int argc, char **argv) {
    kseq_opts o = {NULL, NULL, 3, 5, 0, CLI_TABLE, 0};
    int first = 0, seq = 0;
    for (int c; (c = cli_getopt(argc, argv, ":n:f:o:j:qhV", cmd_kernels_options, &first)) != -1;) {
        unsigned long long v;
        switch (c) {
        case 'h':
            return cli_help(cmd_kernels_usage);
        case 'V':
            return cli_version();
        case 'q':
            o.quiet = 1;
            break;
        case 'f':
            o.format = cli_parse_format(optarg);
            if (o.format < 0) return cli_usage_error("kernels", "unknown --format", optarg);
            break;
        case 'j':
            if (cli_parse_jobs("kernels", optarg) != 0) return CLI_BAD_INPUT;
            break;
        case CLI_KSEQ_OPT_SEQUENCES:
            seq = 1;
            break;
        case CLI_KSEQ_OPT_OPERATOR:
            if (optarg[0] == '\0')
                return cli_usage_error("kernels", "--operator needs a name", NULL);
            o.op = optarg;
            break;
        case CLI_KSEQ_OPT_MIN_LEN:
            if (cli_parse_count("kernels", "--min-pattern-len", optarg, UINT32_MAX, &o.min_len))
                return CLI_BAD_INPUT;
            break;
        case CLI_KSEQ_OPT_TOP_K:
            if (cli_parse_count("kernels", "--top-k", optarg, SIZE_MAX, &o.top_k))
                return CLI_BAD_INPUT;
            break;
        case CLI_KSEQ_OPT_RANK:
            if (cli_parse_count("kernels", "--rank", optarg, INT64_MAX, &v)) return CLI_BAD_INPUT;
            o.rank = (int64_t)v;
            break;
        case CLI_KSEQ_OPT_OUTPUT:
            o.out = optarg;
            break;
        case '?':
        case ':':
            return cli_option_error("kernels", c, argv, cmd_kernels_options);
        default:
            return cli_usage_error("kernels", "this option does not go with --sequences",
                                   argv[optind - 1]);
        }
    }
    if (!seq)
        return cli_usage_error("kernels",
                               "--operator, --min-pattern-len, --top-k, --rank and -o go with "
                               "--sequences",
                               NULL);
    if (o.op == NULL) return cli_usage_error("kernels", "--sequences needs --operator NAME", NULL);
    if (first >= argc) return cli_usage_error("kernels", "give a trace or a folder", NULL);
    for (int k = first; o.out && k < argc; k++)
        if (strcmp(argv[k], "-") == 0)
            return cli_usage_error("kernels", "with -o the trace is read twice: give a file, not",
                                   "-");
    cli_hta_set s;
    if (cli_hta_load(&s, "kernels", argv + first, (size_t)(argc - first), o.quiet) != 0)
        return CLI_BAD_INPUT;
    int work = run(&o, &s);
    cli_hta_free(&s);
    if (work == CLI_HTA_REPORTED) return CLI_BAD_INPUT;
    return cli_finish("kernels", argc - first == 1 ? argv[first] : "traces", work, CLI_OK);
}
