/* series.c: HTA's time series of a rank: queue length per stream and memory bandwidth per kind of
 * copy (the definitions are in series.h).
 *
 * Contents: the queue length series; the bandwidth args (a second read of the file); the
 * bandwidth series; pandas' describe(). */
#include "series.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "reader/trace_reader.h"
#include "strobe/error.h"

/* HTA's row order of a row with a stream: file order, and when restricted the kept kernels
 * (GPUKernelFilter rows) before the CPU rows that have a stream (HTA concatenates them so; its
 * MTIA branch keeps a set of row indices: file order). */
static uint64_t row_order(const cli_hta_set *s, const md_model *m, const md_event *e, uint32_t ev) {
    return (s->restricted && !s->mtia && !cli_hta_is_gpu_row(m, e) ? (uint64_t)1 << 32 : 0) + ev;
}

/* The pid and tid of event ev's thread, as numbers (0 for a string id that is not one). */
static void event_ids(const md_model *m, uint32_t ev, int64_t *pid, int64_t *tid) {
    const md_thread *t = &m->threads[md_thread_of(m, ev)];
    *pid = t->pid_kind == MD_ID_NUM ? t->pid : 0;
    *tid = t->tid_kind == MD_ID_NUM ? t->tid : 0;
}

/* ---- queue length ---------------------------------------------------------------------------- */

typedef struct kref {
    int64_t corr;
    uint64_t order;
    const cli_hta_row *w;
} kref;

static int by_kref(const void *a, const void *b) {
    const kref *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static int by_qpoint(const void *a, const void *b) {
    const cli_hta_qpoint *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int push_qpoint(cli_hta_queue *q, size_t *cap, cli_hta_qpoint p) {
    if (q->n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        cli_hta_qpoint *g = realloc(q->p, c * sizeof *g);
        if (g == NULL) return STROBE_ENOMEM;
        q->p = g;
        *cap = c;
    }
    q->p[q->n++] = p;
    return 0;
}

/* The first entry of ks[0..n) with correlation corr, or n. */
static size_t first_kref(const kref *ks, size_t n, int64_t corr) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ks[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int cli_hta_queue_series(const cli_hta_set *s, const cli_hta_rank *r, cli_hta_queue *q) {
    const md_model *m = &r->m;
    memset(q, 0, sizeof *q);
    size_t nk = 0, nl = 0, nks = 0, nlc = 0, cap = 0;
    for (size_t k = 0; k < r->count; k++)
        nk += r->rows[k].mult;
    int64_t *linked = malloc((m->count ? m->count : 1) * sizeof *linked);
    int64_t *lc = malloc((m->count ? m->count : 1) * sizeof *lc); /* the launches' correlations */
    kref *ks = malloc((nk ? nk : 1) * sizeof *ks);
    int rc = linked && lc && ks ? 0 : STROBE_ENOMEM;
    if (rc) goto out;
    /* Correlations with a GPUKernelFilter row, before the restriction. */
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if (cli_hta_is_row(m, e) && cli_hta_is_gpu_row(m, e) && e->corr != -1)
            linked[nl++] = e->corr;
    }
    cli_hta_sort_i64(linked, nl);
    /* The kernels by correlation, in HTA's row order, each copy once. */
    for (size_t k = 0; k < r->count; k++) {
        const cli_hta_row *w = &r->rows[k];
        const md_event e_ev = md_at(m, w->ev), *e = &e_ev;
        for (uint32_t c = 0; c < w->mult; c++)
            ks[nks++] = (kref){e->corr, row_order(s, m, e, w->ev), w};
    }
    cli_qsort(ks, nks, sizeof *ks, by_kref);
    /* Launches, in HTA's row order (kept kernels' rows first when restricted, then CPU rows):
     * +1 on the stream of each kernel of their correlation. */
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        cli_hta_row cw;
        for (size_t k = 0, ev = 0;
             rc == 0 && (pass == 0 ? k < r->count : cli_hta_cpu_next(r, &ev, &cw)); k++, ev++) {
            const cli_hta_row *w = pass == 0 ? &r->rows[k] : &cw;
            const md_event e_ev = md_at(m, w->ev), *e = &e_ev;
            if (!cli_hta_is_launch(md_str(m, e->name)) || cli_hta_is_gpu_row(m, e) ||
                e->corr == -1 || cli_hta_find_i64(linked, nl, e->corr) < 0)
                continue;
            lc[nlc++] = e->corr;
            uint64_t order =
                (s->restricted && !s->mtia && pass == 1 ? (uint64_t)1 << 32 : 0) + w->ev;
            for (size_t j = first_kref(ks, nks, e->corr);
                 rc == 0 && j < nks && ks[j].corr == e->corr; j++) {
                cli_hta_qpoint p = {
                    .ts = w->ts, .stream = cli_hta_stream(r, ks[j].w->ev), .len = 1, .seq = order};
                event_ids(m, ks[j].w->ev, &p.pid, &p.tid);
                rc = push_qpoint(q, &cap, p);
            }
        }
    }
    cli_hta_sort_i64(lc, nlc);
    /* Kernels: -1 when a launch has their correlation (HTA's semi-join), else counted apart. */
    for (size_t k = 0; rc == 0 && k < nks; k++) {
        if (ks[k].corr == -1 || cli_hta_find_i64(lc, nlc, ks[k].corr) < 0) {
            q->unlaunched++;
            continue;
        }
        cli_hta_qpoint p = {.ts = ks[k].w->ts,
                            .stream = cli_hta_stream(r, ks[k].w->ev),
                            .len = -1,
                            .seq = ((uint64_t)1 << 40) + ks[k].order};
        event_ids(m, ks[k].w->ev, &p.pid, &p.tid);
        rc = push_qpoint(q, &cap, p);
    }
    if (rc == 0) {
        cli_qsort(q->p, q->n, sizeof *q->p, by_qpoint);
        int64_t run = 0;
        for (size_t k = 0; k < q->n; k++) {
            if (k == 0 || q->p[k].stream != q->p[k - 1].stream) run = 0;
            run += q->p[k].len;
            q->p[k].len = run;
        }
    }
out:
    free(linked);
    free(lc);
    free(ks);
    if (rc) cli_hta_queue_free(q);
    return rc;
}

void cli_hta_queue_free(cli_hta_queue *q) {
    free(q->p);
    memset(q, 0, sizeof *q);
}

/* ---- memory bandwidth ------------------------------------------------------------------------ */

static const char bw_key[] = "memory bandwidth (GB/s)";

int cli_hta_bw_args(const char *cmd, const char *path, cli_hta_bw_arg **out, size_t *n) {
    static const char *const keys[] = {bw_key};
    *out = NULL;
    *n = 0;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    opt.arg_keys = keys;
    opt.arg_key_count = 1;
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, path, &opt);
    size_t cap = 0;
    strobe_rd_item item;
    while (rc == 0 && (rc = strobe_rd_next(rd, &item)) > 0) {
        rc = 0;
        if (item.kind != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = item.event;
        strobe_rd_value v;
        double d;
        if (e->arg_values)
            v = e->arg_values[0];
        else if (strobe_rd_event_arg(e, bw_key, &v) != 1)
            continue;
        if (v.type != STROBE_RD_T_NUMBER || strobe_rd_value_double(&v, &d) != 0) continue;
        if (*n == cap) {
            size_t c = cap ? 2 * cap : 64;
            cli_hta_bw_arg *g = realloc(*out, c * sizeof *g);
            if (g == NULL) {
                rc = STROBE_ENOMEM;
                break;
            }
            *out = g;
            cap = c;
        }
        (*out)[(*n)++] = (cli_hta_bw_arg){e->index, d};
    }
    if (rc < 0 && rc != STROBE_ENOMEM) {
        const char *why =
            rd && strobe_rd_errmsg(rd)[0] ? strobe_rd_errmsg(rd) : strobe_strerror(rc);
        fprintf(cli_hta_err(), "strobe %s: %s: %s\n", cmd, cli_esc(path), cli_esc(why));
    }
    strobe_rd_close(rd);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return rc;
    }
    /* The reader gives events in file order: sorted already, but a Perfetto trace's order is by
     * begins; sort to be sure. */
    for (size_t k = 1; k < *n; k++) {
        if ((*out)[k - 1].index <= (*out)[k].index) continue;
        cli_hta_bw_arg t = (*out)[k];
        size_t j = k;
        while (j > 0 && (*out)[j - 1].index > t.index) {
            (*out)[j] = (*out)[j - 1];
            j--;
        }
        (*out)[j] = t;
    }
    return 0;
}

/* HTA's get_memory_kernel_type of name, into kind. */
static void memory_kind(const char *name, char kind[CLI_HTA_BW_KIND_MAX]) {
    if (strncmp(name, "Memset", 6) == 0)
        snprintf(kind, CLI_HTA_BW_KIND_MAX, "Memset");
    else if (strncmp(name, "Memcpy", 6) != 0)
        snprintf(kind, CLI_HTA_BW_KIND_MAX, "Memcpy Unknown");
    else
        snprintf(kind, CLI_HTA_BW_KIND_MAX, "%.11s", name);
}

static double bw_of(const cli_hta_bw_arg *a, size_t na, uint64_t index) {
    size_t lo = 0, hi = na;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid].index < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < na && a[lo].index == index ? a[lo].gbps : 0.0;
}

static int by_bwpoint(const void *a, const void *b) {
    const cli_hta_bwpoint *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int by_kind(const void *a, const void *b) {
    return strcmp((const char *)a, (const char *)b);
}

int cli_hta_bw_series(const cli_hta_set *s, const cli_hta_rank *r, const cli_hta_bw_arg *a,
                      size_t na, cli_hta_bw *b) {
    const md_model *m = &r->m;
    memset(b, 0, sizeof *b);
    size_t nk = 0;
    for (size_t k = 0; k < r->count; k++)
        nk += r->rows[k].mult;
    b->p = malloc((nk ? 2 * nk : 1) * sizeof *b->p);
    size_t capk = 8;
    b->kinds = malloc(capk * sizeof *b->kinds);
    if (b->p == NULL || b->kinds == NULL) goto oom;
    /* The kinds, in name order (pandas' groupby). */
    for (size_t k = 0; k < r->count; k++) {
        const char *name = md_str(m, md_name_of(m, r->rows[k].ev));
        if (cli_hta_kernel_type(name) != CLI_HTA_MEMORY) continue;
        char kind[CLI_HTA_BW_KIND_MAX];
        memory_kind(name, kind);
        size_t j = 0;
        while (j < b->nkinds && strcmp(b->kinds[j], kind) != 0)
            j++;
        if (j < b->nkinds) continue;
        if (b->nkinds == capk) {
            char(*g)[CLI_HTA_BW_KIND_MAX] = realloc(b->kinds, 2 * capk * sizeof *g);
            if (g == NULL) goto oom;
            b->kinds = g;
            capk *= 2;
        }
        memcpy(b->kinds[b->nkinds++], kind, CLI_HTA_BW_KIND_MAX);
    }
    cli_qsort(b->kinds, b->nkinds, sizeof *b->kinds, by_kind);
    /* Starts (HTA's first half of the concatenation) and ends, each in row order. */
    for (size_t k = 0; k < r->count; k++) {
        const cli_hta_row *w = &r->rows[k];
        const md_event e_ev = md_at(m, w->ev), *e = &e_ev;
        const char *name = md_str(m, e->name);
        if (cli_hta_kernel_type(name) != CLI_HTA_MEMORY) continue;
        char kind[CLI_HTA_BW_KIND_MAX];
        memory_kind(name, kind);
        size_t j = 0;
        while (strcmp(b->kinds[j], kind) != 0)
            j++;
        int64_t pid, tid, dur = w->end - w->ts;
        event_ids(m, w->ev, &pid, &tid);
        if (dur == 0) dur = 1;
        double v = bw_of(a, na, e->index);
        uint64_t order = row_order(s, m, e, w->ev);
        for (uint32_t c = 0; c < w->mult; c++) {
            b->p[b->n++] = (cli_hta_bwpoint){w->ts, pid, j, v, order};
            b->p[b->n++] = (cli_hta_bwpoint){w->ts + dur, pid, j, -v, ((uint64_t)1 << 40) + order};
        }
    }
    cli_qsort(b->p, b->n, sizeof *b->p, by_bwpoint);
    double run = 0;
    for (size_t k = 0; k < b->n; k++) {
        if (k == 0 || b->p[k].kind != b->p[k - 1].kind) run = 0;
        run += b->p[k].gbps;
        b->p[k].gbps = run < 0 ? 0 : run;
    }
    return 0;
oom:
    cli_hta_bw_free(b);
    return STROBE_ENOMEM;
}

void cli_hta_bw_free(cli_hta_bw *b) {
    free(b->p);
    free(b->kinds);
    memset(b, 0, sizeof *b);
}

/* ---- describe -------------------------------------------------------------------------------- */

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* pandas' linear quantile of sorted v[0..n). */
static double quantile(const double *v, size_t n, double q) {
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : n - 1;
    double t = pos - (double)lo, diff = v[hi] - v[lo];
    return t >= 0.5 ? v[hi] - diff * (1.0 - t) : v[lo] + diff * t;
}

void cli_hta_describe(double *v, size_t n, double out[8]) {
    double sum = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    double mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - mean) * (v[i] - mean);
    cli_qsort(v, n, sizeof *v, by_double);
    out[0] = (double)n;
    out[1] = mean;
    out[2] = n > 1 ? sqrt(ss / (double)(n - 1)) : NAN;
    out[3] = v[0];
    out[4] = quantile(v, n, 0.25);
    out[5] = quantile(v, n, 0.5);
    out[6] = quantile(v, n, 0.75);
    out[7] = v[n - 1];
}
