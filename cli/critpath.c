/* critpath.c: HTA's critical path analysis of one rank (see critpath.h for the definitions).
 *
 * Contents: the rows (HTA's times, index_correlation, the wait_on_* args read in a second pass),
 * the window and the clipped rows, nodes, edges (a table that, like networkx's DiGraph, keeps one
 * edge per pair of nodes and the order edges were added), the CPU call stacks, the kernels and
 * synchronizations, the graph's checks, and the longest path. */
#include "critpath.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "reader/trace_reader.h"
#include "strobe/error.h"

static const char *const type_names[CLI_CP_EDGE_TYPES] = {
    "critical_path_operator", "critical_path_dependency", "critical_path_kernel_launch_delay",
    "critical_path_kernel_kernel_delay", "critical_path_sync_dependency"};

const char *cli_cp_edge_type_name(int type) {
    return type >= 0 && type < CLI_CP_EDGE_TYPES ? type_names[type] : "";
}

static const char *row_name(const cli_cp_graph *g, uint32_t row) {
    return md_str(&g->r->m, g->rows[row].name);
}

static const char *row_cat(const cli_cp_graph *g, uint32_t row) {
    return md_str(&g->r->m, g->rows[row].cat);
}

uint32_t cli_cp_row_of(const cli_cp_graph *g, int64_t idx) {
    size_t lo = 0, hi = g->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->rows[mid].idx < idx)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->nrows && g->rows[lo].idx == idx ? (uint32_t)lo : CLI_CP_NONE;
}

/* ---- rows ---------------------------------------------------------------------------------- */

typedef struct corr_ent {
    int64_t corr, idx;
    uint8_t gpu;
} corr_ent;

static int by_corr_ent(const void *a, const void *b) {
    const corr_ent *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int by_row_idx(const void *a, const void *b) {
    const cli_cp_row *x = a, *y = b;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The rank's kept rows, with HTA's index_correlation (add_correlation in hta/common/trace.py,
 * computed before the restriction): min(correlation, 0), then for a GPUKernelFilter row the last
 * other row of its correlation in file order, and for another row the last GPUKernelFilter row. */
static int load_rows(cli_cp_graph *g, const cli_hta_set *s) {
    const cli_hta_rank *r = g->r;
    const md_model *m = &r->m;
    uint64_t *kept = calloc(m->count / 64 + 1, sizeof *kept);
    corr_ent *ce = malloc((m->count ? m->count : 1) * sizeof *ce);
    size_t nce = 0, nkept = 0;
    int rc = kept && ce ? 0 : STROBE_ENOMEM;
    if (rc) goto out;
    for (size_t k = 0; k < r->count; k++)
        if (r->rows[k].mult) kept[r->rows[k].ev / 64] |= (uint64_t)1 << (r->rows[k].ev % 64);
    cli_hta_row w;
    for (size_t i = 0; cli_hta_cpu_next(r, &i, &w); i++)
        kept[i / 64] |= (uint64_t)1 << (i % 64);
    for (size_t i = 0; i < m->count; i++) {
        md_event e = md_at(m, (uint32_t)i);
        if (!cli_hta_is_row(m, &e)) continue;
        if (e.corr != -1)
            ce[nce++] = (corr_ent){e.corr, e.index, (uint8_t)cli_hta_is_gpu_row(m, &e)};
        if (kept[i / 64] >> (i % 64) & 1) nkept++;
    }
    cli_qsort(ce, nce, sizeof *ce, by_corr_ent);
    g->rows = calloc(nkept ? nkept : 1, sizeof *g->rows);
    if (g->rows == NULL) {
        rc = STROBE_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < m->count; i++) {
        if (!(kept[i / 64] >> (i % 64) & 1)) continue;
        md_event e = md_at(m, (uint32_t)i);
        cli_cp_row *row = &g->rows[g->nrows++];
        cli_hta_row_at(r, (uint32_t)i, &w);
        *row = (cli_cp_row){.ev = (uint32_t)i,
                            .idx = e.index,
                            .ts = w.ts - s->min_ts,
                            .dur = w.end - w.ts,
                            .stream = cli_hta_stream(r, (uint32_t)i),
                            .corr = e.corr,
                            .ic = e.corr < 0 ? e.corr : 0,
                            .wait_stream = -1,
                            .wait_corr = -1,
                            .name = e.name,
                            .cat = e.cat,
                            .gpu = (uint8_t)cli_hta_is_gpu_row(m, &e)};
        if (e.corr == -1) continue;
        size_t lo = 0, hi = nce;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ce[mid].corr < e.corr)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t k = lo; k < nce && ce[k].corr == e.corr; k++)
            if (ce[k].gpu != row->gpu) row->ic = ce[k].idx;
    }
    cli_qsort(g->rows, g->nrows, sizeof *g->rows, by_row_idx);
out:
    free(kept);
    free(ce);
    return rc;
}

/* The wait_on_stream and wait_on_cuda_event_record_corr_id args of the cuda_sync events, which the
 * model does not keep: a second pass over the file, when it has cuda_sync rows. @return 0,
 * STROBE_ENOMEM, or CLI_HTA_REPORTED. */
static int load_wait_args(cli_cp_graph *g, int *has_wait_col) {
    /* Kineto writes these args on cuda_sync events only: without one, the pass is not needed. */
    int any = 0;
    for (size_t k = 0; k < g->nrows && !any; k++)
        any = strcmp(md_str(&g->r->m, g->rows[k].cat), "cuda_sync") == 0;
    if (!any) return 0;
    static const char *const keys[] = {"wait_on_stream", "wait_on_cuda_event_record_corr_id"};
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    opt.arg_keys = keys;
    opt.arg_key_count = 2;
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, g->r->m.path, &opt);
    strobe_rd_item it;
    while (rc == 0 && (rc = strobe_rd_next(rd, &it)) > 0) {
        if (rc != STROBE_RD_EVENT) {
            rc = 0;
            continue;
        }
        rc = 0;
        const strobe_rd_event *ev = it.event;
        strobe_rd_value v[2];
        memset(v, 0, sizeof v);
        if (ev->args == NULL) continue;
        if (ev->arg_values)
            memcpy(v, ev->arg_values, sizeof v);
        else
            strobe_rd_obj_get_keys(ev->args, ev->args_len, keys, 2, v);
        if (v[0].raw == NULL && v[1].raw == NULL) continue;
        /* pandas makes a column of an arg any event has; rows without it hold -1 there. */
        if (v[1].raw) *has_wait_col = 1;
        uint32_t row = cli_cp_row_of(g, (int64_t)ev->index);
        if (row == CLI_CP_NONE) continue;
        int64_t x;
        if (v[0].raw && strobe_rd_value_int(&v[0], &x) == 0) g->rows[row].wait_stream = x;
        if (v[1].raw && strobe_rd_value_int(&v[1], &x) == 0) g->rows[row].wait_corr = x;
    }
    if (rc < 0) {
        if (rc == STROBE_ENOMEM) {
            strobe_rd_close(rd);
            return rc;
        }
        snprintf(g->err, sizeof g->err, "%s", rd ? strobe_rd_errmsg(rd) : "cannot read the trace");
        rc = CLI_HTA_REPORTED;
    }
    strobe_rd_close(rd);
    return rc;
}

/* ---- the window and the clipped rows -------------------------------------------------------- */

typedef struct ic_ent {
    int64_t ic;
    uint32_t row;
} ic_ent;

static int by_ic(const void *a, const void *b) {
    const ic_ent *x = a, *y = b;
    if (x->ic != y->ic) return x->ic < y->ic ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static int clip(cli_cp_graph *g, const cli_cp_opts *o) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    if (o->annotation[0] == '\0') {
        for (size_t k = 0; k < g->nrows; k++) {
            if (g->rows[k].ts < lo) lo = g->rows[k].ts;
            if (g->rows[k].ts + g->rows[k].dur > hi) hi = g->rows[k].ts + g->rows[k].dur;
        }
    } else {
        long n = 0;
        for (size_t k = 0; k < g->nrows; k++) {
            if (strstr(row_name(g, (uint32_t)k), o->annotation) == NULL) continue;
            if (n >= o->inst_lo && n <= o->inst_hi) {
                if (g->rows[k].ts < lo) lo = g->rows[k].ts;
                if (g->rows[k].ts + g->rows[k].dur > hi) hi = g->rows[k].ts + g->rows[k].dur;
            }
            n++;
        }
        if (n == 0) {
            snprintf(g->err, sizeof g->err, "could not find annotation '%s' in the trace",
                     o->annotation);
            return CLI_HTA_REPORTED;
        }
        if (o->inst_lo >= n) {
            snprintf(g->err, sizeof g->err,
                     "annotation '%s' has %ld instance%s (0 .. %ld): there is no instance %ld",
                     o->annotation, n, n == 1 ? "" : "s", n - 1, o->inst_lo);
            return CLI_HTA_REPORTED;
        }
    }
    g->win_lo = lo;
    g->win_hi = hi;
    /* The CPU rows by the row their index_correlation names (HTA joins the rows with a stream
     * with the CPU rows indexed by index_correlation). */
    ic_ent *v = malloc((g->nrows ? g->nrows : 1) * sizeof *v);
    if (v == NULL) return STROBE_ENOMEM;
    size_t nv = 0;
    for (size_t k = 0; k < g->nrows; k++)
        if (g->rows[k].stream == -1) v[nv++] = (ic_ent){g->rows[k].ic, (uint32_t)k};
    cli_qsort(v, nv, sizeof *v, by_ic);
    for (size_t k = 0; k < g->nrows; k++) {
        cli_cp_row *w = &g->rows[k];
        if (w->stream == -1) {
            w->clip = w->ts >= lo && w->ts <= hi && w->dur > 0;
        } else {
            w->clip = strcmp(row_name(g, (uint32_t)k), "Stream Wait Event") == 0;
            size_t a = 0, b = nv;
            while (a < b) {
                size_t mid = a + (b - a) / 2;
                if (v[mid].ic < w->idx)
                    a = mid + 1;
                else
                    b = mid;
            }
            for (; a < nv && v[a].ic == w->idx && !w->clip; a++) {
                const cli_cp_row *c = &g->rows[v[a].row];
                w->clip = c->ts >= lo && c->ts <= hi && c->dur > 0;
            }
        }
        g->clipped += w->clip;
    }
    free(v);
    return 0;
}

/* ---- nodes and edges ------------------------------------------------------------------------ */

static const char *const blocking_calls[] = {"cudaDeviceSynchronize",
                                             "cudaStreamSynchronize",
                                             "cudaEventQuery",
                                             "cudaEventSynchronize",
                                             "cudaMemcpy",
                                             "cudaMemcpyAsync"};

/* Whether a data_load_events pattern is found, as plain text, in the row's name (find_matches). */
static int is_data_load_row(const cli_cp_graph *g, uint32_t k) {
    for (size_t p = 0; p < g->o->ndata_load; p++)
        if (strstr(row_name(g, k), g->o->data_load[p])) return 1;
    return 0;
}

/* bound_by's data_loading test (see critpath.h), for each clipped CPU row: a pattern, as a
 * regular expression, found in its name as cli_hta_shorten_name shortens it. */
static int mark_data_load(cli_cp_graph *g) {
    if (g->o->ndata_load == 0) return 0;
    char *buf = NULL;
    size_t cap = 0;
    for (size_t k = 0; k < g->nrows; k++) {
        cli_cp_row *w = &g->rows[k];
        if (!w->clip || w->stream >= 0) continue;
        const char *name = row_name(g, (uint32_t)k);
        size_t need = strlen(name) + 1;
        if (need > cap) {
            char *b = realloc(buf, need);
            if (b == NULL) {
                free(buf);
                return STROBE_ENOMEM;
            }
            buf = b;
            cap = need;
        }
        cli_hta_shorten_name(name, buf);
        for (size_t p = 0; !w->data_load && p < g->o->ndata_load; p++)
            w->data_load = regexec(&g->o->data_load_re[p], buf, 0, NULL, 0) == 0;
    }
    free(buf);
    return 0;
}

static int is_node_row(const cli_cp_graph *g, uint32_t k) {
    const cli_cp_row *w = &g->rows[k];
    if (!w->clip) return 0;
    const char *cat = row_cat(g, k);
    return strcmp(cat, "cpu_op") == 0 || strcmp(cat, "cuda_runtime") == 0 ||
           strcmp(cat, "cuda_driver") == 0 || (w->stream != -1 && w->ic >= 0) ||
           is_data_load_row(g, k);
}

static int by_node(const void *a, const void *b) {
    const cli_cp_node *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->is_start != y->is_start) return x->is_start ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static int make_nodes(cli_cp_graph *g) {
    size_t n = 0;
    for (size_t k = 0; k < g->nrows; k++)
        n += is_node_row(g, (uint32_t)k);
    g->nodes = malloc((2 * n + 1) * sizeof *g->nodes);
    g->start_of = malloc((g->nrows + 1) * sizeof *g->start_of);
    g->end_of = malloc((g->nrows + 1) * sizeof *g->end_of);
    if (g->nodes == NULL || g->start_of == NULL || g->end_of == NULL) return STROBE_ENOMEM;
    for (size_t k = 0; k < g->nrows; k++) {
        g->start_of[k] = g->end_of[k] = CLI_CP_NONE;
        if (!is_node_row(g, (uint32_t)k)) continue;
        const cli_cp_row *w = &g->rows[k];
        uint8_t blocking = 0;
        for (size_t b = 0; b < sizeof blocking_calls / sizeof *blocking_calls; b++)
            if (strcmp(row_name(g, (uint32_t)k), blocking_calls[b]) == 0) blocking = 1;
        g->nodes[g->nnodes++] = (cli_cp_node){(uint32_t)k, w->ts, 1, blocking};
        g->nodes[g->nnodes++] = (cli_cp_node){(uint32_t)k, w->ts + w->dur, 0, blocking};
    }
    cli_qsort(g->nodes, g->nnodes, sizeof *g->nodes, by_node);
    for (size_t i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].is_start)
            g->start_of[g->nodes[i].row] = (uint32_t)i;
        else
            g->end_of[g->nodes[i].row] = (uint32_t)i;
    }
    return 0;
}

static uint64_t pair_hash(uint32_t u, uint32_t v) {
    uint64_t x = ((uint64_t)u << 32 | v) * 0x9E3779B97F4A7C15ull;
    return x ^ (x >> 29);
}

static int grow_slots(cli_cp_graph *g) {
    size_t cap = g->slot_cap ? g->slot_cap * 2 : 1024;
    uint64_t *s = calloc(cap, sizeof *s);
    if (s == NULL) return STROBE_ENOMEM;
    for (size_t k = 0; k < g->nedges; k++) {
        size_t h = pair_hash(g->edges[k].u, g->edges[k].v) & (cap - 1);
        while (s[h])
            h = (h + 1) & (cap - 1);
        s[h] = k + 1;
    }
    free(g->slots);
    g->slots = s;
    g->slot_cap = cap;
    return 0;
}

/* HTA's _add_edge_helper: weight dest.ts - src.ts, 0 for dependencies and when zero_weight. As
 * networkx's add_edge, a second edge between the same nodes replaces the first one's data in its
 * place. *out: the edge's number. @return 0, STROBE_ENOMEM, or 1 (src is dest: no edge). */
static int add_edge(cli_cp_graph *g, uint32_t src, uint32_t dst, int type, int zero_weight,
                    size_t *out) {
    if (src == dst || src == CLI_CP_NONE || dst == CLI_CP_NONE) return 1;
    int64_t w = type == CLI_CP_DEPENDENCY || type == CLI_CP_SYNC_DEPENDENCY || zero_weight
                    ? 0
                    : g->nodes[dst].ts - g->nodes[src].ts;
    if (2 * (g->nedges + 1) > g->slot_cap && grow_slots(g)) return STROBE_ENOMEM;
    size_t h = pair_hash(src, dst) & (g->slot_cap - 1);
    for (; g->slots[h]; h = (h + 1) & (g->slot_cap - 1)) {
        cli_cp_edge *e = &g->edges[g->slots[h] - 1];
        if (e->u == src && e->v == dst) {
            e->type = type;
            e->weight = w;
            if (out) *out = g->slots[h] - 1;
            return 0;
        }
    }
    if (g->nedges == g->edge_cap) {
        size_t cap = g->edge_cap ? g->edge_cap * 2 : 1024;
        cli_cp_edge *e = realloc(g->edges, cap * sizeof *e);
        if (e == NULL) return STROBE_ENOMEM;
        g->edges = e;
        g->edge_cap = cap;
    }
    g->edges[g->nedges] = (cli_cp_edge){src, dst, type, w, CLI_CP_NONE};
    g->slots[h] = ++g->nedges;
    if (out) *out = g->nedges - 1;
    return 0;
}

/* HTA's _attribute_edge: spans and kernel-kernel delays are attributed to an event. src_parent:
 * the row of the call-stack parent of the source (CLI_CP_NONE: the root). */
static void attribute(cli_cp_graph *g, size_t k, uint32_t src_parent) {
    cli_cp_edge *e = &g->edges[k];
    if (e->type != CLI_CP_OPERATOR_KERNEL && e->type != CLI_CP_KERNEL_KERNEL_DELAY) return;
    const cli_cp_node *src = &g->nodes[e->u], *dst = &g->nodes[e->v];
    if (e->type == CLI_CP_KERNEL_KERNEL_DELAY || src->is_start)
        e->attr = src->row;
    else if (!dst->is_start)
        e->attr = dst->row;
    else
        e->attr = src_parent;
}

/* ---- CPU call stacks ------------------------------------------------------------------------ */

/* An Event of hta/common/call_stack.py: the start or end of a row, ordered by compare_events. */
typedef struct cs_ev {
    int64_t idx, time, dur;
    int type; /* 1 start, -1 end */
    uint32_t row;
} cs_ev;

static int compare_events(const void *a, const void *b) {
    const cs_ev *x = a, *y = b;
    if (x->idx == y->idx) return x->type == y->type ? 0 : x->type == 1 ? -1 : 1;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    if (x->type == y->type) {
        if (x->type == 1) {
            if (x->dur == y->dur) return x->idx < y->idx ? -1 : 1;
            return x->dur < y->dur ? 1 : -1;
        }
        if (x->dur == y->dur) return x->idx < y->idx ? 1 : -1;
        return x->dur < y->dur ? -1 : 1;
    }
    if (x->dur > 0 && y->dur > 0) return x->type == 1 ? 1 : -1;
    if (x->dur == 0 && y->dur == 0) return x->idx < y->idx ? -1 : 1;
    return x->type == 1 ? -1 : 1;
}

typedef struct walk {
    uint32_t last_node, last_highlevel, last_parent;
    long depth;
} walk;

static int enter(cli_cp_graph *g, walk *s, uint32_t row, uint32_t parent) {
    uint32_t sn = g->start_of[row], en = g->end_of[row];
    if (sn == CLI_CP_NONE || en == CLI_CP_NONE) return 0;
    int rc;
    if (s->depth == 0 && s->last_highlevel != CLI_CP_NONE &&
        (rc = add_edge(g, s->last_highlevel, sn, CLI_CP_DEPENDENCY, 0, NULL)) < 0)
        return rc;
    s->depth++;
    if (s->last_node != CLI_CP_NONE) {
        size_t k;
        rc = add_edge(g, s->last_node, sn, CLI_CP_OPERATOR_KERNEL, 0, &k);
        if (rc < 0) return rc;
        if (rc == 0) attribute(g, k, s->last_parent);
    }
    s->last_node = sn;
    s->last_parent = parent;
    return 0;
}

static int leave(cli_cp_graph *g, walk *s, uint32_t row, uint32_t parent) {
    uint32_t sn = g->start_of[row], en = g->end_of[row];
    if (sn == CLI_CP_NONE || en == CLI_CP_NONE) return 0;
    s->depth--;
    if (s->last_node != CLI_CP_NONE) {
        size_t k;
        int rc = add_edge(g, s->last_node, en, CLI_CP_OPERATOR_KERNEL, g->nodes[sn].blocking, &k);
        if (rc < 0) return rc;
        if (rc == 0) attribute(g, k, s->last_parent);
    }
    if (s->depth == 0) {
        s->last_node = CLI_CP_NONE;
        s->last_highlevel = en;
    } else {
        s->last_node = en;
        s->last_parent = parent;
    }
    return 0;
}

/* One CPU thread's call stack (rows[0..n), clipped rows of the thread): built as
 * CallStackGraph builds it (a start pushes the row as a child of the top of the stack, an end
 * pops the top, whichever it is), then walked depth first (dfs_traverse). */
static int thread_stack(cli_cp_graph *g, const uint32_t *rows, size_t n) {
    cs_ev *ev = malloc((2 * n + 1) * sizeof *ev);
    uint32_t *parent = malloc((n + 1) * sizeof *parent), *first = malloc((n + 1) * sizeof *first);
    uint32_t *next = malloc((n + 1) * sizeof *next), *last = malloc((n + 1) * sizeof *last);
    uint32_t *stack = malloc((n + 1) * sizeof *stack), *cursor = malloc((n + 1) * sizeof *cursor);
    uint32_t roots_first = CLI_CP_NONE, roots_last = CLI_CP_NONE;
    int rc = ev && parent && first && next && last && stack && cursor ? 0 : STROBE_ENOMEM;
    if (rc) goto out;
    for (size_t k = 0; k < n; k++) {
        const cli_cp_row *w = &g->rows[rows[k]];
        int64_t d = w->dur > 0 ? w->dur : 0;
        ev[2 * k] = (cs_ev){w->idx, w->ts, d, 1, (uint32_t)k};
        ev[2 * k + 1] = (cs_ev){w->idx, w->ts + d, d, -1, (uint32_t)k};
        parent[k] = first[k] = next[k] = last[k] = CLI_CP_NONE;
    }
    cli_qsort(ev, 2 * n, sizeof *ev, compare_events);
    size_t top = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        uint32_t k = ev[i].row;
        if (ev[i].type == -1) {
            if (top) top--;
            continue;
        }
        uint32_t p = top ? stack[top - 1] : CLI_CP_NONE;
        parent[k] = p;
        uint32_t *f = p == CLI_CP_NONE ? &roots_first : &first[p];
        uint32_t *l = p == CLI_CP_NONE ? &roots_last : &last[p];
        if (*f == CLI_CP_NONE)
            *f = k;
        else
            next[*l] = k;
        *l = k;
        stack[top++] = k;
    }
    /* Depth first: cursor[d] is the next child to enter at depth d. */
    walk s = {CLI_CP_NONE, CLI_CP_NONE, CLI_CP_NONE, 0};
    size_t d = 0;
    cursor[0] = roots_first;
    for (;;) {
        uint32_t k = cursor[d];
        if (k != CLI_CP_NONE) {
            uint32_t p = parent[k];
            rc = enter(g, &s, rows[k], p == CLI_CP_NONE ? CLI_CP_NONE : rows[p]);
            if (rc) goto out;
            stack[d] = k;
            cursor[++d] = first[k];
            continue;
        }
        if (d == 0) break;
        k = stack[--d];
        uint32_t p = parent[k];
        rc = leave(g, &s, rows[k], p == CLI_CP_NONE ? CLI_CP_NONE : rows[p]);
        if (rc) goto out;
        cursor[d] = next[k];
    }
out:
    free(ev);
    free(parent);
    free(first);
    free(next);
    free(last);
    free(stack);
    free(cursor);
    return rc;
}

typedef struct th_ent {
    uint32_t thread, row;
} th_ent;

static const md_model *sort_model;

static int by_thread(const void *a, const void *b) {
    const th_ent *x = a, *y = b;
    if (x->thread != y->thread) {
        const md_thread *p = &sort_model->threads[x->thread], *q = &sort_model->threads[y->thread];
        if (p->pid != q->pid) return p->pid < q->pid ? -1 : 1;
        if (p->tid != q->tid) return p->tid < q->tid ? -1 : 1;
        return x->thread < y->thread ? -1 : 1;
    }
    return (x->row > y->row) - (x->row < y->row);
}

/* HTA's _construct_graph_from_call_stacks: the clipped rows grouped by (pid, tid), in that order;
 * a group whose rows all have a negative stream is a CPU thread. */
static int call_stacks(cli_cp_graph *g) {
    const md_model *m = &g->r->m;
    th_ent *v = malloc((g->clipped + 1) * sizeof *v);
    uint32_t *rows = malloc((g->clipped + 1) * sizeof *rows);
    size_t n = 0;
    int rc = v && rows ? 0 : STROBE_ENOMEM;
    if (rc) goto out;
    for (size_t k = 0; k < g->nrows; k++)
        if (g->rows[k].clip) v[n++] = (th_ent){md_thread_of(m, g->rows[k].ev), (uint32_t)k};
    sort_model = m;
    cli_qsort(v, n, sizeof *v, by_thread);
    for (size_t a = 0, b; rc == 0 && a < n; a = b) {
        int cpu = 1;
        for (b = a; b < n && v[b].thread == v[a].thread; b++) {
            rows[b - a] = v[b].row;
            if (g->rows[v[b].row].stream >= 0) cpu = 0;
        }
        if (cpu) rc = thread_stack(g, rows, b - a);
    }
out:
    free(v);
    free(rows);
    return rc;
}

/* ---- kernels -------------------------------------------------------------------------------- */

static const char *const launch_names[] = {
    "cudaMemsetAsync",    "cudaMemcpyAsync",
    "cudaLaunchKernel",   "cudaLaunchKernelExC",
    "cuLaunchKernel",     "runFunction - job_prep_and_submit_for_execution",
    "hipLaunchKernel",    "hipExtModuleLaunchKernel",
    "hipMemsetAsync",     "hipMemcpyAsync",
    "hipMemcpyWithStream"};

static int is_launch_name(const char *n) {
    for (size_t k = 0; k < sizeof launch_names / sizeof *launch_names; k++)
        if (strcmp(n, launch_names[k]) == 0) return 1;
    return 0;
}

typedef struct kref {
    int64_t key;
    uint32_t row;
} kref;

static int by_kref(const void *a, const void *b) {
    const kref *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* A step of a stream's queue (TraceCounters._get_queue_length_time_series_for_rank): +1 at a
 * runtime launch (get_runtime_launch_events_mask: a launch name, index_correlation > 0) on the
 * stream of each row with a stream and its correlation, -1 at the start of each row with a stream
 * whose correlation a launch has. Per stream by ts: HTA's sort is not stable; here launches come
 * before kernels at one time, then rows in file order. */
typedef struct qstep {
    int64_t stream, ts;
    uint32_t row;
    int delta;
} qstep;

static int by_qstep(const void *a, const void *b) {
    const qstep *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->delta != y->delta) return x->delta > y->delta ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

#define Q_NONE INT64_MIN

static int is_launch_name(const char *n);

/* The queue length after each row's step (ql[row], Q_NONE where it has none; a row with several
 * steps keeps its last, as the join on the series' index does). */
static int queue_lengths(cli_cp_graph *g, int64_t *ql) {
    kref *ks = malloc((g->nrows + 1) * sizeof *ks);    /* rows with a stream, by correlation */
    int64_t *lc = malloc((g->nrows + 1) * sizeof *lc); /* the launches' correlations */
    qstep *st = NULL;
    size_t nks = 0, nlc = 0, n = 0, cap = 2 * g->nrows + 1;
    int rc = ks && lc ? 0 : STROBE_ENOMEM;
    if (rc) goto out;
    for (size_t k = 0; k < g->nrows; k++) {
        const cli_cp_row *w = &g->rows[k];
        ql[k] = Q_NONE;
        if (w->stream != -1) ks[nks++] = (kref){w->corr, (uint32_t)k};
        if (w->ic > 0 && is_launch_name(row_name(g, (uint32_t)k))) lc[nlc++] = w->corr;
    }
    cli_qsort(ks, nks, sizeof *ks, by_kref);
    cli_hta_sort_i64(lc, nlc);
    st = malloc(cap * sizeof *st);
    if (st == NULL) {
        rc = STROBE_ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < g->nrows; k++) {
        const cli_cp_row *w = &g->rows[k];
        if (w->stream != -1 && cli_hta_find_i64(lc, nlc, w->corr) >= 0)
            st[n++] = (qstep){w->stream, w->ts, (uint32_t)k, -1};
        if (!(w->ic > 0 && is_launch_name(row_name(g, (uint32_t)k)))) continue;
        size_t lo = 0, hi = nks;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ks[mid].key < w->corr)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < nks && ks[lo].key == w->corr; lo++) {
            if (n == cap) {
                qstep *s2 = realloc(st, 2 * cap * sizeof *st);
                if (s2 == NULL) {
                    rc = STROBE_ENOMEM;
                    goto out;
                }
                st = s2;
                cap *= 2;
            }
            st[n++] = (qstep){g->rows[ks[lo].row].stream, w->ts, (uint32_t)k, 1};
        }
    }
    cli_qsort(st, n, sizeof *st, by_qstep);
    int64_t q = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || st[i].stream != st[i - 1].stream) q = 0;
        q += st[i].delta;
        ql[st[i].row] = q;
    }
out:
    free(ks);
    free(lc);
    free(st);
    return rc;
}

typedef struct launch {
    uint32_t row;
    int64_t ts, stream, gpu, pid, tid;
} launch;

static int64_t thread_pid(const cli_cp_graph *g, uint32_t row) {
    const md_model *m = &g->r->m;
    return m->threads[md_thread_of(m, g->rows[row].ev)].pid;
}

static int64_t thread_tid(const cli_cp_graph *g, uint32_t row) {
    const md_model *m = &g->r->m;
    return m->threads[md_thread_of(m, g->rows[row].ev)].tid;
}

static int by_launch_ts(const void *a, const void *b) {
    const launch *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* The kernel (a row with a stream and index_correlation > 0) row k's index_correlation names. */
static uint32_t kernel_of(const cli_cp_graph *g, uint32_t k) {
    if (g->rows[k].ic <= 0) return CLI_CP_NONE;
    uint32_t kr = cli_cp_row_of(g, g->rows[k].ic);
    if (kr == CLI_CP_NONE || g->rows[kr].stream == -1 || g->rows[kr].ic <= 0) return CLI_CP_NONE;
    return kr;
}

/* The synchronization tables: per cudaEventRecord correlation, the last launch on its event's
 * (gpu, stream) up to it (index_previous_launch); per cudaStreamWaitEvent row, the first launch
 * after it on its thread and the stream it waits on (index_next_launch). */
typedef struct sync_tabs {
    launch *l; /* runtime launches with a kernel, by ts (launch_id = position) */
    size_t nl;
    int64_t *rec_corr, *rec_prev; /* cudaEventRecord correlation -> previous launch's idx */
    size_t nrec;
    int has_records;                /* HTA's cuda_record_calls is not None */
    uint32_t *wait_row, *wait_next; /* cudaStreamWaitEvent row -> next launch's row */
    size_t nwait;
} sync_tabs;

static void sync_free(sync_tabs *t) {
    free(t->l);
    free(t->rec_corr);
    free(t->rec_prev);
    free(t->wait_row);
    free(t->wait_next);
}

static int has_name(const cli_cp_graph *g, const char *name) {
    for (size_t k = 0; k < g->nrows; k++)
        if (strcmp(row_name(g, (uint32_t)k), name) == 0) return 1;
    return 0;
}

/* The number of launches with ts <= x (t->l is sorted by ts). */
static size_t launches_upto(const sync_tabs *t, int64_t x) {
    size_t lo = 0, hi = t->nl;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->l[mid].ts <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int sync_tables(cli_cp_graph *g, sync_tabs *t) {
    memset(t, 0, sizeof *t);
    size_t n = g->nrows + 1;
    t->l = malloc(n * sizeof *t->l);
    t->rec_corr = malloc(n * sizeof *t->rec_corr);
    t->rec_prev = malloc(n * sizeof *t->rec_prev);
    t->wait_row = malloc(n * sizeof *t->wait_row);
    t->wait_next = malloc(n * sizeof *t->wait_next);
    if (!t->l || !t->rec_corr || !t->rec_prev || !t->wait_row || !t->wait_next)
        return STROBE_ENOMEM;
    for (size_t k = 0; k < g->nrows; k++) {
        if (!is_launch_name(row_name(g, (uint32_t)k))) continue;
        uint32_t kr = kernel_of(g, (uint32_t)k);
        if (kr == CLI_CP_NONE) continue;
        t->l[t->nl++] = (launch){(uint32_t)k,
                                 g->rows[k].ts,
                                 g->rows[kr].stream,
                                 thread_pid(g, kr),
                                 thread_pid(g, (uint32_t)k),
                                 thread_tid(g, (uint32_t)k)};
    }
    cli_qsort(t->l, t->nl, sizeof *t->l, by_launch_ts);
    /* The rows that wait on a recorded event (wait_on_stream > -1). */
    uint32_t *waits = t->wait_next; /* scratch until the waits below are filled */
    size_t nwaits = 0;
    for (size_t k = 0; k < g->nrows; k++)
        if (g->rows[k].wait_stream > -1) waits[nwaits++] = (uint32_t)k;
    /* cudaEventRecord: its event's stream and gpu, from the rows waiting on it. */
    if (has_name(g, "cudaEventRecord")) {
        for (size_t k = 0; k < g->nrows; k++) {
            if (strcmp(row_name(g, (uint32_t)k), "cudaEventRecord") != 0) continue;
            const cli_cp_row *rec = &g->rows[k];
            int64_t stream = -1, gpu = -1;
            for (size_t j = 0; j < nwaits && stream == -1; j++)
                if (g->rows[waits[j]].wait_corr == rec->corr) {
                    stream = g->rows[waits[j]].wait_stream;
                    gpu = thread_pid(g, waits[j]);
                }
            if (stream == -1) continue;
            /* The last launch on (gpu, stream) at or before the record (launches first at one
             * time). */
            int64_t prev = -1;
            for (size_t i = launches_upto(t, rec->ts); i > 0 && prev == -1; i--)
                if (t->l[i - 1].stream == stream && t->l[i - 1].gpu == gpu)
                    prev = g->rows[t->l[i - 1].row].idx;
            t->rec_corr[t->nrec] = rec->corr;
            t->rec_prev[t->nrec++] = prev;
        }
        t->has_records = t->nrec > 0;
    }
    if (has_name(g, "cudaStreamWaitEvent") && has_name(g, "Stream Wait Event")) {
        for (size_t k = 0; k < g->nrows; k++) {
            if (strcmp(row_name(g, (uint32_t)k), "cudaStreamWaitEvent") != 0) continue;
            uint32_t kr = kernel_of(g, (uint32_t)k);
            if (kr == CLI_CP_NONE) continue;
            int64_t stream = g->rows[kr].stream, pid = thread_pid(g, (uint32_t)k),
                    tid = thread_tid(g, (uint32_t)k), ts = g->rows[k].ts;
            uint32_t nx = CLI_CP_NONE;
            for (size_t i = launches_upto(t, ts); i < t->nl && nx == CLI_CP_NONE; i++)
                if (t->l[i].stream == stream && t->l[i].pid == pid && t->l[i].tid == tid)
                    nx = t->l[i].row;
            t->wait_row[t->nwait] = (uint32_t)k;
            t->wait_next[t->nwait++] = nx;
        }
    }
    return 0;
}

/* HTA's _construct_graph_from_kernels. */
static int kernels(cli_cp_graph *g, const cli_cp_opts *o, int has_wait_col) {
    int64_t *ql = malloc((g->nrows + 1) * sizeof *ql);
    kref *ks = malloc((g->nrows + 1) * sizeof *ks);
    uint32_t *last = malloc((g->nrows + 1) * sizeof *last); /* per stream slot: end node */
    int64_t *streams = malloc((g->nrows + 1) * sizeof *streams);
    uint32_t *ksync = malloc((g->nrows + 1) * sizeof *ksync); /* dest row -> src row */
    sync_tabs t = {0};
    size_t nk = 0, ns = 0;
    int rc = ql && ks && last && streams && ksync ? 0 : STROBE_ENOMEM;
    if (rc == 0) rc = queue_lengths(g, ql);
    if (rc == 0) rc = sync_tables(g, &t);
    if (rc) goto out;
    for (size_t k = 0; k < g->nrows; k++) {
        const cli_cp_row *w = &g->rows[k];
        ksync[k] = CLI_CP_NONE;
        const char *name = row_name(g, (uint32_t)k);
        if (!w->clip || w->ic < 0) continue;
        if (w->stream == -1 && strcmp(name, "Event Sync") != 0 && strcmp(name, "Context Sync") != 0)
            continue;
        /* By start, but sync events by their end (a Stream Sync can overlap a copy). */
        int64_t key = strcmp(row_cat(g, (uint32_t)k), "cuda_sync") == 0 ? w->ts + w->dur : w->ts;
        ks[nk++] = (kref){key, (uint32_t)k};
    }
    cli_qsort(ks, nk, sizeof *ks, by_kref);
    for (size_t i = 0; i < nk; i++) {
        uint32_t k = ks[i].row;
        const cli_cp_row *w = &g->rows[k];
        const char *name = row_name(g, k);
        size_t slot = 0;
        if (strcmp(row_cat(g, k), "cuda_sync") == 0) {
            uint32_t rt = cli_cp_row_of(g, w->ic);
            uint32_t rt_end = rt == CLI_CP_NONE ? CLI_CP_NONE : g->end_of[rt];
            int swe = strcmp(name, "Stream Wait Event") == 0;
            if (swe || strcmp(name, "Event Sync") == 0) {
                if (!has_wait_col || !t.has_records) continue;
                int64_t prev = -1;
                for (size_t j = 0; j < t.nrec; j++)
                    if (t.rec_corr[j] == w->wait_corr) prev = t.rec_prev[j];
                if (prev == -1) continue;
                uint32_t pl = cli_cp_row_of(g, prev);
                uint32_t src = pl == CLI_CP_NONE ? CLI_CP_NONE : cli_cp_row_of(g, g->rows[pl].ic);
                if (src == CLI_CP_NONE) continue;
                if (swe) {
                    uint32_t dl = CLI_CP_NONE;
                    for (size_t j = 0; j < t.nwait; j++)
                        if (t.wait_row[j] == rt) dl = t.wait_next[j];
                    uint32_t dst =
                        dl == CLI_CP_NONE ? CLI_CP_NONE : cli_cp_row_of(g, g->rows[dl].ic);
                    if (dst != CLI_CP_NONE) ksync[dst] = src;
                } else if (g->end_of[src] != CLI_CP_NONE && rt_end != CLI_CP_NONE) {
                    if ((rc = add_edge(g, g->end_of[src], rt_end, CLI_CP_SYNC_DEPENDENCY, 0,
                                       NULL)) < 0)
                        goto out;
                }
                continue;
            }
            int ctx = strcmp(name, "Context Sync") == 0;
            if (!ctx && strcmp(name, "Stream Sync") != 0) continue;
            for (size_t j = 0; j < ns && rt_end != CLI_CP_NONE; j++) {
                if (!ctx && streams[j] != w->stream) continue;
                if ((rc = add_edge(g, last[j], rt_end, CLI_CP_SYNC_DEPENDENCY, 0, NULL)) < 0)
                    goto out;
            }
            continue;
        }
        uint32_t sn = g->start_of[k], en = g->end_of[k];
        size_t ek;
        if ((rc = add_edge(g, sn, en, CLI_CP_OPERATOR_KERNEL, 0, &ek)) < 0) goto out;
        if (rc == 0) attribute(g, ek, CLI_CP_NONE);
        rc = 0;
        uint32_t sync_src = ksync[k], sync_end = CLI_CP_NONE;
        int added = 0, launch_added = 0;
        if (sync_src != CLI_CP_NONE) {
            sync_end = g->end_of[sync_src];
            if (sync_end == CLI_CP_NONE) {
                sync_src = CLI_CP_NONE;
            } else {
                if ((rc = add_edge(g, sync_end, sn, CLI_CP_SYNC_DEPENDENCY, 0, NULL)) < 0) goto out;
                rc = 0;
                added = 1;
            }
            ksync[k] = CLI_CP_NONE;
        }
        for (slot = 0; slot < ns && streams[slot] != w->stream; slot++)
            ;
        uint32_t prev = slot < ns ? last[slot] : CLI_CP_NONE;
        uint32_t rt = cli_cp_row_of(g, w->ic);
        int64_t rt_ts = rt == CLI_CP_NONE ? INT64_MIN : g->rows[rt].ts;
        int64_t qr = rt == CLI_CP_NONE ? Q_NONE : ql[rt];
        if (rt != CLI_CP_NONE && qr == 1 && ql[k] == 0 &&
            (prev == CLI_CP_NONE || g->nodes[prev].ts < rt_ts) &&
            (sync_src == CLI_CP_NONE || g->nodes[sync_end].ts < rt_ts) &&
            g->start_of[rt] != CLI_CP_NONE) {
            if ((rc = add_edge(g, g->start_of[rt], sn, CLI_CP_KERNEL_LAUNCH_DELAY, 0, NULL)) < 0)
                goto out;
            rc = 0;
            added = launch_added = 1;
        } else if (prev != CLI_CP_NONE &&
                   (sync_src == CLI_CP_NONE || g->nodes[sync_end].ts < g->nodes[prev].ts)) {
            if ((rc = add_edge(g, prev, sn, CLI_CP_KERNEL_KERNEL_DELAY, 0, &ek)) < 0) goto out;
            if (rc == 0) attribute(g, ek, CLI_CP_NONE);
            rc = 0;
            added = 1;
        }
        (void)added; /* HTA logs a warning when no edge leads to the kernel */
        if (o->zero_weight_launch && !launch_added && rt != CLI_CP_NONE &&
            g->start_of[rt] != CLI_CP_NONE) {
            if ((rc = add_edge(g, g->start_of[rt], sn, CLI_CP_KERNEL_LAUNCH_DELAY, 1, NULL)) < 0)
                goto out;
            rc = 0;
        }
        if (slot == ns) streams[ns++] = w->stream;
        last[slot] = en;
    }
out:
    free(ql);
    free(ks);
    free(last);
    free(streams);
    free(ksync);
    sync_free(&t);
    return rc < 0 ? rc : 0;
}

/* ---- checks and the longest path ------------------------------------------------------------ */

static int validate(cli_cp_graph *g) {
    for (size_t k = 0; k < g->nedges; k++) {
        const cli_cp_edge *e = &g->edges[k];
        if (e->type != CLI_CP_SYNC_DEPENDENCY) continue;
        int64_t a = g->rows[g->nodes[e->u].row].stream, b = g->rows[g->nodes[e->v].row].stream;
        if (a != -1 && a == b) {
            snprintf(g->err, sizeof g->err,
                     "a synchronization edge joins two kernels of stream %" PRId64
                     " (events %" PRId64 " and %" PRId64 "): the graph is not valid",
                     a, g->rows[g->nodes[e->u].row].idx, g->rows[g->nodes[e->v].row].idx);
            return CLI_HTA_REPORTED;
        }
    }
    return 0;
}

/* networkx's dag_longest_path over the graph as networkx holds it: nodes in the order their first
 * edge named them, successors and predecessors in the order their edges were added; the order is
 * topological_sort's (generations of nodes whose predecessors are done); each node takes its
 * first best predecessor, a node with a negative best starts afresh, and the path ends at the
 * first node of the best length. */
static int longest(cli_cp_graph *g) {
    size_t nn = g->nnodes, ne = g->nedges;
    uint32_t *order = malloc((nn + 1) * sizeof *order), *pos = malloc((nn + 1) * sizeof *pos);
    uint32_t *indeg = calloc(nn + 1, sizeof *indeg), *soff = calloc(nn + 2, sizeof *soff);
    uint32_t *poff = calloc(nn + 2, sizeof *poff), *sadj = malloc((ne + 1) * sizeof *sadj);
    uint32_t *padj = malloc((ne + 1) * sizeof *padj), *topo = malloc((nn + 1) * sizeof *topo);
    int64_t *dist = malloc((nn + 1) * sizeof *dist);
    uint32_t *from = malloc((nn + 1) * sizeof *from);
    int rc = order && pos && indeg && soff && poff && sadj && padj && topo && dist && from
                 ? 0
                 : STROBE_ENOMEM;
    if (rc) goto out;
    size_t no = 0;
    for (size_t i = 0; i < nn; i++)
        pos[i] = CLI_CP_NONE;
    for (size_t k = 0; k < ne; k++) {
        uint32_t uv[2] = {g->edges[k].u, g->edges[k].v};
        for (int j = 0; j < 2; j++)
            if (pos[uv[j]] == CLI_CP_NONE) {
                pos[uv[j]] = (uint32_t)no;
                order[no++] = uv[j];
            }
        soff[g->edges[k].u + 1]++;
        poff[g->edges[k].v + 1]++;
    }
    g->graph_nodes = no;
    if (no < 2) {
        snprintf(g->err, sizeof g->err,
                 "no edge in the window (%zu clipped rows): there is no path to find", g->clipped);
        rc = CLI_HTA_REPORTED;
        goto out;
    }
    for (size_t i = 0; i < nn; i++) {
        soff[i + 1] += soff[i];
        poff[i + 1] += poff[i];
    }
    {
        uint32_t *sf = malloc((nn + 1) * sizeof *sf), *pf = malloc((nn + 1) * sizeof *pf);
        if (sf == NULL || pf == NULL) {
            free(sf);
            free(pf);
            rc = STROBE_ENOMEM;
            goto out;
        }
        memcpy(sf, soff, nn * sizeof *sf);
        memcpy(pf, poff, nn * sizeof *pf);
        for (size_t k = 0; k < ne; k++) {
            sadj[sf[g->edges[k].u]++] = (uint32_t)k;
            padj[pf[g->edges[k].v]++] = (uint32_t)k;
            indeg[g->edges[k].v]++;
        }
        free(sf);
        free(pf);
    }
    /* topological_generations: the first generation in node order, then each node's children as
     * their last predecessor is done. */
    size_t nt = 0;
    for (size_t i = 0; i < no; i++)
        if (indeg[order[i]] == 0) topo[nt++] = order[i];
    for (size_t i = 0; i < nt; i++) {
        uint32_t u = topo[i];
        for (uint32_t j = soff[u]; j < soff[u + 1]; j++) {
            uint32_t v = g->edges[sadj[j]].v;
            if (--indeg[v] == 0) topo[nt++] = v;
        }
    }
    if (nt != no) {
        snprintf(g->err, sizeof g->err,
                 "the graph has a cycle (%zu of its %zu nodes are on or after one): no longest "
                 "path",
                 no - nt, no);
        rc = CLI_HTA_REPORTED;
        goto out;
    }
    size_t best = 0;
    for (size_t i = 0; i < nt; i++) {
        uint32_t v = topo[i];
        int64_t bd = 0;
        uint32_t bu = v;
        int any = 0;
        for (uint32_t j = poff[v]; j < poff[v + 1]; j++) {
            const cli_cp_edge *e = &g->edges[padj[j]];
            int64_t d = dist[e->u] + (e->weight < 0 ? 0 : e->weight);
            if (!any || d > bd) {
                bd = d;
                bu = e->u;
                any = 1;
            }
        }
        if (bd < 0) {
            bd = 0;
            bu = v;
        }
        dist[v] = bd;
        from[v] = bu;
        if (bd > dist[topo[best]]) best = i;
    }
    /* The path, walked back from the best node. */
    size_t np = 0;
    for (uint32_t v = topo[best];; v = from[v]) {
        order[np++] = v;
        if (from[v] == v) break;
    }
    g->path = malloc(np * sizeof *g->path);
    g->path_edges = malloc((np ? np : 1) * sizeof *g->path_edges);
    if (g->path == NULL || g->path_edges == NULL) {
        rc = STROBE_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < np; i++)
        g->path[i] = order[np - 1 - i];
    g->npath = np;
    g->length = dist[topo[best]];
    for (size_t i = 0; i + 1 < np; i++) {
        uint32_t u = g->path[i], v = g->path[i + 1];
        for (uint32_t j = soff[u]; j < soff[u + 1]; j++)
            if (g->edges[sadj[j]].v == v) g->path_edges[i] = sadj[j];
    }
    if (np < 2) {
        snprintf(g->err, sizeof g->err, "the longest path has a single node: no path to show");
        rc = CLI_HTA_REPORTED;
    }
out:
    free(order);
    free(pos);
    free(indeg);
    free(soff);
    free(poff);
    free(sadj);
    free(padj);
    free(topo);
    free(dist);
    free(from);
    return rc;
}

int cli_cp_analyze(cli_cp_graph *g, const cli_hta_rank *r, const cli_cp_opts *o) {
    memset(g, 0, sizeof *g);
    g->r = r;
    g->o = o;
    cli_hta_set one = {0};
    one.min_ts = o->t0;
    int has_wait_col = 0;
    int rc = load_rows(g, &one);
    if (rc == 0) rc = load_wait_args(g, &has_wait_col);
    if (rc == 0) rc = clip(g, o);
    if (rc == 0) rc = mark_data_load(g);
    if (rc == 0) rc = make_nodes(g);
    if (rc == 0) rc = call_stacks(g);
    if (rc == 0) rc = kernels(g, o, has_wait_col);
    if (rc == 0) rc = validate(g);
    if (rc == 0) rc = longest(g);
    return rc;
}

void cli_cp_free(cli_cp_graph *g) {
    free(g->rows);
    free(g->nodes);
    free(g->start_of);
    free(g->end_of);
    free(g->edges);
    free(g->slots);
    free(g->path);
    free(g->path_edges);
    memset(g, 0, sizeof *g);
}

const char *cli_cp_bound_by(const cli_cp_graph *g, const cli_cp_edge *e) {
    if (e->type == CLI_CP_KERNEL_KERNEL_DELAY) return "gpu_kernel_kernel_overhead";
    if (e->type == CLI_CP_KERNEL_LAUNCH_DELAY) return "gpu_kernel_launch_overhead";
    if (e->type != CLI_CP_OPERATOR_KERNEL || e->attr == CLI_CP_NONE) return "";
    if (g->rows[e->attr].stream < 0)
        return g->rows[e->attr].data_load ? "data_loading" : "cpu_bound";
    if (cli_hta_kernel_type(row_name(g, e->attr)) == CLI_HTA_COMMUNICATION)
        return "gpu_communication_bound";
    return "gpu_compute_bound";
}
