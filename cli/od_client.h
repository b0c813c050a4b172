/* od_client.h: the CLI's side of the on-demand protocol (src/util/od_proto.h): finding the
 * processes that serve an endpoint, and sending one request to several of them at once. */
#ifndef STROBE_CLI_OD_CLIENT_H
#define STROBE_CLI_OD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "util/od_proto.h"

/* Lists the pids with a socket in the socket folder, ascending, into a malloc()ed array.
 * Sockets whose process is gone are removed (and counted in *stale). @return the count, or a
 * negative STROBE_E* code with a message on stderr (the folder is unusable). */
int cli_odc_list(const char *cmd, long **pids, int *stale);

/* Connects to pid's endpoint. @return the socket, or a negative STROBE_E* code with a reason in
 * err. */
int cli_odc_connect(long pid, char *err, size_t errcap);

/* One exchange with one process, for cli_odc_run(). */
typedef struct cli_odc_target {
    long pid;
    int fd;                         /* -1 once finished */
    char line[STROBE__OD_MAX_LINE]; /* the partial reply being read */
    size_t len;
    int accepted; /* an "ok" came */
    int outcome;  /* 0 waiting, 1 done, 2 did not trace */
    char output[STROBE__OD_MAX_PATH];
} cli_odc_target;

/* Sends each target its request (req with output set per target) and waits until each has
 * answered "done", "failed" or "error", or left, or timeout_ms passed (then it is reported as
 * still running, and its trace may still be written). With no_wait, the "ok" ends the wait.
 * One line per process on stdout. @return CLI exit code: 0 when every process traced (or, with
 * no_wait, accepted), 1 otherwise. */
int cli_odc_run(cli_odc_target *t, size_t n, const strobe__od_request *req, int64_t timeout_ms,
                int no_wait);

/* Makes `path` absolute (against the working directory) into out; with pid >= 0 inserts ".PID"
 * before the file name's first dot (or appends it). @return 0, STROBE_ERANGE (too long) or
 * STROBE_ESYS (no working directory). */
int cli_odc_output_path(const char *path, long pid, char *out, size_t cap);

#endif
