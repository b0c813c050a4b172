/* cmd_launches.c: `strobe launches`, HTA's kernel launch statistics per rank
 * (CudaKernelAnalysis.cuda_kernel_launch_stats in hta/analyzers/cuda_kernel_analysis.py, with
 * include_memory_events True).
 *
 * HTA's definitions, over a rank's rows (see hta.h): the launch correlations are those of the
 * rows hta_is_launch() takes (CUDA's, ROCm's and MTIA's launches, copies and memsets); the CPU rows
 * (stream -1) and the GPU rows (stream != -1) with such a correlation are joined on it (an inner
 * join: every pair), in the CPU rows' order, then the GPU rows'. A pair's row: correlation,
 * cpu_duration and gpu_duration (HTA's durations, end - ts), and launch_delay = gpu ts - cpu ts +
 * cpu_duration (HTA's formula as written). The summaries are those of HTA's plots: short kernels
 * (cpu_duration <= runtime cutoff, 50, and gpu_duration < cpu_duration), runtime outliers
 * (cpu_duration > runtime cutoff), launch delay outliers (launch_delay > its cutoff, 100). */
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
    "OPTIONS\n"
    "    --runtime-cutoff N       in microseconds (default 50, as HTA's)\n"
    "    --launch-delay-cutoff N  in microseconds (default 100, as HTA's)\n"
    "    -f, --format F table (default); csv (the launches, a blank line, the summaries) or\n"
    "                   json ({\"launches\": [...], \"summary\": [...]}, rows keyed by HTA's\n"
    "                   column names)\n"
    // clang-format off
    HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_launches_options[] = {
    {"runtime-cutoff", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"launch-delay-cutoff", required_argument, NULL, CLI_LONG_ONLY + 2},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

typedef struct gpu_ref {
    int64_t corr;
    const hta_row *w;
} gpu_ref;

static int by_corr(const void *a, const void *b) {
    const gpu_ref *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->w->ev > y->w->ev) - (x->w->ev < y->w->ev);
}

typedef struct cutoffs {
    int64_t runtime, delay;
} cutoffs;

static int run(const hta_set *s, void *ctx, hta_table *t) {
    int64_t runtime_cut = ((const cutoffs *)ctx)->runtime,
            delay_cut = ((const cutoffs *)ctx)->delay;
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
        hta_row cpu_row;
        for (size_t i = 0; rc == 0 && hta_cpu_next(r, &i, &cpu_row); i++)
            if (hta_is_launch(md_str(m, md_name_of(m, cpu_row.ev))))
                corrs[nc++] = md_at(m, cpu_row.ev).corr;
        for (size_t i = 0; rc == 0 && i < r->count; i++)
            if (hta_is_launch(md_str(m, md_name_of(m, r->rows[i].ev))))
                corrs[nc++] = md_at(m, r->rows[i].ev).corr;
        if (rc == 0) hta_sort_i64(corrs, nc);
        for (size_t i = 0; rc == 0 && i < r->count; i++) {
            int64_t c = md_at(m, r->rows[i].ev).corr;
            if (hta_find_i64(corrs, nc, c) >= 0) g[ng++] = (gpu_ref){c, &r->rows[i]};
        }
        if (rc == 0) qsort(g, ng, sizeof *g, by_corr);
        for (size_t i = 0; rc == 0 && hta_cpu_next(r, &i, &cpu_row); i++) {
            const hta_row *cw = &cpu_row;
            int64_t c = md_at(m, cw->ev).corr;
            if (hta_find_i64(corrs, nc, c) < 0) continue;
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
                    rc = HTA_ROW(&t[0], HTA_INT(r->rank), HTA_INT(c), HTA_INT(cpu_dur),
                                 HTA_INT(gpu_dur), HTA_INT(delay));
                    shorts += cpu_dur <= runtime_cut && gpu_dur < cpu_dur;
                    slow += cpu_dur > runtime_cut;
                    late += delay > delay_cut;
                }
            }
        }
        free(corrs);
        free(g);
        if (rc) break;
        rc = HTA_ROW(&t[1], HTA_INT(r->rank), HTA_INT(shorts), HTA_INT(slow), HTA_INT(late));
    }
    return rc;
}

static int option(void *ctx, int c, const char *arg) {
    cutoffs *cut = ctx;
    unsigned long long v;
    if (c != CLI_LONG_ONLY + 1 && c != CLI_LONG_ONLY + 2) return HTA_UNKNOWN_OPTION;
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

static const hta_command command = {"launches",
                                    cmd_launches_usage,
                                    cmd_launches_options,
                                    ":f:qhV",
                                    option,
                                    run,
                                    {{"launches", cols, text, 5}, {"summary", scols, text, 4}},
                                    2};

int cmd_launches(int argc, char **argv) {
    cutoffs cut = {50, 100};
    return hta_main(&command, &cut, argc, argv);
}
