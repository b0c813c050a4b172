/* test_ondemand.c: on-demand traces end to end. Target processes (ondemand_target) serve
 * endpoints; the strobe CLI triggers them; the traces they write are read back with the trace
 * reader. Also: a custom client interface in this process, busy replies, path refusals, another
 * user refused, malformed, oversized and slow requests, a requester that leaves, a process that
 * exits mid-trace, stale sockets, and a memory profile.
 *
 *   test_ondemand STROBE_CLI ONDEMAND_TARGET
 *
 * Traces go to STROBE_TEST_OUT_DIR/ondemand (validate_traces checks them); sockets to a fresh
 * folder under /tmp (a socket path must stay under 108 bytes). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "strobe/strobe.h"
#include "trace_reader.h"

static const char *cli, *target_bin;
static char rtdir[256], outdir[1024];

/* ---- processes ------------------------------------------------------------------------------- */

/* Runs the CLI with args (NULL-terminated) and returns its exit code; its stdout and stderr go to
 * out. */
static int run_cli(char *out, size_t cap, const char *const *args) {
    int p[2];
    if (pipe(p) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        const char *argv[32];
        int n = 0;
        argv[n++] = cli;
        for (int i = 0; args[i] && n < 31; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    size_t len = 0;
    ssize_t r;
    while ((r = read(p[0], out + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = '\0';
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    printf("$ strobe");
    for (int i = 0; args[i]; i++)
        printf(" %s", args[i]);
    printf("  -> %d\n%s", code, out);
    return code;
}

typedef struct target {
    pid_t pid;
    char stopfile[1100];
} target;

/* Starts ondemand_target with extra args and waits for its "ready" line. */
static int start_target(target *t, int env_mode, const char *const *extra) {
    static int serial;
    snprintf(t->stopfile, sizeof t->stopfile, "%s/stop.%d.%d", outdir, (int)getpid(), serial++);
    unlink(t->stopfile);
    int p[2];
    if (pipe(p) != 0) return -1;
    t->pid = fork();
    if (t->pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        if (chdir(outdir) != 0) _exit(126);
        if (env_mode)
            setenv("STROBE_ONDEMAND", "1", 1);
        else
            unsetenv("STROBE_ONDEMAND");
        const char *argv[16];
        int n = 0;
        argv[n++] = target_bin;
        argv[n++] = "60";
        argv[n++] = t->stopfile;
        if (!env_mode) argv[n++] = "--api";
        for (int i = 0; extra && extra[i] && n < 15; i++)
            argv[n++] = extra[i];
        argv[n] = NULL;
        execv(target_bin, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    char buf[600];
    size_t len = 0;
    while (len < sizeof buf - 1) {
        struct pollfd pf = {p[0], POLLIN, 0};
        if (poll(&pf, 1, 10000) <= 0) break;
        ssize_t r = read(p[0], buf + len, sizeof buf - 1 - len);
        if (r <= 0) break;
        len += (size_t)r;
        if (memchr(buf, '\n', len)) break;
    }
    buf[len] = '\0';
    close(p[0]);
    if (strncmp(buf, "ready ", 6) != 0) {
        fprintf(stderr, "target did not get ready: '%s'\n", buf);
        return -1;
    }
    return 0;
}

/* Asks the target to end, and reaps it. @return its exit status. */
static int stop_target(target *t) {
    int fd = open(t->stopfile, O_CREAT | O_WRONLY, 0600);
    if (fd >= 0) close(fd);
    int st = 0;
    waitpid(t->pid, &st, 0);
    unlink(t->stopfile);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- traces ---------------------------------------------------------------------------------- */

typedef struct counts {
    int ok;
    long mm, add, mem, steps;
    long first_step, last_step;
    int steps_consecutive;
    long events; /* all but the ph M events */
} counts;

static counts read_trace(const char *path) {
    counts c = {0, 0, 0, 0, 0, -1, -1, 1};
    strobe_rd *rd;
    if (strobe_rd_open(&rd, path, NULL) != 0) {
        fprintf(stderr, "cannot open %s\n", path);
        strobe_rd_close(rd);
        return c;
    }
    strobe_rd_item it;
    int rc;
    while ((rc = strobe_rd_next(rd, &it)) > 0) {
        if (rc != STROBE_RD_EVENT) continue;
        const strobe_rd_event *e = it.event;
        if (e->bad) {
            fprintf(stderr, "%s: bad event %llu: %s\n", path, (unsigned long long)e->index,
                    e->bad_reason ? e->bad_reason : "?");
            strobe_rd_close(rd);
            return c;
        }
        if (!(e->ph.len == 1 && e->ph.s[0] == 'M')) c.events++;
        if (e->ph.len != 1) continue;
        const char *n = e->name.s;
        if (e->ph.s[0] == 'X' && strcmp(n, "aten::mm") == 0) c.mm++;
        if (e->ph.s[0] == 'X' && strcmp(n, "aten::add") == 0) c.add++;
        if (e->ph.s[0] == 'i' && strcmp(n, "[memory]") == 0) c.mem++;
        if (e->ph.s[0] == 'X' && strncmp(n, "ProfilerStep#", 13) == 0) {
            long k = atol(n + 13);
            if (c.steps && k != c.last_step + 1) c.steps_consecutive = 0;
            if (c.steps == 0) c.first_step = k;
            c.last_step = k;
            c.steps++;
        }
    }
    if (rc < 0) fprintf(stderr, "%s: %s\n", path, strobe_rd_errmsg(rd));
    c.ok = rc >= 0;
    strobe_rd_close(rd);
    return c;
}

/* ---- raw connections ------------------------------------------------------------------------- */

static int connect_pid(pid_t pid) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char path[300];
    snprintf(path, sizeof path, "%s/%ld.sock", rtdir, (long)pid);
    if (strlen(path) >= sizeof sa.sun_path) return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Reads one reply line within ms. @return its length, 0 on EOF, -1 on timeout. */
static int read_line(int fd, char *buf, size_t cap, int ms) {
    size_t len = 0;
    while (len < cap - 1) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, ms) <= 0) return -1;
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r <= 0) break;
        len += (size_t)r;
        if (memchr(buf, '\n', len)) break;
    }
    buf[len] = '\0';
    return (int)len;
}

static void send_all(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

/* ---- the tests ------------------------------------------------------------------------------- */

static void test_modes(target *a, target *b) {
    char out[8192], path[1200], pa[32], pb[32];
    snprintf(pa, sizeof pa, "%ld", (long)a->pid);
    snprintf(pb, sizeof pb, "%ld", (long)b->pid);

    /* ps lists both, idle. */
    CHECK_EQ(run_cli(out, sizeof out, (const char *[]){"ps", NULL}), 0);
    CHECK(strstr(out, pa) != NULL && strstr(out, pb) != NULL);
    CHECK(strstr(out, "idle") != NULL);

    /* Duration mode. */
    snprintf(path, sizeof path, "%s/duration.json", outdir);
    unlink(path);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pa, "--duration-ms", "300", "--output",
                                      path, NULL}),
             0);
    CHECK(strstr(out, "trace written to") != NULL);
    counts c = read_trace(path);
    CHECK(c.ok);
    CHECK(c.mm >= 3);
    CHECK(labs(c.mm - c.add) <= 1);
    /* The target calls strobe_step() as it works: every step of a session is a ProfilerStep
     * range, also in a duration trace. */
    CHECK(c.steps >= 1);

    /* Iteration mode, with a round-up, on the process that started its endpoint by API; the
     * relative path lands in this test's working directory, the target's cwd too. */
    snprintf(path, sizeof path, "%s/iterations.json", outdir);
    unlink(path);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pb, "--iterations", "4",
                                      "--start-iteration-roundup", "7", "--record-shapes",
                                      "--with-stack", "--profile-memory", "--output",
                                      "iterations.json", NULL}),
             0);
    c = read_trace(path);
    CHECK(c.ok);
    CHECK_EQ(c.steps, 4);
    CHECK(c.steps_consecutive);
    CHECK_EQ(c.first_step % 7, 0);
    CHECK(c.mm >= 3);
    CHECK(c.mem >= 3); /* --profile-memory reached the session */

    /* Both processes: each writes its own file, named with its pid. */
    snprintf(path, sizeof path, "%s/all.json", outdir);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--all", "--duration-ms", "200", "--output", path,
                                      NULL}),
             0);
    char pa_path[1300], pb_path[1300];
    snprintf(pa_path, sizeof pa_path, "%s/all.%s.json", outdir, pa);
    snprintf(pb_path, sizeof pb_path, "%s/all.%s.json", outdir, pb);
    CHECK(read_trace(pa_path).mm >= 1);
    CHECK(read_trace(pb_path).mm >= 1);

    /* A memory profile. */
    snprintf(path, sizeof path, "%s/memory.json", outdir);
    unlink(path);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"memory-profile", "--pid", pa, "--duration-ms", "300",
                                      "--output", path, NULL}),
             0);
    c = read_trace(path);
    CHECK(c.ok);
    CHECK(c.mem >= 4);
    /* The line says how many events the file holds (it said 0: the endpoint's count is that of
     * a trace result, which a memory profile does not have). */
    char want[64];
    snprintf(want, sizeof want, "(%ld events)", c.events);
    CHECK(c.events > 0);
    if (strstr(out, want) == NULL) {
        fprintf(stderr, "memory-profile: want \"%s\" in: %s\n", want, out);
        CHECK(0);
    }
}

static void test_busy_and_timeout(target *a) {
    char out[8192], path[1200], pa[32];
    snprintf(pa, sizeof pa, "%ld", (long)a->pid);
    snprintf(path, sizeof path, "%s/never.json", outdir);
    /* An iteration trace that waits for a step far away holds the endpoint... */
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pa, "--iterations", "2",
                                      "--start-iteration-roundup", "1000000", "--timeout-ms",
                                      "1500", "--no-wait", "--output", path, NULL}),
             0);
    CHECK(strstr(out, "tracing") != NULL);
    CHECK_EQ(run_cli(out, sizeof out, (const char *[]){"ps", NULL}), 0);
    CHECK(strstr(out, "armed") != NULL);
    /* ...so a second trigger is answered busy... */
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pa, "--duration-ms", "100", "--output",
                                      path, NULL}),
             1);
    CHECK(strstr(out, "busy") != NULL);
    /* ...until its timeout cancels it: no stuck state, and no file. */
    usleep(2500 * 1000);
    CHECK_EQ(run_cli(out, sizeof out, (const char *[]){"ps", NULL}), 0);
    CHECK(strstr(out, "armed") == NULL);
    CHECK(access(path, F_OK) != 0);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pa, "--duration-ms", "100", "--output",
                                      path, NULL}),
             0);
    CHECK(access(path, F_OK) == 0);
    unlink(path);
}

static void test_paths(target *a) {
    char out[8192], pa[32], path[1200];
    snprintf(pa, sizeof pa, "%ld", (long)a->pid);
    const char *bad[] = {"/etc/strobe-ondemand-test.json", "/proc/self/x.json", NULL, NULL, NULL};
    snprintf(path, sizeof path, "%s/../escape.json", outdir);
    bad[2] = path;
    /* A link in an allowed folder pointing out of it. */
    char link[1200], via[1300];
    snprintf(link, sizeof link, "%s/etc-link", outdir);
    unlink(link);
    CHECK_EQ(symlink("/etc", link), 0);
    snprintf(via, sizeof via, "%s/x.json", link);
    bad[3] = via;
    for (int i = 0; bad[i]; i++) {
        CHECK_EQ(run_cli(out, sizeof out,
                         (const char *[]){"trigger", "--pid", pa, "--duration-ms", "50", "--output",
                                          bad[i], NULL}),
                 1);
        CHECK(strstr(out, "path") != NULL);
    }
    CHECK(access("/etc/x.json", F_OK) != 0);
    unlink(link);
}

static void test_malformed(target *a) {
    char line[8192];
    /* Garbage gets an error and the endpoint goes on. */
    int fd = connect_pid(a->pid);
    CHECK(fd >= 0);
    send_all(fd, "\x01\x02 garbage=\xff\n", 14);
    CHECK(read_line(fd, line, sizeof line, 3000) > 0);
    CHECK(strncmp(line, "error code=request", 18) == 0);
    close(fd);
    /* Oversized: no newline within the limit. */
    fd = connect_pid(a->pid);
    CHECK(fd >= 0);
    char *big = malloc(20000);
    memset(big, 'a', 20000);
    send_all(fd, big, 20000);
    free(big);
    CHECK(read_line(fd, line, sizeof line, 3000) > 0);
    CHECK(strstr(line, "too%20long") != NULL); /* values are percent-encoded */
    close(fd);
    /* Slow: half a request, then nothing. Another requester is served meanwhile, and the slow
     * one gets a timeout. */
    int slow = connect_pid(a->pid);
    CHECK(slow >= 0);
    send_all(slow, "stat", 4);
    fd = connect_pid(a->pid);
    CHECK(fd >= 0);
    send_all(fd, "status\n", 7);
    CHECK(read_line(fd, line, sizeof line, 1500) > 0);
    CHECK(strncmp(line, "ok pid=", 7) == 0);
    close(fd);
    CHECK(read_line(slow, line, sizeof line, 5000) > 0);
    CHECK(strncmp(line, "error code=timeout", 18) == 0);
    close(slow);
    /* Many connections at once, all silent: the endpoint still answers after they time out. */
    int many[24];
    for (int i = 0; i < 24; i++)
        many[i] = connect_pid(a->pid);
    usleep(2500 * 1000);
    for (int i = 0; i < 24; i++)
        if (many[i] >= 0) close(many[i]);
    fd = connect_pid(a->pid);
    CHECK(fd >= 0);
    send_all(fd, "status\n", 7);
    CHECK(read_line(fd, line, sizeof line, 3000) > 0);
    CHECK(strncmp(line, "ok pid=", 7) == 0);
    close(fd);
}

/* The endpoint's thread, found by its name: its voluntary context switches (each wake-up is one).
 */
static long endpoint_wakeups(pid_t pid) {
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/task", (long)pid);
    DIR *d = opendir(dir);
    if (d == NULL) return -1;
    long found = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && found < 0) {
        if (e->d_name[0] == '.') continue;
        char p[600], buf[4096];
        snprintf(p, sizeof p, "%s/%s/comm", dir, e->d_name);
        FILE *f = fopen(p, "r");
        if (f == NULL) continue;
        int is = fgets(buf, sizeof buf, f) && strncmp(buf, "strobe-ondemand", 15) == 0;
        fclose(f);
        if (!is) continue;
        snprintf(p, sizeof p, "%s/%s/status", dir, e->d_name);
        f = fopen(p, "r");
        if (f == NULL) continue;
        while (fgets(buf, sizeof buf, f))
            if (strncmp(buf, "voluntary_ctxt_switches:", 24) == 0) found = atol(buf + 24);
        fclose(f);
    }
    closedir(d);
    return found;
}

/* An idle endpoint sleeps: its thread does not wake while nobody asks (the target meanwhile
 * runs its steps). */
static void test_idle(target *a) {
    /* One request first, so that the thread has surely run and gone back to sleep in poll()
     * (on a loaded machine it may not have been scheduled yet since it was created). */
    char line[4096];
    int fd = connect_pid(a->pid);
    CHECK(fd >= 0);
    send_all(fd, "status\n", 7);
    CHECK(read_line(fd, line, sizeof line, 3000) > 0);
    close(fd);
    usleep(300 * 1000);
    long before = endpoint_wakeups(a->pid);
    usleep(1500 * 1000);
    long after = endpoint_wakeups(a->pid);
    printf("endpoint thread wake-ups over 1.5 s idle: %ld -> %ld\n", before, after);
    CHECK(before >= 0);
    CHECK_EQ(after, before);
}

/* A requester that leaves mid-trace: the trace is still written, and the endpoint is idle
 * after. */
static void test_requester_leaves(target *a) {
    char path[1200], line[8192], enc[4000];
    snprintf(path, sizeof path, "%s/left.json", outdir);
    unlink(path);
    int fd = connect_pid(a->pid);
    CHECK(fd >= 0);
    /* The path holds no byte the protocol escapes (the folder is the build's). */
    snprintf(enc, sizeof enc, "trigger output=%s duration_ms=300\n", path);
    send_all(fd, enc, strlen(enc));
    CHECK(read_line(fd, line, sizeof line, 3000) > 0);
    CHECK(strncmp(line, "ok ", 3) == 0);
    close(fd);
    for (int i = 0; i < 100 && access(path, F_OK) != 0; i++)
        usleep(50 * 1000);
    CHECK(read_trace(path).mm >= 1);
}

/* Another user: the socket's folder keeps it out, and where the folder is opened up, the peer
 * check refuses it. Needs root (to become another user); skipped otherwise. */
static void test_other_user(target *a) {
    if (geteuid() != 0) {
        printf("note: not root: the other-user test is skipped\n");
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            /* Open the folder and the socket to everyone: only the peer check is left. */
            char sock[400];
            snprintf(sock, sizeof sock, "%s/%ld.sock", rtdir, (long)a->pid);
            CHECK_EQ(chmod(rtdir, 0711), 0);
            CHECK_EQ(chmod(sock, 0666), 0);
        }
        int p[2];
        CHECK_EQ(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            char line[512] = "";
            if (setgid(65534) != 0 || setuid(65534) != 0) {
                snprintf(line, sizeof line, "setuid failed");
            } else {
                int fd = connect_pid(a->pid);
                if (fd < 0) {
                    snprintf(line, sizeof line, "connect: %s", strerror(errno));
                } else {
                    send_all(fd, "status\n", 7);
                    if (read_line(fd, line, sizeof line, 3000) <= 0)
                        snprintf(line, sizeof line, "no reply");
                    close(fd);
                }
            }
            ssize_t w = write(p[1], line, strlen(line));
            (void)w;
            _exit(0);
        }
        close(p[1]);
        char line[512];
        ssize_t n = read(p[0], line, sizeof line - 1);
        line[n > 0 ? n : 0] = '\0';
        close(p[0]);
        waitpid(pid, NULL, 0);
        printf("other user, pass %d: %s\n", pass, line);
        if (pass == 0)
            CHECK(strstr(line, "Permission denied") != NULL);
        else
            CHECK(strncmp(line, "error code=refused", 18) == 0);
    }
    CHECK_EQ(chmod(rtdir, 0700), 0);
}

/* A process that exits mid-trace: the CLI says so; its socket is left and `strobe ps` removes
 * it. */
static void test_exit_mid_trace(void) {
    target c;
    if (start_target(&c, 1, (const char *[]){"--exit-after-ms", "700", NULL}) != 0) {
        CHECK(0);
        return;
    }
    char out[8192], pc[32], path[1200], sock[400];
    snprintf(pc, sizeof pc, "%ld", (long)c.pid);
    snprintf(path, sizeof path, "%s/exited.json", outdir);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pc, "--duration-ms", "5000", "--output",
                                      path, NULL}),
             1);
    CHECK(strstr(out, "exited") != NULL);
    CHECK_EQ(stop_target(&c), 3);
    snprintf(sock, sizeof sock, "%s/%s.sock", rtdir, pc);
    CHECK(access(sock, F_OK) == 0);
    CHECK_EQ(run_cli(out, sizeof out, (const char *[]){"ps", NULL}), 0);
    CHECK(access(sock, F_OK) != 0);
    CHECK(strstr(out, pc) == NULL);
    /* And trigger on a pid that serves nothing. */
    CHECK_EQ(
        run_cli(out, sizeof out, (const char *[]){"trigger", "--pid", pc, "--output", path, NULL}),
        1);
    CHECK(strstr(out, "no endpoint") != NULL);
}

/* A process that exits normally (returns from main) during a trace: the trace is stopped and
 * written at exit, and the reply names the file written (%p expanded). Before the fix the CLI said
 * "the process exited before the trace was written". An iteration trace still waiting for its
 * first step is cancelled, and says why. */
static void test_exit_normally(void) {
    target c;
    if (start_target(&c, 1, (const char *[]){"--return-after-ms", "700", NULL}) != 0) {
        CHECK(0);
        return;
    }
    char out[8192], pc[32], pattern[1200], path[1200], want[1300], sock[400];
    snprintf(pc, sizeof pc, "%ld", (long)c.pid);
    snprintf(pattern, sizeof pattern, "%s/exit_%%p.json", outdir);
    snprintf(path, sizeof path, "%s/exit_%s.json", outdir, pc);
    unlink(path);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pc, "--duration-ms", "5000", "--output",
                                      pattern, NULL}),
             0);
    snprintf(want, sizeof want, "%s: trace written to %s (", pc, path);
    if (strstr(out, want) == NULL) {
        fprintf(stderr, "exit: want \"%s\" in: %s\n", want, out);
        CHECK(0);
    }
    CHECK(strstr(out, "the process exited during the trace") != NULL);
    counts k = read_trace(path);
    CHECK(k.ok);
    CHECK(k.mm >= 1);
    CHECK_EQ(stop_target(&c), 0);
    snprintf(sock, sizeof sock, "%s/%s.sock", rtdir, pc);
    CHECK(access(sock, F_OK) != 0); /* removed at exit */

    if (start_target(&c, 1, (const char *[]){"--return-after-ms", "700", NULL}) != 0) {
        CHECK(0);
        return;
    }
    snprintf(pc, sizeof pc, "%ld", (long)c.pid);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pc, "--iterations", "2",
                                      "--start-iteration-roundup", "1000000", "--output", pattern,
                                      NULL}),
             1);
    CHECK(strstr(out, "the process exited before step 1000000 was reached") != NULL);
    CHECK_EQ(stop_target(&c), 0);
}

/* '%' in an output path: "%%" is one '%' (it was "c%%.json.json"), "%%p" is the text "%p" (it
 * counted as %p, so two processes wrote one file), and every reply names the file written, not
 * the pattern. */
static void test_percent_paths(target *a, target *b) {
    char out[8192], pa[32], pb[32], pattern[1200], path[1300], bad[1300], want[1400];
    snprintf(pa, sizeof pa, "%ld", (long)a->pid);
    snprintf(pb, sizeof pb, "%ld", (long)b->pid);

    snprintf(pattern, sizeof pattern, "%s/c%%%%.json", outdir);
    snprintf(path, sizeof path, "%s/c%%.json", outdir);
    snprintf(bad, sizeof bad, "%s/c%%%%.json.json", outdir);
    unlink(path);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pa, "--duration-ms", "100", "-o", pattern,
                                      NULL}),
             0);
    snprintf(want, sizeof want, "trace written to %s (", path);
    CHECK(strstr(out, want) != NULL);
    CHECK(read_trace(path).mm >= 1);
    CHECK(access(bad, F_OK) != 0);

    /* %p in the "done" line, and in --no-wait's line (the "ok" reply). */
    snprintf(pattern, sizeof pattern, "%s/b%%p.json", outdir);
    snprintf(path, sizeof path, "%s/b%s.json", outdir, pa);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pa, "--duration-ms", "100", "-o", pattern,
                                      NULL}),
             0);
    snprintf(want, sizeof want, "trace written to %s (", path);
    CHECK(strstr(out, want) != NULL);
    CHECK(read_trace(path).mm >= 1);
    snprintf(pattern, sizeof pattern, "%s/nw%%p.json", outdir);
    snprintf(path, sizeof path, "%s/nw%s.json", outdir, pa);
    unlink(path);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pa, "--duration-ms", "100", "--no-wait",
                                      "-o", pattern, NULL}),
             0);
    snprintf(want, sizeof want, "the process writes %s when done", path);
    CHECK(strstr(out, want) != NULL);
    for (int i = 0; i < 100 && access(path, F_OK) != 0; i++)
        usleep(50 * 1000);
    CHECK(read_trace(path).mm >= 1);
    usleep(200 * 1000); /* the endpoint goes back to idle after the write */

    /* "%%p" with --all: no process expands it to its pid, so each file gets the pid from the
     * CLI. */
    snprintf(pattern, sizeof pattern, "%s/all%%%%p.json", outdir);
    char fa[1300], fb[1300];
    snprintf(fa, sizeof fa, "%s/all%%p.%s.json", outdir, pa);
    snprintf(fb, sizeof fb, "%s/all%%p.%s.json", outdir, pb);
    CHECK_EQ(
        run_cli(out, sizeof out,
                (const char *[]){"trigger", "--all", "--duration-ms", "100", "-o", pattern, NULL}),
        0);
    CHECK(read_trace(fa).mm >= 1);
    CHECK(read_trace(fb).mm >= 1);
}

/* The flight recorder's window, written on request through the endpoint; a trace cannot start
 * beside the program's own session (busy); a process without a flight recorder says so. */
static void test_flight_dump(target *a) {
    target f;
    if (start_target(&f, 1, (const char *[]){"--flight", NULL}) != 0) {
        CHECK(0);
        return;
    }
    usleep(300 * 1000); /* some steps, so that chunks fill */
    char out[8192], pf[32], pa[32], path[1200];
    snprintf(pf, sizeof pf, "%ld", (long)f.pid);
    snprintf(pa, sizeof pa, "%ld", (long)a->pid);
    snprintf(path, sizeof path, "%s/flight.json", outdir);
    unlink(path);
    CHECK_EQ(
        run_cli(out, sizeof out,
                (const char *[]){"trigger", "--pid", pf, "--flight-dump", "--output", path, NULL}),
        0);
    counts c = read_trace(path);
    CHECK(c.ok);
    CHECK(c.mm >= 1);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pf, "--duration-ms", "50", "--output",
                                      path, NULL}),
             1);
    CHECK(strstr(out, "busy") != NULL);
    CHECK_EQ(
        run_cli(out, sizeof out,
                (const char *[]){"trigger", "--pid", pa, "--flight-dump", "--output", path, NULL}),
        1);
    CHECK(strstr(out, "no flight recorder") != NULL);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", pf, "--flight-dump", "--duration-ms", "5",
                                      "--output", path, NULL}),
             2);
    CHECK_EQ(stop_target(&f), 0);
}

/* The client interface: this process serves an endpoint with a client that wraps strobe's
 * session and counts the calls; a trigger from the CLI goes through it. */
static int calls[7];
static int c_prepare(void *ctx, const strobe_config *cfg) {
    (void)ctx;
    __atomic_add_fetch(&calls[1], 1, __ATOMIC_SEQ_CST);
    return strobe_prepare(cfg);
}
static int c_start(void *ctx) {
    (void)ctx;
    __atomic_add_fetch(&calls[2], 1, __ATOMIC_SEQ_CST);
    return strobe_start_prepared();
}
static int c_stop(void *ctx, strobe_result **out) {
    (void)ctx;
    __atomic_add_fetch(&calls[3], 1, __ATOMIC_SEQ_CST);
    return strobe_stop(out);
}
static int c_mem(void *ctx) {
    (void)ctx;
    __atomic_add_fetch(&calls[4], 1, __ATOMIC_SEQ_CST);
    return STROBE_ENOTSUP;
}
static int c_mem_stop(void *ctx) {
    (void)ctx;
    __atomic_add_fetch(&calls[5], 1, __ATOMIC_SEQ_CST);
    return STROBE_ENOTSUP;
}
static int c_mem_export(void *ctx, const char *path) {
    (void)ctx;
    (void)path;
    __atomic_add_fetch(&calls[6], 1, __ATOMIC_SEQ_CST);
    return STROBE_ENOTSUP;
}
static void c_init(void *ctx) {
    (void)ctx;
    __atomic_add_fetch(&calls[0], 1, __ATOMIC_SEQ_CST);
}

static void *busy_thread(void *arg) {
    int *stop = arg;
    while (!__atomic_load_n(stop, __ATOMIC_RELAXED)) {
        STROBE_OP("aten::mm");
        usleep(1000);
    }
    return NULL;
}

static void test_client_interface(void) {
    strobe_client_interface ci = {c_init, c_prepare,  c_start,     c_stop,
                                  c_mem,  c_mem_stop, c_mem_export};
    CHECK_EQ(strobe_ondemand_set_client(&ci, NULL), 0);
    strobe_client_interface broken = ci;
    broken.stop = NULL;
    CHECK_EQ(strobe_ondemand_set_client(&broken, NULL), STROBE_EINVAL);
    strobe_ondemand_options opt;
    strobe_ondemand_options_init(&opt);
    opt.output_dirs = outdir;
    CHECK_EQ(strobe_ondemand_start(&opt), 0);
    CHECK_EQ(strobe_ondemand_start(&opt), STROBE_EBUSY);
    char sock[400];
    CHECK_EQ(strobe_ondemand_socket_path(sock, sizeof sock), 0);
    struct stat sb;
    CHECK_EQ(stat(sock, &sb), 0);
    CHECK_EQ(sb.st_mode & 0777, 0600);

    int stop = 0;
    pthread_t th;
    pthread_create(&th, NULL, busy_thread, &stop);
    char out[8192], me[32], path[1200];
    snprintf(me, sizeof me, "%ld", (long)getpid());
    snprintf(path, sizeof path, "%s/client.json", outdir);
    unlink(path);
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", me, "--duration-ms", "200", "--output",
                                      path, NULL}),
             0);
    CHECK_EQ(__atomic_load_n(&calls[0], __ATOMIC_SEQ_CST), 1);
    CHECK_EQ(__atomic_load_n(&calls[1], __ATOMIC_SEQ_CST), 1);
    CHECK_EQ(__atomic_load_n(&calls[2], __ATOMIC_SEQ_CST), 1);
    CHECK_EQ(__atomic_load_n(&calls[3], __ATOMIC_SEQ_CST), 1);
    CHECK(read_trace(path).mm >= 1);
    /* The temp folder is not among this endpoint's folders (output_dirs replaces them). */
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"trigger", "--pid", me, "--duration-ms", "50", "--output",
                                      "/tmp/strobe-ondemand-client.json", NULL}),
             1);
    /* A memory profile the client cannot take is reported as such. */
    CHECK_EQ(run_cli(out, sizeof out,
                     (const char *[]){"memory-profile", "--pid", me, "--duration-ms", "50",
                                      "--output", path, NULL}),
             1);
    CHECK_EQ(__atomic_load_n(&calls[4], __ATOMIC_SEQ_CST), 1);
    CHECK(strstr(out, "not supported") != NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(th, NULL);
    CHECK_EQ(strobe_ondemand_stop(), 0);
    CHECK_EQ(strobe_ondemand_stop(), STROBE_ENOSESSION);
    CHECK(access(sock, F_OK) != 0);
    CHECK_EQ(strobe_ondemand_set_client(NULL, NULL), 0);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_ondemand STROBE_CLI ONDEMAND_TARGET\n");
        return 2;
    }
    /* Absolute: the targets run in another folder. */
    static char cli_abs[4096], target_abs[4096];
    if (realpath(argv[1], cli_abs) == NULL || realpath(argv[2], target_abs) == NULL) {
        perror("realpath");
        return 2;
    }
    cli = cli_abs;
    target_bin = target_abs;
    signal(SIGPIPE, SIG_IGN);
    snprintf(rtdir, sizeof rtdir, "/tmp/strobe-od-test.XXXXXX");
    if (mkdtemp(rtdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    setenv("STROBE_RUNTIME_DIR", rtdir, 1);
    snprintf(outdir, sizeof outdir, "%s/ondemand", STROBE_TEST_OUT_DIR);
    char clean[1200];
    snprintf(clean, sizeof clean, "rm -rf '%s'", outdir);
    if (system(clean) != 0) fprintf(stderr, "could not clean %s\n", outdir);
    mkdir(outdir, 0755);
    if (chdir(outdir) != 0) {
        perror(outdir);
        return 1;
    }

    target a, b;
    if (start_target(&a, 1, NULL) != 0 || start_target(&b, 0, NULL) != 0) {
        CHECK(0);
        return check_result();
    }
    test_idle(&a);
    test_modes(&a, &b);
    test_busy_and_timeout(&a);
    test_paths(&a);
    test_malformed(&a);
    test_requester_leaves(&a);
    test_other_user(&a);
    test_flight_dump(&a);
    test_percent_paths(&a, &b);
    CHECK_EQ(stop_target(&a), 0);
    CHECK_EQ(stop_target(&b), 0);
    test_exit_mid_trace();
    test_exit_normally();
    test_client_interface();

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", rtdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", rtdir);
    /* Files that are not traces (stop files are gone; links removed above). */
    return check_result();
}
