/* perf.h: per-thread perf_event counters read at range begin and end (config.perf_events).
 *
 * The session parses the config's list once at start (strobe__perf_parse), probes each event on
 * the starting thread (strobe__perf_probe) and keeps those that open. Each recording thread opens
 * its own group when it attaches (strobe__perf_open_thread) and the hot path reads the whole
 * group with one read() (strobe__perf_read). The stopper closes every thread's group. */
#ifndef STROBE_PERF_H
#define STROBE_PERF_H

#include <stddef.h>
#include <stdint.h>

#define STROBE__PERF_MAX 8

/* One event: its name as the config spells it (and as the arg is named), type and config of
 * struct perf_event_attr. */
typedef struct strobe__perf_event {
    const char *name; /* static string from the event table */
    uint32_t type;    /* PERF_TYPE_HARDWARE or PERF_TYPE_SOFTWARE */
    uint64_t config;  /* PERF_COUNT_HW_* or PERF_COUNT_SW_* */
} strobe__perf_event;

typedef struct strobe__perf_set {
    strobe__perf_event ev[STROBE__PERF_MAX];
    int n;
} strobe__perf_set;

/* strobe__perf_lookup()'s answer for a name it does not know: a lookup's "not found", not an
 * error code. */
#define STROBE__PERF_UNKNOWN (-1)

/* Looks up one event name in the table. @return 0 and fills *out, or STROBE__PERF_UNKNOWN. */
int strobe__perf_lookup(const char *name, strobe__perf_event *out);

/* Parses a comma-separated list (spaces around names allowed; empty list: n = 0). Duplicates are
 * kept once. @return 0, or STROBE_EINVAL with a one-line reason in err (unknown name, more than
 * STROBE__PERF_MAX, empty item). */
int strobe__perf_parse(const char *spec, strobe__perf_set *out, char *err, size_t err_size);

/* Tries to open `ev` for the calling thread. @return 0 when it opens (and closes it again), else
 * STROBE_ESYS with errno set (ENOENT: this machine lacks it, EACCES/EPERM: not allowed, ...). */
int strobe__perf_probe(const strobe__perf_event *ev);

/* Opens the set as one group counting the calling thread (user and kernel time where
 * perf_event_paranoid allows, else user only), enabled. fds[i] gets each event's descriptor
 * (fds[0] is the leader). @return 0, or STROBE_ESYS with errno set and nothing left open. */
int strobe__perf_open_thread(const strobe__perf_set *set, int fds[STROBE__PERF_MAX]);

/* Reads the group of leader `fd` (n events) into vals[0..n): one read() of PERF_FORMAT_GROUP.
 * Async-signal-safe. @return 0, or STROBE_EIO (vals zeroed). */
int strobe__perf_read(int leader_fd, int n, uint64_t *vals);

/* Closes the n descriptors (ignores -1). */
void strobe__perf_close(int fds[STROBE__PERF_MAX], int n);

#endif
