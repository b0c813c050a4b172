/* dispatch.c: `strobe`, the command-line tool: cli_main() dispatches to one subcommand per source
 * file (the list is in doc.c). main.c's main() calls it, and so does the Python extension for
 * `python -m strobe` (strobe._strobe.cli), which compiles every file of cli/ but main.c. It uses
 * the library's public API, the streaming trace reader and the util layer only.
 *
 * Two options are left out of the usage text, as they are for the build: `--man NAME [FILE]`
 * writes a man page and `--bash-completion [FILE]` the completion script (see doc.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common.h"

static int unknown_command(const char *name) {
    fprintf(stderr, "strobe: unknown command '%s' (strobe --help lists them)\n", cli_esc(name));
    return CLI_BAD_INPUT;
}

/* `strobe --man NAME [FILE]` (NAME: strobe or a command) and `strobe --bash-completion [FILE]`:
 * what the build installs, written to FILE or standard output. */
static int generate(int argc, char **argv) {
    int man = strcmp(argv[1], "--man") == 0;
    const char *name = man && argc > 2 ? argv[2] : NULL;
    const char *path = argc > 2 + man ? argv[2 + man] : NULL;
    if (man && name == NULL) return cli_usage_error("--man", "give strobe or a command", NULL);
    FILE *out = path ? fopen(path, "w") : stdout;
    if (out == NULL) {
        fprintf(stderr, "strobe: %s: %s\n", cli_esc(path), strerror(errno));
        return CLI_BAD_INPUT;
    }
    int rc = 0;
    if (man)
        rc = cli_write_man(out, strcmp(name, "strobe") == 0 ? NULL : name);
    else
        cli_write_completion(out);
    if (rc != 0) {
        if (path) fclose(out);
        return unknown_command(name);
    }
    if (path) {
        if (fclose(out) != 0) {
            fprintf(stderr, "strobe: %s: %s\n", cli_esc(path), strerror(errno));
            return CLI_BAD_INPUT;
        }
        return CLI_OK;
    }
    return cli_finish(argv[1] + 2, "", 0, CLI_OK);
}

int cli_main(int argc, char **argv) {
    if (argc < 2) {
        cli_main_usage(stderr);
        return CLI_BAD_INPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        cli_main_usage(stdout);
        return cli_finish("help", "", 0, CLI_OK);
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) return cli_version();
    if (strcmp(cmd, "--man") == 0 || strcmp(cmd, "--bash-completion") == 0)
        return generate(argc, argv);
    if (strcmp(cmd, "help") == 0) {
        if (argc < 3) {
            cli_main_usage(stdout);
            return CLI_OK;
        }
        for (size_t i = 0; i < cli_command_count; i++)
            if (strcmp(argv[2], cli_commands[i].name) == 0) return cli_help(cli_commands[i].usage);
        return unknown_command(argv[2]);
    }
    if (cmd[0] == '-') {
        fprintf(stderr, "strobe: unknown option '%s' (strobe --help)\n", cli_esc(cmd));
        return CLI_BAD_INPUT;
    }
    for (size_t i = 0; i < cli_command_count; i++)
        if (strcmp(cmd, cli_commands[i].name) == 0) return cli_commands[i].run(argc - 1, argv + 1);
    return unknown_command(cmd);
}
