/* cmd_counters.c: `strobe counters`, HTA's CUPTI counter analysis
 * (CuptiCounterAnalysis.get_counter_data_with_operators in
 * hta/analyzers/cupti_counter_analysis.py): per kernel of a trace taken in CUPTI's profiler mode,
 * its performance counters and the PyTorch operators that launched it.
 *
 * HTA's definitions, per rank, over the rows HTA keeps (hta.h):
 *   - the kernels are the rows of cat "cuda_profiler_range" (in that mode CUPTI gives them no
 *     correlation id and no stream), sorted by ts; their counters are their args, one column per
 *     arg name found on any such event of the trace (hta/common/trace_parser.py, _compress_df),
 *     -1 where a kernel lacks one (the AttributeSpec default);
 *   - the launches are the rows whose cat starts with "cuda_runtime" and whose name starts with
 *     "cudaLaunchKernel" (pandas' str.match), sorted by ts. When there are as many launches as
 *     kernels, the k-th kernel is paired with the k-th launch (index_runtime); otherwise HTA gives
 *     no rows for the rank (it logs an error), and so does this command, saying so on stderr;
 *   - a kernel's operator stack is the launch's call stack (CallGraph.get_stack_of_node in
 *     hta/common/trace_call_graph.py: the launch and its ancestors on its thread) less all but
 *     the rows of cat "cpu_op", sorted by ts: op_stack (outermost first), top_level_op its first,
 *     bottom_level_op its last ("" when the stack has no operator: HTA fails there).
 * Choices where HTA leaves one open: ties in ts (HTA's sorts are not stable) keep file order;
 * the counter columns are in name order (HTA's come from a Python set); op_stack, a list in HTA,
 * is its names joined by ";"; the ancestors are the model's nesting on the thread (HTA links a
 * backward thread's operators under the main thread's annotations, which are not cpu_op). ts is
 * HTA's (whole microseconds from the earliest row of all ranks); dur is end - ts.
 *
 * Contents: usage and options, reading the counters (a second pass over each file, for the args
 * the model does not keep), pairing and operator stacks per rank, the command. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "emit.h"
#include "hta.h"
#include "reader/json_pull.h"
#include "reader/trace_reader.h"
#include "strobe/error.h"

const char cmd_counters_usage[] =
    "NAME\n"
    "    strobe counters - HTA's CUPTI counter analysis: each kernel's counters and operators\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe counters [OPTIONS] TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's get_counter_data_with_operators(), with its definitions, for\n"
    "    traces taken with CUPTI's profiler (range) mode, whose kernels are the events of cat\n"
    "    cuda_profiler_range with their counter values in args. TRACE is a trace, or a folder of\n"
    "    rank traces, read as strobe breakdown reads them (ranks, HTA's times in microseconds, "
    "its\n"
    "    profiler-step restriction); it is read twice, so standard input is refused.\n"
    "\n"
    "    As HTA does, the kernels, sorted by start, are paired with the cudaLaunchKernel calls\n"
    "    (cuda_runtime), sorted by start: the k-th with the k-th. A rank whose counts differ "
    "gives\n"
    "    no rows (said on standard error). One row per kernel: rank, index (its place in the\n"
    "    file's traceEvents), index_runtime (its launch's), name, cat, ts, dur, op_stack (the\n"
    "    cpu_op operators around the launch, outermost first, joined by ';'), top_level_op and\n"
    "    bottom_level_op (the outermost and the innermost), then one column per counter (in name\n"
    "    order; -1 where a kernel lacks it). A trace without such events gives no rows, and says\n"
    "    so on standard error.\n"
    "\n"
    "OPTIONS\n"
    "    -f, --format F table (default), csv or json (an array of rows keyed by the column\n"
    "                   names)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit, too many\n"
    "    counters, standard input) or usage.\n";

const struct option cmd_counters_options[] = {
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

#define CT_CAT "cuda_profiler_range"
#define CT_FIXED 10 /* the columns before the counters */

static const char *const fixed_cols[CT_FIXED] = {
    "rank", "index", "index_runtime", "name",         "cat",
    "ts",   "dur",   "op_stack",      "top_level_op", "bottom_level_op"};
static const uint8_t fixed_text[CT_FIXED] = {0, 0, 0, 1, 1, 0, 0, 1, 1, 1};

/* The counters read from one file: per cuda_profiler_range event (by its file index), the value
 * text of each counter name (NULL: absent). */
typedef struct ct_event {
    uint64_t index;
    char **values; /* [ncounters at the time it was read]; grown as names are found */
    size_t nvalues;
} ct_event;

typedef struct ct_file {
    ct_event *ev;
    size_t n, cap;
} ct_file;

typedef struct ct_names {
    char **v;
    size_t n, cap;
} ct_names;

/* The id of counter name s[0..len), added when new. @return it, STROBE_ENOMEM, or STROBE_ERANGE
 * when a new name would not fit in a table (read_counters says so). */
static long name_id(ct_names *nm, const char *s, size_t len) {
    for (size_t k = 0; k < nm->n; k++)
        if (strlen(nm->v[k]) == len && memcmp(nm->v[k], s, len) == 0) return (long)k;
    if (nm->n >= CLI_HTA_MAX_COLS - CT_FIXED) return STROBE_ERANGE;
    if (nm->n == nm->cap) {
        size_t cap = nm->cap ? nm->cap * 2 : 16;
        char **v = realloc(nm->v, cap * sizeof *v);
        if (v == NULL) return STROBE_ENOMEM;
        nm->v = v;
        nm->cap = cap;
    }
    char *c = malloc(len + 1);
    if (c == NULL) return STROBE_ENOMEM;
    memcpy(c, s, len);
    c[len] = '\0';
    nm->v[nm->n] = c;
    return (long)nm->n++;
}

/* Sets value `id` of event e to text[0..len) (a copy). */
static int set_value(ct_event *e, size_t id, const char *text, size_t len) {
    if (id >= e->nvalues) {
        char **v = realloc(e->values, (id + 1) * sizeof *v);
        if (v == NULL) return STROBE_ENOMEM;
        for (size_t k = e->nvalues; k <= id; k++)
            v[k] = NULL;
        e->values = v;
        e->nvalues = id + 1;
    }
    char *c = malloc(len + 1);
    if (c == NULL) return STROBE_ENOMEM;
    memcpy(c, text, len);
    c[len] = '\0';
    free(e->values[id]);
    e->values[id] = c;
    return 0;
}

/* The members of args (an object's raw text) as counters of e: numbers keep their text; any other
 * value is an empty cell. */
static int read_args(ct_names *nm, ct_event *e, const char *args, size_t len) {
    strobe_jp jp;
    strobe_jp_init_mem(&jp, args, len);
    int rc = 0, t = strobe_jp_next(&jp);
    if (t != STROBE_JP_OBJ_BEGIN) rc = STROBE_EFORMAT;
    while (rc == 0 && (t = strobe_jp_next(&jp)) == STROBE_JP_KEY) {
        long id = name_id(nm, jp.str, jp.str_len);
        if (id < 0) {
            rc = (int)id;
            break;
        }
        t = strobe_jp_next(&jp);
        if (t == STROBE_JP_NUMBER) {
            rc = set_value(e, (size_t)id, jp.num, jp.num_len);
        } else if (t <= STROBE_JP_EOF || t == STROBE_JP_OBJ_END || t == STROBE_JP_ARR_END) {
            rc = STROBE_EFORMAT;
        } else {
            if ((t == STROBE_JP_OBJ_BEGIN || t == STROBE_JP_ARR_BEGIN) &&
                strobe_jp_skip_container(&jp) <= STROBE_JP_EOF)
                rc = STROBE_EFORMAT;
            if (rc == 0) rc = set_value(e, (size_t)id, "", 0); /* not a number: empty */
        }
    }
    strobe_jp_free(&jp);
    return rc;
}

static void file_free(ct_file *f) {
    for (size_t i = 0; i < f->n; i++) {
        for (size_t k = 0; k < f->ev[i].nvalues; k++)
            free(f->ev[i].values[k]);
        free(f->ev[i].values);
    }
    free(f->ev);
    memset(f, 0, sizeof *f);
}

/* Reads the counters of path's cuda_profiler_range X events into f (names into nm).
 * @return 0, a negative STROBE_E* code, or CLI_HTA_REPORTED after a message. */
static int read_counters(const char *path, ct_names *nm, ct_file *f) {
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, path, NULL);
    strobe_rd_item it;
    while (rc == 0 && (rc = strobe_rd_next(rd, &it)) > 0) {
        const strobe_rd_event *e = it.event;
        if (rc != STROBE_RD_EVENT) {
            rc = 0;
            continue;
        }
        rc = 0;
        if (e->bad || !e->has_dur || e->cat.s == NULL || strcmp(e->cat.s, CT_CAT) != 0) continue;
        if (f->n == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 64;
            ct_event *v = realloc(f->ev, cap * sizeof *v);
            if (v == NULL) {
                rc = STROBE_ENOMEM;
                break;
            }
            f->ev = v;
            f->cap = cap;
        }
        ct_event *c = &f->ev[f->n++];
        memset(c, 0, sizeof *c);
        c->index = e->index;
        if (e->args) rc = read_args(nm, c, e->args, e->args_len);
    }
    if (rc == STROBE_ERANGE) {
        fprintf(stderr, "strobe counters: %s: more than %d counters: more than a table holds\n",
                cli_esc(path), CLI_HTA_MAX_COLS - CT_FIXED);
        rc = CLI_HTA_REPORTED;
    } else if (rc < 0 && rc != STROBE_ENOMEM) {
        fprintf(stderr, "strobe counters: %s\n",
                cli_esc(rd && strobe_rd_errmsg(rd)[0] ? strobe_rd_errmsg(rd) : path));
        rc = CLI_HTA_REPORTED;
    }
    strobe_rd_close(rd);
    return rc;
}

static int by_ts(const void *a, const void *b) {
    const cli_hta_row *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

static int starts_with(const char *s, const char *p) {
    return strncmp(s, p, strlen(p)) == 0;
}

/* The kept rows of r (CPU rows and rows with a stream) for which want(m, ev) holds, sorted by
 * ts then file order, into *out. @return their number, or STROBE_ENOMEM. */
static long kept_rows(const cli_hta_rank *r, int (*want)(const md_model *, uint32_t),
                      cli_hta_row **out) {
    const md_model *m = &r->m;
    size_t n = 0, cap = 64;
    cli_hta_row *v = malloc(cap * sizeof *v), w;
    if (v == NULL) return STROBE_ENOMEM;
    for (int pass = 0; pass < 2; pass++) {
        size_t lim = pass ? r->count : 0;
        for (size_t i = 0; pass == 0 && cli_hta_cpu_next(r, &i, &w); i++) {
            if (!want(m, w.ev)) continue;
            if (n == cap) {
                cli_hta_row *g = realloc(v, (cap *= 2) * sizeof *v);
                if (g == NULL) {
                    free(v);
                    return STROBE_ENOMEM;
                }
                v = g;
            }
            v[n++] = w;
        }
        for (size_t k = 0; k < lim; k++) {
            if (!want(m, r->rows[k].ev)) continue;
            if (n == cap) {
                cli_hta_row *g = realloc(v, (cap *= 2) * sizeof *v);
                if (g == NULL) {
                    free(v);
                    return STROBE_ENOMEM;
                }
                v = g;
            }
            v[n] = r->rows[k];
            v[n++].mult = 1;
        }
    }
    cli_qsort(v, n, sizeof *v, by_ts);
    *out = v;
    return (long)n;
}

static int is_kernel(const md_model *m, uint32_t ev) {
    return strcmp(md_str(m, md_cat_of(m, ev)), CT_CAT) == 0;
}

static int is_launch(const md_model *m, uint32_t ev) {
    return starts_with(md_str(m, md_cat_of(m, ev)), "cuda_runtime") &&
           starts_with(md_str(m, md_name_of(m, ev)), "cudaLaunchKernel");
}

static int by_index(const void *a, const void *b) {
    const ct_event *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Text buffer that grows. */
typedef struct ct_buf {
    char *s;
    size_t len, cap;
} ct_buf;

static int buf_add(ct_buf *b, const char *s) {
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *g = realloc(b->s, cap);
        if (g == NULL) return STROBE_ENOMEM;
        b->s = g;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
    return 0;
}

/* The rows of rank r into t; the file's counters in f (sorted by index), names in order[]. */
static int rank_rows(const cli_hta_set *s, const cli_hta_rank *r, const ct_file *f,
                     const size_t *order, size_t nc, cli_hta_table *t) {
    const md_model *m = &r->m;
    cli_hta_row *kern = NULL, *launch = NULL;
    long nk = kept_rows(r, is_kernel, &kern);
    long nl = nk < 0 ? nk : kept_rows(r, is_launch, &launch);
    int rc = nk < 0 ? (int)nk : nl < 0 ? (int)nl : 0;
    if (rc == 0 && nk != nl) {
        fprintf(stderr,
                "strobe counters: %s: rank %" PRId64 ": %ld kernel launches but %ld " CT_CAT
                " kernels: they cannot be paired, so the rank gives no rows (as in HTA)\n",
                cli_esc(m->path), r->rank, nl, nk);
        nk = 0;
    }
    const char **cells = malloc((CT_FIXED + nc) * sizeof *cells);
    uint32_t *stack = malloc((m->count ? m->count : 1) * sizeof *stack);
    ct_buf ops = {0};
    if (rc == 0 && (cells == NULL || stack == NULL)) rc = STROBE_ENOMEM;
    for (long k = 0; rc == 0 && k < nk; k++) {
        const cli_hta_row *kw = &kern[k], *lw = &launch[k];
        /* The launch's cpu_op ancestors, innermost first, then sorted by ts (outermost first). */
        size_t depth = 0;
        for (uint32_t p = md_parent(m, lw->ev); p != MD_NONE; p = md_parent(m, p))
            if (strcmp(md_str(m, md_cat_of(m, p)), "cpu_op") == 0) stack[depth++] = p;
        cli_hta_row *sw = malloc((depth ? depth : 1) * sizeof *sw);
        if (sw == NULL) {
            rc = STROBE_ENOMEM;
            break;
        }
        for (size_t d = 0; d < depth; d++) {
            cli_hta_row_at(r, stack[d], &sw[d]);
            sw[d].mult = (uint32_t)(depth - d); /* outer first on equal ts */
        }
        for (size_t a = 1; a < depth; a++) /* insertion sort: ts, then outer first */
            for (size_t b = a; b > 0 && (sw[b].ts < sw[b - 1].ts ||
                                         (sw[b].ts == sw[b - 1].ts && sw[b].mult < sw[b - 1].mult));
                 b--) {
                cli_hta_row x = sw[b];
                sw[b] = sw[b - 1];
                sw[b - 1] = x;
            }
        ops.len = 0;
        if (buf_add(&ops, "")) rc = STROBE_ENOMEM;
        for (size_t d = 0; rc == 0 && d < depth; d++)
            if ((d && buf_add(&ops, ";")) || buf_add(&ops, md_str(m, md_name_of(m, sw[d].ev))))
                rc = STROBE_ENOMEM;
        char b[5][32];
        const md_event ke = md_at(m, kw->ev), le = md_at(m, lw->ev);
        snprintf(b[0], sizeof b[0], "%" PRId64, r->rank);
        snprintf(b[1], sizeof b[1], "%" PRIu32, ke.index);
        snprintf(b[2], sizeof b[2], "%" PRIu32, le.index);
        snprintf(b[3], sizeof b[3], "%" PRId64, kw->ts - s->min_ts);
        snprintf(b[4], sizeof b[4], "%" PRId64, kw->end - kw->ts);
        cells[0] = b[0];
        cells[1] = b[1];
        cells[2] = b[2];
        cells[3] = md_str(m, ke.name);
        cells[4] = md_str(m, ke.cat);
        cells[5] = b[3];
        cells[6] = b[4];
        cells[7] = ops.s;
        cells[8] = depth ? md_str(m, md_name_of(m, sw[0].ev)) : "";
        cells[9] = depth ? md_str(m, md_name_of(m, sw[depth - 1].ev)) : "";
        ct_event key = {ke.index, NULL, 0};
        const ct_event *ce = f->n ? bsearch(&key, f->ev, f->n, sizeof *f->ev, by_index) : NULL;
        for (size_t c = 0; c < nc; c++) {
            size_t id = order[c];
            const char *v = ce && id < ce->nvalues ? ce->values[id] : NULL;
            cells[CT_FIXED + c] = v ? v : "-1";
        }
        if (rc == 0) rc = cli_hta_table_add(t, cells);
        free(sw);
    }
    free(ops.s);
    free(cells);
    free(stack);
    free(kern);
    free(launch);
    return rc;
}

static const ct_names *g_names;

static int by_name(const void *a, const void *b) {
    return strcmp(g_names->v[*(const size_t *)a], g_names->v[*(const size_t *)b]);
}

static int run(const cli_hta_set *s, int format) {
    ct_names nm = {0};
    ct_file *files = calloc(s->count ? s->count : 1, sizeof *files);
    size_t *order = NULL;
    const char **cols = NULL;
    uint8_t *text = NULL;
    int rc = files ? 0 : STROBE_ENOMEM, any = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++) {
        const md_model *m = &s->ranks[k].m;
        int has = 0;
        for (size_t i = 0; i < m->count && !has; i++)
            has = is_kernel(m, (uint32_t)i);
        any |= has;
        if (has) rc = read_counters(m->path, &nm, &files[k]);
        if (rc == 0 && files[k].n)
            cli_qsort(files[k].ev, files[k].n, sizeof *files[k].ev, by_index);
    }
    if (rc == 0) {
        order = malloc((nm.n + 1) * sizeof *order);
        cols = malloc((CT_FIXED + nm.n) * sizeof *cols);
        text = calloc(CT_FIXED + nm.n, 1);
        if (order == NULL || cols == NULL || text == NULL) rc = STROBE_ENOMEM;
    }
    if (rc == 0) {
        for (size_t c = 0; c < nm.n; c++)
            order[c] = c;
        g_names = &nm;
        cli_qsort(order, nm.n, sizeof *order, by_name);
        for (size_t c = 0; c < CT_FIXED; c++) {
            cols[c] = fixed_cols[c];
            text[c] = fixed_text[c];
        }
        for (size_t c = 0; c < nm.n; c++)
            cols[CT_FIXED + c] = nm.v[order[c]];
    }
    cli_hta_table t = {cols, text, CT_FIXED + nm.n, NULL, 0, 0};
    for (size_t k = 0; rc == 0 && any && k < s->count; k++)
        rc = rank_rows(s, &s->ranks[k], &files[k], order, nm.n, &t);
    if (rc == 0 && !any)
        fprintf(stderr, "strobe counters: no events of cat " CT_CAT
                        " (was the trace taken in CUPTI's profiler mode?)\n");
    if (rc == 0) cli_hta_table_print(&t, format, stdout);
    cli_hta_table_free(&t);
    for (size_t k = 0; files && k < s->count; k++)
        file_free(&files[k]);
    free(files);
    for (size_t k = 0; k < nm.n; k++)
        free(nm.v[k]);
    free(nm.v);
    free(order);
    free(cols);
    free(text);
    return rc;
}

int cmd_counters(int argc, char **argv) {
    int format = CLI_TABLE, quiet = 0, first = 0;
    for (int o; (o = cli_getopt(argc, argv, ":f:j:qhV", cmd_counters_options, &first)) != -1;) {
        if (o == 'h') return cli_help(cmd_counters_usage);
        if (o == 'V') return cli_version();
        if (o == 'q') {
            quiet = 1;
        } else if (o == 'j') {
            int rc = cli_parse_jobs("counters", optarg);
            if (rc) return rc;
        } else if (o == 'f') {
            format = cli_parse_format(optarg);
            if (format < 0) return cli_usage_error("counters", "unknown --format", optarg);
        } else {
            return cli_option_error("counters", o, argv, cmd_counters_options);
        }
    }
    if (first >= argc) return cli_usage_error("counters", "give a trace or a folder", NULL);
    for (int k = first; k < argc; k++)
        if (strcmp(argv[k], "-") == 0)
            return cli_usage_error("counters", "the trace is read twice: give a file, not", "-");
    cli_hta_set s;
    if (cli_hta_load(&s, "counters", argv + first, (size_t)(argc - first), quiet) != 0)
        return CLI_BAD_INPUT;
    int work = run(&s, format);
    cli_hta_free(&s);
    if (work == CLI_HTA_REPORTED) return CLI_BAD_INPUT;
    return cli_finish("counters", argc - first == 1 ? argv[first] : "traces", work, CLI_OK);
}
