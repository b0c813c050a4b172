/* cmd_diff.c: `strobe diff BASE TEST`, HTA's trace diff (TraceDiff.compare_traces and ops_diff in
 * hta/trace_diff.py): how often each operator and kernel ran, and for how long, in two traces.
 *
 * HTA's definitions, as this file uses them:
 *   - Rows: events grouped by name, summed per trace: the count of events and the sum of their
 *     "dur" (us). HTA splits the CPU side (events without a "stream" arg: operators, runtime
 *     calls, annotations) from the GPU side (events on a stream: kernels, copies, memsets). Here a
 *     row is a (name, device) pair: device "cpu" holds cpu_op, user_annotation, and the runtime's
 *     and driver's calls; device "gpu" holds kernel, gpu_memcpy and gpu_memset events. Python
 *     functions, gpu_user_annotation copies and [memory] events are no rows.
 *   - Status (ops_diff), by count: added (0 in BASE, some in TEST), deleted (some in BASE, 0 in
 *     TEST), increased, decreased, unchanged (in both, TEST's count more, fewer, equal).
 *   - Iterations (add_iteration in hta/common/trace.py): a CPU event belongs to the step
 *     "ProfilerStep#N" whose range [ts, ts + dur) holds its start (any thread); device work
 *     belongs to the iteration of the runtime call with its "correlation" id (its launch), none
 *     when there is no such call. `--step N` keeps, in both traces, the events of iteration N.
 *     HTA compares the first iteration when none is named; strobe compares whole traces then.
 *     Steps are the CPU's ProfilerStep ranges; as in torch's traces, they are taken not to
 *     overlap (an event belongs to the latest step that starts at or before it).
 *
 * Contents: usage, iterations, rows per trace, the merge, output. */
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "model/model.h"
#include "model/step.h"
#include "strobe/error.h"
#include "util/strpool.h"
#include "util/table.h"

const char cmd_diff_usage[] =
    "NAME\n"
    "    strobe diff - operators and kernels of two traces compared (HTA's trace diff)\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe diff [OPTIONS] BASE TEST\n"
    "    strobe diff BASE TEST [--step N] [-n N] [-f table|csv|json] [--name-width N] [-q]\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads two traces (one may be \"-\", standard input) and prints one row per name and\n"
    "    device, as HTA's TraceDiff.compare_traces: device cpu for operators (cpu_op), user\n"
    "    annotations and runtime and driver calls; device gpu for kernels, memcpys and\n"
    "    memsets. Columns: name, device, base_count and test_count (events), base_duration\n"
    "    and test_duration (the sums of their durations, us), and status, from the counts as\n"
    "    HTA's ops_diff: added (only in TEST), deleted (only in BASE), increased, decreased or\n"
    "    unchanged. Rows are sorted by the largest change: |test_duration - base_duration|,\n"
    "    then |test_count - base_count|, then name.\n"
    "\n"
    "    --step N restricts both traces to iteration N, as HTA does: a CPU event belongs to\n"
    "    the ProfilerStep#N range that holds its start, device work to the step of the\n"
    "    runtime call that launched it (same correlation id). Without --step the whole traces\n"
    "    are compared. Malformed events are skipped; standard error says how many.\n"
    "\n"
    "OPTIONS\n"
    "    --step N       compare iteration N (ProfilerStep#N) only; both traces must have it\n"
    "    -n, --limit N  print the first N rows only (0: all, the default)\n"
    "    -f, --format F table (default), csv or json (an array of row objects); csv and json\n"
    "                   give durations in microseconds\n"
    "    --name-width N the name column's widest (default 55); csv and json keep whole names\n"
    // clang-format off
    CLI_JOBS_USAGE
    // clang-format on
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (a trace cannot be read, or lacks the step) or bad usage.\n";

/* ---- iterations ---------------------------------------------------------------------------- */

typedef struct step_range {
    int64_t ts, end, n;
} step_range;

typedef struct corr_ts {
    int64_t corr, ts;
} corr_ts;

static int by_ts(const void *a, const void *b) {
    const step_range *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int by_corr(const void *a, const void *b) {
    const corr_ts *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The iteration a CPU time belongs to: the latest step starting at or before ts, if it holds ts.
 * @return 1 with *n set, or 0. */
static int step_of(const step_range *s, size_t ns, int64_t ts, int64_t *n) {
    size_t lo = 0, hi = ns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].ts <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || ts >= s[lo - 1].end) return 0;
    *n = s[lo - 1].n;
    return 1;
}

/* ---- rows per trace ------------------------------------------------------------------------ */

typedef struct agg {
    const char *name;
    uint8_t gpu;
    uint64_t count;
    int64_t dur;
} agg;

typedef struct trace_rows {
    agg *rows;
    size_t count;
    strobe__pool names; /* the rows' names, copied (keep): the trace is freed before the next */
} trace_rows;

static int by_key(const void *a, const void *b) {
    const agg *x = a, *y = b;
    if (x->gpu != y->gpu) return x->gpu < y->gpu ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int is_cpu_row(int kind) {
    return kind == MD_CPU_OP || kind == MD_USER_ANNOTATION || kind == MD_RUNTIME ||
           kind == MD_DRIVER;
}

/* Sums m's rows (iteration `step` only when has_step) into *out, sorted by device and name.
 * @return 0, STROBE_ENOMEM, or STROBE_EINVAL when the trace has no step `step` (*out empty). */
static int collect(const md_model *m, int has_step, int64_t step, trace_rows *out) {
    step_range *steps = NULL;
    corr_ts *rt = NULL;
    uint32_t *row_of = NULL;
    size_t nsteps = 0, nrt = 0, nstr = m->strings.count ? m->strings.count : 1;
    int err = 0, found = 0;
    out->rows = NULL;
    out->count = 0;
    if (has_step) {
        steps = malloc((m->count ? m->count : 1) * sizeof *steps);
        rt = malloc((m->count ? m->count : 1) * sizeof *rt);
        if (steps == NULL || rt == NULL) {
            err = STROBE_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < m->count; i++) {
            const md_event e_ev = md_at(m, i), *e = &e_ev;
            int64_t n;
            if (md_is_step(m, e, &n)) {
                steps[nsteps++] = (step_range){e->ts, e->ts + e->dur, n};
                if (n == step) found = 1;
            }
            if ((e->kind == MD_RUNTIME || e->kind == MD_DRIVER) && e->corr >= 0 && e->has_time &&
                !e->bad)
                rt[nrt++] = (corr_ts){e->corr, e->ts};
        }
        if (!found) {
            err = STROBE_EINVAL;
            goto out;
        }
        qsort(steps, nsteps, sizeof *steps, by_ts);
        qsort(rt, nrt, sizeof *rt, by_corr);
    }
    /* Row per (name, device): row_of[2 * name + gpu]. */
    row_of = malloc(2 * nstr * sizeof *row_of);
    out->rows = malloc(2 * nstr * sizeof *out->rows);
    if (row_of == NULL || out->rows == NULL) {
        err = STROBE_ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < 2 * nstr; k++)
        row_of[k] = MD_NONE;
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        int gpu = md_is_device_work(e->kind);
        if (!gpu && !is_cpu_row(e->kind)) continue;
        if (e->ph != 'X' || !e->has_time || e->bad) continue;
        if (has_step) {
            int64_t n, ts = e->ts;
            if (gpu) {
                /* The launch: the first runtime call with the kernel's correlation id. */
                corr_ts key = {e->corr, INT64_MIN};
                size_t lo = 0, hi = nrt;
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    if (by_corr(&rt[mid], &key) < 0)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (e->corr < 0 || lo == nrt || rt[lo].corr != e->corr) continue;
                ts = rt[lo].ts;
            }
            if (!step_of(steps, nsteps, ts, &n) || n != step) continue;
        }
        uint32_t *slot = &row_of[2 * (size_t)e->name + (size_t)gpu];
        if (*slot == MD_NONE) {
            *slot = (uint32_t)out->count;
            out->rows[out->count++] = (agg){md_str(m, e->name), (uint8_t)gpu, 0, 0};
        }
        agg *r = &out->rows[*slot];
        r->count++;
        r->dur = md_add_sat(r->dur, e->dur);
    }
    qsort(out->rows, out->count, sizeof *out->rows, by_key);
out:
    free(steps);
    free(rt);
    free(row_of);
    if (err) {
        free(out->rows);
        out->rows = NULL;
        out->count = 0;
    }
    return err;
}

/* ---- the merge ----------------------------------------------------------------------------- */

typedef struct drow {
    const char *name;
    uint8_t gpu;
    uint64_t count[2]; /* BASE, TEST */
    int64_t dur[2];
} drow;

static const char *status_of(const drow *r) {
    if (r->count[0] == 0) return "added";
    if (r->count[1] == 0) return "deleted";
    if (r->count[1] > r->count[0]) return "increased";
    if (r->count[1] < r->count[0]) return "decreased";
    return "unchanged";
}

static uint64_t abs_diff_i(int64_t a, int64_t b) {
    return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

static uint64_t abs_diff_u(uint64_t a, uint64_t b) {
    return a > b ? a - b : b - a;
}

/* Largest change first: |duration change|, |count change|, then name and device. */
static int by_change(const void *a, const void *b) {
    const drow *x = a, *y = b;
    uint64_t dx = abs_diff_i(x->dur[1], x->dur[0]), dy = abs_diff_i(y->dur[1], y->dur[0]);
    if (dx != dy) return dx > dy ? -1 : 1;
    dx = abs_diff_u(x->count[1], x->count[0]);
    dy = abs_diff_u(y->count[1], y->count[0]);
    if (dx != dy) return dx > dy ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* Joins the two sorted lists into rows. @return the rows (n of them), or NULL (out of memory). */
static drow *merge(const trace_rows *base, const trace_rows *test, size_t *n) {
    drow *rows = malloc((base->count + test->count + 1) * sizeof *rows);
    if (rows == NULL) return NULL;
    size_t i = 0, j = 0, k = 0;
    while (i < base->count || j < test->count) {
        int c = i == base->count   ? 1
                : j == test->count ? -1
                                   : by_key(&base->rows[i], &test->rows[j]);
        const agg *src = c <= 0 ? &base->rows[i] : &test->rows[j];
        drow *r = &rows[k++];
        memset(r, 0, sizeof *r);
        r->name = src->name;
        r->gpu = src->gpu;
        if (c <= 0) {
            r->count[0] = base->rows[i].count;
            r->dur[0] = base->rows[i++].dur;
        }
        if (c >= 0) {
            r->count[1] = test->rows[j].count;
            r->dur[1] = test->rows[j++].dur;
        }
    }
    qsort(rows, k, sizeof *rows, by_change);
    *n = k;
    return rows;
}

/* ---- output -------------------------------------------------------------------------------- */

static const char *const columns[] = {"name",          "device",        "base_count", "test_count",
                                      "base_duration", "test_duration", "status"};

static void print_table(const drow *rows, size_t n, size_t name_width) {
    size_t longest = 4;
    for (size_t k = 0; k < n; k++) {
        size_t len = strobe__utf8_len(cli_esc(rows[k].name));
        if (len > longest) longest = len;
    }
    size_t w[8] = {longest + 4 < name_width ? longest + 4 : name_width, 8, 12, 12, 14, 14, 14, 11};
    static const char *const head[] = {"Name",          "Device",        "Base count", "Test count",
                                       "Base duration", "Test duration", "Change",     "Status"};
    strobe__table_separator(stdout, w, 8);
    for (int c = 0; c < 8; c++)
        strobe__table_cell(stdout, head[c], w[c], 0, 0);
    putchar('\n');
    strobe__table_separator(stdout, w, 8);
    char b[5][64];
    for (size_t k = 0; k < n; k++) {
        const drow *r = &rows[k];
        int64_t change = md_sub_sat(r->dur[1], r->dur[0]);
        snprintf(b[0], sizeof b[0], "%" PRIu64, r->count[0]);
        snprintf(b[1], sizeof b[1], "%" PRIu64, r->count[1]);
        strobe__fmt_time_ns(b[2], sizeof b[2], r->dur[0]);
        strobe__fmt_time_ns(b[3], sizeof b[3], r->dur[1]);
        b[4][0] = change > 0 ? '+' : change < 0 ? '-' : ' ';
        strobe__fmt_time_ns(b[4] + 1, sizeof b[4] - 1,
                            change < 0 ? (int64_t)abs_diff_i(change, 0) : change);
        strobe__table_cell(stdout, cli_esc(r->name), w[0], 0, name_width - 3);
        strobe__table_cell(stdout, r->gpu ? "gpu" : "cpu", w[1], 0, 0);
        for (int c = 0; c < 5; c++)
            strobe__table_cell(stdout, b[c], w[2 + c], 0, 0);
        strobe__table_cell(stdout, status_of(r), w[7], 0, 0);
        putchar('\n');
    }
    strobe__table_separator(stdout, w, 8);
}

static void print_machine(const drow *rows, size_t n, int json) {
    if (json)
        putchar('[');
    else
        for (int c = 0; c < 7; c++)
            printf("%s%s", columns[c], c < 6 ? "," : "\n");
    for (size_t k = 0; k < n; k++) {
        const drow *r = &rows[k];
        if (json) {
            printf("%s\n {\"%s\": ", k ? "," : "", columns[0]);
            cli_json_str(stdout, r->name);
            printf(", \"%s\": \"%s\", \"%s\": %" PRIu64 ", \"%s\": %" PRIu64 ", \"%s\": ",
                   columns[1], r->gpu ? "gpu" : "cpu", columns[2], r->count[0], columns[3],
                   r->count[1], columns[4]);
            cli_put_us(stdout, r->dur[0]);
            printf(", \"%s\": ", columns[5]);
            cli_put_us(stdout, r->dur[1]);
            printf(", \"%s\": \"%s\"}", columns[6], status_of(r));
        } else {
            cli_csv_str(stdout, r->name);
            printf(",%s,%" PRIu64 ",%" PRIu64 ",", r->gpu ? "gpu" : "cpu", r->count[0],
                   r->count[1]);
            cli_put_us(stdout, r->dur[0]);
            putchar(',');
            cli_put_us(stdout, r->dur[1]);
            printf(",%s\n", status_of(r));
        }
    }
    if (json) printf("%s]\n", n ? "\n" : "");
}

/* ---- the command --------------------------------------------------------------------------- */

#define OPT_STEP (CLI_LONG_ONLY + 1)

const struct option cmd_diff_options[] = {
    {"step", required_argument, NULL, OPT_STEP},
    {"limit", required_argument, NULL, 'n'},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_NAME_WIDTH,
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("diff", msg, arg);
}

static const char *shown_path(const char *path) {
    return strcmp(path, "-") == 0 ? "<stdin>" : cli_esc(path);
}

/* The rows keep copies of their names, so that one trace at a time is held. @return 0 or
 * STROBE_ENOMEM. */
static int keep_names(trace_rows *tr) {
    for (size_t k = 0; k < tr->count; k++) {
        const char *name = strobe__pool_strdup(&tr->names, tr->rows[k].name);
        if (name == NULL) return STROBE_ENOMEM;
        tr->rows[k].name = name;
    }
    return 0;
}

/* The two traces read and reduced to rows on two threads (cli_parallel): trace k into m[k] and
 * tr[k], md_load's result in load[k], the reduction's in work[k]. */
typedef struct diff_job {
    md_model *m;
    const char **path;
    int has_step;
    int64_t step;
    trace_rows *tr;
    int *load, *work;
} diff_job;

static int diff_one(void *arg, size_t k) {
    diff_job *j = arg;
    j->load[k] = md_load(&j->m[k], j->path[k]);
    if (j->load[k]) return 0; /* the other trace is still read, as its messages may come first */
    j->work[k] = collect(&j->m[k], j->has_step, j->step, &j->tr[k]);
    if (j->work[k] == 0) j->work[k] = keep_names(&j->tr[k]);
    return 0;
}

int cmd_diff(int argc, char **argv) {
    size_t limit = 0, name_width = CLI_NAME_WIDTH_DEFAULT;
    int format = CLI_TABLE, quiet = 0, first = 0, has_step = 0;
    int64_t step = 0;
    for (int c; (c = cli_getopt(argc, argv, ":n:f:j:qhV", cmd_diff_options, &first)) != -1;) {
        unsigned long long n;
        switch (c) {
        case 'h':
            return cli_help(cmd_diff_usage);
        case 'V':
            return cli_version();
        case 'j':
            if (cli_parse_jobs("diff", optarg) != 0) return CLI_BAD_INPUT;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'n':
            if (cli_parse_count("diff", "--limit", optarg, SIZE_MAX, &n) != 0) return CLI_BAD_INPUT;
            limit = (size_t)n;
            break;
        case OPT_STEP:
            if (cli_parse_count("diff", "--step", optarg, INT64_MAX, &n) != 0) return CLI_BAD_INPUT;
            step = (int64_t)n;
            has_step = 1;
            break;
        case 'f':
            format = cli_parse_format(optarg);
            if (format < 0) return usage_error("unknown --format", optarg);
            break;
        case CLI_OPT_NAME_WIDTH:
            if (cli_parse_name_width("diff", optarg, &name_width) != 0) return CLI_BAD_INPUT;
            break;
        default:
            return cli_option_error("diff", c, argv, cmd_diff_options);
        }
    }
    if (argc - first < 2) return usage_error("give two traces, BASE and TEST", NULL);
    if (argc - first > 2) return usage_error("more than two traces", argv[first + 2]);
    const char *path[2] = {argv[first], argv[first + 1]};
    if (strcmp(path[0], "-") == 0 && strcmp(path[1], "-") == 0)
        return usage_error("only one trace can be standard input", NULL);
#ifdef __GLIBC__
    /* A fixed mmap threshold: glibc's own rises to the size of the first trace's arrays once they
     * are freed, and the second trace's would then grow in the heap, fragmented, not in pages
     * that are handed back. */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    md_model *m = calloc(2, sizeof *m);
    if (m == NULL) return usage_error("out of memory", NULL);
    trace_rows tr[2] = {{NULL, 0, {0}}, {NULL, 0, {0}}};
    int freed[2] = {0, 0};
    int loaded = 0, rc = CLI_OK, work = 0;
    /* With two workers both traces are read and reduced to rows at once (each held until its
     * messages are said, in order, below); with one, a trace at a time. */
    int par_load[2] = {0, 0}, par_work[2] = {0, 0};
    diff_job dj = {m, path, has_step, step, tr, par_load, par_work};
    int par = cli_jobs_for(2) > 1;
    if (par) cli_parallel(2, 2, diff_one, &dj);
    for (; loaded < 2; loaded++) {
        rc = par ? cli_load_said(&m[loaded], "diff", path[loaded], par_load[loaded])
                 : cli_load(&m[loaded], "diff", path[loaded], quiet);
        if (rc != CLI_OK) break;
        cli_say_skipped("diff", path[loaded], &m[loaded]);
        work = par ? par_work[loaded] : collect(&m[loaded], has_step, step, &tr[loaded]);
        if (work == STROBE_EINVAL) {
            fprintf(stderr, "strobe diff: %s: no ProfilerStep#%" PRId64 " in the trace\n",
                    shown_path(path[loaded]), step);
            rc = CLI_BAD_INPUT;
            loaded++;
            break;
        }
        if (work) {
            loaded++;
            break;
        }
        if (!par) work = keep_names(&tr[loaded]);
        if (work) {
            loaded++;
            break;
        }
        md_free(&m[loaded]);
        freed[loaded] = 1;
    }
    if (rc == CLI_OK) {
        size_t n = 0;
        drow *rows = work ? NULL : merge(&tr[0], &tr[1], &n);
        if (!work && rows == NULL) work = STROBE_ENOMEM;
        if (!work) {
            size_t shown = limit == 0 || limit > n ? n : limit;
            if (format == CLI_TABLE)
                print_table(rows, shown, name_width);
            else
                print_machine(rows, shown, format == CLI_JSON);
        }
        free(rows);
        rc = cli_finish("diff", work ? path[loaded - 1] : path[1], work, CLI_OK);
    }
    for (int k = 0; k < 2; k++) {
        free(tr[k].rows);
        strobe__pool_release(&tr[k].names);
    }
    for (int k = 0; k < (par ? 2 : loaded); k++)
        if (!freed[k]) md_free(&m[k]);
    free(m);
    return rc;
}
