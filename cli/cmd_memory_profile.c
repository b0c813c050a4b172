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
    "    strobe memory-profile --pid PID --duration-ms N -o PATH [--timeout-ms N]\n"
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
    "    -o, --output PATH  where the process writes the profile\n"
    "    --timeout-ms N     how long to wait (default: the duration plus 60 s)\n"
    "    -h, --help         show this text\n"
    "    -V, --version      show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0  the profile was written\n"
    "    1  the process did not record (the line says why)\n"
    "    2  usage error\n";

enum { OPT_PID = CLI_LONG_ONLY + 1, OPT_DURATION, OPT_TIMEOUT };

const struct option cmd_memory_profile_options[] = {
    {"pid", required_argument, NULL, OPT_PID},
    {"duration-ms", required_argument, NULL, OPT_DURATION},
    {"output", required_argument, NULL, 'o'},
    {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

int cmd_memory_profile(int argc, char **argv) {
    const char *cmd = "memory-profile";
    strobe__od_request rq;
    memset(&rq, 0, sizeof rq);
    rq.verb = STROBE__OD_MEMORY;
    int64_t pid = 0, timeout = 0;
    const char *output = NULL;
    int first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":o:hV", cmd_memory_profile_options, &first)) != -1;) {
        const char *v = optarg;
        switch (c) {
        case 'h':
            return cli_help(cmd_memory_profile_usage);
        case 'V':
            return cli_version();
        case 'o':
            output = v;
            break;
        case OPT_PID:
            if (strobe__od_parse_num(v, 4194304, &pid) != 0)
                return cli_usage_error(cmd, "bad pid", v);
            break;
        case OPT_DURATION:
            if (strobe__od_parse_num(v, STROBE__OD_MAX_DURATION_MS, &rq.duration_ms) != 0)
                return cli_usage_error(cmd, "--duration-ms takes 1 .. 86400000", v);
            break;
        case OPT_TIMEOUT:
            if (strobe__od_parse_num(v, STROBE__OD_MAX_TIMEOUT_MS, &timeout) != 0)
                return cli_usage_error(cmd, "bad --timeout-ms", v);
            break;
        default:
            return cli_option_error(cmd, c, argv, cmd_memory_profile_options);
        }
    }
    if (first < argc) return cli_usage_error(cmd, "unexpected argument", argv[first]);
    if (pid == 0) return cli_usage_error(cmd, "--pid is required", NULL);
    if (rq.duration_ms == 0) return cli_usage_error(cmd, "--duration-ms is required", NULL);
    if (output == NULL || output[0] == '\0')
        return cli_usage_error(cmd, "--output is required", NULL);
    cli_odc_target t;
    memset(&t, 0, sizeof t);
    t.pid = (long)pid;
    t.fd = -1;
    if (cli_odc_output_path(output, -1, t.output, sizeof t.output) != 0)
        return cli_usage_error(cmd, "output path too long", output);
    return cli_odc_run(&t, 1, &rq, timeout ? timeout : rq.duration_ms + 60000, 0);
}
