/* cli.h: the strobe command-line tool's subcommands (one source file each) and shared helpers.
 *
 * Exit codes, for every subcommand:
 *   0  success
 *   1  findings (`strobe check` found problems in the trace)
 *   2  bad input or usage: unreadable or malformed trace, unknown option. One line on stderr
 *      names the file and the problem (with the byte offset of a JSON syntax error). */
#ifndef STROBE_CLI_H
#define STROBE_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#define CLI_OK 0
#define CLI_FINDINGS 1
#define CLI_BAD_INPUT 2

/* The whole command line (argv[0]: the program; argv[1]: a command or an option such as --help),
 * as `strobe` runs it: main.c's main() and the Python extension's `python -m strobe` call it
 * (dispatch.c). Returns an exit code. */
int cli_main(int argc, char **argv);

/* Each subcommand: argv[0] is the subcommand's name. Returns an exit code. */
int cmd_summary(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_trigger(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_memory_profile(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_steps(int argc, char **argv);
int cmd_breakdown(int argc, char **argv);
int cmd_overlap(int argc, char **argv);
int cmd_launches(int argc, char **argv);
int cmd_idle(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_ranks(int argc, char **argv);
int cmd_annotations(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_critical_path(int argc, char **argv);
int cmd_counters(int argc, char **argv);
int cmd_memory_bw(int argc, char **argv);
int cmd_overlay(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_open(int argc, char **argv);

/* Each subcommand's usage text (man-page style), printed by `strobe help CMD` and `CMD --help`. */
extern const char cmd_summary_usage[];
extern const char cmd_kernels_usage[];
extern const char cmd_stacks_usage[];
extern const char cmd_check_usage[];
extern const char cmd_info_usage[];
extern const char cmd_trigger_usage[];
extern const char cmd_ps_usage[];
extern const char cmd_memory_profile_usage[];
extern const char cmd_convert_usage[];
extern const char cmd_merge_usage[];
extern const char cmd_diff_usage[];
extern const char cmd_steps_usage[];
extern const char cmd_breakdown_usage[];
extern const char cmd_overlap_usage[];
extern const char cmd_launches_usage[];
extern const char cmd_idle_usage[];
extern const char cmd_queue_usage[];
extern const char cmd_ranks_usage[];
extern const char cmd_annotations_usage[];
extern const char cmd_record_usage[];
extern const char cmd_flamegraph_usage[];
extern const char cmd_report_usage[];
extern const char cmd_critical_path_usage[];
extern const char cmd_counters_usage[];
extern const char cmd_memory_bw_usage[];
extern const char cmd_overlay_usage[];
extern const char cmd_export_usage[];
extern const char cmd_open_usage[];

/* Each subcommand's options (getopt_long's table, ending in a zeroed entry): the same table
 * parses the command line and generates the bash completion (doc.c). */
extern const struct option cmd_summary_options[];
extern const struct option cmd_kernels_options[];
extern const struct option cmd_stacks_options[];
extern const struct option cmd_check_options[];
extern const struct option cmd_info_options[];
extern const struct option cmd_trigger_options[];
extern const struct option cmd_ps_options[];
extern const struct option cmd_memory_profile_options[];
extern const struct option cmd_convert_options[];
extern const struct option cmd_merge_options[];
extern const struct option cmd_diff_options[];
extern const struct option cmd_steps_options[];
extern const struct option cmd_breakdown_options[];
extern const struct option cmd_overlap_options[];
extern const struct option cmd_launches_options[];
extern const struct option cmd_idle_options[];
extern const struct option cmd_queue_options[];
extern const struct option cmd_ranks_options[];
extern const struct option cmd_annotations_options[];
extern const struct option cmd_record_options[];
extern const struct option cmd_flamegraph_options[];
extern const struct option cmd_report_options[];
extern const struct option cmd_critical_path_options[];
extern const struct option cmd_counters_options[];
extern const struct option cmd_memory_bw_options[];
extern const struct option cmd_overlay_options[];
extern const struct option cmd_export_options[];
extern const struct option cmd_open_options[];

/* The subcommands, in the order `strobe --help` lists them (doc.c). */
typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
    const struct option *options;
    const char *summary; /* one line for the command list */
} cli_command;
extern const cli_command cli_commands[];
extern const size_t cli_command_count;

/* The top-level usage text (`strobe --help`, `strobe help`, and strobe.1), written to out. */
void cli_main_usage(FILE *out);

/* Writes the man page (troff, man macros) of `strobe` (cmd NULL) or of one subcommand, made from
 * the same text as its --help. @return 0, STROBE_EINVAL when cmd is not a command, or
 * STROBE_ENOMEM. */
int cli_write_man(FILE *out, const char *cmd);

/* Writes the bash completion script: the commands, and each one's options from its table. */
void cli_write_completion(FILE *out);

#endif
