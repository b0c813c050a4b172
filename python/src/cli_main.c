/* cli_main.c: the CLI's main() (cli/main.c) compiled into the extension under another name, for
 * `python -m strobe` (strobe._strobe.cli). */
#include "loader.h"

#define main strobe_py_cli_main
#include "../../cli/main.c"
