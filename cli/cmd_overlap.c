/* cmd_overlap.c: `strobe overlap`, HTA's communication/computation overlap per rank
 * (CommunicationAnalysis.get_comm_comp_overlap in hta/analyzers/communication_analysis.py).
 *
 * HTA's definition, over a rank's GPU kernels (its rows with a stream, see hta.h): the merged
 * intervals of the COMMUNICATION kernels and those of the COMPUTATION kernels; the time both run
 * at once, over the length of the communication intervals; comp_comm_overlap_pctg =
 * round(100 * that, 2), null (HTA's NaN) when the rank has no communication time. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
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
    "    Per rank: the time during which a COMMUNICATION kernel (ncclKernel in the name) and a\n"
    "    COMPUTATION kernel run at once, as a percentage of the time communication kernels run\n"
    "    (2 decimals; empty, or null in JSON, when the rank has no communication kernel).\n"
    "\n"
    "OPTIONS\n"
    "    -f, --format F table (default), csv or json (an array of rows keyed by HTA's column\n"
    "                   names: rank, comp_comm_overlap_pctg)\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_overlap_options[] = {
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

static int of_type(const hta_rank *r, const hta_row *w, void *arg) {
    return hta_kernel_type(md_str(&r->m, r->m.events[w->ev].name)) == *(const int *)arg;
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

static int run(const hta_set *s, int format) {
    static const char *const cols[] = {"rank", "comp_comm_overlap_pctg"};
    static const uint8_t text[2] = {0};
    hta_table t = {cols, text, 2, NULL, 0, 0};
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const hta_rank *r = &s->ranks[k];
        size_t cap = 2 * (r->count ? r->count : 1);
        int64_t *comm = malloc(cap * sizeof *comm), *comp = malloc(cap * sizeof *comp);
        if (comm == NULL || comp == NULL) {
            free(comm);
            free(comp);
            rc = STROBE_ENOMEM;
            break;
        }
        int tc = HTA_COMMUNICATION, tp = HTA_COMPUTATION;
        size_t nc = hta_merge(r, of_type, &tc, comm), np = hta_merge(r, of_type, &tp, comp);
        int64_t comm_time = 0;
        for (size_t i = 0; i < nc; i++)
            comm_time += comm[2 * i + 1] - comm[2 * i];
        int64_t over = both(comm, nc, comp, np);
        free(comm);
        free(comp);
        char b[2][40];
        snprintf(b[0], sizeof b[0], "%" PRId64, r->rank);
        hta_pct(b[1], sizeof b[1], 100.0 * ((double)over / (double)comm_time), 2);
        const char *cells[2] = {b[0], b[1]};
        rc = hta_table_add(&t, cells);
    }
    if (rc == 0) hta_table_print(&t, format, stdout);
    hta_table_free(&t);
    return rc;
}

int cmd_overlap(int argc, char **argv) {
    int format = CL_TABLE, quiet = 0, first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":f:qhV", cmd_overlap_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_overlap_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'f':
            format = cl_parse_format(optarg);
            if (format < 0) return cli_usage_error("overlap", "unknown --format", optarg);
            break;
        default:
            return cli_option_error("overlap", c, argv, cmd_overlap_options);
        }
    }
    if (first >= argc) return cli_usage_error("overlap", "give a trace or a folder", NULL);
    hta_set s;
    if (hta_load(&s, "overlap", argv + first, (size_t)(argc - first), quiet) != 0)
        return CLI_BAD_INPUT;
    int work = run(&s, format);
    hta_free(&s);
    return cli_finish("overlap", argc - first == 1 ? argv[first] : "traces", work, CLI_OK);
}
