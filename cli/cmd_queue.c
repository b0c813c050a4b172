/* cmd_queue.c: `strobe queue`, HTA's queue length statistics per rank and stream
 * (TraceCounters.get_queue_length_summary in hta/analyzers/trace_counters.py), and with --series
 * the time series itself (get_queue_length_time_series).
 *
 * HTA's definitions, over a rank's rows (see hta.h; the series is series.c's, see series.h):
 *   - a stream's queue length grows by one at each launch of work on it and shrinks by one when
 *     that work starts; a kernel whose launch is missing counts nowhere (HTA's semi-join of the
 *     kernels on the launches' correlations), so that a queue length is never below 0; how many
 *     such kernels a rank has is said on stderr and given as kernels_without_launch;
 *   - the statistics are pandas' describe() of a stream's values after each point: count, mean,
 *     std (n - 1; null for one value), min, 25%, 50%, 75% (linear interpolation), max. Streams
 *     in increasing order.
 *   - time blocked on a full queue (get_time_spent_blocked_on_full_queue, max_queue_length 1024,
 *     CUDA_MAX_LAUNCH_QUEUE_PER_STREAM): on each stream, each point of the series lasts until the
 *     next one (the last, not at all); the points whose length is >= the maximum add up to
 *     duration_at_max_queue_length, over the rank's trace duration (its rows' last ts - first
 *     ts) relative_duration_at_max_queue_length. HTA keeps one row per rank: the last stream,
 *     in increasing order, that reached the maximum. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "series.h"
#include "strobe/error.h"

const char cmd_queue_usage[] =
    "NAME\n"
    "    strobe queue - HTA's queue length statistics per rank and stream\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe queue [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's get_queue_length_summary(), with its definitions, so that it\n"
    "    gives HTA's numbers. TRACE is a trace, or a folder of rank traces, read as strobe\n"
    "    breakdown reads them (ranks, HTA's times in microseconds, its profiler-step\n"
    "    restriction, kernels as the events with a stream).\n"
    "\n"
    "    A stream's queue length grows by one at each launch (cudaLaunchKernel,\n"
    "    cudaMemcpyAsync, cudaMemsetAsync ...) of work on it and shrinks by one when the work\n"
    "    starts. Work whose launch is not in the trace is not counted (so no queue length is\n"
    "    below 0): how many such kernels each rank has is said on standard error and given as\n"
    "    kernels_without_launch. The statistics are those of a stream's values after each\n"
    "    change: count, mean, std, min, 25%, 50%, 75%, max (pandas' describe()). Then the time\n"
    "    blocked on a full queue: per rank, the time a stream's queue length stayed at the\n"
    "    maximum or above, and its share of the rank's trace duration (HTA reports one stream\n"
    "    per rank: the last to reach the maximum).\n"
    "\n"
    "    With --series, the time series itself (HTA's get_queue_length_time_series): a row per\n"
    "    change of a stream's queue length, the value holding until the stream's next row: ts\n"
    "    (microseconds, as HTA rounds them, from the earliest event of all the ranks, as HTA\n"
    "    aligns them), the pid and tid of the work, stream, queue_length.\n"
    "\n"
    "OPTIONS\n"
    "    --max-queue-length N  the queue's capacity (default 1024, as HTA's)\n"
    "    --series       the time series instead of its statistics\n"
    "    -f, --format F table (default); csv (the tables one after another, a blank line\n"
    "                   between them) or json ({\"summary\": [...], \"blocked\": [...],\n"
    "                   \"kernels_without_launch\": [...]}: rows keyed by HTA's column names:\n"
    "                   rank, stream, count, mean, std, min, 25%, 50%, 75%, max; rank, stream,\n"
    "                   duration_at_max_queue_length, relative_duration_at_max_queue_length;\n"
    "                   rank, kernels_without_launch. With --series {\"series\": [...],\n"
    "                   \"kernels_without_launch\": [...]}: rank, ts, pid, tid, stream,\n"
    "                   queue_length)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit) or usage.\n";

const struct option cmd_queue_options[] = {
    {"max-queue-length", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"format", required_argument, NULL, 'f'},
    {"series", no_argument, NULL, CLI_LONG_ONLY + 2},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

/* Says, and puts in table t, how many of rank r's kernels have no launch. */
static int unlaunched_row(const cli_hta_rank *r, const cli_hta_queue *q, cli_hta_table *t) {
    if (q->unlaunched)
        fprintf(cli_hta_err(),
                "strobe queue: rank %" PRId64 ": %" PRIu64
                " kernel%s without their launch: not counted (HTA counts a kernel only from its "
                "launch)\n",
                r->rank, q->unlaunched, q->unlaunched == 1 ? "" : "s");
    return CLI_HTA_ROW(t, CLI_HTA_INT(r->rank), CLI_HTA_INT(q->unlaunched));
}

static int rank_rows(const cli_hta_set *s, const cli_hta_rank *r, int64_t max_len, cli_hta_table *t,
                     cli_hta_table *bt, cli_hta_table *ut) {
    cli_hta_queue q;
    int rc = cli_hta_queue_series(s, r, &q);
    double *v = malloc((q.n ? q.n : 1) * sizeof *v);
    if (rc == 0 && v == NULL) rc = STROBE_ENOMEM;
    int blocked = 0;
    int64_t blocked_stream = 0, blocked_time = 0;
    for (size_t a = 0, b; rc == 0 && a < q.n; a = b) {
        int64_t full = 0;
        int reached = 0;
        for (b = a; b < q.n && q.p[b].stream == q.p[a].stream; b++) {
            v[b - a] = (double)q.p[b].len;
            if (q.p[b].len < max_len) continue;
            reached = 1;
            if (b + 1 < q.n && q.p[b + 1].stream == q.p[a].stream)
                full += q.p[b + 1].ts - q.p[b].ts;
        }
        if (reached) {
            blocked = 1;
            blocked_stream = q.p[a].stream;
            blocked_time = full;
        }
        double d[8];
        cli_hta_describe(v, b - a, d);
        rc = CLI_HTA_ROW(t, CLI_HTA_INT(r->rank), CLI_HTA_INT(q.p[a].stream), CLI_HTA_INT(b - a),
                         CLI_HTA_NUM(d[1]), CLI_HTA_NUM(d[2]), CLI_HTA_NUM(d[3]), CLI_HTA_NUM(d[4]),
                         CLI_HTA_NUM(d[5]), CLI_HTA_NUM(d[6]), CLI_HTA_NUM(d[7]));
    }
    if (rc == 0 && blocked) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int pass = 0; pass < 2; pass++) {
            cli_hta_row cw;
            for (size_t k = 0, j = 0; pass == 0 ? k < r->count : cli_hta_cpu_next(r, &j, &cw);
                 k++, j++) {
                const cli_hta_row *w = pass == 0 ? &r->rows[k] : &cw;
                if (w->ts < lo) lo = w->ts;
                if (w->ts > hi) hi = w->ts;
            }
        }
        rc = CLI_HTA_ROW(bt, CLI_HTA_INT(r->rank), CLI_HTA_INT(blocked_stream),
                         CLI_HTA_INT(blocked_time),
                         CLI_HTA_NUM((double)blocked_time / (double)(hi - lo)));
    }
    if (rc == 0) rc = unlaunched_row(r, &q, ut);
    cli_hta_queue_free(&q);
    free(v);
    return rc;
}

static int run(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    int64_t max_len = *(const int64_t *)ctx;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++)
        rc = rank_rows(s, &s->ranks[k], max_len, &t[0], &t[1], &t[2]);
    return rc;
}

/* --series: HTA's get_queue_length_time_series, every point of every stream of every rank. */
static int run_series(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    (void)ctx;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const cli_hta_rank *r = &s->ranks[k];
        cli_hta_queue q;
        rc = cli_hta_queue_series(s, r, &q);
        for (size_t i = 0; rc == 0 && i < q.n; i++)
            rc = CLI_HTA_ROW(&t[0], CLI_HTA_INT(r->rank), CLI_HTA_TS(q.p[i].ts),
                             CLI_HTA_INT(q.p[i].pid), CLI_HTA_INT(q.p[i].tid),
                             CLI_HTA_INT(q.p[i].stream), CLI_HTA_INT(q.p[i].len));
        if (rc == 0) rc = unlaunched_row(r, &q, &t[1]);
        cli_hta_queue_free(&q);
    }
    return rc;
}

static int option(void *ctx, int c, const char *arg) {
    unsigned long long v;
    if (c == CLI_LONG_ONLY + 2) return 0; /* --series: chosen before (cmd_queue) */
    if (c != CLI_LONG_ONLY + 1) return CLI_HTA_UNKNOWN_OPTION;
    if (cli_parse_count("queue", "--max-queue-length", arg, INT64_MAX, &v)) return CLI_BAD_INPUT;
    *(int64_t *)ctx = (int64_t)v;
    return 0;
}

static const char *const cols[] = {"rank", "stream", "count", "mean", "std",
                                   "min",  "25%",    "50%",   "75%",  "max"};
static const uint8_t text[10] = {0};
static const char *const bcols[] = {"rank", "stream", "duration_at_max_queue_length",
                                    "relative_duration_at_max_queue_length"};
static const char *const ucols[] = {"rank", "kernels_without_launch"};
static const char *const scols[] = {"rank", "ts", "pid", "tid", "stream", "queue_length"};

const cli_hta_command cli_hta_cmd_queue = {"queue",
                                           cmd_queue_usage,
                                           cmd_queue_options,
                                           ":f:j:qhV",
                                           option,
                                           run,
                                           {{"summary", cols, text, 10},
                                            {"blocked", bcols, text, 4},
                                            {"kernels_without_launch", ucols, text, 2}},
                                           3,
                                           NULL,
                                           NULL,
                                           1 /* per_rank */};

static const cli_hta_command queue_series = {
    "queue",
    cmd_queue_usage,
    cmd_queue_options,
    ":f:j:qhV",
    option,
    run_series,
    {{"series", scols, text, 6}, {"kernels_without_launch", ucols, text, 2}},
    2,
    NULL,
    NULL,
    1 /* per_rank */};

int cmd_queue(int argc, char **argv) {
    int64_t max_len = 1024;
    /* --series chooses the tables: a first pass over a copy of argv (getopt permutes it) finds
     * it, however abbreviated; the errors are cli_hta_main's to report. */
    char **copy = malloc(((size_t)argc + 1) * sizeof *copy);
    if (copy == NULL) return cli_finish("queue", "traces", STROBE_ENOMEM, CLI_OK);
    memcpy(copy, argv, ((size_t)argc + 1) * sizeof *copy);
    int series = 0, first = 0;
    for (int o; (o = cli_getopt(argc, copy, ":f:j:qhV", cmd_queue_options, &first)) != -1;)
        series |= o == CLI_LONG_ONLY + 2;
    free(copy);
    return cli_hta_main(series ? &queue_series : &cli_hta_cmd_queue, &max_len, argc, argv);
}
