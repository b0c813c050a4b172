/* fuzz_model.c: libFuzzer harness for the trace model (src/model/model.c) and the subcommands
 * that analyse it: check, info, summary, kernels, stacks, convert both ways, and flame graphs.
 *
 * Build and run: tests/fuzz_bounded.sh (30 s, a CTest test) or scripts/fuzz.sh --minutes N; both
 * build it through tests/fuzz_build.sh, with the model, the subcommands, the reader, the util layer
 * and the error table, under -fsanitize=fuzzer,address,undefined.
 *
 * Each input is loaded with md_load_mem(), and the model's invariants are checked: every parent
 * is an X event of the same thread that starts no later than its child, each thread's order is a
 * permutation sorted by time, and a failed load leaves a message. The input is then given to
 * the subcommands through a memfd, as a file, so that the report and analysis code runs on every
 * shape of model too (convert writes into a temporary folder, removed after each input); run it
 * with -close_fd_mask=3 to keep their output out of the fuzzer's log (libFuzzer still prints its
 * own and the sanitizers' reports). A crasher found here goes into tests/corpus/model/, which
 * test_cli_check replays. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"
#include "flame.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The commands' -V prints the library's version; the harness links the CLI's code without the
 * library (only its error table), so the one library function it calls is given here. */
const char *strobe_version(void);
const char *strobe_version(void) {
    return "fuzz";
}

static void check_invariants(const md_model *m) {
    size_t total = 0;
    for (size_t t = 0; t < m->thread_count; t++) {
        const md_thread *th = &m->threads[t];
        total += th->count;
        for (size_t k = 0; k < th->count; k++) {
            uint32_t id = th->order[k];
            if (id >= m->count || md_thread_of(m, id) != t) abort();
            if (k && md_ts(m, th->order[k - 1]) > md_ts(m, id)) abort();
        }
    }
    if (total != m->count) abort();
    for (size_t i = 0; i < m->count; i++) {
        const md_event e_ev = md_at(m, i), *e = &e_ev;
        (void)md_str(m, e->name);
        (void)md_str(m, e->cat);
        if (e->parent == MD_NONE) continue;
        if (e->parent >= m->count) abort();
        const md_event p_ev = md_at(m, e->parent), *p = &p_ev;
        if (p->ph != 'X' || p->thread != e->thread || p->ts > e->ts) abort();
    }
}

/* Flame graphs of the model (cli/flame.c): every metric, both groupings, and the diff of the
 * model with itself, into /dev/null; each must succeed. */
static void flame_all(const md_model *m) {
    FILE *null = fopen("/dev/null", "w");
    if (null == NULL) return;
    for (int metric = 0; metric < CLI_FLAME_METRIC_COUNT; metric++) {
        for (int group = 0; group < 2; group++) {
            cli_flame_opts o = {.metric = metric, .group_by = group};
            if (cli_flame_svg(null, m, &o, NULL, 0) != 0) abort();
        }
    }
    if (cli_flame_svg_diff(null, m, m, NULL, NULL, 0) != 0) abort();
    fclose(null);
}

static char out_dir[4096]; /* convert's outputs */

static void remove_out_dir(void) {
    rmdir(out_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    md_model m;
    int loaded = md_load_mem(&m, data, size, "fuzz.json") == 0;
    if (loaded)
        check_invariants(&m);
    else if (m.err[0] == '\0')
        abort();
    if (loaded) flame_all(&m);
    md_free(&m);

    int fd = memfd_create("fuzz", 0);
    if (fd < 0) return 0;
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) break;
        off += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    char *check_argv[] = {"check", path, NULL};
    char *info_argv[] = {"info", path, NULL};
    int rc = cmd_check(2, check_argv);
    if (rc < 0 || rc > 2) abort();
    rc = cmd_info(2, info_argv);
    if (rc != 0 && rc != 2) abort();
    /* The analyses and convert only on inputs that load (their failure to load is the same
     * one check and info just met): each subcommand reads the input again, so this keeps the
     * harness fast on the many inputs that do not. */
    if (!loaded) {
        close(fd);
        return 0;
    }
    char *summary_argv[] = {"summary", path, NULL};
    char *kernels_argv[] = {"kernels", path, NULL};
    char *stacks_argv[] = {"stacks", path, NULL};
    if ((rc = cmd_summary(2, summary_argv)) != 0 && rc != 2) abort();
    if ((rc = cmd_kernels(2, kernels_argv)) != 0 && rc != 2) abort();
    if ((rc = cmd_stacks(2, stacks_argv)) != 0 && rc != 2) abort();
    /* JSON to Perfetto, or a Perfetto trace to JSON; the other direction is refused (exit 2). */
    if (!out_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(out_dir, sizeof out_dir, "%s/fuzz_model.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(out_dir))
            atexit(remove_out_dir);
        else
            out_dir[0] = '\0';
    }
    const char *dir = out_dir;
    if (dir[0]) {
        char pf[4200], js[4200];
        snprintf(pf, sizeof pf, "%s/out.pftrace", dir);
        snprintf(js, sizeof js, "%s/out.json", dir);
        char *to_pf[] = {"convert", path, pf, NULL};
        char *to_js[] = {"convert", path, js, NULL};
        if ((rc = cmd_convert(3, to_pf)) != 0 && rc != 2) abort();
        if ((rc = cmd_convert(3, to_js)) != 0 && rc != 2) abort();
        remove(pf);
        remove(js);
    }
    close(fd);
    return 0;
}
