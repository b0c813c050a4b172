/* strobe/instrument.h: the hot path. Marks ranges, instants and counters in any thread.
 *
 * This header depends on nothing but <stdint.h> and strobe's export macro, so it compiles in C
 * (C11), C++ and CUDA sources. Every call here is cheap and never fails: what cannot be recorded
 * (buffer cap reached, a record from a signal handler that interrupted another record) is counted,
 * and the counts appear in the result and the trace.
 *
 * When no session runs, each call costs one relaxed load and a predicted branch. Compile with
 * -DSTROBE_ENABLED=0 and every macro and inline function here compiles to nothing.
 *
 * Contents: record scopes, call sites, ranges (begin/end), scoped ranges (STROBE_SCOPE,
 * STROBE_OP, STROBE_FUNC), instants, counters, thread names, correlation ids. */
#ifndef STROBE_INSTRUMENT_H
#define STROBE_INSTRUMENT_H

#include <stdint.h>
#include "export.h"

#ifndef STROBE_ENABLED
#define STROBE_ENABLED 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The kind of a range (Kineto's RecordScope). A config keeps a subset of them; ranges of a scope
 * that is not kept cost a branch and are not recorded. FUNCTION ranges are operators ("cpu_op" in
 * the trace); USER_SCOPE ranges are user regions ("user_annotation"). */
typedef enum strobe_record_scope {
    STROBE_RECORD_SCOPE_FUNCTION = 0,
    STROBE_RECORD_SCOPE_BACKWARD_FUNCTION = 1,
    STROBE_RECORD_SCOPE_TORCHSCRIPT_FUNCTION = 2,
    STROBE_RECORD_SCOPE_CUSTOM_CLASS = 3,
    STROBE_RECORD_SCOPE_USER_SCOPE = 4,
    STROBE_RECORD_SCOPE_LITE_INTERPRETER = 5,
    STROBE_RECORD_SCOPE_STATIC_RUNTIME_OP = 6,
    STROBE_RECORD_SCOPE_STATIC_RUNTIME_MODEL = 7,
    STROBE_RECORD_SCOPE_COUNT = 8
} strobe_record_scope;

/* A static call site: the name of a range, instant or counter known at compile time. The macros
 * below define one per use; records refer to it by address, so a literal name costs nothing per
 * call. The site (and its name) must stay valid until strobe_stop() returns: do not unload a
 * library that recorded through its sites while a session runs. libstrobe.so itself is never
 * unloaded (linked with -z nodelete): dlclose() leaves it mapped, because threads that used it run
 * its thread-exit destructor, and the on-demand endpoint's thread runs in it, after a dlclose(). */
typedef struct strobe_site {
    const char *name;
    const char *file;
    int line;
    int scope; /* a strobe_record_scope */
} strobe_site;

/* A token for a scoped range: nonzero when the begin was recorded in the current session. */
typedef struct strobe_guard {
    uint32_t token;
} strobe_guard;

#if STROBE_ENABLED

/* Internal: the gate of the inline wrappers, read with a relaxed load: nonzero while a session
 * records (bit STROBE__ACTIVE_RECORDING, with op.h's detail bits) or markers are on
 * (STROBE__ACTIVE_MARKERS, strobe/markers.h). */
STROBE_API extern int strobe__active;
#define STROBE__ACTIVE_RECORDING 0x1
#define STROBE__ACTIVE_MARKERS 0x20

/* Internal entry points behind the inline wrappers; call the wrappers instead. */
STROBE_API void strobe__begin_site(const strobe_site *site);
STROBE_API void strobe__begin_name(const char *name, int scope);
STROBE_API void strobe__end(void);
STROBE_API uint32_t strobe__guard_begin_site(const strobe_site *site);
STROBE_API uint32_t strobe__guard_begin_name(const char *name, int scope);
STROBE_API void strobe__guard_end(uint32_t token);
STROBE_API void strobe__instant_site(const strobe_site *site);
STROBE_API void strobe__instant_name(const char *name);
STROBE_API void strobe__counter_site(const strobe_site *site, double value);
STROBE_API void strobe__counter_name(const char *name, double value);

/* Names the calling thread in traces ("thread_name" metadata). The name is copied (at most 63
 * bytes are kept). May be called at any time, with or without a session; not async-signal-safe. */
STROBE_API void strobe_set_thread_name(const char *name);

/* Correlation ids: push an id around work that other records should be linked to (the CUDA
 * backend links device work through the external id); ranges that begin while an id is pushed
 * record it. Per thread; nesting up to 64 levels deep (deeper pushes are counted, not kept).
 * Cheap, never fail, and work with or without a session. */
STROBE_API void strobe_push_correlation_id(uint64_t id);
STROBE_API void strobe_pop_correlation_id(void);
STROBE_API void strobe_push_user_correlation_id(uint64_t id);
STROBE_API void strobe_pop_user_correlation_id(void);

#if defined(__GNUC__) || defined(__clang__)
#define STROBE__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define STROBE__ACTIVE() __atomic_load_n(&strobe__active, __ATOMIC_RELAXED)
#else
#define STROBE__UNLIKELY(x) (x)
#define STROBE__ACTIVE() (*(volatile int *)&strobe__active)
#endif

/* Returns nonzero while a session records (in any thread). */
static inline int strobe_is_active(void) {
    return STROBE__ACTIVE() & STROBE__ACTIVE_RECORDING;
}

/* Begins a USER_SCOPE range named `name` on the calling thread. The name is copied (names longer
 * than 1024 bytes are cut and counted). End it with strobe_range_end() on the same thread. */
static inline void strobe_range_begin(const char *name) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE()))
        strobe__begin_name(name, STROBE_RECORD_SCOPE_USER_SCOPE);
}

/* Begins a range of the given record scope (a strobe_record_scope). */
static inline void strobe_range_begin_scope(const char *name, int scope) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE())) strobe__begin_name(name, scope);
}

/* Begins a range named by a static call site (no copy: the cheapest form). */
static inline void strobe_range_begin_site(const strobe_site *site) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE())) strobe__begin_site(site);
}

/* Ends the innermost range begun with strobe_range_begin*() on the calling thread. An end with
 * no begin in the session is counted (stats.unmatched_ends), never fatal. */
static inline void strobe_range_end(void) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE())) strobe__end();
}

/* Records an instant event ("cpu_instant_event") with a copied name. */
static inline void strobe_instant(const char *name) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE())) strobe__instant_name(name);
}

/* Records a counter sample (a "C" event: one track per name). */
static inline void strobe_counter(const char *name, double value) {
    if (STROBE__UNLIKELY(STROBE__ACTIVE())) strobe__counter_name(name, value);
}

/* Internal: the two halves of a scoped range. */
static inline uint32_t strobe__guard_open(const strobe_site *site) {
    return STROBE__UNLIKELY(STROBE__ACTIVE()) ? strobe__guard_begin_site(site) : 0u;
}
static inline uint32_t strobe__guard_open_name(const char *name, int scope) {
    return STROBE__UNLIKELY(STROBE__ACTIVE()) ? strobe__guard_begin_name(name, scope) : 0u;
}
static inline void strobe__guard_close(uint32_t token) {
    if (STROBE__UNLIKELY(token != 0u)) strobe__guard_end(token);
}
static inline void strobe__guard_cleanup(strobe_guard *g) {
    strobe__guard_close(g->token);
}

#else /* !STROBE_ENABLED: everything compiles to nothing. */

static inline int strobe_is_active(void) {
    return 0;
}
static inline void strobe_range_begin(const char *name) {
    (void)name;
}
static inline void strobe_range_begin_scope(const char *name, int scope) {
    (void)name;
    (void)scope;
}
static inline void strobe_range_begin_site(const strobe_site *site) {
    (void)site;
}
static inline void strobe_range_end(void) {}
static inline void strobe_instant(const char *name) {
    (void)name;
}
static inline void strobe_counter(const char *name, double value) {
    (void)name;
    (void)value;
}
static inline void strobe_set_thread_name(const char *name) {
    (void)name;
}
static inline void strobe_push_correlation_id(uint64_t id) {
    (void)id;
}
static inline void strobe_pop_correlation_id(void) {}
static inline void strobe_push_user_correlation_id(uint64_t id) {
    (void)id;
}
static inline void strobe_pop_user_correlation_id(void) {}

#endif /* STROBE_ENABLED */

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- Macros ------------------------------------------------------------------------------- */

#define STROBE__CAT2(a, b) a##b
#define STROBE__CAT(a, b) STROBE__CAT2(a, b)
/* A number unique to each macro use, for the names the scope macros generate: __COUNTER__ (GCC,
 * Clang, MSVC) so that several scopes fit on one line, else the line number. */
#ifdef __COUNTER__
#define STROBE__ID() __COUNTER__
#else
#define STROBE__ID() __LINE__
#endif

#if STROBE_ENABLED

/* Defines a static call site `var` for a name known at compile time. */
#define STROBE_SITE_DEFINE(var, name, scope)                                                       \
    static const strobe_site var = {(name), __FILE__, __LINE__, (scope)}

/* Begins a range named by a string literal (a static call site: nothing copied per call). */
#define STROBE_RANGE_BEGIN(name) STROBE_RANGE_BEGIN_SCOPE(name, STROBE_RECORD_SCOPE_USER_SCOPE)
#define STROBE_RANGE_BEGIN_SCOPE(name, scope)                                                      \
    do {                                                                                           \
        STROBE_SITE_DEFINE(strobe__site_, name, scope);                                            \
        strobe_range_begin_site(&strobe__site_);                                                   \
    } while (0)
#define STROBE_RANGE_END() strobe_range_end()

/* Records an instant or a counter sample named by a string literal. */
#define STROBE_INSTANT(name)                                                                       \
    do {                                                                                           \
        STROBE_SITE_DEFINE(strobe__site_, name, STROBE_RECORD_SCOPE_USER_SCOPE);                   \
        if (STROBE__UNLIKELY(STROBE__ACTIVE())) strobe__instant_site(&strobe__site_);              \
    } while (0)
#define STROBE_COUNTER(name, value)                                                                \
    do {                                                                                           \
        STROBE_SITE_DEFINE(strobe__site_, name, STROBE_RECORD_SCOPE_USER_SCOPE);                   \
        if (STROBE__UNLIKELY(STROBE__ACTIVE())) strobe__counter_site(&strobe__site_, (value));     \
    } while (0)

#ifdef __cplusplus
/* RAII half of a scoped range in C++. */
struct strobe__scope_guard {
    uint32_t token;
    explicit strobe__scope_guard(uint32_t t) : token(t) {}
    ~strobe__scope_guard() { strobe__guard_close(token); }
    strobe__scope_guard(const strobe__scope_guard &) = delete;
    strobe__scope_guard &operator=(const strobe__scope_guard &) = delete;
};
#define STROBE__GUARD_DECL(var, init) strobe__scope_guard var(init)
#elif defined(__GNUC__) || defined(__clang__)
#define STROBE__GUARD_DECL(var, init)                                                              \
    strobe_guard var __attribute__((cleanup(strobe__guard_cleanup), unused)) = {init}
#else
#error "STROBE_SCOPE needs GCC or Clang (cleanup attribute) in C, or C++"
#endif

/* A range that ends with the enclosing block. Several may share a line. */
#define STROBE_SCOPE_AS(name, scope) STROBE__SCOPE_AS_ID(name, scope, STROBE__ID())
#define STROBE__SCOPE_AS_ID(name, scope, id)                                                       \
    STROBE_SITE_DEFINE(STROBE__CAT(strobe__site_, id), name, scope);                               \
    STROBE__GUARD_DECL(STROBE__CAT(strobe__guard_, id),                                            \
                       strobe__guard_open(&STROBE__CAT(strobe__site_, id)))
/* A user region (USER_SCOPE, "user_annotation"). */
#define STROBE_SCOPE(name) STROBE_SCOPE_AS(name, STROBE_RECORD_SCOPE_USER_SCOPE)
/* An operator (FUNCTION scope, "cpu_op"). */
#define STROBE_OP(name) STROBE_SCOPE_AS(name, STROBE_RECORD_SCOPE_FUNCTION)
/* The current function, as an operator. */
#define STROBE_FUNC() STROBE_SCOPE_AS(__func__, STROBE_RECORD_SCOPE_FUNCTION)
/* A scoped range with a name computed at run time (copied). */
#define STROBE_SCOPE_NAME(name_expr, scope)                                                        \
    STROBE__GUARD_DECL(STROBE__CAT(strobe__guard_, STROBE__ID()),                                  \
                       strobe__guard_open_name((name_expr), (scope)))
/* Names the calling thread. */
#define STROBE_THREAD_NAME(name) strobe_set_thread_name(name)

#else /* !STROBE_ENABLED */

#define STROBE_SITE_DEFINE(var, name, scope) typedef int STROBE__CAT(strobe__unused_, var)
#define STROBE_RANGE_BEGIN(name) ((void)0)
#define STROBE_RANGE_BEGIN_SCOPE(name, scope) ((void)0)
#define STROBE_RANGE_END() ((void)0)
#define STROBE_INSTANT(name) ((void)0)
#define STROBE_COUNTER(name, value) ((void)0)
#define STROBE_SCOPE_AS(name, scope) ((void)0)
#define STROBE_SCOPE(name) ((void)0)
#define STROBE_OP(name) ((void)0)
#define STROBE_FUNC() ((void)0)
#define STROBE_SCOPE_NAME(name_expr, scope) ((void)0)
#define STROBE_THREAD_NAME(name) ((void)0)

#endif /* STROBE_ENABLED */

#endif /* STROBE_INSTRUMENT_H */
