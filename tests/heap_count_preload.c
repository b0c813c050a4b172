/* heap_count_preload: an LD_PRELOAD allocation counter that shares nothing with strobe, to check
 * `strobe record --heap`'s sums against (test_record_heap_sites.sh). It counts the calls of
 * malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign made from the main
 * program's own code (their return address lies in the executable, not in a library: the
 * program's allocations, not the loader's, libc's or strobe's), and their bytes by
 * malloc_usable_size, and prints "count PROGRAM CALLS BYTES" to standard error at exit.
 * HEAP_COUNT_ALL=1 counts the calls from every module (the loader's, libraries', strobe's), but
 * those made from a module whose path contains HEAP_COUNT_SKIP (for example libstrobe_record,
 * so that strobe's own allocations are left out of a whole-process total), and those made on a
 * thread whose name starts with HEAP_COUNT_SKIP_THREADS (strobe_: strobe names its own threads,
 * whose work allocates through libc's and libstdc++'s functions, strdup and the demangler). The
 * counts are atomic: a threaded program (torch's thread pools) allocates on several threads. */

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_memalign)(size_t, size_t);
static uintptr_t exe_lo, exe_hi;
static unsigned long long calls, bytes;
static int count_all;    /* HEAP_COUNT_ALL=1: every call, from any module */
static const char *skip; /* HEAP_COUNT_SKIP: a module name's part whose calls are left out */
static const char *skip_threads; /* HEAP_COUNT_SKIP_THREADS: a thread name's prefix, likewise */

/* The executable's code: the first module dl_iterate_phdr lists. */
static int find_exe(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size, (void)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            exe_lo = info->dlpi_addr + ph->p_vaddr;
            exe_hi = exe_lo + ph->p_memsz;
        }
    }
    return 1;
}

__attribute__((constructor)) static void init(void) {
    next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    next_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    next_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    next_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    dl_iterate_phdr(find_exe, NULL);
    const char *all = getenv("HEAP_COUNT_ALL");
    count_all = all && strcmp(all, "1") == 0;
    skip = getenv("HEAP_COUNT_SKIP");
    if (skip != NULL && *skip == '\0') skip = NULL;
    skip_threads = getenv("HEAP_COUNT_SKIP_THREADS");
    if (skip_threads != NULL && *skip_threads == '\0') skip_threads = NULL;
}

__attribute__((destructor)) static void fini(void) {
    char line[512];
    int n = snprintf(line, sizeof line, "count %s %llu %llu\n", program_invocation_short_name,
                     calls, bytes);
    if (write(STDERR_FILENO, line, (size_t)n) < 0) return;
}

/* Calls nested in one of these (strobe's realloc(NULL, n) ends in a tail call of malloc, which
 * reaches this malloc with this realloc's caller as its return address) are the same call. */
static __thread int depth;

static void count(void *p, uintptr_t ret) {
    if (depth != 1) return;
    if (p == NULL || (!count_all && (ret < exe_lo || ret >= exe_hi))) return;
    if (skip != NULL) {
        Dl_info info;
        if (dladdr((void *)ret, &info) != 0 && info.dli_fname != NULL &&
            strstr(info.dli_fname, skip) != NULL)
            return;
    }
    if (skip_threads != NULL) {
        char name[17] = {0};
        if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0 &&
            strncmp(name, skip_threads, strlen(skip_threads)) == 0)
            return;
    }
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&bytes, (unsigned long long)malloc_usable_size(p), __ATOMIC_RELAXED);
}

#define RET ((uintptr_t)__builtin_return_address(0))

/* Before init (the loader's first allocations) the counter has no allocator to call: those
 * calls cannot come from the program, and fail here only if made before dlsym ran, which
 * glibc's loader does not do through these symbols. */
void *malloc(size_t n) {
    if (next_malloc == NULL) init();
    depth++;
    void *p = next_malloc(n);
    count(p, RET);
    depth--;
    return p;
}

void *calloc(size_t n, size_t size) {
    /* dlsym may call calloc before next_calloc is known: it gets NULL, and copes. */
    if (next_calloc == NULL) return NULL;
    depth++;
    void *p = next_calloc(n, size);
    count(p, RET);
    depth--;
    return p;
}

void *realloc(void *old, size_t n) {
    if (next_realloc == NULL) init();
    depth++;
    void *p = next_realloc(old, n);
    count(p, RET);
    depth--;
    return p;
}

int posix_memalign(void **out, size_t align, size_t n) {
    if (next_posix_memalign == NULL) init();
    depth++;
    int rc = next_posix_memalign(out, align, n);
    if (rc == 0) count(*out, RET);
    depth--;
    return rc;
}

void *aligned_alloc(size_t align, size_t n) {
    if (next_aligned_alloc == NULL) init();
    depth++;
    void *p = next_aligned_alloc(align, n);
    count(p, RET);
    depth--;
    return p;
}

void *memalign(size_t align, size_t n) {
    if (next_memalign == NULL) init();
    depth++;
    void *p = next_memalign(align, n);
    count(p, RET);
    depth--;
    return p;
}
