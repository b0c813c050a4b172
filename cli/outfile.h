/* outfile.h: a command's -o OUT written whole or not at all (strobe flamegraph, strobe export).
 *
 * OUT is written to a temporary file in OUT's folder and renamed over OUT once complete, so that a
 * failure leaves an existing OUT as it was and no partial file. An OUT that exists and is not a
 * regular file (/dev/null, a pipe) is written directly: a rename would replace it. */
#ifndef STROBE_CLI_OUTFILE_H
#define STROBE_CLI_OUTFILE_H

#include <stdio.h>

typedef struct cli_outfile {
    const char *path;
    char tmp[4200]; /* "" when written directly */
    FILE *f;        /* open after cli_outfile_open returned 0 */
} cli_outfile;

/* Opens OUT for writing with fopen's `mode` ("w" or "wb"); `tag` names the temporary file
 * (".strobe-TAG.XXXXXX" beside OUT). @return 0, or an errno value (the system's reason). */
int cli_outfile_open(cli_outfile *o, const char *path, const char *mode, const char *tag);

/* Closes the output; with ok, renames it over OUT, else removes it. @return 0 or an errno
 * value. */
int cli_outfile_close(cli_outfile *o, int ok);

#endif
