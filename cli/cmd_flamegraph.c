/* cmd_flamegraph.c: `strobe flamegraph`, a flame graph of a trace (or the differential flame graph
 * of two) as one self-contained SVG file. The drawing is flame.c's; this file parses the command
 * line, loads the traces and writes the file.
 *
 * Contents: usage, options, the output file, the command. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "outfile.h"
#include "flame.h"
#include "model/model.h"
#include "strobe/error.h"

const char cmd_flamegraph_usage[] =
    "NAME\n"
    "    strobe flamegraph - a flame graph of a trace as a self-contained SVG\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe flamegraph [OPTIONS] TRACE\n"
    "    strobe flamegraph TRACE [-o OUT.svg] [--metric self_cpu|self_device|samples|memory]\n"
    "                      [--group-by stack|range] [--title T] [--width PX]\n"
    "    strobe flamegraph --diff BASE TEST [-o OUT.svg] [OPTIONS]\n"
    "\n"
    "DESCRIPTION\n"
    "    Writes a flame graph in the manner of flamegraph.pl: one SVG file that any browser\n"
    "    opens from disk, with no network and nothing outside it (its style and script are\n"
    "    inline). A frame's width is its inclusive value; the root (\"all\") is at the bottom,\n"
    "    children stand on their parent from its left edge in the order of their names, and\n"
    "    what is left of a parent on the right is its self value. Each frame's <title> holds\n"
    "    its name, value (us, ms or s; samples; bytes) and share of the total; its label is\n"
    "    the name, a Python frame's (\"model.py(12): forward\") with the function first and\n"
    "    the path last, cut to fit. In a browser:\n"
    "    hover shows a frame's details in the line below the graph, a click zooms into a\n"
    "    frame (\"Reset Zoom\" goes back), and \"Search\" (or Ctrl-F) highlights the frames\n"
    "    whose name matches a regular expression and shows the share of the total they add\n"
    "    up to (a match inside a match counts once). Colours tell the kinds of frame apart:\n"
    "    operators, user ranges, Python frames, kernels and other device work, runtime\n"
    "    calls, sample frames; a legend names those present. Frames narrower than\n"
    "    --min-width are merged into their parent's self value, and a note under the graph\n"
    "    says how many. A trace with nothing to weigh gives an SVG that says \"no samples\".\n"
    "\n"
    "    The stacks are those of `strobe stacks`: each operator, user annotation and runtime\n"
    "    call weighs its self CPU time (as `strobe summary` computes it), and its frames are\n"
    "    the Python frames of its \"Call stack\", root first, then its own name; without a\n"
    "    \"Call stack\", those of the operator enclosing it, then its own name. Frame names\n"
    "    have ';' and control characters replaced by '_'.\n"
    "\n"
    "    With --diff, a differential flame graph (flamegraph.pl's difffolded convention): the\n"
    "    frames and widths are TEST's; each frame is coloured by the change of its inclusive\n"
    "    value from BASE to TEST, red where it grew, blue where it shrank, the stronger the\n"
    "    larger the relative change (full at 100%); its title shows both values and the\n"
    "    change. Frames only BASE has are not drawn: their loss shows in their parents.\n"
    "\n"
    "    TRACE \"-\" is standard input (not both traces of --diff). Malformed events are\n"
    "    skipped; standard error says how many, and `strobe check TRACE` lists them.\n"
    "\n"
    "    Example: strobe flamegraph t.json.gz -o t.svg\n"
    "\n"
    "OPTIONS\n"
    "    -o, --output FILE  write the SVG to FILE (default: standard output), through a\n"
    "                       temporary file in its folder renamed when complete\n"
    "    --metric M         what weighs a frame:\n"
    "                       self_cpu (default): the self CPU time of operators, user ranges\n"
    "                       and runtime calls;\n"
    "                       self_device: the device time of kernels, copies and memsets,\n"
    "                       under the stack of the operator that launched them (by\n"
    "                       correlation id through the runtime call, or External id), with\n"
    "                       the kernel's name as the leaf; unlinked work stands on the root;\n"
    "                       samples: the CPU samples strobe records (`strobe record --sample`,\n"
    "                       events of category cpu_sample), each counting 1, their native\n"
    "                       \"Call stack\" as the frames;\n"
    "                       memory: the bytes allocated ([memory] events with positive\n"
    "                       Bytes), under the stack of the operator enclosing each allocation\n"
    "                       on its thread (\"[outside any range]\" where none does)\n"
    "    --group-by G       stack (default): as above; range: the nesting of operators and\n"
    "                       user ranges only (\"Call stack\" ignored; samples stand on the\n"
    "                       ranges enclosing them)\n"
    "    --diff             a differential flame graph of two traces, BASE and TEST\n"
    "    --title T          the heading (default \"Flame graph\")\n"
    "    --width PX         the image's width, 100 to 100000 (default 1200)\n"
    "    --min-width PX     frames narrower than this are merged into their parent\n"
    "                       (default 0.1)\n"
    "    -q, --quiet        no progress line on standard error\n"
    "    -h, --help         show this text\n"
    "    -V, --version      show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (a trace cannot be read, the output cannot be written) or\n"
    "    bad usage.\n";

enum {
    OPT_METRIC = CLI_LONG_ONLY + 1,
    OPT_GROUP_BY,
    OPT_DIFF,
    OPT_TITLE,
    OPT_WIDTH,
    OPT_MIN_WIDTH,
};

const struct option cmd_flamegraph_options[] = {
    {"output", required_argument, NULL, 'o'},
    {"metric", required_argument, NULL, OPT_METRIC},
    {"group-by", required_argument, NULL, OPT_GROUP_BY},
    {"diff", no_argument, NULL, OPT_DIFF},
    {"title", required_argument, NULL, OPT_TITLE},
    {"width", required_argument, NULL, OPT_WIDTH},
    {"min-width", required_argument, NULL, OPT_MIN_WIDTH},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("flamegraph", msg, arg);
}

/* The last component of a path, for the graph's subtitle. */
static const char *base_name(const char *path) {
    if (strcmp(path, "-") == 0) return "standard input";
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* Loads trace `path` into a new model. @return it, or NULL after the one-line error. */
static md_model *load(const char *path, int quiet) {
    md_model *m = malloc(sizeof *m);
    if (m == NULL) {
        usage_error("out of memory", NULL);
        return NULL;
    }
    if (cli_load(m, "flamegraph", path, quiet) != CLI_OK) {
        free(m);
        return NULL;
    }
    cli_say_skipped("flamegraph", path, m);
    return m;
}

static void unload(md_model *m) {
    if (m == NULL) return;
    md_free(m);
    free(m);
}

int cmd_flamegraph(int argc, char **argv) {
    cli_flame_opts o = {0};
    const char *out_path = NULL;
    int quiet = 0, first = 0, diff = 0;
    for (int c; (c = cli_getopt(argc, argv, ":o:qhV", cmd_flamegraph_options, &first)) != -1;) {
        const char *v = optarg;
        char *end;
        switch (c) {
        case 'h':
            return cli_help(cmd_flamegraph_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case 'o':
            out_path = v;
            break;
        case OPT_METRIC:
            if ((o.metric = cli_flame_metric_parse(v)) < 0)
                return usage_error("unknown --metric (self_cpu, self_device, samples, memory)", v);
            break;
        case OPT_GROUP_BY:
            if (strcmp(v, "stack") == 0)
                o.group_by = CLI_FLAME_BY_STACK;
            else if (strcmp(v, "range") == 0)
                o.group_by = CLI_FLAME_BY_RANGE;
            else
                return usage_error("unknown --group-by (stack, range)", v);
            break;
        case OPT_DIFF:
            diff = 1;
            break;
        case OPT_TITLE:
            o.title = v;
            break;
        case OPT_WIDTH: {
            unsigned long long w;
            if (cli_parse_count("flamegraph", "--width", v, 100000, &w)) return CLI_BAD_INPUT;
            if (w < 100) return usage_error("bad --width (100 to 100000)", v);
            o.width = (unsigned)w;
            break;
        }
        case OPT_MIN_WIDTH:
            errno = 0;
            o.min_width = strtod(v, &end);
            if (end == v || *end != '\0' || errno || !(o.min_width > 0 && o.min_width <= 1000))
                return usage_error("bad --min-width (above 0, at most 1000 px)", v);
            break;
        default:
            return cli_option_error("flamegraph", c, argv, cmd_flamegraph_options);
        }
    }
    const char *path = NULL, *base_path = NULL;
    if (diff) {
        if (argc - first != 2)
            return usage_error(argc - first < 2 ? "--diff takes two traces, BASE and TEST"
                                                : "--diff takes two traces, not more",
                               NULL);
        base_path = argv[first];
        path = argv[first + 1];
        if (strcmp(base_path, "-") == 0 && strcmp(path, "-") == 0)
            return usage_error("only one trace can be standard input", NULL);
    } else if (cli_trace_operand("flamegraph", argc, argv, first, &path) != 0) {
        return CLI_BAD_INPUT;
    }

    md_model *base = NULL, *test = NULL;
    if (base_path && (base = load(base_path, quiet)) == NULL) return CLI_BAD_INPUT;
    if ((test = load(path, quiet)) == NULL) {
        unload(base);
        return CLI_BAD_INPUT;
    }
    char source[1024];
    if (base_path)
        snprintf(source, sizeof source, "%s -> %s", base_name(base_path), base_name(path));
    else
        snprintf(source, sizeof source, "%s", base_name(path));
    o.source = source;

    /* The output is opened once the traces are read, so that a bad trace leaves no file. */
    int to_file = out_path && strcmp(out_path, "-") != 0;
    cli_outfile of = {0};
    int rc = CLI_OK, oerr = to_file ? cli_outfile_open(&of, out_path, "w", "flamegraph") : 0;
    if (oerr) {
        fprintf(stderr, "strobe flamegraph: %s: %s\n", cli_esc(out_path), strerror(oerr));
        rc = CLI_BAD_INPUT;
    } else {
        char err[256] = "";
        int work = cli_flame_svg_diff(to_file ? of.f : stdout, base, test, &o, err, sizeof err);
        if (to_file && (oerr = cli_outfile_close(&of, work == 0)) != 0 && work == 0) {
            snprintf(err, sizeof err, "%s", strerror(oerr));
            work = STROBE_EIO;
        }
        if (work != 0) {
            fprintf(stderr, "strobe flamegraph: %s: %s\n",
                    cli_esc(work == STROBE_EIO && to_file ? out_path : path), cli_esc(err));
            rc = CLI_BAD_INPUT;
        } else if (!to_file) {
            rc = cli_finish("flamegraph", path, 0, CLI_OK);
        }
    }
    unload(base);
    unload(test);
    return rc;
}
