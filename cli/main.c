/* main.c: the `strobe` program's entry point; the command line is read by cli_main() (dispatch.c),
 * which the Python extension calls too. */
#include "cli.h"

int main(int argc, char **argv) {
    return cli_main(argc, argv);
}
