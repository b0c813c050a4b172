/* main.c: `strobe`, the command-line tool: dispatches to one subcommand per source file (the list
 * is in doc.c). It uses the library's public API, the streaming trace reader and the util layer
 * only.
 *
 * Two options are left out of the usage text, as they are for the build: `--man [COMMAND]`
 * writes a man page and `--bash-completion` the completion script (see doc.c). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common.h"

static int unknown_command(const char *name) {
    fprintf(stderr, "strobe: unknown command '%s' (strobe --help lists them)\n", cli_esc(name));
    return CLI_BAD_INPUT;
}

int main(int argc, char **argv) {
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
    if (strcmp(cmd, "--man") == 0) {
        if (cli_write_man(stdout, argc > 2 ? argv[2] : NULL) != 0) return unknown_command(argv[2]);
        return cli_finish("--man", "", 0, CLI_OK);
    }
    if (strcmp(cmd, "--bash-completion") == 0) {
        cli_write_completion(stdout);
        return cli_finish("--bash-completion", "", 0, CLI_OK);
    }
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
