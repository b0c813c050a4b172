/* cmd_annotations.c: `strobe annotations`, HTA's user-annotation breakdown per rank
 * (BreakdownAnalysis.get_gpu_user_annotation_breakdown in hta/analyzers/breakdown_analysis.py).
 *
 * HTA's definition, as its docstring and its test (tests/test_trace_analysis.py,
 * __test_gpu_user_annotation_common) give it, over each rank's rows after the restriction (see
 * hta.h): the rows whose cat is "gpu_user_annotation" (use_gpu_annotation, the default) or
 * "user_annotation" (--cpu: the time on the CPU), grouped by name as _aggr_gpu_kernel_time groups
 * kernels (duration_ratio 0.8, num_kernels 1000 by default, -n): per name sum, max, min, mean and
 * std (n - 1; 0 for one row) of dur, sorted by sum (descending); with more than num_kernels
 * names, those whose cumulated sum passes its duration_ratio quantile (numpy's linear one), and
 * all from the (num_kernels + 1)-th on, become one row "others" over their sums (the names kept
 * then show their sum as max, min and mean, std 0). All rows sorted by name and rank; columns
 * name, sum (us), max (us), min (us), mean (us), stddev, rank (HTA's names; times are the
 * trace's microseconds). A rank without such rows has none; where no rank has one HTA returns
 * None: no row, and standard error says so.
 *
 * allowlist_patterns (--allowlist, repeatable): HTA passes the names that match any of the
 * patterns to _aggr_gpu_kernel_time as allowlist_names, whose names "will not be aggregated into
 * 'other'" (its docstring). That function's body (as a copy of it in the stored sources has it)
 * marks a name "others" when it is past the quantile or the num_kernels-th AND not in
 * allowlist_names (name.isin), the quantile being over all names' cumulated sums; so:
 *   - a matching name is exempt from both rules that make "others": it is kept, shown as the
 *     other kept names are (its sum as max, min and mean, std 0);
 *   - with num_kernels names or fewer nothing is aggregated and the allowlist changes nothing.
 * How get_gpu_user_annotation_breakdown turns patterns into names is not in the sources read
 * here (its docstring: "match any of the patterns ... strings as well as regular expressions");
 * strobe takes a name to match when the pattern is found anywhere in it (Python's re.search, as
 * pandas' str.contains that HTA's test counts with), case-sensitive. The patterns are POSIX
 * extended regular expressions here (Python's \d, \w, lazy quantifiers... are not).
 * HTA's test (the shared trace hta_ns_resolution_rank0, --cpu -n 5 --allowlist Optimizer: 8 rows,
 * "5 original + 2 for Optimizer + 1 others", 2 names with "Optimizer") holds under this rule
 * (check_hta.py checks it), and fails if the allowlist were exempt from the num_kernels rule
 * only (7 rows) or matched case-insensitively (9 rows, "## optimizer ##" too).
 *
 * Not done: HTA's decompose_nested_annotations option, whose definition is not in the sources
 * read here (see above); strobe does not guess it.
 *
 * --kernels: HTA's get_gpu_kernels_with_user_annotations(rank, expand_names, shortern_names)
 * (BreakdownAnalysis in hta/analyzers/breakdown_analysis.py, with its helpers
 * _get_gpu_kernel_interval_dataframe, _get_gpu_user_anno_interval_dataframe and
 * _associate_gpu_kernels_with_user_annotations), over the rank's rows after the restriction:
 *   - the kernels: GPUKernelFilter's rows (cli_hta_is_gpu_row: stream >= 0 and correlation >= 0, or
 *     "Event Sync" / "Context Sync"), each [ts, end) closed on the left;
 *   - the annotations: the rows of cat "gpu_user_annotation", [ts, end) closed on the left,
 *     sorted by dur, longest first, and walked in that order per (pid, tid): every kernel with
 *     the annotation's pid and tid whose interval overlaps it (pandas' IntervalIndex.overlaps of
 *     two left-closed intervals: k.ts < a.end and a.ts < k.end) takes its name, so the shortest
 *     (the leaf of nested ones) is the one a kernel keeps. Annotations of equal dur: pandas'
 *     sort is not stable, so HTA's order is not defined; strobe walks them in file order (the
 *     later one wins, a choice);
 *   - a kernel under no annotation has user_annotation -1, whose name HTA decodes as "";
 *   - expand_names (always here: strobe has no symbol ids to print): s_name, s_cat and
 *     s_user_annotation are the names, shortened by HTA's shorten_name (hta/utils/utils.py:
 *     "->" removed, <...> and (...) removed innermost first, then the text after the last
 *     space) unless --full-names (shortern_names=False);
 *   - no rank has a gpu_user_annotation (HTA's symbol table is shared by the ranks): HTA
 *     returns None; no row, and standard error says so.
 * Columns kept (HTA's names): ts, dur, end (ts and end aligned to the traces' first row, as
 * HTA's _align_all_ranks does), pid, tid, stream, correlation, s_name, s_cat,
 * s_user_annotation; HTA's integer symbol columns (name, cat, user_annotation) and its other
 * trace columns (index, iteration, ...) are left out. Rows in ts order (then file order; a
 * kernel the restriction keeps twice is two rows, as in HTA's merge). */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "strobe/error.h"

const char cmd_annotations_usage[] =
    "NAME\n"
    "    strobe annotations - HTA's GPU (or CPU) user-annotation breakdown per rank\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe annotations [OPTIONS] TRACE...\n"
    "    strobe annotations [--cpu] [-n K] [--allowlist PATTERN]... [-f table|csv|json] [-q]\n"
    "                       TRACE...\n"
    "    strobe annotations --kernels [--rank R] [--full-names] [-f table|csv|json] [-q]\n"
    "                       TRACE...\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's get_gpu_user_annotation_breakdown(), with its definitions.\n"
    "    TRACE is a trace, or a folder of rank traces, read as strobe breakdown reads them\n"
    "    (ranks, HTA's times in microseconds, its profiler-step restriction).\n"
    "\n"
    "    Per rank, the user annotations on the GPU (cat gpu_user_annotation; with --cpu those\n"
    "    on the CPU, cat user_annotation) by name: sum, max, min, mean and standard deviation\n"
    "    of their durations. With more than K names, those past the 80% quantile of the\n"
    "    cumulated time, and all past the K longest, are one row \"others\" over their sums,\n"
    "    but for the names an --allowlist pattern matches, which are kept. Rows sorted by\n"
    "    name and rank. No annotation at all: no row, and standard error says so.\n"
    "\n"
    "    With --kernels, HTA's get_gpu_kernels_with_user_annotations(): every GPU kernel of\n"
    "    one rank (stream and correlation >= 0, or Event Sync / Context Sync) with the GPU\n"
    "    user annotation it runs in: of the annotations on its pid and tid that overlap it\n"
    "    ([ts, end) intervals), the shortest (the innermost of nested ones); \"\" for none.\n"
    "    Columns ts, dur, end (microseconds; ts and end from the traces' first event), pid,\n"
    "    tid, stream, correlation, s_name, s_cat, s_user_annotation; names shortened as HTA\n"
    "    shortens them (no <...> or (...), the last word) unless --full-names. Rows by ts.\n"
    "\n"
    "OPTIONS\n"
    "    --cpu          the annotations' time on the CPU (HTA's use_gpu_annotation=False)\n"
    "    -n, --num K    names kept before \"others\" (HTA's num_kernels; default 1000)\n"
    "    --allowlist PATTERN\n"
    "                   never put a name that PATTERN (a POSIX extended regular expression,\n"
    "                   found anywhere in the name, case-sensitive) matches into \"others\"\n"
    "                   (HTA's allowlist_patterns); may be given several times\n"
    "    --kernels      the kernels of a rank with their annotation, not the breakdown\n"
    "    --rank R       with --kernels: the rank (default: the first)\n"
    "    --full-names   with --kernels: the names as the trace has them (HTA's\n"
    "                   shortern_names=False)\n"
    "    -f, --format F table (default), csv or json (an array of rows keyed by HTA's column\n"
    "                   names: name, sum (us), max (us), min (us), mean (us), stddev, rank;\n"
    "                   with --kernels those listed above)\n"
    // clang-format off
    CLI_JOBS_USAGE
    CLI_HTA_USAGE_STD_OPTIONS
    // clang-format on
    "    0 success; 2 bad input (a trace cannot be read, ranks or jobs do not fit, no such\n"
    "    rank) or usage.\n";

const struct option cmd_annotations_options[] = {
    {"cpu", no_argument, NULL, 'C'},
    {"num", required_argument, NULL, 'n'},
    {"allowlist", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"kernels", no_argument, NULL, CLI_LONG_ONLY + 2},
    {"rank", required_argument, NULL, CLI_LONG_ONLY + 3},
    {"full-names", no_argument, NULL, CLI_LONG_ONLY + 4},
    {"format", required_argument, NULL, 'f'},
    CLI_OPTION_JOBS,
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

#define AN_RATIO 0.8

typedef struct an_args {
    int cpu;        /* --cpu */
    size_t num;     /* -n */
    regex_t *allow; /* --allowlist, compiled */
    size_t nallow, cap;
    int kernels;    /* --kernels */
    int has_rank;   /* --rank given */
    int64_t rank;   /* --rank */
    int full_names; /* --full-names */
    int has_num;    /* -n given */
} an_args;

/* Whether an --allowlist pattern matches name. */
static int allowed(const an_args *a, const char *name) {
    for (size_t k = 0; k < a->nallow; k++)
        if (regexec(&a->allow[k], name, 0, NULL, 0) == 0) return 1;
    return 0;
}

/* A name's row of one rank. */
typedef struct an_row {
    cli_hta_named s;
    int64_t rank;
} an_row;

static int by_name_rank(const void *a, const void *b) {
    const an_row *x = a, *y = b;
    int c = strcmp(x->s.name, y->s.name);
    if (c) return c;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* cli_hta_name_others's keep: names an --allowlist pattern finds. */
static int keep_allowed(const void *ctx, const char *name) {
    return allowed(ctx, name);
}

/* Whether a row of the rank is one of the annotations asked for. */
static int is_annotation(const cli_hta_rank *r, const cli_hta_row *w, const char *cat) {
    return strcmp(md_str(&r->m, md_cat_of(&r->m, w->ev)), cat) == 0;
}

/* One rank's rows, appended to *out. */
static int rank_rows(const cli_hta_rank *r, const an_args *a, an_row **out, size_t *nout,
                     size_t *cap) {
    const char *cat = a->cpu ? "user_annotation" : "gpu_user_annotation";
    size_t num = a->num;
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        cli_hta_row cw;
        for (size_t k = 0, j = 0; pass ? k < r->count : cli_hta_cpu_next(r, &j, &cw); k++, j++) {
            const cli_hta_row *w = pass ? &r->rows[k] : &cw;
            if (is_annotation(r, w, cat)) n += w->mult;
        }
    }
    if (n == 0) return 0;
    cli_hta_dur *d = malloc(n * sizeof *d);
    int64_t *v = malloc(n * sizeof *v);
    cli_hta_named *names = malloc(n * sizeof *names);
    int rc = d && v && names ? 0 : STROBE_ENOMEM;
    size_t nn = 0, j = 0;
    for (int pass = 0; !rc && pass < 2; pass++) {
        cli_hta_row cw;
        for (size_t k = 0, i = 0; pass ? k < r->count : cli_hta_cpu_next(r, &i, &cw); k++, i++) {
            const cli_hta_row *w = pass ? &r->rows[k] : &cw;
            if (!is_annotation(r, w, cat)) continue;
            for (uint32_t m = 0; m < w->mult; m++)
                d[j++] = (cli_hta_dur){md_str(&r->m, md_name_of(&r->m, w->ev)), w->end - w->ts};
        }
    }
    if (!rc) nn = cli_hta_name_table(d, n, v, names);
    long rows = rc ? 0 : cli_hta_name_others(names, nn, v, num, AN_RATIO, keep_allowed, a);
    if (rows < 0) rc = (int)rows;
    for (size_t k = 0; !rc && k < (size_t)rows; k++) {
        if (*nout == *cap) {
            size_t ncap = *cap ? *cap * 2 : 32;
            an_row *o = realloc(*out, ncap * sizeof *o);
            if (o == NULL) {
                rc = STROBE_ENOMEM;
                break;
            }
            *out = o;
            *cap = ncap;
        }
        (*out)[*nout].s = names[k];
        (*out)[(*nout)++].rank = r->rank;
    }
    free(d);
    free(v);
    free(names);
    return rc;
}

/* ---- --kernels ----------------------------------------------------------------------------- */

/* A kernel (GPUKernelFilter's row) and the annotation it takes. */
typedef struct an_kernel {
    cli_hta_row w;
    uint32_t thread;
    uint32_t ann; /* the annotation's event, or UINT32_MAX (HTA's -1) */
} an_kernel;

/* A gpu_user_annotation row: [ts, end) on its thread (pid, tid). */
typedef struct an_anno {
    cli_hta_row w;
    uint32_t thread;
} an_anno;

static int by_ts_ev(const void *a, const void *b) {
    const an_kernel *x = a, *y = b;
    if (x->w.ts != y->w.ts) return x->w.ts < y->w.ts ? -1 : 1;
    return (x->w.ev > y->w.ev) - (x->w.ev < y->w.ev);
}

/* HTA's walk order: dur, longest first; equal durs in file order (a choice, see the top). */
static int by_dur_desc(const void *a, const void *b) {
    const an_anno *x = a, *y = b;
    int64_t dx = x->w.end - x->w.ts, dy = y->w.end - y->w.ts;
    if (dx != dy) return dx > dy ? -1 : 1;
    return (x->w.ev > y->w.ev) - (x->w.ev < y->w.ev);
}

/* Whether the traces hold a gpu_user_annotation row (HTA's shared symbol table has the name). */
static int any_gpu_annotation(const cli_hta_set *s) {
    for (size_t k = 0; k < s->count; k++) {
        const md_model *m = &s->ranks[k].m;
        for (uint32_t i = 0; i < m->count; i++) {
            md_event e = md_at(m, i);
            if (cli_hta_is_row(m, &e) && strcmp(md_str(m, e.cat), "gpu_user_annotation") == 0)
                return 1;
        }
    }
    return 0;
}

/* A pid or tid cell: its number; empty (null) for a string or absent id. */
static cli_hta_cell id_cell(int64_t v, uint8_t kind) {
    return kind == MD_ID_NUM ? CLI_HTA_INT(v) : CLI_HTA_TEXT("");
}

/* A symbol column's text: the name, shortened unless full (buf: room for strlen(name) + 1). */
static const char *sym(const char *name, int full, char *buf) {
    if (full) return name;
    cli_hta_shorten_name(name, buf);
    return buf;
}

/* The rank's kernels, rows of t (see the top of the file). */
static int kernel_rows(const cli_hta_set *s, const cli_hta_rank *r, const an_args *a,
                       cli_hta_table *t) {
    const md_model *m = &r->m;
    an_kernel *ks = NULL;
    an_anno *as = NULL;
    size_t nk = 0, na = 0, ck = 0, ca = 0;
    int rc = 0;
    for (int pass = 0; !rc && pass < 2; pass++) {
        cli_hta_row cw;
        for (size_t k = 0, j = 0; !rc && (pass ? k < r->count : cli_hta_cpu_next(r, &j, &cw));
             k++, j++) {
            const cli_hta_row *w = pass ? &r->rows[k] : &cw;
            md_event e = md_at(m, w->ev);
            int anno = strcmp(md_str(m, e.cat), "gpu_user_annotation") == 0;
            int kern = cli_hta_is_gpu_row(m, &e);
            if (anno) {
                if (na == ca) {
                    size_t nc = ca ? 2 * ca : 64;
                    an_anno *g = realloc(as, nc * sizeof *g);
                    if (g == NULL) {
                        rc = STROBE_ENOMEM;
                        break;
                    }
                    as = g;
                    ca = nc;
                }
                as[na++] = (an_anno){*w, e.thread};
            }
            if (kern) {
                if (nk == ck) {
                    size_t nc = ck ? 2 * ck : 64;
                    an_kernel *g = realloc(ks, nc * sizeof *g);
                    if (g == NULL) {
                        rc = STROBE_ENOMEM;
                        break;
                    }
                    ks = g;
                    ck = nc;
                }
                ks[nk++] = (an_kernel){*w, e.thread, UINT32_MAX};
            }
        }
    }
    if (!rc && nk > 1) cli_qsort(ks, nk, sizeof *ks, by_ts_ev);
    if (!rc && na > 1) cli_qsort(as, na, sizeof *as, by_dur_desc);
    /* _associate_gpu_kernels_with_user_annotations: each annotation in turn names the kernels of
     * its pid and tid that overlap it; the last to do so (the shortest) stays. Kernels are by
     * ts, so those that start before the annotation ends are a prefix. */
    for (size_t i = 0; !rc && i < na; i++)
        for (size_t k = 0; k < nk && ks[k].w.ts < as[i].w.end; k++)
            if (ks[k].thread == as[i].thread && as[i].w.ts < ks[k].w.end) ks[k].ann = as[i].w.ev;
    char *buf = NULL;
    size_t cap = 0;
    for (size_t k = 0; !rc && k < nk; k++) {
        md_event e = md_at(m, ks[k].w.ev);
        const md_thread *th = &m->threads[ks[k].thread];
        const char *name = md_str(m, e.name), *cat = md_str(m, e.cat);
        const char *ann = ks[k].ann == UINT32_MAX ? "" : md_str(m, md_name_of(m, ks[k].ann));
        size_t ln = strlen(name) + 1, lc = strlen(cat) + 1, need = ln + lc + strlen(ann) + 1;
        if (need > cap) {
            char *g = realloc(buf, need);
            if (g == NULL) {
                rc = STROBE_ENOMEM;
                break;
            }
            buf = g;
            cap = need;
        }
        const char *sn = sym(name, a->full_names, buf), *sc = sym(cat, a->full_names, buf + ln),
                   *sa = sym(ann, a->full_names, buf + ln + lc);
        int64_t ts = ks[k].w.ts, end = ks[k].w.end;
        for (uint32_t c = 0; !rc && c < ks[k].w.mult; c++)
            rc = CLI_HTA_ROW(t, CLI_HTA_INT(ts - s->min_ts), CLI_HTA_INT(end - ts),
                             CLI_HTA_INT(end - s->min_ts), id_cell(th->pid, th->pid_kind),
                             id_cell(th->tid, th->tid_kind), CLI_HTA_INT(e.stream),
                             CLI_HTA_INT(e.corr), CLI_HTA_TEXT(sn), CLI_HTA_TEXT(sc),
                             CLI_HTA_TEXT(sa));
    }
    free(buf);
    free(ks);
    free(as);
    return rc;
}

static const char *const kcols[] = {
    "ts",     "dur",         "end",    "pid",   "tid",
    "stream", "correlation", "s_name", "s_cat", "s_user_annotation"};
static const uint8_t ktext[10] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1};

static int run_kernels(const cli_hta_set *s, const an_args *a, cli_hta_table *t) {
    const cli_hta_rank *r = NULL;
    for (size_t k = 0; k < s->count && r == NULL; k++)
        if (!a->has_rank || s->ranks[k].rank == a->rank) r = &s->ranks[k];
    if (r == NULL) {
        fprintf(stderr, "strobe annotations: no rank %" PRId64 " in the traces\n", a->rank);
        return CLI_HTA_REPORTED;
    }
    t->cols = kcols;
    t->text = ktext;
    t->ncols = sizeof kcols / sizeof *kcols;
    if (!any_gpu_annotation(s)) {
        fprintf(stderr, "strobe annotations: no gpu_user_annotation event in the traces (HTA "
                        "returns None)\n");
        return 0;
    }
    return kernel_rows(s, r, a, t);
}

static int run(const cli_hta_set *s, void *ctx, cli_hta_table *t) {
    const an_args *a = ctx;
    if (a->kernels && (a->cpu || a->has_num || a->nallow)) {
        fprintf(stderr, "strobe annotations: --cpu, --num and --allowlist are the breakdown's, "
                        "not --kernels' (strobe annotations --help)\n");
        return CLI_HTA_REPORTED;
    }
    if (!a->kernels && (a->has_rank || a->full_names)) {
        fprintf(stderr, "strobe annotations: --rank and --full-names go with --kernels "
                        "(strobe annotations --help)\n");
        return CLI_HTA_REPORTED;
    }
    if (a->kernels) return run_kernels(s, a, t);
    const char *cat = a->cpu ? "user_annotation" : "gpu_user_annotation";
    an_row *rows = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->count; k++)
        rc = rank_rows(&s->ranks[k], a, &rows, &n, &cap);
    if (rc == 0 && n > 1) cli_qsort(rows, n, sizeof *rows, by_name_rank);
    for (size_t k = 0; rc == 0 && k < n; k++)
        rc = CLI_HTA_ROW(t, CLI_HTA_TEXT(rows[k].s.name), CLI_HTA_INT(rows[k].s.sum),
                         CLI_HTA_INT(rows[k].s.max), CLI_HTA_INT(rows[k].s.min),
                         CLI_HTA_NUM(rows[k].s.mean), CLI_HTA_NUM(rows[k].s.std),
                         CLI_HTA_INT(rows[k].rank));
    if (rc == 0 && n == 0)
        fprintf(stderr, "strobe annotations: no %s event in the traces (HTA returns None)\n", cat);
    free(rows);
    return rc;
}

static int option(void *ctx, int c, const char *arg) {
    an_args *a = ctx;
    if (c == 'C') {
        a->cpu = 1;
    } else if (c == 'n') {
        char *end;
        errno = 0;
        long long v = strtoll(arg, &end, 10);
        if (errno || end == arg || *end || v < 0)
            return cli_usage_error("annotations", "--num needs a number", arg);
        a->num = (size_t)v;
        a->has_num = 1;
    } else if (c == CLI_LONG_ONLY + 2) {
        a->kernels = 1;
    } else if (c == CLI_LONG_ONLY + 3) {
        unsigned long long v;
        if (cli_parse_count("annotations", "--rank", arg, INT64_MAX, &v)) return CLI_BAD_INPUT;
        a->rank = (int64_t)v;
        a->has_rank = 1;
    } else if (c == CLI_LONG_ONLY + 4) {
        a->full_names = 1;
    } else if (c == CLI_LONG_ONLY + 1) {
        if (a->nallow == a->cap) {
            size_t cap = a->cap ? 2 * a->cap : 4;
            regex_t *g = realloc(a->allow, cap * sizeof *g);
            if (g == NULL) return cli_usage_error("annotations", "out of memory", NULL);
            a->allow = g;
            a->cap = cap;
        }
        int rc = regcomp(&a->allow[a->nallow], arg, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[128], msg[192];
            regerror(rc, &a->allow[a->nallow], why, sizeof why);
            snprintf(msg, sizeof msg, "bad --allowlist pattern (%s)", why);
            return cli_usage_error("annotations", msg, arg);
        }
        a->nallow++;
    } else {
        return CLI_HTA_UNKNOWN_OPTION;
    }
    return 0;
}

static const char *const cols[] = {"name",      "sum (us)", "max (us)", "min (us)",
                                   "mean (us)", "stddev",   "rank"};
static const uint8_t text[7] = {1, 0, 0, 0, 0, 0, 0};

static const cli_hta_command command = {"annotations",
                                        cmd_annotations_usage,
                                        cmd_annotations_options,
                                        ":f:n:j:qhV",
                                        option,
                                        run,
                                        {{NULL, cols, text, 7}},
                                        1};

int cmd_annotations(int argc, char **argv) {
    an_args a = {0, 1000, NULL, 0, 0, 0, 0, 0, 0, 0};
    int rc = cli_hta_main(&command, &a, argc, argv);
    for (size_t k = 0; k < a.nallow; k++)
        regfree(&a.allow[k]);
    free(a.allow);
    return rc;
}
