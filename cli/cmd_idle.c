/* cmd_idle.c: `strobe idle`, HTA's idle time breakdown per rank and stream
 * (BreakdownAnalysis.get_idle_time_breakdown in hta/analyzers/breakdown_analysis.py,
 * consecutive_kernel_delay 30 as TraceAnalysis's default).
 *
 * HTA's definitions, over a rank's GPU kernels (its rows with a stream, see hta.h):
 *   - a kernel's runtime event: at parse time (before the restriction), each GPUKernelFilter row
 *     with a correlation is paired with the CPU rows of its correlation, the last in file order
 *     winning; a kernel with a correlation but no such CPU row points at the file's event 0
 *     (HTA's index_correlation 0). The runtime's ts is known when that row is kept.
 *   - per stream, kernels by ts: a kernel's idle interval is its ts - the previous kernel's end
 *     (the previous one's only, so that it can be negative); the first kernel has none.
 *   - category: host_wait when the runtime's ts is after the previous kernel's end; else
 *     kernel_wait when the interval is under consecutive_kernel_delay; else other (the first
 *     kernel is other, with no time).
 *   - per stream and category present: idle_time, the sum of the intervals, and idle_time_ratio,
 *     it over the stream's sum (round(, 2)). Streams in the order they first appear in HTA's
 *     rows (kept kernels in file order, then kept CPU rows). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "strobe/error.h"

const char cmd_idle_usage[] =
    "NAME\n"
    "    strobe idle - HTA's idle time breakdown per rank and stream\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe idle [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's get_idle_time_breakdown(), with its definitions, so that it\n"
    "    gives HTA's numbers. TRACE is a trace, or a folder of rank traces, read as strobe\n"
    "    breakdown reads them (ranks, HTA's times in microseconds, its profiler-step\n"
    "    restriction, kernels as the events with a stream).\n"
    "\n"
    "    On each stream, the gap before each kernel (its start - the previous kernel's end) is\n"
    "    host_wait when the kernel's launch (the runtime event of its correlation id) started\n"
    "    after the previous kernel ended, kernel_wait when the gap is under the\n"
    "    consecutive-kernel delay, and other otherwise. Per rank, stream and category:\n"
    "    idle_time, the gaps' sum, and idle_time_ratio, its share of the stream's idle time\n"
    "    (2 decimals).\n"
    "\n"
    "OPTIONS\n"
    "    --consecutive-kernel-delay N  in microseconds (default 30, as HTA's)\n"
    "    -f, --format F table (default), csv or json (an array of rows keyed by HTA's column\n"
    "                   names: rank, stream, idle_category, idle_time, idle_time_ratio)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_idle_options[] = {
    {"consecutive-kernel-delay", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

typedef struct pair {
    int64_t corr;
    uint32_t ev;
} pair;

static int by_pair(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

typedef struct krow {
    int64_t stream, ts, end;
    uint64_t order;  /* place in HTA's rows: kernels in file order, then CPU rows */
    int64_t runtime; /* the runtime's ts; has_runtime says whether it is known */
    int has_runtime;
} krow;

static int by_stream_ts(const void *a, const void *b) {
    const krow *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

typedef struct sorder {
    int64_t stream;
    uint64_t first;
    size_t start, n;
} sorder;

static int by_first(const void *a, const void *b) {
    const sorder *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

static const char *const cat_names[3] = {"host_wait", "kernel_wait", "other"};

static int rank_rows(const cli_hta_set *s, const cli_hta_rank *r, int64_t delay, cli_hta_table *t) {
    const md_model *m = &r->m;
    size_t nev = m->count ? m->count : 1;
    /* The kept rows, a bit per event (their ts: cli_hta_row_at). */
    uint64_t *kept = calloc(nev / 64 + 1, sizeof *kept);
    pair *cpu = malloc(nev * sizeof *cpu);
    size_t total = 0;
    for (size_t k = 0; k < r->count; k++)
        total += r->rows[k].mult;
    krow *rows = malloc((total ? total : 1) * sizeof *rows);
    sorder *so = malloc((total ? total : 1) * sizeof *so);
    int rc = kept && cpu && rows && so ? 0 : STROBE_ENOMEM;
    size_t nc = 0, n = 0, ns = 0;
    if (rc) goto out;
    for (size_t k = 0; k < r->count; k++)
        kept[r->rows[k].ev / 64] |= (uint64_t)1 << (r->rows[k].ev % 64);
    if (r->cpu_bits)
        for (size_t k = 0; k < nev / 64 + 1; k++)
            kept[k] |= r->cpu_bits[k];
    /* The CPU rows with a correlation, before the restriction, by correlation and file order. */
    uint32_t event0 = UINT32_MAX;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        if (!cli_hta_is_row(m, e)) continue;
        if (e->index == 0) event0 = (uint32_t)i;
        if (e->corr != -1 && !cli_hta_is_gpu_row(m, e)) cpu[nc++] = (pair){e->corr, (uint32_t)i};
    }
    qsort(cpu, nc, sizeof *cpu, by_pair);
    for (size_t k = 0; k < r->count; k++) {
        const cli_hta_row *w = &r->rows[k];
        const md_event e_ev = md_at(m, w->ev), *e = &e_ev;
        uint32_t rt = UINT32_MAX;
        if (e->corr != -1 && cli_hta_is_gpu_row(m, e)) {
            size_t lo = 0, hi = nc;
            while (lo < hi) { /* the last CPU row of this correlation */
                size_t mid = lo + (hi - lo) / 2;
                if (cpu[mid].corr <= e->corr)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            rt = lo > 0 && cpu[lo - 1].corr == e->corr ? cpu[lo - 1].ev
                 : e->corr >= 0                        ? event0
                                                       : UINT32_MAX;
        }
        cli_hta_row rt_row = {0, 0, 0, 0};
        if (rt != UINT32_MAX) cli_hta_row_at(r, rt, &rt_row);
        for (uint32_t c = 0; c < w->mult; c++) {
            krow *x = &rows[n++];
            x->stream = cli_hta_stream(r, w->ev);
            x->ts = w->ts;
            x->end = w->end;
            x->order =
                (s->restricted && !s->mtia && !cli_hta_is_gpu_row(m, e) ? (uint64_t)1 << 32 : 0) +
                w->ev;
            x->has_runtime = rt != UINT32_MAX && (kept[rt / 64] >> (rt % 64) & 1);
            x->runtime = x->has_runtime ? rt_row.ts : 0;
        }
    }
    qsort(rows, n, sizeof *rows, by_stream_ts);
    for (size_t a = 0, b; a < n; a = b) {
        uint64_t first = rows[a].order;
        for (b = a; b < n && rows[b].stream == rows[a].stream; b++)
            if (rows[b].order < first) first = rows[b].order;
        so[ns++] = (sorder){rows[a].stream, first, a, b - a};
    }
    qsort(so, ns, sizeof *so, by_first);
    for (size_t k = 0; rc == 0 && k < ns; k++) {
        int64_t sum[3] = {0, 0, 0};
        int present[3] = {0, 0, 0};
        const krow *x = rows + so[k].start;
        present[2] = 1; /* the first kernel */
        for (size_t i = 1; i < so[k].n; i++) {
            int64_t prev_end = x[i - 1].end, gap = x[i].ts - prev_end;
            int c = x[i].has_runtime && x[i].runtime > prev_end ? 0 : gap < delay ? 1 : 2;
            sum[c] += gap;
            present[c] = 1;
        }
        int64_t all = sum[0] + sum[1] + sum[2];
        for (int c = 0; rc == 0 && c < 3; c++) {
            if (!present[c]) continue;
            rc = CLI_HTA_ROW(t, CLI_HTA_INT(r->rank), CLI_HTA_INT(so[k].stream),
                             CLI_HTA_TEXT(cat_names[c]), CLI_HTA_INT(sum[c]),
                             CLI_HTA_PCT((double)sum[c] / (double)all));
        }
    }
out:
    free(kept);
    free(cpu);
    free(rows);
    free(so);
    return rc;
}

static int run(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    int64_t delay = *(const int64_t *)ctx;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++)
        rc = rank_rows(s, &s->ranks[k], delay, t);
    return rc;
}

static int option(void *ctx, int c, const char *arg) {
    unsigned long long v;
    if (c != CLI_LONG_ONLY + 1) return CLI_HTA_UNKNOWN_OPTION;
    if (cli_parse_count("idle", "--consecutive-kernel-delay", arg, INT64_MAX, &v))
        return CLI_BAD_INPUT;
    *(int64_t *)ctx = (int64_t)v;
    return 0;
}

static const char *const cols[] = {"rank", "stream", "idle_category", "idle_time",
                                   "idle_time_ratio"};
static const uint8_t text[5] = {0, 0, 1, 0, 0};

const cli_hta_command cli_hta_cmd_idle = {"idle",
                                          cmd_idle_usage,
                                          cmd_idle_options,
                                          ":f:j:qhV",
                                          option,
                                          run,
                                          {{NULL, cols, text, 5}},
                                          1,
                                          NULL,
                                          NULL,
                                          1 /* per_rank */};

int cmd_idle(int argc, char **argv) {
    int64_t delay = 30;
    return cli_hta_main(&cli_hta_cmd_idle, &delay, argc, argv);
}
