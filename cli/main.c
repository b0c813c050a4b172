/* main.c: `strobe`, the command-line tool: dispatches to one subcommand per source file. It uses
 * the library's public API, the streaming trace reader and the util layer only. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "strobe/strobe.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
    const char *summary;
} commands[] = {
    {"summary", cmd_summary, cmd_summary_usage, "per-operator table, like key_averages().table()"},
    {"kernels", cmd_kernels, cmd_kernels_usage, "per-kernel table; busy and idle time per stream"},
    {"stacks", cmd_stacks, cmd_stacks_usage, "folded stacks for flamegraph.pl and speedscope"},
    {"check", cmd_check, cmd_check_usage, "what is wrong with a trace (exit 1 when anything)"},
    {"info", cmd_info, cmd_info_usage, "schema, time span, processes, threads, counts, metadata"},
    {"trigger", cmd_trigger, cmd_trigger_usage, "start a trace in a running process (on-demand)"},
    {"ps", cmd_ps, cmd_ps_usage, "this user's processes that can be traced on demand"},
    {"memory-profile", cmd_memory_profile, cmd_memory_profile_usage,
     "record a running process's allocations for a while"},
    {"convert", cmd_convert, cmd_convert_usage,
     "convert a trace: Kineto JSON <-> Perfetto protobuf (.pftrace)"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out,
            "usage: strobe COMMAND [OPTIONS] TRACE\n"
            "       strobe help COMMAND | strobe --help | strobe --version\n\n"
            "Reads Kineto-format Chrome traces (.json or .json.gz) written by strobe or by the\n"
            "PyTorch profiler, either schema, and Perfetto traces (.pftrace) written by strobe,\n"
            "and answers questions about them.\n\n"
            "Commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nExit status: 0 success; 1 findings (check); 2 bad input or usage.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_BAD_INPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("strobe %s\n", strobe_version());
        return CLI_OK;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc < 3) {
            usage(stdout);
            return CLI_OK;
        }
        for (size_t i = 0; i < NCOMMANDS; i++) {
            if (strcmp(argv[2], commands[i].name) == 0) {
                fputs(commands[i].usage, stdout);
                return CLI_OK;
            }
        }
        fprintf(stderr, "strobe: unknown command '%s' (strobe --help lists them)\n", argv[2]);
        return CLI_BAD_INPUT;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "strobe: unknown command '%s' (strobe --help lists them)\n", cmd);
    return CLI_BAD_INPUT;
}
