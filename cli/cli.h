/* cli.h: the strobe command-line tool's subcommands (one source file each) and shared helpers.
 *
 * Exit codes, for every subcommand:
 *   0  success
 *   1  findings (`strobe check` found problems in the trace)
 *   2  bad input or usage: unreadable or malformed trace, unknown option. One line on stderr
 *      names the file and the problem (with the byte offset of a JSON syntax error). */
#ifndef STROBE_CLI_H
#define STROBE_CLI_H

#include <stdio.h>

#define CLI_OK 0
#define CLI_FINDINGS 1
#define CLI_BAD_INPUT 2

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

#endif
