/* strobe/ondemand.h: traces started from outside a running process (the seed's on-demand
 * profiling and its client interface).
 *
 * A process opts in with STROBE_ONDEMAND=1 in its environment (the endpoint starts when
 * libstrobe is loaded) or with strobe_ondemand_start(). It then serves a control endpoint: a Unix
 * domain socket "PID.sock" in a folder only its user can enter ($STROBE_RUNTIME_DIR, else
 * $XDG_RUNTIME_DIR/strobe, else /tmp/strobe-UID; created 0700), the socket itself 0600, and every
 * peer's credentials checked: a process of another user is refused. A background thread serves it;
 * it sleeps in poll() while idle, so an idle endpoint costs nothing.
 *
 * The `strobe` command talks to it: `strobe trigger` starts a trace (for a duration, or for a
 * number of steps from the next step that is a multiple of a round-up), `strobe ps` lists the
 * processes that serve an endpoint, `strobe memory-profile` records allocations for a while.
 * The traced process writes the trace itself, to a path the request names. Output paths are
 * checked: absolute, no ".." component, and inside an allowed folder (by default the system temp
 * folder and the process's working directory) after every link is resolved; the file itself may
 * not be a link. A trigger while a trace (or the program's own session or schedule) runs is
 * answered "busy".
 *
 * The endpoint also answers dynolog's trigger (`dyno gputrace`) as libkineto does, when the
 * environment asks for it: KINETO_USE_DAEMON set, or STROBE_DYNOLOG=1 (STROBE_DYNOLOG=0: never).
 * Either starts the endpoint as STROBE_ONDEMAND=1 does. Its thread then registers the process with
 * the daemon and polls it for configs (every 5 s, STROBE_DYNOLOG_POLL_MS to change); a gputrace
 * config starts a trace as a trigger would, under the same output path rules (docs/GUIDE.md,
 * "dynolog").
 *
 * Contents: the client interface, options, start and stop. */
#ifndef STROBE_ONDEMAND_H
#define STROBE_ONDEMAND_H

#include <stddef.h>
#include <string.h>
#include "export.h"
#include "result.h"
#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The seam between the endpoint and the profiler (the seed's ClientInterface). The endpoint only
 * calls these; by default they drive strobe's own session. A framework with its own notion of a
 * profiling session (its own start hooks, its own result post-processing) installs its own with
 * strobe_ondemand_set_client(). All calls come from the endpoint's thread, except start and stop
 * in iteration mode, which come from the thread that calls strobe_step(). Each returns 0 or a
 * negative STROBE_E* code; the endpoint reports failures to the requester. */
typedef struct strobe_client_interface {
    /* Once, before the first request is served. May be NULL. */
    void (*init)(void *ctx);
    /* Makes a session ready with cfg (activities and detail flags from the request) without
     * recording: the costly setup happens here, before the window opens. */
    int (*prepare)(void *ctx, const strobe_config *cfg);
    /* Opens the prepared session's window. */
    int (*start)(void *ctx);
    /* Ends the session and hands its result to *out (the endpoint saves and frees it). */
    int (*stop)(void *ctx, strobe_result **out);
    /* Memory profile: starts recording allocations (profile_memory), stops, and writes what was
     * recorded to `path`. */
    int (*start_memory_profile)(void *ctx);
    int (*stop_memory_profile)(void *ctx);
    int (*export_memory_profile)(void *ctx, const char *path);
} strobe_client_interface;

/* Installs the client the endpoint calls (copied; NULL: strobe's own, the default). Call it before
 * strobe_ondemand_start(), or while no on-demand trace runs. @return 0, STROBE_EINVAL (a NULL
 * function other than init) or STROBE_EBUSY (an on-demand trace runs). */
STROBE_API int strobe_ondemand_set_client(const strobe_client_interface *client, void *ctx);

/* The endpoint's options. Fill with strobe_ondemand_options_init(). Later versions add fields at
 * the end only, 0 meaning their default (README, "ABI and versions"). */
typedef struct strobe_ondemand_options {
    size_t struct_size; /* sizeof(strobe_ondemand_options) in the program's headers; set by init */
    /* Colon-separated folders traces may be written into (copied). NULL: the system temp folder
     * ($TMPDIR, else /tmp) and the process's working directory at the time of each request. The
     * environment variable STROBE_ONDEMAND_DIRS sets this for STROBE_ONDEMAND=1. */
    const char *output_dirs;
    /* The folder for the socket (copied). NULL: as described at the top of this header. */
    const char *socket_dir;
} strobe_ondemand_options;

/* The smallest struct_size taken: the first layout, through socket_dir. */
#define STROBE_ONDEMAND_OPTIONS_MIN_SIZE                                                           \
    (offsetof(strobe_ondemand_options, socket_dir) +                                               \
     sizeof(((strobe_ondemand_options *)0)->socket_dir))

/* Fills *opt with the defaults (NULLs) and sets struct_size. */
static inline void strobe_ondemand_options_init(strobe_ondemand_options *opt) {
    if (opt == NULL) return;
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
}

/* Starts the endpoint and its thread (opt NULL: the defaults). @return 0, STROBE_EBUSY (already
 * started), STROBE_ENOTSUP (options from newer headers that set a field this library lacks),
 * STROBE_EINVAL (struct_size below STROBE_ONDEMAND_OPTIONS_MIN_SIZE, an option is unusable, e.g. a
 * socket folder owned by another user or writable by others: logged with the reason), STROBE_ENOMEM
 * or STROBE_ESYS. */
STROBE_API int strobe_ondemand_start(const strobe_ondemand_options *opt);

/* Stops the endpoint: its thread ends and the socket is removed. A trace it started is stopped
 * and written first. @return 0 or STROBE_ENOSESSION (not started). Not from a client callback. */
STROBE_API int strobe_ondemand_stop(void);

/* Copies the endpoint's socket path into buf. @return 0, STROBE_ENOSESSION (not started) or
 * STROBE_EINVAL (does not fit). */
STROBE_API int strobe_ondemand_socket_path(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
