/* cmd_ranks.c: `strobe ranks`, the profiler steps of each rank as HTA lists them
 * (extract_iteration_info in hta/analyzers/straggler.py).
 *
 * HTA's definitions, over a rank's rows after the restriction (see hta.h), so that the last step
 * is left out when the traces name two or more: the rows whose name starts with "ProfilerStep",
 * in row order; iter, the N of "ProfilerStep #N" (spaces allowed around '#'), -1 when none; ts
 * as HTA aligns it (less the earliest row of all ranks, before the restriction), dur, and
 * end = ts + dur. HTA's straggler detection is not done. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "hta.h"
#include "strobe/error.h"

const char cmd_ranks_usage[] =
    "NAME\n"
    "    strobe ranks - the profiler steps of each rank and their times, as HTA lists them\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe ranks [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's iteration table (extract_iteration_info), with its\n"
    "    definitions. TRACE is a trace, or a folder of rank traces, read as strobe breakdown\n"
    "    reads them (ranks, HTA's times in microseconds, its profiler-step restriction, which\n"
    "    leaves out the last step). One row per ProfilerStep event: rank, iter (its number),\n"
    "    ts (from the earliest event of all ranks), dur (the step time) and end.\n"
    "\n"
    "OPTIONS\n"
    "    -f, --format F table (default), csv or json (an array of rows keyed by HTA's column\n"
    "                   names: rank, iter, ts, dur, end)\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_ranks_options[] = {
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

/* The N of "ProfilerStep\s*#\s*(\d+)" at the start of name, or -1. */
static int64_t step_number(const char *name) {
    const char *p = name + strlen("ProfilerStep");
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v')
        p++;
    if (*p++ != '#') return -1;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v')
        p++;
    if (*p < '0' || *p > '9') return -1;
    int64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        n = n > (INT64_MAX - 9) / 10 ? INT64_MAX : n * 10 + (*p - '0');
    return n;
}

static int run(const hta_set *s, int format) {
    static const char *const cols[] = {"rank", "iter", "ts", "dur", "end"};
    static const uint8_t text[5] = {0};
    hta_table t = {cols, text, 5, NULL, 0, 0};
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const hta_rank *r = &s->ranks[k];
        for (size_t i = 0; rc == 0 && i < r->cpu_count; i++) {
            const hta_row *w = &r->cpu[i];
            const char *name = md_str(&r->m, r->m.events[w->ev].name);
            if (strncmp(name, "ProfilerStep", 12) != 0) continue;
            char b[5][32];
            snprintf(b[0], sizeof b[0], "%" PRId64, r->rank);
            snprintf(b[1], sizeof b[1], "%" PRId64, step_number(name));
            snprintf(b[2], sizeof b[2], "%" PRId64, w->ts - s->min_ts);
            snprintf(b[3], sizeof b[3], "%" PRId64, w->end - w->ts);
            snprintf(b[4], sizeof b[4], "%" PRId64, w->end - s->min_ts);
            const char *cells[5] = {b[0], b[1], b[2], b[3], b[4]};
            rc = hta_table_add(&t, cells);
        }
    }
    if (rc == 0) hta_table_print(&t, format, stdout);
    hta_table_free(&t);
    return rc;
}

int cmd_ranks(int argc, char **argv) {
    int format = CL_TABLE, quiet = 0, first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":f:qhV", cmd_ranks_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_ranks_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'f':
            format = cl_parse_format(optarg);
            if (format < 0) return cli_usage_error("ranks", "unknown --format", optarg);
            break;
        default:
            return cli_option_error("ranks", c, argv, cmd_ranks_options);
        }
    }
    if (first >= argc) return cli_usage_error("ranks", "give a trace or a folder", NULL);
    hta_set s;
    if (hta_load(&s, "ranks", argv + first, (size_t)(argc - first), quiet) != 0)
        return CLI_BAD_INPUT;
    int work = run(&s, format);
    hta_free(&s);
    return cli_finish("ranks", argc - first == 1 ? argv[first] : "traces", work, CLI_OK);
}
