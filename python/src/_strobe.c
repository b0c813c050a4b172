/* _strobe.c: strobe._strobe, the C half of the Python binding (strobe.profiler is the other).
 *
 * The extension carries libstrobe: setup.py compiles the library's sources into it, so nothing
 * needs installing first, and a linker version script keeps every symbol but PyInit__strobe
 * local, so that a libstrobe.so loaded elsewhere in the process is a separate copy.
 *
 * Contents:
 *   errors         strobe's error codes as RuntimeError, with the log's last line
 *   sites          one strobe_site per record_function name (and args), and per code object
 *   record_function  the hot path: a C type whose construction, __enter__ and __exit__ are C
 *   python hook    with_stack: a C profile function recording Python calls as python_function
 *   postprocess    categories and "Call stack" args, at stop
 *   Result         a stopped session: events, save, summary table, metadata
 *   session        start / prepare / stop / step / metadata
 *   load, cli      strobe.load() (the CLI's trace model) and `python -m strobe`
 *
 * The GIL: a record only touches the calling thread's own buffer, so the hot path does not need
 * the GIL and takes nothing else; the calls that can take long (stop, save, load, the summary)
 * release it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/hooks.h"
#include "core/torch_api.h"
#include "strobe/strobe.h"
#include "trace/result_internal.h"
#include "util/json_check.h"

#include "loader.h"

/* Python functions are recorded as ranges of this scope; the postprocess step gives them the
 * category "python_function" (the core names every non-user scope "cpu_op"). */
#define PYFUNC_SCOPE STROBE_RECORD_SCOPE_LITE_INTERPRETER
#define PYFUNC_CATEGORY "python_function"

/* ---- Errors --------------------------------------------------------------------------------- */

/* The log's last warning or error, for the exception text of a failed call. The sink may be
 * called from any thread; a torn message is the worst outcome, and it is only ever text. */
static char last_log[512];

static void log_sink(strobe_log_level level, const char *msg, void *ctx) {
    (void)ctx;
    if (level >= STROBE_LOG_WARN) snprintf(last_log, sizeof last_log, "%s", msg);
}

static PyObject *raise_strobe(const char *what, int rc) {
    if (last_log[0])
        PyErr_Format(PyExc_RuntimeError, "strobe: %s: %s (%s)", what, strobe_strerror(rc),
                     last_log);
    else
        PyErr_Format(PyExc_RuntimeError, "strobe: %s: %s", what, strobe_strerror(rc));
    last_log[0] = '\0';
    return NULL;
}

/* ---- Sites ---------------------------------------------------------------------------------- */

/* A site must outlive every session that recorded it, and names are few: sites are kept for the
 * life of the process. */
static PyObject *name_sites; /* str -> int (strobe_site *), and (str, args) -> int */

static strobe_site *new_site(const char *name, size_t len, int scope, const char *args_json) {
    size_t alen = args_json ? 5 + strlen(args_json) + 2 : 0;
    strobe__site_args *s = calloc(1, sizeof *s + len + 1 + alen);
    if (s == NULL) return NULL;
    char *copy = (char *)(s + 1);
    memcpy(copy, name, len);
    copy[len] = '\0';
    s->site.name = copy;
    s->site.file = "<python>";
    s->site.scope = scope;
    if (args_json) {
        /* "args\0<json>\0\0": the constant args the decoder gives each range of the site. */
        char *a = copy + len + 1;
        memcpy(a, "args", 5);
        strcpy(a + 5, args_json);
        s->args = a;
        s->site.scope |= STROBE__SITE_HAS_ARGS;
    }
    return &s->site;
}

/* The site of `name` (a str), with `args` (a str or None); NULL with an exception set. */
static strobe_site *name_site(PyObject *name, PyObject *args) {
    PyObject *key = name, *tuple = NULL;
    if (args != NULL && args != Py_None) {
        tuple = PyTuple_Pack(2, name, args);
        if (tuple == NULL) return NULL;
        key = tuple;
    }
    PyObject *v = PyDict_GetItemWithError(name_sites, key);
    strobe_site *site = NULL;
    if (v != NULL) {
        site = PyLong_AsVoidPtr(v);
        Py_XDECREF(tuple);
        return site;
    }
    if (PyErr_Occurred()) goto done;
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(name, &len);
    if (utf8 == NULL) goto done;
    char *args_json = NULL;
    if (tuple != NULL) {
        /* The args string as a JSON string, through the json module's escaping. */
        PyObject *json = PyImport_ImportModule("json");
        PyObject *text = json ? PyObject_CallMethod(json, "dumps", "O", args) : NULL;
        Py_XDECREF(json);
        const char *t = text ? PyUnicode_AsUTF8(text) : NULL;
        args_json = t ? strdup(t) : NULL;
        Py_XDECREF(text);
        if (args_json == NULL) {
            if (!PyErr_Occurred()) PyErr_NoMemory();
            goto done;
        }
    }
    site = new_site(utf8, (size_t)len, STROBE_RECORD_SCOPE_USER_SCOPE, args_json);
    free(args_json);
    if (site == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *ptr = PyLong_FromVoidPtr(site);
    if (ptr == NULL || PyDict_SetItem(name_sites, key, ptr) < 0) site = NULL; /* kept: tiny */
    Py_XDECREF(ptr);
done:
    Py_XDECREF(tuple);
    return site;
}

/* Code objects to sites: an open-addressing table keyed by the code object's address. The table
 * holds a reference to each code object, so that an address is never reused for another. */
typedef struct code_slot {
    PyObject *code;
    strobe_site *site;
} code_slot;
static code_slot *code_slots;
static size_t code_cap, code_count; /* cap: a power of two */

static size_t code_hash(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 20);
}

static int code_grow(void) {
    size_t cap = code_cap ? code_cap * 2 : 1024;
    code_slot *slots = calloc(cap, sizeof *slots);
    if (slots == NULL) return -1;
    for (size_t i = 0; i < code_cap; i++) {
        if (code_slots[i].code == NULL) continue;
        size_t j = code_hash(code_slots[i].code) & (cap - 1);
        while (slots[j].code != NULL)
            j = (j + 1) & (cap - 1);
        slots[j] = code_slots[i];
    }
    free(code_slots);
    code_slots = slots;
    code_cap = cap;
    return 0;
}

/* torch's name of a Python function: "file.py(first line): name". */
static strobe_site *code_site_slow(PyCodeObject *code, size_t j) {
    PyObject *name =
        PyUnicode_FromFormat("%U(%d): %U", code->co_filename, code->co_firstlineno, code->co_name);
    if (name == NULL) return NULL;
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(name, &len);
    strobe_site *site = utf8 ? new_site(utf8, (size_t)len, PYFUNC_SCOPE, NULL) : NULL;
    Py_DECREF(name);
    if (site == NULL) return NULL;
    Py_INCREF(code);
    code_slots[j].code = (PyObject *)code;
    code_slots[j].site = site;
    code_count++;
    return site;
}

static inline strobe_site *code_site(PyCodeObject *code) {
    if (code_count * 2 >= code_cap && code_grow() < 0) return NULL;
    size_t j = code_hash(code) & (code_cap - 1);
    while (code_slots[j].code != NULL) {
        if (code_slots[j].code == (PyObject *)code) return code_slots[j].site;
        j = (j + 1) & (code_cap - 1);
    }
    return code_site_slow(code, j);
}

/* ---- record_function ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD PyObject *name; /* str */
    PyObject *args;               /* str or None */
    uint32_t token;               /* the open range's guard token, 0: none */
    int entered;                  /* between __enter__ and __exit__ (with or without a session) */
    unsigned long owner;          /* the thread that entered it (PyThread_get_thread_ident) */
} RecordFunction;

static PyTypeObject RecordFunction_Type;
static PyObject *decorate_fn; /* strobe.profiler._decorate, set by strobe.profiler */

static int rf_set(RecordFunction *self, PyObject *name, PyObject *args) {
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "record_function(): argument 'name' must be str, not %.100s",
                     Py_TYPE(name)->tp_name);
        return -1;
    }
    if (args != NULL && args != Py_None && !PyUnicode_Check(args)) {
        PyErr_Format(PyExc_TypeError,
                     "record_function(): argument 'args' must be str or None, not %.100s",
                     Py_TYPE(args)->tp_name);
        return -1;
    }
    Py_INCREF(name);
    self->name = name;
    self->args = args != NULL ? args : Py_None;
    Py_INCREF(self->args);
    return 0;
}

/* record_function(name, args=None), called through vectorcall: no tuple, no __init__. */
static PyObject *rf_vectorcall(PyObject *type, PyObject *const *argv, size_t nargsf,
                               PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    PyObject *name = n > 0 ? argv[0] : NULL, *args = n > 1 ? argv[1] : NULL;
    if (n > 2) {
        PyErr_Format(PyExc_TypeError,
                     "record_function() takes from 1 to 2 positional arguments but %zd were given",
                     n);
        return NULL;
    }
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i);
        PyObject **slot = NULL;
        if (PyUnicode_CompareWithASCIIString(k, "name") == 0)
            slot = &name;
        else if (PyUnicode_CompareWithASCIIString(k, "args") == 0)
            slot = &args;
        if (slot == NULL || *slot != NULL) {
            PyErr_Format(PyExc_TypeError, "record_function() got %s keyword argument '%U'",
                         slot ? "multiple values for" : "an unexpected", k);
            return NULL;
        }
        *slot = argv[n + i];
    }
    if (name == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "record_function() missing 1 required positional argument: 'name'");
        return NULL;
    }
    PyTypeObject *tp = (PyTypeObject *)type;
    RecordFunction *self = (RecordFunction *)tp->tp_alloc(tp, 0);
    if (self == NULL) return NULL;
    if (rf_set(self, name, args) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* Subclasses and explicit __new__ calls come here. */
static PyObject *rf_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    static char *kwlist[] = {"name", "args", NULL};
    PyObject *name, *args = Py_None;
    if (!PyArg_ParseTupleAndKeywords(a, kw, "O|O:record_function", kwlist, &name, &args))
        return NULL;
    RecordFunction *self = (RecordFunction *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    if (rf_set(self, name, args) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int rf_init(PyObject *self, PyObject *a, PyObject *kw) {
    (void)self, (void)a, (void)kw;
    return 0;
}

static void rf_dealloc(RecordFunction *self) {
    Py_XDECREF(self->name);
    Py_XDECREF(self->args);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static inline int rf_begin(RecordFunction *self) {
    if (STROBE__UNLIKELY(strobe_is_active())) {
        strobe_site *site = name_site(self->name, self->args);
        if (site == NULL) return -1;
        self->token = strobe__guard_begin_site(site);
    }
    return 0;
}

static inline void rf_end(RecordFunction *self) {
    uint32_t token = self->token;
    self->token = 0;
    strobe__guard_close(token);
}

/* One object is one range, ended on the thread that began it: entering an object again before
 * its exit would lose the first range's end, and an exit on another thread would end that
 * thread's innermost range instead of this one. Both raise RuntimeError; the range stays open
 * (its own thread's exit still ends it, else stop closes it, flagged unfinished). */
static PyObject *rf_enter(PyObject *op, PyObject *unused) {
    (void)unused;
    RecordFunction *self = (RecordFunction *)op;
    if (self->entered) {
        PyErr_Format(PyExc_RuntimeError,
                     "strobe: record_function '%U' is already entered: use one record_function "
                     "object per with block",
                     self->name);
        return NULL;
    }
    if (rf_begin(self) < 0) return NULL;
    self->entered = 1;
    self->owner = PyThread_get_thread_ident();
    Py_INCREF(op);
    return op;
}

static PyObject *rf_exit(PyObject *op, PyObject *const *argv, Py_ssize_t n) {
    (void)argv, (void)n;
    RecordFunction *self = (RecordFunction *)op;
    if (self->entered && self->owner != PyThread_get_thread_ident()) {
        PyErr_Format(PyExc_RuntimeError,
                     "strobe: record_function '%U' exited on another thread than the one that "
                     "entered it: a range ends on its own thread",
                     self->name);
        return NULL;
    }
    self->entered = 0;
    rf_end(self);
    Py_RETURN_NONE;
}

/* As a decorator: strobe.profiler._decorate(self, fn) wraps fn in a fresh range per call. */
static PyObject *rf_call(PyObject *self, PyObject *a, PyObject *kw) {
    PyObject *fn;
    if (kw != NULL && PyDict_GET_SIZE(kw) != 0) {
        PyErr_SetString(PyExc_TypeError, "record_function() used as a decorator takes no keywords");
        return NULL;
    }
    if (!PyArg_ParseTuple(a, "O:record_function.__call__", &fn)) return NULL;
    if (decorate_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "strobe.profiler is not imported");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(decorate_fn, self, fn, NULL);
}

static PyMethodDef rf_methods[] = {
    {"__enter__", rf_enter, METH_NOARGS, "Begins the range; returns self."},
    {"__exit__", (PyCFunction)(void (*)(void))rf_exit, METH_FASTCALL,
     "Ends the range begun by __enter__ (exceptions pass through)."},
    {NULL, NULL, 0, NULL}};

static PyObject *rf_get_name(RecordFunction *self, void *c) {
    (void)c;
    Py_INCREF(self->name);
    return self->name;
}
static PyObject *rf_get_args(RecordFunction *self, void *c) {
    (void)c;
    Py_INCREF(self->args);
    return self->args;
}
static PyGetSetDef rf_getset[] = {
    {"name", (getter)rf_get_name, NULL, "The range's name.", NULL},
    {"args", (getter)rf_get_args, NULL, "The string given as args (the range's \"args\").", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject RecordFunction_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strobe.profiler.record_function",
    .tp_basicsize = sizeof(RecordFunction),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "record_function(name, args=None)\n\n"
              "A user range (\"user_annotation\") around a block, as a context manager, or around\n"
              "each call of a function, as a decorator. Recorded only while a profiler records;\n"
              "otherwise entering and leaving cost a branch.",
    .tp_new = rf_new,
    .tp_init = rf_init,
    .tp_dealloc = (destructor)rf_dealloc,
    .tp_call = rf_call,
    .tp_methods = rf_methods,
    .tp_getset = rf_getset,
};

/* ---- Python hook (with_stack) ------------------------------------------------------------- */

/* Python frames the hook opened on this thread in session `gen`: a return with none open (a
 * frame entered before the hook) records nothing, so it cannot end another range. */
static _Thread_local uint64_t hook_gen;
static _Thread_local uint64_t hook_depth;
static uint64_t session_gen; /* changes at each start; under the GIL */
static int hook_on;          /* under the GIL */

/* Code objects whose frames the hook does not record (strobe.profiler's step(), start() and
 * stop(), through _hide_frames): ProfilerStep#N begins and ends inside them, and a range of
 * their own would cross the step's boundary, so that the step could not nest on its thread's
 * track. A few pointers compared on each call and return; references held for the process. */
#define HIDDEN_MAX 8
static PyObject *hidden_code[HIDDEN_MAX];
static int hidden_count;

static inline int code_hidden(PyCodeObject *code) {
    for (int i = 0; i < hidden_count; i++)
        if (hidden_code[i] == (PyObject *)code) return 1;
    return 0;
}

static int py_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    (void)obj, (void)arg;
    if (!strobe_is_active()) return 0;
    if (hook_gen != session_gen) {
        hook_gen = session_gen;
        hook_depth = 0;
    }
    if (what == PyTrace_CALL || what == PyTrace_RETURN) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        int hidden = code_hidden(code);
        Py_DECREF(code);
        if (hidden) return 0;
    }
    if (what == PyTrace_CALL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        strobe_site *site = code_site(code);
        Py_DECREF(code);
        if (site == NULL) {
            PyErr_Clear();
            return 0;
        }
        strobe__begin_site(site);
        hook_depth++;
    } else if (what == PyTrace_RETURN) {
        if (hook_depth == 0) return 0;
        hook_depth--;
        strobe__end();
    }
    return 0;
}

/* Opens ranges for the frames the calling thread is already in, outermost first, so that the
 * trace shows where the profiled block sits and their returns close them. */
static void hook_open_stack(void) {
    PyFrameObject *frames[256];
    int n = 0;
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f != NULL && n < 256) {
        frames[n++] = f;
        f = PyFrame_GetBack(f);
    }
    Py_XDECREF(f);
    hook_gen = session_gen;
    hook_depth = 0;
    for (int i = n - 1; i >= 0; i--) {
        PyCodeObject *code = PyFrame_GetCode(frames[i]);
        strobe_site *site = code_hidden(code) ? NULL : code_site(code);
        Py_DECREF(code);
        if (site != NULL) {
            strobe__begin_site(site);
            hook_depth++;
        } else {
            PyErr_Clear();
        }
        Py_DECREF(frames[i]);
    }
}

/* Sets (or clears) the hook on every thread of the interpreter, and on threads started later
 * through threading.setprofile(). */
static int hook_set_all(int on) {
    PyThreadState *me = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030C0000
    PyEval_SetProfileAllThreads(on ? py_hook : NULL, NULL);
#else
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(me));
         ts != NULL; ts = PyThreadState_Next(ts)) {
        if (ts != me) {
            PyThreadState_Swap(ts);
            PyEval_SetProfile(on ? py_hook : NULL, NULL);
            PyThreadState_Swap(me);
        }
    }
    PyEval_SetProfile(on ? py_hook : NULL, NULL);
#endif
    hook_on = on;
    PyObject *threading = PyImport_ImportModule("threading");
    if (threading == NULL) return -1;
    PyObject *fn = on ? PyObject_GetAttrString(PyImport_AddModule("strobe._strobe"), "_thread_hook")
                      : (Py_INCREF(Py_None), Py_None);
    PyObject *r = fn ? PyObject_CallMethod(threading, "setprofile", "O", fn) : NULL;
    Py_XDECREF(fn);
    Py_DECREF(threading);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* threading.setprofile()'s function: the first event of a new thread replaces it with the C
 * hook, and is recorded. */
static PyObject *thread_hook(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
    (void)m;
    if (n != 3) Py_RETURN_NONE;
    PyEval_SetProfile(hook_on ? py_hook : NULL, NULL);
    if (hook_on && PyFrame_Check(argv[0]) && PyUnicode_CompareWithASCIIString(argv[1], "call") == 0)
        py_hook(NULL, (PyFrameObject *)argv[0], PyTrace_CALL, NULL);
    Py_RETURN_NONE;
}

/* _hide_frames(fn, ...): the hook records no frame of these functions' code. */
static PyObject *hide_frames(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
    (void)m;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *code = PyObject_GetAttrString(argv[i], "__code__");
        if (code == NULL) return NULL;
        if (!PyCode_Check(code)) {
            Py_DECREF(code);
            PyErr_SetString(PyExc_TypeError, "_hide_frames: not a Python function");
            return NULL;
        }
        if (code_hidden((PyCodeObject *)code)) {
            Py_DECREF(code);
            continue;
        }
        if (hidden_count == HIDDEN_MAX) {
            Py_DECREF(code);
            PyErr_SetString(PyExc_ValueError, "_hide_frames: too many functions");
            return NULL;
        }
        hidden_code[hidden_count++] = code; /* the reference is kept */
    }
    Py_RETURN_NONE;
}

/* ---- Postprocess ------------------------------------------------------------------------ */

/* At stop, before the result is handed back: Python functions get their category, and with
 * with_stack every other range gets torch's "Call stack" (its enclosing Python functions,
 * innermost first, joined by ';'), as a JSON string. */
static int post_with_stack;

static void json_escape(strobe__pool *unused, char **buf, size_t *len, size_t *cap, const char *s) {
    (void)unused;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*len + 8 >= *cap) {
            size_t ncap = *cap * 2 + 64;
            char *nb = realloc(*buf, ncap);
            if (nb == NULL) return;
            *buf = nb;
            *cap = ncap;
        }
        if (*p == '"' || *p == '\\') {
            (*buf)[(*len)++] = '\\';
            (*buf)[(*len)++] = (char)*p;
        } else if (*p < 0x20) {
            *len += (size_t)snprintf(*buf + *len, *cap - *len, "\\u%04x", *p);
        } else {
            (*buf)[(*len)++] = (char)*p;
        }
    }
}

static void postprocess(strobe_result *r, void *ctx) {
    (void)ctx;
    size_t n = strobe_result_event_count(r);
    strobe_event *ev = (strobe_event *)strobe_result_events(r);
    for (size_t i = 0; i < n; i++)
        if (ev[i].kind == STROBE_EVENT_RANGE && ev[i].scope == PYFUNC_SCOPE &&
            ev[i].device_type == STROBE_DEVICE_CPU)
            ev[i].category = PYFUNC_CATEGORY;
    if (!post_with_stack) return;
    char *buf = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind != STROBE_EVENT_RANGE || ev[i].category == (const char *)PYFUNC_CATEGORY ||
            ev[i].device_type != STROBE_DEVICE_CPU)
            continue;
        size_t len = 0;
        for (uint32_t p = ev[i].parent; p != STROBE_NO_EVENT; p = ev[p].parent) {
            if (ev[p].category != (const char *)PYFUNC_CATEGORY) continue;
            if (len == 0) {
                if (cap < 64) {
                    char *nb = realloc(buf, 256);
                    if (nb == NULL) break;
                    buf = nb;
                    cap = 256;
                }
                buf[len++] = '"';
            } else {
                buf[len++] = ';';
            }
            json_escape(NULL, &buf, &len, &cap, ev[p].name);
        }
        if (len == 0 || len + 2 >= cap) continue;
        buf[len++] = '"';
        buf[len] = '\0';
        strobe__event_put_arg(r, i, "Call stack", buf, 1, 1);
    }
    free(buf);
}

/* ---- Result ------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD strobe_result *r;
    PyObject *saved_path; /* the first path it was saved to, or NULL */
} Result;

static PyTypeObject Result_Type;

static void result_dealloc(Result *self) {
    strobe_result_free(self->r);
    Py_XDECREF(self->saved_path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *str_or_none(const char *s) {
    if (s == NULL) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* Result.events(): a list of tuples (name, category, start_ns, end_ns, tid, thread_index, parent,
 * depth, kind, scope, device_type, device_index, correlation_id, flags, args, value), args a
 * tuple of (key, json text) pairs and parent -1 for a root. */
static PyObject *result_events(Result *self, PyObject *unused) {
    (void)unused;
    size_t n = strobe_result_event_count(self->r);
    const strobe_event *ev = strobe_result_events(self->r);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        const strobe_event *e = &ev[i];
        Py_ssize_t na = 0;
        for (const strobe_arg *a = e->args; a; a = a->next)
            na++;
        PyObject *args = PyTuple_New(na);
        if (args == NULL) goto fail;
        na = 0;
        for (const strobe_arg *a = e->args; a; a = a->next) {
            PyObject *pair = Py_BuildValue("(NN)", str_or_none(a->key), str_or_none(a->json));
            if (pair == NULL) {
                Py_DECREF(args);
                goto fail;
            }
            PyTuple_SET_ITEM(args, na++, pair);
        }
        PyObject *t = Py_BuildValue(
            "(NNLLLnLIiiiiKiNd)", str_or_none(e->name), str_or_none(e->category),
            (long long)e->start_ns, (long long)e->end_ns, (long long)e->tid,
            (Py_ssize_t)e->thread_index, e->parent == STROBE_NO_EVENT ? -1LL : (long long)e->parent,
            (unsigned)e->depth, (int)e->kind, (int)e->scope, (int)e->device_type,
            (int)e->device_index, (unsigned long long)e->correlation_id, (int)e->flags, args,
            e->value);
        if (t == NULL) goto fail;
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

static PyObject *result_threads(Result *self, PyObject *unused) {
    (void)unused;
    size_t n = strobe_result_thread_count(self->r);
    const strobe_thread_info *th = strobe_result_threads(self->r);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(LNii)", (long long)th[i].tid, str_or_none(th[i].name),
                                    (int)th[i].device_type, (int)th[i].device_index);
        if (t == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
}

static PyObject *result_save(Result *self, PyObject *arg) {
    PyObject *bytes;
    if (!PyUnicode_FSConverter(arg, &bytes)) return NULL;
    const char *path = PyBytes_AS_STRING(bytes);
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = strobe_result_save(self->r, path);
    Py_END_ALLOW_THREADS if (rc != 0) {
        PyObject *what = PyUnicode_FromFormat("cannot save the trace to %s", path);
        Py_DECREF(bytes);
        if (what == NULL) return NULL;
        raise_strobe(PyUnicode_AsUTF8(what), rc);
        Py_DECREF(what);
        return NULL;
    }
    Py_DECREF(bytes);
    Py_RETURN_NONE;
}

/* Result.summary_table(sort, limit): the C library's own key_averages table (strobe/summary.h)
 * as text; sort 0..3 (strobe_sort_key). */
static PyObject *result_summary_table(Result *self, PyObject *a) {
    int sort = 0;
    Py_ssize_t limit = 0;
    if (!PyArg_ParseTuple(a, "|in", &sort, &limit)) return NULL;
    if (sort < 0 || sort > 3 || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "summary_table: sort is 0..3 and limit >= 0");
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS strobe_summary *s = NULL;
    rc = strobe_summary_create(self->r, (strobe_sort_key)sort, &s);
    if (rc == 0) {
        FILE *f = open_memstream(&text, &len);
        if (f == NULL) {
            rc = STROBE_ENOMEM;
        } else {
            rc = strobe_summary_print(s, f, (size_t)limit);
            fclose(f);
        }
    }
    strobe_summary_free(s);
    Py_END_ALLOW_THREADS if (rc != 0) {
        free(text);
        return raise_strobe("summary", rc);
    }
    PyObject *out = PyUnicode_DecodeUTF8(text ? text : "", (Py_ssize_t)len, "replace");
    free(text);
    return out;
}

static int check_key_json(const char *key, const char *json) {
    if (key[0] == '\0') {
        PyErr_SetString(PyExc_ValueError, "add_metadata: the key is empty");
        return -1;
    }
    if (!strobe__json_valid(json, strlen(json))) {
        PyErr_Format(PyExc_ValueError, "add_metadata_json: the value for '%s' is not valid JSON",
                     key);
        return -1;
    }
    return 0;
}

static PyObject *result_add_metadata_json(Result *self, PyObject *a) {
    const char *key, *json;
    if (!PyArg_ParseTuple(a, "ss:add_metadata_json", &key, &json)) return NULL;
    if (check_key_json(key, json) < 0) return NULL;
    if (strobe__meta_key_reserved(key)) {
        PyErr_Format(PyExc_ValueError, "add_metadata: '%s' is a key strobe writes itself", key);
        return NULL;
    }
    if (strobe__result_set_meta(self->r, key, json) != 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *result_metadata(Result *self, PyObject *unused) {
    (void)unused;
    size_t n = strobe_result_metadata_count(self->r);
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && i < n; i++) {
        const char *k, *v;
        if (strobe_result_metadata(self->r, i, &k, &v) != 0) continue;
        PyObject *t = Py_BuildValue("(NN)", str_or_none(k), str_or_none(v));
        if (t == NULL || PyList_Append(list, t) < 0) Py_CLEAR(list);
        Py_XDECREF(t);
    }
    return list;
}

static PyObject *result_info(Result *self, PyObject *unused) {
    (void)unused;
    const strobe_stats *st = strobe_result_stats(self->r);
    PyObject *warnings = PyList_New(0);
    for (size_t i = 0; warnings && i < strobe_result_warning_count(self->r); i++) {
        PyObject *w = str_or_none(strobe_result_warning(self->r, i));
        if (w == NULL || PyList_Append(warnings, w) < 0) Py_CLEAR(warnings);
        Py_XDECREF(w);
    }
    if (warnings == NULL) return NULL;
    return Py_BuildValue("{sLsLsLsNsNs{sKsKsKsKsKsK}}", "trace_start_ns",
                         (long long)strobe_result_trace_start_ns(self->r), "trace_end_ns",
                         (long long)strobe_result_trace_end_ns(self->r), "pid",
                         (long long)strobe_result_pid(self->r), "trace_id",
                         str_or_none(strobe_result_trace_id(self->r)), "warnings", warnings,
                         "stats", "dropped_events", (unsigned long long)st->dropped_events,
                         "unmatched_ends", (unsigned long long)st->unmatched_ends,
                         "unfinished_ranges", (unsigned long long)st->unfinished_ranges,
                         "truncated_ranges", (unsigned long long)st->truncated_ranges, "threads",
                         (unsigned long long)st->threads, "buffer_bytes_used",
                         (unsigned long long)st->buffer_bytes_used);
}

static PyMethodDef result_methods[] = {
    {"events", (PyCFunction)result_events, METH_NOARGS, "The events, as tuples."},
    {"threads", (PyCFunction)result_threads, METH_NOARGS, "(tid, name, device_type, index)s."},
    {"save", (PyCFunction)result_save, METH_O, "Saves the trace (format by suffix), once."},
    {"summary_table", (PyCFunction)result_summary_table, METH_VARARGS,
     "The C library's key_averages table (strobe/summary.h) as text."},
    {"add_metadata_json", (PyCFunction)result_add_metadata_json, METH_VARARGS,
     "Adds a top-level metadata entry (a JSON value) to the trace."},
    {"metadata", (PyCFunction)result_metadata, METH_NOARGS, "(key, json) pairs."},
    {"info", (PyCFunction)result_info, METH_NOARGS, "Times, pid, trace id, warnings, stats."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject Result_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strobe._strobe.Result",
    .tp_basicsize = sizeof(Result),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A stopped session's result (strobe_result).",
    .tp_dealloc = (destructor)result_dealloc,
    .tp_methods = result_methods,
};

/* ---- Session ------------------------------------------------------------------------------ */

static int pending_with_stack; /* prepared with with_stack: the hook goes on at start_prepared */

/* "fp", "dwarf" or "dwarf,SIZE" (strobe.profiler's call_graph) into cfg. @return 0, or -1 with
 * ValueError set. */
static int parse_call_graph(const char *v, strobe_config *cfg) {
    if (v == NULL) return 0;
    if (strcmp(v, "fp") == 0) {
        cfg->cpu_sample_call_graph = STROBE_CALL_GRAPH_FP;
        return 0;
    }
    if (strncmp(v, "dwarf", 5) == 0 && (v[5] == '\0' || v[5] == ',')) {
        unsigned long bytes = 0;
        char *end = NULL;
        if (v[5] == ',') {
            errno = 0;
            bytes = strtoul(v + 6, &end, 10);
            if (errno || end == v + 6 || *end != '\0' || bytes < 8 ||
                bytes > STROBE_CPU_SAMPLE_STACK_MAX) {
                PyErr_Format(PyExc_ValueError,
                             "call_graph dwarf,SIZE takes a stack size in bytes (8 .. %u): %s",
                             STROBE_CPU_SAMPLE_STACK_MAX, v);
                return -1;
            }
        }
        char why[200];
        if (!strobe_cpu_sample_dwarf_available(why, sizeof why)) {
            PyErr_Format(PyExc_ValueError, "call_graph dwarf: %s", why);
            return -1;
        }
        cfg->cpu_sample_call_graph = STROBE_CALL_GRAPH_DWARF;
        cfg->cpu_sample_stack_bytes = (uint32_t)bytes;
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "call_graph takes 'fp' or 'dwarf[,SIZE]', not %s", v);
    return -1;
}

/* start(activities, record_shapes, profile_memory, with_stack, with_flops, with_modules,
 * prepare_only, trace_name, buffer_bytes, cpu_sample_hz, python_frames, call_graph): strobe_start
 * (or strobe_prepare). */
static PyObject *mod_start(PyObject *m, PyObject *a, PyObject *kw) {
    (void)m;
    static char *kwlist[] = {"activities",
                             "record_shapes",
                             "profile_memory",
                             "with_stack",
                             "with_flops",
                             "with_modules",
                             "prepare_only",
                             "trace_name",
                             "buffer_bytes",
                             "cpu_sample_hz",
                             "python_frames",
                             "call_graph",
                             NULL};
    unsigned int activities = STROBE_ACTIVITY_CPU;
    int shapes = 0, memory = 0, stack = 0, flops = 0, modules = 0, prepare = 0;
    const char *trace_name = NULL;
    Py_ssize_t buffer_bytes = 0;
    unsigned int sample_hz = 0;
    int python_frames = 1;
    const char *call_graph = NULL;
    if (!PyArg_ParseTupleAndKeywords(a, kw, "|IppppppznIpz:start", kwlist, &activities, &shapes,
                                     &memory, &stack, &flops, &modules, &prepare, &trace_name,
                                     &buffer_bytes, &sample_hz, &python_frames, &call_graph))
        return NULL;
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.activities = activities;
    cfg.record_shapes = shapes;
    cfg.profile_memory = memory;
    cfg.with_flops = flops;
    cfg.with_modules = modules;
    cfg.trace_name = trace_name;
    if (buffer_bytes > 0) cfg.buffer_bytes = (size_t)buffer_bytes;
    /* CPU sampling, with the Python frames of each sample (pyframes.c) unless turned off. */
    cfg.cpu_sample_hz = sample_hz;
    cfg.no_python_frames = !python_frames;
    if (parse_call_graph(call_graph, &cfg) != 0) return NULL;
    /* with_stack is Python's stack here (the hook), not the native one. */
    cfg.postprocess = postprocess;
    post_with_stack = stack;
    last_log[0] = '\0';
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = prepare ? strobe_prepare(&cfg) : strobe_start(&cfg);
    Py_END_ALLOW_THREADS if (rc != 0) return raise_strobe("cannot start profiling", rc);
    session_gen++;
    pending_with_stack = 0;
    if (stack) {
        if (prepare) {
            pending_with_stack = 1;
        } else {
            if (hook_set_all(1) < 0) return NULL;
            hook_open_stack();
        }
    }
    Py_RETURN_NONE;
}

static PyObject *mod_start_prepared(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    int rc = strobe_start_prepared();
    if (rc != 0) return raise_strobe("cannot start profiling", rc);
    if (pending_with_stack) {
        pending_with_stack = 0;
        if (hook_set_all(1) < 0) return NULL;
        hook_open_stack();
    }
    Py_RETURN_NONE;
}

static PyObject *mod_stop(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    if (hook_on && hook_set_all(0) < 0) return NULL;
    pending_with_stack = 0;
    strobe_result *r = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = strobe_stop(&r);
    Py_END_ALLOW_THREADS if (rc != 0) return raise_strobe("cannot stop profiling", rc);
    Result *res = PyObject_New(Result, &Result_Type);
    if (res == NULL) {
        strobe_result_free(r);
        return NULL;
    }
    res->r = r;
    res->saved_path = NULL;
    return (PyObject *)res;
}

static PyObject *mod_is_running(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    return PyBool_FromLong(strobe_is_running());
}

static PyObject *mod_is_active(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    return PyBool_FromLong(strobe_is_active() != 0);
}

/* step(number): the recording session's ProfilerStep#number begins now (the previous one ends). */
static PyObject *mod_step(PyObject *m, PyObject *arg) {
    (void)m;
    unsigned long long n = PyLong_AsUnsignedLongLong(arg);
    if (n == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    strobe__session_step((uint64_t)n);
    Py_RETURN_NONE;
}

/* step_end(): the recording session's open ProfilerStep#N ends now (none begins). */
static PyObject *mod_step_end(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    strobe__session_step_end();
    Py_RETURN_NONE;
}

static PyObject *mod_add_metadata_json(PyObject *m, PyObject *a) {
    (void)m;
    const char *key, *json;
    if (!PyArg_ParseTuple(a, "ss:add_metadata_json", &key, &json)) return NULL;
    if (check_key_json(key, json) < 0) return NULL;
    int rc = strobe_add_metadata_json(key, json);
    if (rc == STROBE_EINVAL) {
        PyErr_Format(PyExc_ValueError, "add_metadata: '%s' is a key strobe writes itself", key);
        return NULL;
    }
    if (rc != 0) return raise_strobe("add_metadata", rc);
    Py_RETURN_NONE;
}

/* Ranges and instants of the current thread, outside record_function (for tests and tools). */
static PyObject *mod_instant(PyObject *m, PyObject *arg) {
    (void)m;
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL) return NULL;
    strobe_instant(name);
    Py_RETURN_NONE;
}

static PyObject *mod_version(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    return PyUnicode_FromString(strobe_version());
}

/* ---- load, cli -------------------------------------------------------------------------- */

static PyObject *mod_load(PyObject *m, PyObject *arg) {
    (void)m;
    PyObject *bytes;
    if (!PyUnicode_FSConverter(arg, &bytes)) return NULL;
    return strobe_py_load(PyBytes_AS_STRING(bytes), bytes);
}

static PyObject *mod_cli(PyObject *m, PyObject *arg) {
    (void)m;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "cli(argv): argv must be a list of str");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(arg);
    PyObject *keep = PyList_New(n);
    char **argv = calloc((size_t)n + 1, sizeof *argv);
    if (keep == NULL || argv == NULL) {
        Py_XDECREF(keep);
        free(argv);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b;
        if (!PyUnicode_FSConverter(PyList_GET_ITEM(arg, i), &b)) {
            Py_DECREF(keep);
            free(argv);
            return NULL;
        }
        PyList_SET_ITEM(keep, i, b);
        argv[i] = PyBytes_AS_STRING(b);
    }
    fflush(stdout);
    fflush(stderr);
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = cli_main((int)n, argv);
    fflush(stdout);
    fflush(stderr);
    Py_END_ALLOW_THREADS free(argv);
    Py_DECREF(keep);
    return PyLong_FromLong(rc);
}

/* ---- Module ------------------------------------------------------------------------------- */

static PyObject *mod_set_decorate(PyObject *m, PyObject *fn) {
    (void)m;
    Py_XDECREF(decorate_fn);
    Py_INCREF(fn);
    decorate_fn = fn;
    Py_RETURN_NONE;
}

/* The address of this extension's own strobe__torch_api table, which strobe.profiler hands to the
 * torch observer (strobe/_torch.py): the observer then records into this copy of the core. */
static PyObject *mod_torch_api(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyLong_FromVoidPtr((void *)strobe__torch_api_get());
}

static PyMethodDef mod_methods[] = {
    {"start", (PyCFunction)(void (*)(void))mod_start, METH_VARARGS | METH_KEYWORDS,
     "Starts (or prepares) a session; RuntimeError when strobe cannot."},
    {"start_prepared", mod_start_prepared, METH_NOARGS, "Opens a prepared session's window."},
    {"stop", mod_stop, METH_NOARGS, "Stops the session and returns its Result."},
    {"is_running", mod_is_running, METH_NOARGS, "True while a session exists."},
    {"is_active", mod_is_active, METH_NOARGS, "True while a session records."},
    {"step", mod_step, METH_O, "ProfilerStep#N begins in the recording session."},
    {"step_end", mod_step_end, METH_NOARGS, "The open ProfilerStep#N ends (none begins)."},
    {"add_metadata_json", mod_add_metadata_json, METH_VARARGS, "Metadata of the running session."},
    {"instant", mod_instant, METH_O, "Records an instant event."},
    {"version", mod_version, METH_NOARGS, "libstrobe's version."},
    {"load", mod_load, METH_O, "Reads a trace: (events, threads, metadata)."},
    {"cli", mod_cli, METH_O, "Runs the strobe command line with argv; returns its exit status."},
    {"_set_decorate", mod_set_decorate, METH_O, "Internal: record_function's decorator helper."},
    {"_hide_frames", (PyCFunction)(void (*)(void))hide_frames, METH_FASTCALL,
     "Internal: the with_stack hook records no frame of these functions."},
    {"_thread_hook", (PyCFunction)(void (*)(void))thread_hook, METH_FASTCALL,
     "Internal: installs the with_stack hook in a new thread."},
    {"_torch_api", mod_torch_api, METH_NOARGS,
     "Internal: the address of this copy's table for the torch observer."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "strobe._strobe",
                                    "The C half of strobe's Python binding (libstrobe inside).",
                                    -1,
                                    mod_methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__strobe(void) {
    /* Calling the type goes straight to rf_vectorcall: no argument tuple, no __init__. */
    RecordFunction_Type.tp_vectorcall = rf_vectorcall;
    if (PyType_Ready(&RecordFunction_Type) < 0 || PyType_Ready(&Result_Type) < 0) return NULL;
    if (strobe_py_load_init() < 0) return NULL;
    name_sites = PyDict_New();
    if (name_sites == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&RecordFunction_Type);
    Py_INCREF(&Result_Type);
    if (PyModule_AddObject(m, "record_function", (PyObject *)&RecordFunction_Type) < 0 ||
        PyModule_AddObject(m, "Result", (PyObject *)&Result_Type) < 0 ||
        PyModule_AddIntConstant(m, "ACTIVITY_CPU", STROBE_ACTIVITY_CPU) < 0 ||
        PyModule_AddIntConstant(m, "ACTIVITY_CUDA", STROBE_ACTIVITY_CUDA) < 0 ||
        PyModule_AddIntConstant(m, "PYFUNC_SCOPE", PYFUNC_SCOPE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    strobe_set_log_fn(log_sink, NULL);
    return m;
}
