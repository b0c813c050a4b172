/* sample.c: CPU sampling of every thread with its call chain (see sample.h).
 *
 * Contents: opening the events, the drain thread and ring buffers (with DWARF unwinding and the
 * stacks kept once each), the samples after stop.
 *
 * Event: PERF_COUNT_SW_CPU_CLOCK, one sample per 1/hz seconds of a thread's CPU time (a period
 * in ns, so the rate does not depend on the CPU's frequency, and it works in VMs, which have no
 * PMU); task-clock where cpu-clock cannot be opened. Hardware cycles would sample at a rate that
 * follows the clock frequency, and most VMs lack them: not tried.
 *
 * Layout of the events: perf_mmap() refuses to map an inherited event of one task on any CPU
 * (cpu == -1), so each thread gets one event per CPU, and every event of a CPU writes into that
 * CPU's one ring (PERF_EVENT_IOC_SET_OUTPUT). Events have `inherit`: a thread that a sampled
 * thread creates later gets copies that write into its parent's ring, so threads that never call
 * strobe are sampled from their first instruction. The threads that exist at start are read from
 * /proc/self/task, again until no new one appears (a thread may create another meanwhile).
 *
 * Rings (frame pointers; DWARF mode's are larger: DWARF_RING_* below): about 512 KiB in all
 * (perf_event_mlock_kb's default per user), at most 128 KiB per CPU
 * (the caller may ask for other sizes and drain periods: the tests force losses that way).
 * The drain thread empties a ring when the kernel wakes it there (a quarter full: at 1 kHz a sample
 * of 20 frames is about 200 bytes, so a 128 KiB ring wakes it every 160 ms or so), and all of them
 * every 50 ms in any case; it looks for stop every 10 ms (no descriptor of its own to wake it:
 * see below). The period is short
 * for threads that live briefly: a thread's name is read from /proc when its first samples are
 * drained, and a thread that has exited by then stays unnamed (500 ms lost the name of a thread
 * that ran 300 ms: test_sample; the longer period's saving was below this machine's noise). Samples
 * go into memory, at most SAMPLE_MEM_CAP bytes; beyond it they are dropped and counted, as are the
 * records the kernel could not write (PERF_RECORD_LOST).
 *
 * A program may close or reuse the sampler's descriptors (a daemon closing every descriptor,
 * close_range(), dup2() over a range): they are moved to high numbers (core/ownfd.h), each event's
 * kernel id is kept, and a descriptor is read, stopped or closed only while it still has that id.
 * A ring whose descriptor is gone still fills (its mapping keeps the event) and is drained every
 * period; poll() leaves it out (poll on a closed descriptor returns at once, which would make the
 * thread spin). A thread's event whose descriptor the program closed is gone, and its thread is no
 * longer sampled: the descriptors lost are counted in "strobe_cpu_sampling". */
#include "sample.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ownfd.h"
#include "ownthread.h"
#include "pyframes.h"
#include "strobe/error.h"
#include "unwind.h"
#include "util/u64map.h"

#define MAX_FDS 4096
#define MAX_CPUS 1024
#define RING_BUDGET ((size_t)512 << 10)
#define RING_MAX_PAGES 32
#define DRAIN_MS 50
/* The longest the drain thread waits before it looks at `stop`. */
#define STOP_MS 10
#define SAMPLE_MEM_CAP ((size_t)64 << 20)
/* DWARF mode's rings (see "DWARF unwinding" below): about 8.3 KiB per sample, so larger rings,
 * at most DWARF_RING_MAX_PAGES per CPU (4 MiB: about 500 samples, half a second of one thread
 * at 1 kHz) and DWARF_RING_BUDGET in all, at least DWARF_RING_MIN_PAGES (a few samples); halved
 * while the kernel refuses to map them (perf_event_mlock_kb, for a user without CAP_IPC_LOCK).
 * 1 MiB rings lost 20% of a torch script's samples on this project's loaded 2-vCPU VM (the
 * drain thread, which unwinds as it drains, was scheduled late); 4 MiB lost none. */
#define DWARF_RING_BUDGET ((size_t)32 << 20)
#define DWARF_RING_MAX_PAGES 1024
#define DWARF_RING_MIN_PAGES 16

typedef struct ring {
    int fd; /* the CPU's first event: the others write into its ring */
    int cpu;
    char *base; /* the metadata page, then the data */
    size_t data_size;
} ring;

typedef struct tname {
    char name[16];
} tname;

struct strobe__sampler {
    uint32_t hz;
    uint32_t pid;      /* a child forked meanwhile inherits the events: its samples are left out */
    const char *event; /* "cpu-clock" or "task-clock" */
    uint32_t config;   /* its PERF_COUNT_SW_* */
    size_t page;
    ring *rings;
    int nrings;
    int *fds;
    uint64_t *ids; /* each descriptor's event id (PERF_EVENT_IOC_ID) */
    size_t nfds;
    uint64_t fds_lost;     /* descriptors the program closed or reused, found at stop */
    strobe__u64map opened; /* tids with events */
    uint64_t threads, threads_skipped;

    pthread_t drainer;
    int drainer_running;
    uint32_t drainer_ready; /* the drain thread has set itself up (strobe__own_thread_ready) */
    int running;            /* started and not stopped */
    int stop;               /* atomic */

    strobe__sample *samples;
    size_t count, cap;
    uint64_t *pcs;
    size_t npcs, pcs_cap;
    uint64_t lost, dropped; /* PERF_RECORD_LOST's counts; samples past the memory cap */
    uint64_t format_lost;   /* PERF_FORMAT_LOST's, read at stop */
    int no_format_lost;     /* the kernel lacks PERF_FORMAT_LOST */
    int old_kernel;         /* the kernel lacks inherit_thread and remove_on_exec */
    uint64_t throttled;     /* PERF_RECORD_THROTTLE records */
    size_t ring_pages;
    int drain_ms;
    strobe__u64map names_map; /* tid -> index + 1 into names */
    tname *names;
    size_t nnames, names_cap;
    char *rec; /* a record copied out of the ring where it wraps */
    size_t rec_cap;
    strobe__pyframes *py; /* Python frames (pyframes.h); NULL: none */
    char py_why[96];      /* why there are none, where they were asked for */
    char note[200];       /* why DWARF mode was asked for and not used ("" otherwise) */
    /* DWARF mode (strobe__sampler_start_dwarf): the stack bytes and registers each sample copies,
     * the unwinder (owned by the drain thread), and its counts. */
    uint32_t stack_bytes; /* 0: frame pointers only */
    uint64_t regs_mask;
    uint32_t nregs;
    strobe__unwinder *unwinder;
    uint64_t dwarf_incomplete; /* walks that stopped before the outermost frame */
    uint64_t dwarf_fp_spliced; /* ... and were completed from the kernel's frame-pointer chain */
    uint64_t dwarf_empty;      /* samples without registers or stack (the kernel could not copy) */
    int64_t drain_cpu_ns;      /* the drain thread's CPU time, read as it ends */
    strobe__u64map stacks;     /* a stack's hash -> its frames in pcs (intern_stack) */
    uint64_t own_threads_samples; /* samples of strobe's own threads, left out */
};

/* Python frames: each sample also sends its thread a SIGTRAP (pyframes.h), which the kernel allows
 * only with remove_on_exec (5.13). */
static void py_attr(const strobe__sampler *sp, struct perf_event_attr *a) {
    if (sp->py == NULL) return;
    a->sigtrap = 1;
    a->remove_on_exec = 1;
    a->sig_data = STROBE__PYFRAMES_SIG_DATA;
}

/* The kernel refused sigtrap (before 5.13): sampling goes on without Python frames. Only the
 * probe, the first event opened, can get here: the others are opened without. */
static void py_refused(strobe__sampler *sp, struct perf_event_attr *a) {
    snprintf(sp->py_why, sizeof sp->py_why, "the kernel refused perf_event_attr.sigtrap");
    strobe__pyframes_free(sp->py);
    sp->py = NULL;
    a->sigtrap = 0;
    a->sig_data = 0;
}

static long open_event(strobe__sampler *sp, uint32_t config, int64_t tid, int cpu) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = config;
    a.sample_period = 1000000000ull / sp->hz; /* ns of CPU time */
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
    a.disabled = 1;
    /* Threads created later inherit the event; child processes do not (inherit_thread), and a
     * program exec'd by a thread drops it (remove_on_exec): a forked worker is another process,
     * which strobe record follows with a session of its own. Kernels before 5.13 refuse both:
     * opened again without them (a child process is then sampled into our rings, and its samples
     * are left out by pid). */
    a.inherit = 1;
    a.inherit_thread = !sp->old_kernel;
    a.remove_on_exec = !sp->old_kernel;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.exclude_callchain_kernel = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.sample_max_stack = STROBE__SAMPLE_MAX_FRAMES;
    a.watermark = 1;
    a.wakeup_watermark = (uint32_t)(sp->page * sp->ring_pages / 4);
    /* The kernel's count of the samples it could not write (Linux 6.0): it includes those lost
     * just before stop, which no PERF_RECORD_LOST reports (that record is written only when a
     * later record finds room). Older kernels refuse the flag: opened again without it. */
    a.read_format = sp->no_format_lost ? 0 : PERF_FORMAT_LOST;
    py_attr(sp, &a);
    if (sp->stack_bytes) {
        /* DWARF mode: the user registers and the top of the user stack with each sample; the
         * kernel's frame-pointer chain stays, to complete walks that stop early. */
        a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a.sample_regs_user = sp->regs_mask;
        a.sample_stack_user = sp->stack_bytes;
    }
    long fd = syscall(SYS_perf_event_open, &a, (pid_t)tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    /* The newer feature goes first: PERF_FORMAT_LOST (6.0), then sigtrap and inherit_thread (5.13).
     */
    if (fd < 0 && errno == EINVAL && !sp->no_format_lost) {
        sp->no_format_lost = 1;
        a.read_format = 0;
        fd = syscall(SYS_perf_event_open, &a, (pid_t)tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd < 0 && errno == EINVAL && sp->py) {
        py_refused(sp, &a);
        fd = syscall(SYS_perf_event_open, &a, (pid_t)tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd < 0 && errno == EINVAL && !sp->old_kernel) {
        sp->old_kernel = 1;
        a.inherit_thread = a.remove_on_exec = 0;
        fd = syscall(SYS_perf_event_open, &a, (pid_t)tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    }
    return fd;
}

/* Keeps a new event's descriptor with its id, moved out of the program's way first when `move`.
 * @return the descriptor. */
static int keep_fd(strobe__sampler *sp, long fd, int move) {
    int high = move ? strobe__fd_move_high((int)fd) : (int)fd;
    uint64_t id = 0;
    (void)strobe__fd_perf_id(high, &id);
    sp->ids[sp->nfds] = id;
    sp->fds[sp->nfds++] = high;
    return high;
}

/* Whether descriptor i still is the sampler's event (not closed, nor another file at its number).
 * No side effect: the drain thread's check. */
static int fd_is_ours(const strobe__sampler *sp, size_t i) {
    uint64_t id;
    return sp->fds[i] >= 0 && strobe__fd_perf_id(sp->fds[i], &id) == 0 && id == sp->ids[i];
}

/* fd_is_ours, where one that is not is counted once and never used again (not while the drain
 * thread runs). */
static int fd_ours(strobe__sampler *sp, size_t i) {
    if (sp->fds[i] < 0) return 0;
    if (fd_is_ours(sp, i)) return 1;
    sp->fds[i] = -1;
    sp->fds_lost++;
    return 0;
}

/* Opens thread tid's events, one per ring. @return 0, or -1 with errno (ESRCH: it exited). */
static int open_thread(strobe__sampler *sp, int64_t tid) {
    if (sp->nfds + (size_t)sp->nrings > MAX_FDS) {
        sp->threads_skipped++;
        return 0;
    }
    size_t first = sp->nfds;
    for (int i = 0; i < sp->nrings; i++) {
        long fd = open_event(sp, sp->config, tid, sp->rings[i].cpu);
        if (fd < 0) goto fail;
        fd = keep_fd(sp, fd, 1);
        if (ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, sp->rings[i].fd) != 0) goto fail;
    }
    sp->threads++;
    return 0;
fail:;
    int e = errno;
    while (sp->nfds > first)
        close(sp->fds[--sp->nfds]);
    if (e == EMFILE || e == ENFILE) {
        /* Out of descriptors: this thread goes unsampled, counted (and warned about). */
        sp->threads_skipped++;
        return 0;
    }
    errno = e;
    return -1;
}

/* Opens the events of every thread in /proc/self/task that has none yet. @return the number of
 * threads opened, or -1 (errno) when opening failed for a reason other than the thread's exit. */
static int scan_threads(strobe__sampler *sp) {
    DIR *d = opendir("/proc/self/task");
    if (d == NULL) return -1;
    int added = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        long long tid = strtoll(de->d_name, &end, 10);
        if (*end != '\0' || tid <= 0) continue;
        int inserted = 0;
        uint64_t *v = strobe__u64map_put(&sp->opened, (uint64_t)tid, &inserted);
        if (v == NULL) {
            closedir(d);
            errno = ENOMEM;
            return -1;
        }
        if (!inserted) continue;
        if (open_thread(sp, tid) != 0) {
            if (errno == ESRCH) continue;
            int e = errno;
            closedir(d);
            errno = e;
            return -1;
        }
        added++;
    }
    closedir(d);
    return added;
}

/* ---- Draining ----------------------------------------------------------------------------- */

static void name_of(strobe__sampler *sp, int64_t tid) {
    int inserted = 0;
    uint64_t *v = strobe__u64map_put(&sp->names_map, (uint64_t)tid, &inserted);
    if (v == NULL || !inserted) return;
    if (sp->nnames == sp->names_cap) {
        size_t cap = sp->names_cap ? 2 * sp->names_cap : 16;
        tname *a = realloc(sp->names, cap * sizeof *a);
        if (a == NULL) return; /* left unnamed */
        sp->names = a;
        sp->names_cap = cap;
    }
    tname *n = &sp->names[sp->nnames];
    memset(n, 0, sizeof *n);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%lld/comm", (long long)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t got = read(fd, n->name, sizeof n->name - 1);
        close(fd);
        if (got > 0 && n->name[got - 1] == '\n') got--;
        n->name[got > 0 ? got : 0] = '\0';
    }
    *v = ++sp->nnames;
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    while (c < need)
        c *= 2;
    void *a = realloc(*p, c * size);
    if (a == NULL) return STROBE_ENOMEM;
    *p = a;
    *cap = c;
    return 0;
}

/* ---- DWARF unwinding ------------------------------------------------------------------------
 *
 * With stack_bytes, each sample also carries the user registers (PERF_SAMPLE_REGS_USER: abi,
 * then one u64 per bit of regs_mask) and the top of the user stack (PERF_SAMPLE_STACK_USER: size,
 * size bytes, dyn_size: the bytes the kernel could copy), after the call chain. The drain thread
 * walks them with the unwinder (unwind.c) at once and keeps only the program counters: the
 * copies never reach memory. A walk that stops early (the copy ended: a deep stack; a module
 * without call frame information) goes on with the kernel's frame-pointer chain where that
 * chain holds the walk's last frame (the two agree up to there), else keeps what it walked. */

/* Walks one sample's stack copy into out (raw addresses, innermost first, as the kernel's chain
 * would give them). `rest` is what follows the call chain in the record. @return the frames. */
static uint64_t unwind_sample(strobe__sampler *sp, uint32_t tid, uint64_t time, const char *ips,
                              uint64_t nr, const char *rest, size_t rest_len, uint64_t *out) {
    uint64_t abi = 0, size = 0, dyn = 0;
    const uint64_t *regs = NULL;
    const char *stack = NULL;
    uint64_t regs_bytes = 8u * sp->nregs;
    if (rest_len >= 8) memcpy(&abi, rest, 8);
    if (abi != PERF_SAMPLE_REGS_ABI_NONE && rest_len >= 8 + regs_bytes + 8) {
        regs = (const uint64_t *)(const void *)(rest + 8); /* 8-byte aligned in the record */
        memcpy(&size, rest + 8 + regs_bytes, 8);
        size_t at = 16 + regs_bytes;
        if (size > 0 && rest_len >= at + size + 8) {
            stack = rest + at;
            memcpy(&dyn, rest + at + size, 8);
            if (dyn > size) dyn = size;
        }
    }
    uint32_t n = 0;
    int complete = 0;
    if (regs != NULL && stack != NULL) {
        n = strobe__unwind(sp->unwinder, (int64_t)tid, (int64_t)time, regs, sp->nregs, stack,
                           (size_t)dyn, out, STROBE__SAMPLE_MAX_FRAMES, &complete);
    } else {
        sp->dwarf_empty++;
    }
    /* The kernel's chain, its markers left out: chain[0] is the interrupted instruction. */
    uint64_t chain[STROBE__SAMPLE_MAX_FRAMES];
    uint32_t nc = 0;
    for (uint64_t i = 0; i < nr && nc < STROBE__SAMPLE_MAX_FRAMES; i++) {
        uint64_t ip;
        memcpy(&ip, ips + 8 * i, 8);
        if (ip < (uint64_t)PERF_CONTEXT_MAX) chain[nc++] = ip;
    }
    if (complete) return n;
    if (regs != NULL && stack != NULL) sp->dwarf_incomplete++;
    if (n == 0) {
        memcpy(out, chain, nc * sizeof *chain);
        return nc;
    }
    for (uint32_t j = 0; j < nc; j++) {
        if (chain[j] != out[n - 1]) continue;
        if (j + 1 < nc) sp->dwarf_fp_spliced++;
        for (uint32_t k = j + 1; k < nc && n < STROBE__SAMPLE_MAX_FRAMES; k++)
            out[n++] = chain[k];
        break;
    }
    return n;
}

/* Keeps the n frames just written at pcs[npcs] once: a sample whose stack an earlier one had
 * points at that one's frames instead. A loop's samples repeat a few stacks, and DWARF's are
 * deep (25 frames in a torch matmul loop: 200 bytes a sample, which would reach the memory cap
 * within minutes). The map holds each stack's hash with (n << 48 | off + 1); a hash whose frames
 * differ (a collision) keeps its first stack, and the new one is stored apart. @return the
 * frames' offset in pcs. */
static uint64_t intern_stack(strobe__sampler *sp, uint32_t n) {
    const uint64_t *f = sp->pcs + sp->npcs;
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h ^= f[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    if (h > STROBE__U64MAP_KEY_MAX) h = STROBE__U64MAP_KEY_MAX;
    int inserted = 0;
    uint64_t *v = strobe__u64map_put(&sp->stacks, h, &inserted);
    uint64_t off = sp->npcs;
    if (v != NULL && !inserted && (*v >> 48) == n) {
        uint64_t at = (*v & ((1ull << 48) - 1)) - 1;
        if (memcmp(sp->pcs + at, f, n * sizeof *f) == 0) return at;
    }
    if (v != NULL && inserted) *v = ((uint64_t)n << 48) | (off + 1);
    sp->npcs += n;
    return off;
}

/* A PERF_RECORD_SAMPLE of sample_type TID | TIME | CALLCHAIN: pid, tid (u32 each), time, nr,
 * ips[nr]. */
static void on_sample(strobe__sampler *sp, const char *body, size_t len) {
    if (len < 24) return;
    uint32_t pid, tid;
    uint64_t time, nr;
    memcpy(&pid, body, 4);
    if (pid != sp->pid) return;
    memcpy(&tid, body + 4, 4);
    memcpy(&time, body + 8, 8);
    memcpy(&nr, body + 16, 8);
    if (nr > (len - 24) / 8) nr = (len - 24) / 8;
    /* strobe's own threads (this one, the stream writer ...) are not the program's: left out
     * before any unwinding, and counted. */
    if (strobe__own_thread_is((int64_t)tid)) {
        sp->own_threads_samples++;
        return;
    }
    const char *ips = body + 24;
    uint64_t walked[STROBE__SAMPLE_MAX_FRAMES];
    if (sp->unwinder) {
        /* The walk replaces the kernel's chain (the markers go too: its frames are user ones). */
        nr = unwind_sample(sp, tid, time, ips, nr, body + 24 + 8 * nr, len - 24 - 8 * nr, walked);
        ips = (const char *)walked;
    }
    size_t mem = sp->cap * sizeof *sp->samples + sp->pcs_cap * sizeof *sp->pcs +
                 sp->stacks.cap * 2 * sizeof(uint64_t);
    uint32_t n = 0;
    if (grow((void **)&sp->samples, &sp->cap, sp->count + 1, sizeof *sp->samples) ||
        grow((void **)&sp->pcs, &sp->pcs_cap, sp->npcs + nr, sizeof *sp->pcs) ||
        mem > SAMPLE_MEM_CAP) {
        sp->dropped++;
        return;
    }
    for (uint64_t i = 0; i < nr && n < STROBE__SAMPLE_MAX_FRAMES; i++) {
        uint64_t ip;
        memcpy(&ip, ips + 8 * i, 8);
        if (ip >= (uint64_t)PERF_CONTEXT_MAX) continue; /* a context marker */
        /* The symbolizer looks up pc - 1 (a return address points after its call): the
         * interrupted instruction's own address goes in plus one. */
        sp->pcs[sp->npcs + n] = n == 0 ? ip + 1 : ip;
        n++;
    }
    if (n == 0) return; /* no user frames: a sample in the kernel's own work */
    uint64_t off = intern_stack(sp, n);
    sp->samples[sp->count++] = (strobe__sample){(int64_t)tid, (int64_t)time, off, n};
    name_of(sp, (int64_t)tid);
}

/* @return 1 when the ring held records. */
static int drain_ring(strobe__sampler *sp, ring *r) {
    struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *)r->base;
    const char *data = r->base + sp->page;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    int found = tail < head;
    size_t mask = r->data_size - 1;
    while (tail < head) {
        struct perf_event_header h;
        size_t at = (size_t)tail & mask;
        if (at + sizeof h <= r->data_size) {
            memcpy(&h, data + at, sizeof h);
        } else {
            size_t k = r->data_size - at;
            memcpy(&h, data + at, k);
            memcpy((char *)&h + k, data, sizeof h - k);
        }
        if (h.size < sizeof h || tail + h.size > head) break;
        const char *rec = data + at;
        if (at + h.size > r->data_size) {
            if (grow((void **)&sp->rec, &sp->rec_cap, h.size, 1) == 0) {
                size_t k = r->data_size - at;
                memcpy(sp->rec, data + at, k);
                memcpy(sp->rec + k, data, h.size - k);
                rec = sp->rec;
            } else {
                rec = NULL;
                sp->dropped++;
            }
        }
        if (rec != NULL) {
            const char *body = rec + sizeof h;
            size_t blen = h.size - sizeof h;
            uint64_t lost;
            if (h.type == PERF_RECORD_SAMPLE) {
                on_sample(sp, body, blen);
            } else if (h.type == PERF_RECORD_LOST && blen >= 16) {
                memcpy(&lost, body + 8, 8);
                sp->lost += lost;
            } else if (h.type == PERF_RECORD_LOST_SAMPLES && blen >= 8) {
                memcpy(&lost, body, 8);
                sp->lost += lost;
            } else if (h.type == PERF_RECORD_THROTTLE) {
                /* The kernel paused the event: its interrupts took too long (perf_event_max_
                 * sample_rate). The samples it skips are not lost records: counted apart. */
                sp->throttled++;
            }
        }
        tail += h.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    return found;
}

static void drain_all(strobe__sampler *sp) {
    for (int i = 0; i < sp->nrings; i++)
        drain_ring(sp, &sp->rings[i]);
}

/* Sleeps up to `ms` milliseconds. */
static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *drain_main(void *arg) {
    strobe__sampler *sp = arg;
    strobe__own_thread_enter("strobe_sampler"); /* its samples are strobe's, not the program's */
    /* pfd[i] is ring i's descriptor (its fds entry i: the rings' events come first); -1 once the
     * program took it away, which poll() skips. */
    struct pollfd *pfd = calloc((size_t)sp->nrings, sizeof *pfd);
    for (int i = 0; pfd && i < sp->nrings; i++) {
        pfd[i].fd = sp->rings[i].fd;
        pfd[i].events = POLLIN;
    }
    strobe__own_thread_ready(&sp->drainer_ready);
    int waited = 0;
    while (!__atomic_load_n(&sp->stop, __ATOMIC_ACQUIRE)) {
        int slice = sp->drain_ms - waited < STOP_MS ? sp->drain_ms - waited : STOP_MS;
        int ready = 0;
        if (pfd) {
            ready = poll(pfd, (nfds_t)sp->nrings, slice);
            if (ready < 0) sleep_ms(slice); /* EINTR, ENOMEM: no busy loop either way */
        } else {
            sleep_ms(slice);
        }
        waited += slice;
        if (ready <= 0 && waited < sp->drain_ms) continue;
        waited = 0;
        /* A fork waits for the pass to end (its unwinder, libdw, allocates and takes locks of
         * its own): the fork gate (ownthread.h), which never waits here. */
        if (!strobe__own_work_try(STROBE__GATE_DRAIN)) continue;
        for (int i = 0; i < sp->nrings; i++) {
            int found = drain_ring(sp, &sp->rings[i]);
            if (i == 0) strobe__pyframes_drain(sp->py);
            if (ready <= 0 || pfd == NULL || pfd[i].revents == 0) continue;
            /* Readiness from a descriptor that is no longer the ring's own (closed: POLLNVAL at
             * once; another file at its number: POLLIN with nothing in the ring) would wake this
             * thread again at once: it is left out of the poll set. */
            if ((pfd[i].revents & (POLLNVAL | POLLERR | POLLHUP)) ||
                (!found && !fd_is_ours(sp, (size_t)i)))
                pfd[i].fd = -1;
        }
        strobe__own_work_done(STROBE__GATE_DRAIN);
    }
    free(pfd);
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        sp->drain_cpu_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return NULL;
}

/* ---- Start and stop ------------------------------------------------------------------------- */

static void close_all(strobe__sampler *sp) {
    for (size_t i = 0; i < sp->nfds; i++)
        if (fd_ours(sp, i)) close(sp->fds[i]);
    sp->nfds = 0;
    for (int i = 0; i < sp->nrings; i++)
        if (sp->rings[i].base) munmap(sp->rings[i].base, sp->page + sp->rings[i].data_size);
    sp->nrings = 0;
}

int strobe__sampler_start(strobe__sampler **out, uint32_t hz, size_t ring_pages, int drain_ms,
                          char *why, size_t why_size) {
    return strobe__sampler_start_dwarf(out, hz, 0, ring_pages, drain_ms, why, why_size);
}

/* DWARF mode's part of the start: the unwinder, the registers, the ring size. Where the unwinder
 * cannot be had, the sampler goes on with frame pointers and says why (strobe__sampler_note).
 * @return 0 or STROBE_ENOMEM. */
static int start_dwarf(strobe__sampler *sp, uint32_t stack_bytes) {
    if (stack_bytes == 0) return 0;
    int rc = strobe__unwinder_new(&sp->unwinder, sp->note, sizeof sp->note);
    if (rc < 0) return rc;
    if (rc > 0) return 0;
    sp->stack_bytes = (stack_bytes + 7u) & ~7u;
    sp->regs_mask = strobe__unwind_regs_mask();
    sp->nregs = (uint32_t)__builtin_popcountll(sp->regs_mask);
    return 0;
}

/* A kernel that refuses user stack and register copies (EINVAL: too old, or an architecture
 * without them) still samples with frame pointers: DWARF mode is dropped, with the reason in the
 * note, the flags the probe may have cleared are tried again, and the rings are sized for frame
 * pointers. @return 1 when there was DWARF mode to drop. */
static int drop_dwarf(strobe__sampler *sp, size_t *p2, size_t ring_pages) {
    if (!sp->stack_bytes) return 0;
    snprintf(sp->note, sizeof sp->note,
             "the kernel refused user stack copies (PERF_SAMPLE_STACK_USER: EINVAL)");
    sp->stack_bytes = 0;
    strobe__unwinder_free(sp->unwinder);
    sp->unwinder = NULL;
    sp->no_format_lost = sp->old_kernel = 0;
    while (!ring_pages && *p2 > RING_MAX_PAGES)
        *p2 /= 2;
    sp->ring_pages = *p2;
    return 1;
}

/* DWARF mode's larger rings may pass what the kernel lets this user lock (perf_event_mlock_kb,
 * RLIMIT_MEMLOCK: EPERM); they are halved, before the first is mapped, down to the smallest that
 * holds a few samples. @return 1 when *p2 was halved. */
static int shrink_rings(strobe__sampler *sp, size_t *p2, int err) {
    if (!sp->stack_bytes || sp->nrings > 0 || *p2 <= DWARF_RING_MIN_PAGES) return 0;
    if (err != EPERM && err != ENOMEM) return 0;
    *p2 /= 2;
    sp->ring_pages = *p2;
    return 1;
}

int strobe__sampler_start_dwarf(strobe__sampler **out, uint32_t hz, uint32_t stack_bytes,
                                size_t ring_pages, int drain_ms, char *why, size_t why_size) {
    return strobe__sampler_start_ex(out, hz, ring_pages, drain_ms, 0, stack_bytes, why, why_size);
}

int strobe__sampler_start_ex(strobe__sampler **out, uint32_t hz, size_t ring_pages, int drain_ms,
                             unsigned flags, uint32_t stack_bytes, char *why, size_t why_size) {
    *out = NULL;
    strobe__sampler *sp = calloc(1, sizeof *sp);
    if (sp == NULL) return STROBE_ENOMEM;
    if (flags & STROBE__SAMPLE_PYTHON) {
        int prc = strobe__pyframes_start(&sp->py, sp->py_why, sizeof sp->py_why);
        if (prc < 0) {
            free(sp);
            return prc;
        }
    }
    sp->hz = hz;
    if (start_dwarf(sp, stack_bytes) != 0) {
        strobe__sampler_free(sp);
        return STROBE_ENOMEM;
    }
    sp->pid = (uint32_t)getpid();
    sp->page = (size_t)sysconf(_SC_PAGESIZE);
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (ncpu < 1) ncpu = 1;
    if (ncpu > MAX_CPUS) ncpu = MAX_CPUS;
    /* One ring per CPU that takes the event, sized within the budget, a power of two. */
    size_t budget = sp->stack_bytes ? DWARF_RING_BUDGET : RING_BUDGET;
    size_t most = sp->stack_bytes ? DWARF_RING_MAX_PAGES : RING_MAX_PAGES;
    size_t pages = ring_pages ? ring_pages : budget / (size_t)ncpu / sp->page, p2 = 1;
    if (sp->stack_bytes && !ring_pages && pages < DWARF_RING_MIN_PAGES)
        pages = DWARF_RING_MIN_PAGES;
    while (p2 * 2 <= pages && p2 * 2 <= most)
        p2 *= 2;
    sp->ring_pages = p2;
    sp->drain_ms = drain_ms > 0 ? drain_ms : DRAIN_MS;
    sp->rings = calloc((size_t)ncpu, sizeof *sp->rings);
    sp->fds = calloc(MAX_FDS, sizeof *sp->fds);
    sp->ids = calloc(MAX_FDS, sizeof *sp->ids);
    if (sp->rings == NULL || sp->fds == NULL || sp->ids == NULL) {
        strobe__sampler_free(sp);
        return STROBE_ENOMEM;
    }
    /* The event: cpu-clock, else task-clock, probed on the calling thread. */
    int64_t self = (int64_t)syscall(SYS_gettid);
    static const struct {
        const char *name;
        uint32_t config;
    } events[] = {{"cpu-clock", PERF_COUNT_SW_CPU_CLOCK}, {"task-clock", PERF_COUNT_SW_TASK_CLOCK}};
    int e = 0;
probe:
    for (size_t k = 0; k < sizeof events / sizeof events[0] && sp->event == NULL; k++) {
        for (long c = 0; c < ncpu; c++) {
            long fd = open_event(sp, events[k].config, self, (int)c);
            if (fd < 0) {
                e = errno;
                if (e == ENODEV || e == EINVAL) continue; /* an offline CPU */
                break;
            }
            close((int)fd);
            sp->event = events[k].name;
            sp->config = events[k].config;
            break;
        }
    }
    if (sp->event == NULL && e == EINVAL && drop_dwarf(sp, &p2, ring_pages)) goto probe;
    if (sp->event == NULL) {
        snprintf(why, why_size, "perf_event_open refused (%s%s)", strerror(e),
                 e == EACCES || e == EPERM ? "; see /proc/sys/kernel/perf_event_paranoid" : "");
        strobe__sampler_free(sp);
        return 1;
    }
    for (long c = 0; c < ncpu; c++) {
        long fd = open_event(sp, sp->config, self, (int)c);
        if (fd < 0) continue;
        fd = strobe__fd_move_high((int)fd);
        size_t len = sp->page * (1 + p2);
        void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
        if (base == MAP_FAILED) {
            e = errno;
            close((int)fd);
            if (shrink_rings(sp, &p2, e)) c--; /* this CPU again, with smaller rings */
            continue;
        }
        ring *r = &sp->rings[sp->nrings++];
        r->fd = (int)fd;
        r->cpu = (int)c;
        r->base = base;
        r->data_size = sp->page * p2;
        (void)keep_fd(sp, fd, 0); /* moved above */
    }
    if (sp->nrings == 0) {
        snprintf(why, why_size, "perf ring buffers could not be mapped (%s)", strerror(e));
        strobe__sampler_free(sp);
        return 1;
    }
    /* The calling thread's events are the rings' own; then every other thread, until a scan
     * finds none new. */
    sp->threads = 1;
    uint64_t *v = strobe__u64map_put(&sp->opened, (uint64_t)self, NULL);
    int rc = v ? 0 : STROBE_ENOMEM;
    for (int round = 0; rc == 0 && round < 16; round++) {
        int added = scan_threads(sp);
        if (added < 0) {
            snprintf(why, why_size, "perf_event_open refused for a thread (%s)", strerror(errno));
            rc = errno == ENOMEM ? STROBE_ENOMEM : 1;
        }
        if (added <= 0) break;
    }
    /* The fork gate's handler is installed now, after the session's (see ownthread.h). */
    if (rc == 0 && drain_ms >= 0 && strobe__own_work_try(STROBE__GATE_DRAIN))
        strobe__own_work_done(STROBE__GATE_DRAIN);
    if (rc == 0 && drain_ms >= 0) {
        if (pthread_create(&sp->drainer, NULL, drain_main, sp) != 0)
            rc = STROBE_ESYS;
        else
            strobe__own_thread_wait(&sp->drainer_ready, 2000);
    }
    if (rc != 0) {
        strobe__sampler_free(sp);
        return rc;
    }
    sp->drainer_running = drain_ms >= 0;
    sp->running = 1;
    *out = sp;
    return 0;
}

void strobe__sampler_enable(strobe__sampler *sp) {
    if (sp == NULL) return;
    /* Enabling an event enables the copies its thread's children inherited meanwhile. */
    for (size_t i = 0; i < sp->nfds; i++)
        if (fd_is_ours(sp, i)) (void)ioctl(sp->fds[i], PERF_EVENT_IOC_ENABLE, 0);
}

static int cmp_sample(const void *a, const void *b) {
    const strobe__sample *x = a, *y = b;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->mono_ns != y->mono_ns) return x->mono_ns < y->mono_ns ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

void strobe__sampler_stop(strobe__sampler *sp) {
    if (sp == NULL || !sp->running) return;
    sp->running = 0;
    if (sp->pid != (uint32_t)getpid()) {
        /* A child's copy after fork(): the events and rings are the parent's, which samples on;
         * the drain thread did not come along. Only the child's descriptors and mappings go. */
        sp->drainer_running = 0;
        close_all(sp);
        return;
    }
    /* The drain thread first: it reads the descriptors that fd_ours may set aside. */
    __atomic_store_n(&sp->stop, 1, __ATOMIC_RELEASE);
    if (sp->drainer_running) pthread_join(sp->drainer, NULL);
    sp->drainer_running = 0;
    for (size_t i = 0; i < sp->nfds; i++) {
        if (!fd_ours(sp, i)) continue;
        (void)ioctl(sp->fds[i], PERF_EVENT_IOC_DISABLE, 0);
        /* PERF_FORMAT_LOST without other flags: { u64 value; u64 lost; } */
        uint64_t v[2];
        if (!sp->no_format_lost && read(sp->fds[i], v, sizeof v) == (ssize_t)sizeof v)
            sp->format_lost += v[1];
    }
    drain_all(sp);
    close_all(sp);
    if (sp->count) qsort(sp->samples, sp->count, sizeof *sp->samples, cmp_sample);
    /* Out of memory leaves the native frames alone: the samples stay, without Python frames. */
    (void)strobe__pyframes_splice(sp->py, sp->samples, sp->count, &sp->pcs, &sp->npcs,
                                  &sp->pcs_cap);
}

const strobe__sample *strobe__sampler_samples(const strobe__sampler *sp, size_t *count) {
    *count = sp ? sp->count : 0;
    return sp ? sp->samples : NULL;
}

const uint64_t *strobe__sampler_pcs(const strobe__sampler *sp) {
    return sp ? sp->pcs : NULL;
}

const char *strobe__sampler_thread_name(const strobe__sampler *sp, int64_t tid) {
    const uint64_t *v = sp ? strobe__u64map_get(&sp->names_map, (uint64_t)tid) : NULL;
    return v && *v ? sp->names[*v - 1].name : "";
}

/* The kernel's losses: its per-event count where it keeps one (exact, the tail included), else
 * what PERF_RECORD_LOST said (records, nearly all samples). */
static uint64_t kernel_lost(const strobe__sampler *sp) {
    return sp->format_lost > sp->lost ? sp->format_lost : sp->lost;
}

uint64_t strobe__sampler_unsampled(const strobe__sampler *sp) {
    return sp ? sp->threads_skipped : 0;
}

uint64_t strobe__sampler_lost(const strobe__sampler *sp) {
    return sp ? kernel_lost(sp) + sp->dropped : 0;
}

const char *strobe__sampler_note(const strobe__sampler *sp) {
    return sp ? sp->note : "";
}

/* The "callchain" member, and DWARF mode's counts after it. */
static void callchain_json(const strobe__sampler *sp, char *buf, size_t size) {
    if (!sp->stack_bytes) {
        snprintf(buf, size,
                 "\"callchain\": \"frame pointers, user space\", \"drain_cpu_ms\": %.1f%s%s%s",
                 (double)sp->drain_cpu_ns / 1e6, sp->note[0] ? ", \"dwarf_unavailable\": \"" : "",
                 sp->note, sp->note[0] ? "\"" : "");
        return;
    }
    snprintf(buf, size,
             "\"callchain\": \"dwarf, user space\", \"stack_bytes\": %u, \"unwind_incomplete\": "
             "%llu, \"unwind_fp_completed\": %llu, \"unwind_no_stack\": %llu, "
             "\"module_refreshes\": %llu, \"drain_cpu_ms\": %.1f",
             sp->stack_bytes, (unsigned long long)sp->dwarf_incomplete,
             (unsigned long long)sp->dwarf_fp_spliced, (unsigned long long)sp->dwarf_empty,
             (unsigned long long)strobe__unwind_refreshes(sp->unwinder),
             (double)sp->drain_cpu_ns / 1e6);
}

void strobe__sampler_json(const strobe__sampler *sp, char *buf, size_t size) {
    char chain[400];
    callchain_json(sp, chain, sizeof chain);
    int len = snprintf(
        buf, size,
        "{\"event\": \"%s\", \"frequency_hz\": %u, %s, \"threads_at_start\": %llu, "
        "\"threads_not_sampled\": %llu, \"samples\": %llu, "
        "\"lost\": %llu, \"dropped\": %llu, \"throttled\": %llu, \"descriptors_lost\": %llu, "
        "\"strobe_threads_left_out\": %llu}",
        sp->event, sp->hz, chain, (unsigned long long)sp->threads,
        (unsigned long long)sp->threads_skipped, (unsigned long long)sp->count,
        (unsigned long long)kernel_lost(sp), (unsigned long long)sp->dropped,
        (unsigned long long)sp->throttled, (unsigned long long)sp->fds_lost,
        (unsigned long long)sp->own_threads_samples);
    /* Python frames: their counts, or why there are none where they were asked for. */
    if (len <= 0 || (size_t)len >= size || (sp->py == NULL && sp->py_why[0] == '\0')) return;
    char py[512];
    if (sp->py) {
        strobe__pyframes_json(sp->py, py, sizeof py);
    } else {
        snprintf(py, sizeof py, "{\"off\": \"%s\"}", sp->py_why);
    }
    /* Only whole: a buffer too small for it keeps the object above without it. */
    if ((size_t)len + strlen(py) + 20 < size)
        snprintf(buf + len - 1, size - (size_t)len + 1, ", \"python_frames\": %s}", py);
}

void strobe__sampler_free(strobe__sampler *sp) {
    if (sp == NULL) return;
    strobe__sampler_stop(sp);
    close_all(sp);
    free(sp->rings);
    free(sp->fds);
    free(sp->ids);
    free(sp->samples);
    free(sp->pcs);
    free(sp->names);
    free(sp->rec);
    strobe__pyframes_free(sp->py);
    strobe__unwinder_free(sp->unwinder);
    strobe__u64map_free(&sp->opened);
    strobe__u64map_free(&sp->names_map);
    strobe__u64map_free(&sp->stacks);
    free(sp);
}
