/* cmd_kernels.c: `strobe kernels`, a per-kernel table and the busy and idle time of each device
 * stream and device.
 *
 * Contents: usage, the per-name rows, interval unions (busy time), output (table, CSV, JSON). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "model.h"
#include "strobe/error.h"
#include "util/table.h"

const char cmd_kernels_usage[] =
    "NAME\n"
    "    strobe kernels - per-kernel table; busy and idle time per device and stream\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe kernels [OPTIONS] TRACE\n"
    "    strobe kernels TRACE [-n N] [-f table|csv|json] [--name-width N] [-q]\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads TRACE (\"-\" is standard input) and prints one row per kernel name (cat kernel, or "
    "Kernel in the 2021 schema): calls, total,\n"
    "    average, shortest and longest duration, and the share of all kernels' time, sorted by\n"
    "    total time. Then, per stream (a device event's tid) and per device (its pid): busy\n"
    "    time, the union of its kernels', copies' and memsets' intervals (overlaps count once);\n"
    "    span, from its first start to its last end; idle = span - busy. A device's row ('all')\n"
    "    unites the intervals of all its streams.\n"
    "\n"
    "OPTIONS\n"
    "    -n, --limit N  print the first N kernel rows only (0: all, the default)\n"
    "    -f, --format F table (default); csv (the kernel rows, a blank line, the stream rows)\n"
    "                   or json; times in microseconds\n"
    "    --name-width N the name column's widest (default 55, as torch's\n"
    "                   max_name_column_width): a longer name is cut to N - 3 characters\n"
    "                   and \"...\"; csv and json keep whole names\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (the trace cannot be read) or bad usage.\n";

typedef struct krow {
    uint32_t name;
    uint64_t calls;
    int64_t total, min, max;
} krow;

typedef struct srow {
    int64_t pid;
    uint8_t pid_kind; /* md_id_kind */
    uint32_t thread;  /* MD_NONE for a device's 'all' row */
    uint32_t first;   /* the device's first stream's thread: its name */
    int64_t busy, span;
} srow;

static const md_model *g_m;

static int by_total(const void *a, const void *b) {
    const krow *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return strcmp(md_str(g_m, x->name), md_str(g_m, y->name));
}

static int by_start(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static const srow *g_streams;

/* Stream rows by device (kind, then id), then row order. */
static int by_device(const void *a, const void *b) {
    const srow *x = &g_streams[*(const uint32_t *)a], *y = &g_streams[*(const uint32_t *)b];
    if (x->pid_kind != y->pid_kind) return x->pid_kind < y->pid_kind ? -1 : 1;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Device rows in the order their first streams were seen (thread order, as the stream rows). */
static int by_first(const void *a, const void *b) {
    const srow *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Union of n [start, end) pairs sorted by start: the busy time; *span gets last end - first
 * start. */
static int64_t union_len(const int64_t *iv, size_t n, int64_t *span) {
    int64_t busy = 0, cs = 0, ce = 0, lo = 0, hi = 0;
    for (size_t k = 0; k < n; k++) {
        int64_t s = iv[2 * k], e = iv[2 * k + 1];
        if (k == 0 || s < lo) lo = s;
        if (k == 0 || e > hi) hi = e;
        if (k == 0 || s > ce) {
            busy += ce - cs;
            cs = s;
            ce = e;
        } else if (e > ce) {
            ce = e;
        }
    }
    if (n) busy += ce - cs;
    *span = n ? hi - lo : 0;
    return busy;
}

static void stream_name(const md_model *m, const srow *r, char *buf, size_t n) {
    if (r->thread == MD_NONE)
        snprintf(buf, n, "all");
    else if (m->threads[r->thread].tid_str)
        snprintf(buf, n, "%s", md_str(m, m->threads[r->thread].tid_str));
    else
        snprintf(buf, n, "%" PRId64, m->threads[r->thread].tid);
}

static void device_name(const md_model *m, const srow *r, char *buf, size_t n) {
    const md_thread *t = &m->threads[r->first];
    if (t->pid_kind == MD_ID_STR)
        snprintf(buf, n, "%s", md_str(m, t->pid_str));
    else
        snprintf(buf, n, "%" PRId64, r->pid);
}

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("kernels", msg, arg);
}

/* Appends the [start, end) of each timed device-work event of thread th to iv (pairs, after the
 * first n). @return the pairs in iv now. */
static size_t device_intervals(const md_model *m, const md_thread *th, int64_t *iv, size_t n) {
    for (size_t k = 0; k < th->count; k++) {
        const md_event *e = &m->events[th->order[k]];
        if (!md_is_device_work(e->kind) || !e->has_time) continue;
        iv[2 * n] = e->ts;
        iv[2 * n + 1] = e->ts + e->dur;
        n++;
    }
    return n;
}

static int run(const md_model *m, size_t limit, int format, size_t name_width) {
    /* Rows per kernel name, indexed by the name's string id. */
    size_t nstr = m->strings.count;
    uint32_t *row_of = malloc((nstr ? nstr : 1) * sizeof *row_of);
    krow *rows = malloc((nstr ? nstr : 1) * sizeof *rows);
    srow *streams = malloc((2 * m->thread_count + 1) * sizeof *streams);
    int64_t *iv = NULL;
    size_t nrows = 0, nstreams = 0;
    int64_t all = 0;
    int err = row_of && rows && streams ? 0 : STROBE_ENOMEM;
    for (size_t k = 0; !err && k < nstr; k++)
        row_of[k] = MD_NONE;
    for (size_t i = 0; !err && i < m->count; i++) {
        const md_event *e = &m->events[i];
        if (e->kind != MD_KERNEL || !e->has_time) continue;
        if (row_of[e->name] == MD_NONE) {
            krow *r = &rows[nrows];
            memset(r, 0, sizeof *r);
            r->name = e->name;
            r->min = e->dur;
            r->max = e->dur;
            row_of[e->name] = (uint32_t)nrows++;
        }
        krow *r = &rows[row_of[e->name]];
        r->calls++;
        r->total = md_add_sat(r->total, e->dur);
        if (e->dur < r->min) r->min = e->dur;
        if (e->dur > r->max) r->max = e->dur;
        all = md_add_sat(all, e->dur);
    }
    /* Busy time per stream: its device work, already sorted by start in the thread's order. */
    iv = malloc(2 * (m->count ? m->count : 1) * sizeof *iv);
    if (!err && iv == NULL) err = STROBE_ENOMEM;
    for (size_t t = 0; !err && t < m->thread_count; t++) {
        const md_thread *th = &m->threads[t];
        size_t n = device_intervals(m, th, iv, 0);
        if (n == 0) continue;
        srow *s = &streams[nstreams++];
        s->pid = th->pid;
        s->pid_kind = th->pid_kind;
        s->thread = (uint32_t)t;
        s->first = (uint32_t)t;
        s->busy = union_len(iv, n, &s->span);
    }
    /* Per device: the union across its streams, after all streams' rows, in the order devices
     * were first seen. The stream rows are grouped by device through a sort, so that many
     * devices cost no more than many streams. */
    size_t nstream_rows = nstreams;
    uint32_t *ord = err ? NULL : malloc((nstream_rows ? nstream_rows : 1) * sizeof *ord);
    if (!err && ord == NULL) err = STROBE_ENOMEM;
    for (size_t k = 0; !err && k < nstream_rows; k++)
        ord[k] = (uint32_t)k;
    if (!err) {
        g_streams = streams;
        qsort(ord, nstream_rows, sizeof *ord, by_device);
    }
    for (size_t a = 0, b; !err && a < nstream_rows; a = b) {
        const srow *first = &streams[ord[a]];
        size_t n = 0;
        for (b = a; b < nstream_rows && streams[ord[b]].pid == first->pid &&
                    streams[ord[b]].pid_kind == first->pid_kind;
             b++) {
            n = device_intervals(m, &m->threads[streams[ord[b]].thread], iv, n);
        }
        qsort(iv, n, 2 * sizeof *iv, by_start);
        srow *s = &streams[nstreams++];
        s->pid = first->pid;
        s->pid_kind = first->pid_kind;
        s->thread = MD_NONE;
        s->first = first->thread; /* the group's first row: the sort keeps row order within */
        s->busy = union_len(iv, n, &s->span);
    }
    free(ord);
    if (!err) qsort(streams + nstream_rows, nstreams - nstream_rows, sizeof *streams, by_first);
    if (err) goto out;
    g_m = m;
    qsort(rows, nrows, sizeof *rows, by_total);
    size_t shown = limit == 0 || limit > nrows ? nrows : limit;
    char b[6][64];
    if (format == CL_TABLE) {
        size_t longest = 4;
        for (size_t k = 0; k < shown; k++) {
            size_t len = strobe__utf8_len(cli_esc(md_str(m, rows[k].name)));
            if (len > longest) longest = len;
        }
        size_t w[7] = {longest + 4 < name_width ? longest + 4 : name_width};
        for (int c = 1; c < 7; c++)
            w[c] = STROBE__TABLE_COL_WIDTH;
        static const char *const hk[] = {"Name", "# of Calls", "Total",     "Avg",
                                         "Min",  "Max",        "% GPU time"};
        strobe__table_separator(stdout, w, 7);
        for (int c = 0; c < 7; c++)
            strobe__table_cell(stdout, hk[c], w[c], 0, 0);
        putchar('\n');
        strobe__table_separator(stdout, w, 7);
        for (size_t k = 0; k < shown; k++) {
            const krow *r = &rows[k];
            snprintf(b[0], sizeof b[0], "%" PRIu64, r->calls);
            strobe__fmt_time_ns(b[1], sizeof b[1], r->total);
            strobe__fmt_time_us(b[2], sizeof b[2], (double)r->total / 1000.0 / (double)r->calls);
            strobe__fmt_time_ns(b[3], sizeof b[3], r->min);
            strobe__fmt_time_ns(b[4], sizeof b[4], r->max);
            strobe__fmt_share(b[5], sizeof b[5], r->total, all);
            strobe__table_cell(stdout, cli_esc(md_str(m, r->name)), w[0], 0, name_width - 3);
            for (int c = 1; c < 7; c++)
                strobe__table_cell(stdout, b[c - 1], w[c], 0, 0);
            putchar('\n');
        }
        strobe__table_separator(stdout, w, 7);
        strobe__fmt_time_ns(b[0], sizeof b[0], all);
        printf("Kernel time total: %s\n\n", b[0]);

        size_t sw[6] = {12, 16, 12, 12, 12, 12};
        static const char *const hs[] = {"Device", "Stream", "Busy", "Idle", "Span", "Busy %"};
        strobe__table_separator(stdout, sw, 6);
        for (int c = 0; c < 6; c++)
            strobe__table_cell(stdout, hs[c], sw[c], 0, 0);
        putchar('\n');
        strobe__table_separator(stdout, sw, 6);
        for (size_t k = 0; k < nstreams; k++) {
            const srow *s = &streams[k];
            device_name(m, s, b[0], sizeof b[0]);
            stream_name(m, s, b[1], sizeof b[1]);
            strobe__fmt_time_ns(b[2], sizeof b[2], s->busy);
            strobe__fmt_time_ns(b[3], sizeof b[3], s->span - s->busy);
            strobe__fmt_time_ns(b[4], sizeof b[4], s->span);
            strobe__fmt_share(b[5], sizeof b[5], s->busy, s->span);
            /* Device and stream names can be strings from the trace: escaped and cut. */
            strobe__table_cell(stdout, cli_esc(b[0]), sw[0], 0, sw[0] - 3);
            strobe__table_cell(stdout, cli_esc(b[1]), sw[1], 0, sw[1] - 3);
            for (int c = 2; c < 6; c++)
                strobe__table_cell(stdout, b[c], sw[c], 0, 0);
            putchar('\n');
        }
        strobe__table_separator(stdout, sw, 6);
    } else {
        int json = format == CL_JSON;
        printf(json ? "{\"kernel_time_total_us\": "
                    : "Name,# of Calls,Total,Avg,Min,Max,%% GPU time\n");
        if (json) {
            cl_put_us(stdout, all);
            printf(",\n \"kernels\": [");
        }
        for (size_t k = 0; k < shown; k++) {
            const krow *r = &rows[k];
            double pct = all ? (double)r->total * 100.0 / (double)all : 0.0;
            if (json) {
                printf("%s\n  {\"Name\": ", k ? "," : "");
                cl_json_str(stdout, md_str(m, r->name));
                printf(", \"# of Calls\": %" PRIu64 ", \"Total\": ", r->calls);
            } else {
                cl_csv_str(stdout, md_str(m, r->name));
                printf(",%" PRIu64 ",", r->calls);
            }
            cl_put_us(stdout, r->total);
            printf(json ? ", \"Avg\": %.3f, \"Min\": " : ",%.3f,",
                   (double)r->total / 1000.0 / (double)r->calls);
            cl_put_us(stdout, r->min);
            printf(json ? ", \"Max\": " : ",");
            cl_put_us(stdout, r->max);
            printf(json ? ", \"%% GPU time\": %.4f}" : ",%.4f\n", pct);
        }
        printf(json ? "\n ],\n \"streams\": [" : "\nDevice,Stream,Busy,Idle,Span\n");
        for (size_t k = 0; k < nstreams; k++) {
            const srow *s = &streams[k];
            device_name(m, s, b[0], sizeof b[0]);
            stream_name(m, s, b[1], sizeof b[1]);
            if (json) {
                printf("%s\n  {\"Device\": ", k ? "," : "");
                cl_json_str(stdout, b[0]);
                printf(", \"Stream\": ");
                cl_json_str(stdout, b[1]);
                printf(", \"Busy\": ");
            } else {
                cl_csv_str(stdout, b[0]);
                putchar(',');
                cl_csv_str(stdout, b[1]);
                putchar(',');
            }
            cl_put_us(stdout, s->busy);
            printf(json ? ", \"Idle\": " : ",");
            cl_put_us(stdout, s->span - s->busy);
            printf(json ? ", \"Span\": " : ",");
            cl_put_us(stdout, s->span);
            printf(json ? "}" : "\n");
        }
        if (json) printf("\n ]}\n");
    }
out:
    free(row_of);
    free(rows);
    free(streams);
    free(iv);
    return err;
}

const struct option cmd_kernels_options[] = {
    {"limit", required_argument, NULL, 'n'},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_NAME_WIDTH,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_kernels(int argc, char **argv) {
    const char *path = NULL;
    size_t limit = 0, name_width = CLI_NAME_WIDTH_DEFAULT;
    int format = CL_TABLE, quiet = 0, first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":n:f:qhV", cmd_kernels_options, &first)) != -1;) {
        unsigned long long n;
        switch (c) {
        case 'h':
            return cli_help(cmd_kernels_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'n':
            if (cli_parse_count("kernels", "--limit", optarg, SIZE_MAX, &n) != 0)
                return CLI_BAD_INPUT;
            limit = (size_t)n;
            break;
        case 'f':
            format = cl_parse_format(optarg);
            if (format < 0) return usage_error("unknown --format", optarg);
            break;
        case CLI_OPT_NAME_WIDTH:
            if (cli_parse_name_width("kernels", optarg, &name_width) != 0) return CLI_BAD_INPUT;
            break;
        default:
            return cli_option_error("kernels", c, argv, cmd_kernels_options);
        }
    }
    if (cli_trace_operand("kernels", argc, argv, first, &path) != 0) return CLI_BAD_INPUT;
    md_model *m = malloc(sizeof *m);
    if (m == NULL) return usage_error("out of memory", NULL);
    int rc = cli_load(m, "kernels", path, quiet);
    if (rc == CLI_OK) {
        int work = run(m, limit, format, name_width) != 0 ? STROBE_ENOMEM : 0;
        rc = cli_finish("kernels", path, work, CLI_OK);
        md_free(m);
    }
    free(m);
    return rc;
}
