/* malloc_hook.c: libstrobe_malloc.so, a preloadable interposer that records a program's heap as
 * strobe memory events, with no change to the program:
 *
 *     STROBE_MALLOC_TRACE=heap.json LD_PRELOAD=build/libstrobe_malloc.so ./program
 *
 * Contents: the real allocator and the bootstrap arena; accounting and recording; the
 * interposed functions; the session (constructor and destructor).
 *
 * - The real allocator is found with dlsym(RTLD_NEXT, ...) on first use. dlsym itself may
 *   allocate, so while it runs allocations are served from a small static bump arena; free() of
 *   an arena block is ignored, realloc() of one copies it out.
 * - Every block's size is the allocator's usable size (malloc_usable_size), not the size that was
 *   asked for: it is the only size free() can learn, so allocations and frees carry the same
 *   "Bytes" and "Total Allocated" returns to where it started.
 * - Blocks are counted from the moment the library is loaded, so frees of blocks allocated before
 *   the session started (by the loader, by other constructors) keep the total right.
 * - A thread-local flag marks the hook's own work: allocations strobe makes while recording,
 *   starting, stopping or saving go straight to the real allocator, unrecorded, and nothing
 *   recurses.
 * - A free is recorded before the block is released and an allocation after it is obtained, so
 *   the events of an address that another thread reuses at once come in the right order.
 * - The session runs in STROBE_THREADS_ALL mode with profile_memory and is saved at normal exit
 *   (the library's destructor); "%p" in the path is replaced by the process id, for programs
 *   that start other programs, which inherit the environment, and "%r" by the rank in a parallel
 *   job (strobe/dist.h), for the ranks of one job. A forked child that does not exec
 *   writes nothing (strobe stops recording in it). Errors print one line prefixed
 *   "strobe_malloc:" and never stop the program.
 * - Built into libstrobe_record.so (STROBE_MALLOC_EMBEDDED, for `strobe record --heap`), the file
 *   has no session of its own: record_hook.c runs it and turns recording on and off through
 *   heap_hook.h. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strobe/strobe.h"
#ifdef STROBE_MALLOC_EMBEDDED
#include "heap_hook.h"
#endif

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- The real allocator and the bootstrap arena ---------------------------------------- */

typedef struct real_fns {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable)(void *);
} real_fns;

static real_fns real;
static int resolved;  /* 1 once `real` is filled; read with acquire */
static int resolving; /* 1 while dlsym runs: allocations then come from the arena */

/* 256 KiB: the loader and dlsym need a few hundred bytes; the rest is margin. */
#define ARENA_BYTES (256u * 1024u)
#define ARENA_HDR 16u
static _Alignas(64) unsigned char arena[ARENA_BYTES];
static size_t arena_next;

static int in_arena(const void *p) {
    return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_BYTES;
}

/* A block of the arena, `align` a power of two >= 16, with its size stored in the 16 bytes
 * before it. The arena is never reused, so its blocks are already zero (calloc). */
static void *arena_alloc(size_t n, size_t align) {
    if (align < ARENA_HDR) align = ARENA_HDR;
    if (n > ARENA_BYTES || align > ARENA_BYTES) return NULL;
    size_t need = n + align + ARENA_HDR;
    size_t off = __atomic_fetch_add(&arena_next, need, __ATOMIC_RELAXED);
    if (off + need > ARENA_BYTES) return NULL;
    uintptr_t base = (uintptr_t)(arena + off) + ARENA_HDR;
    uintptr_t p = (base + align - 1) & ~(uintptr_t)(align - 1);
    ((size_t *)p)[-1] = n;
    return (void *)p;
}

static size_t arena_size(const void *p) {
    return ((const size_t *)p)[-1];
}

static void say(const char *msg, const char *detail) {
    char line[512];
    int n = snprintf(line, sizeof line, "strobe_malloc: %s%s%s\n", msg, detail ? ": " : "",
                     detail ? detail : "");
    if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) return;
}

/* Fills `real`. Returns 1 when the allocator is usable, 0 while dlsym runs (the caller uses the
 * arena) or when it could not be found. */
static int resolve(void) {
    if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)) return 1;
    if (__atomic_exchange_n(&resolving, 1, __ATOMIC_ACQ_REL)) return 0;
    real_fns r;
#define SYM(field, name) r.field = (__typeof__(r.field))dlsym(RTLD_NEXT, name)
    SYM(malloc, "malloc");
    SYM(free, "free");
    SYM(calloc, "calloc");
    SYM(realloc, "realloc");
    SYM(posix_memalign, "posix_memalign");
    SYM(aligned_alloc, "aligned_alloc");
    SYM(memalign, "memalign");
    SYM(valloc, "valloc");
    SYM(pvalloc, "pvalloc");
    SYM(usable, "malloc_usable_size");
#undef SYM
    int ok =
        r.malloc && r.free && r.calloc && r.realloc && r.posix_memalign && r.memalign && r.usable;
    if (ok) {
        real = r;
        __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
    } else {
        say("the real allocator was not found (dlsym RTLD_NEXT); serving from a small arena", NULL);
    }
    __atomic_store_n(&resolving, 0, __ATOMIC_RELEASE);
    return ok;
}

/* ---- Accounting and recording --------------------------------------------------------- */

enum { MODE_COUNT = 0, MODE_TRACE = 1, MODE_OFF = 2 };
/* COUNT until the constructor decides, then TRACE while the session records, OFF without
 * STROBE_MALLOC_TRACE and from the moment the session starts to stop. */
static int mode;
static int64_t total_allocated;
static __thread int in_hook __attribute__((tls_model("initial-exec")));

/* Returns 1 when the calling allocation should be counted: the allocator is resolved, the thread
 * is not inside the hook already, and the mode counts. */
static inline int counting(void) {
    return !in_hook && __atomic_load_n(&mode, __ATOMIC_RELAXED) != MODE_OFF;
}

static void note_alloc(void *p) {
    if (p == NULL) return;
    in_hook = 1;
    int64_t n = (int64_t)real.usable(p);
    int64_t total = __atomic_add_fetch(&total_allocated, n, __ATOMIC_RELAXED);
    if (__atomic_load_n(&mode, __ATOMIC_RELAXED) == MODE_TRACE)
        strobe_record_alloc(STROBE_DEVICE_CPU_ID, p, n, total, 0);
    in_hook = 0;
}

/* Before the block is released (see the top of the file). */
static void note_free(void *p) {
    in_hook = 1;
    int64_t n = (int64_t)real.usable(p);
    int64_t total = __atomic_sub_fetch(&total_allocated, n, __ATOMIC_RELAXED);
    if (__atomic_load_n(&mode, __ATOMIC_RELAXED) == MODE_TRACE)
        strobe_record_free(STROBE_DEVICE_CPU_ID, p, n, total, 0);
    in_hook = 0;
}

/* ---- The interposed functions --------------------------------------------------------- */

EXPORT void *malloc(size_t n) {
    if (UNLIKELY(!resolve())) return arena_alloc(n, 16);
    if (!counting()) return real.malloc(n);
    void *p = real.malloc(n);
    note_alloc(p);
    return p;
}

EXPORT void free(void *p) {
    if (p == NULL || in_arena(p)) return;
    if (UNLIKELY(!resolve())) return; /* not ours and nothing to give it back to: leaked */
    if (counting()) note_free(p);
    real.free(p);
}

EXPORT void *calloc(size_t n, size_t size) {
    if (UNLIKELY(!resolve())) {
        if (size != 0 && n > SIZE_MAX / size) return NULL;
        return arena_alloc(n * size, 16);
    }
    if (!counting()) return real.calloc(n, size);
    void *p = real.calloc(n, size);
    note_alloc(p);
    return p;
}

EXPORT void *realloc(void *p, size_t n) {
    if (p == NULL) return malloc(n);
    if (in_arena(p)) {
        /* Out of the arena into the real heap; the arena block is never freed. */
        void *q = malloc(n);
        if (q != NULL) memcpy(q, p, arena_size(p) < n ? arena_size(p) : n);
        return q;
    }
    if (UNLIKELY(!resolve())) return NULL;
    if (!counting()) return real.realloc(p, n);
    note_free(p);
    void *q = real.realloc(p, n);
    if (q != NULL) {
        note_alloc(q);
    } else if (n != 0) {
        note_alloc(p); /* failed: the old block is still there */
    }
    return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t size) {
    /* glibc's reallocarray calls its realloc internally, past this hook: route it here. */
    if (size != 0 && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n * size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
    if (UNLIKELY(!resolve())) {
        void *p = arena_alloc(n, align);
        if (p == NULL) return ENOMEM;
        *out = p;
        return 0;
    }
    if (!counting()) return real.posix_memalign(out, align, n);
    int rc = real.posix_memalign(out, align, n);
    if (rc == 0) note_alloc(*out);
    return rc;
}

EXPORT void *memalign(size_t align, size_t n) {
    if (UNLIKELY(!resolve())) return arena_alloc(n, align);
    if (!counting()) return real.memalign(align, n);
    void *p = real.memalign(align, n);
    note_alloc(p);
    return p;
}

EXPORT void *aligned_alloc(size_t align, size_t n) {
    if (UNLIKELY(!resolve())) return arena_alloc(n, align);
    /* An allocator without aligned_alloc: memalign gives the same blocks on glibc. */
    void *(*fn)(size_t, size_t) = real.aligned_alloc ? real.aligned_alloc : real.memalign;
    if (!counting()) return fn(align, n);
    void *p = fn(align, n);
    note_alloc(p);
    return p;
}

EXPORT void *valloc(size_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (UNLIKELY(!resolve())) return arena_alloc(n, page);
    if (real.valloc == NULL) return memalign(page, n);
    if (!counting()) return real.valloc(n);
    void *p = real.valloc(n);
    note_alloc(p);
    return p;
}

EXPORT void *pvalloc(size_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (UNLIKELY(!resolve())) return arena_alloc((n + page - 1) & ~(page - 1), page);
    if (real.pvalloc == NULL) return memalign(page, (n + page - 1) & ~(page - 1));
    if (!counting()) return real.pvalloc(n);
    void *p = real.pvalloc(n);
    note_alloc(p);
    return p;
}

EXPORT size_t malloc_usable_size(void *p) {
    if (p == NULL) return 0;
    if (in_arena(p)) return arena_size(p);
    if (UNLIKELY(!resolve())) return 0;
    return real.usable(p);
}

#ifdef STROBE_MALLOC_EMBEDDED
/* ---- Embedded in libstrobe_record.so (heap_hook.h) ------------------------------------- */

void strobe__heap_set_tracing(int on) {
    __atomic_store_n(&mode, on ? MODE_TRACE : MODE_OFF, __ATOMIC_SEQ_CST);
}

int strobe__heap_quiet(int on) {
    int was = in_hook;
    in_hook = on;
    return was;
}

void strobe__heap_resolve(void) {
    (void)resolve();
}
#else
/* ---- The session ---------------------------------------------------------------------- */

static char trace_path[4096];
static pid_t session_pid;

/* strobe's warnings and errors (a buffer that filled, a failed save) as one line each. Called
 * with strobe's locks held: it only formats on the stack and writes. */
static void log_sink(strobe_log_level level, const char *msg, void *ctx) {
    (void)ctx;
    if (level >= STROBE_LOG_WARN) say("strobe", msg);
}

/* Copies `path` into trace_path with "%p" replaced by the process id and "%r" by the rank in a
 * parallel job (strobe/dist.h; 0 when none is known, as `strobe record` does). Returns 0, or
 * STROBE_ERANGE when it does not fit. */
static int expand_path(const char *path) {
    size_t o = 0;
    for (const char *s = path; *s; s++) {
        char pid[24];
        const char *add = s;
        size_t len = 1;
        if (s[0] == '%' && (s[1] == 'p' || s[1] == 'r')) {
            int rank = 0;
            if (s[1] == 'r' && !strobe_get_rank(&rank, NULL, NULL)) rank = 0;
            len = (size_t)snprintf(pid, sizeof pid, "%ld", s[1] == 'p' ? (long)getpid() : rank);
            add = pid;
            s++;
        }
        if (o + len >= sizeof trace_path) return STROBE_ERANGE;
        memcpy(trace_path + o, add, len);
        o += len;
    }
    trace_path[o] = '\0';
    return 0;
}

__attribute__((constructor)) static void strobe_malloc_start(void) {
    (void)resolve();
    const char *path = getenv("STROBE_MALLOC_TRACE");
    if (path == NULL || path[0] == '\0') {
        __atomic_store_n(&mode, MODE_OFF, __ATOMIC_SEQ_CST);
        return;
    }
    in_hook = 1;
    if (expand_path(path) != 0) {
        say("STROBE_MALLOC_TRACE is too long; not tracing", NULL);
        __atomic_store_n(&mode, MODE_OFF, __ATOMIC_SEQ_CST);
        in_hook = 0;
        return;
    }
    strobe_set_log_fn(log_sink, NULL);
    strobe_config cfg;
    strobe_config_init(&cfg);
    cfg.thread_mode = STROBE_THREADS_ALL;
    cfg.profile_memory = 1;
    cfg.trace_name = program_invocation_short_name;
    int rc = strobe_start(&cfg);
    if (rc != 0) {
        say("cannot start a session; not tracing", strobe_strerror(rc));
        __atomic_store_n(&mode, MODE_OFF, __ATOMIC_SEQ_CST);
    } else {
        session_pid = getpid();
        __atomic_store_n(&mode, MODE_TRACE, __ATOMIC_SEQ_CST);
    }
    in_hook = 0;
}

__attribute__((destructor)) static void strobe_malloc_stop(void) {
    /* From here on nothing is recorded, on any thread. */
    if (__atomic_exchange_n(&mode, MODE_OFF, __ATOMIC_SEQ_CST) != MODE_TRACE) return;
    if (getpid() != session_pid) return; /* a forked child: the session is the parent's */
    in_hook = 1;
    strobe_result *r = NULL;
    int rc = strobe_stop(&r);
    if (rc != 0) {
        say("cannot stop the session", strobe_strerror(rc));
    } else {
        rc = strobe_result_save(r, trace_path);
        if (rc != 0) {
            char what[4200];
            snprintf(what, sizeof what, "%s: %s", trace_path, strobe_strerror(rc));
            say("cannot save the trace", what);
        }
        strobe_result_free(r);
    }
    strobe_set_log_fn(NULL, NULL);
    in_hook = 0;
}
#endif /* STROBE_MALLOC_EMBEDDED */
