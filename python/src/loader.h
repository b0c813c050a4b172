/* loader.h: strobe.load() over the CLI's trace model (cli/model.c), and `python -m strobe` (the
 * CLI's main, compiled in as strobe_py_cli_main). */
#ifndef STROBE_PY_LOADER_H
#define STROBE_PY_LOADER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Reads the trace at `path` (any trace the CLI reads): returns (events, threads, metadata) with
 * events as Result.events() gives them; RuntimeError naming the file and the problem on failure.
 * Steals the reference to `keep` (the object that owns path). */
PyObject *strobe_py_load(const char *path, PyObject *keep);
int strobe_py_load_init(void);

/* The CLI's main() (cli/main.c, renamed by cli_main.c). */
int strobe_py_cli_main(int argc, char **argv);

#endif
