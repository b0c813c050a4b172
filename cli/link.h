/* link.h: what the CLI's tables need beyond the model's nesting: which events are rows of the
 * operator table, each event's enclosing operator, and the correlation chain that ties device
 * work (kernels, copies, memsets) to the CPU operator that launched it. */
#ifndef STROBE_CLI_LINK_H
#define STROBE_CLI_LINK_H

#include <stdint.h>

#include "model.h"

/* An operator: the events torch's key_averages() groups and that own device work and memory. */
static inline int cl_is_op(int kind) {
    return kind == MD_CPU_OP || kind == MD_USER_ANNOTATION;
}

/* A CPU row of the operator table: operators, and the CPU side of the device runtime
 * (cudaLaunchKernel, cudaMemcpyAsync, cudaDeviceSynchronize ...), which torch's table lists too.
 * Python functions are not rows (torch leaves them out of key_averages()); cuda_sync events lie
 * on the device's streams, and torch counts them as device work, not CPU time. */
static inline int cl_is_row(int kind) {
    return cl_is_op(kind) || kind == MD_RUNTIME || kind == MD_DRIVER;
}

/* The part of event e's time inside event p's: what e takes from p's self time. A child that
 * overlaps its parent without nesting in it (real traces have them) counts only for its part
 * inside, so that no self time is ever negative: the rows directly inside one are disjoint (the
 * model nests an event that starts inside another under it), and each takes at most its part. */
static inline int64_t cl_inside(const md_event *e, const md_event *p) {
    int64_t lo = e->ts > p->ts ? e->ts : p->ts;
    int64_t e_end = md_add_sat(e->ts, e->dur), p_end = md_add_sat(p->ts, p->dur);
    int64_t hi = e_end < p_end ? e_end : p_end;
    return hi > lo ? md_sub_sat(hi, lo) : 0;
}

/* The innermost row enclosing event i on its thread (skipping python functions and other
 * ranges in between), or MD_NONE. */
uint32_t cl_row_parent(const md_model *m, uint32_t i);
/* The innermost operator enclosing event i on its thread, or MD_NONE. */
uint32_t cl_op_parent(const md_model *m, uint32_t i);

/* Fills owner[i] (an array of m->count) with the operator that each event belongs to, MD_NONE
 * where none:
 *   - device work: the operator enclosing the runtime or driver call with the same
 *     "correlation" (a CUPTI correlation id); failing that, the operator whose "External id"
 *     equals the device event's (or the runtime call's) own. Flow events are not needed: they
 *     repeat the correlation id.
 *   - [memory] events: the innermost operator enclosing them on their thread. The 2021 schema
 *     writes memory events with a numeric tid and operators with the same tid as a string; such
 *     a memory event is matched against that string thread at its time.
 * @return 0, or STROBE_ENOMEM. */
int cl_link(const md_model *m, uint32_t *owner);

#endif
