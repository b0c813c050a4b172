/* od_internal.h: what the on-demand endpoint (src/ondemand) shares with the rest of the library. */
#ifndef STROBE_ONDEMAND_OD_INTERNAL_H
#define STROBE_ONDEMAND_OD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/hooks.h"
#include "util/od_proto.h"

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

/* dynolog.c: the client side of dynolog's IPC protocol (libkineto's), which the endpoint's thread
 * serves beside its own socket. See dynolog.c for the protocol and the sources it comes from. */

/* The longest daemon name taken from STROBE_DYNOLOG_NAME (an abstract name, 108 - 2 bytes). */
#define STROBE__DYNO_MAX_NAME 100
/* What strobe__dyno_recv() received. */
#define STROBE__DYNO_CTXT 1 /* the daemon's answer to a registration */
#define STROBE__DYNO_REQ 2  /* its answer to a poll: a config, maybe empty */
/* The poll's kind bits (libkineto's LibkinetoConfigType). */
#define STROBE__DYNO_EVENTS 1
#define STROBE__DYNO_ACTIVITIES 2

/* 1 when the environment asks for the dynolog client: STROBE_DYNOLOG=1, or KINETO_USE_DAEMON set
 * (and not "0") while STROBE_DYNOLOG is unset; STROBE_DYNOLOG=0 turns it off. */
int strobe__dyno_enabled(void);
/* The poll interval: STROBE_DYNOLOG_POLL_MS (10 ms to an hour), else libkineto's 5 s. */
int64_t strobe__dyno_interval_ms(void);
/* The daemon's abstract name: STROBE_DYNOLOG_NAME, else "dynolog". */
const char *strobe__dyno_daemon_name(void);
/* Opens a non-blocking datagram socket bound to a fresh client name (written to name).
 * @return the descriptor, or with a message STROBE_ESYS or STROBE_ERANGE. */
int strobe__dyno_open(char *name, size_t cap, char *err, size_t errcap);
/* Send a registration ("ctxt") or a poll ("req" with the kind bits) without waiting. @return 0 or
 * STROBE_ESYS (errno kept: ECONNREFUSED or ENOENT when no daemon listens). */
int strobe__dyno_send_ctxt(int fd, const char *daemon, int32_t gpu);
int strobe__dyno_send_req(int fd, const char *daemon, int32_t type);
/* Reads one datagram: *kind and up to cap payload bytes (*len of them). @return 1 (one read), 0
 * (none waiting), or with a message STROBE_EINVAL (not from the daemon), STROBE_EFORMAT (malformed)
 * or STROBE_ESYS; a refused datagram is consumed. */
int strobe__dyno_recv(int fd, const char *daemon, int *kind, char *payload, size_t cap, size_t *len,
                      char *err, size_t errcap);
/* Reads a libkineto on-demand config (KEY=VALUE lines) into a trigger request. *start_step is
 * PROFILE_START_ITERATION when above 0 (the step to start at, or the next one when passed), else
 * -1 or 0 (the next multiple of rq->roundup). note gets what the trace will not honour.
 * @return 1 (a trace request in *rq), 0 (nothing for the activity profiler), or with a message
 * STROBE_EFORMAT or STROBE_ERANGE. */
int strobe__dyno_parse_config(const char *text, size_t len, strobe__od_request *rq,
                              int64_t *start_step, char *note, size_t notecap, char *err,
                              size_t errcap);

#endif
