/* hooks.h: what the core offers the drivers beside it (src/ondemand, src/drivers), so that the
 * core includes none of their headers. Besides the public API, a driver uses only these. */
#ifndef STROBE_CORE_HOOKS_H
#define STROBE_CORE_HOOKS_H

#include <stdint.h>

#include "strobe/session.h"

/* Called (atomic pointer; NULL: none) by strobe_step() with the step that begins: the on-demand
 * endpoint sets it while an iteration-mode trace is armed or recording. */
extern void (*strobe__step_hook)(uint64_t step);

/* Called (atomic pointer; NULL: none) by strobe_step() after strobe__step_hook, in place of
 * strobe__session_step(step): the schedule (src/drivers/schedule.c) sets it while installed, moves
 * its sessions along and then calls strobe__session_step() with the step's number in the
 * schedule. */
extern void (*strobe__schedule_step_hook)(uint64_t step);

/* 1 while a schedule is installed (strobe__schedule_step_hook set). */
int strobe__schedule_installed(void);

/* session.c: marks a step boundary in the recording session, if any: the open ProfilerStep range
 * ends now and "ProfilerStep#<number>" begins, opened by the calling thread. strobe_stop() ends
 * the open one at stop. The collector puts each on its thread's track where it nests there, else
 * on a track of their own ("ProfilerStep"). Any thread; takes the session lock (not from the hot
 * path). */
void strobe__session_step(uint64_t number);

/* session.c: takes in a caller's config (util/struct_in.h): *dst becomes the library's defaults
 * overlaid with the caller's struct_size bytes. @return 0, STROBE_EINVAL (NULL, struct_size below
 * STROBE_CONFIG_MIN_SIZE) or STROBE_ENOTSUP (a newer program's field this library lacks is set). */
int strobe__config_in(strobe_config *dst, const strobe_config *src);

/* Defined beside the on-demand endpoint's STROBE_ONDEMAND=1 constructor (src/ondemand): hotpath.c
 * takes its address so that a static link keeps that object, constructor included, in every
 * instrumented program. A link-level reference only: the core calls nothing there. */
extern int strobe__od_autostart;

#endif /* STROBE_CORE_HOOKS_H */
