/* cmd_queue.c: `strobe queue`, HTA's queue length statistics per rank and stream
 * (TraceCounters.get_queue_length_summary in hta/analyzers/trace_counters.py).
 *
 * HTA's definitions, over a rank's rows (see hta.h):
 *   - the launches: rows named cudaLaunchKernel, cudaMemcpyAsync or cudaMemsetAsync whose
 *     correlation had a GPUKernelFilter row before the restriction (HTA's index_correlation > 0);
 *     each is joined with the rank's GPU kernels (rows with a stream) of its correlation and
 *     counts +1 on each one's stream, at the launch's ts (a launch joined with none counts
 *     nowhere);
 *   - every GPU kernel counts -1 on its stream at its ts;
 *   - per stream, in ts order (launches before kernels at one ts, each in HTA's row order), the
 *     running sum is the queue length after each step, and the statistics are pandas'
 *     describe() of those values: count, mean, std (n - 1; null for one value), min, 25%, 50%,
 *     75% (linear interpolation), max. Streams in increasing order.
 *   - time blocked on a full queue (get_time_spent_blocked_on_full_queue, max_queue_length 1024,
 *     CUDA_MAX_LAUNCH_QUEUE_PER_STREAM): on each stream, each point of the series lasts until the
 *     next one (the last, not at all); the points whose length is >= the maximum add up to
 *     duration_at_max_queue_length, over the rank's trace duration (its rows' last ts - first
 *     ts) relative_duration_at_max_queue_length. HTA keeps one row per rank: the last stream,
 *     in increasing order, that reached the maximum. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "strobe/error.h"

const char cmd_queue_usage[] =
    "NAME\n"
    "    strobe queue - HTA's queue length statistics per rank and stream\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe queue [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's get_queue_length_summary(), with its definitions, so that it\n"
    "    gives HTA's numbers. TRACE is a trace, or a folder of rank traces, read as strobe\n"
    "    breakdown reads them (ranks, HTA's times in microseconds, its profiler-step\n"
    "    restriction, kernels as the events with a stream).\n"
    "\n"
    "    A stream's queue length grows by one at each launch (cudaLaunchKernel,\n"
    "    cudaMemcpyAsync, cudaMemsetAsync) of work on it and shrinks by one when the work\n"
    "    starts; the statistics are those of its values after each change: count, mean, std,\n"
    "    min, 25%, 50%, 75%, max (pandas' describe()). Then the time blocked on a full queue:\n"
    "    per rank, the time a stream's queue length stayed at the maximum or above, and its\n"
    "    share of the rank's trace duration (HTA reports one stream per rank: the last to\n"
    "    reach the maximum).\n"
    "\n"
    "OPTIONS\n"
    "    --max-queue-length N  the queue's capacity (default 1024, as HTA's)\n"
    "    -f, --format F table (default); csv (the statistics, a blank line, the blocked time) or\n"
    "                   json ({\"summary\": [...], \"blocked\": [...]}: rows keyed by HTA's "
    "column\n"
    "                   names: rank, stream, count, mean, std, min, 25%, 50%, 75%, max; rank,\n"
    "                   stream, duration_at_max_queue_length,\n"
    "                   relative_duration_at_max_queue_length)\n"
    // clang-format off
    HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_queue_options[] = {
    {"max-queue-length", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

typedef struct step {
    int64_t stream, ts;
    uint64_t seq; /* place in HTA's concatenation (launches, then kernels) */
    int delta;
} step;

static int by_step(const void *a, const void *b) {
    const step *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

typedef struct kref {
    int64_t corr;
    uint64_t order;
    const hta_row *w;
} kref;

static int by_kref(const void *a, const void *b) {
    const kref *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* pandas' linear quantile of sorted v[0..n). */
static double quantile(const double *v, size_t n, double q) {
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : n - 1;
    double t = pos - (double)lo, diff = v[hi] - v[lo];
    return t >= 0.5 ? v[hi] - diff * (1.0 - t) : v[lo] + diff * t;
}

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int rank_rows(const hta_set *s, const hta_rank *r, int64_t max_len, hta_table *t,
                     hta_table *bt) {
    const md_model *m = &r->m;
    size_t nk = 0;
    for (size_t k = 0; k < r->count; k++)
        nk += r->rows[k].mult;
    int64_t *linked = malloc((m->count ? m->count : 1) * sizeof *linked);
    kref *ks = malloc((nk ? nk : 1) * sizeof *ks);
    int rc = linked && ks ? 0 : STROBE_ENOMEM;
    size_t nl = 0, nks = 0, nsteps = 0, cap = 0;
    step *st = NULL;
    double *v = NULL;
    if (rc) goto out;
    /* Correlations with a GPUKernelFilter row, before the restriction. */
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if (hta_is_row(m, e) && hta_is_gpu_row(m, e) && e->corr != -1) linked[nl++] = e->corr;
    }
    hta_sort_i64(linked, nl);
    /* The kernels by correlation, in HTA's row order, each copy once. */
    for (size_t k = 0; k < r->count; k++) {
        const hta_row *w = &r->rows[k];
        const md_event e_ev = md_at(m, w->ev), *e = &e_ev;
        uint64_t order = (s->restricted && !hta_is_gpu_row(m, e) ? (uint64_t)1 << 32 : 0) + w->ev;
        for (uint32_t c = 0; c < w->mult; c++)
            ks[nks++] = (kref){e->corr, order, w};
    }
    qsort(ks, nks, sizeof *ks, by_kref);
    cap = 2 * nks + 1;
    st = malloc(cap * sizeof *st);
    if (st == NULL) {
        rc = STROBE_ENOMEM;
        goto out;
    }
    /* Launches, in HTA's row order (kept kernels' rows first when restricted, then CPU rows). */
    for (int pass = 0; pass < 2; pass++) {
        hta_row cw;
        for (size_t k = 0, ev = 0; pass == 0 ? k < r->count : hta_cpu_next(r, &ev, &cw);
             k++, ev++) {
            const hta_row *w = pass == 0 ? &r->rows[k] : &cw;
            const md_event e_ev = md_at(m, w->ev), *e = &e_ev;
            if (!hta_is_launch(md_str(m, e->name)) || hta_is_gpu_row(m, e) || e->corr == -1 ||
                hta_find_i64(linked, nl, e->corr) < 0)
                continue;
            uint64_t order = (s->restricted && pass == 1 ? (uint64_t)1 << 32 : 0) + w->ev;
            size_t lo = 0, hi = nks;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ks[mid].corr < e->corr)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (size_t j = lo; j < nks && ks[j].corr == e->corr; j++) {
                if (nsteps == cap) {
                    step *g = realloc(st, 2 * cap * sizeof *st);
                    if (g == NULL) {
                        rc = STROBE_ENOMEM;
                        goto out;
                    }
                    st = g;
                    cap *= 2;
                }
                st[nsteps++] = (step){md_at(m, ks[j].w->ev).stream, w->ts, order, 1};
            }
        }
    }
    for (size_t k = 0; k < nks; k++) {
        if (nsteps == cap) {
            step *g = realloc(st, 2 * cap * sizeof *st);
            if (g == NULL) {
                rc = STROBE_ENOMEM;
                goto out;
            }
            st = g;
            cap *= 2;
        }
        st[nsteps++] = (step){md_at(m, ks[k].w->ev).stream, ks[k].w->ts,
                              ((uint64_t)1 << 40) + ks[k].order, -1};
    }
    qsort(st, nsteps, sizeof *st, by_step);
    v = malloc((nsteps ? nsteps : 1) * sizeof *v);
    if (v == NULL) {
        rc = STROBE_ENOMEM;
        goto out;
    }
    int blocked = 0;
    int64_t blocked_stream = 0, blocked_time = 0;
    for (size_t a = 0, b; rc == 0 && a < nsteps; a = b) {
        int64_t q = 0, full = 0;
        int reached = 0;
        double sum = 0;
        for (b = a; b < nsteps && st[b].stream == st[a].stream; b++) {
            q += st[b].delta;
            v[b - a] = (double)q;
            sum += (double)q;
            if (q < max_len) continue;
            reached = 1;
            if (b + 1 < nsteps && st[b + 1].stream == st[a].stream) full += st[b + 1].ts - st[b].ts;
        }
        if (reached) {
            blocked = 1;
            blocked_stream = st[a].stream;
            blocked_time = full;
        }
        size_t n = b - a;
        double mean = sum / (double)n, ss = 0;
        for (size_t i = 0; i < n; i++)
            ss += (v[i] - mean) * (v[i] - mean);
        qsort(v, n, sizeof *v, by_double);
        rc = HTA_ROW(t, HTA_INT(r->rank), HTA_INT(st[a].stream), HTA_INT(n), HTA_NUM(mean),
                     HTA_NUM(n > 1 ? sqrt(ss / (double)(n - 1)) : NAN), HTA_NUM(v[0]),
                     HTA_NUM(quantile(v, n, 0.25)), HTA_NUM(quantile(v, n, 0.5)),
                     HTA_NUM(quantile(v, n, 0.75)), HTA_NUM(v[n - 1]));
    }
    if (rc == 0 && blocked) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int pass = 0; pass < 2; pass++) {
            hta_row cw;
            for (size_t k = 0, j = 0; pass == 0 ? k < r->count : hta_cpu_next(r, &j, &cw);
                 k++, j++) {
                const hta_row *w = pass == 0 ? &r->rows[k] : &cw;
                if (w->ts < lo) lo = w->ts;
                if (w->ts > hi) hi = w->ts;
            }
        }
        rc = HTA_ROW(bt, HTA_INT(r->rank), HTA_INT(blocked_stream), HTA_INT(blocked_time),
                     HTA_NUM((double)blocked_time / (double)(hi - lo)));
    }
out:
    free(linked);
    free(ks);
    free(st);
    free(v);
    return rc;
}

static int run(const hta_set *s, void *ctx, hta_table *t) {
    int64_t max_len = *(const int64_t *)ctx;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++)
        rc = rank_rows(s, &s->ranks[k], max_len, &t[0], &t[1]);
    return rc;
}

static int option(void *ctx, int c, const char *arg) {
    unsigned long long v;
    if (c != CLI_LONG_ONLY + 1) return HTA_UNKNOWN_OPTION;
    if (cli_parse_count("queue", "--max-queue-length", arg, INT64_MAX, &v)) return CLI_BAD_INPUT;
    *(int64_t *)ctx = (int64_t)v;
    return 0;
}

static const char *const cols[] = {"rank", "stream", "count", "mean", "std",
                                   "min",  "25%",    "50%",   "75%",  "max"};
static const uint8_t text[10] = {0};
static const char *const bcols[] = {"rank", "stream", "duration_at_max_queue_length",
                                    "relative_duration_at_max_queue_length"};

const hta_command hta_cmd_queue = {"queue",
                                   cmd_queue_usage,
                                   cmd_queue_options,
                                   ":f:qhV",
                                   option,
                                   run,
                                   {{"summary", cols, text, 10}, {"blocked", bcols, text, 4}},
                                   2};

int cmd_queue(int argc, char **argv) {
    int64_t max_len = 1024;
    return hta_main(&hta_cmd_queue, &max_len, argc, argv);
}
