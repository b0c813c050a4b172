/* common.c: see common.h. */
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "strobe/error.h"

int cli_usage_error(const char *cmd, const char *msg, const char *arg) {
    fprintf(stderr, "strobe %s: %s%s%s (strobe %s --help)\n", cmd, msg, arg ? ": " : "",
            arg ? arg : "", cmd);
    return CLI_BAD_INPUT;
}

int cli_operand(const char *cmd, const char *arg, int options, const char **path) {
    if (options && arg[0] == '-' && arg[1] != '\0')
        return cli_usage_error(cmd, "unknown option", arg);
    if (*path != NULL) return cli_usage_error(cmd, "more than one trace", arg);
    *path = arg;
    return 0;
}

int cli_load(md_model *m, const char *cmd, const char *path) {
    if (md_load(m, path) == 0) {
        /* Read all the same, as a cut JSON array is; but a cut packet loses events, so say so. */
        if (m->pf_cut)
            fprintf(stderr,
                    "strobe %s: warning: %s: Perfetto trace cut inside a packet at byte %lld: "
                    "read up to the last whole packet\n",
                    cmd, strcmp(path, "-") == 0 ? "<stdin>" : path, (long long)m->pf_cut_offset);
        return 0;
    }
    fprintf(stderr, "strobe %s: %s\n", cmd, m->err);
    md_free(m);
    return CLI_BAD_INPUT;
}

int cli_finish(const char *cmd, const char *path, int work, int ok_code) {
    if (work != 0) {
        fflush(stdout);
        fprintf(stderr, "strobe %s: %s: %s\n", cmd, path, strobe_strerror(work));
        return CLI_BAD_INPUT;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "strobe %s: writing the output: %s\n", cmd, strerror(errno));
        return CLI_BAD_INPUT;
    }
    return ok_code;
}
