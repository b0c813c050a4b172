/* loader.c: strobe.load(path): a trace read by the trace model (src/model/model.c, streaming, any
 * format the CLI reads) turned into the tuples Result.events() gives, so that strobe.profiler's
 * key_averages() and events() work on it as on a session's result. */
#include "loader.h"

#include <stdint.h>
#include <string.h>

#include "model/model.h"
#include "strobe/result.h"

int strobe_py_load_init(void) {
    return 0;
}

static PyObject *str_of(const md_model *m, uint32_t id) {
    const char *s = md_str(m, id);
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* The category as strobe writes it: the model's kind for the old schema's names. */
static const char *category(const md_model *m, const md_event *e) {
    switch (e->kind) {
    case MD_CPU_OP:
        return "cpu_op";
    case MD_KERNEL:
        return md_str(m, e->cat)[0] ? md_str(m, e->cat) : "kernel";
    case MD_MEMCPY:
        return "gpu_memcpy";
    case MD_MEMSET:
        return "gpu_memset";
    default:
        return md_str(m, e->cat);
    }
}

static int add_arg(PyObject *list, const char *key, PyObject *json) {
    if (json == NULL) return -1;
    PyObject *t = Py_BuildValue("(sN)", key, json);
    int rc = t ? PyList_Append(list, t) : -1;
    Py_XDECREF(t);
    return rc;
}

static PyObject *event_tuple(const md_model *m, const md_event *e, long long parent,
                             unsigned depth) {
    PyObject *args = PyList_New(0);
    if (args == NULL) return NULL;
    int rc = 0;
    if (e->ext_id >= 0)
        rc |= add_arg(args, "External id", PyUnicode_FromFormat("%lld", (long long)e->ext_id));
    if (e->corr >= 0)
        rc |= add_arg(args, "correlation", PyUnicode_FromFormat("%lld", (long long)e->corr));
    if (e->shapes) rc |= add_arg(args, "Input Dims", str_of(m, e->shapes));
    if (e->flops != 0)
        rc |= add_arg(args, "flops", PyUnicode_FromFormat("%lld", (long long)e->flops));
    if (e->kind == MD_MEMORY)
        rc |= add_arg(args, "Bytes", PyUnicode_FromFormat("%lld", (long long)e->bytes));
    if (rc == 0 && e->stack) {
        /* The model keeps the text; the tuples carry JSON, as a result's args do. */
        PyObject *s = str_of(m, e->stack), *json = NULL;
        PyObject *mod = s ? PyImport_ImportModule("json") : NULL;
        if (mod) json = PyObject_CallMethod(mod, "dumps", "O", s);
        Py_XDECREF(mod);
        Py_XDECREF(s);
        rc |= add_arg(args, "Call stack", json);
    }
    if (rc == 0 && e->module) {
        PyObject *s = str_of(m, e->module), *json = NULL;
        PyObject *mod = s ? PyImport_ImportModule("json") : NULL;
        if (mod) json = PyObject_CallMethod(mod, "dumps", "O", s);
        Py_XDECREF(mod);
        Py_XDECREF(s);
        rc |= add_arg(args, "Module Hierarchy", json);
    }
    PyObject *targs = rc == 0 ? PyList_AsTuple(args) : NULL;
    Py_DECREF(args);
    if (targs == NULL) return NULL;
    const md_thread *th = &m->threads[e->thread];
    int device = md_is_device_work(e->kind);
    int kind = e->ph == 'X'   ? STROBE_EVENT_RANGE
               : e->ph == 'C' ? STROBE_EVENT_COUNTER
                              : STROBE_EVENT_INSTANT;
    const char *cat = category(m, e);
    return Py_BuildValue(
        "(NNLLLnLIiiiiKiNd)", str_of(m, e->name),
        PyUnicode_DecodeUTF8(cat, (Py_ssize_t)strlen(cat), "replace"), (long long)e->ts,
        (long long)(e->ts + e->dur), (long long)th->tid, (Py_ssize_t)e->thread, parent, depth, kind,
        e->kind == MD_USER_ANNOTATION ? 4 : 0, device ? STROBE_DEVICE_CUDA : STROBE_DEVICE_CPU,
        device ? (int)th->pid : -1,
        (unsigned long long)(e->corr >= 0     ? e->corr
                             : e->ext_id >= 0 ? e->ext_id
                                              : 0),
        0, targs, 0.0);
}

/* What the profiler's views read: operators, user ranges, Python functions, runtime calls, device
 * work and memory events (not the session's own span, flows, counters or other categories). */
static int kept_kind(int kind) {
    switch (kind) {
    case MD_CPU_OP:
    case MD_USER_ANNOTATION:
    case MD_PYTHON:
    case MD_KERNEL:
    case MD_MEMCPY:
    case MD_MEMSET:
    case MD_RUNTIME:
    case MD_DRIVER:
    case MD_MEMORY:
        return 1;
    default:
        return 0;
    }
}

PyObject *strobe_py_load(const char *path, PyObject *keep) {
    md_model *m = PyMem_Calloc(1, sizeof *m);
    if (m == NULL) {
        Py_DECREF(keep);
        return PyErr_NoMemory();
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = md_load(m, path);
    Py_END_ALLOW_THREADS Py_DECREF(keep);
    PyObject *out = NULL, *events = NULL, *threads = NULL, *meta = NULL;
    uint32_t *depth = NULL;
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "strobe: %s",
                     m->err[0] ? m->err : "cannot read the trace");
        goto done;
    }
    /* Events in file order; depth from the parent chain (parents come before children). */
    depth = PyMem_Calloc(m->count ? m->count : 1, sizeof *depth);
    events = PyList_New(0);
    if (depth == NULL || events == NULL) goto nomem;
    /* Only the events the profiler's views use: ranges, instants, counters, in time order. */
    uint32_t *idx = PyMem_Calloc(m->count ? m->count : 1, sizeof *idx);
    if (idx == NULL) goto nomem;
    size_t n = 0;
    for (size_t t = 0; t < m->thread_count; t++)
        for (size_t k = 0; k < m->threads[t].count; k++)
            idx[n++] = m->threads[t].order[k];
    /* Python index of each model event, for parents. */
    uint32_t *pos = PyMem_Calloc(m->count ? m->count : 1, sizeof *pos);
    if (pos == NULL) {
        PyMem_Free(idx);
        goto nomem;
    }
    for (size_t i = 0; i < m->count; i++)
        pos[i] = MD_NONE;
    size_t out_n = 0;
    for (size_t i = 0; i < n; i++) {
        const md_event e_ev = md_at(m, idx[i]), *e = &e_ev;
        if (e->ph != 'X' && e->ph != 'i' && e->ph != 'I' && e->ph != 'C') continue;
        if (!e->has_time || !kept_kind(e->kind)) continue;
        pos[idx[i]] = (uint32_t)out_n++;
    }
    for (size_t i = 0; i < n; i++) {
        const md_event e_ev = md_at(m, idx[i]), *e = &e_ev;
        if (pos[idx[i]] == MD_NONE) continue;
        uint32_t p = e->parent;
        while (p != MD_NONE && pos[p] == MD_NONE)
            p = md_parent(m, p);
        depth[idx[i]] = p == MD_NONE ? 0 : depth[p] + 1;
        PyObject *t = event_tuple(m, e, p == MD_NONE ? -1LL : (long long)pos[p], depth[idx[i]]);
        if (t == NULL || PyList_Append(events, t) < 0) {
            Py_XDECREF(t);
            PyMem_Free(idx);
            PyMem_Free(pos);
            goto done;
        }
        Py_DECREF(t);
    }
    PyMem_Free(idx);
    PyMem_Free(pos);
    threads = PyList_New(0);
    if (threads == NULL) goto done;
    for (size_t t = 0; t < m->thread_count; t++) {
        PyObject *row = Py_BuildValue("(LNii)", (long long)m->threads[t].tid,
                                      str_of(m, m->threads[t].name), 0, -1);
        if (row == NULL || PyList_Append(threads, row) < 0) {
            Py_XDECREF(row);
            goto done;
        }
        Py_DECREF(row);
    }
    meta = PyList_New(0);
    if (meta == NULL) goto done;
    for (size_t i = 0; i < m->meta_count; i++) {
        PyObject *k = str_of(m, m->meta_keys[i]);
        if (k == NULL || PyList_Append(meta, k) < 0) {
            Py_XDECREF(k);
            goto done;
        }
        Py_DECREF(k);
    }
    out = Py_BuildValue("(OOO)", events, threads, meta);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    Py_XDECREF(events);
    Py_XDECREF(threads);
    Py_XDECREF(meta);
    PyMem_Free(depth);
    md_free(m);
    PyMem_Free(m);
    return out;
}
