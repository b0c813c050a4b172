/* test_ondemand_proto.c: the on-demand request parser (src/util/od_proto.c) on good, bad and
 * random input (a bounded fuzz: mutations of valid requests, and round trips of random requests
 * through the formatter), and the output-path policy (src/ondemand/outpath.c) on real folders and
 * links. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "strobe/error.h"
#include "ondemand/od_internal.h"
#include "util/od_proto.h"

static int parse(const char *line, strobe__od_request *rq, char *err) {
    return strobe__od_parse_request(line, strlen(line), rq, err, 256);
}

static void test_good(void) {
    strobe__od_request rq;
    char err[256];
    CHECK_EQ(parse("status\n", &rq, err), 0);
    CHECK_EQ(rq.verb, STROBE__OD_STATUS);
    CHECK_EQ(parse("trigger output=/tmp/a%20b.json duration_ms=250 flags=record_shapes,with_stack "
                   "activities=cpu,cuda",
                   &rq, err),
             0);
    CHECK_EQ(rq.verb, STROBE__OD_TRIGGER);
    CHECK(strcmp(rq.output, "/tmp/a b.json") == 0);
    CHECK_EQ(rq.duration_ms, 250);
    CHECK_EQ(rq.flags, STROBE__OD_RECORD_SHAPES | STROBE__OD_WITH_STACK);
    CHECK_EQ(rq.activities, 3);
    CHECK_EQ(parse("trigger output=/x iterations=5 roundup=10 timeout_ms=9\r\n", &rq, err), 0);
    CHECK_EQ(rq.iterations, 5);
    CHECK_EQ(rq.roundup, 10);
    CHECK_EQ(rq.timeout_ms, 9);
    CHECK_EQ(parse("memory-profile output=/m.json duration_ms=1", &rq, err), 0);
    CHECK_EQ(rq.verb, STROBE__OD_MEMORY);
    CHECK_EQ(parse("dump output=/d.json", &rq, err), 0);
    CHECK_EQ(rq.verb, STROBE__OD_DUMP);
}

static void test_bad(void) {
    static const char *bad[] = {
        "",
        "\n",
        "nonsense",
        "status extra",
        "status output=/x",
        "trigger",
        "trigger output=/x",
        "trigger duration_ms=5",
        "trigger output=relative duration_ms=5",
        "trigger output=/x duration_ms=5 iterations=3",
        "trigger output=/x duration_ms=5 roundup=2",
        "trigger output=/x duration_ms=0",
        "trigger output=/x duration_ms=-1",
        "trigger output=/x duration_ms=1x",
        "trigger output=/x duration_ms=99999999999999999999999",
        "trigger output=/x duration_ms=86400001",
        "trigger output=/x duration_ms=",
        "trigger output=/x duration_ms=5 duration_ms=6",
        "trigger output=/x  duration_ms=5",
        "trigger output=/x duration_ms=5 ",
        " trigger output=/x duration_ms=5",
        "trigger output=/x duration_ms=5 flags=bogus",
        "trigger output=/x duration_ms=5 flags=record_shapes,",
        "trigger output=/x duration_ms=5 activities=tpu",
        "trigger output=/x duration_ms=5 color=red",
        "trigger output=/x duration_ms=5 =5",
        "trigger output=/x duration_ms=5 novalue",
        "trigger output=/a%zz duration_ms=5",
        "trigger output=/a%0 duration_ms=5",
        "trigger output=/a%00b duration_ms=5",
        "trigger output=/a%",
        "memory-profile output=/x",
        "memory-profile duration_ms=5",
        "memory-profile output=/x duration_ms=5 iterations=2",
        "dump",
        "dump output=/x duration_ms=4",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        strobe__od_request rq;
        char err[256];
        memset(err, 'x', sizeof err);
        int rc = parse(bad[i], &rq, err);
        if (rc != STROBE_EFORMAT) fprintf(stderr, "accepted: '%s'\n", bad[i]);
        CHECK_EQ(rc, STROBE_EFORMAT);
        CHECK(memchr(err, '\0', sizeof err) != NULL && err[0] != '\0');
    }
    /* A NUL inside, a raw byte above 0x7e, and a line of the maximum length. */
    strobe__od_request rq;
    char err[256];
    CHECK_EQ(strobe__od_parse_request("status\0x", 8, &rq, err, sizeof err), STROBE_EFORMAT);
    CHECK_EQ(parse("trigger output=/\xc3\xa9 duration_ms=5", &rq, err), STROBE_EFORMAT);
    char *big = malloc(STROBE__OD_MAX_LINE + 32);
    memcpy(big, "trigger output=/", 16);
    memset(big + 16, 'a', STROBE__OD_MAX_LINE);
    big[STROBE__OD_MAX_LINE + 5] = '\0';
    CHECK_EQ(parse(big, &rq, err), STROBE_EFORMAT);
    free(big);
    CHECK_EQ(strobe__od_parse_request(NULL, 0, &rq, err, sizeof err), STROBE_EFORMAT);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random requests, formatted and parsed back, come back equal: every byte of a path survives. */
static void test_roundtrip(void) {
    for (int it = 0; it < 20000; it++) {
        strobe__od_request a, b;
        memset(&a, 0, sizeof a);
        a.verb = (strobe__od_verb)(1 + next() % 4);
        a.roundup = 1;
        if (a.verb != STROBE__OD_STATUS) {
            size_t n = 1 + next() % 300;
            a.output[0] = '/';
            for (size_t i = 1; i < n; i++)
                a.output[i] = (char)(1 + next() % 255);
            a.output[n] = '\0';
        }
        if (a.verb == STROBE__OD_TRIGGER) {
            if (next() & 1) {
                a.duration_ms = 1 + (int64_t)(next() % STROBE__OD_MAX_DURATION_MS);
            } else {
                a.iterations = 1 + (int64_t)(next() % STROBE__OD_MAX_ITERATIONS);
                a.roundup = 1 + (int64_t)(next() % 100);
                if (next() & 1) a.timeout_ms = 1 + (int64_t)(next() % 100000);
            }
            a.flags = (uint32_t)(next() & 31);
            a.activities = (uint32_t)(next() % 4);
        } else if (a.verb == STROBE__OD_MEMORY) {
            a.duration_ms = 1 + (int64_t)(next() % 1000);
        }
        char line[STROBE__OD_MAX_LINE + 1], err[256];
        int len = strobe__od_format_request(&a, line, sizeof line);
        CHECK(len > 0);
        if (len <= 0) continue;
        int rc = strobe__od_parse_request(line, (size_t)len, &b, err, sizeof err);
        if (rc != 0) fprintf(stderr, "round trip failed: %s: %s", err, line);
        CHECK_EQ(rc, 0);
        CHECK_EQ(b.verb, a.verb);
        CHECK(strcmp(a.output, b.output) == 0);
        CHECK_EQ(b.duration_ms, a.duration_ms);
        CHECK_EQ(b.iterations, a.iterations);
        CHECK_EQ(b.roundup, a.roundup);
        CHECK_EQ(b.timeout_ms, a.timeout_ms);
        CHECK_EQ(b.flags, a.flags);
        CHECK_EQ(b.activities, a.activities);
        if (check__failures > 20) return;
    }
}

/* Mutations of valid lines: the parser answers 0 or -1 and, when it accepts, what it returns
 * obeys the protocol's rules. ASan and UBSan (the sanitizer suite) catch what a crash would. */
static void test_fuzz(void) {
    static const char *seeds[] = {
        "status",
        ("trigger output=/tmp/t%20x.json duration_ms=500 flags=record_shapes,profile_memory,"
         "with_stack,with_flops,with_modules activities=cpu,cuda"),
        "trigger output=/tmp/t.json iterations=3 roundup=10 timeout_ms=1000",
        "memory-profile output=/tmp/m.json duration_ms=100",
        "dump output=/tmp/d.pftrace",
    };
    char buf[STROBE__OD_MAX_LINE + 64];
    int accepted = 0;
    for (int it = 0; it < 300000; it++) {
        const char *s = seeds[next() % 5];
        size_t n = strlen(s);
        memcpy(buf, s, n);
        int muts = 1 + (int)(next() % 6);
        for (int m = 0; m < muts; m++) {
            size_t pos = n ? next() % n : 0;
            switch (next() % 5) {
            case 0:
                buf[pos] = (char)next();
                break;
            case 1:
                buf[pos] ^= (char)(1u << (next() % 8));
                break;
            case 2:
                if (n > 0) {
                    memmove(buf + pos, buf + pos + 1, n - pos - 1);
                    n--;
                }
                break;
            case 3:
                if (n + 1 < sizeof buf) {
                    memmove(buf + pos + 1, buf + pos, n - pos);
                    buf[pos] = " =%,/0\n"[next() % 7];
                    n++;
                }
                break;
            case 4:
                n = pos;
                break;
            }
        }
        strobe__od_request rq;
        char err[128];
        int rc = strobe__od_parse_request(buf, n, &rq, err, sizeof err);
        CHECK(rc == 0 || rc == STROBE_EFORMAT);
        CHECK(memchr(err, '\0', sizeof err) != NULL);
        if (rc == 0) {
            accepted++;
            CHECK(rq.verb >= STROBE__OD_STATUS && rq.verb <= STROBE__OD_DUMP);
            if (rq.verb != STROBE__OD_STATUS) CHECK(rq.output[0] == '/');
            if (rq.verb == STROBE__OD_TRIGGER) {
                CHECK((rq.duration_ms > 0) != (rq.iterations > 0));
                CHECK(rq.roundup >= 1);
            }
            CHECK(rq.duration_ms >= 0 && rq.duration_ms <= STROBE__OD_MAX_DURATION_MS);
        } else {
            CHECK(err[0] != '\0');
        }
        if (check__failures > 20) return;
    }
    /* Some mutations must keep a request valid (a test that can only reject proves little). */
    CHECK(accepted > 100);
}

static void test_get(void) {
    const char *line = "done path=/tmp/a%20b.json events=12 note=x%3Dy\n";
    char v[64];
    CHECK_EQ(strobe__od_get(line, strlen(line), "path", v, sizeof v), 13);
    CHECK(strcmp(v, "/tmp/a b.json") == 0);
    CHECK_EQ(strobe__od_get(line, strlen(line), "events", v, sizeof v), 2);
    CHECK_EQ(strobe__od_get(line, strlen(line), "note", v, sizeof v), 3);
    CHECK(strcmp(v, "x=y") == 0);
    CHECK_EQ(strobe__od_get(line, strlen(line), "pat", v, sizeof v), STROBE_EINVAL);
    CHECK_EQ(strobe__od_get(line, strlen(line), "path", v, 5), STROBE_ERANGE);
    CHECK_EQ(strobe__od_word0(line, strlen(line), v, sizeof v), 0);
    CHECK(strcmp(v, "done") == 0);
}

/* ---- output paths ---------------------------------------------------------------------------- */

static int check_path(const char *path, const char *roots, char *err) {
    int fd;
    char save[PATH_MAX + 64];
    int rc = strobe__od_check_output(path, roots, &fd, save, sizeof save, NULL, 0, err, 512);
    if (rc == 0) {
        CHECK(fd >= 0);
        CHECK(strncmp(save, "/proc/self/fd/", 14) == 0);
        close(fd);
    }
    return rc;
}

static void test_outpath(void) {
    char base[] = "/tmp/strobe_od_pathXXXXXX";
    if (mkdtemp(base) == NULL) {
        CHECK(0);
        return;
    }
    char allowed[PATH_MAX], outside[PATH_MAX], p[PATH_MAX + 100], roots[PATH_MAX + 40], err[512];
    snprintf(allowed, sizeof allowed, "%s/allowed", base);
    snprintf(outside, sizeof outside, "%s/outside", base);
    CHECK_EQ(mkdir(allowed, 0700), 0);
    CHECK_EQ(mkdir(outside, 0700), 0);
    snprintf(roots, sizeof roots, "%s", allowed);

    snprintf(p, sizeof p, "%s/t.json", allowed);
    CHECK_EQ(check_path(p, roots, err), 0);
    /* An existing regular file may be replaced. */
    int f = open(p, O_CREAT | O_WRONLY, 0600);
    CHECK(f >= 0);
    close(f);
    CHECK_EQ(check_path(p, roots, err), 0);
    /* Outside the allowed folder. */
    snprintf(p, sizeof p, "%s/t.json", outside);
    CHECK_EQ(check_path(p, roots, err), STROBE_EINVAL);
    CHECK(strstr(err, "outside") != NULL);
    /* Climbing out with "..", even where it would land inside. */
    snprintf(p, sizeof p, "%s/../allowed/t.json", allowed);
    CHECK_EQ(check_path(p, roots, err), STROBE_EINVAL);
    CHECK(strstr(err, "..") != NULL);
    /* A link in the allowed folder that points outside. */
    char link[PATH_MAX + 20];
    snprintf(link, sizeof link, "%s/escape", allowed);
    CHECK_EQ(symlink(outside, link), 0);
    snprintf(p, sizeof p, "%s/escape/t.json", allowed);
    CHECK_EQ(check_path(p, roots, err), STROBE_EINVAL);
    /* A link outside that points inside resolves inside: allowed. */
    snprintf(link, sizeof link, "%s/in", outside);
    CHECK_EQ(symlink(allowed, link), 0);
    snprintf(p, sizeof p, "%s/in/t.json", outside);
    CHECK_EQ(check_path(p, roots, err), 0);
    /* The file itself a link (to anything): refused. */
    snprintf(link, sizeof link, "%s/victim.json", allowed);
    char target[PATH_MAX + 20];
    snprintf(target, sizeof target, "%s/x.json", outside);
    CHECK_EQ(symlink(target, link), 0);
    CHECK_EQ(check_path(link, roots, err), STROBE_EINVAL);
    CHECK(strstr(err, "link") != NULL);
    /* A folder as the name, a missing folder, a relative path, an empty name. */
    snprintf(p, sizeof p, "%s/", allowed);
    CHECK_EQ(check_path(p, roots, err), STROBE_EINVAL);
    snprintf(p, sizeof p, "%s/missing/t.json", allowed);
    CHECK_EQ(check_path(p, roots, err), STROBE_ESYS);
    CHECK_EQ(check_path("t.json", roots, err), STROBE_EINVAL);
    CHECK_EQ(check_path("", roots, err), STROBE_EINVAL);
    /* Several roots, and a root that does not exist, are fine. */
    snprintf(roots, sizeof roots, "/nonexistent-strobe:%s", outside);
    snprintf(p, sizeof p, "%s/t.json", outside);
    CHECK_EQ(check_path(p, roots, err), 0);
    /* The defaults: the temp folder and the working directory. */
    char cwd[PATH_MAX];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_EQ(chdir(outside), 0);
    snprintf(p, sizeof p, "%s/t.json", outside);
    CHECK_EQ(check_path(p, NULL, err), 0);
    CHECK_EQ(check_path("/proc/self/t.json", NULL, err), -1);
    CHECK_EQ(chdir(cwd), 0);
    /* The working directory counts when it is not under the temp folder anyway (the build
     * folder usually is not). */
    char od[PATH_MAX], other[PATH_MAX + 20], real[PATH_MAX];
    snprintf(od, sizeof od, "%s/od_cwd", STROBE_TEST_OUT_DIR);
    snprintf(other, sizeof other, "%s/od_other", STROBE_TEST_OUT_DIR);
    mkdir(od, 0700);
    mkdir(other, 0700);
    const char *tmpdir = getenv("TMPDIR");
    if (realpath(od, real) != NULL && strncmp(real, "/tmp/", 5) != 0 &&
        (tmpdir == NULL || strncmp(real, tmpdir, strlen(tmpdir)) != 0)) {
        CHECK_EQ(chdir(od), 0);
        snprintf(p, sizeof p, "%s/t.json", od);
        CHECK_EQ(check_path(p, NULL, err), 0);
        snprintf(p, sizeof p, "%s/t.json", other);
        CHECK_EQ(check_path(p, NULL, err), -1);
        CHECK_EQ(chdir(cwd), 0);
    } else {
        printf(
            "note: the build folder is under the temp folder: working-directory check skipped\n");
    }

    char cmd[PATH_MAX + 20];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK_EQ(system(cmd), 0);
}

/* The escapes in an output path (%p, %r, %%), and the expanded name the requester is told. Before
 * the fix, "%%" copied the rest of the pattern: "c%%.json" became "c%%.json.json". */
static void test_expand(void) {
    char base[] = "/tmp/strobe_od_expandXXXXXX";
    if (mkdtemp(base) == NULL) {
        CHECK(0);
        return;
    }
    static const struct {
        const char *name, *rank, *want; /* want: "PID" stands for this process's pid */
    } cases[] = {
        {"c%%.json", NULL, "c%.json"},
        {"%%", NULL, "%"},
        {"a%%%%b.json", NULL, "a%%b.json"},
        {"b%p.json", NULL, "bPID.json"},
        {"b%%p.json", NULL, "b%p.json"},
        {"b%%%p.json", NULL, "b%PID.json"},
        {"t_%r.json", "3", "t_3.json"},
        {"t_%r.json", NULL, "t_0.json"},
        {"t_%r.json", "../x", "t_0.json"},
        {"x%q%.json%", NULL, "x%q%.json%"},
        {"%p_%r_%%.json.gz", "12", "PID_12_%.json.gz"},
    };
    char pid[32];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].rank)
            setenv("RANK", cases[i].rank, 1);
        else
            unsetenv("RANK");
        char path[PATH_MAX], want[PATH_MAX], got[PATH_MAX], save[PATH_MAX + 64], err[512];
        snprintf(path, sizeof path, "%s/%s", base, cases[i].name);
        int w = snprintf(want, sizeof want, "%s/", base);
        for (const char *c = cases[i].want; *c && w < (int)sizeof want - 40;) {
            if (strncmp(c, "PID", 3) == 0) {
                w += snprintf(want + w, sizeof want - (size_t)w, "%s", pid);
                c += 3;
            } else {
                want[w++] = *c++;
            }
        }
        want[w] = '\0';
        int fd = -1;
        int rc = strobe__od_check_output(path, base, &fd, save, sizeof save, got, sizeof got, err,
                                         sizeof err);
        CHECK_EQ(rc, 0);
        if (rc != 0) {
            fprintf(stderr, "  %s: %s\n", path, err);
            continue;
        }
        close(fd);
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "  expand %s: got %s, want %s\n", cases[i].name, got, want);
            CHECK(0);
        }
        /* The descriptor path reaches the same file name. */
        const char *slash = strrchr(want, '/');
        size_t sl = strlen(save), bl = strlen(slash);
        CHECK(sl >= bl && strcmp(save + sl - bl, slash) == 0);
    }
    unsetenv("RANK");
    /* An expansion that does not fit is refused, not cut. */
    char longp[PATH_MAX], got[8], save[PATH_MAX + 64], err[512];
    snprintf(longp, sizeof longp, "%s/t.json", base);
    int fd = -1;
    CHECK_EQ(strobe__od_check_output(longp, base, &fd, save, sizeof save, got, sizeof got, err,
                                     sizeof err),
             STROBE_ERANGE);
    CHECK_EQ(fd, -1);
    char cmd[PATH_MAX + 20];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK_EQ(system(cmd), 0);
}

int main(void) {
    test_expand();
    test_good();
    test_bad();
    test_get();
    test_roundtrip();
    test_fuzz();
    test_outpath();
    return check_result();
}
