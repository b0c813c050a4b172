/* cmd_convert.c: `strobe convert IN OUT`: Kineto JSON (strobe's or PyTorch's) to Perfetto
 * protobuf, and a Perfetto trace written by strobe back to Kineto JSON.
 *
 * Contents: the usage text; Perfetto to JSON (the reader's decoder does the work, written through
 * a temporary file: outfile.h); JSON to Perfetto, which is a merge of one input (cli_merge_ex in
 * merge.c, with `whole` set: the list of what differs from strobe merge on purpose is there).
 *
 * JSON to Perfetto: a slice that starts inside another and ends after it (real PyTorch traces
 * have a few) goes whole on a lane of its thread (--overlap=lanes, the default: every command
 * then gives the numbers the JSON gives), or ends with its parent (--overlap=cut); the count is
 * said on stderr. The top-level members ride on strobe's session slice (flagged
 * STROBE_WRITER_SESSION); a trace without one (PyTorch's) loses them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"
#include "common.h"
#include "merge.h"
#include "outfile.h"
#include "reader/pftrace_dec.h"
#include "strobe/error.h"
#include "reader/trace_reader.h"
#include "util/pftrace_enc.h"

const char cmd_convert_usage[] =
    "NAME\n"
    "    strobe convert - convert a trace between Kineto JSON and Perfetto protobuf\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe convert [-q] [--overlap=lanes|cut] IN OUT\n"
    "    strobe convert [-q] [--overlap=lanes|cut] IN -o OUT\n"
    "\n"
    "DESCRIPTION\n"
    "    The format of OUT is chosen by its name: \".pftrace\" or \".perfetto-trace\" writes\n"
    "    Perfetto's protobuf trace format (TrackEvent), anything else Kineto-format JSON;\n"
    "    either is gzip-compressed when OUT ends in \".gz\" (.pftrace.gz, .json.gz).\n"
    "\n"
    "    OUT is written to a temporary file in its folder and renamed when complete: a\n"
    "    conversion that fails leaves an existing OUT as it was, and no partial file. An OUT\n"
    "    that is a device or a pipe (/dev/null) is written in place, not replaced.\n"
    "    JSON to Perfetto: IN is a Kineto-format trace (.json or .json.gz; \"-\" is standard\n"
    "    input) written by strobe or by the PyTorch profiler. Complete events (X, and B/E\n"
    "    pairs) become slices, instants stay instants, counters (C) become counter tracks,\n"
    "    flows (s/f) become flows, process and thread names (M) name the tracks, and args\n"
    "    become debug annotations. A slice that starts inside another and ends after it is\n"
    "    kept whole on an extra track of its thread, named \"THREAD (overlaps, lane N)\":\n"
    "    Perfetto shows it with the thread, and strobe reads it back as the thread's (the\n"
    "    count is on stderr); with --overlap=cut it is ended with the slice around it, as\n"
    "    strobe merge does. A flow with several ends keeps each end.\n"
    "\n"
    "    Perfetto to JSON: IN is a Perfetto trace (.pftrace, .perfetto-trace, or recognized by\n"
    "    its bytes) written by strobe, or another TrackEvent trace. The JSON is what strobe's\n"
    "    JSON writer writes for the same result, with the true end of ranges that end in the\n"
    "    very nanosecond their parent ends (the JSON writer shortens those by 1 ns).\n"
    "\n"
    "OPTIONS\n"
    "    -o, --output OUT   the output (instead of the second operand)\n"
    "    --overlap POLICY   JSON to Perfetto: a slice that overlaps its parent without\n"
    "                       nesting goes on a lane of its own (lanes, the default) or\n"
    "                       ends with its parent (cut)\n"
    "    -q, --quiet        no progress line on standard error\n"
    "    -h, --help         show this text\n"
    "    -V, --version      show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 converted; 2 bad usage, unreadable or malformed input, or an output error.\n";

/* Reads a whole file ("-": standard input), gunzipping when it is gzip. NULL with *why set on
 * failure. */
static unsigned char *read_all(const char *path, size_t *len, const char **why) {
    errno = 0;
    int fd0 = strcmp(path, "-") == 0 ? dup(0) : -1;
    gzFile g = fd0 >= 0 ? gzdopen(fd0, "rb") : gzopen(path, "rb");
    if (!g) {
        if (fd0 >= 0) close(fd0);
        *why = errno ? strerror(errno) : "cannot open";
        return NULL;
    }
    size_t cap = 0, n = 0;
    unsigned char *p = NULL;
    int got = 1;
    while (got > 0) {
        if (n == cap) {
            unsigned char *q = realloc(p, cap ? 2 * cap : 1 << 20);
            if (q == NULL) break;
            p = q;
            cap = cap ? 2 * cap : 1 << 20;
        }
        got = gzread(g, p + n, (unsigned)(cap - n > (1u << 30) ? 1u << 30 : cap - n));
        if (got > 0) n += (size_t)got;
    }
    gzclose(g);
    if (got > 0 || got < 0) {
        *why = got > 0 ? "out of memory" : "read error (or corrupt gzip data)";
        free(p);
        return NULL;
    }
    *len = n;
    return p;
}

/* Writes s[0..n) to f, gzip'd (level 1, as the trace writers write) when gz. @return 0, or an
 * errno value (-1: compression failed). */
static int put_text(FILE *f, const char *s, size_t n, int gz) {
    errno = 0;
    if (!gz) return fwrite(s, 1, n, f) == n ? 0 : errno ? errno : EIO;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    unsigned char buf[1 << 16];
    int err = 0, flush = Z_NO_FLUSH;
    while (err == 0 && flush != Z_FINISH) {
        size_t chunk = n > (1u << 30) ? 1u << 30 : n;
        z.next_in = (unsigned char *)s;
        z.avail_in = (unsigned)chunk;
        s += chunk;
        n -= chunk;
        flush = n ? Z_NO_FLUSH : Z_FINISH;
        do {
            z.next_out = buf;
            z.avail_out = sizeof buf;
            if (deflate(&z, flush) == Z_STREAM_ERROR) err = -1;
            size_t have = sizeof buf - z.avail_out;
            if (err == 0 && fwrite(buf, 1, have, f) != have) err = errno ? errno : EIO;
        } while (err == 0 && z.avail_out == 0);
    }
    deflateEnd(&z);
    return err;
}

static int pf_to_json(const char *in, const char *out, int quiet) {
    size_t len = 0;
    const char *why = NULL;
    cli_progress *p = cli_progress_start("convert", in, quiet);
    unsigned char *data = read_all(in, &len, &why);
    cli_progress_stop(p);
    if (!data) {
        fprintf(stderr, "strobe convert: %s: %s\n", cli_esc(in), why);
        return CLI_BAD_INPUT;
    }
    if (!strobe_rd_pf_sniff(data, len, 1)) {
        fprintf(stderr, "strobe convert: %s and %s are both JSON: nothing to convert\n",
                strcmp(in, "-") == 0 ? "standard input" : cli_esc(in), cli_esc(out));
        free(data);
        return CLI_BAD_INPUT;
    }
    char err[300], *json = NULL;
    size_t jlen = 0;
    int64_t cut = -1;
    int rc = strobe_rd_pf_to_json(data, len, &json, &jlen, err, sizeof err, &cut);
    free(data);
    if (rc) {
        fprintf(stderr, "strobe convert: %s: not a readable Perfetto trace: %s\n", cli_esc(in),
                cli_esc(err));
        return CLI_BAD_INPUT;
    }
    /* Converted all the same, as the other commands read it; but the cut packet is lost. */
    if (cut >= 0)
        fprintf(stderr,
                "strobe convert: warning: %s: Perfetto trace cut inside a packet at byte %lld: "
                "converted up to the last whole packet\n",
                cli_esc(in), (long long)cut);
    /* Through a temporary file renamed over OUT (outfile.h); ".gz" compresses. */
    cli_outfile o = {0};
    int werr = cli_outfile_open(&o, out, "wb", "convert");
    if (werr == 0) {
        werr = put_text(o.f, json, jlen, cli_ends_with(out, ".gz"));
        int close_err = cli_outfile_close(&o, werr == 0);
        if (werr == 0) werr = close_err;
    }
    free(json);
    if (werr == 0) return CLI_OK;
    fprintf(stderr, "strobe convert: %s: cannot write: %s\n", cli_esc(out),
            werr > 0 ? strerror(werr) : "compression failed");
    return CLI_BAD_INPUT;
}

/* ---- JSON to Perfetto ------------------------------------------------------------------------ */

/* A merge of one input, rewritten whole (cli_merge_ex, merge.c, which lists what differs from
 * strobe merge on purpose). */
static int json_to_pf(const char *in, const char *out, int quiet, int overlap) {
    cli_merge_input input = {.path = in};
    cli_merge_options opt = {.progress = !quiet, .overlap = overlap, .whole = 1};
    cli_merge_stats st;
    if (cli_merge_ex("convert", &input, 1, out, &opt, &st) != 0) return CLI_BAD_INPUT;
    if (st.out_of_range)
        fprintf(stderr,
                "strobe convert: %s: %" PRIu64 " event(s) with a time at or beyond +-2^62 ns: "
                "left out\n",
                cli_esc(in), st.out_of_range);
    if (st.wide_ids)
        fprintf(stderr,
                "strobe convert: %s: warning: %" PRIu64 " track(s) with a pid outside "
                "0..16777215 or a tid outside 32 bits: their ids are cut in Perfetto's format and "
                "may merge with other tracks\n",
                cli_esc(in), st.wide_ids);
    if (st.on_lanes)
        fprintf(stderr,
                "strobe convert: %s: %" PRIu64 " slice(s) overlap a slice without nesting in it: "
                "kept whole on %" PRIu64 " extra track(s) of their thread\n",
                cli_esc(in), st.on_lanes, st.lanes);
    if (st.clipped)
        fprintf(stderr,
                "strobe convert: %s: %" PRIu64 " slice(s) ended after the slice around them: "
                "ended with it\n",
                cli_esc(in), st.clipped);
    return CLI_OK;
}

const struct option cmd_convert_options[] = {
    {"output", required_argument, NULL, 'o'},
    {"overlap", required_argument, NULL, 'O'},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_convert(int argc, char **argv) {
    const char *in = NULL;
    cli_merge_args a = {.overlap = CLI_MERGE_LANES};
    int code = cli_merge_getopt("convert", cmd_convert_usage, cmd_convert_options, argc, argv, &a);
    if (code >= 0) return code;
    const char *out = a.out;
    int first = a.first, quiet = a.quiet, overlap = a.overlap;
    if (first < argc) in = argv[first++];
    if (first < argc && out == NULL) out = argv[first++];
    if (first < argc) return cli_usage_error("convert", "one input and one output", argv[first]);
    if (!in || !out) return cli_usage_error("convert", "IN and OUT are required", NULL);
    if (out[0] == '\0') return cli_usage_error("convert", "OUT is empty", NULL);
    /* Is IN a Perfetto trace? By its content, whatever its name, as every reader of traces
     * tells. Standard input and other pipes cannot be read twice: Perfetto when the output is JSON
     * (the Perfetto path then checks), and read by the JSON path otherwise, whose reader decodes a
     * Perfetto trace too. */
    struct stat in_st;
    int in_pipe = strcmp(in, "-") == 0 ||
                  (stat(in, &in_st) == 0 && !S_ISREG(in_st.st_mode) && !S_ISDIR(in_st.st_mode));
    int in_pf = in_pipe ? !strobe__pftrace_path(out) : strobe_rd_is_perfetto(in) == 1;
    if (strobe__pftrace_path(out)) {
        if (in_pf) {
            fprintf(stderr, "strobe convert: %s is already a Perfetto trace\n", cli_esc(in));
            return CLI_BAD_INPUT;
        }
        return json_to_pf(in, out, quiet, overlap);
    }
    if (!in_pf) {
        fprintf(stderr, "strobe convert: %s and %s are both JSON: nothing to convert\n",
                cli_esc(in), cli_esc(out));
        return CLI_BAD_INPUT;
    }
    return pf_to_json(in, out, quiet);
}
