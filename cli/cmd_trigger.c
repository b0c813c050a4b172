/* cmd_trigger.c: `strobe trigger`: starts a trace in running processes that serve an on-demand
 * endpoint (strobe/ondemand.h), and reports where each trace went. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "od_client.h"

const char cmd_trigger_usage[] =
    "NAME\n"
    "    strobe trigger - start a trace in a running process\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe trigger (--pid PID | --all) [--duration-ms N | --iterations N\n"
    "                   [--start-iteration-roundup N]] -o PATH [--record-shapes]\n"
    "                   [--profile-memory] [--with-stack] [--with-flops] [--with-modules]\n"
    "                   [--activities cpu,cuda] [--timeout-ms N] [--no-wait]\n"
    "    strobe trigger (--pid PID | --all) --flight-dump -o PATH\n"
    "\n"
    "DESCRIPTION\n"
    "    Asks the process PID (or every process of this user that serves an endpoint, with\n"
    "    --all; see `strobe ps`) to record a trace and write it to PATH. The process must run\n"
    "    with STROBE_ONDEMAND=1 in its environment, or call strobe_ondemand_start().\n"
    "\n"
    "    Duration mode (the default, 500 ms): the trace starts at once and stops after N ms.\n"
    "    Iteration mode: the trace starts at the next step (strobe_step()) whose number is a\n"
    "    multiple of the round-up (default 1) and records N steps, each a ProfilerStep#K range.\n"
    "\n"
    "    The traced process writes the trace itself. PATH is made absolute against this\n"
    "    command's working directory. In PATH, each process expands %p to its pid, %r to its\n"
    "    rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; 0 when none is set) and\n"
    "    %% to '%'. Without %p or %r, when several processes trace, each one's pid is put\n"
    "    before the file name's first dot (trace.json -> trace.1234.json). The process only\n"
    "    writes into its allowed folders (by default the temp folder and its working directory),\n"
    "    never through '..' or a link. The format follows PATH's suffix, as strobe_result_save().\n"
    "    A process that exits normally (exit(), a return from main) during its trace writes the\n"
    "    trace at exit.\n"
    "\n"
    "    A job on many hosts: run one trigger per host, each with --all, through the job's\n"
    "    launcher, in iteration mode with a round-up, so that every rank starts at the same\n"
    "    step (the first multiple of N after the step it is at when the request arrives):\n"
    "        mpirun -np HOSTS --map-by ppr:1:node strobe trigger --all --iterations 5 \\\n"
    "            --start-iteration-roundup 100 -o '/tmp/trace_%r.json'\n"
    "    The ranks of a synchronous job step together, so they agree unless a multiple of N\n"
    "    passes between the first and the last rank's request: make N large against the steps\n"
    "    that pass while the launcher reaches every host. --all reaches the processes whose\n"
    "    endpoint is in this command's socket folder ($STROBE_RUNTIME_DIR, else\n"
    "    $XDG_RUNTIME_DIR/strobe, else /tmp/strobe-UID).\n"
    "\n"
    "    --flight-dump writes the window a process's flight recorder keeps (its own session\n"
    "    with ring_bytes or ring_ms) to PATH, while it goes on recording.\n"
    "\n"
    "    One line per process says where its trace went, or why it did not trace: busy (a\n"
    "    trace, or the program's own session or schedule, runs), refused (another user's\n"
    "    process), a path outside the allowed folders, or gone.\n"
    "\n"
    "OPTIONS\n"
    "    --pid PID                  the process to trace\n"
    "    --all                      every process of this user that serves an endpoint\n"
    "    --duration-ms N            record for N ms (1 .. 86400000)\n"
    "    --iterations N             record N steps\n"
    "    --start-iteration-roundup N  start at a step that is a multiple of N\n"
    "    -o, --output PATH          where the process writes the trace (required)\n"
    "    --record-shapes, --profile-memory, --with-stack, --with-flops, --with-modules\n"
    "                               the session's detail flags (strobe_config)\n"
    "    --activities LIST          cpu (always), cuda\n"
    "    --timeout-ms N             how long to wait for the traces (default: the duration plus\n"
    "                               60 s; in iteration mode, 310 s). An iteration trace that has\n"
    "                               not finished in N ms is ended by the process itself.\n"
    "    --no-wait                  return once each process has started its trace\n"
    "    --flight-dump              write the flight recorder's window instead of tracing\n"
    "    -h, --help                 show this text\n"
    "    -V, --version              show strobe's version\n"
    "\n"
    "EXIT STATUS\n"
    "    0  every process traced (or, with --no-wait, started)\n"
    "    1  some process did not trace (the lines say why)\n"
    "    2  usage error, or no process to trace\n";

enum {
    OPT_PID = CLI_LONG_ONLY + 1,
    OPT_ALL,
    OPT_DURATION,
    OPT_ITERATIONS,
    OPT_ROUNDUP,
    OPT_RECORD_SHAPES,
    OPT_PROFILE_MEMORY,
    OPT_WITH_STACK,
    OPT_WITH_FLOPS,
    OPT_WITH_MODULES,
    OPT_ACTIVITIES,
    OPT_TIMEOUT,
    OPT_NO_WAIT,
    OPT_FLIGHT_DUMP,
};

const struct option cmd_trigger_options[] = {
    {"pid", required_argument, NULL, OPT_PID},
    {"all", no_argument, NULL, OPT_ALL},
    {"duration-ms", required_argument, NULL, OPT_DURATION},
    {"iterations", required_argument, NULL, OPT_ITERATIONS},
    {"start-iteration-roundup", required_argument, NULL, OPT_ROUNDUP},
    {"output", required_argument, NULL, 'o'},
    {"record-shapes", no_argument, NULL, OPT_RECORD_SHAPES},
    {"profile-memory", no_argument, NULL, OPT_PROFILE_MEMORY},
    {"with-stack", no_argument, NULL, OPT_WITH_STACK},
    {"with-flops", no_argument, NULL, OPT_WITH_FLOPS},
    {"with-modules", no_argument, NULL, OPT_WITH_MODULES},
    {"activities", required_argument, NULL, OPT_ACTIVITIES},
    {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
    {"no-wait", no_argument, NULL, OPT_NO_WAIT},
    {"flight-dump", no_argument, NULL, OPT_FLIGHT_DUMP},
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

/* 1 when `path` holds %p or %r, read as the process reads it: "%%" is a '%' and starts no escape
 * ("%%p" is the text "%p"). */
static int names_process(const char *path) {
    for (const char *s = path; *s; s++) {
        if (s[0] != '%') continue;
        if (s[1] == 'p' || s[1] == 'r') return 1;
        if (s[1] == '%') s++;
    }
    return 0;
}

int cmd_trigger(int argc, char **argv) {
    const char *cmd = "trigger";
    strobe__od_request rq;
    memset(&rq, 0, sizeof rq);
    rq.verb = STROBE__OD_TRIGGER;
    rq.roundup = 1;
    long pid = -1;
    int all = 0, no_wait = 0, have_roundup = 0, dump = 0;
    int64_t timeout = 0;
    const char *output = NULL;
    int first = 0;
    for (int c; (c = cli_getopt(argc, argv, ":o:hV", cmd_trigger_options, &first)) != -1;) {
        const char *v = optarg;
        int64_t num;
        switch (c) {
        case 'h':
            return cli_help(cmd_trigger_usage);
        case 'V':
            return cli_version();
        case OPT_ALL:
            all = 1;
            break;
        case OPT_NO_WAIT:
            no_wait = 1;
            break;
        case OPT_FLIGHT_DUMP:
            dump = 1;
            break;
        case OPT_RECORD_SHAPES:
            rq.flags |= STROBE__OD_RECORD_SHAPES;
            break;
        case OPT_PROFILE_MEMORY:
            rq.flags |= STROBE__OD_PROFILE_MEMORY;
            break;
        case OPT_WITH_STACK:
            rq.flags |= STROBE__OD_WITH_STACK;
            break;
        case OPT_WITH_FLOPS:
            rq.flags |= STROBE__OD_WITH_FLOPS;
            break;
        case OPT_WITH_MODULES:
            rq.flags |= STROBE__OD_WITH_MODULES;
            break;
        case OPT_PID:
            if (strobe__od_parse_num(v, 4194304, &num) != 0)
                return cli_usage_error(cmd, "bad pid", v);
            pid = (long)num;
            break;
        case OPT_DURATION:
            if (strobe__od_parse_num(v, STROBE__OD_MAX_DURATION_MS, &rq.duration_ms) != 0)
                return cli_usage_error(cmd, "--duration-ms takes 1 .. 86400000", v);
            break;
        case OPT_ITERATIONS:
            if (strobe__od_parse_num(v, STROBE__OD_MAX_ITERATIONS, &rq.iterations) != 0)
                return cli_usage_error(cmd, "--iterations takes 1 .. 1000000", v);
            break;
        case OPT_ROUNDUP:
            if (strobe__od_parse_num(v, STROBE__OD_MAX_ITERATIONS, &rq.roundup) != 0)
                return cli_usage_error(cmd, "--start-iteration-roundup takes 1 .. 1000000", v);
            have_roundup = 1;
            break;
        case OPT_TIMEOUT:
            if (strobe__od_parse_num(v, STROBE__OD_MAX_TIMEOUT_MS, &timeout) != 0)
                return cli_usage_error(cmd, "bad --timeout-ms", v);
            break;
        case 'o':
            output = v;
            break;
        case OPT_ACTIVITIES: {
            char list[256];
            if (strlen(v) >= sizeof list) return cli_usage_error(cmd, "bad --activities", v);
            strcpy(list, v);
            char *save = NULL;
            for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (strcmp(w, "cpu") == 0)
                    rq.activities |= 1u;
                else if (strcmp(w, "cuda") == 0)
                    rq.activities |= 2u;
                else
                    return cli_usage_error(cmd, "unknown activity (cpu, cuda)", w);
            }
            break;
        }
        default:
            return cli_option_error(cmd, c, argv, cmd_trigger_options);
        }
    }
    if (first < argc) return cli_usage_error(cmd, "unexpected argument", argv[first]);
    if ((pid >= 0) == all) return cli_usage_error(cmd, "give one of --pid PID or --all", NULL);
    if (output == NULL || output[0] == '\0')
        return cli_usage_error(cmd, "--output is required", NULL);
    if (rq.duration_ms && rq.iterations)
        return cli_usage_error(cmd, "--duration-ms and --iterations exclude each other", NULL);
    if (have_roundup && !rq.iterations)
        return cli_usage_error(cmd, "--start-iteration-roundup goes with --iterations", NULL);
    if (dump) {
        if (rq.duration_ms || rq.iterations || rq.flags || rq.activities || no_wait)
            return cli_usage_error(cmd, "--flight-dump takes only --pid/--all and --output", NULL);
        rq.verb = STROBE__OD_DUMP;
    } else if (!rq.iterations && !rq.duration_ms) {
        rq.duration_ms = 500;
    }
    if (rq.iterations && timeout) rq.timeout_ms = timeout;
    int64_t wait = timeout ? timeout : rq.iterations ? 310000 : rq.duration_ms + 60000;
    if (rq.iterations && timeout) wait = timeout + 10000;

    long *pids = NULL;
    size_t n = 0;
    if (all) {
        int stale;
        int c = cli_odc_list(cmd, &pids, &stale);
        if (c < 0) return CLI_BAD_INPUT;
        if (c == 0) {
            fprintf(stderr, "strobe trigger: no process of this user serves an endpoint (run it "
                            "with STROBE_ONDEMAND=1)\n");
            free(pids);
            return CLI_BAD_INPUT;
        }
        n = (size_t)c;
    } else {
        pids = malloc(sizeof *pids);
        if (pids == NULL) return CLI_BAD_INPUT;
        pids[0] = pid;
        n = 1;
    }
    cli_odc_target *t = calloc(n, sizeof *t);
    if (t == NULL) {
        free(pids);
        fprintf(stderr, "strobe trigger: out of memory\n");
        return CLI_BAD_INPUT;
    }
    /* A path with %p or %r names each process's file already (the process expands them). */
    int per_process = names_process(output);
    for (size_t i = 0; i < n; i++) {
        t[i].pid = pids[i];
        t[i].fd = -1;
        long tag = n > 1 && !per_process ? pids[i] : -1;
        if (cli_odc_output_path(output, tag, t[i].output, sizeof t[i].output) != 0) {
            free(t);
            free(pids);
            return cli_usage_error(cmd, "output path too long", output);
        }
    }
    int code = cli_odc_run(t, n, &rq, wait, no_wait);
    free(t);
    free(pids);
    return code;
}
