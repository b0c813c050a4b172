/* test_cli_summary.c: `strobe summary`, `strobe kernels` and `strobe stacks` on hand-made traces
 * (tests/cli/), whose expected numbers are worked out below. The subcommands are called in
 * process with stdout redirected to a temporary file.
 *
 * tests/cli/summary_basic.json (times in us; one CPU thread 1/1, device 0 streams 7 and 8):
 *   outer (user_annotation)   [0, 100)   ext 1
 *     aten::linear #1         [10, 60)   ext 2, Input Dims [[2,3],[3]], flops 2e6
 *       aten::addmm #1        [15, 45)   ext 3, Input Dims [[2, 3]], flops 1e6
 *         cudaLaunchKernel    [20, 25)   correlation 100
 *       cudaLaunchKernel      [50, 54)   correlation 101
 *     aten::linear #2         [70, 90)   ext 4, Input Dims [[4, 3], [3]]
 *       py (python_function)  [72, 82)   not a row: transparent for nesting
 *         aten::addmm #2      [74, 80.5) ext 5, Input Dims [[4, 3]]
 *   [memory] +1024 CPU at 16 (in addmm #1), +4096 device at 12 (in linear #1 directly),
 *            -512 CPU at 75 (in addmm #2)
 *   k_gemm [30, 38) corr 100 -> runtime at 20 -> addmm #1
 *   k_bias [60, 62) corr 101 -> runtime at 50 -> linear #1
 *   k_gemm [80, 86) corr 999: no runtime -> External id 5 -> addmm #2
 *   Memcpy [95, 96) corr 998: no runtime -> External id 1 -> outer
 *   k_orphan [96, 97) linked to nothing; k_side [31, 35) on stream 8, linked to nothing
 *
 * CPU total: outer 100, linear 50 + 20 = 70, addmm 30 + 6.5 = 36.5, cudaLaunchKernel 9.
 * Self CPU: outer 100 - 50 - 20 = 30; linear (50 - 30 - 4) + (20 - 6.5) = 29.5;
 *   addmm (30 - 5) + 6.5 = 31.5; cudaLaunchKernel 9. Total 100.
 * Self CUDA: outer 1 (memcpy), linear 2, addmm 8 + 6 = 14 (17 linked).
 * CUDA total: outer 8 + 2 + 6 + 1 = 17; linear (8 + 2) + 6 = 16; addmm 14.
 * Device rows (torch lists every kernel, copy and memset as a row with no CPU time): k_gemm 2
 *   calls 14, k_side 4, k_bias 2, Memcpy 1, k_orphan 1; the device total is theirs, 22 (the
 *   orphan and k_side included), and Self CUDA % is of 22: addmm 14/22 = 63.64%.
 * CPU Mem: addmm 1024 - 512 = 512 (self too); linear and outer 512 (self 0).
 * CUDA Mem: linear 4096 (self too), outer 4096.
 * FLOPs: smallest non-zero 1e6 -> MFLOPs: linear 2.000, addmm 1.000.
 * Kernels: k_gemm 2 calls 14 (6..8), k_side 4, k_bias 2, k_orphan 1; all kernels 21.
 * Stream 7 busy: 8 + 2 + 6 + 1 + 1 = 18 over [30, 97): idle 49. Stream 8: busy 4, span 4.
 *   Device 0: [31, 35) lies inside [30, 38): busy 18, span 67.
 * Stacks (self CPU, rounded to the nearest us): outer 30, outer;aten::linear 29.5 -> 30,
 *   ...;aten::addmm 31.5 -> 32, ...;aten::addmm;cudaLaunchKernel 5, ...;linear;cudaLaunchKernel 4.
 *
 * tests/cli/stacks_oldschema.json (2021 schema: cat Operator/Runtime/Kernel, string tids):
 *   A [1000, 1010) with Call stack "inner.py(2): f;outer.py(1): <module>" (innermost first)
 *     B [1002, 1006)
 *       cudaLaunchKernel [1003, 1004) correlation 50 -> kern (3 us)
 *   kern2 (2 us) correlation 51 has no runtime: "external id" 1 -> A.
 *   [memory] +100 at 1003 on the numeric tid 5: the ops are on the string tid "5" -> B.
 * Self CPU: A 6, B 3, cudaLaunchKernel 1. Self CUDA: A 2, B 3; CUDA total A 5, B 3. Device
 *   rows kern 3 and kern2 2: device total 5.
 *
 * perf_trace() (written by the test into the test output directory; cpu_op on thread 1/1, times
 * in us, args "Module Hierarchy", "task-clock" tc, "page-faults" pf):
 *   outer (user_annotation)  [0, 100)                  tc  800  pf 10
 *     aten::linear           [10, 50)   mlp.fc1        tc  400  pf  4
 *       aten::mm             [15, 30)   mlp.fc1        tc  150  pf  2
 *       aten::mm             [32, 45)   mlp.fc1        tc  130  pf  1
 *     aten::linear           [60, 90)   mlp.fc2        tc  250  pf  1
 *       aten::mm             [62, 88)   mlp.fc2        tc  200  (no pf: 0)
 *   aten::mm                 [110, 120) (no module)    tc  700  pf  7
 * By name: outer total 100, self 30, tc 800 (self 800 - 400 - 250 = 150), pf 10 (self 5);
 *   aten::linear 2 calls, total 70, self 12 + 4 = 16, tc 650 (self 120 + 50 = 170), pf 5 (self 2);
 *   aten::mm 4 calls, total 64 = self, tc 1180 = self, pf 10 = self. Self CPU total 110.
 * By module: outer/"" 100; linear/fc1 40 (self 12, tc 400 self 120, pf 4 self 1); linear/fc2 30
 *   (self 4, tc 250 self 50, pf 1 self 1); mm/fc1 2 calls 28 (tc 280, pf 3); mm/fc2 26 (tc 200,
 *   pf 0); mm/"" 10 (tc 700, pf 7).
 * Orders: cpu_time_total outer, linear, mm; perf:task-clock mm 1180, outer 800, linear 650;
 *   self_perf:task-clock mm 1180, linear 170, outer 150; perf:page-faults mm 10, outer 10 (a tie:
 *   by name), linear 5; self_perf:page-faults mm 10, outer 5, linear 2.
 *
 * Traces test_devices() writes (times in us):
 *   MTIA: aten::add (cpu_op) [0, 10) ext 1; runFunction (mtia_runtime) [2, 5) correlation 7;
 *     add_kernel (mtia_ccp_events, device 0) [6, 10) correlation 7 -> runFunction -> aten::add.
 *     Self CPU: aten::add 10 - 3 = 7, runFunction 3 (total 10). MTIA: aten::add's self and
 *     total 4 (100%); add_kernel a row of its own: no CPU time, Self MTIA 4; MTIA total 4.
 *   XPU: the same with xpu_runtime and kernel: the columns say XPU; privateuse1_runtime:
 *     PRIVATEUSEONE; hpu_op as the device work: HPU.
 *   Overlaps (thread 1/1), nested as torch nests them (a child lies whole inside its parent):
 *     ProfilerStep#5 (user_annotation) [0, 100)
 *       aten::mm [10, 95)
 *         aten::is_leaf [50, 51)             left out by torch: no row, takes nothing from mm
 *     c10d::allgather_ [95, 200)             ends after ProfilerStep#5: not its child
 *       ProfilerStep#6 [100, 180)
 *     bad (cpu_op) with "ts": "x"           malformed: skipped, and counted on stderr
 *     ProfilerStep* (both steps): 2 calls, total 180, self (100 - 85) + 80 = 95;
 *     aten::mm 85 = self; c10d::allgather_ total 105, self 105 - 80 = 25. Self total 205. (The
 *     model nests allgather_ under ProfilerStep#5, and taking it from there, as the previous
 *     rule did, made ProfilerStep#5's self 100 - 85 - 105 < 0.)
 *   Siblings that overlap: a [0, 10) with b [0, 8) and c [5, 10) (c ends after b: a child of a):
 *     torch's self of a is 10 - 8 - 5 = -3, shown as 0; b 8 and c 5.
 *   An only child of its parent's name is merged into it (torch's _remove_dup_nodes):
 *     aten::div [0, 10), its only child aten::div [1, 9), whose children aten::mul [2, 4) and
 *     aten::div [5, 6) (two children: not merged). aten::div: 2 calls (the outer and the
 *     innermost), total 11, self (10 - 2 - 1) + 1 = 8; aten::mul 2. A kernel k [20, 23) of
 *     "External id" 9 (aten::mul's): mul's self and total CUDA 3, aten::div's total 3 (once,
 *     not again for the merged one on the way up), self 0; k a device row of 3.
 *   Legacy (torch.autograd.profiler's export: a bare array, pid "CPU functions", no "cat"):
 *     aten::zeros [229, 280) with aten::empty [247, 251) inside: zeros self 47, empty 4. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"
#include "common.h"

static char dir[4096];

/* Runs a subcommand with stdout in a temporary file. @return its output (malloc'ed). */
static char *run(int (*cmd)(int, char **), int *rc, const char *const *args) {
    char *argv[16];
    int argc = 0;
    while (args[argc] && argc < 15) {
        argv[argc] = (char *)args[argc];
        argc++;
    }
    argv[argc] = NULL;
    FILE *tmp = tmpfile();
    REQUIRE(tmp != NULL);
    fflush(stdout);
    int saved = dup(1);
    REQUIRE(saved >= 0 && dup2(fileno(tmp), 1) >= 0);
    *rc = cmd(argc, argv);
    fflush(stdout);
    REQUIRE(dup2(saved, 1) >= 0);
    close(saved);
    off_t n = lseek(fileno(tmp), 0, SEEK_END);
    REQUIRE(n >= 0);
    char *out = calloc(1, (size_t)n + 1);
    REQUIRE(out != NULL);
    REQUIRE(lseek(fileno(tmp), 0, SEEK_SET) == 0);
    REQUIRE(read(fileno(tmp), out, (size_t)n) == n);
    fclose(tmp);
    return out;
}

static const char *trace(const char *name) {
    static char path[2][4200];
    static int k;
    k ^= 1;
    snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
    return path[k];
}

#define EXPECT_OUTPUT(cmd, expected, ...)                                                          \
    do {                                                                                           \
        const char *a_[] = {__VA_ARGS__, NULL};                                                    \
        int rc_;                                                                                   \
        char *out_ = run(cmd, &rc_, a_);                                                           \
        CHECK_EQ(rc_, 0);                                                                          \
        CHECK_STR(out_, expected);                                                                 \
        free(out_);                                                                                \
    } while (0)

#define EXPECT_LINE(out, line)                                                                     \
    do {                                                                                           \
        if (strstr(out, line "\n") == NULL) {                                                      \
            fprintf(stderr, "%s:%d: missing line \"%s\" in:\n%s\n", __FILE__, __LINE__, line,      \
                    out);                                                                          \
            check__failures++;                                                                     \
        }                                                                                          \
    } while (0)

static void test_summary_csv(void) {
    EXPECT_OUTPUT(cmd_summary,
                  "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,Self CUDA,Self "
                  "CUDA %,CUDA total,CUDA time avg,CPU Mem,Self CPU Mem,CUDA Mem,Self CUDA "
                  "Mem,# of Calls,Total FLOPs\n"
                  "outer,30.0000,30.000,100.0000,100.000,100.000,1.000,4.5455,17.000,17.000,512,"
                  "0,4096,0,1,0\n"
                  "aten::linear,29.5000,29.500,70.0000,70.000,35.000,2.000,9.0909,16.000,8.000,"
                  "512,0,4096,4096,2,2000000\n"
                  "aten::addmm,31.5000,31.500,36.5000,36.500,18.250,14.000,63.6364,14.000,7.000,"
                  "512,512,0,0,2,1000000\n"
                  "cudaLaunchKernel,9.0000,9.000,9.0000,9.000,4.500,0.000,0.0000,0.000,0.000,0,0,"
                  "0,0,2,0\n"
                  "Memcpy HtoD (Pageable -> Device),0.0000,0.000,0.0000,0.000,0.000,1.000,4.5455,"
                  "1.000,1.000,0,0,0,0,1,0\n"
                  "k_bias,0.0000,0.000,0.0000,0.000,0.000,2.000,9.0909,2.000,2.000,0,0,0,0,1,0\n"
                  "k_gemm,0.0000,0.000,0.0000,0.000,0.000,14.000,63.6364,14.000,7.000,0,0,0,0,2,"
                  "0\n"
                  "k_orphan,0.0000,0.000,0.0000,0.000,0.000,1.000,4.5455,1.000,1.000,0,0,0,0,1,"
                  "0\n"
                  "k_side,0.0000,0.000,0.0000,0.000,0.000,4.000,18.1818,4.000,4.000,0,0,0,0,1,0\n",
                  "summary", trace("summary_basic.json"), "--format", "csv");
    /* Sorted by self CUDA (torch's spelling self_xpu_time_total stands for it too), limited to
     * three rows: a tie of 14 us between addmm and the kernel row k_gemm, by name. */
    EXPECT_OUTPUT(cmd_summary,
                  "{\"self_cpu_time_total_us\": 100.000, \"self_cuda_time_total_us\": 22.000, "
                  "\"device\": \"CUDA\",\n"
                  " \"rows\": [\n"
                  "  {\"Name\": \"aten::addmm\", \"Self CPU %\": 31.5000, \"Self CPU\": 31.500, "
                  "\"CPU total %\": 36.5000, \"CPU total\": 36.500, \"CPU time avg\": 18.250, "
                  "\"Self CUDA\": 14.000, \"Self CUDA %\": 63.6364, \"CUDA total\": 14.000, "
                  "\"CUDA time avg\": 7.000, \"CPU Mem\": 512, \"Self CPU Mem\": 512, \"CUDA "
                  "Mem\": 0, \"Self CUDA Mem\": 0, \"# of Calls\": 2, \"Total FLOPs\": 1000000},\n"
                  "  {\"Name\": \"k_gemm\", \"Self CPU %\": 0.0000, \"Self CPU\": 0.000, "
                  "\"CPU total %\": 0.0000, \"CPU total\": 0.000, \"CPU time avg\": 0.000, "
                  "\"Self CUDA\": 14.000, \"Self CUDA %\": 63.6364, \"CUDA total\": 14.000, "
                  "\"CUDA time avg\": 7.000, \"CPU Mem\": 0, \"Self CPU Mem\": 0, \"CUDA Mem\": 0, "
                  "\"Self CUDA Mem\": 0, \"# of Calls\": 2, \"Total FLOPs\": 0},\n"
                  "  {\"Name\": \"k_side\", \"Self CPU %\": 0.0000, \"Self CPU\": 0.000, "
                  "\"CPU total %\": 0.0000, \"CPU total\": 0.000, \"CPU time avg\": 0.000, "
                  "\"Self CUDA\": 4.000, \"Self CUDA %\": 18.1818, \"CUDA total\": 4.000, "
                  "\"CUDA time avg\": 4.000, \"CPU Mem\": 0, \"Self CPU Mem\": 0, \"CUDA Mem\": 0, "
                  "\"Self CUDA Mem\": 0, \"# of Calls\": 1, \"Total FLOPs\": 0}\n"
                  "]}\n",
                  "summary", trace("summary_basic.json"), "--format", "json", "--sort",
                  "self_xpu_time_total", "--limit", "3");
}

static void test_summary_table(void) {
    const char *a[] = {"summary", trace("summary_basic.json"), NULL};
    int rc;
    char *out = run(cmd_summary, &rc, a);
    CHECK_EQ(rc, 0);
    EXPECT_LINE(out, "                Name    Self CPU %      Self CPU   CPU total %     CPU total "
                     " CPU time avg     Self CUDA   Self CUDA %    CUDA total  CUDA time avg     "
                     "  CPU Mem  Self CPU Mem      CUDA Mem  Self CUDA Mem    # of Calls  Total "
                     "MFLOPs  ");
    EXPECT_LINE(out, "        aten::linear        29.50%      29.500us        70.00%      70.000us "
                     "     35.000us       2.000us         9.09%      16.000us       8.000us      "
                     "   512 b           0 b       4.00 Kb       4.00 Kb             2         "
                     "2.000  ");
    EXPECT_LINE(out, "    cudaLaunchKernel         9.00%       9.000us         9.00%       9.000us "
                     "      4.500us       0.000us         0.00%       0.000us       0.000us      "
                     "     0 b           0 b           0 b           0 b             2            "
                     "--  ");
    EXPECT_LINE(out, "Self CPU time total: 100.000us");
    EXPECT_LINE(out, "Self CUDA time total: 22.000us");
    /* A kernel is a row of its own, with no CPU time. */
    EXPECT_LINE(out, "              k_gemm         0.00%       0.000us         0.00%       0.000us "
                     "      0.000us      14.000us        63.64%      14.000us       7.000us      "
                     "     0 b           0 b           0 b           0 b             2            "
                     "--  ");
    free(out);

    /* Grouped by shape: the shapes are printed as Python prints lists. */
    const char *b[] = {"summary", trace("summary_basic.json"), "--group-by", "shape", NULL};
    out = run(cmd_summary, &rc, b);
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, "      [[2, 3], [3]]         2.000  \n") != NULL);
    CHECK(strstr(out, "           [[4, 3]]            --  \n") != NULL);
    EXPECT_LINE(out, "         aten::addmm        25.00%      25.000us        30.00%      30.000us "
                     "     30.000us       8.000us        36.36%       8.000us       8.000us      "
                     " 1.00 Kb       1.00 Kb           0 b           0 b             1           "
                     "[[2, 3]]         1.000  ");
    free(out);

    /* The 2021 schema: correlation through "Runtime", "external id" fallback, memory on the
     * numeric twin of a string tid; no device memory, so no CUDA Mem columns. */
    EXPECT_OUTPUT(cmd_summary,
                  "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,Self CUDA,Self "
                  "CUDA %,CUDA total,CUDA time avg,CPU Mem,Self CPU Mem,# of Calls\n"
                  "A,60.0000,6.000,100.0000,10.000,10.000,2.000,40.0000,5.000,5.000,100,0,1\n"
                  "B,30.0000,3.000,40.0000,4.000,4.000,3.000,60.0000,3.000,3.000,100,100,1\n"
                  "cudaLaunchKernel,10.0000,1.000,10.0000,1.000,1.000,0.000,0.0000,0.000,0.000,0,"
                  "0,1\n"
                  "kern,0.0000,0.000,0.0000,0.000,0.000,3.000,60.0000,3.000,3.000,0,0,1\n"
                  "kern2,0.0000,0.000,0.0000,0.000,0.000,2.000,40.0000,2.000,2.000,0,0,1\n",
                  "summary", "--format", "csv", trace("stacks_oldschema.json"));
}

/* Grouped by the first frame of "Call stack" (innermost first): only A has one. */
static void test_summary_stack_group(void) {
    EXPECT_OUTPUT(cmd_summary,
                  "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,Self CUDA,Self "
                  "CUDA %,CUDA total,CUDA time avg,CPU Mem,Self CPU Mem,# of Calls,Source "
                  "Location\n"
                  "A,60.0000,6.000,100.0000,10.000,10.000,2.000,40.0000,5.000,5.000,100,0,1,"
                  "inner.py(2): f\n"
                  "B,30.0000,3.000,40.0000,4.000,4.000,3.000,60.0000,3.000,3.000,100,100,1,\n"
                  "cudaLaunchKernel,10.0000,1.000,10.0000,1.000,1.000,0.000,0.0000,0.000,0.000,0,"
                  "0,1,\n"
                  "kern,0.0000,0.000,0.0000,0.000,0.000,3.000,60.0000,3.000,3.000,0,0,1,\n"
                  "kern2,0.0000,0.000,0.0000,0.000,0.000,2.000,40.0000,2.000,2.000,0,0,1,\n",
                  "summary", trace("stacks_oldschema.json"), "--group-by", "stack:1", "--format",
                  "csv");
    /* In the table, the further frames of a group go on lines of their own. */
    const char *a[] = {"summary", trace("stacks_oldschema.json"), "--group-by", "stack", NULL};
    int rc;
    char *out = run(cmd_summary, &rc, a);
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, "             1  inner.py(2): f             \n") != NULL);
    CHECK(strstr(out, "                outer.py(1): <module>      \n") != NULL);
    free(out);
}

static void test_kernels(void) {
    EXPECT_OUTPUT(cmd_kernels,
                  "Name,# of Calls,Total,Avg,Min,Max,% GPU time\n"
                  "k_gemm,2,14.000,7.000,6.000,8.000,66.6667\n"
                  "k_side,1,4.000,4.000,4.000,4.000,19.0476\n"
                  "k_bias,1,2.000,2.000,2.000,2.000,9.5238\n"
                  "k_orphan,1,1.000,1.000,1.000,1.000,4.7619\n"
                  "\n"
                  "Device,Stream,Busy,Idle,Span\n"
                  "0,7,18.000,49.000,67.000\n"
                  "0,8,4.000,0.000,4.000\n"
                  "0,all,18.000,49.000,67.000\n",
                  "kernels", trace("summary_basic.json"), "--format", "csv");
    const char *a[] = {"kernels", trace("stacks_oldschema.json"), NULL};
    int rc;
    char *out = run(cmd_kernels, &rc, a);
    CHECK_EQ(rc, 0);
    EXPECT_LINE(out, "           0          stream 7       5.000us       7.000us      12.000us     "
                     "   41.67%  ");
    EXPECT_LINE(out, "Kernel time total: 5.000us");
    free(out);
}

static void test_stacks(void) {
    EXPECT_OUTPUT(cmd_stacks,
                  "outer 30\n"
                  "outer;aten::linear 30\n"
                  "outer;aten::linear;aten::addmm 32\n"
                  "outer;aten::linear;aten::addmm;cudaLaunchKernel 5\n"
                  "outer;aten::linear;cudaLaunchKernel 4\n",
                  "stacks", trace("summary_basic.json"));
    EXPECT_OUTPUT(cmd_stacks, "outer 1\nouter;aten::linear 2\nouter;aten::linear;aten::addmm 14\n",
                  "stacks", "--metric", "self_cuda", trace("summary_basic.json"));
    EXPECT_OUTPUT(cmd_stacks,
                  "outer.py(1): <module>;inner.py(2): f;A 6\n"
                  "outer.py(1): <module>;inner.py(2): f;A;B 3\n"
                  "outer.py(1): <module>;inner.py(2): f;A;B;cudaLaunchKernel 1\n",
                  "stacks", trace("stacks_oldschema.json"));
}

/* Writes the perf trace above with "strobe_perf_events" before the events (meta 1), after them
 * (2: the values come from a second pass), or not at all (0: the args are then ordinary args and
 * make no columns). @return its path (static, one per value of meta). */
static const char *perf_trace(int meta) {
    static char paths[3][4200];
    char *path = paths[meta];
    snprintf(path, sizeof paths[meta], "%s/cli_summary_perf%d.json", STROBE_TEST_OUT_DIR, meta);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    static const char *const ev[] = {
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"outer\", \"pid\": 1, \"tid\": "
        "1, "
        "\"ts\": 0, \"dur\": 100, \"args\": {\"task-clock\": 800, \"page-faults\": 10}}",
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 10, \"dur\": 40, \"args\": {\"Module Hierarchy\": \"mlp.fc1\", \"task-clock\": "
        "400, "
        "\"page-faults\": 4}}",
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": "
        "15, \"dur\": 15, \"args\": {\"Module Hierarchy\": \"mlp.fc1\", \"task-clock\": 150, "
        "\"page-faults\": 2}}",
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": "
        "32, \"dur\": 13, \"args\": {\"page-faults\": 1, \"task-clock\": 130, \"Module "
        "Hierarchy\": "
        "\"mlp.fc1\"}}",
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 60, \"dur\": 30, \"args\": {\"Module Hierarchy\": \"mlp.fc2\", \"task-clock\": "
        "250, "
        "\"page-faults\": 1}}",
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": "
        "62, \"dur\": 26, \"args\": {\"Module Hierarchy\": \"mlp.fc2\", \"task-clock\": 200}}",
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": "
        "110, \"dur\": 10, \"args\": {\"task-clock\": 700, \"page-faults\": 7}}",
    };
    const char *names = "\"strobe_perf_events\": [\"task-clock\", \"page-faults\"]";
    fprintf(f, "{\"schemaVersion\": 1, %s%s\"traceEvents\": [\n", meta == 1 ? names : "",
            meta == 1 ? ", " : "");
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        fprintf(f, "%s%s\n", ev[i], i + 1 < sizeof ev / sizeof ev[0] ? "," : "");
    fprintf(f, "]%s%s}\n", meta == 2 ? ", " : "", meta == 2 ? names : "");
    REQUIRE(fclose(f) == 0);
    return path;
}

/* --group-by module: one row per (name, "Module Hierarchy"); events without one share the empty
 * module. Perf columns (Self and total per counter) follow, in the trace's order. */
static void test_summary_module_perf(void) {
    const char *by_module =
        "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,# of Calls,Module "
        "Hierarchy,Self task-clock,task-clock,Self page-faults,page-faults\n"
        "outer,27.2727,30.000,90.9091,100.000,100.000,1,,150,800,5,10\n"
        "aten::linear,10.9091,12.000,36.3636,40.000,40.000,1,mlp.fc1,120,400,1,4\n"
        "aten::linear,3.6364,4.000,27.2727,30.000,30.000,1,mlp.fc2,50,250,1,1\n"
        "aten::mm,25.4545,28.000,25.4545,28.000,14.000,2,mlp.fc1,280,280,3,3\n"
        "aten::mm,23.6364,26.000,23.6364,26.000,26.000,1,mlp.fc2,200,200,0,0\n"
        "aten::mm,9.0909,10.000,9.0909,10.000,10.000,1,,700,700,7,7\n";
    EXPECT_OUTPUT(cmd_summary, by_module, "summary", perf_trace(1), "--group-by", "module",
                  "--format", "csv");
    /* The names after traceEvents: the same values, from a second pass. */
    EXPECT_OUTPUT(cmd_summary, by_module, "summary", perf_trace(2), "--group-by", "module",
                  "--format", "csv");
    /* Without "strobe_perf_events" the counters' args make no columns. */
    EXPECT_OUTPUT(cmd_summary,
                  "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,# of Calls,Module "
                  "Hierarchy\n"
                  "outer,27.2727,30.000,90.9091,100.000,100.000,1,\n"
                  "aten::linear,10.9091,12.000,36.3636,40.000,40.000,1,mlp.fc1\n"
                  "aten::linear,3.6364,4.000,27.2727,30.000,30.000,1,mlp.fc2\n"
                  "aten::mm,25.4545,28.000,25.4545,28.000,14.000,2,mlp.fc1\n"
                  "aten::mm,23.6364,26.000,23.6364,26.000,26.000,1,mlp.fc2\n"
                  "aten::mm,9.0909,10.000,9.0909,10.000,10.000,1,\n",
                  "summary", perf_trace(0), "--group-by", "module", "--format", "csv");

    /* By name, sorted by each counter: perf:task-clock (mm, outer, linear) differs from
     * cpu_time_total (outer, linear, mm) and from self_perf:task-clock (mm, linear, outer). */
    const char *header = "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,# of "
                         "Calls,Self task-clock,task-clock,Self page-faults,page-faults\n";
    const char *outer = "outer,27.2727,30.000,90.9091,100.000,100.000,1,150,800,5,10\n";
    const char *linear = "aten::linear,14.5455,16.000,63.6364,70.000,35.000,2,170,650,2,5\n";
    const char *mm = "aten::mm,58.1818,64.000,58.1818,64.000,16.000,4,1180,1180,10,10\n";
    char want[1024];
    snprintf(want, sizeof want, "%s%s%s%s", header, outer, linear, mm);
    EXPECT_OUTPUT(cmd_summary, want, "summary", perf_trace(1), "--format", "csv");
    snprintf(want, sizeof want, "%s%s%s%s", header, mm, outer, linear);
    EXPECT_OUTPUT(cmd_summary, want, "summary", perf_trace(1), "--format", "csv", "--sort",
                  "perf:task-clock");
    /* A tie at 10 page faults (mm, outer) goes by name. */
    EXPECT_OUTPUT(cmd_summary, want, "summary", perf_trace(1), "--format", "csv", "--sort",
                  "perf:page-faults");
    EXPECT_OUTPUT(cmd_summary, want, "summary", perf_trace(1), "--format", "csv", "--sort",
                  "self_perf:page-faults");
    snprintf(want, sizeof want, "%s%s%s%s", header, mm, linear, outer);
    EXPECT_OUTPUT(cmd_summary, want, "summary", perf_trace(1), "--format", "csv", "--sort",
                  "self_perf:task-clock");

    /* JSON: the counters under their own names; --limit keeps the first row by task-clock. */
    EXPECT_OUTPUT(cmd_summary,
                  "{\"self_cpu_time_total_us\": 110.000,\n"
                  " \"rows\": [\n"
                  "  {\"Name\": \"aten::mm\", \"Self CPU %\": 58.1818, \"Self CPU\": 64.000, "
                  "\"CPU total %\": 58.1818, \"CPU total\": 64.000, \"CPU time avg\": 16.000, "
                  "\"# of Calls\": 4, \"Self task-clock\": 1180, \"task-clock\": 1180, \"Self "
                  "page-faults\": 10, \"page-faults\": 10}\n"
                  "]}\n",
                  "summary", perf_trace(1), "--format", "json", "--sort", "perf:task-clock",
                  "--limit", "1");

    /* The table: the module column, and counter columns as wide as their names. */
    const char *a[] = {"summary", perf_trace(1), "--group-by", "module", NULL};
    int rc;
    char *out = run(cmd_summary, &rc, a);
    CHECK_EQ(rc, 0);
    EXPECT_LINE(out,
                "            Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU "
                "time avg    # of Calls  Module Hierarchy  Self task-clock    task-clock  "
                "Self page-faults   page-faults  ");
    EXPECT_LINE(out, "        aten::mm        25.45%      28.000us        25.45%      28.000us  "
                     "    14.000us             2           mlp.fc1              280           "
                     "280                 3             3  ");
    EXPECT_LINE(out, "        aten::mm         9.09%      10.000us         9.09%      10.000us  "
                     "    10.000us             1                                700           "
                     "700                 7             7  ");
    EXPECT_LINE(out, "Self CPU time total: 110.000us");
    free(out);
}

/* Usage and input errors: exit 2 with one line on stderr; --help exits 0 with the man page. */
static void test_usage(void) {
    int (*cmds[])(int, char **) = {cmd_summary, cmd_kernels, cmd_stacks};
    const char *names[] = {"summary", "kernels", "stacks"};
    for (int c = 0; c < 3; c++) {
        int rc;
        const char *help[] = {names[c], "--help", NULL};
        char *out = run(cmds[c], &rc, help);
        CHECK_EQ(rc, 0);
        CHECK(strncmp(out, "NAME\n", 5) == 0);
        CHECK(strstr(out, "\nSYNOPSIS\n") && strstr(out, "\nDESCRIPTION\n") &&
              strstr(out, "\nOPTIONS\n") && strstr(out, "\nEXIT STATUS\n"));
        free(out);
        const char *missing[] = {names[c], trace("no_such_file.json"), NULL};
        free(run(cmds[c], &rc, missing));
        CHECK_EQ(rc, 2);
        const char *none[] = {names[c], NULL};
        free(run(cmds[c], &rc, none));
        CHECK_EQ(rc, 2);
        const char *bad[] = {names[c], trace("summary_basic.json"), "--bogus", NULL};
        free(run(cmds[c], &rc, bad));
        CHECK_EQ(rc, 2);
    }
    int rc;
    const char *sort[] = {"summary", trace("summary_basic.json"), "--sort", "nope", NULL};
    free(run(cmd_summary, &rc, sort));
    CHECK_EQ(rc, 2);
    const char *group[] = {"summary", trace("summary_basic.json"), "--group-by", "stack:0", NULL};
    free(run(cmd_summary, &rc, group));
    CHECK_EQ(rc, 2);
    const char *limit[] = {"summary", trace("summary_basic.json"), "--limit", NULL};
    free(run(cmd_summary, &rc, limit));
    CHECK_EQ(rc, 2);
    /* A perf counter the trace does not name, none at all, or a trace without counters: exit 2
     * and nothing on stdout. */
    const char *perf[][5] = {
        {"summary", perf_trace(1), "--sort", "perf:cycles", NULL},
        {"summary", perf_trace(1), "--sort", "self_perf:task-clock-x", NULL},
        {"summary", perf_trace(1), "--sort", "perf:", NULL},
        {"summary", perf_trace(0), "--sort", "perf:task-clock", NULL},
        {"summary", trace("summary_basic.json"), "--sort", "perf:task-clock", NULL},
    };
    for (size_t k = 0; k < sizeof perf / sizeof perf[0]; k++) {
        char *out = run(cmd_summary, &rc, perf[k]);
        CHECK_EQ(rc, 2);
        CHECK_STR(out, "");
        free(out);
    }
    const char *module[] = {"summary", trace("summary_basic.json"), "--group-by", "modules", NULL};
    free(run(cmd_summary, &rc, module));
    CHECK_EQ(rc, 2);
}

/* GNU conventions: --opt=value, short forms, options after the trace, grouped short options,
 * "--" ending the options; each spelling gives the same output as the long one. */
static void test_conventions(void) {
    const char *base = trace("summary_basic.json");
    int rc;
    const char *ref_args[] = {"summary",  "--limit", "2",  "--sort", "self_cpu_time_total",
                              "--format", "csv",     base, NULL};
    char *ref = run(cmd_summary, &rc, ref_args);
    CHECK_EQ(rc, 0);
    const char *spellings[][10] = {
        {"summary", base, "--limit=2", "--sort=self_cpu_time_total", "--format=csv", NULL},
        {"summary", "-n", "2", "-s", "self_cpu_time_total", "-f", "csv", base, NULL},
        {"summary", "-n2", base, "-sself_cpu_time_total", "-fcsv", NULL},
        {"summary", "-qn", "2", base, "--so", "self_cpu_time_total", "-f", "csv", NULL},
        {"summary", "--limit", "2", "-s", "self_cpu_time_total", "-f", "csv", "--", base, NULL},
    };
    for (size_t k = 0; k < sizeof spellings / sizeof spellings[0]; k++) {
        char *out = run(cmd_summary, &rc, spellings[k]);
        CHECK_EQ(rc, 0);
        CHECK_STR(out, ref);
        free(out);
    }
    free(ref);
    /* After "--", a word starting with '-' is an operand: here a second trace. */
    const char *dashdash[] = {"summary", "--", base, "--limit=2", NULL};
    free(run(cmd_summary, &rc, dashdash));
    CHECK_EQ(rc, 2);
    /* -h and -V in every command, before or after other words. */
    int (*cmds[])(int, char **) = {cmd_summary, cmd_kernels, cmd_stacks,
                                   cmd_check,   cmd_info,    cmd_convert,
                                   cmd_ps,      cmd_trigger, cmd_memory_profile};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        const char *v[] = {"x", base, "-V", NULL};
        char *out = run(cmds[c], &rc, v);
        CHECK_EQ(rc, 0);
        CHECK(strncmp(out, "strobe ", 7) == 0);
        free(out);
        const char *h[] = {"x", "--bogus-first", NULL};
        free(run(cmds[c], &rc, h));
        CHECK_EQ(rc, 2);
        const char *hl[] = {"x", "--version", NULL};
        out = run(cmds[c], &rc, hl);
        CHECK_EQ(rc, 0);
        CHECK(strncmp(out, "strobe ", 7) == 0);
        free(out);
        const char *hh[] = {"x", "-h", NULL};
        out = run(cmds[c], &rc, hh);
        CHECK_EQ(rc, 0);
        CHECK(strncmp(out, "NAME\n", 5) == 0);
        free(out);
    }
    /* Every command's options are in its --help text. */
    for (size_t i = 0; i < cli_command_count; i++) {
        for (const struct option *o = cli_commands[i].options; o->name; o++) {
            char opt[64];
            snprintf(opt, sizeof opt, "--%s", o->name);
            if (strstr(cli_commands[i].usage, opt) == NULL) {
                fprintf(stderr, "strobe %s: option %s is not in its usage text\n",
                        cli_commands[i].name, opt);
                check__failures++;
            }
        }
    }
}

/* --name-width: torch's max_name_column_width. A name of N - 3 characters or more is cut to
 * N - 3 and "..." added; the column is min(longest + 4, N) wide. */
static void test_name_width(void) {
    const char *base = trace("summary_basic.json");
    int rc;
    const char *a[] = {"summary", base, "--name-width=10", "-s", "name", NULL};
    char *out = run(cmd_summary, &rc, a);
    CHECK_EQ(rc, 0);
    /* aten::addmm (11) -> "aten::a..." in a column of 10; outer (5) stays. */
    CHECK(strstr(out, "\naten::a...  ") != NULL);
    CHECK(strstr(out, "\n     outer  ") != NULL);
    CHECK(strstr(out, "\n----------  ") != NULL);
    free(out);
    /* 8: "outer" (5) gets "..." too, as torch cuts at width - 3 (5 >= 5): "outer...". */
    const char *b[] = {"summary", base, "--name-width", "8", "-s", "name", NULL};
    out = run(cmd_summary, &rc, b);
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, "\nouter...  ") != NULL);
    free(out);
    const char *k[] = {"kernels", base, "--name-width=6", NULL};
    out = run(cmd_kernels, &rc, k);
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, "\nk_g...  ") != NULL);
    free(out);
    const char *bad[][4] = {{"summary", base, "--name-width=3", NULL},
                            {"summary", base, "--name-width=x", NULL},
                            {"kernels", base, "--name-width", NULL}};
    for (size_t i = 0; i < 3; i++) {
        free(run(i < 2 ? cmd_summary : cmd_kernels, &rc, bad[i]));
        CHECK_EQ(rc, 2);
    }
}

/* The progress line: its text, and the line a load shows (forced on, with no delay) and clears.
 * The trace comes through a FIFO, whose size is unknown: the line then gives the time spent. */
static void test_progress(const char *outdir) {
    char line[256];
    cli_progress_format(line, sizeof line, "summary", "t.json", 450, 1000, 0);
    CHECK_STR(line, "strobe summary: reading t.json: 45% (0 MB)");
    cli_progress_format(line, sizeof line, "info", "big.json", 412000000, 900000000, 0);
    CHECK_STR(line, "strobe info: reading big.json: 45% (412 MB)");
    cli_progress_format(line, sizeof line, "info", "-", -1, -1, 2500);
    CHECK_STR(line, "strobe info: reading -: 2 s");

    char fifo[4300], errpath[4300];
    snprintf(fifo, sizeof fifo, "%s/progress_fifo.json", outdir);
    snprintf(errpath, sizeof errpath, "%s/progress.err", outdir);
    for (int mode = 0; mode < 3; mode++) { /* 0: shown; 1: --quiet; 2: not a terminal */
        unlink(fifo);
        REQUIRE(mkfifo(fifo, 0600) == 0);
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            int fd = open(fifo, O_WRONLY);
            FILE *in = fopen(trace("summary_basic.json"), "rb");
            char buf[4096];
            size_t n;
            while (fd >= 0 && in && (n = fread(buf, 1, sizeof buf, in)) > 0)
                if (write(fd, buf, n) != (ssize_t)n) break;
            _exit(0);
        }
        cli_progress_delay_ms = 0;
        cli_progress_tty = mode == 2 ? 0 : 1;
        fflush(stderr);
        int saved = dup(2);
        int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        REQUIRE(saved >= 0 && efd >= 0 && dup2(efd, 2) >= 0);
        close(efd);
        int rc;
        const char *a[] = {"info", fifo, mode == 1 ? "-q" : "-f", mode == 1 ? NULL : "text", NULL};
        char *out = run(cmd_info, &rc, a);
        REQUIRE(dup2(saved, 2) >= 0);
        close(saved);
        waitpid(child, NULL, 0);
        cli_progress_delay_ms = 1000;
        cli_progress_tty = -1;
        CHECK_EQ(rc, 0);
        CHECK(strstr(out, "events:") != NULL);
        free(out);
        FILE *f = fopen(errpath, "rb");
        REQUIRE(f != NULL);
        char err[4096] = "";
        size_t n = fread(err, 1, sizeof err - 1, f);
        err[n] = '\0';
        fclose(f);
        if (mode == 0) {
            char want[4400];
            snprintf(want, sizeof want, "\rstrobe info: reading %s: 0 s", fifo);
            CHECK(strncmp(err, want, strlen(want)) == 0);
            /* Cleared at the end: blanks over the line, and the cursor back at its start. */
            CHECK(n > 2 && err[n - 1] == '\r' && err[n - 2] == ' ');
            CHECK(strchr(err, '\n') == NULL);
        } else {
            CHECK_STR(err, "");
        }
    }
    unlink(fifo);
}

/* Writes text to a temporary file; @return its path (static). */
static const char *temp_trace(const char *text) {
    static char path[4200];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/test_cli_summary.%ld.json", tmp && *tmp ? tmp : "/tmp",
             (long)getpid());
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    REQUIRE(fclose(f) == 0);
    return path;
}

/* Durations that are each in range but whose sums exceed int64 ns: four operators, four kernels
 * and four equal stacks of 3e18 ns each. Sums saturate at the int64 limit instead of wrapping
 * to negative numbers (and UBSan finds no overflow). */
static void test_huge_sums(void) {
    char text[4096];
    int n = snprintf(text, sizeof text, "{\"traceEvents\":[");
    for (int t = 1; t <= 4; t++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\",\"pid\":1,\"tid\":%d,"
                      "\"ts\":1,\"dur\":3000000000000000,\"args\":{\"Call stack\":\"f;g\"}},"
                      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":%d,"
                      "\"ts\":1,\"dur\":3000000000000000},",
                      t, t);
    snprintf(text + n - 1, sizeof text - (size_t)n + 1, "]}");
    const char *path = temp_trace(text);
    int rc;
    const char *a[] = {"summary", path, "--format", "csv", NULL};
    char *out = run(cmd_summary, &rc, a);
    CHECK_EQ(rc, 0);
    if (strstr(out, ",-") != NULL) fprintf(stderr, "a negative sum in:\n%s\n", out);
    CHECK(strstr(out, ",-") == NULL);
    CHECK(strstr(out, ",9223372036854775.807,") != NULL);
    free(out);
    const char *k[] = {"kernels", path, "--format", "csv", NULL};
    out = run(cmd_kernels, &rc, k);
    CHECK_EQ(rc, 0);
    if (strstr(out, ",-") != NULL) fprintf(stderr, "a negative sum in:\n%s\n", out);
    CHECK(strstr(out, ",-") == NULL);
    CHECK(strstr(out, "k,4,9223372036854775.807,") != NULL);
    free(out);
    const char *st[] = {"stacks", path, NULL};
    out = run(cmd_stacks, &rc, st);
    CHECK_EQ(rc, 0);
    if (strstr(out, " -") != NULL) fprintf(stderr, "a negative weight in:\n%s\n", out);
    CHECK(strstr(out, " -") == NULL);
    free(out);
    remove(path);
}

/* Writes text to NAME in the test output directory. @return its path (static: one at a time). */
static const char *write_trace(const char *name, const char *text) {
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", STROBE_TEST_OUT_DIR, name);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    REQUIRE(fclose(f) == 0);
    return path;
}

/* Runs a subcommand as run() does, with its stderr in *err (malloc'ed). */
static char *run_err(int (*cmd)(int, char **), int *rc, const char *const *args, char **err) {
    char errpath[4300];
    snprintf(errpath, sizeof errpath, "%s/cli_summary.err", STROBE_TEST_OUT_DIR);
    fflush(stderr);
    int saved = dup(2);
    int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(saved >= 0 && efd >= 0 && dup2(efd, 2) >= 0);
    close(efd);
    char *out = run(cmd, rc, args);
    fflush(stderr);
    REQUIRE(dup2(saved, 2) >= 0);
    close(saved);
    FILE *f = fopen(errpath, "r");
    REQUIRE(f != NULL);
    *err = calloc(1, 4096);
    REQUIRE(*err != NULL);
    size_t n = fread(*err, 1, 4095, f);
    (*err)[n] = '\0';
    fclose(f);
    return out;
}

/* The MTIA trace above, with the runtime's and the device work's categories given. */
static const char *device_trace(const char *name, const char *runtime_cat, const char *work_cat) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"traceEvents\": [\n"
             "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 1, \"tid\": "
             "1, \"ts\": 0, \"dur\": 10, \"args\": {\"External id\": 1}},\n"
             "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"runFunction\", \"pid\": 1, "
             "\"tid\": 1, \"ts\": 2, \"dur\": 3, \"args\": {\"correlation\": 7, \"External id\": "
             "1}},\n"
             "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"add_kernel\", \"pid\": 0, "
             "\"tid\": 3, \"ts\": 6, \"dur\": 4, \"args\": {\"correlation\": 7, \"device\": 0}}\n"
             "]}\n",
             runtime_cat, work_cat);
    return write_trace(name, text);
}

static void test_devices(void) {
    const char *path = device_trace("cli_summary_mtia.json", "mtia_runtime", "mtia_ccp_events");
    EXPECT_OUTPUT(cmd_summary,
                  "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,Self MTIA,Self "
                  "MTIA %,MTIA total,MTIA time avg,# of Calls\n"
                  "aten::add,70.0000,7.000,100.0000,10.000,10.000,4.000,100.0000,4.000,4.000,1\n"
                  "runFunction,30.0000,3.000,30.0000,3.000,3.000,0.000,0.0000,0.000,0.000,1\n"
                  "add_kernel,0.0000,0.000,0.0000,0.000,0.000,4.000,100.0000,4.000,4.000,1\n",
                  "summary", path, "--format", "csv");
    const char *a[] = {"summary", path, NULL};
    int rc;
    char *out = run(cmd_summary, &rc, a);
    CHECK_EQ(rc, 0);
    EXPECT_LINE(out, "Self MTIA time total: 4.000us");
    free(out);
    /* MTIA's device work is kernels for `strobe kernels` too. */
    const char *k[] = {"kernels", path, "--format", "csv", NULL};
    out = run(cmd_kernels, &rc, k);
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, "add_kernel,1,") != NULL);
    free(out);

    path = device_trace("cli_summary_xpu.json", "xpu_runtime", "kernel");
    const char *x[] = {"summary", path, "--format", "csv", NULL};
    out = run(cmd_summary, &rc, x);
    CHECK_EQ(rc, 0);
    static const char xpu_head[] = "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time "
                                   "avg,Self XPU,Self XPU %,XPU total,XPU time avg,# of Calls\n";
    CHECK(strncmp(out, xpu_head, sizeof xpu_head - 1) == 0);
    free(out);
    /* PrivateUse1 (torch's default name for it, upper-cased) and HPU (hpu_op is device work). */
    path = device_trace("cli_summary_pu1.json", "privateuse1_runtime", "kernel");
    const char *pu1[] = {"summary", path, "--format", "csv", NULL};
    out = run(cmd_summary, &rc, pu1);
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, ",Self PRIVATEUSEONE,Self PRIVATEUSEONE %,PRIVATEUSEONE total,") != NULL);
    free(out);
    path = device_trace("cli_summary_hpu.json", "cuda_runtime", "hpu_op");
    const char *hpu[] = {"summary", path, "--format", "csv", NULL};
    out = run(cmd_summary, &rc, hpu);
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, ",Self HPU,Self HPU %,HPU total,HPU time avg,") != NULL);
    CHECK(
        strstr(out, "add_kernel,0.0000,0.000,0.0000,0.000,0.000,4.000,100.0000,4.000,4.000,1\n") !=
        NULL);
    CHECK(
        strstr(out, "add_kernel,0.0000,0.000,0.0000,0.000,0.000,4.000,100.0000,4.000,4.000,1\n") !=
        NULL);
    free(out);
}

static void test_overlaps_and_bad_events(void) {
    const char *path = write_trace(
        "cli_summary_overlap.json",
        "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#5\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 0, \"dur\": 100},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 10, \"dur\": 85},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::is_leaf\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 50, \"dur\": 1},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::allgather_\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 95, \"dur\": 105},\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#6\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 100, \"dur\": 80},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bad\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": \"x\", \"dur\": 5}\n"
        "]}\n");
    const char *a[] = {"summary", path, "--format", "csv", NULL};
    int rc;
    char *err;
    char *out = run_err(cmd_summary, &rc, a, &err);
    CHECK_EQ(rc, 0);
    CHECK_STR(out, "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,# of Calls\n"
                   "ProfilerStep*,46.3415,95.000,87.8049,180.000,90.000,2\n"
                   "c10d::allgather_,12.1951,25.000,51.2195,105.000,105.000,1\n"
                   "aten::mm,41.4634,85.000,41.4634,85.000,85.000,1\n");
    char want[8400];
    snprintf(want, sizeof want,
             "strobe summary: %s: 1 malformed event(s) skipped; `strobe check` lists them\n", path);
    CHECK_STR(err, want);
    free(out);
    free(err);

    path =
        write_trace("cli_summary_siblings.json",
                    "{\"traceEvents\": [\n"
                    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, "
                    "\"ts\": 0, \"dur\": 10},\n"
                    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"b\", \"pid\": 1, \"tid\": 1, "
                    "\"ts\": 0, \"dur\": 8},\n"
                    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c\", \"pid\": 1, \"tid\": 1, "
                    "\"ts\": 5, \"dur\": 5}\n"
                    "]}\n");
    EXPECT_OUTPUT(cmd_summary,
                  "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,# of Calls\n"
                  "a,0.0000,0.000,76.9231,10.000,10.000,1\n"
                  "b,61.5385,8.000,61.5385,8.000,8.000,1\n"
                  "c,38.4615,5.000,38.4615,5.000,5.000,1\n",
                  "summary", path, "--format", "csv");

    path = write_trace("cli_summary_merge.json",
                       "{\"traceEvents\": [\n"
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::div\", \"pid\": 1, "
                       "\"tid\": 1, \"ts\": 0, \"dur\": 10},\n"
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::div\", \"pid\": 1, "
                       "\"tid\": 1, \"ts\": 1, \"dur\": 8},\n"
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mul\", \"pid\": 1, "
                       "\"tid\": 1, \"ts\": 2, \"dur\": 2, \"args\": {\"External id\": 9}},\n"
                       "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
                       "\"tid\": 7, \"ts\": 20, \"dur\": 3, \"args\": {\"External id\": 9}},\n"
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::div\", \"pid\": 1, "
                       "\"tid\": 1, \"ts\": 5, \"dur\": 1}\n"
                       "]}\n");
    EXPECT_OUTPUT(cmd_summary,
                  "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,Self CUDA,Self "
                  "CUDA %,CUDA total,CUDA time avg,# of Calls\n"
                  "aten::div,80.0000,8.000,110.0000,11.000,5.500,0.000,0.0000,3.000,1.500,2\n"
                  "aten::mul,20.0000,2.000,20.0000,2.000,2.000,3.000,100.0000,3.000,3.000,1\n"
                  "k,0.0000,0.000,0.0000,0.000,0.000,3.000,100.0000,3.000,3.000,1\n",
                  "summary", path, "--format", "csv");

    /* torch.autograd.profiler's legacy export. */
    path = write_trace("cli_summary_legacy.json",
                       "[{\"name\": \"aten::zeros\", \"ph\": \"X\", \"ts\": 229, \"dur\": 51, "
                       "\"tid\": 1, \"pid\": \"CPU functions\", \"args\": {}}, {\"name\": "
                       "\"aten::empty\", \"ph\": \"X\", \"ts\": 247, \"dur\": 4, \"tid\": 1, "
                       "\"pid\": \"CPU functions\", \"args\": {}}]");
    EXPECT_OUTPUT(cmd_summary,
                  "Name,Self CPU %,Self CPU,CPU total %,CPU total,CPU time avg,# of Calls\n"
                  "aten::zeros,92.1569,47.000,100.0000,51.000,51.000,1\n"
                  "aten::empty,7.8431,4.000,7.8431,4.000,4.000,1\n",
                  "summary", path, "--format", "csv");
}

/* A trace with no rows (what `strobe record` writes of a program with no annotations): the empty
 * table is followed, on stderr, by the options that would have recorded something; a trace of
 * CPU samples alone points at the commands that show samples. A table with rows says nothing. */
static void test_empty_hint(void) {
    const char *path =
        write_trace("cli_summary_empty.json",
                    "{\"traceEvents\": [\n"
                    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 7, \"tid\": 0, "
                    "\"args\": {\"name\": \"true\"}}\n"
                    "]}\n");
    const char *a[] = {"summary", path, NULL};
    int rc;
    char *err;
    char *out = run_err(cmd_summary, &rc, a, &err);
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, "Self CPU time total: 0.000us") != NULL);
    if (strstr(err, "--sample") == NULL) fprintf(stderr, "no hint on stderr: \"%s\"\n", err);
    CHECK(strstr(err, "no operators, annotations or device work") != NULL);
    CHECK(strstr(err, "--sample") != NULL && strstr(err, "--heap") != NULL);
    CHECK(strstr(err, "--torch") != NULL && strstr(err, "NVTX") != NULL);
    free(out);
    free(err);
    const char *j[] = {"summary", path, "-f", "json", NULL};
    out = run_err(cmd_summary, &rc, j, &err);
    CHECK_EQ(rc, 0);
    CHECK(strstr(out, "\"rows\": [") != NULL);
    CHECK(strstr(err, "--sample") != NULL);
    free(out);
    free(err);

    path = write_trace(
        "cli_summary_samples.json",
        "{\"traceEvents\": [\n"
        "{\"ph\": \"i\", \"cat\": \"cpu_sample\", \"name\": \"f\", \"pid\": 7, \"tid\": 7, "
        "\"ts\": 1, \"s\": \"t\", \"args\": {\"Call stack\": \"main;f\"}},\n"
        "{\"ph\": \"i\", \"cat\": \"cpu_sample\", \"name\": \"f\", \"pid\": 7, \"tid\": 7, "
        "\"ts\": 2, \"s\": \"t\", \"args\": {\"Call stack\": \"main;f\"}}\n"
        "]}\n");
    const char *b[] = {"summary", path, NULL};
    out = run_err(cmd_summary, &rc, b, &err);
    CHECK_EQ(rc, 0);
    if (strstr(err, "2 CPU sample(s)") == NULL) fprintf(stderr, "stderr: \"%s\"\n", err);
    CHECK(strstr(err, "2 CPU sample(s)") != NULL);
    CHECK(strstr(err, "strobe stacks --samples") != NULL);
    free(out);
    free(err);

    const char *c[] = {"summary", trace("summary_basic.json"), NULL};
    out = run_err(cmd_summary, &rc, c, &err);
    CHECK_EQ(rc, 0);
    CHECK_STR(err, "");
    free(out);
    free(err);
}

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : STROBE_SOURCE_DIR "/tests/cli");
    test_summary_csv();
    test_summary_table();
    test_summary_stack_group();
    test_summary_module_perf();
    test_devices();
    test_overlaps_and_bad_events();
    test_empty_hint();
    test_kernels();
    test_stacks();
    test_huge_sums();
    test_usage();
    test_conventions();
    test_name_width();
    test_progress(argc > 2 ? argv[2] : ".");
    return check_result();
}
