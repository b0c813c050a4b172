/* od_internal.h: what the on-demand endpoint (src/ondemand) shares with the rest of the library. */
#ifndef STROBE_ONDEMAND_OD_INTERNAL_H
#define STROBE_ONDEMAND_OD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/hooks.h"

/* The step hook (core/hooks.h) while an iteration-mode trace is armed or recording: starts and
 * stops the trace on the steps it waits for. */
void strobe__od_on_step(uint64_t step);

/* outpath.c: checks an output path against the allowed folders and pins its folder, after
 * expanding %p (pid), %r (the rank in RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; 0 when
 * none is set) and %% (a literal '%') in it; any other '%' stays as it is.
 * `roots` is a colon-separated list of folders, or NULL for the defaults (the temp folder and the
 * working directory). On success *dirfd is an open descriptor of the path's folder (the caller
 * closes it) and save_path is "/proc/self/fd/N/NAME", a name that reaches the file through that
 * descriptor whatever happens to the folder's path meanwhile. path_out (NULL: not wanted) gets the
 * expanded path, the file's name as the requester should be told it. @return 0, or with a message
 * STROBE_EINVAL (a path refused), STROBE_ERANGE (too long) or STROBE_ESYS (a system call failed).
 */
int strobe__od_check_output(const char *path, const char *roots, int *dirfd, char *save_path,
                            size_t cap, char *path_out, size_t path_cap, char *err, size_t errcap);

#endif
