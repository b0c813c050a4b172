/* hooks.h: what the core offers the drivers beside it (src/ondemand, src/drivers), so that the
 * core includes none of their headers. Besides the public API, a driver uses only these. */
#ifndef STROBE_CORE_HOOKS_H
#define STROBE_CORE_HOOKS_H

#include <stdint.h>

#include "strobe/instrument.h"
#include "strobe/session.h"

/* Called (atomic pointer; NULL: none) by strobe_step() with the step that begins: the on-demand
 * endpoint sets it while an iteration-mode trace is armed or recording. */
extern void (*strobe__step_hook)(uint64_t step);

/* Called (atomic pointer; NULL: none) by strobe_step() after strobe__step_hook, in place of
 * strobe__session_step(step): the schedule (src/drivers/schedule.c) sets it while installed, moves
 * its sessions along and then calls strobe__session_step() with the step's number in the
 * schedule. */
extern void (*strobe__schedule_step_hook)(uint64_t step);

/* 1 while a schedule is installed (strobe__schedule_step_hook set). */
int strobe__schedule_installed(void);

/* session.c: marks a step boundary in the recording session, if any: the open ProfilerStep range
 * ends now and "ProfilerStep#<number>" begins, opened by the calling thread. strobe_stop() ends
 * the open one at stop. The collector puts each on its thread's track where it nests there, else
 * on a track of their own ("ProfilerStep"). Any thread; takes the session lock (not from the hot
 * path). */
void strobe__session_step(uint64_t number);

/* session.c: ends the recording session's open ProfilerStep range now, if any, and begins none
 * (torch's profile.stop() and step() end the step before the schedule acts). Any thread. */
void strobe__session_step_end(void);

/* session.c: takes in a caller's config (util/struct_in.h): *dst becomes the library's defaults
 * overlaid with the caller's struct_size bytes. @return 0, STROBE_EINVAL (NULL, struct_size below
 * STROBE_CONFIG_MIN_SIZE) or STROBE_ENOTSUP (a newer program's field this library lacks is set). */
int strobe__config_in(strobe_config *dst, const strobe_config *src);

/* Defined beside the on-demand endpoint's STROBE_ONDEMAND=1 constructor (src/ondemand): hotpath.c
 * takes its address so that a static link keeps that object, constructor included, in every
 * instrumented program. A link-level reference only: the core calls nothing there. */
extern int strobe__od_autostart;

/* ---- Sources that are not the public API (src/nvtx) ----------------------------------------- */

/* A call site that also carries constant args: strobe_site.scope has STROBE__SITE_HAS_ARGS set,
 * and the site is the first member of a strobe__site_args. `args` (atomic: a source may replace
 * it while a session records; the old list must stay valid until the process ends) is a list of
 * pairs "key\0json\0" ended by an empty key, each json one JSON value; the decoder gives them to
 * the range or instant that the site begins. Like any site, it must outlive the sessions that
 * recorded it. */
#define STROBE__SITE_HAS_ARGS 0x100
#define STROBE__SITE_SCOPE(scope) ((scope)&0xff)
typedef struct strobe__site_args {
    strobe_site site;
    const char *args;
} strobe__site_args;

/* Value types of a payload (the numbering is NVTX's payload types). */
enum {
    STROBE__PAYLOAD_NONE = 0,
    STROBE__PAYLOAD_U64 = 1,
    STROBE__PAYLOAD_I64 = 2,
    STROBE__PAYLOAD_DOUBLE = 3,
    STROBE__PAYLOAD_U32 = 4,
    STROBE__PAYLOAD_I32 = 5,
    STROBE__PAYLOAD_FLOAT = 6
};
/* The arg a payload becomes. */
#define STROBE__PAYLOAD_ARG "payload"

/* hotpath.c: begins a range, or records an instant, named by `site` with a payload value (`bits`:
 * the value's bits, read as `type`), which becomes its arg "payload". Type NONE records the site
 * alone. Hot-path rules: call only while strobe__active; never fails (what cannot be recorded is
 * counted). */
void strobe__begin_site_payload(const strobe_site *site, int type, uint64_t bits);
void strobe__instant_site_payload(const strobe_site *site, int type, uint64_t bits);

/* hotpath.c: begins a range named by `site` whose args are given per call: `args` holds `len`
 * bytes of pairs "key\0json\0" (each json one JSON value), copied into the record; the range
 * gets them after the site's constant args (at most 16 args in all: more are left out). Lists
 * longer than STROBE__ARGS_MAX_BYTES (or empty) are left out and the range begins without them.
 * The range ends with strobe__end_internal(). Hot-path rules as above. */
#define STROBE__ARGS_MAX_BYTES 4096u
void strobe__begin_site_args(const strobe_site *site, const char *args, size_t len);

/* hotpath.c: begins a torch op's range (the torch observer, through core/torch_api.h), named by
 * `site` or, when it is NULL, by a copy of `name`, with torch's ids in the same reserve: ids[0]
 * the sequence number (negative: none), ids[1] the forward thread id, ids[2] the record function
 * id, ids[3] the calling thread's RecordFunction thread id. The decoder makes them the args
 * "Record function id", and "Sequence number" and "Fwd thread id" when there is a sequence
 * number. Hot-path rules as above; ends with strobe__end(). */
void strobe__begin_torch_op(const strobe_site *site, const char *name, int scope,
                            const int64_t ids[4]);

/* hotpath.c: strobe__begin_site() and strobe__end() (instrument.h) for callers inside the
 * library: the same functions, reached without the PLT. */
void strobe__begin_site_internal(const strobe_site *site);
void strobe__end_internal(void);

/* hotpath.c: the recording half of strobe__begin_site() and strobe__end(), without the markers'
 * check: for a caller that read strobe__active once and found STROBE__ACTIVE_RECORDING set and
 * STROBE__ACTIVE_MARKERS clear (src/nvtx's push and pop), so that the markers cost such a path
 * nothing beyond that one load. Hot-path rules as above. */
void strobe__begin_site_record(const strobe_site *site);
void strobe__end_record(void);

/* thread.c: names the thread whose OS id is `tid` (as strobe_set_thread_name() names the caller).
 * @return 1 when a thread of that id has called strobe, else 0 (nothing is named). */
int strobe__thread_name_tid(int64_t tid, const char *name);

/* hotpath.c: strobe_record_alloc() with the allocation's call stack, for the heap interposer's
 * --heap-stacks (src/preload): `pcs` holds `n` return addresses, innermost first, the
 * interposer's own frames already cut off (at most STROBE__MAX_STACK are kept; n <= 0: none).
 * The [memory] event gets them as its "Call stack", symbolized at the end as ranges' stacks are.
 * Call it only while strobe__active has STROBE__ACTIVE_MEMORY, as the inline wrapper does. */
void strobe__memory_stack(int32_t device, const void *ptr, int64_t bytes, int64_t total_allocated,
                          int64_t total_reserved, const uint64_t *pcs, int n);

/* hotpath.c: strobe__memory_stack() for an allocation or free that `strobe record --heap`
 * sampled by bytes: `weight` is the bytes it stands for (> 0; kept as a single-precision float),
 * which the [memory] event carries as its "Weight" arg. pcs may be NULL (n 0: no stack). Same
 * gate as strobe__memory_stack(). */
void strobe__memory_sample(int32_t device, const void *ptr, int64_t bytes, int64_t total_allocated,
                           int64_t total_reserved, const uint64_t *pcs, int n, double weight);

/* ---- Markers (src/markers): strobe's ranges for other tools ------------------------------- */

/* What the hot path calls, besides recording, for every range it sees while markers are on
 * (src/markers fills it). `begin` gets the range's name (NUL-terminated; `name_is_static`: it
 * stays valid, a site's name) and record scope, and returns 1 when the range's end must be given
 * to `end` too (a scoped range's token then carries STROBE__TOKEN_MARKED). Both are hot-path
 * code: no lock; they never fail. */
typedef struct strobe__marker_ops {
    int (*begin)(const char *name, int scope, int name_is_static);
    void (*end)(void);
} strobe__marker_ops;

/* The markers' table (atomic pointer; NULL: off). Set by src/markers before it sets
 * STROBE__ACTIVE_MARKERS in strobe__active, cleared after it clears the bit. */
extern const strobe__marker_ops *strobe__marker_hook;

/* session.c: sets (on) or clears the STROBE__ACTIVE_MARKERS bit of strobe__active, keeping the
 * session's bits. */
void strobe__markers_gate(int on);

/* Defined beside the markers' STROBE_MARKERS constructor (src/markers): hotpath.c takes its
 * address so that a static link keeps that object. A link-level reference only. */
extern int strobe__markers_autostart;

#endif /* STROBE_CORE_HOOKS_H */
