/* model.h: a trace loaded for analysis, compactly: the events of a Kineto-format trace (ours or
 * PyTorch's, either schema, or a Perfetto trace read as one) without their JSON, each reduced to
 * the fields the subcommands use, classified by kind, grouped by thread and nested by time. A file
 * is read once, streaming (src/reader).
 *
 * Events are stored packed, not as md_event: per event a fixed "hot" record (ts, dur, name,
 * parent, thread, a class for (cat, ph, kind), flags: 21 bytes, in columns; 4 more in its
 * thread's order), and the rare fields (ids, args, long durations) in a variable-length "cold"
 * record that only events with such a field have; bad events' reasons in a side table. md_event
 * is the decoded view that commands read. The API, for every command:
 *
 *   md_load(m, path) ... md_free(m)        load and release
 *   m->count                               events, each named by its handle 0 .. count-1 (file
 *                                          order, metadata events left out)
 *   md_event e = md_at(m, i);              the decoded event (or md_get(m, i, &e))
 *   md_ts/md_dur/md_name_of/md_kind_of/md_parent/md_thread_of(m, i)
 *                                          the hot fields alone, without decoding the rest
 *   m->threads[t].order[k], k < .count     thread t's events in time order (parents first)
 *   md_str(m, id)                          a string id's text
 *
 * Handles stay valid until md_free; a decoded md_event is a copy (writing to it changes nothing
 * in the model). */
#ifndef STROBE_MODEL_MODEL_H
#define STROBE_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "util/strpool.h"
#include "util/strtab.h"

#define MD_NONE UINT32_MAX

/* What an event is, from its "ph" and "cat" (both schemas: cpu_op / Operator, kernel / Kernel,
 * cuda_runtime / Runtime, gpu_memcpy / Memcpy, gpu_memset / Memset; the other devices'
 * categories; and torch's legacy profiler, which writes no "cat": an X event of the process
 * "CPU functions" is a cpu_op, one of "CUDA functions" a kernel). */
typedef enum md_kind {
    MD_OTHER = 0,           /* an X or i event of another category */
    MD_CPU_OP,              /* cpu_op, Operator */
    MD_USER_ANNOTATION,     /* user_annotation */
    MD_PYTHON,              /* python_function */
    MD_GPU_USER_ANNOTATION, /* gpu_user_annotation */
    MD_KERNEL,              /* kernel, Kernel, mtia_ccp_events, hpu_op */
    MD_MEMCPY,              /* gpu_memcpy, Memcpy */
    MD_MEMSET,              /* gpu_memset, Memset */
    MD_RUNTIME,             /* cuda_runtime, Runtime, xpu_, mtia_, privateuse1_runtime */
    MD_DRIVER,              /* cuda_driver, xpu_driver, privateuse1_driver */
    MD_SYNC,                /* cuda_sync (on a device stream) */
    MD_INSTANT,             /* ph i / I (not [memory]) */
    MD_MEMORY,              /* ph i named [memory] */
    MD_COUNTER,             /* ph C */
    MD_FLOW_START,          /* ph s */
    MD_FLOW_STEP,           /* ph t */
    MD_FLOW_END,            /* ph f */
    MD_UNKNOWN_PHASE,       /* any other ph (B/E, async b/e/n, object events ...) */
    MD_KIND_COUNT
} md_kind;

/* The device family of a trace's device work, told by its categories (model.c's classify_x):
 * torch names its device columns after it ("Self CUDA", "XPU total" ...). */
typedef enum md_device {
    MD_DEV_CUDA = 0,   /* kernel, gpu_memcpy, cuda_runtime ... (ROCm too: torch calls it cuda) */
    MD_DEV_XPU,        /* xpu_runtime, xpu_driver */
    MD_DEV_MTIA,       /* mtia_runtime, mtia_ccp_events */
    MD_DEV_HPU,        /* hpu_op */
    MD_DEV_PRIVATEUSE1 /* privateuse1_runtime, privateuse1_driver */
} md_device;

/* Device work: what a CPU operator's device time is made of (kernels include MTIA's
 * mtia_ccp_events, HPU's hpu_op, and the legacy profiler's "CUDA functions"). */
static inline int md_is_device_work(int kind) {
    return kind == MD_KERNEL || kind == MD_MEMCPY || kind == MD_MEMSET;
}

/* What a pid, tid or flow id holds. An id written as a number, or as a string of decimal digits
 * ("25738"), is a number; any other string is kept as its string id. Ids are told apart by this
 * kind first and by value second, so that no number can pass for a string or the reverse. */
typedef enum md_id_kind { MD_ID_NONE = 0, MD_ID_NUM, MD_ID_STR } md_id_kind;

/* Limits of the times the model keeps: an event whose ts, or whose end (ts + dur), lies at or
 * beyond +-2^62 ns (about 146 years around 1970) is out of range (see md_event.bad and dur_state),
 * so that the difference of any two times the model holds fits in int64. */
#define MD_TIME_LIMIT ((int64_t)1 << 62)

/* At most this many perf counter names are taken from "strobe_perf_events" (strobe writes at most
 * 8); more would cost memory per event and per name. */
#define MD_PERF_MAX 32

/* a + b and a - b, held at the int64 limits: sums of durations from a file can exceed them. */
static inline int64_t md_add_sat(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int64_t md_sub_sat(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

typedef struct md_event {
    int64_t ts;      /* absolute start, ns (baseTimeNanoseconds + ts when the trace has a base) */
    int64_t dur;     /* ns; 0 unless ph X */
    int64_t ext_id;  /* "External id" / "external id" arg; -1 when absent */
    int64_t corr;    /* "correlation" arg; -1 when absent */
    int64_t stream;  /* "stream" arg (a number, or a string of decimal digits); -1 when absent or
                        anything else (HTA's rule: its kernels are the events with a stream) */
    int64_t flow_id; /* flow events: their id, a number or (flow_kind MD_ID_STR) a string id; 0
                        when flow_kind is MD_ID_NONE */
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
    uint8_t flow_kind; /* md_id_kind of flow_id: MD_ID_NONE for other events, and for a flow
                          event without a usable id */
    uint8_t pending;   /* while loading: ts is the file's, read before a baseTimeNanoseconds that
                          may still come (the base is added, and the time checked, at the end) */
} md_event;

/* What became of an X event's "dur" (dur is 0 in every case but MD_DUR_OK). */
typedef enum md_dur_state {
    MD_DUR_OK = 0,   /* a usable duration, or not an X event */
    MD_DUR_MISSING,  /* an X event without "dur" */
    MD_DUR_NEGATIVE, /* a negative "dur" */
    MD_DUR_INVALID   /* "dur" not a number, or out of range */
} md_dur_state;

typedef struct md_thread {
    int64_t pid, tid;           /* the numbers, or for a string id (kind MD_ID_STR) its string id */
    uint32_t pid_str, tid_str;  /* the original string ids ("stream 7"), 0 when numeric */
    uint8_t pid_kind, tid_kind; /* md_id_kind (MD_ID_NONE: absent or unusable, value -1) */
    uint32_t name;              /* from "thread_name" metadata, 0 when none */
    uint32_t *order;            /* its events sorted by ts, then longer first, then file order */
    size_t count;
} md_thread;

typedef struct md_process {
    int64_t pid;      /* as md_thread.pid */
    uint8_t pid_kind; /* md_id_kind */
    uint32_t name;    /* from "process_name" metadata */
} md_process;

/* A class of events: the (cat, ph, kind) that most events of a trace share. */
typedef struct md_class {
    uint32_t cat;
    char ph;
    uint8_t kind;
} md_class;

#define MD_CLASS_MAX 255 /* classes in the table; class 255 is "in the cold record" */

/* A bad event's reasons (side table, sorted by event). */
typedef struct md_bad {
    uint32_t ev;
    uint16_t bits;
    uint32_t why;
} md_bad;

#define MD_MEM_PEAKS_MAX 64

/* A kernel's launch figures, from its args as Kineto writes them (a side table: most events are
 * not kernels). Absent values: device -1, blocks_per_sm and occupancy NAN, regs and smem -1,
 * grid and block 0. */
typedef struct md_kargs {
    uint32_t ev;          /* the kernel event */
    int32_t device;       /* "device" */
    double blocks_per_sm; /* "blocks per SM" */
    double occupancy;     /* "est. achieved occupancy %" */
    int64_t regs, smem;   /* "registers per thread", "shared memory" */
    uint32_t grid, block; /* raw JSON text of "grid", "block" ("[50, 1, 1]"), interned */
} md_kargs;

/* A collective or point-to-point call as torch's record_param_comms, strobe record --mpi and the
 * NCCL plugin describe it in their args (a side table: few events are such calls). Any event with
 * a string "Collective name" arg has one. */
typedef struct md_comm {
    uint32_t ev;   /* the event */
    uint32_t coll; /* "Collective name" ("allreduce", "send" ...), string id */
    uint32_t pg;   /* its process group: the text of the first of "Process Group Name", "pg",
                      "Process Group ID" and "Process Group Ranks" that it has (string id; 0:
                      none) */
    int64_t seq;   /* "Seq", the group's sequence number of the call; -1 when absent */
} md_comm;

/* A model crosses processes as one buffer (wire.c): a pointer added here needs its column there. */
typedef struct md_model {
    char path[4096];
    strobe__pool pool;
    strobe__strtab strings;
    /* The packed events (see the top of this file): columns indexed by handle. ev_dur holds
     * UINT32_MAX for a duration kept in the cold record, ev_thread 0xff for a thread index kept
     * there, ev_cls MD_CLASS_MAX for a class kept there. ev_flags: MD_F_* bits. */
    int64_t *ev_ts;
    uint32_t *ev_dur, *ev_name;
    uint8_t *ev_thread, *ev_cls, *ev_flags;
    /* Parents: ev_parent, or where most parents are near their child (in handles), ev_pdelta:
     * child - parent in 16 bits, 0 for none, INT16_MIN for one in far_parents (pairs (child,
     * parent) sorted by child). */
    uint32_t *ev_parent;
    int16_t *ev_pdelta;
    uint32_t (*far_parents)[2];
    size_t far_count;
    int parents_done; /* the parent columns are filled (md_get reads MD_NONE before) */
    size_t count, cap;
    md_class classes[MD_CLASS_MAX];
    size_t class_count;
    /* Cold records: bit i of cold_bits is set when event i has one; cold_rank[w] counts the set
     * bits before word w; cold_off[r] is where the r-th record starts in cold_buf. */
    uint64_t *cold_bits;
    uint32_t *cold_rank, *cold_off;
    size_t cold_count, cold_cap;
    uint8_t *cold_buf;
    size_t cold_len, cold_buf_cap;
    md_bad *bads; /* one per bad event, sorted by ev */
    size_t bad_count, bad_cap;
    /* The file index of event i is i + the delta of the last run that starts at or before i. */
    uint32_t (*index_runs)[2];
    size_t index_run_count, index_run_cap;
    md_thread *threads;
    size_t thread_count, thread_cap;
    md_process *procs;
    size_t proc_count, proc_cap;
    uint32_t *meta_keys; /* top-level keys other than traceEvents, in file order */
    size_t meta_count, meta_cap;
    /* The elements of the trace's "strobe_heap" arrays (strobe record --heap's allocation sites,
     * one object per process; heap.h reads them), joined by commas, NUL-terminated (malloc'd;
     * NULL: none). */
    char *heap_json;
    size_t heap_len;
    /* Perf counters: the names in strobe's top-level "strobe_perf_events" array (string ids, in
     * its order, repeats dropped, at most MD_PERF_MAX: perf_dropped counts the others), and
     * perf_count values per event, perf[i * perf_count + k]: event i's integer arg named
     * perf_names[k] (a per-range delta), 0 when it has none. Only X events carry them. perf is NULL
     * when perf_count is 0. */
    uint32_t *perf_names;
    size_t perf_count;
    uint64_t perf_dropped;
    int64_t *perf;
    size_t perf_cap; /* events that perf has room for */
    int perf_late;   /* the names came after events: their values are read in a second pass */
    uint64_t metadata_events;     /* ph M events (names, sort indexes): read, not kept */
    uint64_t bad_events;          /* all bad elements the reader flagged, metadata ones too */
    uint64_t bad_metadata_events; /* bad ph M events (not kept, so only counted) */
    uint32_t device_props;        /* raw JSON text of deviceProperties; 0 when absent */
    md_kargs *kargs; /* one per kernel event (kind MD_KERNEL) with args, in event order */
    size_t kargs_count, kargs_cap;
    md_comm *comms; /* one per event with a "Collective name" arg, in event order */
    size_t comm_count, comm_cap;
    /* The highest "Total Allocated" of the [memory] events of each device that is not the CPU
     * ("Device Type" not 0), by "Device Id": the TensorBoard plugin's memory peaks. */
    struct md_mem_peak {
        int64_t type, id, peak;
    } mem_peaks[MD_MEM_PEAKS_MAX];
    size_t mem_peak_count;
    /* distributedInfo (torch.distributed's rank of the trace): rank and world_size, -1 when
     * absent or not integers; dist_info its raw JSON text, 0 when absent. */
    int64_t rank, world_size;
    uint32_t dist_info;
    /* strobe record's "strobe_clock_sync" (the rank's clock against rank 0's: offset_ns, t_ref_ns,
     * drift_ppb, as src/trace/kineto.h has it): its raw JSON text, 0 when absent. */
    uint32_t clock_sync;
    /* The top-level "device_type" (HTA's get_device_type reads it: "MTIA" takes its MTIA
     * branch), decoded, as the last one written (Python's json keeps the last of a repeated
     * key); 0 when absent, not a string, or holding a NUL. */
    uint32_t device_type;
    int has_base;
    int64_t base_time_ns;
    int has_schema;
    int64_t schema_version;
    /* Data after the last gzip member, ignored (strobe_rd_info): bytes (0: none), where from. */
    int64_t gz_trailing_bytes, gz_trailing_offset;
    int gz_trailing_zeros;
    int unterminated;       /* traceEvents was not closed (accepted) */
    int perfetto;           /* the file is a Perfetto trace (read through its JSON) */
    int pf_cut;             /* a Perfetto trace cut inside a packet, read up to the last whole
                               one (accepted, as a cut JSON array is) */
    int64_t pf_cut_offset;  /* where the incomplete packet starts (decompressed bytes) */
    int64_t min_ts, max_ts; /* span of events with a time; min > max when there are none */
    uint8_t device;         /* md_device: the first category of a device other than CUDA's */
    /* Lookups from (pid, tid) to thread and from pid to process, open addressing. */
    uint32_t *thread_slots;
    size_t thread_slot_cap;
    uint32_t *proc_slots;
    size_t proc_slot_cap;
    char err[1024]; /* "PATH: problem" when md_load fails */
} md_model;

/* Loads the trace at `path` ("-": standard input), JSON or Perfetto, plain or gzip (told by
 * content). @return 0, or a negative STROBE_E* error with
 * m->err set to one line naming the file and the problem (with the byte offset of a syntax
 * error). md_free() in every case. */
int md_load(md_model *m, const char *path);

/* md_load() over data[0..len) of plain JSON (not gzip), for tests and fuzzers; `name` stands for
 * the path in messages. The data is not needed after the call. */
int md_load_mem(md_model *m, const void *data, size_t len, const char *name);
void md_free(md_model *m);
/* md_free() that keeps the model's scalars: its path, err, rank and world_size, its span (min_ts,
 * max_ts), its base time and what loading warns of (bad_events, perf_dropped, the gzip and
 * Perfetto cut fields). Its events, strings and every string id go (md_str must not be called on
 * it), so that a command that keeps a small result of each of many traces can drop the rest while
 * still naming the trace in its messages. md_free() still applies (it frees nothing more). */
void md_strip(md_model *m);

/* Hot-record flag bits (md_model.ev_flags). */
enum {
    MD_F_TIME = 1,     /* has_time */
    MD_F_BAD = 2,      /* bad (its reasons in md_model.bads) */
    MD_F_PENDING = 4,  /* while loading: see md_event.pending */
    MD_F_COLD = 8,     /* has a cold record */
    MD_F_DUR_SHIFT = 4 /* bits 4-5: md_dur_state */
};

/* Event i decoded into *out (every field of md_event). */
void md_get(const md_model *m, uint32_t i, md_event *out);

static inline md_event md_at(const md_model *m, uint32_t i) {
    md_event e;
    md_get(m, i, &e);
    return e;
}

/* Single fields of event i, read without decoding the event (the cold ones from its record). */
int64_t md_dur_cold(const md_model *m, uint32_t i);
uint32_t md_thread_cold(const md_model *m, uint32_t i);
void md_class_cold(const md_model *m, uint32_t i, md_class *out);

static inline int64_t md_ts(const md_model *m, uint32_t i) {
    return m->ev_ts[i];
}

static inline int64_t md_dur(const md_model *m, uint32_t i) {
    return m->ev_dur[i] != UINT32_MAX ? (int64_t)m->ev_dur[i] : md_dur_cold(m, i);
}

static inline uint32_t md_name_of(const md_model *m, uint32_t i) {
    return m->ev_name[i];
}

uint32_t md_parent_far(const md_model *m, uint32_t i);

static inline uint32_t md_parent(const md_model *m, uint32_t i) {
    if (m->ev_parent) return m->ev_parent[i];
    int16_t d = m->ev_pdelta[i];
    if (d == 0) return MD_NONE;
    if (d != INT16_MIN) return (uint32_t)((int64_t)i - d);
    return md_parent_far(m, i);
}

static inline uint32_t md_thread_of(const md_model *m, uint32_t i) {
    return m->ev_thread[i] != 0xff ? m->ev_thread[i] : md_thread_cold(m, i);
}

static inline md_class md_class_of(const md_model *m, uint32_t i) {
    md_class c;
    if (m->ev_cls[i] != MD_CLASS_MAX) return m->classes[m->ev_cls[i]];
    md_class_cold(m, i, &c);
    return c;
}

static inline int md_kind_of(const md_model *m, uint32_t i) {
    return md_class_of(m, i).kind;
}

static inline uint32_t md_cat_of(const md_model *m, uint32_t i) {
    return md_class_of(m, i).cat;
}

static inline const char *md_str(const md_model *m, uint32_t id) {
    return strobe__strtab_str(&m->strings, id);
}

/* The trace's device as torch names it in its columns: "CUDA", "XPU", "MTIA", "HPU", or
 * "PRIVATEUSEONE" (torch's name for a PrivateUse1 backend that names itself nothing else). */
const char *md_device_name(const md_model *m);

/* The kind's name ("cpu_op", "kernel", ...), for reports. */
const char *md_kind_name(int kind);

/* Doubles an open-addressing table of indexes (64 slots at first; MD_NONE: free) and puts
 * entries 0 .. n-1 back, entry k at hash(arr, k). The index of the model's threads and
 * processes, and of the commands' own tables. @return 0 or STROBE_ENOMEM (the table unchanged). */
int md_rehash(uint32_t **slots, size_t *slot_cap, size_t n, uint64_t (*hash)(const void *, size_t),
              const void *arr);

#endif
