/* mk_ftrace.c: markers written to the kernel's trace_marker (tracefs), in the atrace format that
 * Perfetto's system-trace importer and trace-cmd read: "B|pid|name" begins a slice on the writing
 * thread, "E|pid" ends its innermost one, "I|pid|name" is an instant. The kernel stamps each line
 * with the time and the writing thread, so one write() per marker is all the work.
 *
 * The descriptor is opened once and kept for the process's life (never closed at stop: a thread
 * still inside a marker call must not write to a descriptor number that was reused). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "markers_int.h"
#include "strobe/error.h"

static int fd = -1;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
/* The process id's digits and its length ("B|" + pid + "|"): refreshed in a forked child. */
static char pid_text[16];
static size_t pid_len;

static void set_pid(void) {
    int n = snprintf(pid_text, sizeof pid_text, "%ld", (long)getpid());
    pid_len = n > 0 && (size_t)n < sizeof pid_text ? (size_t)n : 0;
}

int strobe__mk_ftrace_open(void) {
    static const char *const paths[] = {"/sys/kernel/tracing/trace_marker",
                                        "/sys/kernel/debug/tracing/trace_marker"};
    pthread_mutex_lock(&open_lock);
    int rc = 0;
    if (fd < 0) {
        int err[2] = {0, 0};
        for (int i = 0; i < 2 && fd < 0; i++) {
            int f = open(paths[i], O_WRONLY | O_CLOEXEC);
            if (f >= 0) {
                __atomic_store_n(&fd, f, __ATOMIC_RELEASE);
            } else {
                err[i] = errno;
            }
        }
        if (fd < 0) {
            strobe__log(STROBE_LOG_ERROR,
                        "markers: ftrace: no writable trace_marker (%s: %s; %s: %s); mount tracefs "
                        "(mount -t tracefs nodev /sys/kernel/tracing) and run with write access",
                        paths[0], strerror(err[0]), paths[1], strerror(err[1]));
            rc = STROBE_ENOTSUP;
        } else {
            set_pid();
            static int atfork_done;
            if (!atfork_done) {
                (void)pthread_atfork(NULL, NULL, set_pid);
                atfork_done = 1;
            }
        }
    }
    pthread_mutex_unlock(&open_lock);
    return rc;
}

/* The longest name written; the kernel takes a few KiB per write. */
#define MAX_NAME 1000

static void put(char phase, const char *name, size_t len) {
    char buf[MAX_NAME + 32];
    size_t n = 0;
    buf[n++] = phase;
    buf[n++] = '|';
    memcpy(buf + n, pid_text, pid_len);
    n += pid_len;
    if (name != NULL) {
        buf[n++] = '|';
        if (len > MAX_NAME) len = MAX_NAME;
        memcpy(buf + n, name, len);
        /* A newline would end the line early: the name stays on one line. */
        for (size_t i = 0; i < len; i++)
            if (buf[n + i] == '\n') buf[n + i] = ' ';
        n += len;
    }
    /* Fails while tracing is off (EBADF): nothing to do about it on the hot path. */
    ssize_t w = write(__atomic_load_n(&fd, __ATOMIC_ACQUIRE), buf, n);
    (void)w;
}

void strobe__mk_ftrace_begin(const char *name, size_t len) {
    put('B', name, len);
}

void strobe__mk_ftrace_end(void) {
    put('E', NULL, 0);
}

void strobe__mk_ftrace_instant(const char *name, size_t len) {
    put('I', name, len);
}
