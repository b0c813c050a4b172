/* hooks.h: what the core offers the modules beside it (src/ondemand), so that the core includes
 * none of their headers. */
#ifndef STROBE_CORE_HOOKS_H
#define STROBE_CORE_HOOKS_H

#include <stdint.h>

/* Called (atomic pointer; NULL: none) by strobe_step() with the step that begins: the on-demand
 * endpoint sets it while an iteration-mode trace is armed or recording. */
extern void (*strobe__step_hook)(uint64_t step);

/* schedule.c: 1 while a schedule is installed. */
int strobe__schedule_installed(void);

/* Defined beside the on-demand endpoint's STROBE_ONDEMAND=1 constructor (src/ondemand): hotpath.c
 * takes its address so that a static link keeps that object, constructor included, in every
 * instrumented program. A link-level reference only: the core calls nothing there. */
extern int strobe__od_autostart;

#endif /* STROBE_CORE_HOOKS_H */
