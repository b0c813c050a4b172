/* cmd_launches.c: `strobe launches`, HTA's kernel launch statistics per rank
 * (CudaKernelAnalysis.cuda_kernel_launch_stats in hta/analyzers/cuda_kernel_analysis.py, with
 * include_memory_events True).
 *
 * HTA's definitions, over a rank's rows (see hta.h): the launch correlations are those of the
 * rows named cudaLaunchKernel, cudaMemcpyAsync or cudaMemsetAsync; the CPU rows (stream -1) and
 * the GPU rows (stream != -1) with such a correlation are joined on it (an inner join: every
 * pair), in the CPU rows' order, then the GPU rows'. A pair's row: correlation, cpu_duration and
 * gpu_duration (HTA's durations, end - ts), and launch_delay = gpu ts - cpu ts + cpu_duration
 * (HTA's formula as written). The summaries are those of HTA's plots: short kernels
 * (cpu_duration <= runtime cutoff, 50, and gpu_duration < cpu_duration), runtime outliers
 * (cpu_duration > runtime cutoff), launch delay outliers (launch_delay > its cutoff, 100). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
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
    "    One row per launch (cudaLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync) and device\n"
    "    event of its correlation id: rank, correlation, cpu_duration (the launch's),\n"
    "    gpu_duration (the kernel's, copy's or memset's), and launch_delay, which HTA computes\n"
    "    as the kernel's start - the launch's start + the launch's duration. Then, per rank,\n"
    "    HTA's summaries: short_kernels (cpu_duration <= the runtime cutoff and gpu_duration <\n"
    "    cpu_duration), runtime_outliers (cpu_duration > the runtime cutoff) and\n"
    "    launch_delay_outliers (launch_delay > its cutoff).\n"
    "\n"
    "OPTIONS\n"
    "    --runtime-cutoff N       in microseconds (default 50, as HTA's)\n"
    "    --launch-delay-cutoff N  in microseconds (default 100, as HTA's)\n"
    "    -f, --format F table (default); csv (the launches, a blank line, the summaries) or\n"
    "                   json ({\"launches\": [...], \"summary\": [...]}, rows keyed by HTA's\n"
    "                   column names)\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_launches_options[] = {
    {"runtime-cutoff", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"launch-delay-cutoff", required_argument, NULL, CLI_LONG_ONLY + 2},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

static int is_launch(const char *n) {
    return strcmp(n, "cudaLaunchKernel") == 0 || strcmp(n, "cudaMemcpyAsync") == 0 ||
           strcmp(n, "cudaMemsetAsync") == 0;
}

static int by_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct gpu_ref {
    int64_t corr;
    const hta_row *w;
} gpu_ref;

static int by_corr(const void *a, const void *b) {
    const gpu_ref *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->w->ev > y->w->ev) - (x->w->ev < y->w->ev);
}

static int has(const int64_t *v, size_t n, int64_t x) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == x;
}

static int run(const hta_set *s, int format, int64_t runtime_cut, int64_t delay_cut) {
    static const char *const cols[] = {"rank", "correlation", "cpu_duration", "gpu_duration",
                                       "launch_delay"};
    static const char *const scols[] = {"rank", "short_kernels", "runtime_outliers",
                                        "launch_delay_outliers"};
    static const uint8_t text[5] = {0};
    hta_table t = {cols, text, 5, NULL, 0, 0}, st = {scols, text, 4, NULL, 0, 0};
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const hta_rank *r = &s->ranks[k];
        const md_model *m = &r->m;
        size_t cap = r->cpu_count + r->count + 1;
        int64_t *corrs = malloc(cap * sizeof *corrs);
        gpu_ref *g = malloc(cap * sizeof *g);
        size_t nc = 0, ng = 0;
        uint64_t shorts = 0, slow = 0, late = 0;
        if (corrs == NULL || g == NULL) rc = STROBE_ENOMEM;
        for (size_t i = 0; rc == 0 && i < r->cpu_count; i++)
            if (is_launch(md_str(m, m->events[r->cpu[i].ev].name)))
                corrs[nc++] = m->events[r->cpu[i].ev].corr;
        for (size_t i = 0; rc == 0 && i < r->count; i++)
            if (is_launch(md_str(m, m->events[r->rows[i].ev].name)))
                corrs[nc++] = m->events[r->rows[i].ev].corr;
        if (rc == 0) qsort(corrs, nc, sizeof *corrs, by_i64);
        for (size_t i = 0; rc == 0 && i < r->count; i++) {
            int64_t c = m->events[r->rows[i].ev].corr;
            if (has(corrs, nc, c)) g[ng++] = (gpu_ref){c, &r->rows[i]};
        }
        if (rc == 0) qsort(g, ng, sizeof *g, by_corr);
        for (size_t i = 0; rc == 0 && i < r->cpu_count; i++) {
            const hta_row *cw = &r->cpu[i];
            int64_t c = m->events[cw->ev].corr;
            if (!has(corrs, nc, c)) continue;
            size_t lo = 0, hi = ng;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (g[mid].corr < c)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (size_t j = lo; rc == 0 && j < ng && g[j].corr == c; j++) {
                const hta_row *gw = g[j].w;
                int64_t cpu_dur = cw->end - cw->ts, gpu_dur = gw->end - gw->ts;
                int64_t delay = gw->ts - cw->ts + cpu_dur;
                for (uint32_t copy = 0; rc == 0 && copy < gw->mult; copy++) {
                    char b[5][32];
                    snprintf(b[0], sizeof b[0], "%" PRId64, r->rank);
                    snprintf(b[1], sizeof b[1], "%" PRId64, c);
                    snprintf(b[2], sizeof b[2], "%" PRId64, cpu_dur);
                    snprintf(b[3], sizeof b[3], "%" PRId64, gpu_dur);
                    snprintf(b[4], sizeof b[4], "%" PRId64, delay);
                    const char *cells[5] = {b[0], b[1], b[2], b[3], b[4]};
                    rc = hta_table_add(&t, cells);
                    shorts += cpu_dur <= runtime_cut && gpu_dur < cpu_dur;
                    slow += cpu_dur > runtime_cut;
                    late += delay > delay_cut;
                }
            }
        }
        free(corrs);
        free(g);
        if (rc) break;
        char b[4][32];
        snprintf(b[0], sizeof b[0], "%" PRId64, r->rank);
        snprintf(b[1], sizeof b[1], "%" PRIu64, shorts);
        snprintf(b[2], sizeof b[2], "%" PRIu64, slow);
        snprintf(b[3], sizeof b[3], "%" PRIu64, late);
        const char *cells[4] = {b[0], b[1], b[2], b[3]};
        rc = hta_table_add(&st, cells);
    }
    if (rc == 0) {
        if (format == CL_JSON) fputs("{\"launches\": ", stdout);
        hta_table_print(&t, format, stdout);
        fputs(format == CL_JSON ? ", \"summary\": " : "\n", stdout);
        hta_table_print(&st, format, stdout);
        if (format == CL_JSON) fputs("}\n", stdout);
    }
    hta_table_free(&t);
    hta_table_free(&st);
    return rc;
}

int cmd_launches(int argc, char **argv) {
    int format = CL_TABLE, quiet = 0, first = 0;
    unsigned long long runtime_cut = 50, delay_cut = 100;
    for (int c; (c = cli_getopt(argc, argv, ":f:qhV", cmd_launches_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_launches_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case CLI_LONG_ONLY + 1:
            if (cli_parse_count("launches", "--runtime-cutoff", optarg, INT64_MAX, &runtime_cut))
                return CLI_BAD_INPUT;
            break;
        case CLI_LONG_ONLY + 2:
            if (cli_parse_count("launches", "--launch-delay-cutoff", optarg, INT64_MAX, &delay_cut))
                return CLI_BAD_INPUT;
            break;
        case 'f':
            format = cl_parse_format(optarg);
            if (format < 0) return cli_usage_error("launches", "unknown --format", optarg);
            break;
        default:
            return cli_option_error("launches", c, argv, cmd_launches_options);
        }
    }
    if (first >= argc) return cli_usage_error("launches", "give a trace or a folder", NULL);
    hta_set s;
    if (hta_load(&s, "launches", argv + first, (size_t)(argc - first), quiet) != 0)
        return CLI_BAD_INPUT;
    int work = run(&s, format, (int64_t)runtime_cut, (int64_t)delay_cut);
    hta_free(&s);
    return cli_finish("launches", argc - first == 1 ? argv[first] : "traces", work, CLI_OK);
}
