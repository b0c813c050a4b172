/* cmd_export.c: `strobe export --pprof`, a trace's stacks as a pprof profile (profile.proto,
 * gzip'd) for `go tool pprof`, Pyroscope, Parca and Grafana. The stacks are those of
 * `strobe stacks` (model/folded.c); the encoding is pprof.c's.
 *
 * Contents: usage, the sources (folded stacks, heap sites), the output file, the command. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"
#include "model/folded.h"
#include "model/heap.h"
#include "model/model.h"
#include "outfile.h"
#include "pprof.h"
#include "strobe/error.h"

const char cmd_export_usage[] =
    "NAME\n"
    "    strobe export - a trace's stacks as a pprof profile (go tool pprof, Pyroscope)\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe export --pprof [OPTIONS] TRACE -o OUT.pb.gz\n"
    "    strobe export --pprof TRACE -o OUT.pb.gz [--metric self_cpu|self_cuda|samples|memory]\n"
    "                  [--hz HZ] [-q]\n"
    "\n"
    "DESCRIPTION\n"
    "    Writes pprof's profile format (profile.proto, gzip'd), which `go tool pprof`,\n"
    "    Pyroscope, Parca and Grafana read. Its samples are the stacks `strobe stacks`\n"
    "    prints for the same metric, with the same weights, unrounded: -top, -traces and\n"
    "    the flame graph of `go tool pprof -http` then show what `strobe stacks` and\n"
    "    `strobe flamegraph` show.\n"
    "\n"
    "    Each distinct frame is one location of one function. A Python frame of a \"Call\n"
    "    stack\" (\"model.py(12): forward\") is function forward of file model.py at line 12\n"
    "    (so `go tool pprof -list` finds the source); a native frame of a CPU sample or an\n"
    "    allocation site (\"fn (file)\", \"fn (file:line)\") is function fn of that source\n"
    "    file, or of that module (a shared object or a program), which is then the\n"
    "    location's mapping; any other frame (an operator, a range, a runtime call) is a\n"
    "    function of that name. Frames without a module of their own share one mapping\n"
    "    named after the trace. pprof shortens names that look like C++ ones (\"step<1>\"\n"
    "    shows as \"step\"): `go tool pprof -symbolize=none` shows them whole.\n"
    "\n"
    "    Sample types, by metric:\n"
    "    self_cpu (default): cpu/nanoseconds, the self CPU time of each operator, user\n"
    "        annotation and runtime call under its stack, as `strobe stacks` folds them;\n"
    "    self_cuda: device/nanoseconds, the device time each operator launched, as\n"
    "        `strobe stacks --metric self_cuda`;\n"
    "    samples: samples/count and cpu/nanoseconds (the count times the sampling period,\n"
    "        1/HZ), the CPU samples of `strobe record --sample`, as `strobe stacks\n"
    "        --samples`; the period type is cpu/nanoseconds;\n"
    "    memory: for a trace of `strobe record --heap`, each allocation site's\n"
    "        alloc_objects/count (calls), alloc_space/bytes and inuse_space/bytes (the bytes\n"
    "        still allocated at exit), under its native call stack; the sites the trace\n"
    "        leaves out as one frame \"[other sites]\", so that the totals are the trace's;\n"
    "        alloc_space is the default sample type. A trace with [memory] events but no\n"
    "        sites gives alloc_space/bytes under the operators enclosing each allocation,\n"
    "        as `strobe flamegraph --metric memory` does.\n"
    "    A trace with nothing for the metric is refused (exit 2) and no file is written.\n"
    "    The profile's time and duration are the span of the trace's events.\n"
    "\n"
    "    TRACE \"-\" is standard input. Malformed events are skipped; standard error says\n"
    "    how many, and `strobe check TRACE` lists them.\n"
    "\n"
    "    Example: strobe export --pprof t.json.gz -o t.pb.gz && go tool pprof -top t.pb.gz\n"
    "\n"
    "OPTIONS\n"
    "    --pprof            write pprof's format (the only one so far; required)\n"
    "    -o, --output FILE  write to FILE (\"-\": standard output, not a terminal), through\n"
    "                       a temporary file in its folder renamed when complete; required\n"
    "    --metric M         self_cpu (default), self_cuda, samples or memory, as above\n"
    "    --samples          the same as --metric samples (as in `strobe stacks`)\n"
    "    --hz HZ            the rate the CPU samples were taken at, 1 to 100000 (default\n"
    "                       1000, that of `strobe record --sample`), for their period\n"
    "    -q, --quiet        no progress line on standard error\n"
    "    -h, --help         show this text\n"
    "    -V, --version      show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (the trace cannot be read or has nothing for the metric, the\n"
    "    output cannot be written) or bad usage.\n";

enum { M_SELF_CPU, M_SELF_CUDA, M_SAMPLES, M_MEMORY };

static const char *const metric_names[] = {"self_cpu", "self_cuda", "samples", "memory"};

/* What each metric calls a trace without anything for it. */
static const char *const metric_missing[] = {
    "no operators, annotations or runtime calls with self CPU time",
    "no device time launched by operators",
    "no CPU samples (strobe record --sample)",
    "no allocations (strobe record --heap)",
};

/* ---- the sources --------------------------------------------------------------------------- */

/* Adds each stack of slot 0 of `f` with a weight as a sample of value w * scale (and w first,
 * with two_values). @return the samples added. */
static uint64_t add_folded(cli_pprof *p, const md_fold *f, int two_values, int64_t scale) {
    uint64_t *loc_of = calloc(f->names.count, sizeof *loc_of), *locs = NULL, added = 0;
    size_t cap = 0;
    if (loc_of == NULL) p->err = STROBE_ENOMEM;
    for (size_t i = 1; i < f->count && !p->err; i++) {
        int64_t w = f->nodes[i].self[0];
        if (w == 0) continue;
        size_t n = 0;
        for (uint32_t x = (uint32_t)i; x != 0 && x != MD_NONE; x = f->nodes[x].parent) {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                uint64_t *q = realloc(locs, cap * sizeof *q);
                if (q == NULL) {
                    p->err = STROBE_ENOMEM;
                    break;
                }
                locs = q;
            }
            uint32_t name = f->nodes[x].name;
            if (loc_of[name] == 0) {
                const char *s = strobe__strtab_str(&f->names, name);
                loc_of[name] = cli_pprof_frame(p, s, f->names.lens[name]);
            }
            locs[n++] = loc_of[name];
        }
        int64_t v[2] = {w, w};
        if (two_values)
            v[1] = w > INT64_MAX / scale ? INT64_MAX : w * scale;
        else
            v[0] = w > INT64_MAX / scale ? INT64_MAX : w * scale;
        cli_pprof_sample(p, locs, n, v);
        added++;
    }
    free(locs);
    free(loc_of);
    return added;
}

/* Adds the heap sites of `h`, and the rest of its totals under "[other sites]". @return the
 * samples added. */
static uint64_t add_heap(cli_pprof *p, const md_heap *h) {
    uint64_t *locs = NULL, added = 0;
    size_t cap = 0;
    int64_t calls = (int64_t)h->calls, bytes = h->bytes, leaked = h->leaked;
    for (size_t i = 0; i < h->n && !p->err; i++) {
        const md_heap_site *st = &h->sites[i];
        if (st->nframes > cap) {
            uint64_t *q = realloc(locs, st->nframes * sizeof *q);
            if (q == NULL) {
                p->err = STROBE_ENOMEM;
                break;
            }
            locs = q;
            cap = st->nframes;
        }
        /* The site's frames are innermost first, as pprof wants them. */
        for (size_t k = 0; k < st->nframes; k++)
            locs[k] = cli_pprof_frame(p, st->frames[k], strlen(st->frames[k]));
        int64_t v[3] = {(int64_t)st->calls, st->bytes, st->leaked};
        cli_pprof_sample(p, locs, st->nframes, v);
        calls -= v[0];
        bytes -= v[1];
        leaked -= v[2];
        added++;
    }
    if (!p->err && (calls > 0 || bytes > 0 || leaked > 0)) {
        static const char other[] = "[other sites]";
        uint64_t loc = cli_pprof_frame(p, other, sizeof other - 1);
        int64_t v[3] = {calls > 0 ? calls : 0, bytes > 0 ? bytes : 0, leaked > 0 ? leaked : 0};
        cli_pprof_sample(p, &loc, 1, v);
    }
    free(locs);
    return added;
}

/* Fills `p` with the samples of trace `m` for `metric`. @return 0, 1 when the trace has nothing
 * for it, or STROBE_ENOMEM. */
static int build(cli_pprof *p, const md_model *m, int metric, int64_t hz) {
    if (metric == M_MEMORY && m->heap_json != NULL) {
        md_heap h;
        int hr = md_heap_read(m->heap_json, &h);
        if (hr == STROBE_ENOMEM) return hr;
        if (hr == 0 && h.n > 0) {
            cli_pprof_sample_type(p, "alloc_objects", "count");
            cli_pprof_sample_type(p, "alloc_space", "bytes");
            cli_pprof_sample_type(p, "inuse_space", "bytes");
            cli_pprof_default_type(p, "alloc_space");
            if (h.sample_rate > 0) cli_pprof_period(p, "space", "bytes", h.sample_rate);
            uint64_t n = add_heap(p, &h);
            md_heap_free(&h);
            return p->err ? p->err : n == 0;
        }
        if (hr == 0) md_heap_free(&h);
    }
    static const md_fold_metric fold_of[] = {MD_FOLD_SELF_CPU, MD_FOLD_SELF_CUDA_OP,
                                             MD_FOLD_SAMPLES, MD_FOLD_MEMORY};
    md_fold f;
    uint64_t n = 0;
    int err = md_fold_init(&f);
    if (!err) err = md_fold_add(&f, m, fold_of[metric], MD_FOLD_STACK, 0, &n);
    if (!err) {
        if (metric == M_SAMPLES) {
            int64_t period = 1000000000 / hz;
            cli_pprof_sample_type(p, "samples", "count");
            cli_pprof_sample_type(p, "cpu", "nanoseconds");
            cli_pprof_period(p, "cpu", "nanoseconds", period);
            n = add_folded(p, &f, 1, period);
        } else {
            if (metric == M_MEMORY)
                cli_pprof_sample_type(p, "alloc_space", "bytes");
            else
                cli_pprof_sample_type(p, metric == M_SELF_CPU ? "cpu" : "device", "nanoseconds");
            n = add_folded(p, &f, 0, 1);
        }
        err = p->err;
    }
    md_fold_free(&f);
    return err ? err : n == 0;
}

/* ---- the command --------------------------------------------------------------------------- */

enum { OPT_PPROF = CLI_LONG_ONLY + 1, OPT_METRIC, OPT_SAMPLES, OPT_HZ };

const struct option cmd_export_options[] = {
    {"pprof", no_argument, NULL, OPT_PPROF},
    {"output", required_argument, NULL, 'o'},
    {"metric", required_argument, NULL, OPT_METRIC},
    {"samples", no_argument, NULL, OPT_SAMPLES},
    {"hz", required_argument, NULL, OPT_HZ},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("export", msg, arg);
}

/* The last component of a path, to name the profile's main mapping. */
static const char *base_name(const char *path) {
    if (strcmp(path, "-") == 0) return "stdin";
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* Writes the profile to out_path ("-": standard output). @return CLI_OK or CLI_BAD_INPUT after
 * the one-line error. */
static int write_out(cli_pprof *p, const char *out_path) {
    int to_file = strcmp(out_path, "-") != 0, err_no = 0, oerr = 0;
    cli_outfile of = {0};
    if (to_file && (oerr = cli_outfile_open(&of, out_path, "wb", "export")) != 0) {
        fprintf(stderr, "strobe export: %s: %s\n", cli_esc(out_path), strerror(oerr));
        return CLI_BAD_INPUT;
    }
    int work = cli_pprof_write(p, to_file ? of.f : stdout, &err_no);
    if (!to_file && work == 0 && fflush(stdout) != 0) {
        err_no = errno;
        work = STROBE_EIO;
    }
    if (to_file && (oerr = cli_outfile_close(&of, work == 0)) != 0 && work == 0) {
        err_no = oerr;
        work = STROBE_EIO;
    }
    if (work == 0) return CLI_OK;
    fprintf(stderr, "strobe export: %s: %s\n", cli_esc(to_file ? out_path : "standard output"),
            work == STROBE_EIO ? strerror(err_no) : "out of memory");
    return CLI_BAD_INPUT;
}

int cmd_export(int argc, char **argv) {
    const char *path = NULL, *out_path = NULL;
    int quiet = 0, first = 0, pprof = 0, metric = M_SELF_CPU;
    int64_t hz = 1000;
    for (int c; (c = cli_getopt(argc, argv, ":o:qhV", cmd_export_options, &first)) != -1;) {
        const char *v = optarg;
        switch (c) {
        case 'h':
            return cli_help(cmd_export_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'o':
            out_path = v;
            break;
        case OPT_PPROF:
            pprof = 1;
            break;
        case OPT_METRIC:
            /* The names of `strobe stacks` and `strobe flamegraph`, and torch's. */
            if (strcmp(v, "self_cpu") == 0 || strcmp(v, "self_cpu_time_total") == 0)
                metric = M_SELF_CPU;
            else if (strcmp(v, "self_cuda") == 0 || strcmp(v, "self_cuda_time_total") == 0 ||
                     strcmp(v, "self_device") == 0)
                metric = M_SELF_CUDA;
            else if (strcmp(v, "samples") == 0)
                metric = M_SAMPLES;
            else if (strcmp(v, "memory") == 0 || strcmp(v, "heap") == 0)
                metric = M_MEMORY;
            else
                return usage_error("unknown --metric (self_cpu, self_cuda, samples, memory)", v);
            break;
        case OPT_SAMPLES:
            metric = M_SAMPLES;
            break;
        case OPT_HZ: {
            unsigned long long n;
            if (cli_parse_count("export", "--hz", v, 100000, &n)) return CLI_BAD_INPUT;
            if (n == 0) return usage_error("bad --hz (1 to 100000)", v);
            hz = (int64_t)n;
            break;
        }
        default:
            return cli_option_error("export", c, argv, cmd_export_options);
        }
    }
    if (!pprof) return usage_error("say which format: --pprof", NULL);
    if (out_path == NULL) return usage_error("-o FILE is required (\"-\": standard output)", NULL);
    if (strcmp(out_path, "-") == 0 && isatty(STDOUT_FILENO))
        return usage_error("standard output is a terminal: -o FILE, or redirect it", NULL);
    if (cli_trace_operand("export", argc, argv, first, &path) != 0) return CLI_BAD_INPUT;
    md_model *m = malloc(sizeof *m);
    if (m == NULL) return usage_error("out of memory", NULL);
    int rc = cli_load(m, "export", path, quiet);
    if (rc == CLI_OK) {
        cli_say_skipped("export", path, m);
        cli_pprof p;
        char note[512];
        int err = cli_pprof_init(&p, base_name(path));
        snprintf(note, sizeof note, "strobe export --pprof --metric %s of %s", metric_names[metric],
                 base_name(path));
        cli_pprof_comment(&p, note);
        /* The span of the trace's events; its start only where it reads as a time since the
         * epoch (after 2001, as Kineto's and strobe's are), not a time since a process began. */
        if (m->min_ts <= m->max_ts)
            cli_pprof_times(&p, m->min_ts >= INT64_C(1000000000000000000) ? m->min_ts : 0,
                            m->max_ts - m->min_ts);
        if (!err) err = build(&p, m, metric, hz);
        if (err == 1) {
            fprintf(stderr, "strobe export: %s: %s in the trace (--metric %s)%s\n", cli_esc(path),
                    metric_missing[metric], metric_names[metric],
                    metric == M_SELF_CPU ? "; a trace of strobe record --sample or --heap: "
                                           "--metric samples or memory"
                                         : "");
            rc = CLI_BAD_INPUT;
        } else if (err) {
            rc = cli_finish("export", path, err, CLI_OK);
        } else {
            rc = write_out(&p, out_path);
        }
        cli_pprof_free(&p);
        md_free(m);
    }
    free(m);
    return rc;
}
