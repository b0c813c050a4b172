/* perf.c: the perf_event counters behind config.perf_events (see perf.h). */
#include "perf.h"

#include "ownfd.h"
#include "strobe/error.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The names a config may use, with the kernel's event numbers (linux/perf_event.h). */
static const strobe__perf_event table[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
    {"stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
};

int strobe__perf_lookup(const char *name, strobe__perf_event *out) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].name, name) == 0) {
            *out = table[i];
            return 0;
        }
    }
    return STROBE__PERF_UNKNOWN;
}

int strobe__perf_parse(const char *spec, strobe__perf_set *out, char *err, size_t err_size) {
    out->n = 0;
    if (spec == NULL) return 0;
    const char *p = spec;
    while (*p == ' ')
        p++;
    if (*p == '\0') return 0;
    for (;;) {
        while (*p == ' ')
            p++;
        const char *start = p;
        while (*p != '\0' && *p != ',')
            p++;
        const char *end = p;
        while (end > start && end[-1] == ' ')
            end--;
        size_t len = (size_t)(end - start);
        if (len == 0) {
            snprintf(err, err_size, "empty event name in \"%s\"", spec);
            return STROBE_EINVAL;
        }
        char name[64];
        if (len >= sizeof name) {
            snprintf(err, err_size, "unknown perf event \"%.*s...\"", 32, start);
            return STROBE_EINVAL;
        }
        memcpy(name, start, len);
        name[len] = '\0';
        strobe__perf_event ev;
        if (strobe__perf_lookup(name, &ev) != 0) {
            snprintf(err, err_size,
                     "unknown perf event \"%s\" (known: cycles, instructions, cache-references, "
                     "cache-misses, branches, branch-misses, bus-cycles, stalled-cycles-frontend, "
                     "stalled-cycles-backend, ref-cycles, cpu-clock, task-clock, page-faults, "
                     "minor-faults, major-faults, context-switches, cpu-migrations, "
                     "alignment-faults, emulation-faults)",
                     name);
            return STROBE_EINVAL;
        }
        int dup = 0;
        for (int i = 0; i < out->n; i++)
            if (out->ev[i].name == ev.name) dup = 1;
        if (!dup) {
            if (out->n == STROBE__PERF_MAX) {
                snprintf(err, err_size, "more than %d perf events", STROBE__PERF_MAX);
                return STROBE_EINVAL;
            }
            out->ev[out->n++] = ev;
        }
        if (*p == '\0') return 0;
        p++; /* the comma */
    }
}

static int open_one(const strobe__perf_event *ev, int group_fd, int exclude_kernel) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = ev->type;
    a.config = ev->config;
    a.read_format = PERF_FORMAT_GROUP;
    a.disabled = group_fd < 0 ? 1 : 0; /* the leader starts disabled; members follow it */
    a.exclude_kernel = (uint64_t)exclude_kernel;
    a.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &a, 0 /* this thread */, -1 /* any cpu */, group_fd,
                      PERF_FLAG_FD_CLOEXEC);
    /* Out of the way of a program that closes or reuses descriptors (core/ownfd.h). */
    return fd < 0 ? STROBE_ESYS : strobe__fd_move_high((int)fd);
}

/* Opens with kernel time counted, and again without when perf_event_paranoid forbids it.
 * @return the descriptor, or STROBE_ESYS with errno set. */
static int open_either(const strobe__perf_event *ev, int group_fd) {
    int fd = open_one(ev, group_fd, 0);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) fd = open_one(ev, group_fd, 1);
    return fd;
}

int strobe__perf_probe(const strobe__perf_event *ev) {
    int fd = open_either(ev, -1);
    if (fd < 0) return fd;
    close(fd);
    return 0;
}

/* Closes fds[0..n) and marks every slot closed, keeping errno (the failure's reason). */
static void close_keep_errno(int fds[STROBE__PERF_MAX], int n) {
    int e = errno;
    strobe__perf_close(fds, n);
    for (int j = 0; j < STROBE__PERF_MAX; j++)
        fds[j] = -1;
    errno = e;
}

int strobe__perf_open_thread(const strobe__perf_set *set, int fds[STROBE__PERF_MAX]) {
    for (int i = 0; i < STROBE__PERF_MAX; i++)
        fds[i] = -1;
    if (set->n <= 0) return 0;
    for (int i = 0; i < set->n; i++) {
        int fd = open_either(&set->ev[i], i == 0 ? -1 : fds[0]);
        if (fd < 0) {
            close_keep_errno(fds, i);
            return fd;
        }
        fds[i] = fd;
    }
    if (ioctl(fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0) {
        close_keep_errno(fds, set->n);
        return STROBE_ESYS;
    }
    return 0;
}

int strobe__perf_read(int leader_fd, int n, uint64_t *vals) {
    /* PERF_FORMAT_GROUP without other flags: { u64 nr; u64 values[nr]; } */
    uint64_t buf[1 + STROBE__PERF_MAX];
    if (n < 0 || n > STROBE__PERF_MAX) n = 0;
    ssize_t want = (ssize_t)(sizeof(uint64_t) * (size_t)(1 + n));
    ssize_t got = leader_fd >= 0 ? read(leader_fd, buf, (size_t)want) : -1;
    if (got != want || buf[0] != (uint64_t)n) {
        for (int i = 0; i < n; i++)
            vals[i] = 0;
        return STROBE_EIO;
    }
    for (int i = 0; i < n; i++)
        vals[i] = buf[1 + i];
    return 0;
}

void strobe__perf_close(int fds[STROBE__PERF_MAX], int n) {
    if (n > STROBE__PERF_MAX) n = STROBE__PERF_MAX;
    for (int i = n - 1; i >= 0; i--) {
        /* Closed only while it still is a perf event: the program may have closed it and put a
         * file of its own at its number. */
        uint64_t id;
        if (fds[i] >= 0 && strobe__fd_perf_id(fds[i], &id) == 0) close(fds[i]);
        fds[i] = -1;
    }
}
