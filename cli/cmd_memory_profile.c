/* cmd_memory_profile.c: `strobe memory-profile`: records a running process's allocations for a
 * while and has it write them out (the seed's start / stop / export memory profile). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "od_client.h"

const char cmd_memory_profile_usage[] =
    "NAME\n"
    "    strobe memory-profile - record a running process's allocations\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe memory-profile --pid PID --duration-ms N --output PATH [--timeout-ms N]\n"
    "\n"
    "DESCRIPTION\n"
    "    Asks the process PID, which serves an on-demand endpoint (STROBE_ONDEMAND=1), to\n"
    "    record what it reports through strobe_record_alloc() / strobe_record_free() for N ms\n"
    "    (a session with profile_memory), then to write it to PATH: \"[memory]\" instants and\n"
    "    the allocated and reserved bytes counters, with the ranges recorded meanwhile. PATH\n"
    "    follows the rules of `strobe trigger`.\n"
    "\n"
    "OPTIONS\n"
    "    --pid PID          the process\n"
    "    --duration-ms N    how long to record (1 .. 86400000)\n"
    "    --output PATH      where the process writes the profile\n"
    "    --timeout-ms N     how long to wait (default: the duration plus 60 s)\n"
    "    -h, --help         show this text\n"
    "\n"
    "EXIT STATUS\n"
    "    0  the profile was written\n"
    "    1  the process did not record (the line says why)\n"
    "    2  usage error\n";

int cmd_memory_profile(int argc, char **argv) {
    const char *cmd = "memory-profile";
    strobe__od_request rq;
    memset(&rq, 0, sizeof rq);
    rq.verb = STROBE__OD_MEMORY;
    int64_t pid = 0, timeout = 0;
    const char *output = NULL;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(cmd_memory_profile_usage, stdout);
            return CLI_OK;
        } else if (v == NULL) {
            return cli_usage_error(cmd, a[0] == '-' ? "option needs a value" : "unexpected", a);
        } else if (strcmp(a, "--pid") == 0) {
            if (strobe__od_parse_num(v, 4194304, &pid) != 0)
                return cli_usage_error(cmd, "bad pid", v);
        } else if (strcmp(a, "--duration-ms") == 0) {
            if (strobe__od_parse_num(v, STROBE__OD_MAX_DURATION_MS, &rq.duration_ms) != 0)
                return cli_usage_error(cmd, "--duration-ms takes 1 .. 86400000", v);
        } else if (strcmp(a, "--timeout-ms") == 0) {
            if (strobe__od_parse_num(v, STROBE__OD_MAX_TIMEOUT_MS, &timeout) != 0)
                return cli_usage_error(cmd, "bad --timeout-ms", v);
        } else if (strcmp(a, "--output") == 0) {
            output = v;
        } else {
            return cli_usage_error(cmd, "unknown option", a);
        }
    }
    if (pid == 0) return cli_usage_error(cmd, "--pid is required", NULL);
    if (rq.duration_ms == 0) return cli_usage_error(cmd, "--duration-ms is required", NULL);
    if (output == NULL || output[0] == '\0')
        return cli_usage_error(cmd, "--output is required", NULL);
    odc_target t;
    memset(&t, 0, sizeof t);
    t.pid = (long)pid;
    t.fd = -1;
    if (odc_output_path(output, -1, t.output, sizeof t.output) != 0)
        return cli_usage_error(cmd, "output path too long", output);
    return odc_run(&t, 1, &rq, timeout ? timeout : rq.duration_ms + 60000, 0);
}
