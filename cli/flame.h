/* flame.h: flame graphs as self-contained SVG (`strobe flamegraph`, and the flame graph of
 * `strobe report`), in the manner of flamegraph.pl: a frame per rectangle, its name, value and
 * share in a <title>, the root ("all") at the bottom, children left to right by name, the width of
 * a frame its inclusive value. An inline script (no network, nothing external) shows a frame's
 * details on hover, zooms on click, and searches by regular expression, summing the share of the
 * frames that match (a match inside a match is counted once).
 *
 * The frames come from the folded-stack builder that `strobe stacks` uses (model/folded.h). */
#ifndef STROBE_CLI_FLAME_H
#define STROBE_CLI_FLAME_H

#include <stddef.h>
#include <stdio.h>

#include "model/model.h"

/* What weighs a frame (see md_fold_metric). */
typedef enum cli_flame_metric {
    CLI_FLAME_SELF_CPU = 0, /* self CPU time of operators, user ranges and runtime calls (ns) */
    CLI_FLAME_SELF_DEVICE,  /* device time of kernels, copies and memsets, under the CPU stack of
                               the operator that launched them, the kernel as the leaf (ns) */
    CLI_FLAME_SAMPLES,      /* CPU samples (a count) */
    CLI_FLAME_MEMORY,       /* bytes allocated, under the ranges enclosing each allocation */
    CLI_FLAME_METRIC_COUNT
} cli_flame_metric;

/* Which frames a stack has (see md_fold_group). */
typedef enum cli_flame_group {
    CLI_FLAME_BY_STACK = 0, /* "Call stack" Python frames, then the operators (`strobe stacks`) */
    CLI_FLAME_BY_RANGE      /* the nesting of operators and user ranges only */
} cli_flame_group;

/* Options; a zeroed struct gives the defaults. */
typedef struct cli_flame_opts {
    int metric;         /* cli_flame_metric; default self CPU time */
    int group_by;       /* cli_flame_group; default by stack */
    const char *title;  /* the heading; NULL: "Flame graph" ("Differential flame graph") */
    const char *source; /* what the graph is of (a file name), shown under the heading; NULL:
                           nothing */
    unsigned width;     /* of the image, px (100 to 100000); 0: 1200 */
    double min_width;   /* px: a frame narrower is merged into its parent's self (and the SVG
                           says how many were); 0: 0.1 */
    const char *id;     /* id of the <svg> element, which scopes its styles and script: give each
                           graph of one HTML page its own. Letters, digits, '-' and '_'; NULL:
                           "strobe-flame" */
    int embed;          /* 1: no XML declaration, for an <svg> inside an HTML document */
} cli_flame_opts;

/* Writes the flame graph of trace `m` to `out` as one SVG document. A trace with nothing to
 * weigh gives a valid SVG that says "no samples". @return 0, or a negative STROBE_E* error
 * (STROBE_EINVAL for bad options, STROBE_ENOMEM, STROBE_EIO when writing failed) with `err`
 * set to one line (`err` may be NULL when errlen is 0). */
int cli_flame_svg(FILE *out, const md_model *m, const cli_flame_opts *o, char *err, size_t errlen);

/* Writes a differential flame graph (flamegraph.pl's difffolded convention): the frames and their
 * widths are those of `test`; each frame is coloured by the change of its inclusive value from
 * `base` to `test`, red where it grew and blue where it shrank, the stronger the larger the
 * relative change; its <title> shows both values and the change. Frames that only `base` has
 * have no width and are not drawn (their loss shows in their parents). @return as
 * cli_flame_svg(). */
int cli_flame_svg_diff(FILE *out, const md_model *base, const md_model *test,
                       const cli_flame_opts *o, char *err, size_t errlen);

/* The metric named `s` ("self_cpu", "self_device", "samples", "memory"), or -1. */
int cli_flame_metric_parse(const char *s);
/* The name of metric `metric` (as cli_flame_metric_parse() takes it). */
const char *cli_flame_metric_name(int metric);

#endif
