/* cmd_breakdown.c: `strobe breakdown`, HTA's temporal breakdown per rank
 * (BreakdownAnalysis.get_temporal_breakdown in hta/analyzers/breakdown_analysis.py).
 *
 * HTA's definitions, over a rank's GPU kernels (its rows with a stream, see hta.h):
 *   kernel_time      = the last merged interval's end - the first one's start
 *   idle_time        = kernel_time - the length of the merged intervals of all kernels
 *   compute_time     = the length of the merged intervals of the COMPUTATION kernels
 *   non_compute_time = kernel_time - compute_time - idle_time
 *   X_pctg           = round(100 * X / kernel_time, 2) */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "strobe/error.h"

const char cmd_breakdown_usage[] =
    "NAME\n"
    "    strobe breakdown - HTA's temporal breakdown: idle, compute and other GPU time per rank\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe breakdown [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's get_temporal_breakdown(), with its definitions, so that it\n"
    "    gives HTA's numbers. TRACE is a trace, or a folder of rank traces (its .json and\n"
    "    .json.gz files); each trace is one rank, from its distributedInfo.rank (one trace\n"
    "    without it is rank 0). Traces without a rank, two of one rank, or of different jobs\n"
    "    (world_size) are refused.\n"
    "\n"
    "    As HTA does: times are in the trace's microseconds, a decimal ts rounded up and its\n"
    "    end (ts + dur) down; GPU kernels are the events with a \"stream\" arg (copies and\n"
    "    memsets too); when the traces name two or more ProfilerStep#N, only the CPU events\n"
    "    that start before each rank's last step starts are kept, and the kernels they\n"
    "    launched (by correlation id). Kernels are typed by name as HTA types them:\n"
    "    COMMUNICATION (a name that starts with nccl, hip or hccl, or holds ncclKernel), else\n"
    "    MEMORY (starts with Memcpy, hipMemcpy, Memset, hipMemset or dma: MTIA's copies), else\n"
    "    COMPUTATION.\n"
    "\n"
    "    Per rank: kernel_time, from the first kernel's start to the last one's end; idle_time,\n"
    "    the part of it no kernel runs; compute_time, when a COMPUTATION kernel runs;\n"
    "    non_compute_time, the rest; and each as a percentage of kernel_time (2 decimals).\n"
    "\n"
    "OPTIONS\n"
    "    -f, --format F table (default), csv or json (an array of rows keyed by HTA's column\n"
    "                   names: rank, idle_time, compute_time, non_compute_time, kernel_time,\n"
    "                   idle_time_pctg, compute_time_pctg, non_compute_time_pctg)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_breakdown_options[] = {
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

static int is_compute(const cli_hta_rank *r, const cli_hta_row *w, void *arg) {
    (void)arg;
    return cli_hta_kernel_type(md_str(&r->m, md_name_of(&r->m, w->ev))) == CLI_HTA_COMPUTATION;
}

static int64_t run_time(const int64_t *iv, size_t n) {
    int64_t t = 0;
    for (size_t k = 0; k < n; k++)
        t += iv[2 * k + 1] - iv[2 * k];
    return t;
}

static int run(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    (void)ctx;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const cli_hta_rank *r = &s->ranks[k];
        int64_t *iv = malloc(2 * (r->count ? r->count : 1) * sizeof *iv);
        if (iv == NULL) return STROBE_ENOMEM;
        size_t n = cli_hta_merge(r, NULL, NULL, iv);
        int64_t kernel = n ? iv[2 * n - 1] - iv[0] : 0;
        int64_t idle = kernel - run_time(iv, n);
        n = cli_hta_merge(r, is_compute, NULL, iv);
        int64_t compute = run_time(iv, n);
        int64_t other = kernel - compute - idle;
        free(iv);
        double kt = (double)kernel;
        rc = CLI_HTA_ROW(
            t, CLI_HTA_INT(r->rank), CLI_HTA_INT(idle), CLI_HTA_INT(compute), CLI_HTA_INT(other),
            CLI_HTA_INT(kernel), CLI_HTA_PCT(100.0 * ((double)idle / kt)),
            CLI_HTA_PCT(100.0 * ((double)compute / kt)), CLI_HTA_PCT(100.0 * ((double)other / kt)));
    }
    return rc;
}

static const char *const cols[] = {
    "rank",        "idle_time",      "compute_time",      "non_compute_time",
    "kernel_time", "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"};
static const uint8_t text[8] = {0};

const cli_hta_command cli_hta_cmd_breakdown = {"breakdown",
                                               cmd_breakdown_usage,
                                               cmd_breakdown_options,
                                               ":f:j:qhV",
                                               NULL,
                                               run,
                                               {{NULL, cols, text, 8}},
                                               1,
                                               NULL,
                                               NULL,
                                               1 /* per_rank */};

int cmd_breakdown(int argc, char **argv) {
    return cli_hta_main_rows(&cli_hta_cmd_breakdown, NULL, argc, argv, 1); /* no CPU rows */
}
