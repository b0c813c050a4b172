/* cmd_breakdown.c: `strobe breakdown`, HTA's temporal breakdown per rank
 * (BreakdownAnalysis.get_temporal_breakdown in hta/analyzers/breakdown_analysis.py).
 *
 * HTA's definitions, over a rank's GPU kernels (its rows with a stream, see hta.h):
 *   kernel_time      = the last merged interval's end - the first one's start
 *   idle_time        = kernel_time - the length of the merged intervals of all kernels
 *   compute_time     = the length of the merged intervals of the COMPUTATION kernels
 *   non_compute_time = kernel_time - compute_time - idle_time
 *   X_pctg           = round(100 * X / kernel_time, 2) */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
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
    "    launched (by correlation id). Kernels are COMMUNICATION (ncclKernel in the name),\n"
    "    MEMORY (Memcpy or Memset) or COMPUTATION.\n"
    "\n"
    "    Per rank: kernel_time, from the first kernel's start to the last one's end; idle_time,\n"
    "    the part of it no kernel runs; compute_time, when a COMPUTATION kernel runs;\n"
    "    non_compute_time, the rest; and each as a percentage of kernel_time (2 decimals).\n"
    "\n"
    "OPTIONS\n"
    "    -f, --format F table (default), csv or json (an array of rows keyed by HTA's column\n"
    "                   names: rank, idle_time, compute_time, non_compute_time, kernel_time,\n"
    "                   idle_time_pctg, compute_time_pctg, non_compute_time_pctg)\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_breakdown_options[] = {
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

static int is_compute(const hta_rank *r, const hta_row *w, void *arg) {
    (void)arg;
    return hta_kernel_type(md_str(&r->m, r->m.events[w->ev].name)) == HTA_COMPUTATION;
}

static int64_t run_time(const int64_t *iv, size_t n) {
    int64_t t = 0;
    for (size_t k = 0; k < n; k++)
        t += iv[2 * k + 1] - iv[2 * k];
    return t;
}

static int run(const hta_set *s, int format) {
    static const char *const cols[] = {
        "rank",        "idle_time",      "compute_time",      "non_compute_time",
        "kernel_time", "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"};
    static const uint8_t text[8] = {0};
    hta_table t = {cols, text, 8, NULL, 0, 0};
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const hta_rank *r = &s->ranks[k];
        int64_t *iv = malloc(2 * (r->count ? r->count : 1) * sizeof *iv);
        if (iv == NULL) {
            rc = STROBE_ENOMEM;
            break;
        }
        size_t n = hta_merge(r, NULL, NULL, iv);
        int64_t kernel = n ? iv[2 * n - 1] - iv[0] : 0;
        int64_t idle = kernel - run_time(iv, n);
        n = hta_merge(r, is_compute, NULL, iv);
        int64_t compute = run_time(iv, n);
        int64_t other = kernel - compute - idle;
        free(iv);
        char b[8][40];
        const char *cells[8];
        snprintf(b[0], sizeof b[0], "%" PRId64, r->rank);
        snprintf(b[1], sizeof b[1], "%" PRId64, idle);
        snprintf(b[2], sizeof b[2], "%" PRId64, compute);
        snprintf(b[3], sizeof b[3], "%" PRId64, other);
        snprintf(b[4], sizeof b[4], "%" PRId64, kernel);
        hta_pct(b[5], sizeof b[5], 100.0 * ((double)idle / (double)kernel), 2);
        hta_pct(b[6], sizeof b[6], 100.0 * ((double)compute / (double)kernel), 2);
        hta_pct(b[7], sizeof b[7], 100.0 * ((double)other / (double)kernel), 2);
        for (int c = 0; c < 8; c++)
            cells[c] = b[c];
        rc = hta_table_add(&t, cells);
    }
    if (rc == 0) hta_table_print(&t, format, stdout);
    hta_table_free(&t);
    return rc;
}

int cmd_breakdown(int argc, char **argv) {
    int format = CL_TABLE, quiet = 0, first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":f:qhV", cmd_breakdown_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_breakdown_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'f':
            format = cl_parse_format(optarg);
            if (format < 0) return cli_usage_error("breakdown", "unknown --format", optarg);
            break;
        default:
            return cli_option_error("breakdown", c, argv, cmd_breakdown_options);
        }
    }
    if (first >= argc) return cli_usage_error("breakdown", "give a trace or a folder", NULL);
    hta_set s;
    if (hta_load(&s, "breakdown", argv + first, (size_t)(argc - first), quiet) != 0)
        return CLI_BAD_INPUT;
    int work = run(&s, format);
    hta_free(&s);
    return cli_finish("breakdown", argc - first == 1 ? argv[first] : "traces", work, CLI_OK);
}
