/* cmd_stacks.c: `strobe stacks`, folded stacks (Brendan Gregg's format) for flamegraph.pl and
 * speedscope, weighted by self CPU or self device time.
 *
 * Contents: usage, the command. The stacks are folded by model/folded.c, which `strobe flamegraph`
 * shares.
 *
 * Each operator (and runtime call) is one sample of its self time. Its frames, root first, are:
 * the Python frames of its "Call stack" (the trace lists them innermost first) followed by its
 * own name; an event without a "Call stack" takes the frames of its enclosing operator (the
 * innermost that contains it whole) and adds its own name, so that a trace without stacks gives
 * the nesting of operators. Equal stacks are summed in nanoseconds and printed rounded to the
 * nearest microsecond; a stack whose weight rounds to 0 is left out. Unlike torch's export_stacks,
 * the operator's name is the leaf frame, so that a flame graph shows which operator the time went
 * to.
 *
 * With --samples, the CPU samples strobe records (config.cpu_sample_hz: instants of category
 * "cpu_sample" with their native "Call stack") are folded instead: one line per distinct stack,
 * weighted by its number of samples. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "model/folded.h"
#include "model/model.h"
#include "strobe/error.h"

const char cmd_stacks_usage[] =
    "NAME\n"
    "    strobe stacks - folded stacks for flamegraph.pl and speedscope\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe stacks [OPTIONS] TRACE\n"
    "    strobe stacks TRACE [--metric self_cpu|self_cuda] [-q]\n"
    "\n"
    "DESCRIPTION\n"
    "    Prints one line per distinct stack: frames from the root to the leaf joined by ';',\n"
    "    a space, and the weight in microseconds (rounded to the nearest; lines whose weight is\n"
    "    0 are left out). Lines are sorted by stack.\n"
    "\n"
    "    Each operator, user annotation and runtime call contributes its self time. Its frames\n"
    "    are the Python frames of its \"Call stack\" argument, root first, then its own name;\n"
    "    without a \"Call stack\", the frames of the operator enclosing it on its thread, then\n"
    "    its own name (so a trace without stacks gives the nesting of operators). An event that\n"
    "    ends after the operator it starts in is not below it, as in torch's tree of self\n"
    "    times. Within a frame, ';' and control characters (newlines, escapes, DEL, C1\n"
    "    controls) are replaced by '_', so that each stack stays one line. Each line lists its\n"
    "    whole stack, so deep nesting makes long output (N ranges nested in each other give N\n"
    "    lines of 1 to N frames, N*N/2 in all), though memory stays of the order of the\n"
    "    trace's. TRACE \"-\" is standard input.\n"
    "    Malformed events are skipped; standard error says how many, and `strobe check TRACE`\n"
    "    lists them.\n"
    "\n"
    "    Example: strobe stacks t.json.gz | flamegraph.pl > t.svg\n"
    "\n"
    "    With --samples, the CPU samples of the trace (which strobe writes when a session\n"
    "    samples: `strobe record --sample`) are folded instead: each sample's native \"Call\n"
    "    stack\", root first, one frame per function, and the number of samples with that\n"
    "    stack. Samples are read from JSON's CPU profiles (Profile and ProfileChunk events, as\n"
    "    strobe and Chrome write them), from instants of category cpu_sample (older strobe\n"
    "    traces) and from a .pftrace's Perfetto CPU samples. A trace without samples is\n"
    "    refused (exit 2).\n"
    "\n"
    "OPTIONS\n"
    "    --metric M     self_cpu (default): self CPU time, as `strobe summary` computes it;\n"
    "                   self_cuda: the device time (kernels, copies, memsets) launched directly\n"
    "                   inside each operator\n"
    "    --samples      fold the CPU samples (cpu_sample events), weighted by their count\n"
    "    -q, --quiet    no progress line on standard error\n"
    "    -h, --help     show this text\n"
    "    -V, --version  show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success; 2 bad input (the trace cannot be read) or bad usage.\n";

/* Folds the trace for `metric` (MD_FOLD_SELF_CPU, MD_FOLD_SELF_CUDA_OP or MD_FOLD_SAMPLES) and
 * prints the folded lines: times in ns printed in us, samples as counts. @return 0, 1 when the
 * metric is samples and the trace has none, or STROBE_ENOMEM. */
static int run(const md_model *m, md_fold_metric metric) {
    md_fold f;
    uint64_t samples = 0;
    int err = md_fold_init(&f);
    if (!err) err = md_fold_add(&f, m, metric, MD_FOLD_STACK, 0, &samples);
    if (!err) err = md_fold_print(&f, stdout, metric == MD_FOLD_SAMPLES ? 1 : 1000);
    md_fold_free(&f);
    return err ? err : metric == MD_FOLD_SAMPLES && samples == 0;
}

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("stacks", msg, arg);
}

const struct option cmd_stacks_options[] = {
    {"metric", required_argument, NULL, CLI_LONG_ONLY + 1},
    {"samples", no_argument, NULL, CLI_LONG_ONLY + 2},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_stacks(int argc, char **argv) {
    const char *path = NULL;
    int cuda = 0, quiet = 0, first = 0, samples = 0;
    for (int c; (c = cli_getopt(argc, argv, ":qhV", cmd_stacks_options, &first)) != -1;) {
        const char *v = optarg;
        switch (c) {
        case 'h':
            return cli_help(cmd_stacks_usage);
        case 'V':
            return cli_version();
        case 'q':
            quiet = 1;
            break;
        case CLI_LONG_ONLY + 1:
            if (strcmp(v, "self_cpu") == 0 || strcmp(v, "self_cpu_time_total") == 0)
                cuda = 0;
            else if (strcmp(v, "self_cuda") == 0 || strcmp(v, "self_cuda_time_total") == 0 ||
                     strcmp(v, "self_device") == 0)
                cuda = 1;
            else
                return usage_error("unknown --metric", v);
            break;
        case CLI_LONG_ONLY + 2:
            samples = 1;
            break;
        default:
            return cli_option_error("stacks", c, argv, cmd_stacks_options);
        }
    }
    if (cli_trace_operand("stacks", argc, argv, first, &path) != 0) return CLI_BAD_INPUT;
    md_model *m = malloc(sizeof *m);
    if (m == NULL) return usage_error("out of memory", NULL);
    int rc = cli_load(m, "stacks", path, quiet);
    if (rc == CLI_OK) {
        cli_say_skipped("stacks", path, m);
        if (samples) {
            int src = run(m, MD_FOLD_SAMPLES);
            if (src == 1) {
                fprintf(stderr,
                        "strobe stacks: %s: no CPU samples (events of category cpu_sample) in the "
                        "trace\n",
                        path);
                rc = CLI_BAD_INPUT;
            } else {
                rc = cli_finish("stacks", path, src, CLI_OK);
            }
        } else {
            int src = run(m, cuda ? MD_FOLD_SELF_CUDA_OP : MD_FOLD_SELF_CPU);
            rc = cli_finish("stacks", path, src != 0 ? STROBE_ENOMEM : 0, CLI_OK);
        }
        md_free(m);
    }
    free(m);
    return rc;
}
