/* pyframes.h: Python frames in CPU samples (sample.h), for CPython 3.11 and 3.12.
 *
 * The sampling events of a CPython process are opened with `sigtrap`: at each sample the kernel
 * sends a synchronous SIGTRAP (si_code TRAP_PERF, si_perf_data STROBE__PYFRAMES_SIG_DATA) to the
 * sampled thread itself, before it runs another user instruction. strobe's handler finds the
 * thread's PyThreadState (PyGILState_GetThisThreadState: a thread-specific key, no GIL) and copies
 * its chain of interpreter frames (code object, last instruction, whether the frame entered the
 * evaluation loop from C) into a lock-free queue, with the time, reading through process_vm_readv
 * whatever may not be mapped (a frame half pushed costs an error, never a fault; frames on the
 * thread's own data stack, which is mapped, are copied directly: see pyframes.c). The drain
 * thread resolves the code objects into torch's frame names ("file.py(line): function"), cached
 * per code object; at stop, each sample gets the Python frames recorded at its time on its thread,
 * spliced into its native stack where the interpreter's _PyEval_EvalFrameDefault frames are (as
 * py-spy --native does), as tagged pseudo-addresses that strobe__symbolize() names.
 *
 * Nothing is lost without a count: records the queue had no room for, signals that came late
 * (the thread had SIGTRAP blocked), frames past the depth cap and code objects that could not be
 * read are counted in the sampler's metadata ("python_frames"). */
#ifndef STROBE_PYFRAMES_H
#define STROBE_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "sample.h"

/* The sig_data of strobe's sampling events: the handler leaves any other SIGTRAP to the handler
 * installed before it. */
#define STROBE__PYFRAMES_SIG_DATA 0x5354524f42455059ull /* "STROBEPY" */

/* Python frames kept per sample (the innermost). */
#define STROBE__PYFRAMES_MAX 64u

typedef struct strobe__pyframes strobe__pyframes;

/* The offsets strobe reads in one CPython version's structures (64-bit: x86_64 and aarch64 have
 * the same layout). */
typedef struct strobe__py_layout {
    unsigned minor; /* 11 or 12 */
    uint16_t tstate_cframe, cframe_current_frame;
    uint16_t tstate_datastack; /* datastack_chunk, then datastack_top and datastack_limit */
    uint16_t frame_code, frame_previous, frame_prev_instr, frame_is_entry, frame_owner;
    uint16_t frame_size; /* bytes read per frame: through its last field strobe reads */
    uint16_t code_firstlineno, code_filename, code_name, code_linetable, code_code;
    uint16_t unicode_state, unicode_ascii_size, unicode_compact_size;
    uint16_t bytes_size, bytes_data;
} strobe__py_layout;

/* The layout of CPython 3.`minor` (11 or 12). @return it, or NULL for another version. */
const strobe__py_layout *strobe__py_layout_of(unsigned minor);

/* Prepares Python frames when the process runs CPython 3.11 or 3.12 (its symbols, found with
 * dlsym), and installs the SIGTRAP handler. @return 0 and *out; 1 when there is nothing to do
 * (not CPython, another version), with the reason in `why`; or STROBE_ENOMEM / STROBE_ESYS. */
int strobe__pyframes_start(strobe__pyframes **out, char *why, size_t why_size);

/* Turns the records of the queue into resolved frames (the drain thread's periodic call, and
 * stop's). Not thread-safe against itself. */
void strobe__pyframes_drain(strobe__pyframes *pf);

/* At stop: drains, then gives each sample (sorted by tid then time) the Python frames recorded at
 * its time on its thread, spliced into its native frames. Replaces *pcs (malloc'd, *npcs entries,
 * *pcs_cap allocated) and the samples' offsets and counts. @return 0 or STROBE_ENOMEM (the samples
 * are then left as they were). */
int strobe__pyframes_splice(strobe__pyframes *pf, strobe__sample *samples, size_t count,
                            uint64_t **pcs, size_t *npcs, size_t *pcs_cap);

/* The name of a pseudo-address that strobe__pyframes_splice() put in a sample, or NULL when `pc`
 * is not one (or its table is gone). The string lives until strobe__pyframes_free(). */
const char *strobe__pyframes_name(uint64_t pc);

/* The metadata "python_frames" as a JSON object written into buf. */
void strobe__pyframes_json(const strobe__pyframes *pf, char *buf, size_t size);

/* Frees everything; the SIGTRAP handler stays installed (a signal still on its way must not meet
 * the default action, which ends the process) and ignores strobe's signals from then on. Accepts
 * NULL. */
void strobe__pyframes_free(strobe__pyframes *pf);

#endif
