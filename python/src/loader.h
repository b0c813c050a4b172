/* loader.h: strobe.load() over the trace model (src/model/model.c). */
#ifndef STROBE_PY_LOADER_H
#define STROBE_PY_LOADER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Reads the trace at `path` (any trace the CLI reads): returns (events, threads, metadata) with
 * events as Result.events() gives them; RuntimeError naming the file and the problem on failure.
 * Steals the reference to `keep` (the object that owns path). */
PyObject *strobe_py_load(const char *path, PyObject *keep);
int strobe_py_load_init(void);

#endif
