/* folded.h: folded stacks as a tree of frames, the one builder behind `strobe stacks` (which prints
 * it as Brendan Gregg's folded lines) and `strobe flamegraph` (which draws it).
 *
 * A trace is folded into a tree whose nodes are frames: a node is a frame name under a parent
 * node, so that each path from the root is one distinct stack, and each node holds the weight of
 * the samples whose stack ends there (its self weight). Two weights per node (two slots) let one
 * tree hold two traces for a differential flame graph. What a sample is, and its stack, depends
 * on the metric (see cli_fold_metric) and the grouping (cli_fold_group). */
#ifndef STROBE_CLI_FOLDED_H
#define STROBE_CLI_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"
#include "util/strpool.h"
#include "util/strtab.h"
#include "util/u64map.h"

/* What the samples are and what weighs them. */
typedef enum cli_fold_metric {
    /* Each operator, user range and runtime call: its self CPU time (ns) as torch computes it
     * (md_cpu_tree), its stack ending in its own name. */
    CLI_FOLD_SELF_CPU = 0,
    /* Each kernel, copy and memset: its device time (ns), its stack that of the operator that
     * launched it (md_link), then the kernel's own name as the leaf. */
    CLI_FOLD_SELF_DEVICE,
    /* The CPU samples of the trace (instants of category cpu_sample), each weighing 1. */
    CLI_FOLD_SAMPLES,
    /* Each allocation ([memory] events with positive Bytes): its bytes, its stack that of the
     * operator enclosing it on its thread at its time (md_link). */
    CLI_FOLD_MEMORY,
    /* `strobe stacks --metric self_cuda`: the device time of the work each operator launched,
     * as that operator's own weight (no kernel frame). */
    CLI_FOLD_SELF_CUDA_OP
} cli_fold_metric;

/* Which frames a stack has. */
typedef enum cli_fold_group {
    /* The Python frames of the "Call stack" of the innermost operator that has one, root first,
     * then the operators below it; without a "Call stack", the nesting of operators (as
     * `strobe stacks` does). Samples: their native "Call stack". */
    CLI_FOLD_STACK = 0,
    /* The nesting of operators and user ranges only ("Call stack" ignored); samples: the
     * operators enclosing each sample on its thread. */
    CLI_FOLD_RANGE
} cli_fold_group;

/* What a frame is, for the flame graph's colours. */
typedef enum cli_frame_kind {
    CLI_FRAME_OTHER = 0, /* the root, and the frames that hold what no range encloses */
    CLI_FRAME_OP,        /* cpu_op */
    CLI_FRAME_USER,      /* user_annotation */
    CLI_FRAME_PYTHON,    /* a Python frame of a "Call stack" */
    CLI_FRAME_DEVICE,    /* a kernel, copy or memset */
    CLI_FRAME_RUNTIME,   /* a runtime or driver call */
    CLI_FRAME_SAMPLE,    /* a frame of a CPU sample's native stack */
    CLI_FRAME_KIND_COUNT
} cli_frame_kind;

typedef struct cli_fold_node {
    uint32_t parent; /* MD_NONE for the root (node 0); a parent's index is below its children's */
    uint32_t name;   /* id in cli_fold.names */
    uint8_t kind;    /* cli_frame_kind of the frame that made the node */
    int64_t self[2]; /* weight of the samples whose stack ends here, per slot (saturating) */
} cli_fold_node;

typedef struct cli_fold {
    cli_fold_node *nodes;
    size_t count, cap;
    strobe__pool pool;
    strobe__strtab names;    /* frame names, made safe: ';' and control characters are '_' */
    strobe__u64map children; /* (parent << 32 | name) -> node */
    char *scratch;           /* a frame name being made safe */
    size_t scratch_cap;
} cli_fold;

/* Starts a tree that holds the root only (node 0, named "all"). @return 0 or STROBE_ENOMEM
 * (cli_fold_free() in either case). */
int cli_fold_init(cli_fold *f);
void cli_fold_free(cli_fold *f);

/* Folds the samples of trace `m` for `metric` and `group` into `slot` (0 or 1) of the tree.
 * *samples (may be NULL) is set to the number of samples folded (events with a non-zero weight
 * for the time metrics). @return 0 or STROBE_ENOMEM. */
int cli_fold_add(cli_fold *f, const md_model *m, cli_fold_metric metric, cli_fold_group group,
                 int slot, uint64_t *samples);

/* Prints the tree's slot-0 stacks to `out` as folded lines, "frame;frame;... weight", sorted by
 * stack: the weight divided by `unit` and rounded to the nearest (when unit > 1); a line whose
 * weight is then 0 or less is left out. @return 0 or STROBE_ENOMEM. */
int cli_fold_print(const cli_fold *f, FILE *out, int64_t unit);

#endif
