/* od_internal.h: what the on-demand endpoint (src/ondemand) shares with the rest of the library. */
#ifndef STROBE_ONDEMAND_OD_INTERNAL_H
#define STROBE_ONDEMAND_OD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Nonzero (atomic) while the endpoint waits for steps (an iteration-mode trace is armed or
 * recording): strobe_step() then calls strobe__od_on_step() with the step that begins. */
extern int strobe__od_step_hook;
void strobe__od_on_step(uint64_t step);

/* Defined beside the STROBE_ONDEMAND=1 constructor; hotpath.c takes its address so that a static
 * link keeps the endpoint's object (and the constructor) in every instrumented program. */
extern int strobe__od_autostart;

/* schedule.c: 1 while a schedule is installed. */
int strobe__schedule_installed(void);

/* outpath.c: checks an output path against the allowed folders and pins its folder.
 * `roots` is a colon-separated list of folders, or NULL for the defaults (the temp folder and the
 * working directory). On success *dirfd is an open descriptor of the path's folder (the caller
 * closes it) and save_path is "/proc/self/fd/N/NAME", a name that reaches the file through that
 * descriptor whatever happens to the folder's path meanwhile. @return 0, or -1 with a message. */
int strobe__od_check_output(const char *path, const char *roots, int *dirfd, char *save_path,
                            size_t cap, char *err, size_t errcap);

#endif
