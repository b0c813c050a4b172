/* decode.h: the one record decoder (stage 4 of DESIGN.md).
 *
 * A thread's records (record.h) become trace events handed to a consumer's callbacks: range
 * begins and ends, instants, counter samples, memory events, backend events, the "buffer full"
 * point, and the operator details of the innermost open range as args (shapes, FLOPs given or
 * computed, perf counter deltas, the module path) or as a stack to symbolize. collect.c builds a
 * result from them at stop; stream_out.c hands them to the writer of
 * the streamed file's format while the session runs.
 *
 * The decoder keeps, per thread, what a record's meaning depends on: the last time given out,
 * the correlation ids waiting for the next range or instant, the open modules, and the counters
 * read at each open range's begin. The consumer keeps the open ranges themselves (it may close
 * them: at stop, where the buffer filled, around steps) and tells the decoder the innermost one
 * through `top`. Not thread-safe: one decoder per consuming thread. */
#ifndef STROBE_CORE_DECODE_H
#define STROBE_CORE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "details.h"
#include "perf.h"
#include "record.h"
#include "strobe/instrument.h"

struct strobe__session;

/* An arg a begin or instant carries: `json` is one JSON value of `len` bytes (NUL-terminated).
 * `transient`: the strings are valid only during the callback; else they live as long as the
 * process (a site's constant args). */
typedef struct strobe__dec_arg {
    const char *key;
    const char *json;
    size_t len;
    int transient;
} strobe__dec_arg;
#define STROBE__DEC_MAX_ARGS 16
#define STROBE__DEC_ARG_KEY_TRANSIENT 2

/* A range's begin or an instant: its name is the site's, or bytes in the record (valid only
 * during the callback: the chunk may be recycled after it). */
typedef struct strobe__dec_event {
    int64_t ts;
    const strobe_site *site; /* NULL: a run-time name */
    const char *name;        /* the site's name ("(null)" for none) or the record's bytes */
    size_t name_len;
    int scope;
    uint64_t ext, user; /* correlation ids current at the begin; 0: none */
    /* Args of the event itself (a site's constant args, a payload): valid during the callback. */
    const strobe__dec_arg *args;
    size_t nargs;
} strobe__dec_event;

/* A memory record: the [memory] instant's args (torch's) and the samples of the device's two
 * counter tracks, allocated and reserved. */
typedef struct strobe__dec_memory {
    int64_t ts;
    int c10_type, index; /* "Device Type" (c10's numbering), "Device Id" */
    uint64_t addr;
    int64_t bytes, total_allocated, total_reserved;
    char counter[2][64]; /* the counter tracks' names: "allocated bytes (cpu)", "reserved ..." */
    /* The allocating call stack (record.h's STROBE__MEM_STACK), return addresses innermost
     * first, in the chunk (valid during the callback); npcs 0: none. */
    const uint64_t *pcs;
    uint32_t npcs;
    double weight; /* a sampled event's weight in bytes (record.h); 0: none */
} strobe__dec_memory;

/* The arg of a sampled [memory] event that gives its weight (strobe record --heap). */
#define STROBE__ARG_MEM_WEIGHT "Weight"

/* A backend event (strobe_record_backend_event); names valid only during the callback. */
typedef struct strobe__dec_backend {
    int64_t start, end, handle;
    const char *name, *backend;
    size_t name_len, backend_len;
} strobe__dec_backend;

/* The consumer's callbacks; each returns 0 or a negative STROBE_E* code, which stops decoding.
 * `ctx` is strobe__decoder.ctx. */
typedef struct strobe__dec_ops {
    /* Optional: called with the time of each timed record before its event. */
    int (*time)(void *ctx, int64_t ts);
    int (*begin)(void *ctx, const strobe__dec_event *e);
    int (*end)(void *ctx, int64_t ts);
    int (*instant)(void *ctx, const strobe__dec_event *e);
    int (*counter)(void *ctx, int64_t ts, const strobe_site *site, const char *name, size_t len,
                   double value);
    int (*memory)(void *ctx, const strobe__dec_memory *m);
    int (*backend)(void *ctx, const strobe__dec_backend *b);
    /* The thread's records were dropped from `ts` until it found a free chunk. */
    int (*truncated)(void *ctx, int64_t ts);
    /* The innermost open range's name (NUL-terminated) and depth (1 = outermost); NULL when no
     * range is open, and the detail is counted as an orphan. */
    const char *(*top)(void *ctx, size_t *depth);
    /* An arg of the innermost open range: `key` lives as long as the session, unless `replace`
     * has STROBE__DEC_ARG_KEY_TRANSIENT (a key from a record: valid only during the call);
     * `json` (a JSON value) only during the call. An existing key keeps its value unless
     * `replace` (bit 1). */
    int (*arg)(void *ctx, const char *key, const char *json, size_t len, int replace);
    /* The innermost open range's call stack, return addresses innermost first. */
    int (*stack)(void *ctx, const uint64_t *pcs, uint32_t n);
} strobe__dec_ops;

/* What the decoder keeps of one thread. Zero it (or strobe__dec_thread_init) before use. */
typedef struct strobe__dec_thread {
    int64_t prev; /* the last time given out; INT64_MIN before the first */
    uint64_t pend_ext, pend_user;
    int pend_ptype; /* a payload for the next begin or instant (hooks.h's types); 0: none */
    /* torch's ids for the next begin (an EXT torch record, hooks.h's strobe__begin_torch_op):
     * sequence number, forward thread id, record function id; pend_torch 0: none. */
    int pend_torch;
    int64_t torch_ids[3];
    /* The thread's own RecordFunction thread id (torch's numbering), from its torch records; 0:
     * none seen. */
    uint64_t torch_tid;
    /* The depth of the open range that was given a negative FLOP count (no FLOPs: none are
     * computed from its inputs either); 0: none. */
    size_t noflops_depth;
    uint64_t pend_pbits;
    const char
        *pend_args; /* an ARGS record's pairs for the next begin (in the chunk); NULL: none */
    size_t pend_args_len;
    strobe__buf mods; /* the open modules' names joined by '.' */
    uint32_t *mod_off;
    size_t mod_depth, mod_cap;
    strobe__buf mod_json; /* mods as a JSON string; len 0: to be built */
    uint64_t *perf;       /* STROBE__PERF_MAX values per open depth */
    uint8_t *perf_have;
    size_t perf_cap;
} strobe__dec_thread;

typedef struct strobe__decoder {
    const struct strobe__session *s;
    const strobe__clock_conv *conv;
    /* 1: each thread's times strictly increase (1 ns steps where the clock did not advance; the
     * stream cannot revise what it wrote); 0: they never decrease. */
    int strict;
    const strobe__dec_ops *ops;
    void *ctx;
    uint64_t orphan_details;        /* details with no open range */
    uint64_t unmatched_module_pops; /* module pops with no open module */
    /* The name lengths of recent call sites, direct-mapped by address (a site and its name are
     * static: the length never changes). Zeroed: empty. */
    const strobe_site *len_site[64];
    uint32_t len_val[64];
    /* Formatting scratch. */
    strobe__buf dims, types, concrete, text;
    strobe__dec_arg evargs[STROBE__DEC_MAX_ARGS];
    char payload_json[40];
    char torch_json[3][24];
    strobe_input inputs[STROBE_MAX_INPUTS];
    int64_t dims_store[STROBE_MAX_INPUTS * STROBE__MAX_DIMS];
    char dtype_store[STROBE_MAX_INPUTS][65];
} strobe__decoder;

void strobe__dec_thread_init(strobe__dec_thread *t);
void strobe__dec_thread_free(strobe__dec_thread *t);
void strobe__decoder_free(strobe__decoder *d);

/* Decodes `used` bytes of a thread's records; an unreadable record ends them. @return 0 or the
 * first error of a callback (or STROBE_ENOMEM). */
int strobe__decode(strobe__decoder *d, strobe__dec_thread *t, const char *p, size_t used);

/* A thread's time of raw clock reading `raw`, by the decoder's rule (see `strict`). */
int64_t strobe__dec_time(const strobe__decoder *d, strobe__dec_thread *t, uint64_t raw);

/* The thread's module path as a JSON string (NULL when no module is open). */
const char *strobe__dec_module_path(strobe__dec_thread *t, size_t *len);

/* The size of the record at p (avail bytes left in its chunk), and in *starts_event (may be NULL)
 * the number of events it starts. 0 for a record that cannot be read (unknown kind, or longer
 * than what is left), which cannot happen unless memory was overwritten: the rest of the chunk is
 * then skipped. Shared by the collector and the streaming decoder; defined in decode.c. */
size_t strobe__rec_size_any(const char *p, size_t avail, int *starts_event);
/* The two records a range is made of, read inline (stop decodes millions of them); the others
 * through strobe__rec_size_any(). A chunk's records are 8-byte aligned: avail >= 8 here. */
static inline size_t strobe__rec_size(const char *p, size_t avail, int *starts_event) {
    uint64_t w0;
    __builtin_memcpy(&w0, p, 8);
    unsigned kind = STROBE__REC_KIND(w0);
    if (kind == STROBE__REC_END) {
        if (starts_event) *starts_event = 0;
        return 8;
    }
    if (kind == STROBE__REC_BEGIN_SITE && avail >= 16) {
        if (starts_event) *starts_event = 1;
        return 16;
    }
    return strobe__rec_size_any(p, avail, starts_event);
}

#endif /* STROBE_CORE_DECODE_H */
