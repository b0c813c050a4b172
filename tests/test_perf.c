/* test_perf.c: the perf_event module (src/core/perf.c) on its own: the event table (hardware
 * events included, which this VM cannot count), list parsing, probing, a thread's group and its
 * reads, and the failure paths (an event the machine lacks, a bad descriptor). */
#include <errno.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include "check.h"
#include "core/perf.h"
#include "strobe/error.h"

static void test_table(void) {
    static const struct {
        const char *name;
        uint32_t type;
        uint64_t config;
    } want[] = {
        {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
        {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
        {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
        {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
        {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
        {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
        {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
        {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
        {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
        {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
        {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
        {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        strobe__perf_event ev;
        CHECK_EQ(strobe__perf_lookup(want[i].name, &ev), 0);
        CHECK_STR(ev.name, want[i].name);
        CHECK_EQ(ev.type, want[i].type);
        CHECK_EQ(ev.config, want[i].config);
    }
    strobe__perf_event ev;
    CHECK_EQ(strobe__perf_lookup("Cycles", &ev), STROBE__PERF_UNKNOWN);
    CHECK_EQ(strobe__perf_lookup("", &ev), STROBE__PERF_UNKNOWN);
}

static void test_parse(void) {
    strobe__perf_set set;
    char err[512];
    CHECK_EQ(strobe__perf_parse(" cycles , instructions,task-clock ", &set, err, sizeof err), 0);
    CHECK_EQ(set.n, 3);
    CHECK_STR(set.ev[0].name, "cycles");
    CHECK_STR(set.ev[1].name, "instructions");
    CHECK_STR(set.ev[2].name, "task-clock");
    CHECK_EQ(strobe__perf_parse("cycles,cycles,page-faults,cycles", &set, err, sizeof err), 0);
    CHECK_EQ(set.n, 2);
    CHECK_EQ(strobe__perf_parse(NULL, &set, err, sizeof err), 0);
    CHECK_EQ(set.n, 0);
    CHECK_EQ(strobe__perf_parse("  ", &set, err, sizeof err), 0);
    CHECK_EQ(set.n, 0);

    err[0] = '\0';
    CHECK_EQ(strobe__perf_parse("cycles,bogus", &set, err, sizeof err), STROBE_EINVAL);
    CHECK(strstr(err, "\"bogus\"") != NULL);
    CHECK_EQ(strobe__perf_parse("cycles,,task-clock", &set, err, sizeof err), STROBE_EINVAL);
    CHECK(strstr(err, "empty") != NULL);
    CHECK_EQ(strobe__perf_parse("cycles,", &set, err, sizeof err), STROBE_EINVAL);
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK_EQ(strobe__perf_parse(longname, &set, err, sizeof err), STROBE_EINVAL);
    CHECK_EQ(strobe__perf_parse("cycles,instructions,cache-references,cache-misses,branches,"
                                "branch-misses,bus-cycles,ref-cycles,task-clock",
                                &set, err, sizeof err),
             STROBE_EINVAL);
    CHECK(strstr(err, "more than") != NULL);
}

/* Software events where the kernel allows them; hardware ones either open or fail with an errno,
 * never anything else. */
static void test_open_read(void) {
    strobe__perf_event hw;
    CHECK_EQ(strobe__perf_lookup("cycles", &hw), 0);
    int rc = strobe__perf_probe(&hw);
    printf("probe cycles: %s\n", rc == 0 ? "counts" : strerror(errno));
    CHECK(rc == 0 || rc == STROBE_ESYS);

    strobe__perf_set set;
    char err[256];
    CHECK_EQ(strobe__perf_parse("task-clock,page-faults", &set, err, sizeof err), 0);
    int fds[STROBE__PERF_MAX];
    rc = strobe__perf_open_thread(&set, fds);
    if (rc != 0) {
        printf("SKIP software perf events: %s\n", strerror(errno));
        CHECK_EQ(rc, STROBE_ESYS);
        for (int i = 0; i < STROBE__PERF_MAX; i++)
            CHECK_EQ(fds[i], -1);
    } else {
        CHECK(fds[0] >= 0 && fds[1] >= 0);
        uint64_t a[2], b[2];
        CHECK_EQ(strobe__perf_read(fds[0], 2, a), 0);
        /* Burn some CPU and touch fresh pages: task-clock and page-faults must grow. */
        volatile uint64_t x = 0;
        for (int i = 0; i < 2000000; i++)
            x = x + (uint64_t)i;
        CHECK(x > 0);
        size_t sz = (size_t)8 << 20;
        /* Fresh anonymous pages (malloc may hand back pages already touched, as the sanitizers'
         * allocators do): the first write to each faults. */
        char *mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(mem != MAP_FAILED);
        for (size_t i = 0; i < sz; i += 4096)
            mem[i] = 1;
        CHECK_EQ(strobe__perf_read(fds[0], 2, b), 0);
        munmap(mem, sz);
        CHECK(b[0] > a[0]);
        CHECK(b[1] > a[1]);
        /* A read asking for a different count than the group has fails and zeroes. */
        uint64_t c[3] = {7, 7, 7};
        CHECK_EQ(strobe__perf_read(fds[0], 3, c), STROBE_EIO);
        CHECK(c[0] == 0 && c[1] == 0 && c[2] == 0);
        strobe__perf_close(fds, 2);
        CHECK(fds[0] == -1 && fds[1] == -1);
    }

    /* A group with an event the machine lacks fails as a whole and leaves nothing open. */
    CHECK_EQ(strobe__perf_parse("task-clock,cycles", &set, err, sizeof err), 0);
    rc = strobe__perf_open_thread(&set, fds);
    if (rc != 0) {
        /* The reason survives closing what had opened: it goes into the session's warning. */
        CHECK_EQ(rc, STROBE_ESYS);
        CHECK(errno == ENOENT || errno == EACCES || errno == EPERM || errno == EOPNOTSUPP ||
              errno == EINVAL);
        for (int i = 0; i < STROBE__PERF_MAX; i++)
            CHECK_EQ(fds[i], -1);
    } else {
        strobe__perf_close(fds, set.n);
    }

    uint64_t v[2] = {5, 5};
    CHECK_EQ(strobe__perf_read(-1, 2, v), STROBE_EIO);
    CHECK(v[0] == 0 && v[1] == 0);
}

int main(void) {
    test_table();
    test_parse();
    test_open_read();
    return check_result();
}
