/* step.c: the step counter, strobe_step() and strobe_step_count() (strobe/schedule.h), and the
 * hooks through which the drivers beside the core follow steps (core/hooks.h): the on-demand
 * endpoint's iteration traces and the schedule (src/drivers/schedule.c). */
#include <stddef.h>

#include "hooks.h"
#include "strobe/schedule.h"

static uint64_t step_count; /* atomic */

void (*strobe__step_hook)(uint64_t);
void (*strobe__schedule_step_hook)(uint64_t);

int strobe__schedule_installed(void) {
    return __atomic_load_n(&strobe__schedule_step_hook, __ATOMIC_ACQUIRE) != NULL;
}

uint64_t strobe_step(void) {
    uint64_t n = __atomic_add_fetch(&step_count, 1, __ATOMIC_RELAXED);
    /* An on-demand trace in iteration mode starts and stops on steps too. */
    void (*hook)(uint64_t) = __atomic_load_n(&strobe__step_hook, __ATOMIC_ACQUIRE);
    if (hook) hook(n);
    /* A schedule numbers the step's ProfilerStep range itself (from its own step 0), after its
     * transitions may have stopped or started a session. */
    void (*sched)(uint64_t) = __atomic_load_n(&strobe__schedule_step_hook, __ATOMIC_ACQUIRE);
    if (sched)
        sched(n);
    else
        strobe__session_step(n);
    return n;
}

uint64_t strobe_step_count(void) {
    return __atomic_load_n(&step_count, __ATOMIC_RELAXED);
}
