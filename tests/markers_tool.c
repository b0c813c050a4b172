/* markers_tool.c: an NVTX tool written for test_markers, loaded the way Nsight Systems' injection
 * is: a client (strobe's markers) loads the library NVTX_INJECTION64_PATH names and calls its
 * InitializeInjectionNvtx2 with the client's export table. The tool fills the client's tables
 * with counting functions (the default domain's push, pop, start, end and mark, and the domain
 * versions; MARKERS_TOOL_NO_DOMAINS=1 leaves the domain slots empty) and exports mt_count() and
 * friends, through which the test reads what the client called, by kind and name.
 *
 * Declared without NVTX's headers (the layouts are NVTX's ABI: nvtxTypes.h, nvtxImpl.h). */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*fnptr)(void);
typedef fnptr **fntable;
typedef struct {
    size_t struct_size;
    int (*get_module_table)(int module, fntable *out, unsigned *out_size);
} callbacks_t;
typedef const void *(*get_export_table_t)(uint32_t id);

typedef struct {
    uint16_t version, size;
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type, reserved0;
    uint64_t payload;
    int32_t message_type;
    const void *message;
} attr_t;

/* ---- Counts -------------------------------------------------------------------------------- */

#define MAX_ROWS 512
static struct row {
    char kind[8];
    char name[128];
    int domain; /* 1: called with the domain the client created */
    long n;
} rows[MAX_ROWS];
static int nrows;
static long underflows, inits, bad_attrs;
static char domain_name[64];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int depth;
#define DOMAIN_HANDLE ((void *)(uintptr_t)0xd0d0)

static void count(const char *kind, const char *name, int domain) {
    pthread_mutex_lock(&lock);
    int i;
    for (i = 0; i < nrows; i++)
        if (strcmp(rows[i].kind, kind) == 0 && strcmp(rows[i].name, name ? name : "") == 0 &&
            rows[i].domain == domain)
            break;
    if (i == nrows && nrows < MAX_ROWS) {
        strncpy(rows[i].kind, kind, sizeof rows[i].kind - 1);
        strncpy(rows[i].name, name ? name : "", sizeof rows[i].name - 1);
        rows[i].domain = domain;
        rows[i].n = 0;
        nrows++;
    }
    if (i < MAX_ROWS) rows[i].n++;
    pthread_mutex_unlock(&lock);
}

/* Calls of `kind` ("push", "pop", "start", "end", "mark") named `name` (NULL: any name), in the
 * client's domain (domain 1), the default one (0) or either (-1). */
EXPORT long mt_count(const char *kind, const char *name, int domain);
EXPORT long mt_count(const char *kind, const char *name, int domain) {
    long n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nrows; i++)
        if (strcmp(rows[i].kind, kind) == 0 && (name == NULL || strcmp(rows[i].name, name) == 0) &&
            (domain < 0 || rows[i].domain == domain))
            n += rows[i].n;
    pthread_mutex_unlock(&lock);
    return n;
}
/* Forgets every count. */
EXPORT void mt_reset(void);
EXPORT void mt_reset(void) {
    pthread_mutex_lock(&lock);
    nrows = 0;
    underflows = bad_attrs = 0;
    pthread_mutex_unlock(&lock);
}
/* Pops with no push open on their thread; attributes that are not an ASCII message. */
EXPORT long mt_underflows(void);
EXPORT long mt_underflows(void) {
    return underflows;
}
EXPORT long mt_bad_attrs(void);
EXPORT long mt_bad_attrs(void) {
    return bad_attrs;
}
/* How many times a client attached; the domain it created. */
EXPORT long mt_inits(void);
EXPORT long mt_inits(void) {
    return inits;
}
EXPORT const char *mt_domain(void);
EXPORT const char *mt_domain(void) {
    return domain_name;
}

/* ---- The tool's functions ------------------------------------------------------------------- */

static const char *attr_name(const attr_t *a) {
    if (a == NULL || a->message_type != 1 || a->size < 48) {
        bad_attrs++;
        return "?";
    }
    return (const char *)a->message;
}
static int push_a(const char *m) {
    count("push", m, 0);
    return depth++;
}
static int pop(void) {
    count("pop", NULL, 0);
    if (depth == 0) {
        underflows++;
        return -2;
    }
    return --depth;
}
static void mark_a(const char *m) {
    count("mark", m, 0);
}
static uint64_t start_a(const char *m) {
    count("start", m, 0);
    return 1;
}
static void end(uint64_t id) {
    (void)id;
    count("end", NULL, 0);
}
static void *domain_create(const char *name) {
    strncpy(domain_name, name ? name : "", sizeof domain_name - 1);
    return DOMAIN_HANDLE;
}
static int d_push(void *d, const attr_t *a) {
    count("push", attr_name(a), d == DOMAIN_HANDLE);
    return depth++;
}
static int d_pop(void *d) {
    count("pop", NULL, d == DOMAIN_HANDLE);
    if (depth == 0) {
        underflows++;
        return -2;
    }
    return --depth;
}
static void d_mark(void *d, const attr_t *a) {
    count("mark", attr_name(a), d == DOMAIN_HANDLE);
}
static uint64_t d_start(void *d, const attr_t *a) {
    count("start", attr_name(a), d == DOMAIN_HANDLE);
    return 1;
}
static void d_end(void *d, uint64_t id) {
    (void)id;
    count("end", NULL, d == DOMAIN_HANDLE);
}

static void put(const callbacks_t *cb, int module, unsigned slot, fnptr f) {
    fntable t = NULL;
    unsigned size = 0;
    if (!cb->get_module_table(module, &t, &size) || t == NULL || slot >= size || t[slot] == NULL)
        return;
    *t[slot] = f;
}

#define FN(f) ((fnptr)(void (*)(void))(f))

EXPORT int InitializeInjectionNvtx2(get_export_table_t get);
/* MARKERS_TOOL_NOOP=1 (bench_markers): functions that only count per thread, so that a benchmark
 * sees what reaching a tool costs the client, not the counting table's lock. */
static __thread long noop_calls;
static int noop_push(void *d, const attr_t *a) {
    (void)d;
    (void)a;
    return (int)noop_calls++;
}
static int noop_pop(void *d) {
    (void)d;
    return (int)noop_calls++;
}
static void noop_mark(void *d, const attr_t *a) {
    (void)d;
    (void)a;
    noop_calls++;
}

EXPORT int InitializeInjectionNvtx2(get_export_table_t get) {
    const callbacks_t *cb = get(1);
    if (cb == NULL || cb->struct_size < sizeof *cb) return 0;
    inits++;
    const char *noop = getenv("MARKERS_TOOL_NOOP");
    if (noop != NULL && strcmp(noop, "1") == 0) {
        put(cb, 5, 1, FN(noop_mark));
        put(cb, 5, 4, FN(noop_push));
        put(cb, 5, 5, FN(noop_pop));
        put(cb, 5, 12, FN(domain_create));
        return 1;
    }
    /* Core (module 1): MarkA 2, RangeStartA 5, RangeEnd 7, RangePushA 9, RangePop 11. */
    put(cb, 1, 2, FN(mark_a));
    put(cb, 1, 5, FN(start_a));
    put(cb, 1, 7, FN(end));
    put(cb, 1, 9, FN(push_a));
    put(cb, 1, 11, FN(pop));
    const char *nd = getenv("MARKERS_TOOL_NO_DOMAINS");
    if (nd == NULL || strcmp(nd, "1") != 0) {
        /* Core2 (module 5): DomainMarkEx 1, RangeStartEx 2, RangeEnd 3, RangePushEx 4,
         * RangePop 5, DomainCreateA 12. */
        put(cb, 5, 1, FN(d_mark));
        put(cb, 5, 2, FN(d_start));
        put(cb, 5, 3, FN(d_end));
        put(cb, 5, 4, FN(d_push));
        put(cb, 5, 5, FN(d_pop));
        put(cb, 5, 12, FN(domain_create));
    }
    return 1;
}
