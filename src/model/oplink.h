/* oplink.h: what the CLI's tables need beyond the model's nesting: which events are rows of the
 * operator table, each event's enclosing operator, and the correlation chain that ties device
 * work (kernels, copies, memsets) to the CPU operator that launched it. */
#ifndef STROBE_MODEL_OPLINK_H
#define STROBE_MODEL_OPLINK_H

#include <stdint.h>

#include "model.h"

/* An operator: the events torch's key_averages() groups and that own device work and memory. */
static inline int md_is_op(int kind) {
    return kind == MD_CPU_OP || kind == MD_USER_ANNOTATION;
}

/* A CPU row of the operator table: operators, and the CPU side of the device runtime
 * (cudaLaunchKernel, cudaMemcpyAsync, cudaDeviceSynchronize ...), which torch's table lists too.
 * Python functions are not rows (torch leaves them out of key_averages()); cuda_sync events lie
 * on the device's streams, and torch counts them as device work, not CPU time. */
static inline int md_is_row(int kind) {
    return md_is_op(kind) || kind == MD_RUNTIME || kind == MD_DRIVER;
}

/* Names torch's key_averages() leaves out (_filter_name in torch/autograd/profiler_util.py):
 * utility ops it drops before building its events, so that they are neither rows nor children of
 * anything. */
int md_left_out(const char *name);

/* An event of torch's CPU tree: a CPU row with a time, neither malformed nor left out. */
int md_in_cpu_tree(const md_model *m, const md_event *e);

/* Self CPU time as torch's key_averages() computes it (FunctionEvent.self_cpu_time_total): an
 * event's duration less those of its children, where (torch's _populate_cpu_children) the events
 * of md_in_cpu_tree() on each thread, by start and then longer first, are children of the
 * innermost one that contains them whole; an event that ends after the range it starts in is not
 * its child, but the child of the innermost one containing it. Siblings can then overlap (real
 * traces have them, torch's legacy export too, from its rounding), and an event's self time can
 * be negative, as in torch: torch's row sums include it, so the callers hold a sum, not an event,
 * at zero. As torch's _remove_dup_nodes does, an event that is the only child of an event of its
 * name is merged into it: merged[i] is set, it is no call of its own, and its children are its
 * parent's. Fills, in arrays of m->count, parent[i] (the parent that is not merged; MD_NONE where
 * none, and for events outside the tree), self[i] (0 outside the tree and for merged events) and
 * merged[i]. @return 0 or STROBE_ENOMEM. */
int md_cpu_tree(const md_model *m, uint32_t *parent, int64_t *self, uint8_t *merged);

/* md_cpu_tree's self times without its arrays: calls fn(ctx, i, self) for each event of the tree
 * that is not merged, with self[i], thread by thread, once the event's last child is seen; it
 * holds a bit per event and a stack as deep as the tree. @return 0, STROBE_ENOMEM, or the first
 * non-zero return of fn (which stops the walk). */
int md_cpu_selfs(const md_model *m, int (*fn)(void *ctx, uint32_t i, int64_t self), void *ctx);

/* The innermost row enclosing event i on its thread (skipping python functions and other
 * ranges in between), or MD_NONE. */
uint32_t md_row_parent(const md_model *m, uint32_t i);
/* The innermost operator enclosing event i on its thread, or MD_NONE. */
uint32_t md_op_parent(const md_model *m, uint32_t i);

/* Sets owner[i] (an array of m->count, zeroed by the caller: calloc) to 1 + the operator that
 * event i belongs to, and leaves it 0 where none (owner[i] - 1 is then MD_NONE), so that the
 * pages of a trace without device work or memory events are never touched:
 *   - device work: the operator enclosing the runtime or driver call with the same
 *     "correlation" (a CUPTI correlation id); failing that, the operator whose "External id"
 *     equals the device event's (or the runtime call's) own. Flow events are not needed: they
 *     repeat the correlation id.
 *   - [memory] events: the innermost operator enclosing them on their thread. The 2021 schema
 *     writes memory events with a numeric tid and operators with the same tid as a string; such
 *     a memory event is matched against that string thread at its time.
 * @return 0, or STROBE_ENOMEM. */
int md_link(const md_model *m, uint32_t *owner);

#endif
