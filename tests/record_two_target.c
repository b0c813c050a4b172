/* record_two_target: a program linked with libstrobe.so that runs a session of its own with CUDA
 * (against the stand-in libcuda.so.1 and CUPTI, tests/fake_cuda) and saves it, for `strobe record
 * --activities cpu,cuda` (test_record_two.sh): two copies of strobe in one process, the
 * program's and the preloaded one. The program's session must keep CUDA; strobe record records
 * the rest (its NVTX range).
 *
 * Usage: record_two_target TRACE FAKE_CUPTI. Prints "pid PID" and "own RC" (strobe_start's
 * result); exits 1 when its session cannot be saved. */
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "strobe/strobe.h"

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    printf("pid %ld\n", (long)getpid());
    nvtxRangePushA("nvtx-outer");
    strobe_config c;
    strobe_config_init(&c);
    c.activities = STROBE_ACTIVITY_CPU | STROBE_ACTIVITY_CUDA;
    int rc = strobe_start(&c);
    printf("own %d\n", rc);
    fflush(stdout);
    if (rc != 0) return 1;
    strobe_range_begin("own-range");
    /* The stand-in CUPTI (the library the program's strobe loaded, opened again) reports a
     * launch and its kernel from now on. */
    void *h = dlopen(argv[2], RTLD_NOW);
    void (*mark)(void) = h ? (void (*)(void))dlsym(h, "fake_cupti_mark_launch") : NULL;
    if (mark) mark();
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    strobe_range_end();
    strobe_result *r = NULL;
    if (strobe_stop(&r) != 0) return 1;
    rc = strobe_result_save(r, argv[1]);
    strobe_result_free(r);
    nvtxRangePop();
    return rc == 0 ? 0 : 1;
}
