/* common.h: what every subcommand does the same way: report a usage error, load the trace (or
 * say in one line why it cannot), and finish its output. */
#ifndef STROBE_CLI_COMMON_H
#define STROBE_CLI_COMMON_H

#include "model.h"

/* Prints "strobe CMD: MSG[: ARG] (strobe CMD --help)" on stderr. @return CLI_BAD_INPUT. */
int cli_usage_error(const char *cmd, const char *msg, const char *arg);

/* Takes an argument that no option of the subcommand consumed: with `options` (no "--" seen
 * yet) a word starting with '-' is an unknown option; otherwise it is the trace, of which there
 * is one. @return 0 (and *path set), or CLI_BAD_INPUT after printing the usage error. */
int cli_operand(const char *cmd, const char *arg, int options, const char **path);

/* Loads `path` into *m. On failure prints "strobe CMD: PATH: problem" on stderr, frees *m and
 * returns CLI_BAD_INPUT; on success returns 0 and the caller md_free()s *m. */
int cli_load(md_model *m, const char *cmd, const char *path);

/* Ends a subcommand: `work` is 0 or the negative error of its analysis (reported as
 * "strobe CMD: PATH: out of memory"); stdout is flushed and a write error reported. @return
 * `ok_code` when all went well, else CLI_BAD_INPUT. */
int cli_finish(const char *cmd, const char *path, int work, int ok_code);

#endif
