/* cmd_kernels.c: `strobe kernels`, a per-kernel table and the busy and idle time of each device
 * stream and device; with --by-type, HTA's kernel breakdown instead; with --tb-view and
 * --tb-by-op, the TensorBoard plugin's kernel view.
 *
 * Contents: usage, the per-name rows, interval unions (busy time), output (table, CSV, JSON),
 * HTA's kernel breakdown (--by-type), the plugin's kernel view (--tb-view, --tb-by-op). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "hta.h"
#include "kseq.h"
#include "model/model.h"
#include "rows.h"
#include "strobe/error.h"
#include "tb.h"
#include "util/table.h"

const char cmd_kernels_usage[] =
    "NAME\n"
    "    strobe kernels - per-kernel table; busy and idle time per device and stream\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe kernels [OPTIONS] TRACE\n"
    "    strobe kernels TRACE [-n N] [-f table|csv|json] [--name-width N] [-q]\n"
    "    strobe kernels --by-type [--memory] [-j N] [-f table|csv|json] [-q] TRACE...\n"
    "    strobe kernels --sequences --operator NAME [--min-pattern-len N] [--top-k N]\n"
    "                   [--rank R] [-o OUT] [-j N] [-f table|csv|json] [-q] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads TRACE (\"-\" is standard input) and prints one row per kernel name (cat kernel, or "
    "Kernel in the 2021 schema): calls, total,\n"
    "    average, shortest and longest duration, and the share of all kernels' time, sorted by\n"
    "    total time. Then, per stream (a device event's tid) and per device (its pid): busy\n"
    "    time, the union of its kernels', copies' and memsets' intervals (overlaps count once);\n"
    "    span, from its first start to its last end; idle = span - busy. A device's row ('all')\n"
    "    unites the intervals of all its streams. Malformed events are skipped; standard error\n"
    "    says how many, and `strobe check TRACE` lists them.\n"
    "\n"
    "    --by-type gives Holistic Trace Analysis's get_gpu_kernel_breakdown() instead, with its\n"
    "    definitions and numbers; TRACE is then one trace or more, or a folder of rank traces,\n"
    "    read as strobe breakdown reads them (ranks, HTA's times in microseconds, its\n"
    "    profiler-step restriction, kernels as the events with a stream). First the kernel\n"
    "    types, by name as HTA types them (COMMUNICATION: starts with nccl, hip or hccl, or\n"
    "    holds ncclKernel; else MEMORY: starts with Memcpy, hipMemcpy, Memset, hipMemset or\n"
    "    dma, MTIA's copies; else COMPUTATION): per rank, the merged intervals of each type\n"
    "    (COMPUTATION, COMMUNICATION, and with --memory MEMORY), and the time each\n"
    "    combination of them runs (\"COMPUTATION overlapping COMMUNICATION\"), summed over\n"
    "    the ranks (kernel_type, sum, percentage with\n"
    "    1 decimal; a combination that never runs is no row). Then per rank and type, the\n"
    "    kernels by name (name, sum (ns), max (ns), min (ns), stddev, mean (ns), kernel_type,\n"
    "    rank; HTA's column names, whose times are the trace's microseconds: the table's\n"
    "    headers say (us)): beyond the 10 longest, and beyond 80% of the cumulated time,\n"
    "    kernels are one row \"others\", whose statistics are those of the kernels' sums, and\n"
    "    then, as HTA does, a kernel kept by name shows its sum as max, min and mean. JSON:\n"
    "    {\"kernel_types\": [...], \"kernels\": [...]};\n"
    "    CSV: the two tables, a blank line between.\n"
    "\n"
    "    --sequences gives HTA's get_frequent_cuda_kernel_sequences() instead, over one rank\n"
    "    (--rank, default 0) of the traces, read as for --by-type: the shallowest CPU operators\n"
    "    whose name holds --operator's text (a substring) and that launched --min-pattern-len\n"
    "    kernels or more (default 3) are the roots; a root's pattern is its name and the names\n"
    "    of the kernels under it by start, joined by \"|\". One row per pattern: pattern, count,\n"
    "    \"GPU kernel duration (us)\" and \"CPU op duration (us)\" (summed over its roots), by\n"
    "    count (largest first) then pattern. -o OUT writes HTA's overlaid trace: the trace with\n"
    "    args.Patterns on the events of the --top-k most frequent patterns (default 5), empty\n"
    "    args and names compressed to HTA's symbol ids on the other complete events, and the\n"
    "    symbol table in the args of the \"PyTorch Profiler\" event (.gz: gzip'd).\n"
    "\n"
    "OPTIONS\n"
    "    -n, --limit N  print the first N kernel rows only (0: all, the default)\n"
    "    -f, --format F table (default); csv (the kernel rows, a blank line, the stream rows)\n"
    "                   or json; times in microseconds\n"
    "    --name-width N the name column's widest (default 55, as torch's\n"
    "                   max_name_column_width): a longer name is cut to N - 3 characters\n"
    "                   and \"...\"; csv and json keep whole names\n"
    "    --by-type      HTA's kernel type and per-kernel breakdown (see above)\n"
    "    --memory       with --by-type: MEMORY kernels too (HTA's include_memory_kernels)\n"
    "    --sequences    HTA's frequent kernel sequences (see above), with:\n"
    "    --operator NAME          the operators' name, or a part of it\n"
    "    --min-pattern-len N      the fewest kernels of a pattern (default 3)\n"
    "    --top-k N      the patterns written to the overlaid trace (default 5)\n"
    "    --rank R       the rank analysed (default 0)\n"
    "    -o, --output OUT         write HTA's overlaid trace to OUT\n"
    // clang-format off
    CLI_JOBS_USAGE
    // clang-format on
    "                   (with --by-type or --sequences)\n"
    "    --tb-view      the TensorBoard profiler plugin's kernel view instead: per kernel name,\n"
    "                   Tensor Cores Used (the name shows Tensor Cores: the plugin's list, h884,\n"
    "                   s1688, xmma_gemm ...), Calls, Total, Mean, Max and Min Duration (us),\n"
    "                   Mean Blocks Per SM and Mean Est. Achieved Occupancy (%): the kernels'\n"
    "                   \"blocks per SM\" and \"est. achieved occupancy %\" args weighted by\n"
    "                   their durations (a kernel without one counts as 0, as in the plugin);\n"
    "                   sorted by total duration\n"
    "    --tb-by-op     the plugin's other kernel table: per kernel name, launching operator\n"
    "                   (the operator around its runtime call, N/A when none), grid, block,\n"
    "                   registers per thread and shared memory: Kernel Uses TC, Op is TC\n"
    "                   Eligible (as summary --tensor-cores), the same durations and means\n"
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
        const md_event e_ev = md_at(m, th->order[k]), *e = &e_ev;
        if (!md_is_device_work(e->kind) || !e->has_time) continue;
        iv[2 * n] = e->ts;
        iv[2 * n + 1] = e->ts + e->dur;
        n++;
    }
    return n;
}

static int run(FILE *out, const md_model *m, size_t limit, int format, size_t name_width) {
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
        const md_event e_ev = md_at(m, i), *e = &e_ev;
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
    if (format == CLI_TABLE) {
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
        strobe__table_separator(out, w, 7);
        for (int c = 0; c < 7; c++)
            strobe__table_cell(out, hk[c], w[c], 0, 0);
        fputc('\n', out);
        strobe__table_separator(out, w, 7);
        for (size_t k = 0; k < shown; k++) {
            const krow *r = &rows[k];
            snprintf(b[0], sizeof b[0], "%" PRIu64, r->calls);
            strobe__fmt_time_ns(b[1], sizeof b[1], r->total);
            strobe__fmt_time_us(b[2], sizeof b[2], (double)r->total / 1000.0 / (double)r->calls);
            strobe__fmt_time_ns(b[3], sizeof b[3], r->min);
            strobe__fmt_time_ns(b[4], sizeof b[4], r->max);
            strobe__fmt_share(b[5], sizeof b[5], r->total, all);
            strobe__table_cell(out, cli_esc(md_str(m, r->name)), w[0], 0, name_width - 3);
            for (int c = 1; c < 7; c++)
                strobe__table_cell(out, b[c - 1], w[c], 0, 0);
            fputc('\n', out);
        }
        strobe__table_separator(out, w, 7);
        strobe__fmt_time_ns(b[0], sizeof b[0], all);
        fprintf(out, "Kernel time total: %s\n\n", b[0]);

        size_t sw[6] = {12, 16, 12, 12, 12, 12};
        static const char *const hs[] = {"Device", "Stream", "Busy", "Idle", "Span", "Busy %"};
        strobe__table_separator(out, sw, 6);
        for (int c = 0; c < 6; c++)
            strobe__table_cell(out, hs[c], sw[c], 0, 0);
        fputc('\n', out);
        strobe__table_separator(out, sw, 6);
        for (size_t k = 0; k < nstreams; k++) {
            const srow *s = &streams[k];
            device_name(m, s, b[0], sizeof b[0]);
            stream_name(m, s, b[1], sizeof b[1]);
            strobe__fmt_time_ns(b[2], sizeof b[2], s->busy);
            strobe__fmt_time_ns(b[3], sizeof b[3], s->span - s->busy);
            strobe__fmt_time_ns(b[4], sizeof b[4], s->span);
            strobe__fmt_share(b[5], sizeof b[5], s->busy, s->span);
            /* Device and stream names can be strings from the trace: escaped and cut. */
            strobe__table_cell(out, cli_esc(b[0]), sw[0], 0, sw[0] - 3);
            strobe__table_cell(out, cli_esc(b[1]), sw[1], 0, sw[1] - 3);
            for (int c = 2; c < 6; c++)
                strobe__table_cell(out, b[c], sw[c], 0, 0);
            fputc('\n', out);
        }
        strobe__table_separator(out, sw, 6);
    } else {
        int json = format == CLI_JSON;
        fprintf(out, json ? "{\"kernel_time_total_us\": "
                          : "Name,# of Calls,Total,Avg,Min,Max,%% GPU time\n");
        if (json) {
            cli_put_us(out, all);
            fprintf(out, ",\n \"kernels\": [");
        }
        for (size_t k = 0; k < shown; k++) {
            const krow *r = &rows[k];
            double pct = all ? (double)r->total * 100.0 / (double)all : 0.0;
            if (json) {
                fprintf(out, "%s\n  {\"Name\": ", k ? "," : "");
                cli_json_str(out, md_str(m, r->name));
                fprintf(out, ", \"# of Calls\": %" PRIu64 ", \"Total\": ", r->calls);
            } else {
                cli_csv_str(out, md_str(m, r->name));
                fprintf(out, ",%" PRIu64 ",", r->calls);
            }
            cli_put_us(out, r->total);
            fprintf(out, json ? ", \"Avg\": %.3f, \"Min\": " : ",%.3f,",
                    (double)r->total / 1000.0 / (double)r->calls);
            cli_put_us(out, r->min);
            fprintf(out, json ? ", \"Max\": " : ",");
            cli_put_us(out, r->max);
            fprintf(out, json ? ", \"%% GPU time\": %.4f}" : ",%.4f\n", pct);
        }
        fprintf(out, json ? "\n ],\n \"streams\": [" : "\nDevice,Stream,Busy,Idle,Span\n");
        for (size_t k = 0; k < nstreams; k++) {
            const srow *s = &streams[k];
            device_name(m, s, b[0], sizeof b[0]);
            stream_name(m, s, b[1], sizeof b[1]);
            if (json) {
                fprintf(out, "%s\n  {\"Device\": ", k ? "," : "");
                cli_json_str(out, b[0]);
                fprintf(out, ", \"Stream\": ");
                cli_json_str(out, b[1]);
                fprintf(out, ", \"Busy\": ");
            } else {
                cli_csv_str(out, b[0]);
                fputc(',', out);
                cli_csv_str(out, b[1]);
                fputc(',', out);
            }
            cli_put_us(out, s->busy);
            fprintf(out, json ? ", \"Idle\": " : ",");
            cli_put_us(out, s->span - s->busy);
            fprintf(out, json ? ", \"Span\": " : ",");
            cli_put_us(out, s->span);
            fprintf(out, json ? "}" : "\n");
        }
        if (json) fprintf(out, "\n ]}\n");
    }
out:
    free(row_of);
    free(rows);
    free(streams);
    free(iv);
    return err;
}

/* ---- HTA's kernel breakdown (--by-type) ---------------------------------------------------- */

/* BreakdownAnalysis.get_gpu_kernel_breakdown (hta/analyzers/breakdown_analysis.py), defaults
 * duration_ratio 0.8 and num_kernels 10. Kernel types: COMPUTATION, COMMUNICATION, MEMORY (with
 * --memory), bit k for the k-th; per rank, each type's merged intervals, then the time each
 * combination of bits runs, summed over ranks by name, sorted by sum (descending; HTA's sort
 * keeps the names' order on ties), percentage = round(100 * sum / all, 1). Per rank and type,
 * the kernels grouped by name: sum, max, min, mean, std (n - 1; 0 for one call) of durations,
 * sorted by sum; with more than 10 names, those whose cumulated sum passes its 0.8 quantile
 * (linear interpolation), and all from the 11th on, become "others", and the rows are grouped
 * again by name over their sums. All rows sorted by type name, name and rank. */
#define BT_KERNELS 10
#define BT_RATIO 0.8

static const int bt_types[3] = {CLI_HTA_COMPUTATION, CLI_HTA_COMMUNICATION, CLI_HTA_MEMORY};

static int bt_of_type(const cli_hta_rank *r, const cli_hta_row *w, void *arg) {
    return cli_hta_kernel_type(md_str(&r->m, md_name_of(&r->m, w->ev))) == *(const int *)arg;
}

typedef struct bt_edge {
    int64_t t;
    int delta;
} bt_edge;

static int bt_by_time(const void *a, const void *b) {
    const bt_edge *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

typedef struct bt_label {
    unsigned bits;
    int64_t sum;
} bt_label;

static void bt_label_name(unsigned bits, char *buf, size_t n) {
    buf[0] = '\0';
    for (int k = 0; k < 3; k++) {
        if (!(bits & (1u << k))) continue;
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s", len ? " overlapping " : "",
                 cli_hta_type_name(bt_types[k]));
    }
}

static int bt_label_cmp(const void *a, const void *b) {
    const bt_label *x = a, *y = b;
    if (x->sum != y->sum) return x->sum > y->sum ? -1 : 1;
    char p[80], q[80];
    bt_label_name(x->bits, p, sizeof p);
    bt_label_name(y->bits, q, sizeof q);
    return strcmp(p, q);
}

typedef struct bt_out {
    cli_hta_named s;
    int type;
    int64_t rank;
} bt_out;

static int bt_out_cmp(const void *a, const void *b) {
    const bt_out *x = a, *y = b;
    int c = strcmp(cli_hta_type_name(x->type), cli_hta_type_name(y->type));
    if (c) return c;
    c = strcmp(x->s.name, y->s.name);
    if (c) return c;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Per-kernel rows of one rank and type, appended to *out. */
static int bt_kernels(const cli_hta_rank *r, int type, bt_out **out, size_t *nout, size_t *cap) {
    size_t n = 0;
    for (size_t k = 0; k < r->count; k++)
        if (bt_of_type(r, &r->rows[k], (void *)&type)) n += r->rows[k].mult;
    cli_hta_dur *d = malloc((n ? n : 1) * sizeof *d);
    int64_t *v = malloc((n ? n : 1) * sizeof *v);
    cli_hta_named *names = malloc((n ? n : 1) * sizeof *names);
    int rc = d && v && names ? 0 : STROBE_ENOMEM;
    size_t nn = 0;
    if (!rc) {
        size_t j = 0;
        for (size_t k = 0; k < r->count; k++) {
            const cli_hta_row *w = &r->rows[k];
            if (!bt_of_type(r, w, (void *)&type)) continue;
            for (uint32_t c = 0; c < w->mult; c++) {
                d[j].name = md_str(&r->m, md_name_of(&r->m, w->ev));
                d[j++].dur = w->end - w->ts;
            }
        }
        nn = cli_hta_name_table(d, n, v, names);
    }
    /* The first names whose cumulated sum is within the quantile keep their row (as one
     * value: sum = max = min = mean, std 0); the others are one row over their sums. */
    long rows = rc ? 0 : cli_hta_name_others(names, nn, v, BT_KERNELS, BT_RATIO, NULL, NULL);
    if (rows < 0) rc = (int)rows;
    for (size_t k = 0; !rc && k < (size_t)rows; k++) {
        if (*nout == *cap) {
            size_t nc = *cap ? *cap * 2 : 32;
            bt_out *o = realloc(*out, nc * sizeof *o);
            if (o == NULL) {
                rc = STROBE_ENOMEM;
                break;
            }
            *out = o;
            *cap = nc;
        }
        bt_out *o = &(*out)[(*nout)++];
        o->s = names[k];
        o->type = type;
        o->rank = r->rank;
    }
    free(d);
    free(v);
    free(names);
    return rc;
}

static void bt_num(char *buf, size_t n, double x) {
    snprintf(buf, n, "%.15g", x);
}

static int by_type_run(FILE *fp, const cli_hta_set *s, int format, int memory) {
    int ntypes = memory ? 3 : 2;
    int64_t sums[8] = {0};
    bt_out *out = NULL;
    size_t nout = 0, cap = 0;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const cli_hta_rank *r = &s->ranks[k];
        size_t room = 2 * (r->count ? r->count : 1);
        int64_t *iv = malloc(room * sizeof *iv);
        bt_edge *ed = malloc(room * sizeof *ed);
        size_t ne = 0;
        if (iv == NULL || ed == NULL) rc = STROBE_ENOMEM;
        for (int t = 0; rc == 0 && t < ntypes; t++) {
            size_t n = cli_hta_merge(r, bt_of_type, (void *)&bt_types[t], iv);
            for (size_t i = 0; i < n; i++) {
                ed[ne++] = (bt_edge){iv[2 * i], 1 << t};
                ed[ne++] = (bt_edge){iv[2 * i + 1], -(1 << t)};
            }
        }
        if (rc == 0) {
            qsort(ed, ne, sizeof *ed, bt_by_time);
            int running = 0;
            for (size_t i = 0; i + 1 < ne; i++) {
                running += ed[i].delta;
                if (running > 0 && running < 8) sums[running] += ed[i + 1].t - ed[i].t;
            }
        }
        free(iv);
        free(ed);
        for (int t = 0; rc == 0 && t < ntypes; t++)
            rc = bt_kernels(r, bt_types[t], &out, &nout, &cap);
    }
    bt_label labels[8];
    size_t nl = 0;
    int64_t all = 0;
    for (unsigned b = 1; b < 8; b++) {
        if (sums[b] == 0) continue;
        labels[nl++] = (bt_label){b, sums[b]};
        all += sums[b];
    }
    qsort(labels, nl, sizeof *labels, bt_label_cmp);
    if (out) qsort(out, nout, sizeof *out, bt_out_cmp);
    static const char *const tcols[] = {"kernel_type", "sum", "percentage"};
    static const uint8_t ttext[] = {1, 0, 0};
    static const char *const kcols[] = {"name",   "sum (ns)",  "max (ns)",    "min (ns)",
                                        "stddev", "mean (ns)", "kernel_type", "rank"};
    static const uint8_t ktext[] = {1, 0, 0, 0, 0, 0, 1, 0};
    cli_hta_table tt = {tcols, ttext, 3, NULL, 0, 0}, kt = {kcols, ktext, 8, NULL, 0, 0};
    for (size_t k = 0; rc == 0 && k < nl; k++) {
        char b[3][80];
        bt_label_name(labels[k].bits, b[0], sizeof b[0]);
        snprintf(b[1], sizeof b[1], "%" PRId64, labels[k].sum);
        cli_hta_pct(b[2], sizeof b[2], (double)labels[k].sum / (double)all * 100.0, 1);
        const char *cells[3] = {b[0], b[1], b[2]};
        rc = cli_hta_table_add(&tt, cells);
    }
    for (size_t k = 0; rc == 0 && k < nout; k++) {
        const bt_out *o = &out[k];
        char b[8][48];
        snprintf(b[1], sizeof b[1], "%" PRId64, o->s.sum);
        snprintf(b[2], sizeof b[2], "%" PRId64, o->s.max);
        snprintf(b[3], sizeof b[3], "%" PRId64, o->s.min);
        bt_num(b[4], sizeof b[4], o->s.std);
        bt_num(b[5], sizeof b[5], o->s.mean);
        snprintf(b[7], sizeof b[7], "%" PRId64, o->rank);
        const char *cells[8] = {o->s.name, b[1], b[2], b[3], b[4], b[5], cli_hta_type_name(o->type),
                                b[7]};
        rc = cli_hta_table_add(&kt, cells);
    }
    if (rc == 0) {
        if (format == CLI_JSON) fputs("{\"kernel_types\": ", fp);
        cli_hta_table_print(&tt, format, fp);
        fputs(format == CLI_JSON ? ", \"kernels\": " : "\n", fp);
        cli_hta_table_print(&kt, format, fp);
        if (format == CLI_JSON) fputs("}\n", fp);
    }
    cli_hta_table_free(&tt);
    cli_hta_table_free(&kt);
    free(out);
    return rc;
}

/* ---- the TensorBoard plugin's kernel view (--tb-view) ------------------------------------- */

/* kernel_parser.py (KernelParser.parse_events) and run_generator.py (_generate_kernel_table):
 * the kernels grouped by name; count, sum, mean, max, min of durations; blocks per SM and
 * occupancy averaged with the durations as weights, missing values as 0 (0 when the durations
 * add to 0); sorted by sum, largest first. */
typedef struct tbrow {
    uint32_t name;
    uint64_t calls;
    int64_t total, min, max;
    double bps, occ; /* sums of value * duration (ns) */
    int tc;
} tbrow;

static int tb_by_total(const void *a, const void *b) {
    const tbrow *x = a, *y = b;
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    return strcmp(md_str(g_m, x->name), md_str(g_m, y->name));
}

static int tb_run(FILE *out, const md_model *m, size_t limit, int format, size_t name_width) {
    size_t nstr = m->strings.count;
    uint32_t *row_of = malloc((nstr ? nstr : 1) * sizeof *row_of);
    tbrow *rows = malloc((nstr ? nstr : 1) * sizeof *rows);
    if (row_of == NULL || rows == NULL) {
        free(row_of);
        free(rows);
        return STROBE_ENOMEM;
    }
    size_t nrows = 0;
    for (size_t k = 0; k < nstr; k++)
        row_of[k] = MD_NONE;
    for (size_t i = 0; i < m->count; i++) {
        if ((m->ev_flags[i] & (MD_F_TIME | MD_F_BAD)) != MD_F_TIME) continue;
        md_class c = md_class_of(m, (uint32_t)i);
        if (c.kind != MD_KERNEL || c.ph != 'X') continue;
        uint32_t name = md_name_of(m, (uint32_t)i);
        int64_t d = md_dur(m, (uint32_t)i);
        if (row_of[name] == MD_NONE) {
            rows[nrows] = (tbrow){.name = name, .min = d, .max = d};
            rows[nrows].tc = cli_tb_tc_kernel(md_str(m, name));
            row_of[name] = (uint32_t)nrows++;
        }
        tbrow *r = &rows[row_of[name]];
        const md_kargs *a = cli_tb_kargs(m, (uint32_t)i);
        r->calls++;
        r->total = md_add_sat(r->total, d);
        if (d < r->min) r->min = d;
        if (d > r->max) r->max = d;
        r->bps += cli_tb_blocks_per_sm(a) * (double)d;
        r->occ += cli_tb_occupancy(a) * (double)d;
    }
    g_m = m;
    qsort(rows, nrows, sizeof *rows, tb_by_total);
    size_t shown = limit == 0 || limit > nrows ? nrows : limit;
    static const char *const hk[] = {"Name",
                                     "Tensor Cores Used",
                                     "Calls",
                                     "Total Duration (us)",
                                     "Mean Duration (us)",
                                     "Max Duration (us)",
                                     "Min Duration (us)",
                                     "Mean Blocks Per SM",
                                     "Mean Est. Achieved Occupancy (%)"};
    size_t w[9] = {0, 19, 10, 21, 20, 19, 19, 20, 34};
    if (format == CLI_TABLE) {
        size_t longest = 4;
        for (size_t k = 0; k < shown; k++) {
            size_t len = strobe__utf8_len(cli_esc(md_str(m, rows[k].name)));
            if (len > longest) longest = len;
        }
        w[0] = longest + 4 < name_width ? longest + 4 : name_width;
        strobe__table_separator(out, w, 9);
        for (int c = 0; c < 9; c++)
            strobe__table_cell(out, hk[c], w[c], 0, 0);
        fputc('\n', out);
        strobe__table_separator(out, w, 9);
    } else if (format == CLI_CSV) {
        for (int c = 0; c < 9; c++)
            fprintf(out, "%s%s", c ? "," : "", hk[c]);
        fputc('\n', out);
    } else {
        fputs("[", out);
    }
    for (size_t k = 0; k < shown; k++) {
        const tbrow *r = &rows[k];
        double bps = r->total > 0 ? r->bps / (double)r->total : 0;
        double occ = r->total > 0 ? r->occ / (double)r->total : 0;
        double mean = (double)r->total / 1000.0 / (double)r->calls;
        if (format == CLI_TABLE) {
            char b[8][64];
            snprintf(b[0], sizeof b[0], "%s", r->tc ? "Yes" : "No");
            snprintf(b[1], sizeof b[1], "%" PRIu64, r->calls);
            snprintf(b[2], sizeof b[2], "%.3f", (double)r->total / 1000.0);
            snprintf(b[3], sizeof b[3], "%.3f", mean);
            snprintf(b[4], sizeof b[4], "%.3f", (double)r->max / 1000.0);
            snprintf(b[5], sizeof b[5], "%.3f", (double)r->min / 1000.0);
            snprintf(b[6], sizeof b[6], "%.2f", bps);
            snprintf(b[7], sizeof b[7], "%.2f", occ);
            strobe__table_cell(out, cli_esc(md_str(m, r->name)), w[0], 0, name_width - 3);
            for (int c = 1; c < 9; c++)
                strobe__table_cell(out, b[c - 1], w[c], 0, 0);
            fputc('\n', out);
            continue;
        }
        int json = format == CLI_JSON;
        if (json) {
            fprintf(out, "%s\n {\"Name\": ", k ? "," : "");
            cli_json_str(out, md_str(m, r->name));
            fprintf(out, ", \"Tensor Cores Used\": \"%s\", \"Calls\": %" PRIu64,
                    r->tc ? "Yes" : "No", r->calls);
        } else {
            cli_csv_str(out, md_str(m, r->name));
            fprintf(out, ",%s,%" PRIu64, r->tc ? "Yes" : "No", r->calls);
        }
        fputs(json ? ", \"Total Duration (us)\": " : ",", out);
        cli_put_us(out, r->total);
        fprintf(out, json ? ", \"Mean Duration (us)\": %.3f, \"Max Duration (us)\": " : ",%.3f,",
                mean);
        cli_put_us(out, r->max);
        fputs(json ? ", \"Min Duration (us)\": " : ",", out);
        cli_put_us(out, r->min);
        fprintf(out,
                json ? ", \"Mean Blocks Per SM\": %.6f, \"Mean Est. Achieved Occupancy (%%)\": "
                       "%.6f}"
                     : ",%.6f,%.6f\n",
                bps, occ);
    }
    if (format == CLI_TABLE)
        strobe__table_separator(out, w, 9);
    else if (format == CLI_JSON)
        fputs(nrows && shown ? "\n]\n" : "]\n", out);
    free(row_of);
    free(rows);
    return 0;
}

/* run_generator.py _generate_kernel_op_table over op_agg.py aggregate_kernels: the kernels
 * grouped by name, launching operator, grid, block, registers per thread and shared memory (a
 * missing value as 0). Every kernel is counted; one whose launch has no operator shows N/A. */
typedef struct kop {
    uint32_t name, op, grid, block; /* op: the operator event, MD_NONE for N/A */
    int64_t regs, smem, dur;
    uint32_t ev;
} kop;

static int kop_key(const kop *x, const kop *y) {
    const char *a[4] = {md_str(g_m, x->name),
                        x->op == MD_NONE ? "N/A" : md_str(g_m, md_name_of(g_m, x->op)),
                        md_str(g_m, x->grid), md_str(g_m, x->block)};
    const char *b[4] = {md_str(g_m, y->name),
                        y->op == MD_NONE ? "N/A" : md_str(g_m, md_name_of(g_m, y->op)),
                        md_str(g_m, y->grid), md_str(g_m, y->block)};
    for (int k = 0; k < 4; k++) {
        int c = strcmp(a[k], b[k]);
        if (c) return c;
    }
    if (x->regs != y->regs) return x->regs < y->regs ? -1 : 1;
    if (x->smem != y->smem) return x->smem < y->smem ? -1 : 1;
    return 0;
}

static int kop_cmp(const void *a, const void *b) {
    int c = kop_key(a, b);
    if (c) return c;
    const kop *x = a, *y = b;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

typedef struct kopg {
    size_t first; /* its first kernel in the sorted array */
    uint64_t calls;
    int64_t total, min, max;
    double bps, occ;
    int eligible;
} kopg;

static int kopg_by_total(const void *a, const void *b) {
    const kopg *x = a, *y = b;
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    return (x->first > y->first) - (x->first < y->first);
}

/* A grid or block as the plugin prints the list ("[80, 1, 1]"), from the arg's JSON text. */
static void dims_text(const char *raw, char *buf, size_t n) {
    size_t k = 0;
    if (n == 0) return;
    if (raw[0] == '\0') raw = "0";
    for (const char *p = raw; *p && k + 3 < n; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') continue;
        buf[k++] = *p;
        if (*p == ',') buf[k++] = ' ';
    }
    buf[k] = '\0';
}

static int tb_op_run(FILE *out, const md_model *m, size_t limit, int format, size_t name_width) {
    cli_tb_ops t;
    int err = cli_tb_ops_get(m, 0, &t);
    if (err) return err;
    kop *k = malloc((m->kargs_count + m->count / 64 + 1) * sizeof *k);
    size_t n = 0, cap = m->kargs_count + m->count / 64 + 1;
    for (size_t i = 0; i < m->count && k && !err; i++) {
        if ((m->ev_flags[i] & (MD_F_TIME | MD_F_BAD)) != MD_F_TIME) continue;
        md_class c = md_class_of(m, (uint32_t)i);
        if (c.kind != MD_KERNEL || c.ph != 'X') continue;
        if (n == cap) {
            kop *g = realloc(k, 2 * cap * sizeof *k);
            if (g == NULL) {
                err = STROBE_ENOMEM;
                break;
            }
            k = g;
            cap *= 2;
        }
        const md_kargs *a = cli_tb_kargs(m, (uint32_t)i);
        k[n++] = (kop){.name = md_name_of(m, (uint32_t)i),
                       .op = t.owner[i],
                       .grid = a ? a->grid : 0,
                       .block = a ? a->block : 0,
                       .regs = a && a->regs > 0 ? a->regs : 0,
                       .smem = a && a->smem > 0 ? a->smem : 0,
                       .dur = md_dur(m, (uint32_t)i),
                       .ev = (uint32_t)i};
    }
    if (k == NULL) err = STROBE_ENOMEM;
    kopg *g = err ? NULL : malloc((n ? n : 1) * sizeof *g);
    if (!err && g == NULL) err = STROBE_ENOMEM;
    size_t ng = 0;
    if (!err) {
        g_m = m;
        qsort(k, n, sizeof *k, kop_cmp);
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || kop_key(&k[i - 1], &k[i]) != 0) {
                g[ng++] = (kopg){.first = i, .min = k[i].dur, .max = k[i].dur};
                g[ng - 1].eligible = k[i].op != MD_NONE && t.eligible[k[i].op];
            }
            kopg *r = &g[ng - 1];
            const md_kargs *a = cli_tb_kargs(m, k[i].ev);
            r->calls++;
            r->total = md_add_sat(r->total, k[i].dur);
            if (k[i].dur < r->min) r->min = k[i].dur;
            if (k[i].dur > r->max) r->max = k[i].dur;
            r->bps += cli_tb_blocks_per_sm(a) * (double)k[i].dur;
            r->occ += cli_tb_occupancy(a) * (double)k[i].dur;
        }
        qsort(g, ng, sizeof *g, kopg_by_total);
    }
    static const char *const hk[] = {"Name",
                                     "Operator",
                                     "Grid",
                                     "Block",
                                     "Register Per Thread",
                                     "Shared Memory",
                                     "Kernel Uses TC",
                                     "Op is TC Eligible",
                                     "Calls",
                                     "Total Duration (us)",
                                     "Mean Duration (us)",
                                     "Max Duration (us)",
                                     "Min Duration (us)",
                                     "Mean Blocks Per SM",
                                     "Mean Est. Achieved Occupancy (%)"};
    enum { NC = 15 };
    size_t shown = limit == 0 || limit > ng ? ng : limit;
    size_t w[NC] = {0, 0, 14, 14, 21, 15, 16, 19, 10, 21, 20, 19, 19, 20, 34};
    if (!err && format == CLI_TABLE) {
        size_t longest = 4, lop = 8;
        for (size_t r = 0; r < shown; r++) {
            const kop *x = &k[g[r].first];
            size_t len = strobe__utf8_len(cli_esc(md_str(m, x->name)));
            if (len > longest) longest = len;
            len = x->op == MD_NONE ? 3 : strobe__utf8_len(cli_esc(md_str(m, md_name_of(m, x->op))));
            if (len > lop) lop = len;
        }
        w[0] = longest + 4 < name_width ? longest + 4 : name_width;
        w[1] = lop + 4 < name_width ? lop + 4 : name_width;
        strobe__table_separator(out, w, NC);
        for (int c = 0; c < NC; c++)
            strobe__table_cell(out, hk[c], w[c], 0, 0);
        fputc('\n', out);
        strobe__table_separator(out, w, NC);
    } else if (!err && format == CLI_CSV) {
        for (int c = 0; c < NC; c++)
            fprintf(out, "%s%s", c ? "," : "", hk[c]);
        fputc('\n', out);
    } else if (!err) {
        fputs("[", out);
    }
    for (size_t r = 0; r < shown && !err; r++) {
        const kopg *q = &g[r];
        const kop *x = &k[q->first];
        char v[NC][96];
        snprintf(v[0], sizeof v[0], "%s", "");
        dims_text(md_str(m, x->grid), v[2], sizeof v[2]);
        dims_text(md_str(m, x->block), v[3], sizeof v[3]);
        snprintf(v[4], sizeof v[4], "%" PRId64, x->regs);
        snprintf(v[5], sizeof v[5], "%" PRId64, x->smem);
        snprintf(v[6], sizeof v[6], "%s", cli_tb_tc_kernel(md_str(m, x->name)) ? "Yes" : "No");
        snprintf(v[7], sizeof v[7], "%s", q->eligible ? "Yes" : "No");
        snprintf(v[8], sizeof v[8], "%" PRIu64, q->calls);
        snprintf(v[9], sizeof v[9], "%.3f", (double)q->total / 1000.0);
        snprintf(v[10], sizeof v[10], "%.3f", (double)q->total / 1000.0 / (double)q->calls);
        snprintf(v[11], sizeof v[11], "%.3f", (double)q->max / 1000.0);
        snprintf(v[12], sizeof v[12], "%.3f", (double)q->min / 1000.0);
        double bps = q->total > 0 ? q->bps / (double)q->total : 0;
        double occ = q->total > 0 ? q->occ / (double)q->total : 0;
        const char *name = md_str(m, x->name);
        const char *op = x->op == MD_NONE ? "N/A" : md_str(m, md_name_of(m, x->op));
        if (format == CLI_TABLE) {
            snprintf(v[13], sizeof v[13], "%.2f", bps);
            snprintf(v[14], sizeof v[14], "%.2f", occ);
            strobe__table_cell(out, cli_esc(name), w[0], 0, name_width - 3);
            strobe__table_cell(out, cli_esc(op), w[1], 0, name_width - 3);
            for (int c = 2; c < NC; c++)
                strobe__table_cell(out, v[c], w[c], 0, 0);
            fputc('\n', out);
            continue;
        }
        int json = format == CLI_JSON;
        if (json) {
            fprintf(out, "%s\n {\"Name\": ", r ? "," : "");
            cli_json_str(out, name);
            fputs(", \"Operator\": ", out);
            cli_json_str(out, op);
            fputs(", \"Grid\": ", out);
            cli_json_str(out, v[2]);
            fputs(", \"Block\": ", out);
            cli_json_str(out, v[3]);
            fprintf(out,
                    ", \"Register Per Thread\": %s, \"Shared Memory\": %s, \"Kernel Uses TC\": "
                    "\"%s\", \"Op is TC Eligible\": \"%s\", \"Calls\": %s",
                    v[4], v[5], v[6], v[7], v[8]);
            fprintf(out,
                    ", \"Total Duration (us)\": %s, \"Mean Duration (us)\": %s, \"Max Duration "
                    "(us)\": %s, \"Min Duration (us)\": %s, \"Mean Blocks Per SM\": %.6f, \"Mean "
                    "Est. Achieved Occupancy (%%)\": %.6f}",
                    v[9], v[10], v[11], v[12], bps, occ);
        } else {
            cli_csv_str(out, name);
            fputc(',', out);
            cli_csv_str(out, op);
            fputc(',', out);
            cli_csv_str(out, v[2]);
            fputc(',', out);
            cli_csv_str(out, v[3]);
            for (int c = 4; c < 13; c++)
                fprintf(out, ",%s", v[c]);
            fprintf(out, ",%.6f,%.6f\n", bps, occ);
        }
    }
    if (!err && format == CLI_TABLE)
        strobe__table_separator(out, w, NC);
    else if (!err && format == CLI_JSON)
        fputs(shown ? "\n]\n" : "]\n", out);
    free(k);
    free(g);
    cli_tb_ops_free(&t);
    return err;
}

const struct option cmd_kernels_options[] = {
    {"limit", required_argument, NULL, 'n'},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_NAME_WIDTH,
    {"by-type", no_argument, NULL, CLI_LONG_ONLY + 1},
    {"memory", no_argument, NULL, CLI_LONG_ONLY + 2},
    CLI_KSEQ_OPTIONS,
    {"tb-view", no_argument, NULL, CLI_LONG_ONLY + 32},
    {"tb-by-op", no_argument, NULL, CLI_LONG_ONLY + 33},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_kernels(int argc, char **argv) {
    if (cli_kseq_wanted(argc, argv)) return cli_kseq_main(argc, argv); /* --sequences (kseq.c) */
    const char *path = NULL;
    size_t limit = 0, name_width = CLI_NAME_WIDTH_DEFAULT;
    int format = CLI_TABLE, quiet = 0, first = 0, by_type = 0, memory = 0, tb_view = 0, jobs = 0;
    for (int c; (c = cli_getopt(argc, argv, ":n:f:j:qhV", cmd_kernels_options, &first)) != -1;) {
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
            format = cli_parse_format(optarg);
            if (format < 0) return usage_error("unknown --format", optarg);
            break;
        case 'j':
            if (cli_parse_jobs("kernels", optarg) != 0) return CLI_BAD_INPUT;
            jobs = 1;
            break;
        case CLI_LONG_ONLY + 1:
            by_type = 1;
            break;
        case CLI_LONG_ONLY + 2:
            memory = 1;
            break;
        case CLI_LONG_ONLY + 32:
            tb_view = 1;
            break;
        case CLI_LONG_ONLY + 33:
            tb_view = 2;
            break;
        case CLI_OPT_NAME_WIDTH:
            if (cli_parse_name_width("kernels", optarg, &name_width) != 0) return CLI_BAD_INPUT;
            break;
        default:
            return cli_option_error("kernels", c, argv, cmd_kernels_options);
        }
    }
    if (memory && !by_type) return usage_error("--memory goes with --by-type", NULL);
    /* One trace is read on one thread: -j would change nothing, so it is refused where it
     * cannot apply rather than ignored. */
    if (jobs && !by_type) return usage_error("-j goes with --by-type or --sequences", NULL);
    if (tb_view && by_type)
        return usage_error("--tb-view and --tb-by-op do not go with --by-type", NULL);
    if (by_type) {
        if (first >= argc) return usage_error("give a trace or a folder", NULL);
        cli_hta_set s;
        if (cli_hta_load(&s, "kernels", argv + first, (size_t)(argc - first), quiet) != 0)
            return CLI_BAD_INPUT;
        int work = by_type_run(stdout, &s, format, memory);
        cli_hta_free(&s);
        return cli_finish("kernels", argc - first == 1 ? argv[first] : "traces", work, CLI_OK);
    }
    if (cli_trace_operand("kernels", argc, argv, first, &path) != 0) return CLI_BAD_INPUT;
    md_model *m = malloc(sizeof *m);
    if (m == NULL) return usage_error("out of memory", NULL);
    int rc = cli_load(m, "kernels", path, quiet);
    if (rc == CLI_OK) {
        cli_say_skipped("kernels", path, m);
        int work = (tb_view == 2 ? tb_op_run(stdout, m, limit, format, name_width)
                    : tb_view    ? tb_run(stdout, m, limit, format, name_width)
                                 : run(stdout, m, limit, format, name_width)) != 0
                       ? STROBE_ENOMEM
                       : 0;
        rc = cli_finish("kernels", path, work, CLI_OK);
        md_free(m);
    }
    free(m);
    return rc;
}

/* ---- for the report ----------------------------------------------------------------------- */

int cli_kernels_json(FILE *out, const md_model *m, size_t limit) {
    return run(out, m, limit, CLI_JSON, CLI_NAME_WIDTH_DEFAULT);
}

int cli_kernels_tb_json(FILE *out, const md_model *m, size_t limit) {
    return tb_run(out, m, limit, CLI_JSON, CLI_NAME_WIDTH_DEFAULT);
}

int cli_kernels_by_type_json(FILE *out, const cli_hta_set *s) {
    return by_type_run(out, s, CLI_JSON, 0);
}
