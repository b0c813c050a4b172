/* folded.h: folded stacks as a tree of frames, the one builder behind `strobe stacks` (which prints
 * it as Brendan Gregg's folded lines) and `strobe flamegraph` (which draws it).
 *
 * A trace is folded into a tree whose nodes are frames: a node is a frame name under a parent
 * node, so that each path from the root is one distinct stack, and each node holds the weight of
 * the samples whose stack ends there (its self weight). Two weights per node (two slots) let one
 * tree hold two traces for a differential flame graph. What a sample is, and its stack, depends
 * on the metric (see md_fold_metric) and the grouping (md_fold_group). */
#ifndef STROBE_MODEL_FOLDED_H
#define STROBE_MODEL_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "util/strpool.h"
#include "util/strtab.h"
#include "util/u64map.h"

/* What the samples are and what weighs them. */
typedef enum md_fold_metric {
    /* Each operator, user range and runtime call: its self CPU time (ns) as torch computes it
     * (md_cpu_tree), its stack ending in its own name. */
    MD_FOLD_SELF_CPU = 0,
    /* Each kernel, copy and memset: its device time (ns), its stack that of the operator that
     * launched it (md_link), then the kernel's own name as the leaf. */
    MD_FOLD_SELF_DEVICE,
    /* The CPU samples of the trace (instants of category cpu_sample), each weighing 1. */
    MD_FOLD_SAMPLES,
    /* Each allocation ([memory] events with positive Bytes): its bytes, its stack that of the
     * operator enclosing it on its thread at its time (md_link). */
    MD_FOLD_MEMORY,
    /* `strobe stacks --metric self_cuda`: the device time of the work each operator launched,
     * as that operator's own weight (no kernel frame). */
    MD_FOLD_SELF_CUDA_OP
} md_fold_metric;

/* Which frames a stack has. */
typedef enum md_fold_group {
    /* The Python frames of the "Call stack" of the innermost operator that has one, root first,
     * then the operators below it; without a "Call stack", the nesting of operators (as
     * `strobe stacks` does). Samples: their native "Call stack". */
    MD_FOLD_STACK = 0,
    /* The nesting of operators and user ranges only ("Call stack" ignored); samples: the
     * operators enclosing each sample on its thread. */
    MD_FOLD_RANGE
} md_fold_group;

/* What a frame is, for the flame graph's colours. */
typedef enum md_frame_kind {
    MD_FRAME_OTHER = 0, /* the root, and the frames that hold what no range encloses */
    MD_FRAME_OP,        /* cpu_op */
    MD_FRAME_USER,      /* user_annotation */
    MD_FRAME_PYTHON,    /* a Python frame of a "Call stack" */
    MD_FRAME_DEVICE,    /* a kernel, copy or memset */
    MD_FRAME_RUNTIME,   /* a runtime or driver call */
    MD_FRAME_SAMPLE,    /* a frame of a CPU sample's native stack */
    MD_FRAME_KIND_COUNT
} md_frame_kind;

typedef struct md_fold_node {
    uint32_t parent; /* MD_NONE for the root (node 0); a parent's index is below its children's */
    uint32_t name;   /* id in md_fold.names */
    uint8_t kind;    /* md_frame_kind of the frame that made the node */
    int64_t self[2]; /* weight of the samples whose stack ends here, per slot (saturating) */
} md_fold_node;

typedef struct md_fold {
    md_fold_node *nodes;
    size_t count, cap;
    strobe__pool pool;
    strobe__strtab names;    /* frame names, made safe: ';' and control characters are '_' */
    strobe__u64map children; /* (parent << 32 | name) -> node */
    char *scratch;           /* a frame name being made safe */
    size_t scratch_cap;
} md_fold;

/* Starts a tree that holds the root only (node 0, named "all"). @return 0 or STROBE_ENOMEM
 * (md_fold_free() in either case). */
int md_fold_init(md_fold *f);
void md_fold_free(md_fold *f);

/* Folds the samples of trace `m` for `metric` and `group` into `slot` (0 or 1) of the tree.
 * *samples (may be NULL) is set to the number of samples folded (events with a non-zero weight
 * for the time metrics). @return 0 or STROBE_ENOMEM. */
int md_fold_add(md_fold *f, const md_model *m, md_fold_metric metric, md_fold_group group, int slot,
                uint64_t *samples);

/* Prints the tree's slot-0 stacks to `out` as folded lines, "frame;frame;... weight", sorted by
 * stack: the weight divided by `unit` and rounded to the nearest (when unit > 1); a line whose
 * weight is then 0 or less is left out. @return 0 or STROBE_ENOMEM. */
int md_fold_print(const md_fold *f, FILE *out, int64_t unit);

#endif
