/* pyframes.c: Python frames in CPU samples (see pyframes.h).
 *
 * Contents:
 *   layouts         the offsets of CPython 3.11's and 3.12's structures
 *   signal handler  SIGTRAP at each sample: the thread's frame chain into a lock-free queue
 *   drain           queue records into resolved frames; code objects into names, cached
 *   splice          at stop: each sample's Python frames into its native frames
 *
 * The handler runs on the sampled thread, without the GIL, at any instruction: it allocates
 * nothing, takes no lock, and reads the interpreter's memory only through process_vm_readv on its
 * own process, so that a pointer read while a frame is half pushed (3.11 sets tstate->cframe
 * before its current_frame) gives EFAULT, never SIGSEGV, with one exception, for speed (a system
 * call costs about 2 us on this project's VM, and a stack has tens of frames): the frames the
 * thread pushed on its data stack (the chunks of tstate->datastack_chunk, where CPython puts
 * every function's frame but generators') are copied directly. A chunk is linked into that list
 * after it is mapped, and unlinked before it is freed, by the thread itself, which the handler
 * interrupts: a chunk in the list is mapped. The first chunk's header is read safely and checked
 * against tstate's datastack_limit, so that a wrong layout (3.12's is untested) reads nothing
 * directly. The depth is bounded.
 *
 * The queue is a bounded multi-producer queue (each slot has a sequence number: a producer claims
 * the head with a compare-and-swap, fills the slot and publishes its sequence; the drain thread
 * consumes in order). A full queue drops the record, counted. Records carry CLOCK_MONOTONIC time,
 * the clock of the sampling events: at stop, a sample gets the first record of its thread at or
 * after its time and before the thread's next sample. */
#include "pyframes.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "details.h"
#include "strobe/error.h"
#include "util/u64map.h"

/* ---- Layouts -------------------------------------------------------------------------------- */

/* CPython 3.11 (Include/cpython/pystate.h, Include/internal/pycore_frame.h, Include/cpython/
 * code.h, Include/cpython/unicodeobject.h, Include/cpython/bytesobject.h); tests/test_pyframes.c
 * checks these against offsetof() in the installed headers. */
static const strobe__py_layout layout_311 = {
    .minor = 11,
    .tstate_cframe = 56,
    .cframe_current_frame = 8,
    .tstate_datastack = 296,
    .frame_code = 32,
    .frame_previous = 48,
    .frame_prev_instr = 56,
    .frame_is_entry = 68,
    .frame_owner = 69,
    .frame_size = 72,
    .code_firstlineno = 72,
    .code_filename = 112,
    .code_name = 120,
    .code_linetable = 136,
    .code_code = 184,
    .unicode_state = 32,
    .unicode_ascii_size = 48,
    .unicode_compact_size = 72,
    .bytes_size = 16,
    .bytes_data = 32,
};

/* CPython 3.12, from its headers (untested here: no 3.12 on the machines this was built on).
 * Frames: f_code and previous come first; there is no is_entry: the evaluation loop pushes a
 * shim frame owned by the C stack (owner FRAME_OWNED_BY_CSTACK) below the frames it runs.
 * PyASCIIObject lost its wstr pointer, PyCompactUnicodeObject its wstr_length. */
static const strobe__py_layout layout_312 = {
    .minor = 12,
    .tstate_cframe = 56,
    .cframe_current_frame = 0,
    .tstate_datastack = 232,
    .frame_code = 0,
    .frame_previous = 8,
    .frame_prev_instr = 56,
    .frame_is_entry = 0xffff, /* none */
    .frame_owner = 70,
    .frame_size = 72,
    .code_firstlineno = 68,
    .code_filename = 112,
    .code_name = 120,
    .code_linetable = 136,
    .code_code = 192,
    .unicode_state = 32,
    .unicode_ascii_size = 40,
    .unicode_compact_size = 56,
    .bytes_size = 16,
    .bytes_data = 32,
};

#define FRAME_OWNED_BY_CSTACK 3 /* 3.12's enum _frameowner */

const strobe__py_layout *strobe__py_layout_of(unsigned minor) {
    return minor == 11 ? &layout_311 : minor == 12 ? &layout_312 : NULL;
}

/* ---- State ---------------------------------------------------------------------------------- */

#define QUEUE_SLOTS 2048u /* a power of two: about 2 MiB, touched only as it fills */
#define PY_TAG 0x7079u    /* "py": the top 16 bits of a pseudo-address (above any user address) */
#define ENTRY_BIT 1u
#define UNKNOWN_NAME "<unknown Python frame>"
#define MAX_STR 4096u
#define MAX_LINETABLE ((size_t)1 << 20)
/* Records and frames kept, like the sampler's own samples (sample.c's SAMPLE_MEM_CAP). */
#define MEM_CAP ((size_t)64 << 20)

typedef struct pyslot {
    uint64_t seq; /* atomic: the position it holds + 1 once written, + QUEUE_SLOTS once read */
    int64_t tid, mono_ns;
    uint32_t n, truncated;
    uint64_t code[STROBE__PYFRAMES_MAX]; /* the code object, ENTRY_BIT where the frame entered */
    uint64_t instr[STROBE__PYFRAMES_MAX];
} pyslot;

/* A record after the drain: its frames are pf->frames[off .. off + n), innermost first. */
typedef struct pyrec {
    int64_t tid, mono_ns;
    size_t off;
    uint32_t n;
} pyrec;

/* A code object as read at its address; a new one where the address holds another since. */
typedef struct pycode {
    uint64_t filename, name, linetable; /* the pointers read */
    int firstlineno;
    uint32_t epoch; /* the drain that last checked it */
    int bad;        /* not readable: its frames get UNKNOWN_NAME */
    char *file, *func;
    uint8_t *lt;
    size_t lt_len;
} pycode;

struct strobe__pyframes {
    const strobe__py_layout *L;
    void *(*this_tstate)(void); /* PyGILState_GetThisThreadState */
    uintptr_t code_type, unicode_type;
    uintptr_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code */
    pid_t pid;
    char version[16];

    pyslot *slots;
    uint64_t head;             /* atomic */
    uint64_t tail;             /* the drain's */
    uint64_t queue_full, late; /* atomic: records dropped, signals delivered late */

    pyrec *recs;
    size_t nrecs, recs_cap;
    uint64_t *frames; /* pseudo-addresses, ENTRY_BIT kept */
    size_t nframes, frames_cap;
    uint64_t truncated, unreadable;
    uint64_t dropped; /* records past MEM_CAP, or out of memory */
    uint64_t samples_with, records_unmatched;

    strobe__u64map code_map; /* code address -> index + 1 into codes */
    pycode *codes;
    size_t ncodes, codes_cap;
    uint32_t epoch;
    strobe__u64map name_map; /* code index << 32 | line -> index + 1 into names */
    char **names;
    size_t nnames, names_cap;
};

/* The session's tables, for the handler and for strobe__pyframes_name(). */
static strobe__pyframes *g_pf;      /* atomic */
static int g_busy;                  /* atomic: handlers running */
static struct sigaction g_previous; /* the handler strobe's replaced */
static int g_installed;

/* ---- Signal handler ------------------------------------------------------------------------- */

/* Reads n bytes of our own memory at addr. @return 0, or -1 where it is not mapped. */
static int peek(const strobe__pyframes *pf, void *dst, uintptr_t addr, size_t n) {
    if (addr == 0) return -1;
    struct iovec l = {dst, n}, r = {(void *)addr, n};
    return process_vm_readv(pf->pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static uint64_t rd64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#define MAX_CHUNKS 8
#define CHUNK_DATA 24 /* _PyStackChunk: previous, size, top, then the data */

/* The data stack chunks known to be mapped: [lo, hi) each, and the next one to read. */
typedef struct chunks {
    uintptr_t lo[MAX_CHUNKS], hi[MAX_CHUNKS];
    int n;
    uint64_t next;
} chunks;

/* Reads the header of chunk `c` into ck. @return 0, or -1 where it cannot be one. */
static int add_chunk(const strobe__pyframes *pf, chunks *ck, uint64_t c, uint64_t limit) {
    uint64_t h[2]; /* previous, size */
    if (ck->n == MAX_CHUNKS || peek(pf, h, (uintptr_t)c, sizeof h) != 0 || h[1] <= CHUNK_DATA ||
        h[1] > ((uint64_t)1 << 28) || (limit != 0 && c + h[1] != limit))
        return -1;
    ck->lo[ck->n] = (uintptr_t)c + CHUNK_DATA;
    ck->hi[ck->n] = (uintptr_t)(c + h[1]);
    ck->n++;
    ck->next = h[0];
    return 0;
}

/* Copies frame `fr` (L->frame_size bytes) into buf: directly where it lies in a data stack chunk,
 * else through peek. @return 0 or -1. */
static int read_frame(const strobe__pyframes *pf, chunks *ck, uint64_t fr, unsigned char *buf) {
    size_t size = pf->L->frame_size;
    for (int i = 0;; i++) {
        if (i == ck->n && (ck->next == 0 || add_chunk(pf, ck, ck->next, 0) != 0)) break;
        if (fr >= ck->lo[i] && fr + size <= ck->hi[i]) {
            memcpy(buf, (const void *)(uintptr_t)fr, size);
            return 0;
        }
    }
    return peek(pf, buf, (uintptr_t)fr, size);
}

/* Walks the calling thread's frames into `s`. */
static void walk(const strobe__pyframes *pf, uintptr_t tstate, pyslot *s) {
    const strobe__py_layout *L = pf->L;
    unsigned char buf[128];
    uint64_t cf = 0, fr = 0, ds[3];
    s->n = 0;
    s->truncated = 0;
    /* tstate is this thread's own, alive while it runs: its fields are read directly. */
    memcpy(&cf, (const char *)tstate + L->tstate_cframe, 8);
    memcpy(ds, (const char *)tstate + L->tstate_datastack, sizeof ds);
    chunks ck;
    ck.n = 0;
    ck.next = 0;
    /* The first chunk: its top and limit must agree with tstate's, else no direct reads. */
    if (ds[0] == 0 || ds[1] < ds[0] || ds[1] > ds[2] || add_chunk(pf, &ck, ds[0], ds[2]) != 0)
        ck.n = 0, ck.next = 0;
    /* tstate->cframe always points to a live _PyCFrame (tstate's root one, or one on the stack
     * of a running _PyEval_EvalFrameDefault, which restores the previous one before it returns):
     * read directly where the chunk check above vouched for the layout. Its current_frame may
     * still be stale (set after cframe itself): read_frame checks it. */
    if (ck.n > 0 && cf != 0 && (cf & 7) == 0) {
        memcpy(&fr, (const char *)(uintptr_t)cf + L->cframe_current_frame, 8);
    } else if (peek(pf, &fr, (uintptr_t)cf + L->cframe_current_frame, 8) != 0) {
        return;
    }
    /* Shim frames (3.12) count towards the bound too: a cycle read mid-update ends here. */
    for (unsigned steps = 0; fr != 0 && steps < 4 * STROBE__PYFRAMES_MAX; steps++) {
        if ((fr & 7) != 0 || read_frame(pf, &ck, fr, buf) != 0) return;
        uint64_t code = rd64(buf + L->frame_code), prev = rd64(buf + L->frame_previous);
        if (L->frame_is_entry == 0xffff && buf[L->frame_owner] == FRAME_OWNED_BY_CSTACK) {
            /* 3.12's shim: the frame inside it is the one the evaluation loop entered with. */
            if (s->n) s->code[s->n - 1] |= ENTRY_BIT;
            fr = prev;
            continue;
        }
        if (code == 0 || (code & 7) != 0) return;
        if (s->n == STROBE__PYFRAMES_MAX) {
            s->truncated = 1;
            return;
        }
        int entry = L->frame_is_entry != 0xffff && buf[L->frame_is_entry] != 0;
        s->code[s->n] = code | (entry ? ENTRY_BIT : 0);
        s->instr[s->n] = rd64(buf + L->frame_prev_instr);
        s->n++;
        fr = prev;
    }
}

static void record(strobe__pyframes *pf) {
    void *ts = pf->this_tstate();
    if (ts == NULL) return; /* not a Python thread */
    uint64_t pos = __atomic_load_n(&pf->head, __ATOMIC_RELAXED);
    pyslot *s;
    for (;;) {
        s = &pf->slots[pos & (QUEUE_SLOTS - 1)];
        uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        int64_t dif = (int64_t)(seq - pos);
        if (dif == 0) {
            if (__atomic_compare_exchange_n(&pf->head, &pos, pos + 1, 1, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                break;
        } else if (dif < 0) {
            __atomic_fetch_add(&pf->queue_full, 1, __ATOMIC_RELAXED);
            return;
        } else {
            pos = __atomic_load_n(&pf->head, __ATOMIC_RELAXED);
        }
    }
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    s->mono_ns = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
    s->tid = (int64_t)syscall(SYS_gettid);
    walk(pf, (uintptr_t)ts, s);
    __atomic_store_n(&s->seq, pos + 1, __ATOMIC_RELEASE);
}

static void on_sigtrap(int sig, siginfo_t *si, void *uctx) {
    int saved = errno;
    /* si_perf_data and si_perf_flags (glibc's siginfo_t does not name them): the kernel's
     * _sigfault._perf, after si_addr (asm-generic/siginfo.h). */
    uint64_t data = 0;
    uint32_t flags = 0;
    if (si != NULL && si->si_code == 6 /* TRAP_PERF */) {
        memcpy(&data, (const char *)si + 24, 8);
        memcpy(&flags, (const char *)si + 36, 4);
    }
    if (si != NULL && si->si_code == 6 && data == STROBE__PYFRAMES_SIG_DATA) {
        __atomic_fetch_add(&g_busy, 1, __ATOMIC_SEQ_CST);
        strobe__pyframes *pf = __atomic_load_n(&g_pf, __ATOMIC_SEQ_CST);
        if (pf != NULL && (flags & 1u) /* TRAP_PERF_FLAG_ASYNC */) {
            /* The thread had SIGTRAP blocked: its frames now are not those of the sample. */
            __atomic_fetch_add(&pf->late, 1, __ATOMIC_RELAXED);
        } else if (pf != NULL) {
            record(pf);
        }
        __atomic_fetch_sub(&g_busy, 1, __ATOMIC_RELEASE);
        errno = saved;
        return;
    }
    /* Not strobe's: what the program had before. */
    if (g_previous.sa_flags & SA_SIGINFO) {
        g_previous.sa_sigaction(sig, si, uctx);
    } else if (g_previous.sa_handler == SIG_DFL) {
        /* The default action (the process ends, with a core): taken when this handler
         * returns, SIGTRAP being blocked while it runs. */
        signal(SIGTRAP, SIG_DFL);
        raise(SIGTRAP);
    } else if (g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
    }
    errno = saved;
}

/* Installs the handler, unless it is the one in place already (a program may have replaced it
 * since the last session: it is then chained to). @return 0 or -1 (errno). */
static int install(void) {
    struct sigaction cur;
    if (sigaction(SIGTRAP, NULL, &cur) != 0) return -1;
    if (g_installed && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigtrap) return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigtrap;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    g_previous = cur;
    if (sigaction(SIGTRAP, &sa, NULL) != 0) return -1;
    g_installed = 1;
    return 0;
}

/* ---- Start ---------------------------------------------------------------------------------- */

int strobe__pyframes_start(strobe__pyframes **out, char *why, size_t why_size) {
    *out = NULL;
    const unsigned long *version = dlsym(RTLD_DEFAULT, "Py_Version");
    void *tstate_fn = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    void *code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    void *unicode_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    if (version == NULL || tstate_fn == NULL || eval == NULL || code_type == NULL ||
        unicode_type == NULL) {
        if (why_size) why[0] = '\0'; /* not CPython: nothing to say */
        return 1;
    }
    unsigned major = (unsigned)(*version >> 24) & 0xff, minor = (unsigned)(*version >> 16) & 0xff;
    const strobe__py_layout *L = major == 3 ? strobe__py_layout_of(minor) : NULL;
    if (L == NULL || sizeof(void *) != 8) {
        snprintf(why, why_size, "CPython %u.%u: Python frames need 3.11 or 3.12 (64-bit)", major,
                 minor);
        return 1;
    }
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) == 0 || sym == NULL ||
        sym->st_size == 0) {
        snprintf(why, why_size, "the size of _PyEval_EvalFrameDefault is unknown");
        return 1;
    }
    strobe__pyframes *pf = calloc(1, sizeof *pf);
    if (pf == NULL) return STROBE_ENOMEM;
    pf->slots = calloc(QUEUE_SLOTS, sizeof *pf->slots);
    if (pf->slots == NULL) {
        free(pf);
        return STROBE_ENOMEM;
    }
    for (uint64_t i = 0; i < QUEUE_SLOTS; i++)
        pf->slots[i].seq = i;
    pf->L = L;
    memcpy(&pf->this_tstate, &tstate_fn, sizeof tstate_fn);
    pf->code_type = (uintptr_t)code_type;
    pf->unicode_type = (uintptr_t)unicode_type;
    pf->eval_lo = (uintptr_t)eval;
    pf->eval_hi = (uintptr_t)eval + sym->st_size;
    pf->pid = getpid();
    snprintf(pf->version, sizeof pf->version, "%u.%u", major, minor);
    /* Reading our own memory may be refused (a seccomp filter): then there is nothing to do. */
    uint64_t probe = 0, self = (uint64_t)(uintptr_t)&probe;
    if (peek(pf, &probe, (uintptr_t)&self, 8) != 0 || probe != self) {
        snprintf(why, why_size, "process_vm_readv refused (%s)", strerror(errno));
        free(pf->slots);
        free(pf);
        return 1;
    }
    if (install() != 0) {
        free(pf->slots);
        free(pf);
        return STROBE_ESYS;
    }
    __atomic_store_n(&g_pf, pf, __ATOMIC_RELEASE);
    *out = pf;
    return 0;
}

/* ---- Drain: names --------------------------------------------------------------------------- */

/* Appends the UTF-8 form of code point c to buf (at least 4 bytes free). @return bytes written. */
static size_t put_utf8(char *buf, uint32_t c) {
    if (c < 0x80) {
        buf[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        buf[0] = (char)(0xc0 | (c >> 6));
        buf[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        buf[0] = (char)(0xe0 | (c >> 12));
        buf[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        buf[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    buf[0] = (char)(0xf0 | ((c >> 18) & 0x07));
    buf[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    buf[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    buf[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* A str object's text as UTF-8 (malloc'd), or NULL where it is not a compact str. */
static char *read_str(const strobe__pyframes *pf, uint64_t obj) {
    const strobe__py_layout *L = pf->L;
    unsigned char h[64];
    if (peek(pf, h, (uintptr_t)obj, L->unicode_ascii_size) != 0) return NULL;
    if (rd64(h + 8) != pf->unicode_type) return NULL;
    uint64_t len = rd64(h + 16);
    uint32_t state;
    memcpy(&state, h + L->unicode_state, 4);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || len > MAX_STR || (kind != 1 && kind != 2 && kind != 4)) return NULL;
    if (ascii) kind = 1;
    size_t at = ascii ? L->unicode_ascii_size : L->unicode_compact_size;
    unsigned char *raw = malloc(len * kind + 1);
    char *s = malloc(len * 4 + 1);
    if (raw == NULL || s == NULL || (len && peek(pf, raw, (uintptr_t)obj + at, len * kind) != 0)) {
        free(raw);
        free(s);
        return NULL;
    }
    size_t o = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint32_t c = kind == 1 ? raw[i] : 0;
        if (kind == 2) {
            uint16_t v;
            memcpy(&v, raw + 2 * i, 2);
            c = v;
        } else if (kind == 4) {
            memcpy(&c, raw + 4 * i, 4);
        }
        o += put_utf8(s + o, c > 0x10ffff ? 0xfffd : c);
    }
    s[o] = '\0';
    free(raw);
    return s;
}

/* Reads the code object at `addr` into *c (its header only where `header_only`). @return 0, or -1
 * where it is not a readable code object. */
static int read_code(const strobe__pyframes *pf, uint64_t addr, pycode *c, int header_only) {
    const strobe__py_layout *L = pf->L;
    unsigned char h[256];
    if (peek(pf, h, (uintptr_t)addr, L->code_code) != 0 || rd64(h + 8) != pf->code_type) return -1;
    int32_t first;
    memcpy(&first, h + L->code_firstlineno, 4);
    c->firstlineno = first;
    c->filename = rd64(h + L->code_filename);
    c->name = rd64(h + L->code_name);
    c->linetable = rd64(h + L->code_linetable);
    if (header_only) return 0;
    c->file = read_str(pf, c->filename);
    c->func = read_str(pf, c->name);
    if (c->file == NULL || c->func == NULL) return -1;
    unsigned char b[40];
    if (peek(pf, b, (uintptr_t)c->linetable, L->bytes_data) == 0) {
        uint64_t n = rd64(b + L->bytes_size);
        if (n > 0 && n <= MAX_LINETABLE && (c->lt = malloc(n)) != NULL) {
            if (peek(pf, c->lt, (uintptr_t)c->linetable + L->bytes_data, n) == 0) {
                c->lt_len = n;
            } else {
                free(c->lt);
                c->lt = NULL;
            }
        }
    }
    return 0;
}

/* The code object at `addr`: from the cache where it still holds the same object (checked once
 * per drain: the address may have been freed and reused). @return its index, or SIZE_MAX (ENOMEM).
 */
static size_t code_of(strobe__pyframes *pf, uint64_t addr) {
    uint64_t *v = strobe__u64map_get(&pf->code_map, addr);
    if (v != NULL) {
        pycode *c = &pf->codes[*v - 1];
        if (c->epoch == pf->epoch) return *v - 1;
        pycode now;
        memset(&now, 0, sizeof now);
        if (c->bad || (read_code(pf, addr, &now, 1) == 0 && now.filename == c->filename &&
                       now.name == c->name && now.linetable == c->linetable &&
                       now.firstlineno == c->firstlineno)) {
            c->epoch = pf->epoch;
            return *v - 1;
        }
    }
    if (strobe__grow((void **)&pf->codes, &pf->codes_cap, pf->ncodes + 1, sizeof *pf->codes))
        return SIZE_MAX;
    pycode *c = &pf->codes[pf->ncodes];
    memset(c, 0, sizeof *c);
    c->epoch = pf->epoch;
    if (read_code(pf, addr, c, 0) != 0) c->bad = 1;
    uint64_t *slot = strobe__u64map_put(&pf->code_map, addr, NULL);
    if (slot == NULL) {
        free(c->file);
        free(c->func);
        free(c->lt);
        return SIZE_MAX;
    }
    *slot = ++pf->ncodes;
    return pf->ncodes - 1;
}

/* A signed varint of the location table (6 bits a byte, 0x40: more follow; the low bit of the
 * value is the sign), from p[*i]. */
static int svarint(const uint8_t *p, size_t len, size_t i) {
    if (i >= len) return 0;
    uint32_t v = p[i] & 63u;
    unsigned shift = 0;
    while ((p[i] & 64u) && i + 1 < len && shift < 24) {
        i++;
        shift += 6;
        v |= (uint32_t)(p[i] & 63u) << shift;
    }
    return (v & 1u) ? -(int)(v >> 1) : (int)(v >> 1);
}

/* The line of instruction `index` (code units), from CPython 3.11's location table
 * (Objects/locations.md): entries of a first byte 1CCCCLLL (code C, L + 1 code units) and bytes
 * without the top bit. Codes 13 (no columns) and 14 (long form) carry a line delta as a signed
 * varint; 10, 11, 12 a delta of 0, 1, 2; 15 no location; the others the same line. */
static int line_at(const pycode *c, int64_t index) {
    int line = c->firstlineno;
    if (index < 0 || c->lt == NULL) return line;
    int64_t start = 0;
    size_t i = 0;
    while (i < c->lt_len) {
        uint8_t b = c->lt[i];
        int code = (b >> 3) & 15, units = (b & 7) + 1;
        if (code == 13 || code == 14) {
            line += svarint(c->lt, c->lt_len, i + 1);
        } else if (code >= 10 && code <= 12) {
            line += code - 10;
        }
        if (index < start + units) return line;
        start += units;
        i++;
        while (i < c->lt_len && !(c->lt[i] & 0x80))
            i++;
    }
    return line;
}

/* The pseudo-address of name index k. */
static uint64_t pseudo(size_t k) {
    return ((uint64_t)PY_TAG << 48) | ((uint64_t)(k + 1) << 1);
}

static int put_name(strobe__pyframes *pf, char *name, size_t *k) {
    if (name == NULL ||
        strobe__grow((void **)&pf->names, &pf->names_cap, pf->nnames + 1, sizeof *pf->names)) {
        free(name);
        return STROBE_ENOMEM;
    }
    pf->names[pf->nnames] = name;
    *k = pf->nnames++;
    return 0;
}

/* The pseudo-address of a frame (code object, last instruction), or 0 (ENOMEM). */
static uint64_t frame_pc(strobe__pyframes *pf, uint64_t code, uint64_t instr) {
    size_t ci = code_of(pf, code);
    if (ci == SIZE_MAX) return 0;
    const pycode *c = &pf->codes[ci];
    int line = 0;
    if (!c->bad) {
        int64_t bytes = (int64_t)(instr - (code + pf->L->code_code));
        line = line_at(c, bytes / 2);
    } else {
        pf->unreadable++;
    }
    uint64_t key = c->bad ? STROBE__U64MAP_KEY_MAX : ((uint64_t)ci << 32) | (uint32_t)line;
    int inserted = 0;
    uint64_t *v = strobe__u64map_put(&pf->name_map, key, &inserted);
    if (v == NULL) return 0;
    if (inserted) {
        size_t k;
        char *name = NULL;
        if (c->bad) {
            name = strdup(UNKNOWN_NAME);
        } else {
            size_t n = strlen(c->file) + strlen(c->func) + 32;
            if ((name = malloc(n)) != NULL) snprintf(name, n, "%s(%d): %s", c->file, line, c->func);
        }
        if (put_name(pf, name, &k) != 0) {
            *v = 0;
            return 0;
        }
        *v = k + 1;
    }
    return *v ? pseudo(*v - 1) : 0;
}

void strobe__pyframes_drain(strobe__pyframes *pf) {
    if (pf == NULL) return;
    pf->epoch++;
    for (;;) {
        pyslot *s = &pf->slots[pf->tail & (QUEUE_SLOTS - 1)];
        if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pf->tail + 1) break;
        uint32_t n = s->n <= STROBE__PYFRAMES_MAX ? s->n : STROBE__PYFRAMES_MAX;
        size_t mem = pf->recs_cap * sizeof *pf->recs + pf->frames_cap * sizeof *pf->frames;
        if (n > 0 && mem <= MEM_CAP &&
            strobe__grow((void **)&pf->recs, &pf->recs_cap, pf->nrecs + 1, sizeof *pf->recs) == 0 &&
            strobe__grow((void **)&pf->frames, &pf->frames_cap, pf->nframes + n,
                         sizeof *pf->frames) == 0) {
            pf->truncated += s->truncated;
            uint32_t k = 0;
            for (uint32_t i = 0; i < n; i++) {
                uint64_t pc = frame_pc(pf, s->code[i] & ~(uint64_t)ENTRY_BIT, s->instr[i]);
                if (pc) pf->frames[pf->nframes + k++] = pc | (s->code[i] & ENTRY_BIT);
            }
            pf->recs[pf->nrecs++] = (pyrec){s->tid, s->mono_ns, pf->nframes, k};
            pf->nframes += k;
        } else if (n > 0) {
            pf->dropped++;
        }
        __atomic_store_n(&s->seq, pf->tail + QUEUE_SLOTS, __ATOMIC_RELEASE);
        pf->tail++;
    }
}

/* ---- Splice --------------------------------------------------------------------------------- */

static int cmp_rec(const void *a, const void *b) {
    const pyrec *x = a, *y = b;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->mono_ns < y->mono_ns ? -1 : x->mono_ns > y->mono_ns;
}

int strobe__pyframes_splice(strobe__pyframes *pf, strobe__sample *samples, size_t count,
                            uint64_t **pcs, size_t *npcs, size_t *pcs_cap) {
    if (pf == NULL) return 0;
    strobe__pyframes_drain(pf);
    if (pf->nrecs == 0) return 0;
    qsort(pf->recs, pf->nrecs, sizeof *pf->recs, cmp_rec);
    /* Samples may share their frames (the sampler interns stacks), so the spliced array is sized
     * by the samples' own frame counts, not by the shared array's. */
    size_t cap = pf->nframes + 16, n = 0;
    for (size_t i = 0; i < count; i++)
        cap += samples[i].n;
    uint64_t *out = malloc(cap * sizeof *out);
    if (out == NULL) return STROBE_ENOMEM;
    size_t r = 0, used = 0;
    for (size_t i = 0; i < count; i++) {
        strobe__sample *sm = &samples[i];
        /* The first record of the thread at or after the sample, before its next sample. */
        while (r < pf->nrecs && (pf->recs[r].tid < sm->tid ||
                                 (pf->recs[r].tid == sm->tid && pf->recs[r].mono_ns < sm->mono_ns)))
            r++;
        const pyrec *rec = NULL;
        int64_t next =
            i + 1 < count && samples[i + 1].tid == sm->tid ? samples[i + 1].mono_ns : INT64_MAX;
        if (r < pf->nrecs && pf->recs[r].tid == sm->tid && pf->recs[r].mono_ns < next) {
            rec = &pf->recs[r++];
            used++;
        }
        const uint64_t *nat = *pcs + sm->off;
        uint32_t nn = sm->n, pn = rec ? rec->n : 0, k = 0;
        const uint64_t *py = rec ? pf->frames + rec->off : NULL;
        size_t off = n;
        for (uint32_t j = 0; j < nn; j++) {
            uint64_t a = nat[j] - 1; /* within the function: see on_sample */
            if (k < pn && a >= pf->eval_lo && a < pf->eval_hi) {
                /* This evaluation loop runs the frames up to the one it was entered with. */
                do {
                    out[n++] = py[k] & ~(uint64_t)ENTRY_BIT;
                } while (!(py[k++] & ENTRY_BIT) && k < pn);
            } else {
                out[n++] = nat[j];
            }
        }
        /* Python frames no native frame showed (the interpreter built without frame pointers
         * ends the kernel's walk early): below the native ones, outermost last. */
        while (k < pn)
            out[n++] = py[k++] & ~(uint64_t)ENTRY_BIT;
        sm->off = off;
        sm->n = (uint32_t)(n - off);
        pf->samples_with += pn > 0;
    }
    pf->records_unmatched += pf->nrecs - used;
    free(*pcs);
    *pcs = out;
    *npcs = n;
    *pcs_cap = cap;
    return 0;
}

/* ---- Names, metadata, free ------------------------------------------------------------------ */

const char *strobe__pyframes_name(uint64_t pc) {
    if ((pc >> 48) != PY_TAG) return NULL;
    const strobe__pyframes *pf = __atomic_load_n(&g_pf, __ATOMIC_ACQUIRE);
    uint64_t k = ((pc & (((uint64_t)1 << 48) - 1)) >> 1);
    if (pf == NULL || k == 0 || k > pf->nnames) return NULL;
    return pf->names[k - 1];
}

void strobe__pyframes_json(const strobe__pyframes *pf, char *buf, size_t size) {
    snprintf(buf, size,
             "{\"python\": \"%s\", \"records\": %llu, \"samples_with_python\": %llu, "
             "\"records_unmatched\": %llu, \"queue_full\": %llu, \"dropped\": %llu, "
             "\"late_signals\": %llu, "
             "\"truncated\": %llu, \"unreadable_frames\": %llu, \"code_objects\": %llu}",
             pf->version, (unsigned long long)pf->nrecs, (unsigned long long)pf->samples_with,
             (unsigned long long)pf->records_unmatched,
             (unsigned long long)__atomic_load_n(&pf->queue_full, __ATOMIC_RELAXED),
             (unsigned long long)pf->dropped,
             (unsigned long long)__atomic_load_n(&pf->late, __ATOMIC_RELAXED),
             (unsigned long long)pf->truncated, (unsigned long long)pf->unreadable,
             (unsigned long long)pf->ncodes);
}

void strobe__pyframes_free(strobe__pyframes *pf) {
    if (pf == NULL) return;
    /* No handler may still be using the queue once it is freed. */
    strobe__pyframes *expected = pf;
    __atomic_compare_exchange_n(&g_pf, &expected, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&g_busy, __ATOMIC_SEQ_CST) != 0)
        sched_yield();
    for (size_t i = 0; i < pf->ncodes; i++) {
        free(pf->codes[i].file);
        free(pf->codes[i].func);
        free(pf->codes[i].lt);
    }
    for (size_t i = 0; i < pf->nnames; i++)
        free(pf->names[i]);
    free(pf->codes);
    free(pf->names);
    free(pf->recs);
    free(pf->frames);
    free(pf->slots);
    strobe__u64map_free(&pf->code_map);
    strobe__u64map_free(&pf->name_map);
    free(pf);
}
