/* model.h: a trace loaded for analysis, compactly: the events of a Kineto-format trace (ours or
 * PyTorch's, either schema) without their JSON, each reduced to the fields the subcommands use,
 * classified by kind, grouped by thread and nested by time. A file is read once, streaming
 * (src/reader): memory holds about 100 bytes per event plus each distinct string once, well below
 * the size of the JSON. */
#ifndef STROBE_CLI_MODEL_H
#define STROBE_CLI_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "util/strpool.h"
#include "util/strtab.h"

#define MD_NONE UINT32_MAX

/* What an event is, from its "ph" and "cat" (both schemas: cpu_op / Operator, kernel / Kernel,
 * cuda_runtime / Runtime, gpu_memcpy / Memcpy, gpu_memset / Memset). */
typedef enum md_kind {
    MD_OTHER = 0,           /* an X or i event of another category */
    MD_CPU_OP,              /* cpu_op, Operator */
    MD_USER_ANNOTATION,     /* user_annotation */
    MD_PYTHON,              /* python_function */
    MD_GPU_USER_ANNOTATION, /* gpu_user_annotation */
    MD_KERNEL,              /* kernel, Kernel */
    MD_MEMCPY,              /* gpu_memcpy, Memcpy */
    MD_MEMSET,              /* gpu_memset, Memset */
    MD_RUNTIME,             /* cuda_runtime, Runtime */
    MD_DRIVER,              /* cuda_driver */
    MD_SYNC,                /* cuda_sync */
    MD_INSTANT,             /* ph i / I (not [memory]) */
    MD_MEMORY,              /* ph i named [memory] */
    MD_COUNTER,             /* ph C */
    MD_FLOW_START,          /* ph s */
    MD_FLOW_STEP,           /* ph t */
    MD_FLOW_END,            /* ph f */
    MD_UNKNOWN_PHASE,       /* any other ph (B/E, async b/e/n, object events ...) */
    MD_KIND_COUNT
} md_kind;

/* Device work: what a CPU operator's device time is made of. */
static inline int md_is_device_work(int kind) {
    return kind == MD_KERNEL || kind == MD_MEMCPY || kind == MD_MEMSET;
}

typedef struct md_event {
    int64_t ts;      /* absolute start, ns (baseTimeNanoseconds + ts when the trace has a base) */
    int64_t dur;     /* ns; 0 unless ph X */
    int64_t ext_id;  /* "External id" / "external id" arg; -1 when absent */
    int64_t corr;    /* "correlation" arg; -1 when absent */
    int64_t flow_id; /* flow events: their id (a string id: a distinct number above 2^62); -1
                        otherwise, also for a flow event without a usable id */
    int64_t bytes;   /* [memory] events: "Bytes" (negative on free); 0 otherwise */
    double flops;    /* "flops" arg; 0 when absent */
    uint32_t name, cat; /* string ids (0 is "") */
    uint32_t shapes;    /* raw JSON text of "Input Dims"; 0 when absent */
    uint32_t stack;     /* "Call stack"; 0 when absent */
    uint32_t module;    /* "Module Hierarchy" ("mlp.fc1"); 0 when absent */
    uint32_t thread;    /* index into md_model.threads */
    uint32_t parent;    /* innermost enclosing X event on the same thread; MD_NONE */
    uint32_t index;     /* position in the file's event array */
    char ph;
    uint8_t kind;      /* md_kind */
    uint8_t bad;       /* the reader flagged the event (see strobe_rd_event.bad) */
    uint8_t has_time;  /* ts is known */
    int8_t mem_device; /* [memory] events: "Device Type" arg (0 CPU, else a device), -1 absent */
    uint8_t dur_state; /* md_dur_state: why dur is 0 on an X event, for `check` */
    uint16_t bad_bits; /* STROBE_RD_BAD_* bits as the reader set them */
    uint32_t bad_why;  /* the reader's first reason for a bad event (string id); 0 if good */
} md_event;

/* What became of an X event's "dur" (dur is 0 in every case but MD_DUR_OK). */
typedef enum md_dur_state {
    MD_DUR_OK = 0,   /* a usable duration, or not an X event */
    MD_DUR_MISSING,  /* an X event without "dur" */
    MD_DUR_NEGATIVE, /* a negative "dur" */
    MD_DUR_INVALID   /* "dur" not a number, or out of range */
} md_dur_state;

typedef struct md_thread {
    int64_t pid, tid;          /* numeric ids (string ids get distinct numbers above 2^62) */
    uint32_t pid_str, tid_str; /* the original string ids ("stream 7"), 0 when numeric */
    uint32_t name;             /* from "thread_name" metadata, 0 when none */
    uint32_t *order;           /* its events sorted by ts, then longer first, then file order */
    size_t count;
} md_thread;

typedef struct md_process {
    int64_t pid;
    uint32_t name; /* from "process_name" metadata */
} md_process;

typedef struct md_model {
    char path[4096];
    strobe__pool pool;
    strobe__strtab strings;
    md_event *events;
    size_t count, cap;
    md_thread *threads;
    size_t thread_count, thread_cap;
    md_process *procs;
    size_t proc_count, proc_cap;
    uint32_t *meta_keys; /* top-level keys other than traceEvents, in file order */
    size_t meta_count, meta_cap;
    /* Perf counters: the names in strobe's top-level "strobe_perf_events" array (string ids, in
     * its order, repeats dropped), and perf_count values per event, perf[i * perf_count + k]:
     * event i's integer arg named perf_names[k] (a per-range delta), 0 when it has none. Only X
     * events carry them. perf is NULL when perf_count is 0. */
    uint32_t *perf_names;
    size_t perf_count;
    int64_t *perf;
    size_t perf_cap; /* events that perf has room for */
    int perf_late;   /* the names came after events: their values are read in a second pass */
    uint64_t metadata_events;     /* ph M events (names, sort indexes): read, not kept */
    uint64_t bad_events;          /* all bad elements the reader flagged, metadata ones too */
    uint64_t bad_metadata_events; /* bad ph M events (not kept, so only counted) */
    uint32_t device_props;        /* raw JSON text of deviceProperties; 0 when absent */
    int has_base;
    int64_t base_time_ns;
    int has_schema;
    int64_t schema_version;
    int unterminated;       /* traceEvents was not closed (accepted) */
    int64_t min_ts, max_ts; /* span of events with a time; min > max when there are none */
    /* A lookup from (pid, tid) to thread, open addressing. */
    uint32_t *thread_slots;
    size_t thread_slot_cap;
    char err[1024]; /* "PATH: problem" when md_load fails */
} md_model;

/* Loads the trace at `path` (plain or gzip JSON). @return 0, or a negative STROBE_E* error with
 * m->err set to one line naming the file and the problem (with the byte offset of a syntax
 * error). md_free() in every case. */
int md_load(md_model *m, const char *path);

/* md_load() over data[0..len) of plain JSON (not gzip), for tests and fuzzers; `name` stands for
 * the path in messages. The data is not needed after the call. */
int md_load_mem(md_model *m, const void *data, size_t len, const char *name);
void md_free(md_model *m);

static inline const char *md_str(const md_model *m, uint32_t id) {
    return strobe__strtab_str(&m->strings, id);
}

/* The kind's name ("cpu_op", "kernel", ...), for reports. */
const char *md_kind_name(int kind);

#endif
