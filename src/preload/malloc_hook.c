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
 *   heap_hook.h. There it also sums allocations per call site and can record only a sample of
 *   them ("Allocation sites" below); this library records every call. */
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
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "core/hooks.h"
#include "core/stack.h"
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

#ifdef STROBE_MALLOC_EMBEDDED
/* How allocation sites are counted (atomic; "Allocation sites" below). */
enum { SITES_OFF = 0, SITES_EVERY = 1, SITES_SAMPLED = 2 };
static int site_mode;
static void alloc_with_stack(void *p, int64_t n, int64_t total);
static int site_free(void *p, int64_t n);
static double sample_weight(int64_t n);
static void heap_counters(int64_t total);
static int64_t reserved_now; /* the most bytes allocated at once so far (heap_counters) */
#endif

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
    if (__atomic_load_n(&mode, __ATOMIC_RELAXED) == MODE_TRACE) {
#ifdef STROBE_MALLOC_EMBEDDED
        /* --heap and --heap-stacks: the site's sums, and the event (every one, or sampled) with
         * its call stack; --heap=all: the event alone. */
        if (__atomic_load_n(&site_mode, __ATOMIC_RELAXED)) {
            alloc_with_stack(p, n, total);
            heap_counters(total);
        } else
#endif
            strobe_record_alloc(STROBE_DEVICE_CPU_ID, p, n, total, 0);
    }
    in_hook = 0;
}

/* Before the block is released (see the top of the file). */
static void note_free(void *p) {
    in_hook = 1;
    int64_t n = (int64_t)real.usable(p);
    int64_t total = __atomic_sub_fetch(&total_allocated, n, __ATOMIC_RELAXED);
    if (__atomic_load_n(&mode, __ATOMIC_RELAXED) == MODE_TRACE) {
#ifdef STROBE_MALLOC_EMBEDDED
        /* With sites, only the frees of blocks whose allocation was an event are events. */
        int sm = __atomic_load_n(&site_mode, __ATOMIC_RELAXED);
        if (sm) {
            int64_t reserved = __atomic_load_n(&reserved_now, __ATOMIC_RELAXED);
            if (site_free(p, n) && sm == SITES_SAMPLED) {
                if (STROBE__ACTIVE() & STROBE__ACTIVE_MEMORY)
                    strobe__memory_sample(STROBE_DEVICE_CPU_ID, p, -n, total, reserved, NULL, 0,
                                          sample_weight(n));
            } else if (sm == SITES_EVERY) {
                strobe_record_free(STROBE_DEVICE_CPU_ID, p, n, total, reserved);
            }
            heap_counters(total);
        } else
#endif
            strobe_record_free(STROBE_DEVICE_CPU_ID, p, n, total, 0);
    }
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

/* ---- Allocation sites (--heap, --heap-stacks) ------------------------------------------ */

/* Each allocation's call stack is taken by the frame-pointer walk (core/stack.h; this library is
 * built with frame pointers, and the program's own frames need them too), strobe's frames cut
 * off the top. Its first SITE_FRAMES return addresses are its site: allocations are summed per
 * site (calls, bytes, temporary allocations), and the site's live bytes are kept up to date
 * through a map from each live block to its site, for the site's peak and the bytes it leaked
 * (still live when the session stops). A temporary allocation is heaptrack's: one that its
 * thread frees right after it, with no other allocation or free of that thread in between. Sites
 * and map are under one lock and bounded (SITE_CAP sites, BLK_CAP_MAX map slots); what they cannot
 * take is counted.
 *
 * Two ways to run (site_mode):
 * - SITES_EVERY (--heap-stacks): every allocation and free is a [memory] event too, an
 *   allocation's with its first EVENT_FRAMES frames as its "Call stack".
 * - SITES_SAMPLED (--heap): only sampled allocations are [memory] events (with their call
 *   stacks), and the frees of those blocks (the map marks them). An allocation of at least
 *   sample_rate bytes is always sampled; a smaller one when its thread's byte countdown, drawn
 *   afresh after each sample from an exponential distribution of mean sample_rate (as tcmalloc's
 *   and Go's heap profilers do), runs out: with probability 1 - exp(-bytes / sample_rate), which
 *   a reader divides by to weigh the event (strobe_heap's "sample_rate"). The allocated and
 *   reserved bytes go out as counter samples at a bounded rate (heap_counters). */
#define SITE_FRAMES 16
#define EVENT_FRAMES 16               /* as with_stack's default depth */
#define SELF_FRAMES 4                 /* room for this library's own frames, cut off the top */
#define SITE_CAP 65536                /* power of two; 11 MiB */
#define BLK_CAP_MAX ((size_t)1 << 22) /* map slots at most (48 MiB); kept at most half full */
#define BLK_SAMPLED 0x80000000u       /* in a map value: the block's allocation was an event */
#define TABLE_TOP 100                 /* sites written to the trace, by bytes and by peak each */

typedef struct site {
    uint64_t pcs[SITE_FRAMES];
    uint32_t n; /* frames; 0: the slot is free */
    uint64_t count, temporary;
    int64_t bytes, live, peak;
} site;

static int64_t sample_rate = 512 * 1024;
static pthread_mutex_t site_lock = PTHREAD_MUTEX_INITIALIZER;
static site *sites;   /* SITE_CAP slots, from the real allocator */
static size_t site_n; /* slots in use */
/* Allocations that no site took (an empty stack, or the sites full), and their bytes. */
static uint64_t site_missed;
static int64_t missed_bytes;
/* Allocations whose block the map could not take (full, or out of memory): their frees are not
 * attributed, so their bytes stay in their site's live bytes. */
static uint64_t blk_unmapped;
static int64_t peak_total; /* the highest total allocated seen while counting sites */
/* Live blocks: address -> site index + 1 (| BLK_SAMPLED), linear probing. */
static uintptr_t *blk_keys;
static uint32_t *blk_vals;
static size_t blk_cap, blk_n;
static __thread uintptr_t stack_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t stack_hi __attribute__((tls_model("initial-exec")));
/* The thread's last allocation, until it or another block is freed, or another is made. */
static __thread uintptr_t last_alloc __attribute__((tls_model("initial-exec")));
/* The thread's bytes to go before its next sample (0: not drawn yet), and its random state. */
static __thread int64_t sample_left __attribute__((tls_model("initial-exec")));
static __thread uint64_t rng __attribute__((tls_model("initial-exec")));
static __thread uint32_t ctr_tick __attribute__((tls_model("initial-exec")));
static uint64_t rng_seq; /* seeds each thread's generator: the same program samples the same */
/* This library's code, whose frames are cut off the top of each stack. */
static uintptr_t self_lo, self_hi;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size, (void)arg;
    uintptr_t me = (uintptr_t)(void *)&find_self;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (me >= lo && me < hi) {
            self_lo = lo;
            self_hi = hi;
            return 1;
        }
    }
    return 0;
}

static inline uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* The bytes until the thread's next sample: exponential, of mean sample_rate, at least 1. */
static int64_t draw_distance(void) {
    if (rng == 0)
        rng = mix(__atomic_add_fetch(&rng_seq, 1, __ATOMIC_RELAXED) * 0x9e3779b97f4a7c15ull) | 1;
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    double u = ((double)((rng * 0x2545f4914f6cdd1dull) >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
    double d = -log(u) * (double)sample_rate;
    return d < 1.0 ? 1 : d > 4e18 ? INT64_MAX : (int64_t)d + 1;
}

/* The bytes that a sampled allocation (or free) of `n` bytes stands for: n divided by its chance
 * to be sampled, 1 - exp(-n / sample_rate), or n itself at or above the rate. */
static double sample_weight(int64_t n) {
    if (n >= sample_rate || n <= 0) return (double)n;
    return (double)n / -expm1(-(double)n / (double)sample_rate);
}

/* Whether an allocation of `n` bytes is sampled (SITES_SAMPLED). */
static int take_sample(int64_t n) {
    if (n >= sample_rate) return 1;
    if (sample_left == 0) sample_left = draw_distance();
    sample_left -= n;
    if (sample_left > 0) return 0;
    sample_left = draw_distance();
    return 1;
}

static int64_t ctr_total = -1; /* the last allocated bytes written as a counter */
static int64_t ctr_ns;         /* and when (CLOCK_MONOTONIC) */

/* The allocated bytes `total` and their high-water mark as samples of the counters that the
 * [memory] events feed ("allocated bytes (cpu)", "reserved bytes (cpu)"): at most once a
 * millisecond, when the allocated bytes moved by 1% (and 64 KiB) since the last samples or 10 ms
 * have gone by with any change. "Reserved" is the most bytes allocated at once so far: a lower
 * bound of what the allocator holds from the system. glibc's own figure (mallinfo2's arena +
 * hblkhd) walks every free list of every arena under its lock: 76% of the time of a recorded
 * `import torch` when read every 10 ms. Only every 64th call of a thread looks at the clock
 * unless the change is that large. */
static void heap_counters(int64_t total) {
    int64_t high = __atomic_load_n(&reserved_now, __ATOMIC_RELAXED);
    while (total > high && !__atomic_compare_exchange_n(&reserved_now, &high, total, 1,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    int64_t last = __atomic_load_n(&ctr_total, __ATOMIC_RELAXED);
    int64_t d = total > last ? total - last : last - total;
    int big = last < 0 || (d * 100 >= last && d >= 65536);
    if (!big && (d == 0 || (++ctr_tick & 63) != 0)) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    int64_t prev = __atomic_load_n(&ctr_ns, __ATOMIC_RELAXED);
    if (now - prev < (big ? 1000000 : 10000000)) return;
    if (!__atomic_compare_exchange_n(&ctr_ns, &prev, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return; /* another thread writes them */
    __atomic_store_n(&ctr_total, total, __ATOMIC_RELAXED);
    strobe_counter("allocated bytes (cpu)", (double)total);
    strobe_counter("reserved bytes (cpu)",
                   (double)__atomic_load_n(&reserved_now, __ATOMIC_RELAXED));
}

static int blk_grow(void) {
    size_t cap = blk_cap ? 2 * blk_cap : 4096;
    if (cap > BLK_CAP_MAX) return -1;
    uintptr_t *k = real.calloc(cap, sizeof *k);
    uint32_t *v = real.malloc(cap * sizeof *v);
    if (k == NULL || v == NULL) {
        real.free(k);
        real.free(v);
        return -1;
    }
    for (size_t i = 0; i < blk_cap; i++) {
        if (blk_keys[i] == 0) continue;
        size_t j = mix(blk_keys[i]) & (cap - 1);
        while (k[j] != 0)
            j = (j + 1) & (cap - 1);
        k[j] = blk_keys[i];
        v[j] = blk_vals[i];
    }
    real.free(blk_keys);
    real.free(blk_vals);
    blk_keys = k;
    blk_vals = v;
    blk_cap = cap;
    return 0;
}

/* Counts an allocation of `n` bytes at `p` to the site of its stack (`got` return addresses in
 * raw, from `first` on: this library's frames before it); `sampled`: it was an event. `total`:
 * the allocated bytes after it. */
/* The site of the k return addresses at pcs, made when missing while the table holds fewer
 * than `limit` sites (site_lock held). @return it, or NULL. */
static site *find_site(const uint64_t *pcs, int k, size_t limit) {
    uint64_t h = (uint64_t)k;
    for (int i = 0; i < k; i++)
        h = mix(h ^ pcs[i]);
    size_t at = h & (SITE_CAP - 1);
    for (size_t probe = 0; probe < SITE_CAP; probe++, at = (at + 1) & (SITE_CAP - 1)) {
        site *c = &sites[at];
        if (c->n == 0) {
            if (site_n >= limit) return NULL;
            c->n = (uint32_t)k;
            memcpy(c->pcs, pcs, (size_t)k * sizeof pcs[0]);
            site_n++;
            return c;
        }
        if (c->n == (uint32_t)k && memcmp(c->pcs, pcs, (size_t)k * sizeof pcs[0]) == 0) return c;
    }
    return NULL;
}

static void site_alloc(void *p, int64_t n, const uint64_t *raw, int first, int got, int sampled,
                       int64_t total) {
    int k = got - first < SITE_FRAMES ? got - first : SITE_FRAMES;
    pthread_mutex_lock(&site_lock);
    if (total > peak_total) peak_total = total;
    /* A new stack takes a slot while the table is half full; then the site of its leaf frame
     * alone takes it, while the table is three quarters full: code without frame pointers ends
     * its walks in whatever its stack holds, which makes many stacks of one call site. */
    site *s = NULL;
    if (k > 0 && sites) {
        s = find_site(raw + first, k, SITE_CAP / 2);
        if (s == NULL && k > 1) s = find_site(raw + first, 1, SITE_CAP / 4 * 3);
    }
    if (s == NULL) {
        site_missed++;
        missed_bytes += n;
        pthread_mutex_unlock(&site_lock);
        return;
    }
    s->count++;
    s->bytes += n;
    s->live += n;
    if (s->live > s->peak) s->peak = s->live;
    if ((blk_n + 1) * 2 <= blk_cap || blk_grow() == 0) {
        uintptr_t key = (uintptr_t)p;
        size_t j = mix(key) & (blk_cap - 1);
        while (blk_keys[j] != 0 && blk_keys[j] != key)
            j = (j + 1) & (blk_cap - 1);
        if (blk_keys[j] == 0) blk_n++;
        blk_keys[j] = key;
        blk_vals[j] = ((uint32_t)(s - sites) + 1) | (sampled ? BLK_SAMPLED : 0);
    } else {
        blk_unmapped++;
    }
    pthread_mutex_unlock(&site_lock);
}

/* The calling thread's stack into raw (EVENT_FRAMES + SELF_FRAMES slots); *first gets the index
 * of its first frame that is not this library's. @return the frames written. */
static int capture(uint64_t *raw, int *first) {
    if (stack_hi == 0 && strobe__stack_bounds(&stack_lo, &stack_hi) != 0) stack_hi = 1;
    int got = strobe__stack_capture(stack_lo, stack_hi, 0, raw, EVENT_FRAMES + SELF_FRAMES);
    int f = 0;
    while (f < got && raw[f] >= self_lo && raw[f] < self_hi)
        f++;
    *first = f;
    return got;
}

/* An allocation of `n` bytes at `p`, the allocator's total `total` after it: its [memory] event
 * with its call stack when every allocation is one or it is sampled, and its site. */
static void alloc_with_stack(void *p, int64_t n, int64_t total) {
    uint64_t raw[EVENT_FRAMES + SELF_FRAMES];
    int first = 0;
    int got = capture(raw, &first);
    int k = got - first < EVENT_FRAMES ? got - first : EVENT_FRAMES;
    int every = __atomic_load_n(&site_mode, __ATOMIC_RELAXED) == SITES_EVERY;
    int sampled = every || take_sample(n);
    int64_t reserved = __atomic_load_n(&reserved_now, __ATOMIC_RELAXED);
    if (reserved < total) reserved = total; /* the high water, which heap_counters() then keeps */
    /* The same gate as strobe_record_alloc()'s. */
    if (sampled && (STROBE__ACTIVE() & STROBE__ACTIVE_MEMORY)) {
        if (every)
            strobe__memory_stack(STROBE_DEVICE_CPU_ID, p, n, total, reserved, raw + first, k);
        else
            strobe__memory_sample(STROBE_DEVICE_CPU_ID, p, n, total, reserved, raw + first, k,
                                  sample_weight(n));
    }
    site_alloc(p, n, raw, first, got, sampled, total);
    last_alloc = (uintptr_t)p;
}

/* A free of `n` bytes at `p` (before it is released): its site's live bytes go down.
 * @return 1 when its allocation was an event (sampled), else 0. */
static int site_free(void *p, int64_t n) {
    uintptr_t key = (uintptr_t)p;
    int temporary = key == last_alloc;
    last_alloc = 0;
    int sampled = 0;
    pthread_mutex_lock(&site_lock);
    if (blk_cap == 0) {
        pthread_mutex_unlock(&site_lock);
        return 0;
    }
    size_t j = mix(key) & (blk_cap - 1);
    while (blk_keys[j] != 0 && blk_keys[j] != key)
        j = (j + 1) & (blk_cap - 1);
    if (blk_keys[j] == key) {
        site *s = &sites[(blk_vals[j] & ~BLK_SAMPLED) - 1];
        s->live -= n;
        if (temporary) s->temporary++;
        sampled = (blk_vals[j] & BLK_SAMPLED) != 0;
        /* Backward-shift deletion keeps every other key reachable from its home slot. */
        size_t hole = j;
        for (size_t i = (j + 1) & (blk_cap - 1); blk_keys[i] != 0; i = (i + 1) & (blk_cap - 1)) {
            size_t home = mix(blk_keys[i]) & (blk_cap - 1);
            if (((i - home) & (blk_cap - 1)) >= ((i - hole) & (blk_cap - 1))) {
                blk_keys[hole] = blk_keys[i];
                blk_vals[hole] = blk_vals[i];
                hole = i;
            }
        }
        blk_keys[hole] = 0;
        blk_n--;
    }
    pthread_mutex_unlock(&site_lock);
    return sampled;
}

/* Forgets every site and block (locked by the caller, or in a forked child). */
static void sites_reset(void) {
    if (sites) memset(sites, 0, SITE_CAP * sizeof *sites);
    site_n = 0;
    site_missed = 0;
    missed_bytes = 0;
    blk_unmapped = 0;
    peak_total = 0;
    if (blk_keys) memset(blk_keys, 0, blk_cap * sizeof *blk_keys);
    blk_n = 0;
}

int strobe__heap_sites(int how, int64_t rate) {
    int quiet = strobe__heap_quiet(1);
    int rc = 0;
    if (rate > 0) sample_rate = rate;
    if (how != SITES_OFF && sites == NULL && resolve()) {
        dl_iterate_phdr(find_self, NULL);
        site *v = real.calloc(SITE_CAP, sizeof *v);
        pthread_mutex_lock(&site_lock);
        sites = v;
        pthread_mutex_unlock(&site_lock);
        if (v == NULL) rc = -1;
    }
    __atomic_store_n(&site_mode, sites != NULL ? how : SITES_OFF, __ATOMIC_SEQ_CST);
    strobe__heap_quiet(quiet);
    return rc;
}

void strobe__heap_sites_forked(void) {
    /* Another thread of the parent may have held the lock, mid-update, at the fork: the child,
     * which starts a session of its own, starts the sites afresh. */
    pthread_mutex_init(&site_lock, NULL);
    __atomic_store_n(&site_mode, SITES_OFF, __ATOMIC_SEQ_CST);
    sites_reset();
    __atomic_store_n(&ctr_total, -1, __ATOMIC_RELAXED);
    __atomic_store_n(&ctr_ns, 0, __ATOMIC_RELAXED);
}

/* A symbolized frame's function: the innermost inlined level, less " (file:line)". */
static void frame_name(const char *sym, char *out, size_t size) {
    size_t len = strcspn(sym, ";");
    const char *paren = strstr(sym, " (");
    if (paren && (size_t)(paren - sym) < len) len = (size_t)(paren - sym);
    if (len >= size) len = size - 1;
    memcpy(out, sym, len);
    out[len] = '\0';
}

/* A symbolized frame's innermost inlined level ("function (file:line)") as a JSON string. */
static void put_frame(FILE *f, const char *sym) {
    size_t len = strcspn(sym, ";");
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)sym[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

typedef struct site_row {
    char leaf[128], caller[128];
    uint64_t count;
    int64_t bytes, peak;
} site_row;

static int cmp_rows(const void *a, const void *b) {
    const site_row *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->leaf, y->leaf);
}

/* Site indexes by bytes (then peak) and by peak (then bytes), largest first. */
static int cmp_by_bytes(const void *a, const void *b) {
    const site *x = &sites[*(const size_t *)a], *y = &sites[*(const size_t *)b];
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->peak != y->peak) return x->peak > y->peak ? -1 : 1;
    return 0;
}

static int cmp_by_peak(const void *a, const void *b) {
    const site *x = &sites[*(const size_t *)a], *y = &sites[*(const size_t *)b];
    if (x->peak != y->peak) return x->peak > y->peak ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The symbol of `pc`, one of the n sorted distinct addresses `u` symbolized into `syms`. */
static const char *sym_of(const uint64_t *u, const char **syms, size_t n, uint64_t pc) {
    const uint64_t *hit = bsearch(&pc, u, n, sizeof *u, cmp_u64);
    return hit && syms[hit - u] ? syms[hit - u] : "??";
}

int strobe__heap_sites_report(const char *path, int top) {
    int quiet = strobe__heap_quiet(1);
    int sm = __atomic_exchange_n(&site_mode, SITES_OFF, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&site_lock);
    int rc = -1;
    size_t n = 0, pick_n = 0, un = 0;
    uint64_t *pcs = NULL;
    const char **syms = NULL;
    site_row *rows = NULL;
    strobe__symbolizer *sym = NULL;
    size_t *idx = NULL, *pick = NULL;
    char *json = NULL;
    size_t json_len = 0;
    FILE *js = NULL;
    if (sites == NULL || sm == SITES_OFF) {
        rc = 0;
        goto out;
    }
    idx = real.malloc((site_n + 1) * sizeof *idx);
    pick = real.malloc((site_n + 1) * sizeof *pick);
    if (idx == NULL || pick == NULL) goto out;
    uint64_t calls = site_missed, temporary = 0;
    int64_t bytes = missed_bytes, leaked = 0;
    for (size_t i = 0; i < SITE_CAP; i++) {
        if (sites[i].n == 0) continue;
        idx[n++] = i;
        calls += sites[i].count;
        bytes += sites[i].bytes;
        temporary += sites[i].temporary;
        leaked += sites[i].live;
    }
    /* The sites of the table: the TABLE_TOP largest by bytes, and by peak. */
    qsort(idx, n, sizeof *idx, cmp_by_bytes);
    for (size_t i = 0; i < n && i < TABLE_TOP; i++)
        sites[idx[i]].n |= 0x80000000u;
    qsort(idx, n, sizeof *idx, cmp_by_peak);
    for (size_t i = 0; i < n && i < TABLE_TOP; i++)
        sites[idx[i]].n |= 0x80000000u;
    for (size_t i = 0; i < n; i++) {
        if (sites[idx[i]].n & 0x80000000u) {
            sites[idx[i]].n &= ~0x80000000u;
            pick[pick_n++] = idx[i];
        }
    }
    qsort(pick, pick_n, sizeof *pick, cmp_by_bytes);
    /* Their frames, symbolized together (distinct, sorted). */
    pcs = real.malloc((pick_n * SITE_FRAMES + 1) * sizeof *pcs);
    if (pcs == NULL) goto out;
    for (size_t i = 0; i < pick_n; i++)
        for (uint32_t f = 0; f < sites[pick[i]].n; f++)
            pcs[un++] = sites[pick[i]].pcs[f];
    qsort(pcs, un, sizeof *pcs, cmp_u64);
    size_t w = 0;
    for (size_t i = 0; i < un; i++)
        if (w == 0 || pcs[i] != pcs[w - 1]) pcs[w++] = pcs[i];
    un = w;
    syms = real.calloc(un + 1, sizeof *syms);
    if (syms == NULL) goto out;
    if (un && (sym = strobe__symbolize(pcs, un, syms)) == NULL) goto out;
    /* The trace's strobe_heap entry: this process's totals and table (docs/GUIDE.md, "Profile any
     * program"). */
    js = open_memstream(&json, &json_len);
    if (js == NULL) goto out;
    fprintf(js,
            "[{\"pid\":%ld,\"mode\":\"%s\",\"sample_rate\":%lld,\"calls\":%llu,\"bytes\":%lld,"
            "\"temporary\":%llu,\"leaked\":%lld,\"peak\":%lld,\"site_count\":%zu,"
            "\"missed_calls\":%llu,\"missed_bytes\":%lld,\"unmapped_blocks\":%llu,\"sites\":[",
            (long)getpid(), sm == SITES_EVERY ? "every" : "sampled",
            sm == SITES_EVERY ? 0LL : (long long)sample_rate, (unsigned long long)calls,
            (long long)bytes, (unsigned long long)temporary, (long long)leaked,
            (long long)peak_total, n, (unsigned long long)site_missed, (long long)missed_bytes,
            (unsigned long long)blk_unmapped);
    for (size_t i = 0; i < pick_n; i++) {
        const site *s = &sites[pick[i]];
        fprintf(js,
                "%s{\"calls\":%llu,\"bytes\":%lld,\"peak\":%lld,\"leaked\":%lld,"
                "\"temporary\":%llu,\"stack\":[",
                i ? "," : "", (unsigned long long)s->count, (long long)s->bytes, (long long)s->peak,
                (long long)s->live, (unsigned long long)s->temporary);
        for (uint32_t f = 0; f < s->n; f++) {
            if (f) fputc(',', js);
            put_frame(js, sym_of(pcs, syms, un, s->pcs[f]));
        }
        fputs("]}", js);
    }
    fputs("]}]", js);
    if (fclose(js) != 0) {
        js = NULL;
        goto out;
    }
    js = NULL;
    rc = strobe_add_metadata_json("strobe_heap", json);
    if (rc != 0) goto out;
    rc = -1;
    /* The .heap list for strobe record's table: the sites of the table with the same leaf and
     * caller functions are one row, their peaks added up (an upper bound of the row's peak,
     * exact where one site makes the row). */
    rows = real.calloc(pick_n + 1, sizeof *rows);
    if (rows == NULL) goto out;
    size_t rn = 0;
    for (size_t i = 0; i < pick_n; i++) {
        const site *s = &sites[pick[i]];
        site_row r = {.count = s->count, .bytes = s->bytes, .peak = s->peak};
        frame_name(sym_of(pcs, syms, un, s->pcs[0]), r.leaf, sizeof r.leaf);
        frame_name(s->n > 1 ? sym_of(pcs, syms, un, s->pcs[1]) : "-", r.caller, sizeof r.caller);
        size_t j = 0;
        while (j < rn &&
               !(strcmp(rows[j].leaf, r.leaf) == 0 && strcmp(rows[j].caller, r.caller) == 0))
            j++;
        if (j == rn) {
            rows[rn++] = r;
        } else {
            rows[j].count += r.count;
            rows[j].bytes += r.bytes;
            rows[j].peak += r.peak;
        }
    }
    qsort(rows, rn, sizeof *rows, cmp_rows);
    FILE *f = fopen(path, "we");
    if (f == NULL) goto out;
    /* One line a row: bytes, count, peak live bytes, leaf, caller (tabs between); a last line
     * "missed N" counts the allocations no site took. */
    for (size_t i = 0; i < rn && (int)i < top; i++)
        fprintf(f, "%lld\t%llu\t%lld\t%s\t%s\n", (long long)rows[i].bytes,
                (unsigned long long)rows[i].count, (long long)rows[i].peak, rows[i].leaf,
                rows[i].caller);
    fprintf(f, "missed\t%llu\n", (unsigned long long)site_missed);
    rc = fclose(f) == 0 ? 0 : -1;
out:
    if (js) fclose(js);
    /* open_memstream's buffer comes from the malloc the C library resolves, which is not always
     * this file's (ASan's, preloaded first, in the sanitizer tests): it goes back through the
     * free the process resolves first, never straight to the allocator behind this hook (a call
     * to free here may bind to this file's own). */
    if (json) {
        union {
            void *p;
            void (*f)(void *);
        } first;
        first.p = dlsym(RTLD_DEFAULT, "free");
        if (first.f) first.f(json);
    }
    if (sym) strobe__symbolizer_free(sym);
    real.free(pcs);
    real.free(idx);
    real.free(pick);
    real.free(rows);
    real.free(syms);
    /* A next session (a window, a forked child) counts afresh. */
    sites_reset();
    pthread_mutex_unlock(&site_lock);
    strobe__heap_quiet(quiet);
    return rc;
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
