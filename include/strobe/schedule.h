/* strobe/schedule.h: iteration steps, and schedules that drive sessions from them (the seed's
 * torch.profiler.schedule, profile.step() and tensorboard_trace_handler).
 *
 * A program calls strobe_step() once per iteration (training step, request batch, frame). With a
 * schedule installed (strobe_schedule_begin), steps drive sessions: skip_first steps are left
 * alone, then each cycle waits `wait` steps, warms up `warmup` steps (the session is prepared:
 * buffers, perf and device setup, nothing recorded), records `active` steps, and after the last
 * active step stops and hands the result to the on-trace-ready callback; `repeat` cycles (0:
 * until strobe_schedule_end). Each recorded step is a "ProfilerStep#N" range (user_annotation),
 * from its strobe_step() to the next one (or the session's stop), whatever the calling thread has
 * open: the session keeps steps apart from the thread's begin/end records, so they never pair
 * with its ranges. A step goes on the calling thread's track where it nests there (nothing of
 * that thread open at its begin and its end), else (and in streaming or flight-recorder
 * sessions) on a track of its own, "ProfilerStep". The same holds for every strobe_step() during a
 * plain session (no schedule), N being strobe_step()'s return value; under a schedule N counts from
 * the schedule's step 0.
 *
 * Contents: steps, schedule actions, the scheduled profiler, the trace-file handler. */
#ifndef STROBE_SCHEDULE_H
#define STROBE_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "export.h"
#include "result.h"
#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks an iteration boundary and returns the number of the step that begins (the first call
 * returns 1; step 0 runs from strobe_schedule_begin or process start to the first call). Cheap
 * (one atomic add and a load) when no schedule is installed and no session records; while one
 * records, the step's ProfilerStep range is recorded under a lock. Callable from any thread. */
STROBE_API uint64_t strobe_step(void);
/* The number of the current step (strobe_step() calls so far). */
STROBE_API uint64_t strobe_step_count(void);

/* A schedule (torch.profiler.schedule's arguments). Fill it with strobe_schedule_init(), then set
 * the fields: not with a brace initializer, whose values would land in struct_size. Later versions
 * add fields at the end only, 0 meaning what the schedule does without them. */
typedef struct strobe_schedule {
    size_t struct_size;  /* sizeof(strobe_schedule) in the program's headers; set by the init */
    uint32_t skip_first; /* steps left alone before the first cycle */
    uint32_t wait;       /* per cycle: steps neither prepared nor recorded */
    uint32_t warmup;     /* per cycle: steps with the session prepared, not recording */
    uint32_t active;     /* per cycle: steps recorded; at least 1 */
    uint32_t repeat;     /* cycles; 0: no limit */
    /* 4 bytes of padding end the struct on 64-bit machines: a field added later goes past them,
     * at sizeof of this layout, never into them (README, "ABI and versions"). */
} strobe_schedule;

/* The smallest struct_size taken: the first layout, through `repeat`. */
#define STROBE_SCHEDULE_MIN_SIZE                                                                   \
    (offsetof(strobe_schedule, repeat) + sizeof(((strobe_schedule *)0)->repeat))

/* Zeroes *s (every count 0; set at least `active`) and sets struct_size. */
static inline void strobe_schedule_init(strobe_schedule *s) {
    if (s == NULL) return;
    memset(s, 0, sizeof *s);
    s->struct_size = sizeof *s;
}

typedef enum strobe_step_action {
    STROBE_STEP_NONE = 0,
    STROBE_STEP_WARMUP = 1,
    STROBE_STEP_RECORD = 2,
    STROBE_STEP_RECORD_AND_SAVE = 3 /* the last active step of a cycle */
} strobe_step_action;

/* The action of step `step` (counted from the schedule's first step, 0) under `s`. A schedule
 * with active == 0, or a NULL one or one whose struct_size is below STROBE_SCHEDULE_MIN_SIZE, does
 * nothing (STROBE_STEP_NONE for every step). */
STROBE_API strobe_step_action strobe_schedule_action(const strobe_schedule *s, uint64_t step);

/* Called with each finished cycle's result, on the thread whose strobe_step() (or
 * strobe_schedule_end()) stopped it. The result is borrowed: strobe frees it when the callback
 * returns (strobe_result_save() it, or read it, there). */
typedef void (*strobe_trace_ready_fn)(strobe_result *result, void *ctx);

/* Installs a schedule for the steps from now on (the current step counts as the schedule's step
 * 0): sessions use `cfg` (copied, with the strings it points to; NULL: defaults), and each cycle
 * ends in on_ready(result, ctx). @return 0, STROBE_EINVAL (NULL schedule or callback, active 0,
 * a struct_size below its minimum, bad cfg), STROBE_ENOTSUP (a struct from newer headers sets a
 * field this library lacks), STROBE_EBUSY (a schedule is installed, or a session runs), or what
 * strobe_start() returns when step 0 is already a warm-up or recording step. */
STROBE_API int strobe_schedule_begin(const strobe_config *cfg, const strobe_schedule *sched,
                                     strobe_trace_ready_fn on_ready, void *ctx);
/* Removes the schedule. A cycle in progress is stopped: a recording one is handed to the
 * callback (as torch does on leaving the profiler), a warming one is dropped. @return 0 or
 * STROBE_ENOSESSION (none installed). */
STROBE_API int strobe_schedule_end(void);
/* Results handed to the callback, and cycles that could not start or stop (each with a logged
 * reason), since the schedule began. */
STROBE_API void strobe_schedule_counts(uint64_t *traces_ready, uint64_t *failures);

/* The ready-made on-trace-ready handler (tensorboard_trace_handler): writes each result to
 * DIR/{worker}.{epoch_ns}.pt.trace.json (".gz" appended with gzip), the naming PyTorch's trace
 * tools (TensorBoard plugin, HTA) expect; the nanoseconds of one handler's names strictly
 * increase, so two traces never share a name. worker NULL: "{hostname}_{pid}". The folder is
 * created when missing. Failures are logged and counted in the handler. Opaque; every call on a
 * handler is thread-safe (a mutex inside), so one handler may serve callbacks on any threads. */
typedef struct strobe_trace_dir_handler strobe_trace_dir_handler;

/* Creates a handler writing into `dir` (copied, as is `worker`). @return 0 and *out,
 * STROBE_EINVAL (NULL out, NULL, empty or too long dir (4095 bytes at most), a worker that is
 * empty, too long (255 bytes at most) or holds '/') or STROBE_ENOMEM. */
STROBE_API int strobe_trace_dir_handler_create(strobe_trace_dir_handler **out, const char *dir,
                                               const char *worker, int gzip);
/* Frees a handler (NULL: nothing). No callback may be running on it, nor come later: end the
 * schedule that uses it first. */
STROBE_API void strobe_trace_dir_handler_destroy(strobe_trace_dir_handler *h);
/* The traces written and the results that could not be written (each with a logged reason), so
 * far. Either pointer may be NULL. */
STROBE_API void strobe_trace_dir_handler_counts(strobe_trace_dir_handler *h, uint64_t *written,
                                                uint64_t *failed);
/* Copies the path of the trace written last into buf ("" when none yet). @return 0,
 * STROBE_EINVAL (NULL h or buf, cap 0) or STROBE_ERANGE (cap too small: buf gets ""). */
STROBE_API int strobe_trace_dir_handler_last_path(strobe_trace_dir_handler *h, char *buf,
                                                  size_t cap);
/* A strobe_trace_ready_fn: ctx is a strobe_trace_dir_handler. Any thread. */
STROBE_API void strobe_trace_dir_handler_fn(strobe_result *result, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
