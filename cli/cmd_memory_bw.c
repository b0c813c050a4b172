/* cmd_memory_bw.c: `strobe memory-bw`, HTA's memory bandwidth of copies and memsets per rank and
 * kind (TraceCounters.get_memory_bw_summary in hta/analyzers/trace_counters.py), and with --series
 * the time series itself (get_memory_bw_time_series).
 *
 * The series is series.c's (definitions in series.h): per kind of copy ("Memcpy HtoD", "Memcpy
 * DtoH", "Memcpy DtoD", "Memset" ...), the sum of the "memory bandwidth (GB/s)" of the copies
 * running at each time. The summary is pandas' describe() of a kind's points whose value is above
 * 0 (HTA leaves out the points where no copy runs), kinds in name order; a kind without such a
 * point, and a rank without copies, has no row. The "memory bandwidth (GB/s)" args are read from
 * the trace a second time (the model does not keep them), so TRACE cannot be standard input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "series.h"
#include "strobe/error.h"

const char cmd_memory_bw_usage[] =
    "NAME\n"
    "    strobe memory-bw - HTA's memory copy bandwidth per rank and kind of copy\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe memory-bw [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's get_memory_bw_summary(), with its definitions, so that it\n"
    "    gives HTA's numbers. TRACE is a trace, or a folder of rank traces, read as strobe\n"
    "    breakdown reads them (ranks, HTA's times in microseconds, its profiler-step\n"
    "    restriction, kernels as the events with a stream); not standard input (its\n"
    "    \"memory bandwidth (GB/s)\" args are read in a second pass).\n"
    "\n"
    "    The copies and memsets are the kernels whose name holds \"Memcpy\" or \"Memset\"; each\n"
    "    is of a kind named by its name's start, as HTA names them: \"Memcpy HtoD\", \"Memcpy\n"
    "    DtoH\", \"Memcpy DtoD\" ..., \"Memset\" (\"Memcpy Unknown\" for another name). A kind's\n"
    "    bandwidth at a time is the sum of the \"memory bandwidth (GB/s)\" of its copies running\n"
    "    then (a copy of 0 us counts for 1 us, as HTA rounds it). The statistics, in GB/s, are\n"
    "    pandas' describe() of a kind's values after each change, left out where it is 0:\n"
    "    count, mean, std, min, 25%, 50%, 75%, max.\n"
    "\n"
    "    With --series, the time series itself (HTA's get_memory_bw_time_series): a row per\n"
    "    start or end of a copy, the value holding until the kind's next row: ts\n"
    "    (microseconds, as HTA rounds them, from the earliest event of all the ranks, as HTA\n"
    "    aligns them), pid of the copy, name (the kind), memory_bw_gbps (GB/s).\n"
    "\n"
    "OPTIONS\n"
    "    --series       the time series instead of its statistics\n"
    "    -f, --format F table (default), csv or json (rows keyed by HTA's column names: rank,\n"
    "                   name, count, mean, std, min, 25%, 50%, 75%, max (GB/s); with --series\n"
    "                   rank, ts, pid, name, memory_bw_gbps)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit, standard\n"
    "    input) or usage.\n";

const struct option cmd_memory_bw_options[] = {
    {"format", required_argument, NULL, 'f'},
    {"series", no_argument, NULL, CLI_LONG_ONLY + 1},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

/* Rank r's series, its args read from its file. @return 0, CLI_HTA_REPORTED or a STROBE_E* code. */
static int rank_series(const cli_hta_set *s, const cli_hta_rank *r, cli_hta_bw *b) {
    memset(b, 0, sizeof *b);
    if (strcmp(r->m.path, "-") == 0) {
        fprintf(cli_hta_err(),
                "strobe memory-bw: standard input cannot be read twice: give the trace's file\n");
        return CLI_HTA_REPORTED;
    }
    cli_hta_bw_arg *a;
    size_t na;
    int rc = cli_hta_bw_args("memory-bw", r->m.path, &a, &na);
    if (rc == STROBE_ENOMEM) return rc;
    if (rc) return CLI_HTA_REPORTED;
    rc = cli_hta_bw_series(s, r, a, na, b);
    free(a);
    return rc;
}

static int run(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    int series = *(const int *)ctx, rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const cli_hta_rank *r = &s->ranks[k];
        cli_hta_bw b;
        rc = rank_series(s, r, &b);
        double *v = rc == 0 ? malloc((b.n ? b.n : 1) * sizeof *v) : NULL;
        if (rc == 0 && v == NULL) rc = STROBE_ENOMEM;
        for (size_t i = 0; rc == 0 && series && i < b.n; i++)
            rc = CLI_HTA_ROW(&t[0], CLI_HTA_INT(r->rank), CLI_HTA_TS(b.p[i].ts),
                             CLI_HTA_INT(b.p[i].pid), CLI_HTA_TEXT(b.kinds[b.p[i].kind]),
                             CLI_HTA_NUM(b.p[i].gbps));
        for (size_t i = 0, j; rc == 0 && !series && i < b.n; i = j) {
            size_t nv = 0;
            for (j = i; j < b.n && b.p[j].kind == b.p[i].kind; j++)
                if (b.p[j].gbps > 0) v[nv++] = b.p[j].gbps;
            if (nv == 0) continue;
            double d[8];
            cli_hta_describe(v, nv, d);
            rc = CLI_HTA_ROW(&t[0], CLI_HTA_INT(r->rank), CLI_HTA_TEXT(b.kinds[b.p[i].kind]),
                             CLI_HTA_INT(nv), CLI_HTA_NUM(d[1]), CLI_HTA_NUM(d[2]),
                             CLI_HTA_NUM(d[3]), CLI_HTA_NUM(d[4]), CLI_HTA_NUM(d[5]),
                             CLI_HTA_NUM(d[6]), CLI_HTA_NUM(d[7]));
        }
        free(v);
        cli_hta_bw_free(&b);
    }
    return rc;
}

static int option(void *ctx, int c, const char *arg) {
    (void)arg;
    if (c != CLI_LONG_ONLY + 1) return CLI_HTA_UNKNOWN_OPTION;
    *(int *)ctx = 1;
    return 0;
}

static const char *const cols[] = {"rank", "name", "count", "mean", "std",
                                   "min",  "25%",  "50%",   "75%",  "max"};
static const uint8_t text[10] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
/* The table format's headers: the statistics are of bandwidths, in GB/s. */
static const char *const heads[] = {"rank",       "name",       "count",      "mean (GB/s)",
                                    "std (GB/s)", "min (GB/s)", "25% (GB/s)", "50% (GB/s)",
                                    "75% (GB/s)", "max (GB/s)"};
static const char *const scols[] = {"rank", "ts", "pid", "name", "memory_bw_gbps"};
static const uint8_t stext[5] = {0, 0, 0, 1, 0};
static const char *const sheads[] = {"rank", "ts (us)", "pid", "name", "memory_bw (GB/s)"};

int cmd_memory_bw(int argc, char **argv) {
    /* --series chooses the table: a first pass over a copy of argv (getopt permutes it) finds
     * it, however abbreviated; the errors are cli_hta_main's to report. */
    char **copy = malloc(((size_t)argc + 1) * sizeof *copy);
    if (copy == NULL) return cli_finish("memory-bw", "traces", STROBE_ENOMEM, CLI_OK);
    memcpy(copy, argv, ((size_t)argc + 1) * sizeof *copy);
    int series = 0, first = 0;
    for (int o; (o = cli_getopt(argc, copy, ":f:j:qhV", cmd_memory_bw_options, &first)) != -1;)
        series |= o == CLI_LONG_ONLY + 1;
    free(copy);
    const cli_hta_command c = {"memory-bw",
                               cmd_memory_bw_usage,
                               cmd_memory_bw_options,
                               ":f:j:qhV",
                               option,
                               run,
                               {series ? (cli_hta_columns){"series", scols, stext, 5, sheads}
                                       : (cli_hta_columns){"summary", cols, text, 10, heads}},
                               1,
                               NULL,
                               NULL,
                               1 /* per_rank */};
    return cli_hta_main(&c, &series, argc, argv);
}
