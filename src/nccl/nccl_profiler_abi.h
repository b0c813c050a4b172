/* nccl_profiler_abi.h: NCCL's profiler plugin interface, as strobe reads it (the facts of NCCL's
 * ext-profiler documentation and its profiler_v2 .. v5 headers; these declarations are strobe's
 * own, so that no NCCL header is needed to build).
 *
 * NCCL opens the library named by NCCL_PROFILER_PLUGIN (a path, or NAME for
 * libnccl-profiler-NAME.so) and looks up the newest symbol it knows, "ncclProfiler_v5" down to
 * "ncclProfiler_v1": a struct of a name and five functions (init, startEvent, stopEvent,
 * recordEventState, finalize). init is called once per communicator and sets the activation mask
 * (which event types NCCL reports); every call returns an ncclResult_t, 0 for success (a nonzero
 * init disables the plugin).
 *
 * Versions (NCCL release that brought them): v1 (2.23) .. v3 (2.25) take no communicator
 * arguments at init and carry the communicator's name and hash in the collective and p2p
 * descriptors; v4 (2.26) gives them at init and adds kernel-channel GPU timers; v5 (2.27) widens
 * the type to 64 bits, passes the communicator id first, and adds the API events (group,
 * collective, p2p API calls and kernel launches). v1 gives functions and datatypes as numbers, not
 * names: strobe does not export it.
 *
 * Contents: event types, states, descriptors v2/v3, v4, v5, state args, the function tables. */
#ifndef STROBE_NCCL_PROFILER_ABI_H
#define STROBE_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ncclResult_t: 0 is ncclSuccess; the plugin only ever returns 0, or 3 (ncclInternalError) from
 * an init that cannot run. */
typedef int nccl_result;
#define NCCL_ABI_SUCCESS 0
#define NCCL_ABI_INTERNAL_ERROR 3

/* NCCL's logger (ncclDebugLogger_t): level, subsystem flags, file, line, format, ... */
typedef void (*nccl_logger_fn)(int level, unsigned long flags, const char *file, int line,
                               const char *fmt, ...);

/* Event types (bits of the activation mask, and a descriptor's type). */
enum {
    NCCL_EV_GROUP = 1 << 0,         /* a group of operations launched together (a kernel plan) */
    NCCL_EV_COLL = 1 << 1,          /* a collective, enqueued */
    NCCL_EV_P2P = 1 << 2,           /* a send or receive, enqueued */
    NCCL_EV_PROXY_OP = 1 << 3,      /* the proxy thread's work for one channel of an operation */
    NCCL_EV_PROXY_STEP = 1 << 4,    /* one network transfer of a proxy op */
    NCCL_EV_PROXY_CTRL = 1 << 5,    /* the proxy thread's own states (idle, sleep, append) */
    NCCL_EV_KERNEL_CH = 1 << 6,     /* a kernel's work on one channel (v4+: GPU timers) */
    NCCL_EV_NET_PLUGIN = 1 << 7,    /* events defined by the network plugin */
    NCCL_EV_GROUP_API = 1 << 8,     /* v5: ncclGroupStart .. ncclGroupEnd */
    NCCL_EV_COLL_API = 1 << 9,      /* v5: a collective API call (ncclAllReduce, ...) */
    NCCL_EV_P2P_API = 1 << 10,      /* v5: ncclSend / ncclRecv */
    NCCL_EV_KERNEL_LAUNCH = 1 << 11 /* v5: the launch of a plan's kernel */
};

/* States given to recordEventState (ncclProfilerEventState_t; one numbering for all versions). */
enum {
    NCCL_ST_PROXY_OP_SEND_POSTED = 0, /* 0..7: v1-v3 proxy-op states */
    NCCL_ST_PROXY_OP_SEND_REM_FIFO_WAIT = 1,
    NCCL_ST_PROXY_OP_SEND_TRANSMITTED = 2,
    NCCL_ST_PROXY_OP_SEND_DONE = 3,
    NCCL_ST_PROXY_OP_RECV_POSTED = 4,
    NCCL_ST_PROXY_OP_RECV_RECEIVED = 5,
    NCCL_ST_PROXY_OP_RECV_TRANSMITTED = 6,
    NCCL_ST_PROXY_OP_RECV_DONE = 7,
    NCCL_ST_PROXY_STEP_SEND_GPU_WAIT = 8,
    NCCL_ST_PROXY_STEP_SEND_WAIT = 9,
    NCCL_ST_PROXY_STEP_RECV_WAIT = 10,
    NCCL_ST_PROXY_STEP_RECV_FLUSH_WAIT = 11,
    NCCL_ST_PROXY_STEP_RECV_GPU_WAIT = 12,
    NCCL_ST_PROXY_CTRL_IDLE = 13,
    NCCL_ST_PROXY_CTRL_ACTIVE = 14,
    NCCL_ST_PROXY_CTRL_SLEEP = 15,
    NCCL_ST_PROXY_CTRL_WAKEUP = 16,
    NCCL_ST_PROXY_CTRL_APPEND = 17,
    NCCL_ST_PROXY_CTRL_APPEND_END = 18,
    NCCL_ST_PROXY_OP_IN_PROGRESS = 19,      /* v4+ */
    NCCL_ST_PROXY_STEP_SEND_PEER_WAIT = 20, /* v4+ */
    NCCL_ST_NET_PLUGIN_UPDATE = 21,         /* v4+ */
    NCCL_ST_KERNEL_CH_STOP = 22,            /* v4+: args give the GPU stop timer */
    NCCL_ST_GROUP_START_API_STOP = 23,      /* v5: ncclGroupStart returned */
    NCCL_ST_GROUP_END_API_START = 24        /* v5: ncclGroupEnd called */
};

/* Proxy-op descriptor fields (the same in every version). */
typedef struct nccl_abi_proxy_op {
    pid_t pid; /* the process that made the op: its parent may be dereferenced only if ours */
    uint8_t channel_id;
    int peer;
    int n_steps;
    int chunk_size;
    int is_send;
} nccl_abi_proxy_op;

/* v2 and v3 descriptors (uint8_t type; communicator name and hash in each coll / p2p). v2's coll
 * has trafficBytes between datatype and nMaxChannels; v3's does not. */
typedef struct nccl_abi_descr_v3 {
    uint8_t type;
    void *parent;
    int rank;
    union {
        struct {
            const char *comm_name;
            uint64_t comm_hash;
            uint64_t seq;
            const char *func;
            const void *send_buff;
            void *recv_buff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t n_max_channels;
            uint8_t n_warps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *comm_name;
            uint64_t comm_hash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p;
        nccl_abi_proxy_op proxy_op;
        struct {
            int step;
        } proxy_step;
        struct {
            uint8_t channel_id;
        } kernel_ch;
    };
} nccl_abi_descr_v3;

typedef struct nccl_abi_descr_v2 {
    uint8_t type;
    void *parent;
    int rank;
    union {
        struct {
            const char *comm_name;
            uint64_t comm_hash;
            uint64_t seq;
            const char *func;
            const void *send_buff;
            void *recv_buff;
            size_t count;
            int root;
            const char *datatype;
            size_t traffic_bytes;
            uint8_t n_max_channels;
            uint8_t n_warps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *comm_name;
            uint64_t comm_hash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p;
        nccl_abi_proxy_op proxy_op;
        struct {
            int step;
        } proxy_step;
    };
} nccl_abi_descr_v2;

/* The coll and p2p descriptors of v4 (v5 appends parentGroup to each). */
#define NCCL_ABI_COLL_V4                                                                           \
    uint64_t seq;                                                                                  \
    const char *func;                                                                              \
    const void *send_buff;                                                                         \
    void *recv_buff;                                                                               \
    size_t count;                                                                                  \
    int root;                                                                                      \
    const char *datatype;                                                                          \
    uint8_t n_channels;                                                                            \
    uint8_t n_warps;                                                                               \
    const char *algo;                                                                              \
    const char *proto;
#define NCCL_ABI_P2P_V4                                                                            \
    const char *func;                                                                              \
    void *buff;                                                                                    \
    const char *datatype;                                                                          \
    size_t count;                                                                                  \
    int peer;                                                                                      \
    uint8_t n_channels;

typedef struct nccl_abi_descr_v4 {
    uint8_t type;
    void *parent; /* coll / p2p: the group; proxy op: the coll or p2p; step: the proxy op */
    int rank;
    union {
        struct {
            NCCL_ABI_COLL_V4
        } coll;
        struct {
            NCCL_ABI_P2P_V4
        } p2p;
        nccl_abi_proxy_op proxy_op;
        struct {
            int step;
        } proxy_step;
        struct {
            uint8_t channel_id;
            uint64_t gpu_timer; /* GPU globaltimer at start */
        } kernel_ch;
        struct {
            int64_t id;
            void *data;
        } net_plugin;
    };
} nccl_abi_descr_v4;

typedef struct nccl_abi_descr_v5 {
    uint64_t type;
    void *parent; /* coll / p2p: the collective / p2p API event; API events: the group API event */
    int rank;
    union {
        struct {
            bool graph_captured;
            int group_depth;
        } group_api;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            int root;
            void *stream;
            bool graph_captured;
        } coll_api;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            void *stream;
            bool graph_captured;
        } p2p_api;
        struct {
            void *stream;
        } kernel_launch;
        struct {
            NCCL_ABI_COLL_V4
            void *parent_group;
        } coll;
        struct {
            NCCL_ABI_P2P_V4
            void *parent_group;
        } p2p;
        nccl_abi_proxy_op proxy_op;
        struct {
            int step;
        } proxy_step;
        struct {
            uint8_t channel_id;
            uint64_t gpu_timer;
        } kernel_ch;
        struct {
            int64_t id;
            void *data;
        } net_plugin;
    };
} nccl_abi_descr_v5;

/* recordEventState's args: v2/v3, and v4/v5 (v5's has one more member of the same size). */
typedef union nccl_abi_state_args_v3 {
    struct {
        size_t trans_size;
        int steps;
    } proxy_op;
    struct {
        int appended_proxy_ops;
    } proxy_ctrl;
} nccl_abi_state_args_v3;

typedef union nccl_abi_state_args_v4 {
    struct {
        size_t trans_size;
    } proxy_step;
    struct {
        int appended_proxy_ops;
    } proxy_ctrl;
    struct {
        void *data;
    } net_plugin;
    struct {
        uint64_t gpu_timer; /* GPU globaltimer at stop */
    } kernel_ch;
} nccl_abi_state_args_v4;

/* The exported tables, one per version. */
typedef struct nccl_abi_profiler_v3 {
    const char *name;
    nccl_result (*init)(void **context, int *activation_mask);
    nccl_result (*start_event)(void *context, void **handle, nccl_abi_descr_v3 *descr);
    nccl_result (*stop_event)(void *handle);
    nccl_result (*record_event_state)(void *handle, int state, nccl_abi_state_args_v3 *args);
    nccl_result (*finalize)(void *context);
} nccl_abi_profiler_v3;

typedef struct nccl_abi_profiler_v2 {
    const char *name;
    nccl_result (*init)(void **context, int *activation_mask);
    nccl_result (*start_event)(void *context, void **handle, nccl_abi_descr_v2 *descr);
    nccl_result (*stop_event)(void *handle);
    nccl_result (*record_event_state)(void *handle, int state, nccl_abi_state_args_v3 *args);
    nccl_result (*finalize)(void *context);
} nccl_abi_profiler_v2;

typedef struct nccl_abi_profiler_v4 {
    const char *name;
    nccl_result (*init)(void **context, int *activation_mask, const char *comm_name,
                        uint64_t comm_hash, int n_nodes, int n_ranks, int rank, nccl_logger_fn log);
    nccl_result (*start_event)(void *context, void **handle, nccl_abi_descr_v4 *descr);
    nccl_result (*stop_event)(void *handle);
    nccl_result (*record_event_state)(void *handle, int state, nccl_abi_state_args_v4 *args);
    nccl_result (*finalize)(void *context);
} nccl_abi_profiler_v4;

typedef struct nccl_abi_profiler_v5 {
    const char *name;
    nccl_result (*init)(void **context, uint64_t comm_id, int *activation_mask,
                        const char *comm_name, int n_nodes, int n_ranks, int rank,
                        nccl_logger_fn log);
    nccl_result (*start_event)(void *context, void **handle, nccl_abi_descr_v5 *descr);
    nccl_result (*stop_event)(void *handle);
    nccl_result (*record_event_state)(void *handle, int state, nccl_abi_state_args_v4 *args);
    nccl_result (*finalize)(void *context);
} nccl_abi_profiler_v5;

#endif /* STROBE_NCCL_PROFILER_ABI_H */
