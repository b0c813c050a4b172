/* common.h: what every subcommand does the same way: parse its options (getopt_long, GNU
 * conventions), report a usage error in one line, escape what it prints from a file, load the
 * trace (or say in one line why it cannot) with a progress line on a terminal, and finish its
 * output.
 *
 * Contents: escaping, options, progress, loading, finishing. */
#ifndef STROBE_CLI_COMMON_H
#define STROBE_CLI_COMMON_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "model/model.h"

/* ---- escaping ------------------------------------------------------------------------------ */

/* s made safe for a terminal and for a one-line message: control characters (C0, DEL, and the
 * C1 controls U+0080..U+009F) and bytes that are not UTF-8 are written as escapes (\n, \t, \r,
 * \e for ESC, \xHH, \u00HH), so that text from a trace can neither move the cursor, recolour
 * the terminal nor break a line. @return s itself when nothing needs escaping, else the escaped
 * copy in one of eight buffers that are reused in turn (so up to eight results may be used in
 * one printf). Not thread-safe. */
const char *cli_esc(const char *s);
/* The same for s[0..len), which may hold NUL bytes (written as \x00). */
const char *cli_esc_n(const char *s, size_t len);
/* cli_esc(s) written to f, with no buffer shared: for messages made on several threads at once
 * (strobe merge's workers). */
void cli_put_esc(FILE *f, const char *s);
/* cli_utf8_seq(), which cli_esc() uses, is in emit.h with the writers that share it. */

/* ---- options ------------------------------------------------------------------------------- */

/* The options every command takes, for its struct option table: -h/--help, -V/--version. */
#define CLI_OPTIONS_STD                                                                            \
    {"help", no_argument, NULL, 'h'}, {                                                            \
        "version", no_argument, NULL, 'V'                                                          \
    }
/* -q/--quiet, for the commands that read a trace (no progress line). */
#define CLI_OPTION_QUIET                                                                           \
    { "quiet", no_argument, NULL, 'q' }
/* Options with no short form take values from CLI_LONG_ONLY up, so that getopt_long's result
 * (and the completion script, which lists a short form for each value below 128) cannot take
 * them for a letter. */
#define CLI_LONG_ONLY 1000
/* --name-width N (long only). */
#define CLI_OPT_NAME_WIDTH CLI_LONG_ONLY
#define CLI_OPTION_NAME_WIDTH                                                                      \
    { "name-width", required_argument, NULL, CLI_OPT_NAME_WIDTH }
/* torch's key_averages().table() default max_name_column_width. */
#define CLI_NAME_WIDTH_DEFAULT 55

/* getopt_long over argv, with GNU conventions: options and operands in any order, "--" ends
 * the options, --opt=value and --opt value, unique prefixes of long options, short options
 * grouped (-qn5). `shortopts` must start with ':' (so that a missing value is told from an
 * unknown option). *first_operand must be 0 before the first call: getopt's state is reset then,
 * so that a command may run several times in one process (the tests do).
 * @return the option's value as getopt_long returns it, or -1 at the end; then *first_operand is
 * the index of the first operand in the permuted argv. Errors are returned as '?' and ':' for
 * cli_option_error(). */
/* qsort() that takes an empty array with a NULL base (which qsort may not be given). */
void cli_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               int *first_operand);

/* Prints the one-line error for an option getopt refused ('?': unknown, ':': missing value):
 * "strobe CMD: unknown option: --bogus (strobe CMD --help)". @return CLI_BAD_INPUT. */
int cli_option_error(const char *cmd, int c, char **argv, const struct option *longopts);

/* Prints "strobe CMD: MSG[: ARG] (strobe CMD --help)" on stderr, ARG escaped. @return
 * CLI_BAD_INPUT. */
int cli_usage_error(const char *cmd, const char *msg, const char *arg);

/* Prints the usage text (-h, --help). @return CLI_OK. */
int cli_help(const char *usage);
/* Prints "strobe VERSION" (-V, --version). @return CLI_OK. */
int cli_version(void);

/* The one trace operand of a command after its options (argv[first..argc)): none or more than
 * one is a usage error. "-" is standard input. @return 0 with *path set, or CLI_BAD_INPUT. */
int cli_trace_operand(const char *cmd, int argc, char **argv, int first, const char **path);

/* Parses a decimal count 0..max for option `opt` (as "--limit"). @return 0, or CLI_BAD_INPUT
 * after the usage error. */
int cli_parse_count(const char *cmd, const char *opt, const char *v, unsigned long long max,
                    unsigned long long *out);

/* Parses --name-width: 4 (one character and "...") to 10000. @return 0 or CLI_BAD_INPUT. */
int cli_parse_name_width(const char *cmd, const char *v, size_t *out);

/* ---- progress ------------------------------------------------------------------------------ */

/* A progress line on stderr while a command reads a trace that takes longer than a second:
 * "strobe CMD: reading PATH: 45% (412 MB)", rewritten in place and cleared at the end; only when
 * stderr is a terminal and the command was not given --quiet. The reading happens in the model
 * and the reader, which know nothing of it: a thread looks at the position of the file
 * descriptor that has the trace open (found by device and inode among this process's
 * descriptors) against the file's size. A gzip file shows the share of its compressed bytes; a
 * pipe shows the time spent only. */
typedef struct cli_progress cli_progress;

/* Starts watching `path` for command `cmd`. @return the watcher, or NULL when no line is to be
 * shown (quiet, not a terminal, or no thread could be started). */
cli_progress *cli_progress_start(const char *cmd, const char *path, int quiet);
/* Stops the watcher and clears its line. Accepts NULL. */
void cli_progress_stop(cli_progress *p);

/* The progress line's text (no "\r"), for tests: pos and size in bytes, size < 0 when unknown;
 * elapsed_ms for a pipe. @return its length. */
size_t cli_progress_format(char *buf, size_t cap, const char *cmd, const char *path, long long pos,
                           long long size, long long elapsed_ms);

/* For tests: the delay before the line shows (default 1000 ms), and whether stderr counts as a
 * terminal (-1: ask isatty(), the default; 0 no; 1 yes). */
extern int cli_progress_delay_ms;
extern int cli_progress_tty;

/* ---- files -------------------------------------------------------------------------------- */

struct stat;

/* Whether s ends with suffix. */
int cli_ends_with(const char *s, const char *suffix);

/* The regular files of folder `dir` whose names `want` accepts, but the file `skip` (NULL: none),
 * as "dir/name" paths in name order: *paths (malloc'd, each path malloc'd; cli_free_paths) and
 * *n. @return 0, STROBE_ENOMEM, or -1 with errno set when the folder cannot be opened. */
int cli_folder_files(const char *dir, int (*want)(const char *name), const struct stat *skip,
                     char ***paths, size_t *n);
void cli_free_paths(char **paths, size_t n);

/* ---- loading and finishing ----------------------------------------------------------------- */

/* Loads `path` ("-": standard input) into *m, with the progress line unless `quiet`. On failure
 * prints "strobe CMD: PATH: problem" on stderr (escaped: the problem may quote the file), frees
 * *m and returns CLI_BAD_INPUT; on success returns 0 and the caller md_free()s *m. */
int cli_load(md_model *m, const char *cmd, const char *path, int quiet);
/* The second half of cli_load, for a model md_load() filled (rc its result) on another thread:
 * prints cli_load's warnings, or its error (freeing *m). @return as cli_load. */
int cli_load_said(md_model *m, const char *cmd, const char *path, int rc);

/* Says on stderr, when the model read from `path` had malformed events, "strobe CMD: PATH: N
 * malformed event(s) skipped; `strobe check` lists them" (the line every command that reads a
 * trace prints, but check and info, which show them). */
void cli_say_skipped(const char *cmd, const char *path, const md_model *m);

/* Ends a subcommand: `work` is 0 or the negative error of its analysis (reported as
 * "strobe CMD: PATH: out of memory"); stdout is flushed and a write error reported. @return
 * `ok_code` when all went well, else CLI_BAD_INPUT. */
int cli_finish(const char *cmd, const char *path, int work, int ok_code);

/* Why writing an output failed, for a message: the system's reason (strerror(sys_errno): "No
 * space left on device") where `rc` is STROBE_ESYS or STROBE_EIO and sys_errno is the errno the
 * failed call left (the library's writer sets it), else strobe_strerror(rc). */
const char *cli_out_reason(int rc, int sys_errno);

/* Prints a pid, tid or flow id of the model on stdout by its kind: a number, a string id
 * (quoted; escaped for the terminal, or as a JSON string when `json`), or absent ("(none)", or
 * null in JSON). */
void cli_print_id(const md_model *m, int64_t num, uint8_t kind, int json);

/* ---- jobs ---------------------------------------------------------------------------------- */

/* Commands that read several traces read them on threads: -j N, --jobs N. cli_jobs is the number
 * given (0: none given, then the cores this process may run on). */
extern int cli_jobs;
/* The workers to use for n inputs: cli_jobs, or the cores available (sched_getaffinity; under an
 * MPI launcher, shared by the launch's processes on this machine), at most n and at least 1. */
int cli_jobs_for(size_t n);
/* Parses -j's value into cli_jobs. @return 0, or the usage error's exit status after its
 * message. */
int cli_parse_jobs(const char *cmd, const char *arg);
/* The option -j, --jobs N (getopt's "j:"), and its usage lines. */
#define CLI_OPTION_JOBS                                                                            \
    { "jobs", required_argument, NULL, 'j' }
#define CLI_JOBS_USAGE                                                                             \
    "    -j, --jobs N   read N traces at a time, each on its own thread (default: the cores\n"     \
    "                   available); the output is the same for every N\n"
/* Calls work(arg, i) once for each i in [0, n), on `jobs` threads (the caller's own when 1), the
 * i's handed out in increasing order. Once a call returns non-zero, no greater i is handed out
 * (those already running finish): the caller finds the first failure by looking at its results
 * in order, as a sequential loop would stop at it. Where no thread can be started, the caller's
 * does all the work. */
void cli_parallel(size_t n, int jobs, int (*work)(void *arg, size_t i), void *arg);

#endif
