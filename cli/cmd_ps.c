/* cmd_ps.c: `strobe ps`: this user's processes that serve an on-demand endpoint. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"
#include "od_client.h"
#include "strobe/error.h"

const char cmd_ps_usage[] =
    "NAME\n"
    "    strobe ps - processes that can be traced on demand\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe ps\n"
    "\n"
    "DESCRIPTION\n"
    "    Lists this user's processes that serve an on-demand endpoint (STROBE_ONDEMAND=1, or\n"
    "    strobe_ondemand_start()), one line each: PID, STATE (idle; armed: waiting for the\n"
    "    first step of an iteration trace; tracing; memory; writing), STEPS (strobe_step()\n"
    "    calls so far) and COMMAND. A process that does not answer within a second is shown\n"
    "    with state \"no-answer\". Sockets left by processes that are gone are removed.\n"
    "\n"
    "OPTIONS\n"
    "    -h, --help      show this text\n"
    "    -V, --version   show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0  success (also when no process serves an endpoint)\n"
    "    2  usage error, or the socket folder is unusable\n";

/* Asks one process for its status. @return 0 with the reply in line, or a negative STROBE_E* code
 * with err. */
static int ask_status(long pid, char *line, size_t cap, char *err, size_t errcap) {
    int fd = cli_odc_connect(pid, err, errcap);
    if (fd < 0) return fd;
    static const char req[] = "status\n";
    if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
        snprintf(err, errcap, "cannot send: %s", strerror(errno));
        close(fd);
        return STROBE_ESYS;
    }
    size_t len = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 1000) <= 0) {
            snprintf(err, errcap, "no-answer");
            break;
        }
        ssize_t r = read(fd, line + len, cap - 1 - len);
        if (r <= 0) {
            snprintf(err, errcap, "closed");
            break;
        }
        len += (size_t)r;
        if (memchr(line, '\n', len)) {
            line[len] = '\0';
            close(fd);
            return 0;
        }
        if (len == cap - 1) {
            snprintf(err, errcap, "reply too long");
            break;
        }
    }
    close(fd);
    return STROBE_EIO;
}

const struct option cmd_ps_options[] = {
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_ps(int argc, char **argv) {
    int first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":hV", cmd_ps_options, &first)) != -1;) {
        if (c == 'h') return cli_help(cmd_ps_usage);
        if (c == 'V') return cli_version();
        return cli_option_error("ps", c, argv, cmd_ps_options);
    }
    if (first < argc) return cli_usage_error("ps", "unexpected argument", argv[first]);
    long *pids;
    int stale;
    int n = cli_odc_list("ps", &pids, &stale);
    if (n < 0) return CLI_BAD_INPUT;
    printf("%-8s %-9s %-8s %s\n", "PID", "STATE", "STEPS", "COMMAND");
    for (int i = 0; i < n; i++) {
        char line[STROBE__OD_MAX_LINE + 1], err[256], st[32], steps[32], cmdline[1024];
        if (ask_status(pids[i], line, sizeof line, err, sizeof err) != 0) {
            printf("%-8ld %-9s %-8s %s\n", pids[i], "no-answer", "-", cli_esc(err));
            continue;
        }
        size_t len = strlen(line);
        if (strobe__od_get(line, len, "state", st, sizeof st) < 0) snprintf(st, sizeof st, "?");
        if (strobe__od_get(line, len, "steps", steps, sizeof steps) < 0)
            snprintf(steps, sizeof steps, "?");
        if (strobe__od_get(line, len, "cmd", cmdline, sizeof cmdline) < 0)
            snprintf(cmdline, sizeof cmdline, "?");
        /* The reply is the other process's: escaped, as text from a trace is. */
        printf("%-8ld %-9s %-8s %s\n", pids[i], cli_esc(st), cli_esc(steps), cli_esc(cmdline));
    }
    if (stale)
        fprintf(stderr, "strobe ps: removed %d socket(s) of processes that are gone\n", stale);
    free(pids);
    return cli_finish("ps", "", 0, CLI_OK);
}
