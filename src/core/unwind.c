/* unwind.c: DWARF unwinding of CPU samples through libdwfl (see unwind.h).
 *
 * Contents: the registers per architecture, loading libdw, the thread callbacks (registers from
 * the sample, memory from the stack copy), the module list and its refresh, the walk.
 *
 * Why libdw and not libunwind: libdwfl reports a live process's modules by itself (from
 * /proc/self/maps, dwfl_linux_proc_report), finds and caches each module's .eh_frame and
 * .debug_frame, and takes a thread's state from callbacks (dwfl_attach_state): a sample's
 * registers and stack copy plug in as they are. libunwind's remote mode asks the caller to find
 * each procedure's unwind table (find_proc_info) itself, which is most of the work. Both are
 * maintained and in Debian; perf can use either.
 *
 * Memory: an address inside the stack copy reads the copy. Any other address (libdw reads the
 * modules' own files for their tables, so this is rare: the vDSO, data a CFA expression points
 * at) is read from the process itself with process_vm_readv(), which fails cleanly (EFAULT) on an
 * unmapped address instead of faulting; except just above or below the copy, which is the same
 * stack at a later time: its words are stale, so the read fails and the walk stops there. */
#include "unwind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strobe/error.h"

#if defined(STROBE_HAVE_LIBDW) && (defined(__x86_64__) || defined(__aarch64__))
#define UNWIND_BUILT 1
#else
#define UNWIND_BUILT 0
#endif

#if UNWIND_BUILT

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <pthread.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* ---- Registers ------------------------------------------------------------------------------ */

/* perf writes the registers of sample_regs_user in the order of their bits. Bit numbers are
 * the kernel's (arch/<arch>/include/uapi/asm/perf_regs.h), DWARF numbers the psABI's. */
#if defined(__x86_64__)
/* AX BX CX DX SI DI BP SP IP (bits 0-8) and R8-R15 (bits 16-23). */
#define REGS_MASK ((uint64_t)0x1ffu | ((uint64_t)0xffu << 16))
#define NREGS 17u
#define REG_SP 7u /* index in the sample's array */
#define REG_IP 8u
/* DWARF 0-15: rax rdx rcx rbx rsi rdi rbp rsp r8-r15, from the sample's array. */
static const unsigned char dwarf_from_sample[16] = {0, 3,  2,  1,  4,  5,  6,  7,
                                                    9, 10, 11, 12, 13, 14, 15, 16};
#define NDWARF 16u
#else
/* X0-X30, SP, PC (bits 0-32); DWARF 0-31 are x0-x30 and sp in the same order. */
#define REGS_MASK (((uint64_t)1 << 33) - 1)
#define NREGS 33u
#define REG_SP 31u
#define REG_IP 32u
#define NDWARF 32u
#endif

/* ---- libdw, opened at run time ------------------------------------------------------------ */

#define DW_FUNCS(X)                                                                                \
    X(dwfl_begin)                                                                                  \
    X(dwfl_end)                                                                                    \
    X(dwfl_errno)                                                                                  \
    X(dwfl_errmsg)                                                                                 \
    X(dwfl_report_begin)                                                                           \
    X(dwfl_report_end)                                                                             \
    X(dwfl_linux_proc_report)                                                                      \
    X(dwfl_linux_proc_find_elf)                                                                    \
    X(dwfl_standard_find_debuginfo)                                                                \
    X(dwfl_attach_state)                                                                           \
    X(dwfl_getthread_frames)                                                                       \
    X(dwfl_frame_pc)                                                                               \
    X(dwfl_thread_state_registers)                                                                 \
    X(dwfl_thread_state_register_pc)                                                               \
    X(dwfl_addrmodule)

static struct {
#define DW_FIELD(name) __typeof__(&name) name;
    DW_FUNCS(DW_FIELD)
#undef DW_FIELD
} dw;

static pthread_once_t dw_once = PTHREAD_ONCE_INIT;
static char dw_why[160];
static int dw_ok;

static void dw_load(void) {
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(dw_why, sizeof dw_why,
                 "libdw.so.1 (elfutils) could not be loaded: install libdw1 for DWARF unwinding");
        return;
    }
#define DW_SYM(name)                                                                               \
    if ((*(void **)&dw.name = dlsym(h, #name)) == NULL) {                                          \
        snprintf(dw_why, sizeof dw_why, "libdw.so.1 lacks %s: elfutils too old", #name);           \
        return;                                                                                    \
    }
    DW_FUNCS(DW_SYM)
#undef DW_SYM
    dw_ok = 1;
}

uint64_t strobe__unwind_regs_mask(void) {
    return REGS_MASK;
}

int strobe__unwind_available(char *why, size_t why_size) {
    pthread_once(&dw_once, dw_load);
    if (!dw_ok) snprintf(why, why_size, "%s", dw_why);
    return dw_ok;
}

/* ---- The unwinder --------------------------------------------------------------------------- */

struct strobe__unwinder {
    Dwfl *dwfl;
    Dwfl_Callbacks cb;
    Dwfl_Thread_Callbacks tcb;
    char *debuginfo_path;
    pid_t pid;
    int64_t maps_ns;     /* CLOCK_MONOTONIC when /proc/self/maps was last read */
    uint64_t loader_gen; /* the dynamic loader's loads + unloads then (loader_generation) */
    uint64_t refreshes;
    /* The sample being unwound. */
    pid_t tid;
    const uint64_t *regs;
    const char *stack;
    uint64_t sp, stack_len;
    uint64_t *pcs;
    uint32_t n, max;
    int unknown_pc; /* a frame's pc lay outside every module */
    int past_copy;  /* the walk wanted stack memory past the copy's end */
};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The stale part of the stack around the copy: this far below it (the red zone and the frames
 * the thread has since called) and above it (its callers' frames, since changed). */
#define STALE_BELOW ((uint64_t)64 << 10)
#define STALE_ABOVE ((uint64_t)8 << 20)

static bool mem_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg) {
    (void)dwfl;
    strobe__unwinder *u = arg;
    if (addr >= u->sp && addr - u->sp + sizeof *result <= u->stack_len) {
        memcpy(result, u->stack + (addr - u->sp), sizeof *result);
        return true;
    }
    if (addr + STALE_BELOW >= u->sp && addr < u->sp + STALE_ABOVE) {
        /* libdw may end such a walk as if it had reached the outermost frame: remembered, so
         * that the walk counts as stopped early. */
        u->past_copy |= addr >= u->sp;
        return false;
    }
    struct iovec local = {result, sizeof *result},
                 remote = {(void *)(uintptr_t)addr, sizeof *result};
    return process_vm_readv(u->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof *result;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp) {
    (void)dwfl;
    strobe__unwinder *u = arg;
    if (*thread_argp != NULL) return 0;
    *thread_argp = u;
    return u->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp) {
    (void)dwfl;
    strobe__unwinder *u = arg;
    if (tid != u->tid) return false;
    *thread_argp = u;
    return true;
}

static bool set_regs(Dwfl_Thread *thread, void *arg) {
    strobe__unwinder *u = arg;
    Dwarf_Word w[NDWARF];
    for (unsigned i = 0; i < NDWARF; i++) {
#if defined(__x86_64__)
        w[i] = u->regs[dwarf_from_sample[i]];
#else
        w[i] = u->regs[i];
#endif
    }
    if (!dw.dwfl_thread_state_registers(thread, 0, NDWARF, w)) return false;
    dw.dwfl_thread_state_register_pc(thread, u->regs[REG_IP]);
    return true;
}

/* Reads the module list again (first use, or code loaded since). @return 0 or -1. */
static int count_loads(struct dl_phdr_info *info, size_t size, void *arg) {
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *(uint64_t *)arg = (uint64_t)info->dlpi_adds + (uint64_t)info->dlpi_subs;
    return 1; /* the counts are the same in every entry: the first is enough */
}

/* The number of objects the dynamic loader has loaded and unloaded so far (0 where it does not
 * say): a change means the module list may be stale, even where no pc falls outside it (an
 * object mapped where an unloaded one was, or inside another module's span). */
static uint64_t loader_generation(void) {
    uint64_t gen = 0;
    dl_iterate_phdr(count_loads, &gen);
    return gen;
}

static int report_modules(strobe__unwinder *u) {
    u->loader_gen = loader_generation();
    dw.dwfl_report_begin(u->dwfl);
    int rc = dw.dwfl_linux_proc_report(u->dwfl, u->pid);
    if (dw.dwfl_report_end(u->dwfl, NULL, NULL) != 0) rc = -1;
    u->maps_ns = now_ns();
    return rc == 0 ? 0 : -1;
}

int strobe__unwinder_new(strobe__unwinder **out, char *why, size_t why_size) {
    *out = NULL;
    if (!strobe__unwind_available(why, why_size)) return 1;
    strobe__unwinder *u = calloc(1, sizeof *u);
    if (u == NULL) return STROBE_ENOMEM;
    u->pid = getpid();
    u->cb.find_elf = dw.dwfl_linux_proc_find_elf;
    u->cb.find_debuginfo = dw.dwfl_standard_find_debuginfo;
    u->cb.debuginfo_path = &u->debuginfo_path;
    u->tcb.next_thread = next_thread;
    u->tcb.get_thread = get_thread;
    u->tcb.memory_read = mem_read;
    u->tcb.set_initial_registers = set_regs;
    u->dwfl = dw.dwfl_begin(&u->cb);
    if (u->dwfl == NULL) {
        free(u);
        return STROBE_ENOMEM;
    }
    if (report_modules(u) != 0 || !dw.dwfl_attach_state(u->dwfl, NULL, u->pid, &u->tcb, u)) {
        snprintf(why, why_size, "libdw could not attach to this process: %s",
                 dw.dwfl_errmsg(dw.dwfl_errno()));
        strobe__unwinder_free(u);
        return 1;
    }
    *out = u;
    return 0;
}

void strobe__unwinder_free(strobe__unwinder *u) {
    if (u == NULL) return;
    if (u->dwfl) dw.dwfl_end(u->dwfl);
    free(u);
}

uint64_t strobe__unwind_refreshes(const strobe__unwinder *u) {
    return u ? u->refreshes : 0;
}

static int on_frame(Dwfl_Frame *state, void *arg) {
    strobe__unwinder *u = arg;
    Dwarf_Addr pc;
    bool activation = false;
    if (!dw.dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
    /* A return address points after its call: its module is the one holding pc - 1. */
    Dwarf_Addr in = u->n == 0 || activation || pc == 0 ? pc : pc - 1;
    if (dw.dwfl_addrmodule(u->dwfl, in) == NULL) {
        u->unknown_pc = 1;
        if (u->n > 0) return DWARF_CB_ABORT; /* no table to go on with */
    }
    u->pcs[u->n++] = pc;
    return u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

uint32_t strobe__unwind(strobe__unwinder *u, int64_t tid, int64_t mono_ns, const uint64_t *regs,
                        size_t nregs, const char *stack, size_t stack_len, uint64_t *pcs,
                        uint32_t max, int *complete) {
    *complete = 0;
    if (u == NULL || nregs < NREGS || max == 0) return 0;
    u->tid = (pid_t)tid;
    u->regs = regs;
    u->sp = regs[REG_SP];
    u->stack = stack;
    u->stack_len = stack_len;
    u->pcs = pcs;
    u->max = max;
    for (int pass = 0;; pass++) {
        u->n = 0;
        u->unknown_pc = 0;
        u->past_copy = 0;
        int rc = dw.dwfl_getthread_frames(u->dwfl, u->tid, on_frame, u);
        /* A pc outside every module, in a sample taken after the list was read: code loaded
         * since (dlopen). Or a walk that failed where the loader has loaded or unloaded an object
         * since: the module that took the pc may be a stale one (seen under TSan, whose layout
         * put a dlopen'd object where the list had another). Read the list again, once, and walk
         * again. */
        if (pass == 0 && mono_ns > u->maps_ns &&
            (u->unknown_pc || (rc != 0 && !u->past_copy && loader_generation() != u->loader_gen))) {
            u->refreshes++;
            if (report_modules(u) == 0) continue;
        }
        *complete = !u->past_copy && !u->unknown_pc && (rc == 0 || u->n == max);
        return u->n;
    }
}

#else /* not built with libdw, or an architecture without a register map here */

uint64_t strobe__unwind_regs_mask(void) {
    return 0;
}

int strobe__unwind_available(char *why, size_t why_size) {
#if !defined(STROBE_HAVE_LIBDW)
    snprintf(why, why_size,
             "DWARF unwinding is not built in (elfutils' libdw-dev was not found at build time)");
#else
    snprintf(why, why_size, "DWARF unwinding is not supported on this architecture");
#endif
    return 0;
}

int strobe__unwinder_new(strobe__unwinder **out, char *why, size_t why_size) {
    *out = NULL;
    (void)strobe__unwind_available(why, why_size);
    return 1;
}

void strobe__unwinder_free(strobe__unwinder *u) {
    (void)u;
}

uint64_t strobe__unwind_refreshes(const strobe__unwinder *u) {
    (void)u;
    return 0;
}

uint32_t strobe__unwind(strobe__unwinder *u, int64_t tid, int64_t mono_ns, const uint64_t *regs,
                        size_t nregs, const char *stack, size_t stack_len, uint64_t *pcs,
                        uint32_t max, int *complete) {
    (void)u, (void)tid, (void)mono_ns, (void)regs, (void)nregs, (void)stack, (void)stack_len;
    (void)pcs, (void)max;
    *complete = 0;
    return 0;
}

#endif
