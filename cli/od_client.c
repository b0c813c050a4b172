/* od_client.c: the CLI's side of the on-demand protocol (od_client.h). */
#include "od_client.h"

#include "common.h"
#include "model/model.h"
#include "util/err.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* sock_pid()'s answer for a name that is no endpoint's socket (not an error). */
#define NOT_A_SOCKET (-1L)

/* The pid a socket file is named for ("PID.sock"), or NOT_A_SOCKET. */
static long sock_pid(const char *name) {
    char *end;
    errno = 0;
    long pid = strtol(name, &end, 10);
    if (errno || end == name || pid <= 0 || strcmp(end, ".sock") != 0 || name[0] == '0')
        return NOT_A_SOCKET;
    return pid;
}

int cli_odc_list(const char *cmd, long **pids, int *stale) {
    char dir[256], err[512];
    *pids = NULL;
    *stale = 0;
    if (strobe__od_socket_dir(dir, sizeof dir) != 0) {
        fprintf(stderr, "strobe %s: the socket folder's path is too long\n", cmd);
        return STROBE_ERANGE;
    }
    struct stat sb;
    if (lstat(dir, &sb) != 0 && errno == ENOENT) return 0; /* no process ever served here */
    int rc = strobe__od_prepare_dir(dir, 0, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "strobe %s: %s\n", cmd, err);
        return rc;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "strobe %s: %s: %s\n", cmd, dir, strerror(errno));
        return STROBE_ESYS;
    }
    size_t n = 0, cap = 0;
    long *out = NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = sock_pid(e->d_name);
        if (pid == NOT_A_SOCKET) continue;
        /* A socket whose process is gone is left by a killed process: remove it. */
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (unlink(p) == 0) (*stale)++;
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            long *g = realloc(out, cap * sizeof *g);
            if (g == NULL) {
                free(out);
                closedir(d);
                fprintf(stderr, "strobe %s: out of memory\n", cmd);
                return STROBE_ENOMEM;
            }
            out = g;
        }
        out[n++] = pid;
    }
    closedir(d);
    if (n) qsort(out, n, sizeof *out, cmp_long);
    *pids = out;
    return (int)n;
}

int cli_odc_connect(long pid, char *err, size_t errcap) {
    char dir[256];
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strobe__od_socket_dir(dir, sizeof dir) != 0 ||
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%ld.sock", dir, pid) >=
            (int)sizeof sa.sun_path) {
        snprintf(err, errcap, "socket path too long");
        return STROBE_ERANGE;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errcap, "socket: %s", strerror(errno));
        return STROBE_ESYS;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        if (e == ENOENT || e == ECONNREFUSED)
            snprintf(err, errcap, "no endpoint (the process is gone, or does not serve one)");
        else
            snprintf(err, errcap, "cannot connect to %s: %s", sa.sun_path, strerror(e));
        return STROBE_ESYS;
    }
    return fd;
}

int cli_odc_output_path(const char *path, long pid, char *out, size_t cap) {
    char abs[STROBE__OD_MAX_PATH];
    int n;
    if (path[0] == '/') {
        n = snprintf(abs, sizeof abs, "%s", path);
    } else {
        char cwd[STROBE__OD_MAX_PATH];
        STROBE_RETURN_IF(getcwd(cwd, sizeof cwd) == NULL, STROBE_ESYS);
        n = snprintf(abs, sizeof abs, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path);
    }
    STROBE_RETURN_IF(n < 0 || (size_t)n >= sizeof abs, STROBE_ERANGE);
    if (pid < 0) {
        n = snprintf(out, cap, "%s", abs);
    } else {
        const char *base = strrchr(abs, '/') + 1;
        const char *dot = strchr(base, '.');
        if (dot == NULL || dot == base)
            n = snprintf(out, cap, "%s.%ld", abs, pid);
        else
            n = snprintf(out, cap, "%.*s.%ld%s", (int)(dot - abs), abs, pid, dot);
    }
    return n < 0 || (size_t)n >= cap ? STROBE_ERANGE : 0;
}

/* Whether process `pid` has exited (gone, or a zombie not yet reaped), waiting up to 300 ms for
 * it: a closed connection comes first when a process exits, its death a moment later. */
static int exited(long pid) {
    for (int i = 0; i < 30; i++) {
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return 1;
        char path[64], buf[256];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (f == NULL) return 1;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
        if (paren && (paren[2] == 'Z' || paren[2] == 'X')) return 1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* count_events()'s answer when the trace cannot be read here (not an error: nothing is printed). */
#define NOT_COUNTED (-1LL)

/* The events in the trace at path (metadata events apart), or NOT_COUNTED. */
static long long count_events(const char *path) {
    md_model *m = malloc(sizeof *m);
    if (m == NULL) return NOT_COUNTED;
    long long n = md_load(m, path) == 0 ? (long long)m->count : NOT_COUNTED;
    md_free(m);
    free(m);
    return n;
}

/* Handles one reply line of target t. */
static void on_line(cli_odc_target *t, const strobe__od_request *req, int no_wait) {
    char w0[16], v[STROBE__OD_MAX_LINE];
    if (strobe__od_word0(t->line, t->len, w0, sizeof w0) != 0) w0[0] = '\0';
    if (strcmp(w0, "ok") == 0) {
        t->accepted = 1;
        if (no_wait) {
            /* The process names the file: it expands %p, %r and %% in the path it was sent. */
            if (strobe__od_get(t->line, t->len, "output", v, sizeof v) < 0)
                snprintf(v, sizeof v, "%s", t->output);
            printf("%ld: tracing; the process writes %s when done\n", t->pid, cli_esc(v));
            t->outcome = 1;
        }
    } else if (strcmp(w0, "done") == 0) {
        char events[32] = "";
        strobe__od_get(t->line, t->len, "events", events, sizeof events);
        if (strobe__od_get(t->line, t->len, "path", v, sizeof v) < 0) snprintf(v, sizeof v, "?");
        /* The reply is the other process's words: escaped, as text from a file is. */
        printf("%ld: trace written to %s", t->pid, cli_esc(v));
        /* A memory profile is written by the program's exporter, not from a trace result, so
         * the endpoint's count (that of a result) says nothing about it: count the file. */
        long long counted = req->verb == STROBE__OD_MEMORY ? count_events(v) : NOT_COUNTED;
        if (counted != NOT_COUNTED)
            printf(" (%lld events)", counted);
        else if (events[0] && req->verb != STROBE__OD_MEMORY)
            printf(" (%s events)", cli_esc(events));
        if (strobe__od_get(t->line, t->len, "note", v, sizeof v) >= 0)
            printf("; note: %s", cli_esc(v));
        printf("\n");
        t->outcome = 1;
    } else if (strcmp(w0, "error") == 0 || strcmp(w0, "failed") == 0) {
        char code[32] = "";
        strobe__od_get(t->line, t->len, "code", code, sizeof code);
        if (strobe__od_get(t->line, t->len, "msg", v, sizeof v) < 0) snprintf(v, sizeof v, "?");
        printf("%ld: did not trace: %s: %s\n", t->pid, code[0] ? cli_esc(code) : "failed",
               cli_esc(v));
        t->outcome = 2;
    } else {
        printf("%ld: did not trace: unreadable reply\n", t->pid);
        t->outcome = 2;
    }
}

int cli_odc_run(cli_odc_target *t, size_t n, const strobe__od_request *req, int64_t timeout_ms,
                int no_wait) {
    signal(SIGPIPE, SIG_IGN);
    for (size_t i = 0; i < n; i++) {
        char err[512], line[STROBE__OD_MAX_LINE + 1];
        t[i].len = 0;
        t[i].accepted = 0;
        t[i].outcome = 0;
        strobe__od_request r = *req;
        snprintf(r.output, sizeof r.output, "%s", t[i].output);
        int len = strobe__od_format_request(&r, line, sizeof line);
        if (len < 0) {
            printf("%ld: did not trace: the request does not fit in %d bytes\n", t[i].pid,
                   STROBE__OD_MAX_LINE);
            t[i].fd = -1;
            t[i].outcome = 2;
            continue;
        }
        t[i].fd = cli_odc_connect(t[i].pid, err, sizeof err);
        if (t[i].fd < 0) {
            printf("%ld: did not trace: %s\n", t[i].pid, err);
            t[i].outcome = 2;
            continue;
        }
        if (send(t[i].fd, line, (size_t)len, MSG_NOSIGNAL) != len) {
            printf("%ld: did not trace: cannot send the request: %s\n", t[i].pid, strerror(errno));
            close(t[i].fd);
            t[i].fd = -1;
            t[i].outcome = 2;
        }
    }
    fflush(stdout);
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        struct pollfd pf[256];
        size_t map[256], m = 0;
        for (size_t i = 0; i < n && m < 256; i++) {
            if (t[i].outcome != 0 || t[i].fd < 0) continue;
            pf[m] = (struct pollfd){t[i].fd, POLLIN, 0};
            map[m++] = i;
        }
        if (m == 0) break;
        int64_t left = deadline - now_ms();
        if (left <= 0) break;
        int rc = poll(pf, (nfds_t)m, left > 60000 ? 60000 : (int)left);
        if (rc < 0 && errno != EINTR) break;
        for (size_t k = 0; rc > 0 && k < m; k++) {
            if (pf[k].revents == 0) continue;
            cli_odc_target *x = &t[map[k]];
            ssize_t r = read(x->fd, x->line + x->len, sizeof x->line - x->len);
            if (r <= 0) {
                printf("%ld: did not trace: the process %s before the trace was written\n", x->pid,
                       exited(x->pid) ? "exited"
                       : x->accepted  ? "exited or closed the connection"
                                      : "closed the connection");
                x->outcome = 2;
                continue;
            }
            x->len += (size_t)r;
            char *nl;
            while (x->outcome == 0 && (nl = memchr(x->line, '\n', x->len)) != NULL) {
                size_t l = (size_t)(nl - x->line) + 1;
                size_t keep = x->len - l;
                x->len = l;
                on_line(x, req, no_wait);
                memmove(x->line, x->line + l, keep);
                x->len = keep;
            }
            if (x->outcome == 0 && x->len == sizeof x->line) {
                printf("%ld: did not trace: reply too long\n", x->pid);
                x->outcome = 2;
            }
        }
        fflush(stdout);
    }
    int code = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].outcome == 0) {
            printf("%ld: no answer within %lld ms; %s\n", t[i].pid, (long long)timeout_ms,
                   t[i].accepted ? "the process may still write the trace" : "it did not start");
            code = 1;
        } else if (t[i].outcome == 2) {
            code = 1;
        }
        if (t[i].fd >= 0) close(t[i].fd);
        t[i].fd = -1;
    }
    fflush(stdout);
    return code;
}
