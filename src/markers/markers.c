/* markers.c: strobe's ranges for other tools (strobe/markers.h): the mode and sink strings, start
 * and stop, the STROBE_MARKERS constructor, and the hot-path half the core calls for each range
 * (core/hooks.h: strobe__marker_ops).
 *
 * Each thread keeps a small stack of the ranges markers began (its name when event mode needs it
 * at the end, its scope for wait_until_completed), so that an end reaches the sinks only when its
 * begin did: a range begun before markers started, or before a restart, ends silently and NVTX's
 * push/pop stay balanced. The stack belongs to a markers generation; a new start empties it.
 *
 * Contents: settings, the per-thread stack, begin/end, string parsing, start/stop, environment. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hooks.h"
#include "util/log.h"
#include "markers_int.h"
#include "strobe/error.h"
#include "strobe/markers.h"
#include "util/err.h"

#define UNLIKELY(x) __builtin_expect(!!(x), 0)

enum { MODE_INTERVAL = 1, MODE_EVENT = 2 };
enum { SINK_NVTX = 1, SINK_FTRACE = 2 };

/* The settings of the current start. Written only while markers are off (start refuses while on),
 * read by the hot-path half while the hook is set. */
static struct {
    int mode;
    int nvtx;   /* a tool is attached and nvtx was asked for */
    int ftrace; /* trace_marker is open and ftrace was asked for */
    int wait;
    uint32_t gen; /* bumped by each start: threads' stacks of older starts are stale */
} cfg;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int started;

/* ---- The per-thread stack ------------------------------------------------------------------ */

#define MK_DEPTH 256        /* deeper ranges are counted, not marked */
#define MK_NAME_BYTES 16384 /* copied run-time names (event mode); longer ones are cut */

struct mk_entry {
    const char *name; /* static names: the site's; copied ones: into names[] (NULL: not kept) */
    uint32_t off;     /* where a copied name starts in names[] (the stack pops back to it) */
    int scope;
};

struct mk_thread {
    uint32_t gen;
    uint32_t depth;
    uint32_t overflow; /* ranges begun past MK_DEPTH and not ended yet */
    uint32_t used;     /* bytes of names[] in use */
    struct mk_entry st[MK_DEPTH];
    char names[MK_NAME_BYTES];
};

static __thread struct mk_thread *mk_tls;
static pthread_key_t mk_key;
static pthread_once_t mk_key_once = PTHREAD_ONCE_INIT;

static void mk_thread_free(void *p) {
    free(p);
}

static void mk_make_key(void) {
    (void)pthread_key_create(&mk_key, mk_thread_free);
}

/* The calling thread's stack for the current start (NULL: out of memory; the range is not
 * marked). Allocated on the thread's first marked range. */
static struct mk_thread *mk_thread_get(uint32_t gen) {
    struct mk_thread *t = mk_tls;
    if (UNLIKELY(t == NULL)) {
        pthread_once(&mk_key_once, mk_make_key);
        t = malloc(sizeof *t);
        if (t == NULL) return NULL;
        t->gen = gen - 1;
        (void)pthread_setspecific(mk_key, t);
        mk_tls = t;
    }
    if (UNLIKELY(t->gen != gen)) {
        t->gen = gen;
        t->depth = t->overflow = t->used = 0;
    }
    return t;
}

/* ---- Begin and end: what the hot path calls (core/hooks.h) ---------------------------------- */

static int mk_begin(const char *name, int scope, int name_is_static) {
    uint32_t gen = __atomic_load_n(&cfg.gen, __ATOMIC_RELAXED);
    struct mk_thread *t = mk_thread_get(gen);
    if (t == NULL) return 0;
    if (UNLIKELY(t->depth >= MK_DEPTH)) {
        t->overflow++;
        return 1;
    }
    struct mk_entry *e = &t->st[t->depth++];
    e->scope = scope;
    e->off = t->used;
    e->name = name;
    if (!name_is_static && (cfg.mode & MODE_EVENT)) {
        /* The caller's string may be gone by the end: keep a copy for the mark. */
        size_t room = MK_NAME_BYTES - t->used;
        size_t len = strnlen(name, room > 0 ? room - 1 : 0);
        if (room == 0) {
            e->name = "(strobe: names too long)";
        } else {
            char *dst = t->names + t->used;
            memcpy(dst, name, len);
            dst[len] = '\0';
            t->used += (uint32_t)len + 1;
            e->name = dst;
        }
    }
    if (cfg.mode & MODE_INTERVAL) {
        if (cfg.nvtx) strobe__mk_nvtx_push(name);
        if (cfg.ftrace) strobe__mk_ftrace_begin(name, strlen(name));
    }
    return 1;
}

static void mk_end(void) {
    struct mk_thread *t = mk_tls;
    uint32_t gen = __atomic_load_n(&cfg.gen, __ATOMIC_RELAXED);
    if (t == NULL || t->gen != gen) return; /* begun before this start: not marked */
    if (UNLIKELY(t->overflow > 0)) {
        t->overflow--;
        return;
    }
    if (t->depth == 0) return;
    struct mk_entry *e = &t->st[--t->depth];
    if (cfg.wait && e->scope != STROBE_RECORD_SCOPE_USER_SCOPE) strobe__mk_cuda_sync();
    if (cfg.mode & MODE_INTERVAL) {
        if (cfg.nvtx) strobe__mk_nvtx_pop();
        if (cfg.ftrace) strobe__mk_ftrace_end();
    }
    if (cfg.mode & MODE_EVENT) {
        if (cfg.nvtx) strobe__mk_nvtx_mark(e->name);
        if (cfg.ftrace) strobe__mk_ftrace_instant(e->name, strlen(e->name));
    }
    t->used = e->off;
}

static const strobe__marker_ops mk_ops = {mk_begin, mk_end};

/* ---- Mode and sink strings ----------------------------------------------------------------- */

/* Parses a comma-separated list of words (spaces and case ignored) against `words` (bits 1, 2,
 * 4, ...). @return the bits, or STROBE_EINVAL for an unknown or empty word or an empty list. */
static int parse_list(const char *s, const char *const *words, int nwords, const char *what) {
    int bits = 0;
    const char *p = s;
    for (;;) {
        char word[32];
        size_t n = 0;
        int too_long = 0;
        for (; *p != '\0' && *p != ','; p++) {
            if (*p == ' ' || *p == '\t') continue;
            if (n + 1 >= sizeof word) {
                too_long = 1;
                continue;
            }
            char c = *p;
            word[n++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        }
        word[n] = '\0';
        int found = 0;
        for (int i = 0; i < nwords && !too_long; i++) {
            if (strcmp(word, words[i]) == 0) {
                bits |= 1 << i;
                found = 1;
            }
        }
        if (!found) {
            strobe__log(STROBE_LOG_ERROR, "markers: bad %s \"%s\" (expected %s%s%s)", what, s,
                        words[0], nwords > 1 ? " or " : "", nwords > 1 ? words[1] : "");
            return STROBE_EINVAL;
        }
        if (*p == '\0') break;
        p++;
    }
    return bits;
}

static const char *const mode_words[] = {"interval", "event"};
static const char *const sink_words[] = {"nvtx", "ftrace"};

/* ---- Start and stop ------------------------------------------------------------------------ */

int strobe_markers_start(const char *mode, const char *sinks, int wait_until_completed) {
    STROBE_RETURN_IF(mode == NULL, STROBE_EINVAL);
    int m = parse_list(mode, mode_words, 2, "mode");
    STROBE_FORWARD_IF_ERR(m);
    int k = parse_list(sinks ? sinks : "nvtx", sink_words, 2, "sink");
    STROBE_FORWARD_IF_ERR(k);
    pthread_mutex_lock(&lock);
    int rc = 0;
    STROBE_FAIL_IF(started, STROBE_EBUSY, fail);
    int ftrace = 0, nvtx = 0;
    if (k & SINK_FTRACE) {
        STROBE_TRY_GOTO(strobe__mk_ftrace_open(), fail);
        ftrace = 1;
    }
    if (k & SINK_NVTX) nvtx = strobe__mk_nvtx_attach();
    cfg.mode = m;
    cfg.nvtx = nvtx;
    cfg.ftrace = ftrace;
    cfg.wait = wait_until_completed != 0;
    __atomic_store_n(&cfg.gen, cfg.gen + 1, __ATOMIC_RELAXED);
    started = 1;
    /* Nothing to reach (NVTX with no tool, no wait): the gate stays closed and costs nothing. */
    if (nvtx || ftrace || cfg.wait) {
        __atomic_store_n(&strobe__marker_hook, &mk_ops, __ATOMIC_RELEASE);
        strobe__markers_gate(1);
    }
    strobe__log(STROBE_LOG_INFO, "markers: started (mode %s%s%s, nvtx %s, ftrace %s%s)",
                (m & MODE_INTERVAL) ? "interval" : "", m == 3 ? "," : "",
                (m & MODE_EVENT) ? "event" : "",
                (k & SINK_NVTX) ? (nvtx ? "attached" : "without a tool") : "off",
                ftrace ? "on" : "off", cfg.wait ? ", wait_until_completed" : "");
fail:
    pthread_mutex_unlock(&lock);
    return rc;
}

int strobe_markers_stop(void) {
    pthread_mutex_lock(&lock);
    int rc = 0;
    STROBE_FAIL_IF(!started, STROBE_ENOSESSION, fail);
    strobe__markers_gate(0);
    __atomic_store_n(&strobe__marker_hook, NULL, __ATOMIC_RELEASE);
    /* Ends of ranges begun under this start find a stale stack and reach no sink. */
    __atomic_store_n(&cfg.gen, cfg.gen + 1, __ATOMIC_RELAXED);
    started = 0;
fail:
    pthread_mutex_unlock(&lock);
    return rc;
}

int strobe_markers_active(void) {
    pthread_mutex_lock(&lock);
    int on = started;
    pthread_mutex_unlock(&lock);
    return on;
}

/* ---- Environment ----------------------------------------------------------------------------- */

/* STROBE_MARKERS=MODE[:SINKS], STROBE_MARKERS_WAIT=1: markers from the library's load. The
 * object is linked in a static link because hotpath.c refers to strobe__markers_autostart. */
__attribute__((constructor)) static void markers_from_env(void) {
    const char *v = getenv("STROBE_MARKERS");
    if (v == NULL || v[0] == '\0') return;
    char buf[256];
    size_t n = strnlen(v, sizeof buf);
    if (n >= sizeof buf) {
        strobe__log(STROBE_LOG_ERROR, "markers: STROBE_MARKERS is too long");
        return;
    }
    memcpy(buf, v, n + 1);
    char *sinks = strchr(buf, ':');
    if (sinks != NULL) *sinks++ = '\0';
    const char *w = getenv("STROBE_MARKERS_WAIT");
    int rc = strobe_markers_start(buf, sinks, w != NULL && strcmp(w, "1") == 0);
    if (rc != 0)
        strobe__log(STROBE_LOG_ERROR, "markers: STROBE_MARKERS=%s: %s", v, strobe_strerror(rc));
}

/* Referenced from hotpath.c only so that a static link keeps this object and its constructor. */
int strobe__markers_autostart;
