/* thread.c: per-thread state (stage 2 of DESIGN.md: buffers), the registry of all threads, and
 * the calls that act on the calling thread: attach to a session, per-thread mode, names,
 * correlation ids.
 *
 * A thread's state is created on its first strobe call and kept in the registry. When the thread
 * exits its state is only marked exited: the records it wrote in a session stay reachable until
 * strobe_stop() collects them, and the registry frees exited states after that. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stack.h"
#include "device.h"
#include "state.h"
#include "strobe/error.h"
#include "strobe/instrument.h"
#include "strobe/session.h"

__thread strobe__tstate *strobe__tls;
pthread_mutex_t strobe__registry_lock = PTHREAD_MUTEX_INITIALIZER;
strobe__session *strobe__current;
uint32_t strobe__gen;

static strobe__tstate *all_states;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

uint64_t strobe__cold_signal_dropped;

int strobe__registry_lock_cold(void) {
    strobe__tstate *t = strobe__tls;
    int was = 0;
    if (t != NULL) {
        was = (int)__atomic_load_n(&t->busy, __ATOMIC_RELAXED);
        if (!was) {
            __atomic_store_n(&t->busy, 2, __ATOMIC_RELAXED);
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
        }
    }
    pthread_mutex_lock(&strobe__registry_lock);
    return was;
}

void strobe__registry_unlock_cold(int was_busy) {
    pthread_mutex_unlock(&strobe__registry_lock);
    strobe__tstate *t = strobe__tls;
    if (t != NULL && !was_busy) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
    }
}

static void on_thread_exit(void *p) {
    strobe__tstate *t = p;
    /* Once the lock is released the state may be freed (strobe__registry_sweep), so no signal
     * handler may touch it from here: signals are held until this thread no longer refers to it
     * (the cold lock's busy flag would be cleared in freed memory). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_mutex_lock(&strobe__registry_lock);
    __atomic_store_n(&t->exited, 1, __ATOMIC_RELAXED);
    /* A later strobe call on this thread (from another key's destructor) makes a fresh state. */
    strobe__tls = NULL;
    pthread_mutex_unlock(&strobe__registry_lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void make_exit_key(void) {
    (void)pthread_key_create(&exit_key, on_thread_exit);
}

strobe__tstate *strobe__tstate_get(void) {
    strobe__tstate *t = strobe__tls;
    if (t != NULL) return t;
    pthread_once(&exit_key_once, make_exit_key);
    t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->gen = STROBE__GEN_NONE;
    t->tid = (int64_t)syscall(SYS_gettid);
    pthread_mutex_lock(&strobe__registry_lock);
    t->all_next = all_states;
    all_states = t;
    pthread_mutex_unlock(&strobe__registry_lock);
    (void)pthread_setspecific(exit_key, t);
    strobe__tls = t;
    return t;
}

/* Sets up the session's per-thread details: the stack bounds (with_stack) and the thread's
 * perf counter group. Runs on the thread itself (attach is called by the thread that records),
 * which both need: bounds and perf_event_open(pid 0) are about the calling thread. */
static void attach_details(strobe__tstate *t, const strobe__session *s) {
    t->stack_depth = 0;
    t->perf_n = 0;
    t->perf_failed = 0;
    if (s->cfg.with_stack && t == strobe__tls) {
        if (t->stack_hi == 0 && strobe__stack_bounds(&t->stack_lo, &t->stack_hi) != 0)
            t->stack_lo = t->stack_hi = 0;
        if (t->stack_hi != 0) {
            t->stack_depth = s->cfg.stack_depth;
            t->slow |= STROBE__SLOW_STACK;
        }
    }
    if (s->perf.n > 0) {
        /* Counters count the calling thread only: another thread's cannot be opened here. */
        int rc = STROBE_ESYS, e = ESRCH;
        if (t == strobe__tls) {
            rc = strobe__perf_open_thread(&s->perf, t->perf_fds);
            e = errno;
        }
        if (rc == 0) {
            t->perf_n = s->perf.n;
            t->slow |= STROBE__SLOW_PERF;
        } else {
            t->perf_failed = e;
        }
    }
}

int strobe__tstate_attach(strobe__tstate *t) {
    int ok = 0;
    pthread_mutex_lock(&strobe__registry_lock);
    strobe__session *s = strobe__current;
    if (s != NULL && s->recording) {
        int allowed = t->denied_gen != s->gen && (s->cfg.thread_mode == STROBE_THREADS_ALL ||
                                                  t == s->starter || t->optin_gen == s->gen);
        if (!allowed) {
            /* Remembered so that later calls return before taking the lock. */
            t->denied_gen = s->gen;
        } else {
            if (t->sess_gen != s->gen) {
                t->sess_gen = s->gen;
                t->sess = s;
                t->first = t->cur = NULL;
                t->pos = t->end = NULL;
                t->full = 0;
                t->slow = (uint8_t)((t->slow & STROBE__SLOW_CORR) |
                                    (((s->cfg.scopes & STROBE_SCOPES_ALL) != STROBE_SCOPES_ALL)
                                         ? STROBE__SLOW_FILTER
                                         : 0u));
                attach_details(t, s);
                t->dropped = t->signal_dropped = t->truncated_names = 0;
                t->reversed_backend = 0;
                t->truncated_details = 0;
                t->scope_overflow = t->corr_overflow = 0;
                t->filter_depth = 0;
                t->scopes = s->cfg.scopes;
                t->filtering = (s->cfg.scopes & STROBE_SCOPES_ALL) != STROBE_SCOPES_ALL;
                t->sess_next = s->threads;
                s->threads = t;
                if (!t->user_named && t == strobe__tls) {
                    char comm[17] = {0};
                    if (prctl(PR_GET_NAME, comm, 0, 0, 0) == 0) memcpy(t->name, comm, sizeof comm);
                }
            }
            t->gen = s->gen;
            ok = 1;
        }
    }
    pthread_mutex_unlock(&strobe__registry_lock);
    return ok;
}

void strobe__registry_sweep(void) {
    strobe__tstate **link = &all_states;
    while (*link) {
        strobe__tstate *t = *link;
        int in_use = strobe__current != NULL && t->sess_gen == strobe__current->gen;
        if (t->exited && !in_use) {
            *link = t->all_next;
            free(t);
        } else {
            link = &t->all_next;
        }
    }
}

void strobe__registry_after_fork_child(void) {
    for (strobe__tstate *t = all_states; t; t = t->all_next) {
        if (t != strobe__tls) __atomic_store_n(&t->exited, 1, __ATOMIC_RELAXED);
    }
    if (strobe__tls) strobe__tls->tid = (int64_t)syscall(SYS_gettid);
}

/* ---- Per-thread mode ------------------------------------------------------------------- */

int strobe_enable_in_child_thread(void) {
    strobe__tstate *t = strobe__tstate_get();
    if (t == NULL) return STROBE_ENOMEM;
    int rc = 0;
    int was = strobe__registry_lock_cold();
    strobe__session *s = strobe__current;
    if (s == NULL || !s->recording) {
        rc = STROBE_ENOSESSION;
    } else {
        t->optin_gen = s->gen;
        if (t->denied_gen == s->gen) t->denied_gen = 0;
    }
    strobe__registry_unlock_cold(was);
    return rc;
}

int strobe_disable_in_child_thread(void) {
    strobe__tstate *t = strobe__tstate_get();
    if (t == NULL) return STROBE_ENOMEM;
    int rc = 0;
    int was = strobe__registry_lock_cold();
    strobe__session *s = strobe__current;
    if (s == NULL || !s->recording) {
        rc = STROBE_ENOSESSION;
    } else {
        t->optin_gen = 0;
        t->denied_gen = s->gen;
        t->gen = STROBE__GEN_NONE;
    }
    strobe__registry_unlock_cold(was);
    return rc;
}

int strobe_is_enabled_in_main_thread(void) {
    int was = strobe__registry_lock_cold();
    strobe__session *s = strobe__current;
    int on = s != NULL && s->recording && s->starter != NULL && s->starter->denied_gen != s->gen;
    strobe__registry_unlock_cold(was);
    return on;
}

/* ---- Names and correlation ids -------------------------------------------------------- */

void strobe_set_thread_name(const char *name) {
    strobe__tstate *t = strobe__tstate_get();
    if (t == NULL || name == NULL) return;
    int was = strobe__registry_lock_cold();
    size_t n = strnlen(name, sizeof t->name - 1);
    memcpy(t->name, name, n);
    t->name[n] = '\0';
    t->user_named = 1;
    strobe__registry_unlock_cold(was);
}

/* Pushes (push != 0) or pops the calling thread's external (user == 0) or user correlation id,
 * and keeps the CORR bit of the fast-path flags in step with the current ids. The hot path of
 * this thread may be interrupted by a signal handler that pushes ids; both run on this thread,
 * so a compiler barrier orders them. Deeper than STROBE__CORR_DEPTH, pushes are counted and the
 * deepest kept id stays current; a pop with nothing pushed does nothing. */
static void corr_update(int user, int push, uint64_t id) {
    strobe__tstate *t = strobe__tstate_get();
    if (t == NULL) return;
    uint64_t *stack = user ? t->corr_user_stack : t->corr_ext_stack;
    uint32_t *depth = user ? &t->corr_user_depth : &t->corr_ext_depth;
    uint64_t *current = user ? &t->corr_user : &t->corr_ext;
    if (push) {
        if (*depth < STROBE__CORR_DEPTH) {
            stack[*depth] = id;
            *current = id;
        } else {
            t->corr_overflow++;
        }
        (*depth)++;
    } else if (*depth > 0) {
        (*depth)--;
        uint32_t kept = *depth < STROBE__CORR_DEPTH ? *depth : STROBE__CORR_DEPTH;
        *current = kept ? stack[kept - 1] : 0;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (!user) {
        /* A device backend that traces links the work launched under the id to it. */
        const strobe__device_backend *b = __atomic_load_n(&strobe__ext_backend, __ATOMIC_ACQUIRE);
        if (b != NULL) {
            if (push)
                b->push_external(id);
            else
                b->pop_external();
        }
    }
    if (t->corr_ext | t->corr_user) {
        t->slow |= STROBE__SLOW_CORR;
    } else {
        t->slow &= (uint8_t)~STROBE__SLOW_CORR;
    }
}

void strobe_push_correlation_id(uint64_t id) {
    corr_update(0, 1, id);
}
void strobe_pop_correlation_id(void) {
    corr_update(0, 0, 0);
}
void strobe_push_user_correlation_id(uint64_t id) {
    corr_update(1, 1, id);
}
void strobe_pop_user_correlation_id(void) {
    corr_update(1, 0, 0);
}

int strobe__thread_name_tid(int64_t tid, const char *name) {
    if (name == NULL) return 0;
    int found = 0;
    int was = strobe__registry_lock_cold();
    for (strobe__tstate *t = all_states; t; t = t->all_next) {
        if (t->tid != tid || __atomic_load_n(&t->exited, __ATOMIC_RELAXED)) continue;
        size_t n = strnlen(name, sizeof t->name - 1);
        memcpy(t->name, name, n);
        t->name[n] = '\0';
        t->user_named = 1;
        found = 1;
    }
    strobe__registry_unlock_cold(was);
    return found;
}
