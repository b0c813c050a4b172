/* cmd_report.c: `strobe report TRACE... -o OUT.html`, one self-contained HTML page that shows a
 * trace (or the ranks of one job) to the eye: the commands' tables and HTA's breakdowns as
 * sortable tables and charts, utilization and memory over time, warnings and metadata.
 *
 * The page is data and a renderer: the numbers are the commands' own (rows.h and cli_hta_json() run
 * their analyses and write the JSON they print with -f json), gathered here into one JSON object
 * that the page embeds in a <script type="application/json">; the page's inline script
 * (report_page.c) draws the tables and the SVG charts from it. Nothing is fetched: the file opens
 * from disk with no network. Its size is bounded whatever the trace: the tables keep their first
 * REPORT_MAX_ROWS rows, and the time series are cut into at most REPORT_BUCKETS buckets per track.
 *
 * Contents: usage, the escaping writer, the time series (the report's own walk over the events),
 * metadata and warnings, the page, the command. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "flame.h"
#include "heap_print.h"
#include "model/heap.h"
#include "hta.h"
#include "model/model.h"
#include "report.h"
#include "rows.h"
#include "strobe/error.h"
#include "strobe/strobe.h"
#include "tb.h"
#include "util/json_fmt.h"

#define REPORT_MAX_ROWS 200  /* operators, kernels and streams shown at most */
#define REPORT_BUCKETS 1000  /* time buckets per utilization or memory track at most */
#define REPORT_MAX_TRACKS 64 /* device streams drawn at most */
#define REPORT_MAX_THREADS 200
#define REPORT_MAX_REASONS 20

const char cmd_report_usage[] =
    "NAME\n"
    "    strobe report - one self-contained HTML report of a trace, or of a job's ranks\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe report [OPTIONS] -o OUT.html TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads TRACE (a Kineto-format trace, .json, .json.gz or .pftrace; several traces, or a\n"
    "    folder of rank traces, are the ranks of one job, as strobe breakdown takes them) and\n"
    "    writes one HTML file with its CSS and script inline: it opens from disk in a browser\n"
    "    with no network. It shows, from the first rank's trace: the operator table of strobe\n"
    "    summary (torch's columns; click a header to sort), the kernels and streams of strobe\n"
    "    kernels, the step breakdown of strobe steps as a stacked bar chart, the busy fraction\n"
    "    of each device stream over time, allocated memory over time (when the trace has\n"
    "    [memory] events), the trace's warnings (malformed events skipped, by reason) and its\n"
    "    metadata (as strobe info); and from all ranks HTA's temporal breakdown, kernel types,\n"
    "    communication overlap, idle time and queue lengths as charts and tables. Several ranks\n"
    "    add a comparison: step times per rank and HTA's potential stragglers (strobe ranks).\n"
    "    A CPU-only trace (no kernels, copies or memsets) leaves the device sections out.\n"
    "    A section gives the TensorBoard plugin's GPU Summary (per device: GPU Utilization,\n"
    "    Est. SM Efficiency, Est. Achieved Occupancy, Kernel Time using Tensor Cores, in %),\n"
    "    its Average Step Time (us) and Performance Recommendation (strobe steps --overview),\n"
    "    and its Tensor Core columns of operators and kernels (strobe summary --tensor-cores,\n"
    "    strobe kernels --tb-view).\n"
    "    The numbers are those the commands print. The report summarizes and never embeds the\n"
    "    trace: tables keep their first 200 rows, and time series at most 1000 points per\n"
    "    track. Under mpirun (or srun) the processes share the files and rank 0 writes the\n"
    "    page.\n"
    "\n"
    "OPTIONS\n"
    "    -o, --output F the HTML file to write (required; - is standard output)\n"
    "    --title T      the page's title (default: the first trace's file name)\n"
    // clang-format off
    CLI_JOBS_USAGE
    // clang-format on
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (a trace cannot be read, ranks do not fit), an unwritable\n"
    "    output, or bad usage.\n";

const struct option cmd_report_options[] = {
    {"output", required_argument, NULL, 'o'},
    {"title", required_argument, NULL, CLI_LONG_ONLY + 1},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

/* ---- the escaping writer ------------------------------------------------------------------- */

void cli_report_html_text(FILE *out, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = cli_utf8_seq(s + i, n - i);
        if (c == '<')
            fputs("&lt;", out);
        else if (c == '>')
            fputs("&gt;", out);
        else if (c == '&')
            fputs("&amp;", out);
        else if (c == '"')
            fputs("&quot;", out);
        else if (c == '\'')
            fputs("&#39;", out);
        else if (c < 0x20 || c == 0x7f || (len == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0))
            fputs("\xef\xbf\xbd", out); /* a control character: U+FFFD, visibly */
        else if (len == 0)
            fputs("\xef\xbf\xbd", out); /* not UTF-8 */
        else
            fwrite(s + i, 1, len, out);
        i += len ? len : 1;
    }
}

void cli_report_script_json(FILE *out, const char *json, size_t n) {
    /* '<' occurs in JSON text only inside strings, where \u003c means the same: so no "</script"
     * nor "<!--" can end or change the script element. */
    for (size_t i = 0, k; i < n; i = k + 1) {
        for (k = i; k < n && json[k] != '<'; k++) {
        }
        fwrite(json + i, 1, k - i, out);
        if (k < n) fputs("\\u003c", out);
    }
}

/* A JSON string through the trace layer's formatting (util/json_fmt.h). @return 0 or
 * STROBE_ENOMEM. */
static int put_str(FILE *out, const char *s) {
    size_t n = strlen(s);
    char stack[512], *buf = STROBE__JSON_STRING_MAX(n) <= sizeof stack
                                ? stack
                                : malloc(STROBE__JSON_STRING_MAX(n));
    if (buf == NULL) return STROBE_ENOMEM;
    char *end = strobe__json_put_string(buf, s, n);
    fwrite(buf, 1, (size_t)(end - buf), out);
    if (buf != stack) free(buf);
    return 0;
}

/* A pid or tid by its kind (model.h): a number, a string, or null. */
static int put_id(FILE *out, const md_model *m, int64_t v, uint8_t kind) {
    if (kind == MD_ID_NUM) {
        fprintf(out, "%" PRId64, v);
        return 0;
    }
    if (kind == MD_ID_STR) return put_str(out, md_str(m, (uint32_t)v));
    fputs("null", out);
    return 0;
}

/* ---- time series --------------------------------------------------------------------------- */

/* The buckets of [t0, t1): at most REPORT_BUCKETS, each a whole number of ns. */
static void buckets(int64_t t0, int64_t t1, int64_t *width, size_t *n) {
    int64_t span = t1 > t0 ? md_sub_sat(t1, t0) : 1;
    *width = span / REPORT_BUCKETS + (span % REPORT_BUCKETS != 0);
    if (*width < 1) *width = 1;
    *n = (size_t)((span + *width - 1) / *width);
    if (*n == 0) *n = 1;
}

/* Per device stream (a thread with device work), the busy fraction of each bucket: the time its
 * kernels, copies and memsets cover, capped at the bucket's length where they overlap. */
static int put_util(FILE *out, const md_model *m, int64_t rank, int64_t t0, int64_t width,
                    size_t nb, size_t *tracks) {
    double *busy = malloc(nb * sizeof *busy);
    /* The buckets an event covers whole are counted in a difference array, so that the walk
     * costs one step per event whatever its length (a trace of long, overlapping kernels would
     * otherwise cost events x buckets). */
    int64_t *whole = malloc((nb + 1) * sizeof *whole);
    if (busy == NULL || whole == NULL) {
        free(busy);
        free(whole);
        return STROBE_ENOMEM;
    }
    int rc = 0;
    for (size_t i = 0; i < m->thread_count && *tracks < REPORT_MAX_TRACKS && rc == 0; i++) {
        const md_thread *th = &m->threads[i];
        int any = 0;
        memset(busy, 0, nb * sizeof *busy);
        memset(whole, 0, (nb + 1) * sizeof *whole);
        for (size_t k = 0; k < th->count; k++) {
            const md_event ev = md_at(m, th->order[k]), *e = &ev;
            if (!md_is_device_work(e->kind) || e->bad || !e->has_time || e->dur <= 0) continue;
            any = 1;
            int64_t s = md_sub_sat(e->ts, t0), end = md_add_sat(s, e->dur);
            int64_t first = s / width, last = (end - 1) / width;
            if (first >= (int64_t)nb) continue;
            if (last >= (int64_t)nb) {
                last = (int64_t)nb - 1;
                end = (int64_t)nb * width;
            }
            if (first == last) {
                busy[first] += (double)(end - s);
                continue;
            }
            busy[first] += (double)((first + 1) * width - s);
            busy[last] += (double)(end - last * width);
            whole[first + 1]++;
            whole[last]--;
        }
        if (!any) continue;
        fprintf(out,
                "%s\n  {\"rank\": %" PRId64 ", \"start_ns\": %" PRId64 ", \"bucket_ns\": %" PRId64
                ", \"pid\": ",
                (*tracks)++ ? "," : "", rank, t0, width);
        rc |= put_id(out, m, th->pid, th->pid_kind);
        fputs(", \"tid\": ", out);
        rc |= put_id(out, m, th->tid, th->tid_kind);
        fputs(", \"name\": ", out);
        rc |= put_str(out, th->name ? md_str(m, th->name) : "");
        fputs(", \"busy\": [", out);
        int64_t run = 0;
        for (size_t b = 0; b < nb; b++) {
            run += whole[b];
            double f = (busy[b] + (double)run * (double)width) / (double)width;
            /* Three significant digits: the page draws shades, and the file stays small. */
            fprintf(out, "%s%.3g", b ? "," : "", f > 1.0 ? 1.0 : f);
        }
        fputs("]}", out);
    }
    free(busy);
    free(whole);
    return rc ? STROBE_ENOMEM : 0;
}

typedef struct mem_ev {
    int64_t ts, bytes;
    int dev;
} mem_ev;

static int by_mem_ts(const void *a, const void *b) {
    const mem_ev *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Allocated bytes over time, per device type ([memory] events' "Device Type": 0 the CPU, else
 * the device): the running sum of their "Bytes" from the trace's start (frees are negative), its
 * highest value in each bucket. Tracks: CPU, then device. */
static int put_memory(FILE *out, const md_model *m, int64_t t0, int64_t width, size_t nb) {
    size_t n = 0;
    for (size_t i = 0; i < m->count; i++) {
        if (md_kind_of(m, (uint32_t)i) != MD_MEMORY) continue;
        const md_event e = md_at(m, (uint32_t)i);
        n += !e.bad && e.has_time;
    }
    fputs("[", out);
    if (n == 0) {
        fputs("]", out);
        return 0;
    }
    mem_ev *v = malloc(n * sizeof *v);
    if (v == NULL) return STROBE_ENOMEM;
    n = 0;
    for (size_t i = 0; i < m->count; i++) {
        if (md_kind_of(m, (uint32_t)i) != MD_MEMORY) continue;
        const md_event ev = md_at(m, (uint32_t)i), *e = &ev;
        if (!e->bad && e->has_time) v[n++] = (mem_ev){e->ts, e->bytes, e->mem_device > 0};
    }
    qsort(v, n, sizeof *v, by_mem_ts);
    int tracks = 0;
    for (int dev = 0; dev < 2; dev++) {
        int64_t cur = 0, hi = INT64_MIN;
        size_t count = 0;
        for (size_t i = 0; i < n; i++) {
            if (v[i].dev != dev) continue;
            cur = md_add_sat(cur, v[i].bytes);
            if (cur > hi) hi = cur;
            count++;
        }
        if (count == 0) continue;
        fprintf(out,
                "%s\n  {\"device\": \"%s\", \"events\": %zu, \"peak\": %" PRId64 ", \"bytes\": [",
                tracks++ ? "," : "", dev ? "device" : "CPU", count, hi);
        /* Each bucket: the highest level reached in it; one with no event holds the level the
         * bucket before it ended with. */
        cur = 0;
        size_t i = 0;
        for (size_t b = 0; b < nb; b++) {
            int64_t top = INT64_MIN;
            for (; i < n && (b + 1 == nb || md_sub_sat(v[i].ts, t0) / width <= (int64_t)b); i++) {
                if (v[i].dev != dev) continue;
                cur = md_add_sat(cur, v[i].bytes);
                if (cur > top) top = cur;
            }
            fprintf(out, "%s%" PRId64, b ? "," : "", top == INT64_MIN ? cur : top);
        }
        fputs("]}", out);
    }
    fputs("]", out);
    free(v);
    return 0;
}

/* ---- metadata and warnings ----------------------------------------------------------------- */

typedef struct reason {
    uint32_t why;
    uint64_t n;
} reason;

static int by_count(const void *a, const void *b) {
    const reason *x = a, *y = b;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    return (x->why > y->why) - (x->why < y->why);
}

/* The malformed events by the reader's reason (the first one of each event), most first. */
static int put_warnings(FILE *out, const md_model *m) {
    fprintf(out,
            "{\"bad_events\": %" PRIu64 ", \"bad_metadata_events\": %" PRIu64
            ", \"unterminated\": %s, \"perf_counters_dropped\": %" PRIu64 ", \"reasons\": [",
            m->bad_events, m->bad_metadata_events, m->unterminated || m->pf_cut ? "true" : "false",
            m->perf_dropped);
    reason *r = NULL;
    size_t nr = 0, cap = 0;
    for (size_t i = 0; i < m->count; i++) {
        const md_event ev = md_at(m, (uint32_t)i), *e = &ev;
        if (!e->bad) continue;
        size_t k = 0;
        while (k < nr && r[k].why != e->bad_why)
            k++;
        if (k == nr) {
            /* Reasons are few (the reader's fixed messages): a list is enough. Past 256 distinct
             * ones, the rest count as one. */
            if (nr == 256) {
                k = nr - 1;
            } else {
                if (nr == cap) {
                    cap = cap ? cap * 2 : 16;
                    reason *g = realloc(r, cap * sizeof *r);
                    if (g == NULL) {
                        free(r);
                        return STROBE_ENOMEM;
                    }
                    r = g;
                }
                r[nr++] = (reason){e->bad_why, 0};
            }
        }
        r[k].n++;
    }
    if (nr) qsort(r, nr, sizeof *r, by_count);
    int rc = 0;
    for (size_t k = 0; k < nr && k < REPORT_MAX_REASONS && rc == 0; k++) {
        fputs(k ? ", {\"reason\": " : "{\"reason\": ", out);
        rc = put_str(out, r[k].why ? md_str(m, r[k].why) : "(no reason given)");
        fprintf(out, ", \"events\": %" PRIu64 "}", r[k].n);
    }
    fputs("]}", out);
    free(r);
    return rc;
}

/* strobe info's facts that the page shows. */
static int put_meta(FILE *out, const md_model *m, int64_t rank) {
    int rc = 0;
    fputs("{\"file\": ", out);
    rc |= put_str(out, m->path);
    fprintf(out, ", \"rank\": %" PRId64, rank);
    fputs(", \"schema_version\": ", out);
    if (m->has_schema)
        fprintf(out, "%" PRId64, m->schema_version);
    else
        fputs("null", out);
    fputs(", \"base_time_ns\": ", out);
    if (m->has_base)
        fprintf(out, "%" PRId64, m->base_time_ns);
    else
        fputs("null", out);
    if (m->min_ts <= m->max_ts)
        fprintf(out, ", \"span_ns\": %" PRId64, md_sub_sat(m->max_ts, m->min_ts));
    /* Kernels, copies and memsets: with none, the page leaves out its device sections. */
    size_t device_events = 0;
    for (size_t i = 0; i < m->count; i++)
        device_events += md_is_device_work(md_kind_of(m, (uint32_t)i));
    fprintf(out,
            ", \"events\": %zu, \"metadata_events\": %" PRIu64
            ", \"device\": \"%s\", \"device_events\": %zu",
            m->count, m->metadata_events, md_device_name(m), device_events);
    fprintf(out, ", \"perfetto\": %s", m->perfetto ? "true" : "false");
    /* The raw JSON of distributedInfo and deviceProperties, as text: the page parses it. */
    fputs(", \"distributed_info\": ", out);
    rc |= m->dist_info ? put_str(out, md_str(m, m->dist_info)) : (fputs("null", out), 0);
    fputs(", \"device_properties\": ", out);
    rc |= m->device_props ? put_str(out, md_str(m, m->device_props)) : (fputs("null", out), 0);
    fputs(", \"metadata_keys\": [", out);
    for (size_t i = 0; i < m->meta_count; i++) {
        if (i) fputc(',', out);
        rc |= put_str(out, md_str(m, m->meta_keys[i]));
    }
    fprintf(out, "], \"process_count\": %zu, \"processes\": [", m->proc_count);
    for (size_t i = 0; i < m->proc_count && i < REPORT_MAX_THREADS; i++) {
        fputs(i ? ", {\"pid\": " : "{\"pid\": ", out);
        rc |= put_id(out, m, m->procs[i].pid, m->procs[i].pid_kind);
        fputs(", \"name\": ", out);
        rc |= put_str(out, md_str(m, m->procs[i].name));
        fputc('}', out);
    }
    fprintf(out, "], \"thread_count\": %zu, \"threads\": [", m->thread_count);
    for (size_t i = 0; i < m->thread_count && i < REPORT_MAX_THREADS; i++) {
        const md_thread *t = &m->threads[i];
        fputs(i ? ",\n  {\"pid\": " : "\n  {\"pid\": ", out);
        rc |= put_id(out, m, t->pid, t->pid_kind);
        fputs(", \"tid\": ", out);
        rc |= put_id(out, m, t->tid, t->tid_kind);
        fprintf(out, ", \"events\": %zu, \"name\": ", t->count);
        rc |= put_str(out, md_str(m, t->name));
        fputc('}', out);
    }
    fputs("]}", out);
    return rc ? STROBE_ENOMEM : 0;
}

/* ---- the page ------------------------------------------------------------------------------ */

void cli_report_flame(FILE *out, const md_model *m) {
    /* The graph `strobe flamegraph` draws (self CPU time by stack), inline: no XML declaration,
     * its styles and script scoped by its own id. */
    cli_flame_opts o = {0};
    o.embed = 1;
    o.id = "report-flame";
    char err[256] = "";
    fputs("<div id=\"flamegraph\">\n", out);
    if (cli_flame_svg(out, m, &o, err, sizeof err) != 0) {
        fputs("<p class=\"note\">No flame graph: ", out);
        cli_report_html_text(out, err);
        fputs("</p>", out);
    }
    fputs("</div>\n", out);
}

/* A command's JSON into the data object under `key`: what it wrote to a memory stream. */
typedef int (*json_fn)(FILE *out, void *arg);

static int put_section(FILE *out, const char *key, json_fn fn, void *arg) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (mem == NULL) return STROBE_ENOMEM;
    int rc = fn(mem, arg);
    if (fclose(mem) != 0 && rc == 0) rc = STROBE_ENOMEM;
    fprintf(out, ",\n\"%s\": ", key);
    /* A command that said why it has no result (CLI_HTA_REPORTED: on stderr) gives null. */
    if (rc == 0 && len > 0)
        fwrite(buf, 1, len, out);
    else
        fputs("null", out);
    free(buf);
    return rc == CLI_HTA_REPORTED ? 0 : rc;
}

typedef struct sum_arg {
    md_model *m;
    size_t rows;
} sum_arg;

static int j_summary(FILE *out, void *arg) {
    sum_arg *a = arg;
    return cli_summary_json(out, a->m, REPORT_MAX_ROWS, &a->rows);
}
/* strobe record --heap's allocation sites; null without them. */
static int j_heap(FILE *out, void *arg) {
    const md_model *m = arg;
    if (m->heap_json == NULL) return 0;
    int rc = cli_heap_json(out, m->heap_json, REPORT_MAX_ROWS);
    return rc == 1 ? 0 : rc;
}
static int j_kernels(FILE *out, void *arg) {
    return cli_kernels_json(out, arg, REPORT_MAX_ROWS);
}
static int j_steps(FILE *out, void *arg) {
    return cli_steps_json(out, arg);
}
static int j_by_type(FILE *out, void *arg) {
    return cli_kernels_by_type_json(out, arg);
}
static int j_breakdown(FILE *out, void *arg) {
    return cli_hta_json(out, &cli_hta_cmd_breakdown, arg, NULL);
}
static int j_overlap(FILE *out, void *arg) {
    return cli_hta_json(out, &cli_hta_cmd_overlap, arg, NULL);
}
static int j_idle(FILE *out, void *arg) {
    int64_t delay = 30; /* the command's default --consecutive-kernel-delay */
    return cli_hta_json(out, &cli_hta_cmd_idle, arg, &delay);
}
static int j_queue(FILE *out, void *arg) {
    int64_t max_len = 1024; /* the command's default --max-queue-length */
    return cli_hta_json(out, &cli_hta_cmd_queue, arg, &max_len);
}
static int j_ranks(FILE *out, void *arg) {
    return cli_hta_json(out, &cli_hta_cmd_ranks, arg, NULL);
}
/* strobe ranks --collectives: stragglers per collective, with its defaults. */
static int j_collectives(FILE *out, void *arg) {
    return cli_hta_json(out, &cli_hta_cmd_collectives, arg, NULL);
}

/* The data object the page draws from. @return 0 or a negative STROBE_E* code. */
/* The TensorBoard plugin's figures (strobe steps --overview, summary --tensor-cores, kernels
 * --tb-view), for report_tb.c's section. */
static int j_tb_overview(FILE *out, void *arg) {
    return cli_steps_overview_json(out, arg);
}

static int j_tb_operators(FILE *out, void *arg) {
    return cli_tb_op_table(out, arg, REPORT_MAX_ROWS, CLI_JSON, CLI_NAME_WIDTH_DEFAULT);
}

static int j_tb_kernels(FILE *out, void *arg) {
    return cli_kernels_tb_json(out, arg, REPORT_MAX_ROWS);
}

static int put_tb(FILE *out, md_model *m) {
    int rc = put_section(out, "tb_overview", j_tb_overview, m);
    if (rc == 0) rc = put_section(out, "tb_operators", j_tb_operators, m);
    if (rc == 0) rc = put_section(out, "tb_kernels", j_tb_kernels, m);
    return rc;
}

static int put_data(FILE *out, cli_hta_set *s, const char *title) {
    md_model *m = &s->ranks[0].m;
    int rc = 0;
    fputs("{\"title\": ", out);
    rc = put_str(out, title);
    fputs(",\n\"version\": ", out);
    if (rc == 0) rc = put_str(out, strobe_version());
    fprintf(out, ", \"max_rows\": %d, \"ranks\": [", REPORT_MAX_ROWS);
    for (size_t k = 0; k < s->count && rc == 0; k++) {
        fputs(k ? ",\n {\"meta\": " : "\n {\"meta\": ", out);
        rc = put_meta(out, &s->ranks[k].m, s->ranks[k].rank);
        fputs(", \"warnings\": ", out);
        if (rc == 0) rc = put_warnings(out, &s->ranks[k].m);
        fputs("}", out);
    }
    fputs("]", out);
    sum_arg sa = {m, 0};
    if (rc == 0) rc = put_section(out, "summary", j_summary, &sa);
    if (rc == 0) fprintf(out, ",\n\"summary_rows\": %zu", sa.rows);
    if (rc == 0) rc = put_section(out, "kernels", j_kernels, m);
    if (rc == 0) rc = put_section(out, "heap", j_heap, m);
    if (rc == 0) rc = put_section(out, "steps", j_steps, m);
    if (rc == 0) rc = put_section(out, "kernel_types", j_by_type, s);
    if (rc == 0) rc = put_section(out, "breakdown", j_breakdown, s);
    if (rc == 0) rc = put_section(out, "overlap", j_overlap, s);
    if (rc == 0) rc = put_section(out, "idle", j_idle, s);
    if (rc == 0) rc = put_section(out, "queue", j_queue, s);
    if (rc == 0 && s->count > 1) rc = put_section(out, "ranks_steps", j_ranks, s);
    if (rc == 0 && s->count > 1) rc = put_section(out, "ranks_collectives", j_collectives, s);
    if (rc == 0) rc = put_tb(out, m);
    /* Time series: each rank's over its own span (its first event to its last end), in at most
     * REPORT_BUCKETS buckets; "time" is the first rank's, which memory uses too. */
    int64_t t0[2] = {0, 0}, width[2] = {1, 1};
    size_t nb[2] = {1, 1}, tracks = 0;
    if (rc == 0) fputs(",\n\"utilization\": [", out);
    for (size_t k = 0; k < s->count && rc == 0; k++) {
        const md_model *mk = &s->ranks[k].m;
        int has = mk->min_ts <= mk->max_ts;
        size_t j = k ? 1 : 0;
        t0[j] = has ? mk->min_ts : 0;
        buckets(t0[j], has ? mk->max_ts : 1, &width[j], &nb[j]);
        rc = put_util(out, mk, s->ranks[k].rank, t0[j], width[j], nb[j], &tracks);
    }
    if (rc == 0) {
        fputs("]", out);
        fprintf(out,
                ",\n\"time\": {\"start_ns\": %" PRId64 ", \"bucket_ns\": %" PRId64
                ", \"buckets\": %zu}",
                t0[0], width[0], nb[0]);
        fputs(",\n\"memory\": ", out);
        rc = put_memory(out, m, t0[0], width[0], nb[0]);
    }
    fputs("}\n", out);
    return rc;
}

static int write_page(FILE *out, cli_hta_set *s, const char *title) {
    char *data = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&data, &len);
    if (mem == NULL) return STROBE_ENOMEM;
    int rc = put_data(mem, s, title);
    if (fclose(mem) != 0 && rc == 0) rc = STROBE_ENOMEM;
    if (rc == 0) {
        fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
              "<meta name=\"generator\" content=\"strobe report\">\n<title>",
              out);
        cli_report_html_text(out, title);
        fputs("</title>\n<style>\n", out);
        fputs(cli_report_page_css, out);
        fputs("</style>\n</head>\n<body>\n<header><h1>", out);
        cli_report_html_text(out, title);
        fputs("</h1><p class=\"sub\">strobe report</p></header>\n", out);
        /* The sections, the TensorBoard plugin's (report_tb.c) and the flame graph in their
         * places among them. */
        const char *body = cli_report_page_body;
        const char *tb = strstr(body, CLI_REPORT_TB_MARK);
        const char *mark = strstr(body, CLI_REPORT_FLAME_MARK);
        if (tb && mark && tb < mark) {
            fwrite(body, 1, (size_t)(tb - body), out);
            fputs(cli_report_tb_body, out);
            body = tb + strlen(CLI_REPORT_TB_MARK);
        }
        size_t before = mark ? (size_t)(mark - body) : strlen(body);
        fwrite(body, 1, before, out);
        fputc('\n', out);
        cli_report_flame(out, &s->ranks[0].m);
        if (mark) fputs(mark + strlen(CLI_REPORT_FLAME_MARK), out);
        fputs("<script type=\"application/json\" id=\"strobe-data\">", out);
        cli_report_script_json(out, data, len);
        fputs("</script>\n<script>\n", out);
        fputs(cli_report_page_script, out);
        fputs("</script>\n<script>\n", out);
        fputs(cli_report_tb_script, out);
        fputs("</script>\n</body>\n</html>\n", out);
    }
    free(data);
    return rc;
}

/* ---- the command --------------------------------------------------------------------------- */

int cmd_report(int argc, char **argv) {
    const char *output = NULL, *title = NULL;
    int quiet = 0, first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":o:j:qhV", cmd_report_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_report_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'o':
            output = optarg;
            break;
        case 'j': {
            int rc = cli_parse_jobs("report", optarg);
            if (rc) return rc;
            break;
        }
        case CLI_LONG_ONLY + 1:
            title = optarg;
            break;
        default:
            return cli_option_error("report", c, argv, cmd_report_options);
        }
    }
    if (output == NULL)
        return cli_usage_error("report", "give the output file (-o OUT.html)", NULL);
    if (first >= argc) return cli_usage_error("report", "give a trace or a folder", NULL);
    cli_hta_set s;
    if (cli_hta_load(&s, "report", argv + first, (size_t)(argc - first), quiet) != 0)
        return CLI_BAD_INPUT;
    if (title == NULL) {
        const char *p = s.ranks[0].m.path, *slash = strrchr(p, '/');
        title = slash ? slash + 1 : p;
    }
    FILE *out = strcmp(output, "-") == 0 ? stdout : fopen(output, "w");
    if (out == NULL) {
        fprintf(stderr, "strobe report: %s: %s\n", cli_esc(output), strerror(errno));
        cli_hta_free(&s);
        return CLI_BAD_INPUT;
    }
    int work = write_page(out, &s, title);
    cli_hta_free(&s);
    if (out != stdout) {
        /* fclose writes what the buffer holds: where a write failed before, it fails again
         * with errno set (ENOSPC). A regular file left partial is removed. */
        int bad = ferror(out);
        errno = 0;
        if (fclose(out) != 0 || bad) {
            int e = errno ? errno : EIO;
            struct stat st;
            if (stat(output, &st) == 0 && S_ISREG(st.st_mode)) unlink(output);
            fprintf(stderr, "strobe report: %s: %s\n", cli_esc(output), strerror(e));
            return CLI_BAD_INPUT;
        }
    }
    return cli_finish("report", argc - first == 1 ? argv[first] : "traces", work, CLI_OK);
}
