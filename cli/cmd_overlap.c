/* cmd_overlap.c: `strobe overlap`, HTA's communication/computation overlap per rank
 * (CommunicationAnalysis.get_comm_comp_overlap in hta/analyzers/communication_analysis.py).
 *
 * HTA's definition, over a rank's GPU kernels (its rows with a stream, see hta.h): the merged
 * intervals of the COMMUNICATION kernels and those of the COMPUTATION kernels; the time both run
 * at once, over the length of the communication intervals; comp_comm_overlap_pctg =
 * round(100 * that, 2), null (HTA's NaN) when the rank has no communication time. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "strobe/error.h"

const char cmd_overlap_usage[] =
    "NAME\n"
    "    strobe overlap - HTA's communication/computation overlap per rank\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe overlap [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's get_comm_comp_overlap(), with its definitions, so that it\n"
    "    gives HTA's numbers. TRACE is a trace, or a folder of rank traces; traces are read as\n"
    "    strobe breakdown reads them (ranks, HTA's times, its profiler-step restriction, its\n"
    "    kernel types).\n"
    "\n"
    "    Per rank: the time during which a COMMUNICATION kernel (a name that starts with nccl,\n"
    "    hip or hccl, or holds ncclKernel) and a COMPUTATION kernel (neither that nor MEMORY)\n"
    "    run at once, as a percentage of the time communication kernels run\n"
    "    (2 decimals; empty, or null in JSON, when the rank has no communication kernel).\n"
    "\n"
    "OPTIONS\n"
    "    -f, --format F table (default), csv or json (an array of rows keyed by HTA's column\n"
    "                   names: rank, comp_comm_overlap_pctg)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_overlap_options[] = {
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

static int of_type(const cli_hta_rank *r, const cli_hta_row *w, void *arg) {
    return cli_hta_kernel_type(md_str(&r->m, md_name_of(&r->m, w->ev))) == *(const int *)arg;
}

/* The length of the intersection of two sets of disjoint intervals, each sorted by start. */
static int64_t both(const int64_t *a, size_t na, const int64_t *b, size_t nb) {
    int64_t t = 0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        int64_t lo = a[2 * i] > b[2 * j] ? a[2 * i] : b[2 * j];
        int64_t hi = a[2 * i + 1] < b[2 * j + 1] ? a[2 * i + 1] : b[2 * j + 1];
        if (hi > lo) t += hi - lo;
        if (a[2 * i + 1] < b[2 * j + 1])
            i++;
        else
            j++;
    }
    return t;
}

static int run(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    (void)ctx;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const cli_hta_rank *r = &s->ranks[k];
        size_t cap = 2 * (r->count ? r->count : 1);
        int64_t *comm = malloc(cap * sizeof *comm), *comp = malloc(cap * sizeof *comp);
        if (comm == NULL || comp == NULL) {
            free(comm);
            free(comp);
            return STROBE_ENOMEM;
        }
        int tc = CLI_HTA_COMMUNICATION, tp = CLI_HTA_COMPUTATION;
        size_t nc = cli_hta_merge(r, of_type, &tc, comm), np = cli_hta_merge(r, of_type, &tp, comp);
        int64_t comm_time = 0;
        for (size_t i = 0; i < nc; i++)
            comm_time += comm[2 * i + 1] - comm[2 * i];
        int64_t over = both(comm, nc, comp, np);
        free(comm);
        free(comp);
        rc = CLI_HTA_ROW(t, CLI_HTA_INT(r->rank),
                         CLI_HTA_PCT(100.0 * ((double)over / (double)comm_time)));
    }
    return rc;
}

static const char *const cols[] = {"rank", "comp_comm_overlap_pctg"};
static const uint8_t text[2] = {0};

const cli_hta_command cli_hta_cmd_overlap = {"overlap",
                                             cmd_overlap_usage,
                                             cmd_overlap_options,
                                             ":f:j:qhV",
                                             NULL,
                                             run,
                                             {{NULL, cols, text, 2}},
                                             1,
                                             NULL,
                                             NULL,
                                             1 /* per_rank */};

int cmd_overlap(int argc, char **argv) {
    return cli_hta_main_rows(&cli_hta_cmd_overlap, NULL, argc, argv, 1); /* no CPU rows */
}
