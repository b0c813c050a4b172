/* cmd_overlay.c: `strobe overlay TRACE -o OUT`: a copy of a rank's trace with HTA's time series
 * added as counter events (TraceAnalysis.generate_trace_with_counters in hta/trace_analysis.py,
 * the events made by Trace.convert_time_series_to_events in hta/common/trace.py).
 *
 * Contents: the usage text; the counter events (HTA's names, args and ids); the copy (written by
 * the merge's writer, counters spliced into its event array); the command.
 *
 * The counters, as HTA writes them: the queue length series (series.h) as events named "Queue
 * Length", args {"Queue Length": N}, with the pid of the stream's work and "id" the stream (HTA
 * renames the series' stream column to id, which tells the streams' counters apart); the memory
 * bandwidth series as events named by the kind ("Memcpy HtoD" ...), args {"Memcpy BW": GB/s},
 * with the copy's pid. ts is the series' (HTA's whole microseconds) on the trace's own time base,
 * as HTA adds back the time it took off (a trace without baseTimeNanoseconds gets one in the copy,
 * a whole second, and the counters' ts move with the other events'). HTA's current
 * convert_time_series_to_events keeps no tid; its earlier one kept the series' tid (the stream's
 * work for the queue length, 0 for the bandwidth), which is written here, as every viewer wants a
 * tid.
 *
 * The copy. HTA writes the trace back as it read it, events that do not nest included, which
 * viewers refuse; here the trace is copied through strobe merge's writer (cli_merge_ex: one
 * input, its pids kept, its times on its own base, its top-level members carried over), which
 * writes every event as a viewer takes it, and the counter events are spliced in before the end
 * of its event array (the writer's own text: one event per line, the array closed by a line
 * "  ]"). The copy is written beside OUT and renamed over it: a failure leaves no partial file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"
#include "common.h"
#include "hta.h"
#include "merge.h"
#include "reader/trace_reader.h"
#include "series.h"
#include "strobe/error.h"
#include "util/json_fmt.h"
#include "util/pftrace_enc.h"

const char cmd_overlay_usage[] =
    "NAME\n"
    "    strobe overlay - a copy of a trace with HTA's queue length and bandwidth counters\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe overlay [OPTIONS] TRACE -o OUT\n"
    "    strobe overlay [OPTIONS] TRACE OUT\n"
    "\n"
    "DESCRIPTION\n"
    "    Holistic Trace Analysis's generate_trace_with_counters(): writes OUT, a copy of TRACE\n"
    "    (one rank's trace, a file: not standard input, which is read more than once) with\n"
    "    counter events (ph \"C\") added for the time series of strobe queue --series and\n"
    "    strobe memory-bw --series, named as HTA names them:\n"
    "\n"
    "      \"Queue Length\"  one series per stream, told apart by the event's \"id\" (the\n"
    "                      stream), on the pid and tid of the stream's work; args\n"
    "                      {\"Queue Length\": N}\n"
    "      \"Memcpy HtoD\", \"Memcpy DtoH\", \"Memcpy DtoD\", \"Memset\" ...\n"
    "                      one series per kind of copy, on the copy's pid, tid 0; args\n"
    "                      {\"Memcpy BW\": GB/s}\n"
    "\n"
    "    ts is HTA's (the trace's whole microseconds) on the trace's own time base (a trace\n"
    "    without baseTimeNanoseconds gets one, a whole second before its events, as strobe\n"
    "    merge gives it one, and every ts moves with it). The copy\n"
    "    is written by strobe's JSON writer, as strobe merge writes one trace: every event,\n"
    "    arg, flow, name and top-level member is kept, and events that do not nest are written\n"
    "    so that viewers take them (as strobe merge says). OUT is JSON, gzip-compressed when it\n"
    "    ends in \".gz\"; it is written beside OUT and renamed over it when complete. OUT may\n"
    "    not be TRACE.\n"
    "\n"
    "OPTIONS\n"
    "    -o, --output OUT  the output (instead of the second operand)\n"
    "    --series LIST  which series: queue, memory-bw, or both (default), comma-separated\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 written; 2 bad input (a trace that cannot be read, a folder, standard input, OUT\n"
    "    the same file as TRACE), usage, or an output error.\n";

const struct option cmd_overlay_options[] = {
    {"output", required_argument, NULL, 'o'},
    {"series", required_argument, NULL, CLI_LONG_ONLY + 1},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

enum { WANT_QUEUE = 1, WANT_BW = 2 };

/* --series LIST. @return the WANT_* bits, or 0 (bad). */
static int parse_series(const char *s) {
    int bits = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n == 5 && strncmp(s, "queue", 5) == 0)
            bits |= WANT_QUEUE;
        else if (n == 9 && strncmp(s, "memory-bw", 9) == 0)
            bits |= WANT_BW;
        else
            return 0;
        s += n;
        if (*s == ',' && *++s == '\0') return 0;
    }
    return bits;
}

/* ---- the counter events ---------------------------------------------------------------------- */

typedef struct text {
    char *p;
    size_t n, cap;
    int oom;
} text;

static void put(text *t, const char *s, size_t n) {
    if (t->oom) return;
    if (t->n + n + 1 > t->cap) {
        size_t c = t->cap ? t->cap : 4096;
        while (c < t->n + n + 1)
            c *= 2;
        char *g = realloc(t->p, c);
        if (g == NULL) {
            t->oom = 1;
            return;
        }
        t->p = g;
        t->cap = c;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
}

static void putf(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(text *t, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) put(t, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* The counter events of rank r, each on a line of its own starting with ",\n  ". @return 0,
 * CLI_HTA_REPORTED or a STROBE_E* code. */
static int counter_events(const cli_hta_set *s, const cli_hta_rank *r, int want, int64_t shift_us,
                          text *t, size_t *nq, size_t *nb) {
    int rc = 0;
    if (want & WANT_QUEUE) {
        cli_hta_queue q;
        rc = cli_hta_queue_series(s, r, &q);
        for (size_t i = 0; rc == 0 && i < q.n; i++)
            putf(t,
                 ",\n  {\"ph\": \"C\", \"name\": \"Queue Length\", \"pid\": %" PRId64
                 ", \"tid\": %" PRId64 ", \"ts\": %" PRId64 ", \"id\": %" PRId64
                 ", \"args\": {\"Queue Length\": %" PRId64 "}}",
                 q.p[i].pid, q.p[i].tid, q.p[i].ts - shift_us, q.p[i].stream, q.p[i].len);
        if (rc == 0 && q.unlaunched)
            fprintf(stderr,
                    "strobe overlay: %" PRIu64 " kernel%s without their launch: not counted in "
                    "the queue lengths (HTA counts a kernel only from its launch)\n",
                    q.unlaunched, q.unlaunched == 1 ? "" : "s");
        *nq = q.n;
        cli_hta_queue_free(&q);
    }
    if (rc == 0 && (want & WANT_BW)) {
        cli_hta_bw_arg *a;
        size_t na;
        rc = cli_hta_bw_args("overlay", r->m.path, &a, &na);
        if (rc && rc != STROBE_ENOMEM) return CLI_HTA_REPORTED;
        cli_hta_bw b;
        if (rc == 0) rc = cli_hta_bw_series(s, r, a, na, &b);
        free(a);
        for (size_t i = 0; rc == 0 && i < b.n; i++) {
            char v[STROBE__JSON_DOUBLE_MAX + 1];
            *strobe__json_put_double(v, b.p[i].gbps) = '\0';
            putf(t,
                 ",\n  {\"ph\": \"C\", \"name\": \"%s\", \"pid\": %" PRId64
                 ", \"tid\": 0, \"ts\": %" PRId64 ", \"args\": {\"Memcpy BW\": %s}}",
                 b.kinds[b.p[i].kind], b.p[i].pid, b.p[i].ts - shift_us, v);
        }
        if (rc == 0) *nb = b.n;
        if (rc == 0) cli_hta_bw_free(&b);
    }
    if (rc == 0 && t->oom) rc = STROBE_ENOMEM;
    return rc;
}

/* ---- the copy -------------------------------------------------------------------------------- */

/* The input's top-level members that the merge does not carry itself, as keys and JSON values
 * (malloc'd, *n of them), and its deviceProperties (*props, malloc'd; NULL: none), which the
 * JSON writer takes only before its first event (its header), too early for the merge to give
 * it. @return 0 or a negative STROBE_E* (said on stderr). */
static int top_members(const char *path, char ***keys, char ***values, size_t *n, char **props) {
    /* Written by the writer, or carried by the merge (merge.c). */
    static const char *const skip[] = {
        "schemaVersion",       "deviceProperties", "trace_id",          "displayTimeUnit",
        "baseTimeNanoseconds", "traceEvents",      "traceName",         "strobe",
        "distributedInfo",     "strobe_job",       "strobe_clock_sync", "strobe_heap",
        "strobe_perf_events",  "strobe_stream",    "strobe_gpu_clock",  "strobe_cpu_sampling",
        "strobe_merge"};
    *keys = *values = NULL;
    *n = 0;
    strobe_rd_options opt;
    strobe_rd_options_init(&opt);
    strobe_rd *rd = NULL;
    int rc = strobe_rd_open(&rd, path, &opt);
    strobe_rd_item item;
    size_t cap = 0;
    while (rc == 0 && (rc = strobe_rd_next(rd, &item)) > 0) {
        rc = 0;
        if (item.kind != STROBE_RD_META || item.meta->key.s == NULL) continue;
        const strobe_rd_meta *mt = item.meta;
        if (strcmp(mt->key.s, "deviceProperties") == 0 && mt->value.type == STROBE_RD_T_ARRAY &&
            *props == NULL && (*props = strndup(mt->value.raw, mt->value.len)) == NULL) {
            rc = STROBE_ENOMEM;
            break;
        }
        size_t k = 0;
        while (k < sizeof skip / sizeof skip[0] && strcmp(skip[k], mt->key.s) != 0)
            k++;
        if (k < sizeof skip / sizeof skip[0] || mt->value.raw == NULL) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **gk = realloc(*keys, cap * sizeof *gk);
            if (gk) *keys = gk;
            char **gv = realloc(*values, cap * sizeof *gv);
            if (gv) *values = gv;
            if (gk == NULL || gv == NULL) {
                rc = STROBE_ENOMEM;
                break;
            }
        }
        (*keys)[*n] = strndup(mt->key.s, mt->key.len);
        (*values)[*n] = strndup(mt->value.raw, mt->value.len);
        if ((*keys)[*n] == NULL || (*values)[*n] == NULL) {
            free((*keys)[*n]);
            free((*values)[*n]);
            rc = STROBE_ENOMEM;
            break;
        }
        (*n)++;
    }
    if (rc < 0 && rc != STROBE_ENOMEM) {
        const char *why =
            rd && strobe_rd_errmsg(rd)[0] ? strobe_rd_errmsg(rd) : strobe_strerror(rc);
        fprintf(stderr, "strobe overlay: %s: %s\n", cli_esc(path), cli_esc(why));
    }
    strobe_rd_close(rd);
    return rc < 0 ? rc : 0;
}

static void free_members(char **keys, char **values, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(keys[i]);
        free(values[i]);
    }
    free(keys);
    free(values);
}

/* Writes data[0..len) to f, plain or gzip. @return 0 or -1. */
static int out_write(FILE *f, gzFile gz, const char *data, size_t len) {
    while (len) {
        unsigned chunk = len > (1u << 30) ? 1u << 30 : (unsigned)len;
        if (gz ? gzwrite(gz, data, chunk) != (int)chunk : fwrite(data, 1, chunk, f) != chunk)
            return -1;
        data += chunk;
        len -= chunk;
    }
    return 0;
}

/* OUT from the merge's output `copy` with the counters spliced in. @return 0 or -1 after a
 * message. */
static int splice_counters(const char *copy, const char *out, const text *counters,
                           const char *props) {
    int fd = open(copy, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "strobe overlay: %s: %s\n", cli_esc(copy), strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    size_t len = (size_t)st.st_size;
    char *p = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (len == 0 || p == MAP_FAILED) {
        fprintf(stderr, "strobe overlay: %s: cannot map the copy\n", cli_esc(copy));
        return -1;
    }
    static const char open_key[] = "\"traceEvents\": [";
    const char *a = memmem(p, len, open_key, sizeof open_key - 1);
    const char *end = a ? memmem(a, len - (size_t)(a - p), "\n  ]", 4) : NULL;
    if (end == NULL) {
        munmap(p, len);
        fprintf(stderr, "strobe overlay: %s: no event array in the copy\n", cli_esc(copy));
        return -1;
    }
    /* An empty array takes the first counter without its comma. */
    const char *c = counters->p ? counters->p : "";
    size_t cn = counters->n;
    const char *q = a + sizeof open_key - 1;
    while (q < end && (*q == '\n' || *q == ' '))
        q++;
    if (q == end && cn) c++, cn--;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.overlay-%ld.tmp", out, (long)getpid());
    int gzip = cli_ends_with(out, ".gz");
    FILE *f = NULL;
    gzFile gz = NULL;
    if (gzip)
        gz = gzopen(tmp, "wb6");
    else
        f = fopen(tmp, "wb");
    int rc = f || gz ? 0 : -1;
    /* The header's empty deviceProperties becomes the input's. */
    static const char no_props[] = "\"deviceProperties\": []";
    const char *dp = props ? memmem(p, (size_t)(a - p), no_props, sizeof no_props - 1) : NULL;
    const char *from = p;
    if (rc == 0 && dp) {
        rc = out_write(f, gz, p, (size_t)(dp - p));
        if (rc == 0) rc = out_write(f, gz, no_props, sizeof no_props - 3);
        if (rc == 0) rc = out_write(f, gz, props, strlen(props));
        from = dp + sizeof no_props - 1;
    }
    if (rc == 0) rc = out_write(f, gz, from, (size_t)(end - from));
    if (rc == 0) rc = out_write(f, gz, c, cn);
    if (rc == 0) rc = out_write(f, gz, end, len - (size_t)(end - p));
    if (gz && gzclose(gz) != Z_OK) rc = -1;
    if (f && fclose(f) != 0) rc = -1;
    munmap(p, len);
    if (rc == 0 && rename(tmp, out) != 0) rc = -1;
    if (rc) {
        fprintf(stderr, "strobe overlay: %s: cannot write: %s\n", cli_esc(out), strerror(errno));
        unlink(tmp);
    }
    return rc;
}

/* ---- the command ----------------------------------------------------------------------------- */

int cmd_overlay(int argc, char **argv) {
    const char *out = NULL;
    int quiet = 0, first = 0, want = WANT_QUEUE | WANT_BW;
    for (int o; (o = cli_getopt(argc, argv, ":o:qhV", cmd_overlay_options, &first)) != -1;) {
        if (o == 'h') return cli_help(cmd_overlay_usage);
        if (o == 'V') return cli_version();
        if (o == 'q') {
            quiet = 1;
        } else if (o == 'o') {
            out = optarg;
        } else if (o == CLI_LONG_ONLY + 1) {
            if ((want = parse_series(optarg)) == 0)
                return cli_usage_error("overlay", "--series takes queue, memory-bw or both",
                                       optarg);
        } else {
            return cli_option_error("overlay", o, argv, cmd_overlay_options);
        }
    }
    int nops = argc - first;
    if (out == NULL && nops == 2) out = argv[first + 1], nops = 1;
    if (nops != 1 || out == NULL)
        return cli_usage_error("overlay", "give one TRACE and the output (-o OUT)", NULL);
    const char *in = argv[first];
    struct stat si, so;
    if (strcmp(in, "-") == 0 || strcmp(out, "-") == 0) {
        fprintf(stderr, "strobe overlay: %s: standard %s cannot be used: give a file\n",
                strcmp(in, "-") == 0 ? "TRACE" : "OUT", strcmp(in, "-") == 0 ? "input" : "output");
        return CLI_BAD_INPUT;
    }
    if (strobe__pftrace_path(out)) {
        fprintf(stderr, "strobe overlay: %s: the overlay is written as JSON (.json or .json.gz)\n",
                cli_esc(out));
        return CLI_BAD_INPUT;
    }
    /* The output's folder, which takes the copy and the output before the rename. */
    char dir[4096];
    const char *slash = strrchr(out, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - out) + 1 : 1, slash ? out : ".");
    if (access(dir, W_OK) != 0) {
        fprintf(stderr, "strobe overlay: %s: %s\n", cli_esc(out), strerror(errno));
        return CLI_BAD_INPUT;
    }
    if (stat(in, &si) != 0) {
        fprintf(stderr, "strobe overlay: %s: %s\n", cli_esc(in), strerror(errno));
        return CLI_BAD_INPUT;
    }
    if (S_ISDIR(si.st_mode)) {
        fprintf(stderr, "strobe overlay: %s: a folder: give one rank's trace\n", cli_esc(in));
        return CLI_BAD_INPUT;
    }
    if (stat(out, &so) == 0 && so.st_dev == si.st_dev && so.st_ino == si.st_ino) {
        fprintf(stderr, "strobe overlay: %s: is the input: give another output\n", cli_esc(out));
        return CLI_BAD_INPUT;
    }
    char *paths[1] = {(char *)in};
    cli_hta_set s;
    if (cli_hta_load(&s, "overlay", paths, 1, quiet) != 0) return CLI_BAD_INPUT;
    const cli_hta_rank *r = &s.ranks[0];
    text t = {0};
    size_t nq = 0, nb = 0, nmeta = 0;
    char **keys = NULL, **values = NULL, *props = NULL;
    /* The copy's base: the trace's own; for a trace without one (older PyTorch traces: absolute
     * microseconds), a whole second 10 s before its first event, as strobe merge gives it one, so
     * that viewers read small times without losing their nanoseconds. The counters' times move
     * with it (whole microseconds stay whole). */
    int64_t base = r->m.has_base ? r->m.base_time_ns : 0, shift_us = 0;
    if (!r->m.has_base && r->m.min_ts <= r->m.max_ts && r->m.min_ts > (int64_t)20000000000) {
        base = (r->m.min_ts - (int64_t)10000000000) / 1000000000 * 1000000000;
        shift_us = base / 1000;
    }
    int rc = counter_events(&s, r, want, shift_us, &t, &nq, &nb);
    if (rc == 0) rc = top_members(in, &keys, &values, &nmeta, &props);
    cli_hta_free(&s);
    if (rc == CLI_HTA_REPORTED || (rc < 0 && rc != STROBE_ENOMEM)) {
        free(t.p);
        free(props);
        free_members(keys, values, nmeta);
        return CLI_BAD_INPUT;
    }
    char copy[4200];
    if (rc == 0) {
        snprintf(copy, sizeof copy, "%s.overlay-%ld.copy.json", out, (long)getpid());
        cli_merge_input mi = {.path = in, .pid = -1};
        cli_merge_options mo = {.has_base = 1,
                                .base_ns = base,
                                .meta_keys = (const char *const *)keys,
                                .meta_values = (const char *const *)values,
                                .nmeta = nmeta,
                                .progress = !quiet};
        cli_merge_stats st;
        if (cli_merge_ex("overlay", &mi, 1, copy, &mo, &st) != 0) {
            rc = CLI_HTA_REPORTED;
        } else {
            rc = splice_counters(copy, out, &t, props) ? CLI_HTA_REPORTED : 0;
            unlink(copy);
            if (rc == 0 && st.skipped)
                fprintf(stderr,
                        "strobe overlay: %" PRIu64
                        " event%s of kinds the copy does not keep (B/E pairs, async events ...) "
                        "left out\n",
                        st.skipped, st.skipped == 1 ? "" : "s");
            if (rc == 0 && st.clipped)
                fprintf(stderr,
                        "strobe overlay: %" PRIu64 " event%s ended after the event around %s: "
                        "ended with it in the copy\n",
                        st.clipped, st.clipped == 1 ? "" : "s", st.clipped == 1 ? "it" : "them");
        }
    }
    free(t.p);
    free(props);
    free_members(keys, values, nmeta);
    if (rc == CLI_HTA_REPORTED) return CLI_BAD_INPUT;
    if (rc == 0 && !quiet)
        fprintf(stderr, "strobe overlay: %s: %zu queue length and %zu bandwidth counter events\n",
                cli_esc(out), nq, nb);
    return cli_finish("overlay", in, rc, CLI_OK);
}
