/* cmd_launches.c: `strobe launches`, HTA's kernel launch statistics per rank
 * (CudaKernelAnalysis.cuda_kernel_launch_stats in hta/analyzers/cuda_kernel_analysis.py, with
 * include_memory_events True).
 *
 * HTA's definitions, over a rank's rows (see hta.h): the launch correlations are those of the
 * rows cli_hta_is_launch() takes (CUDA's, ROCm's and MTIA's launches, copies and memsets); the CPU
 * rows (stream -1) and the GPU rows (stream != -1) with such a correlation are joined on it (an
 * inner join: every pair), in the CPU rows' order, then the GPU rows'. A pair's row: correlation,
 * cpu_duration and gpu_duration (HTA's durations, end - ts), and launch_delay = gpu ts - cpu ts +
 * cpu_duration (HTA's formula as written). The summaries are those of HTA's plots: short kernels
 * (cpu_duration <= runtime cutoff, 50, and gpu_duration < cpu_duration), runtime outliers
 * (cpu_duration > runtime cutoff), launch delay outliers (launch_delay > its cutoff, 100).
 *
 * Contents: usage and options, the launch statistics, --by-op (HTA's aten op kernels and delays,
 * its definitions at the top of its part), the command. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "strobe/error.h"

const char cmd_launches_usage[] =
    "NAME\n"
    "    strobe launches - HTA's kernel launch statistics per rank\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe launches [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's get_cuda_kernel_launch_stats(), with its definitions, so that\n"
    "    it gives HTA's numbers. TRACE is a trace, or a folder of rank traces, read as strobe\n"
    "    breakdown reads them (ranks, HTA's times in microseconds, its profiler-step\n"
    "    restriction).\n"
    "\n"
    "    One row per launch and device event of its correlation id. Launches, by name as HTA\n"
    "    takes them: cuda...LaunchKernel, cuLaunchKernel..., runFunction... (MTIA),\n"
    "    cudaMemcpyAsync, cudaMemsetAsync, hipLaunchKernel, hipExtModuleLaunchKernel,\n"
    "    hipMemcpyAsync, hipMemsetAsync, hipMemcpyWithStream. Columns: rank, correlation,\n"
    "    cpu_duration (the launch's),\n"
    "    gpu_duration (the kernel's, copy's or memset's), and launch_delay, which HTA computes\n"
    "    as the kernel's start - the launch's start + the launch's duration. Then, per rank,\n"
    "    HTA's summaries: short_kernels (cpu_duration <= the runtime cutoff and gpu_duration <\n"
    "    cpu_duration), runtime_outliers (cpu_duration > the runtime cutoff) and\n"
    "    launch_delay_outliers (launch_delay > its cutoff).\n"
    "\n"
    "    --by-op gives HTA's get_aten_op_kernels_and_delay() instead: each kernel launch\n"
    "    (cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel, cuLaunchKernelEx,\n"
    "    cudaMemcpyAsync, cudaMemsetAsync, their HIP and MTIA counterparts) is attributed to the\n"
    "    innermost aten:: operator, on any thread, that starts no later and ends no earlier than\n"
    "    it, and to its device event (the kernel of its correlation id); aten_op_delay is the\n"
    "    launch's start - the operator's start, runtime_delay the kernel's start - the launch's\n"
    "    start. Each operator call (thread, name, start) gets its kernels' names joined by\n"
    "    \" -> \" (in launch order) and its first launch's delays; per rank and (aten_op_name,\n"
    "    kernel_sequence): occurrence_count (calls), avg_aten_op_launch_delay and\n"
    "    avg_runtime_delay (means of those first delays, 3 decimals), sorted by --sort-by.\n"
    "\n"
    "OPTIONS\n"
    "    --by-op        HTA's get_aten_op_kernels_and_delay() instead (see below)\n"
    "    --sort-by C[,C...]  with --by-op: the columns to sort by, each largest first\n"
    "                   (default occurrence_count, as HTA's sort_by)\n"
    "    --runtime-cutoff N       in microseconds (default 50, as HTA's)\n"
    "    --launch-delay-cutoff N  in microseconds (default 100, as HTA's)\n"
    "    -f, --format F table (default); csv (the launches, a blank line, the summaries) or\n"
    "                   json ({\"launches\": [...], \"summary\": [...]}, rows keyed by HTA's\n"
    "                   column names; with --by-op one array of rows: rank, aten_op_name,\n"
    "                   kernel_sequence, occurrence_count, avg_aten_op_launch_delay,\n"
    "                   avg_runtime_delay)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_launches_options[] = {
    {"runtime-cutoff", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"launch-delay-cutoff", required_argument, NULL, CLI_LONG_ONLY + 2},
    {"by-op", no_argument, NULL, CLI_LONG_ONLY + 3},
    {"sort-by", required_argument, NULL, CLI_LONG_ONLY + 4},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

typedef struct gpu_ref {
    int64_t corr;
    const cli_hta_row *w;
} gpu_ref;

static int by_row_ev(const void *a, const void *b) {
    const cli_hta_row *x = a, *y = b;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

static int by_corr(const void *a, const void *b) {
    const gpu_ref *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->w->ev > y->w->ev) - (x->w->ev < y->w->ev);
}

#define BO_SORT_MAX 8

typedef struct cutoffs {
    int64_t runtime, delay;
    int by_op;                /* --by-op */
    int sort_by[BO_SORT_MAX]; /* --sort-by: columns of the --by-op table (1..5) */
    size_t nsort;
} cutoffs;

static int run(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    int64_t runtime_cut = ((const cutoffs *)ctx)->runtime,
            delay_cut = ((const cutoffs *)ctx)->delay;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const cli_hta_rank *r = &s->ranks[k];
        const md_model *m = &r->m;
        size_t cap = r->cpu_count + r->count + 1;
        int64_t *corrs = malloc(cap * sizeof *corrs);
        gpu_ref *g = malloc(cap * sizeof *g);
        size_t nc = 0, ng = 0;
        uint64_t shorts = 0, slow = 0, late = 0;
        if (corrs == NULL || g == NULL) rc = STROBE_ENOMEM;
        cli_hta_row cpu_row;
        for (size_t i = 0; rc == 0 && cli_hta_cpu_next(r, &i, &cpu_row); i++)
            if (cli_hta_is_launch(md_str(m, md_name_of(m, cpu_row.ev))))
                corrs[nc++] = md_at(m, cpu_row.ev).corr;
        for (size_t i = 0; rc == 0 && i < r->count; i++)
            if (cli_hta_is_launch(md_str(m, md_name_of(m, r->rows[i].ev))))
                corrs[nc++] = md_at(m, r->rows[i].ev).corr;
        if (rc == 0) cli_hta_sort_i64(corrs, nc);
        for (size_t i = 0; rc == 0 && i < r->count; i++) {
            int64_t c = md_at(m, r->rows[i].ev).corr;
            if (cli_hta_find_i64(corrs, nc, c) >= 0) g[ng++] = (gpu_ref){c, &r->rows[i]};
        }
        if (rc == 0) qsort(g, ng, sizeof *g, by_corr);
        for (size_t i = 0; rc == 0 && cli_hta_cpu_next(r, &i, &cpu_row); i++) {
            const cli_hta_row *cw = &cpu_row;
            int64_t c = md_at(m, cw->ev).corr;
            if (cli_hta_find_i64(corrs, nc, c) < 0) continue;
            size_t lo = 0, hi = ng;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (g[mid].corr < c)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (size_t j = lo; rc == 0 && j < ng && g[j].corr == c; j++) {
                const cli_hta_row *gw = g[j].w;
                int64_t cpu_dur = cw->end - cw->ts, gpu_dur = gw->end - gw->ts;
                int64_t delay = gw->ts - cw->ts + cpu_dur;
                for (uint32_t copy = 0; rc == 0 && copy < gw->mult; copy++) {
                    rc =
                        CLI_HTA_ROW(&t[0], CLI_HTA_INT(r->rank), CLI_HTA_INT(c),
                                    CLI_HTA_INT(cpu_dur), CLI_HTA_INT(gpu_dur), CLI_HTA_INT(delay));
                    shorts += cpu_dur <= runtime_cut && gpu_dur < cpu_dur;
                    slow += cpu_dur > runtime_cut;
                    late += delay > delay_cut;
                }
            }
        }
        free(corrs);
        free(g);
        if (rc) break;
        rc = CLI_HTA_ROW(&t[1], CLI_HTA_INT(r->rank), CLI_HTA_INT(shorts), CLI_HTA_INT(slow),
                         CLI_HTA_INT(late));
    }
    return rc;
}

static int parse_sort_by(cutoffs *cut, const char *arg);

static int option(void *ctx, int c, const char *arg) {
    cutoffs *cut = ctx;
    unsigned long long v;
    if (c == CLI_LONG_ONLY + 3) return 0; /* --by-op: seen before (wants_by_op) */
    if (c == CLI_LONG_ONLY + 4) {
        if (!cut->by_op) return cli_usage_error("launches", "--sort-by goes with --by-op", NULL);
        return parse_sort_by(cut, arg);
    }
    if (c != CLI_LONG_ONLY + 1 && c != CLI_LONG_ONLY + 2) return CLI_HTA_UNKNOWN_OPTION;
    if (cut->by_op) return cli_usage_error("launches", "the cutoffs do not go with --by-op", NULL);
    const char *name = c == CLI_LONG_ONLY + 1 ? "--runtime-cutoff" : "--launch-delay-cutoff";
    if (cli_parse_count("launches", name, arg, INT64_MAX, &v)) return CLI_BAD_INPUT;
    *(c == CLI_LONG_ONLY + 1 ? &cut->runtime : &cut->delay) = (int64_t)v;
    return 0;
}

static const char *const cols[] = {"rank", "correlation", "cpu_duration", "gpu_duration",
                                   "launch_delay"};
static const char *const scols[] = {"rank", "short_kernels", "runtime_outliers",
                                    "launch_delay_outliers"};
static const uint8_t text[5] = {0};

static const cli_hta_command command = {"launches",
                                        cmd_launches_usage,
                                        cmd_launches_options,
                                        ":f:j:qhV",
                                        option,
                                        run,
                                        {{"launches", cols, text, 5}, {"summary", scols, text, 4}},
                                        2,
                                        NULL,
                                        NULL,
                                        1 /* per_rank */};

/* ---- HTA's aten op kernels and delays (--by-op) ----------------------------------------------
 * CudaKernelAnalysis.get_aten_op_kernels_and_delay (hta/analyzers/cuda_kernel_analysis.py; the
 * launches are the names of TraceSymbolTable.get_runtime_launch_events_mask,
 * hta/common/trace_symbol_table.py). Per rank, over the rows HTA keeps (hta.h):
 *   - each launch, in file order, takes the aten:: row (any thread) with ts <= its ts and
 *     ts + dur >= its ts + dur whose ts is the largest, and the kernel whose index_correlation
 *     is the launch (a GPU row of its correlation id whose CPU partner it is, hta.h); a launch
 *     without either gives nothing (HTA fails on one without a kernel);
 *   - aten_op_delay = launch ts - op ts, runtime_delay = kernel ts - launch ts;
 *   - grouped by (the op's tid, name, ts): kernel_sequence, the kernels' names in launch order
 *     joined by " -> ", and the first launch's delays; then by (aten_op_name, kernel_sequence):
 *     occurrence_count, and the means of those first delays rounded to 3 decimals;
 *   - sorted by the sort_by columns, each descending.
 * Choices where HTA leaves one open: among ops of equal ts the shortest (the innermost) is taken;
 * of several kernels of one launch the earliest (HTA fails there); ties in the sort keep the
 * order of (aten_op_name, kernel_sequence), as pandas' groupby gives it; each rank's rows are its
 * own (HTA's list of rows outlives its loop over ranks, so that a rank's table also counts the
 * ranks before it). */

static const char *const bo_cols[] = {"rank",
                                      "aten_op_name",
                                      "kernel_sequence",
                                      "occurrence_count",
                                      "avg_aten_op_launch_delay",
                                      "avg_runtime_delay"};
static const uint8_t bo_text[6] = {0, 1, 1, 0, 0, 0};

static int parse_sort_by(cutoffs *cut, const char *arg) {
    cut->nsort = 0;
    for (const char *p = arg;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int col = 0;
        for (int c = 1; c < 6; c++)
            if (strlen(bo_cols[c]) == len && strncmp(bo_cols[c], p, len) == 0) col = c;
        if (col == 0 || cut->nsort == BO_SORT_MAX)
            return cli_usage_error("launches",
                                   "--sort-by takes aten_op_name, kernel_sequence, "
                                   "occurrence_count, avg_aten_op_launch_delay or "
                                   "avg_runtime_delay, comma-separated",
                                   arg);
        cut->sort_by[cut->nsort++] = col;
        if (e == NULL) break;
        p = e + 1;
    }
    return 0;
}

/* --by-op among the options (a first pass over them; cli_hta_main parses them again). */
static int wants_by_op(int argc, char **argv) {
    int first = 0, by = 0;
    for (int o; (o = cli_getopt(argc, argv, ":f:j:qhV", cmd_launches_options, &first)) != -1;)
        by |= o == CLI_LONG_ONLY + 3;
    return by;
}

static int bo_is_launch(const char *n) {
    static const char *const names[] = {"cudaLaunchKernel",
                                        "cudaLaunchKernelExC",
                                        "cuLaunchKernel",
                                        "cuLaunchKernelEx",
                                        "cudaMemcpyAsync",
                                        "cudaMemsetAsync",
                                        "runFunction - job_prep_and_submit_for_execution",
                                        "hipLaunchKernel",
                                        "hipExtModuleLaunchKernel",
                                        "hipMemcpyAsync",
                                        "hipMemsetAsync",
                                        "hipMemcpyWithStream"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(n, names[k]) == 0) return 1;
    return 0;
}

typedef struct bo_op {
    int64_t ts, end, tid;
    uint32_t ev, name;
    uint8_t tid_kind;
} bo_op;

static int bo_op_cmp(const void *a, const void *b) {
    const bo_op *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->end - x->ts != y->end - y->ts) return x->end - x->ts > y->end - y->ts ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

/* A kernel and the event of its CPU partner (HTA's index_correlation). */
typedef struct bo_kernel {
    uint32_t partner, ev;
    int64_t ts;
} bo_kernel;

static int bo_kernel_cmp(const void *a, const void *b) {
    const bo_kernel *x = a, *y = b;
    if (x->partner != y->partner) return x->partner < y->partner ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

/* A launch attributed to an op call. */
typedef struct bo_stat {
    const bo_op *op;
    uint32_t launch, kernel_name;
    int64_t op_delay, rt_delay;
} bo_stat;

/* The rank's model for the sort, per thread: ranks are reduced on several at once (per_rank). */
static _Thread_local const md_model *g_bo_m;

static int bo_stat_cmp(const void *a, const void *b) {
    const bo_stat *x = a, *y = b;
    if (x->op->tid_kind != y->op->tid_kind) return x->op->tid_kind < y->op->tid_kind ? -1 : 1;
    if (x->op->tid != y->op->tid) return x->op->tid < y->op->tid ? -1 : 1;
    int c = strcmp(md_str(g_bo_m, x->op->name), md_str(g_bo_m, y->op->name));
    if (c) return c;
    if (x->op->ts != y->op->ts) return x->op->ts < y->op->ts ? -1 : 1;
    return (x->launch > y->launch) - (x->launch < y->launch);
}

/* An op call, then a group of them. */
typedef struct bo_call {
    const char *name;
    char *seq;
    int64_t op_delay, rt_delay;
} bo_call;

static int bo_call_cmp(const void *a, const void *b) {
    const bo_call *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->seq, y->seq);
}

typedef struct bo_group {
    const char *name, *seq;
    int64_t count;
    double op_delay, rt_delay;
    size_t order; /* place in the (name, seq) order: the sort's tie-breaker */
} bo_group;

/* The sort's cutoffs, per thread: ranks are reduced on several at once (per_rank). */
static _Thread_local const cutoffs *g_bo_cut;

static int bo_group_cmp(const void *a, const void *b) {
    const bo_group *x = a, *y = b;
    for (size_t k = 0; k < g_bo_cut->nsort; k++) {
        int c = 0;
        switch (g_bo_cut->sort_by[k]) {
        case 1:
            c = strcmp(y->name, x->name);
            break;
        case 2:
            c = strcmp(y->seq, x->seq);
            break;
        case 3:
            c = (y->count > x->count) - (y->count < x->count);
            break;
        case 4:
            c = (y->op_delay > x->op_delay) - (y->op_delay < x->op_delay);
            break;
        default:
            c = (y->rt_delay > x->rt_delay) - (y->rt_delay < x->rt_delay);
        }
        if (c) return c;
    }
    return (x->order > y->order) - (x->order < y->order);
}

/* The rightmost leaf below p (leaves [lo, hi) under node) whose end is at least x, or -1. */
static long bo_rightmost(const int64_t *tr, size_t node, size_t lo, size_t hi, size_t p,
                         int64_t x) {
    if (lo >= p || tr[node] < x) return -1;
    if (hi - lo == 1) return (long)lo;
    size_t mid = lo + (hi - lo) / 2;
    long r = bo_rightmost(tr, 2 * node + 1, mid, hi, p, x);
    return r >= 0 ? r : bo_rightmost(tr, 2 * node, lo, mid, p, x);
}

static double bo_round3(double x) {
    return rint(x * 1000.0) / 1000.0; /* numpy's round(3): x * 1000 to even */
}

/* One rank's rows into t. */
static int by_op_rank(const cli_hta_rank *r, const cutoffs *cut, cli_hta_table *t) {
    const md_model *m = &r->m;
    size_t cap = r->cpu_count + r->count + 1, nops = 0, nl = 0, nk = 0, ns = 0, size = 1;
    bo_op *ops = malloc(cap * sizeof *ops);
    cli_hta_row *launches = malloc(cap * sizeof *launches);
    bo_kernel *kern = malloc(cap * sizeof *kern);
    bo_stat *st = malloc(cap * sizeof *st);
    int64_t *tr = NULL;
    bo_call *calls = NULL;
    bo_group *groups = NULL;
    size_t ncalls = 0, ngroups = 0;
    cli_hta_iters it = {0};
    int rc = ops && launches && kern && st ? 0 : STROBE_ENOMEM;
    if (rc == 0) rc = cli_hta_iters_init(&it, r);
    /* The aten ops and the launches among the kept rows, CPU rows and rows with a stream. */
    cli_hta_row w;
    for (size_t i = 0, k = 0, cpu_done = 0; rc == 0;) {
        if (!cpu_done && cli_hta_cpu_next(r, &i, &w)) {
            i++;
        } else if (cpu_done = 1, k < r->count) {
            w = r->rows[k++];
        } else {
            break;
        }
        const char *name = md_str(m, md_name_of(m, w.ev));
        if (bo_is_launch(name)) launches[nl++] = w;
        if (strncmp(name, "aten::", 6) != 0) continue;
        const md_thread *th = &m->threads[md_thread_of(m, w.ev)];
        bo_op *o = &ops[nops++];
        o->ts = w.ts;
        o->end = w.end;
        o->ev = w.ev;
        o->name = md_name_of(m, w.ev);
        o->tid_kind = th->tid_kind;
        o->tid = th->tid_kind == MD_ID_STR ? th->tid_str : th->tid;
    }
    /* The kernels, by their CPU partner: the last CPU row of their correlation id. */
    for (size_t k = 0; rc == 0 && k < r->count; k++) {
        const md_event e = md_at(m, r->rows[k].ev);
        if (!cli_hta_is_gpu_row(m, &e) || e.corr == -1) continue;
        size_t lo = 0, hi = it.ncorr;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (it.cr[mid].corr <= e.corr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0 || it.cr[lo - 1].corr != e.corr) continue;
        kern[nk++] = (bo_kernel){(uint32_t)it.cr[lo - 1].ev, r->rows[k].ev, r->rows[k].ts};
    }
    if (rc == 0) {
        qsort(ops, nops, sizeof *ops, bo_op_cmp);
        qsort(kern, nk, sizeof *kern, bo_kernel_cmp);
        qsort(launches, nl, sizeof *launches, by_row_ev);
        while (size < nops)
            size *= 2;
        tr = malloc(2 * size * sizeof *tr);
        if (tr == NULL) rc = STROBE_ENOMEM;
    }
    if (rc == 0) {
        for (size_t k = 0; k < size; k++)
            tr[size + k] = k < nops ? ops[k].end : INT64_MIN;
        for (size_t k = size - 1; k > 0; k--)
            tr[k] = tr[2 * k] > tr[2 * k + 1] ? tr[2 * k] : tr[2 * k + 1];
    }
    for (size_t l = 0; rc == 0 && l < nl; l++) {
        const cli_hta_row *lw = &launches[l];
        size_t lo = 0, hi = nk; /* the launch's first kernel */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (kern[mid].partner < lw->ev)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == nk || kern[lo].partner != lw->ev) continue;
        size_t p = 0, phi = nops; /* ops with ts <= the launch's: [0, p) */
        while (p < phi) {
            size_t mid = p + (phi - p) / 2;
            if (ops[mid].ts <= lw->ts)
                p = mid + 1;
            else
                phi = mid;
        }
        long o = nops ? bo_rightmost(tr, 1, 0, size, p, lw->end) : -1;
        if (o < 0) continue;
        st[ns++] = (bo_stat){&ops[o], lw->ev, md_name_of(m, kern[lo].ev), lw->ts - ops[o].ts,
                             kern[lo].ts - lw->ts};
    }
    g_bo_m = m;
    if (rc == 0) qsort(st, ns, sizeof *st, bo_stat_cmp);
    calls = rc ? NULL : malloc((ns ? ns : 1) * sizeof *calls);
    if (rc == 0 && calls == NULL) rc = STROBE_ENOMEM;
    for (size_t a = 0, b; rc == 0 && a < ns; a = b) {
        size_t len = 1;
        for (b = a; b < ns && bo_stat_cmp(&(bo_stat){st[a].op, 0, 0, 0, 0},
                                          &(bo_stat){st[b].op, 0, 0, 0, 0}) == 0;
             b++)
            len += strlen(md_str(m, st[b].kernel_name)) + 4;
        char *seq = malloc(len);
        if (seq == NULL) {
            rc = STROBE_ENOMEM;
            break;
        }
        seq[0] = '\0';
        for (size_t k = a; k < b; k++) {
            if (k > a) strcat(seq, " -> ");
            strcat(seq, md_str(m, st[k].kernel_name));
        }
        calls[ncalls++] = (bo_call){md_str(m, st[a].op->name), seq, st[a].op_delay, st[a].rt_delay};
    }
    if (rc == 0) qsort(calls, ncalls, sizeof *calls, bo_call_cmp);
    groups = rc ? NULL : malloc((ncalls ? ncalls : 1) * sizeof *groups);
    if (rc == 0 && groups == NULL) rc = STROBE_ENOMEM;
    for (size_t a = 0, b; rc == 0 && a < ncalls; a = b) {
        int64_t s1 = 0, s2 = 0;
        for (b = a; b < ncalls && bo_call_cmp(&calls[a], &calls[b]) == 0; b++) {
            s1 += calls[b].op_delay;
            s2 += calls[b].rt_delay;
        }
        double n = (double)(b - a);
        groups[ngroups] = (bo_group){calls[a].name,  calls[a].seq,   (int64_t)(b - a),
                                     (double)s1 / n, (double)s2 / n, ngroups};
        ngroups++;
    }
    g_bo_cut = cut;
    if (rc == 0) qsort(groups, ngroups, sizeof *groups, bo_group_cmp);
    for (size_t g = 0; rc == 0 && g < ngroups; g++)
        rc = CLI_HTA_ROW(t, CLI_HTA_INT(r->rank), CLI_HTA_TEXT(groups[g].name),
                         CLI_HTA_TEXT(groups[g].seq), CLI_HTA_INT(groups[g].count),
                         CLI_HTA_NUM(bo_round3(groups[g].op_delay)),
                         CLI_HTA_NUM(bo_round3(groups[g].rt_delay)));
    for (size_t c = 0; calls && c < ncalls; c++)
        free(calls[c].seq);
    free(calls);
    free(groups);
    free(tr);
    cli_hta_iters_free(&it);
    free(ops);
    free(launches);
    free(kern);
    free(st);
    return rc;
}

static int run_by_op(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++)
        rc = by_op_rank(&s->ranks[k], ctx, t);
    return rc;
}

static const cli_hta_command by_op_command = {"launches",
                                              cmd_launches_usage,
                                              cmd_launches_options,
                                              ":f:j:qhV",
                                              option,
                                              run_by_op,
                                              {{NULL, bo_cols, bo_text, 6}},
                                              1,
                                              NULL,
                                              NULL,
                                              1 /* per_rank */};

int cmd_launches(int argc, char **argv) {
    cutoffs cut = {50, 100, 0, {3}, 1};
    cut.by_op = wants_by_op(argc, argv);
    return cli_hta_main(cut.by_op ? &by_op_command : &command, &cut, argc, argv);
}
