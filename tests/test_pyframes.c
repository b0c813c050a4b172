/* test_pyframes.c: pyframes.c's table of CPython 3.11 offsets against offsetof() in the real
 * headers (Py_BUILD_CORE, for the internal _PyInterpreterFrame), where CMake found them
 * (STROBE_PY311_HEADERS); skips (77) elsewhere. 3.12's table has no headers to check against on
 * this machine. */
#ifdef STROBE_PY311_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#endif

#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "core/pyframes.h"

int main(void) {
    CHECK(strobe__py_layout_of(10) == NULL);
    CHECK(strobe__py_layout_of(13) == NULL);
    const strobe__py_layout *l12 = strobe__py_layout_of(12);
    CHECK(l12 != NULL && l12->minor == 12);
#ifndef STROBE_PY311_HEADERS
    printf("SKIP: no CPython 3.11 headers with internal/ (Debian: python3.11-dev)\n");
    return check_result() ? 1 : 77;
#else
    const strobe__py_layout *l = strobe__py_layout_of(11);
    CHECK(l != NULL);
    if (l == NULL) return check_result();
    CHECK_EQ(l->minor, 11);
    CHECK_EQ(l->tstate_cframe, offsetof(PyThreadState, cframe));
    CHECK_EQ(l->cframe_current_frame, offsetof(_PyCFrame, current_frame));
    CHECK_EQ(l->tstate_datastack, offsetof(PyThreadState, datastack_chunk));
    CHECK_EQ(l->tstate_datastack + 8, offsetof(PyThreadState, datastack_top));
    CHECK_EQ(l->tstate_datastack + 16, offsetof(PyThreadState, datastack_limit));
    CHECK_EQ(offsetof(_PyStackChunk, size), 8);
    CHECK_EQ(offsetof(_PyStackChunk, data), 24);
    CHECK_EQ(l->frame_code, offsetof(_PyInterpreterFrame, f_code));
    CHECK_EQ(l->frame_previous, offsetof(_PyInterpreterFrame, previous));
    CHECK_EQ(l->frame_prev_instr, offsetof(_PyInterpreterFrame, prev_instr));
    CHECK_EQ(l->frame_is_entry, offsetof(_PyInterpreterFrame, is_entry));
    CHECK_EQ(l->frame_owner, offsetof(_PyInterpreterFrame, owner));
    CHECK(l->frame_size >= offsetof(_PyInterpreterFrame, owner) + 1);
    CHECK(l->frame_size <= sizeof(_PyInterpreterFrame));
    CHECK_EQ(l->code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
    CHECK_EQ(l->code_filename, offsetof(PyCodeObject, co_filename));
    CHECK_EQ(l->code_name, offsetof(PyCodeObject, co_name));
    CHECK_EQ(l->code_linetable, offsetof(PyCodeObject, co_linetable));
    CHECK_EQ(l->code_code, offsetof(PyCodeObject, co_code_adaptive));
    CHECK_EQ(l->unicode_state, offsetof(PyASCIIObject, state));
    CHECK_EQ(l->unicode_ascii_size, sizeof(PyASCIIObject));
    CHECK_EQ(l->unicode_compact_size, sizeof(PyCompactUnicodeObject));
    CHECK_EQ(l->bytes_size, offsetof(PyVarObject, ob_size));
    CHECK_EQ(l->bytes_data, offsetof(PyBytesObject, ob_sval));
    /* The state bits pyframes.c reads: kind at bit 2 (3 bits), compact at 5, ascii at 6. */
    PyASCIIObject probe;
    memset(&probe, 0, sizeof probe);
    probe.state.kind = 4;
    probe.state.compact = 1;
    unsigned state;
    memcpy(&state, (const char *)&probe + l->unicode_state, 4);
    CHECK_EQ(state, (4u << 2) | (1u << 5));
    probe.state.ascii = 1;
    memcpy(&state, (const char *)&probe + l->unicode_state, 4);
    CHECK_EQ((state >> 6) & 1u, 1u);
    return check_result();
#endif
}
