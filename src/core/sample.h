/* sample.h: CPU sampling of every thread of the process (config.cpu_sample_hz).
 *
 * perf_event_open samples each thread's user-space call chain (frame pointers, walked by the
 * kernel; or, in DWARF mode, a copy of its stack and registers that the drain thread unwinds
 * with unwind.h) at a fixed rate of its CPU time. The sampler opens one event per thread and CPU,
 * with `inherit`, so that threads created later (by any sampled thread) are sampled too, and they
 * all write into one ring buffer per CPU. A background thread drains the rings into memory while
 * the session runs; strobe_stop() disables the events, drains what is left, and collect.c turns the
 * samples into "cpu_sample" instants on their threads' timelines with their "Call stack",
 * symbolized with the ranges' stacks, once.
 *
 * Nothing is lost silently: records the kernel could not write (PERF_RECORD_LOST) and samples
 * past the memory cap are counted, and reported in the trace ("strobe_cpu_sampling"). */
#ifndef STROBE_SAMPLE_H
#define STROBE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* Frames kept per sample. */
#define STROBE__SAMPLE_MAX_FRAMES 64u

/* One sample: its thread, its time on CLOCK_MONOTONIC, and its frames (pcs[off .. off + n),
 * innermost first; the first is the interrupted instruction, the others return addresses).
 * Samples with the same stack share their frames (the same off). */
typedef struct strobe__sample {
    int64_t tid;
    int64_t mono_ns;
    uint64_t off;
    uint32_t n;
} strobe__sample;

typedef struct strobe__sampler strobe__sampler;

/* Opens the sampling events for every thread of the process (disabled until
 * strobe__sampler_enable) and starts the thread that drains them when the kernel says a ring is a
 * quarter full, and at least every `drain_ms` (0: 500 ms; below 0: no thread, the rings are read
 * at stop only, which the tests use to force losses) from rings of `ring_pages` pages per CPU
 * (rounded down to a power of two; 0: within 512 KiB in all, at most 32). @return 0 and *out; 1
 * when this process cannot sample (perf_event_open refused: seccomp, perf_event_paranoid), with the
 * reason in `why`; or STROBE_ENOMEM / STROBE_ESYS. */
int strobe__sampler_start(strobe__sampler **out, uint32_t hz, size_t ring_pages, int drain_ms,
                          char *why, size_t why_size);

/* strobe__sampler_start, with DWARF unwinding when `stack_bytes` is nonzero: each sample copies
 * that many bytes of its thread's user stack (rounded up to 8) and its registers, which the drain
 * thread walks with unwind.h's unwinder (the rings are then larger: see sample.c). Where DWARF
 * unwinding cannot be had (not built in, libdw missing), frame pointers are used, and
 * strobe__sampler_note() says why. @return as strobe__sampler_start. */
int strobe__sampler_start_dwarf(strobe__sampler **out, uint32_t hz, uint32_t stack_bytes,
                                size_t ring_pages, int drain_ms, char *why, size_t why_size);

/* Why DWARF unwinding was asked for and not used, or "". */
const char *strobe__sampler_note(const strobe__sampler *sp);

/* strobe__sampler_start_ex's flags: Python frames where the process runs CPython 3.11 or 3.12
 * (pyframes.h); elsewhere, sampling goes on without, and the metadata says why. */
#define STROBE__SAMPLE_PYTHON 0x1u

/* strobe__sampler_start with flags (STROBE__SAMPLE_*) and DWARF mode's `stack_bytes` (as
 * strobe__sampler_start_dwarf's). */
int strobe__sampler_start_ex(strobe__sampler **out, uint32_t hz, size_t ring_pages, int drain_ms,
                             unsigned flags, uint32_t stack_bytes, char *why, size_t why_size);

/* Starts sampling (the session's window opens). */
void strobe__sampler_enable(strobe__sampler *sp);

/* Stops sampling, drains the rings, ends the drain thread and closes the events; the samples
 * stay, sorted by thread and time. Accepts NULL. */
void strobe__sampler_stop(strobe__sampler *sp);

/* The samples (after stop), sorted by tid then time, and the frames they point into. */
const strobe__sample *strobe__sampler_samples(const strobe__sampler *sp, size_t *count);
const uint64_t *strobe__sampler_pcs(const strobe__sampler *sp);

/* The name of thread `tid` as the kernel had it when its first sample was drained ("" unknown). */
const char *strobe__sampler_thread_name(const strobe__sampler *sp, int64_t tid);

/* The trace's "strobe_cpu_sampling" metadata: the event, the rate, the call chains (frame
 * pointers, or DWARF with its stack size, walks that stopped early and those completed from frame
 * pointers, samples without a stack copy, module list refreshes; the drain thread's CPU time,
 * which includes the unwinding), threads sampled, samples kept,
 * lost (kernel) and dropped (memory cap), and how often the kernel throttled sampling (its
 * perf_event_max_sample_rate), as a JSON object written into buf. */
void strobe__sampler_json(const strobe__sampler *sp, char *buf, size_t size);

/* Samples lost (the kernel's PERF_RECORD_LOST) plus those dropped at the memory cap. */
uint64_t strobe__sampler_lost(const strobe__sampler *sp);

/* Threads alive at start that could not be sampled (past 4096 descriptors, or the process's
 * limit on open files). */
uint64_t strobe__sampler_unsampled(const strobe__sampler *sp);

/* Frees everything (stops first when still running). Accepts NULL. */
void strobe__sampler_free(strobe__sampler *sp);

#endif
