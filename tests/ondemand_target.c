/* ondemand_target.c: an instrumented program for the on-demand tests: it serves an endpoint
 * (STROBE_ONDEMAND=1 from the environment, or --api to call strobe_ondemand_start()), then runs
 * steps of a small workload until SECONDS have passed or the file STOPFILE appears:
 *
 *   ondemand_target SECONDS STOPFILE [--api] [--step-ms N] [--no-steps] [--exit-after-ms N]
 *                   [--return-after-ms N] [--flight] [--log]
 *
 * Each step: an "aten::mm" operator with an "aten::add" inside, a block allocated and freed
 * (reported with strobe_record_alloc / strobe_record_free), and strobe_step(). It prints
 * "ready SOCKET" once the endpoint serves. --exit-after-ms ends the process abruptly (_exit) after
 * N ms, whatever runs (the "process exits mid-trace" test); --return-after-ms returns from main
 * after N ms, a normal exit that the endpoint sees (without --api nothing stops it first). --flight
 * runs the program's own session as a flight recorder (ring_bytes 4 MiB) for `strobe trigger
 * --flight-dump`. --log sends the library's log (info and above) to stderr, for the tests that
 * read what the endpoint says (test_dynolog.py). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strobe/strobe.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile double sink;

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: ondemand_target SECONDS STOPFILE [--api] [--step-ms N] "
                        "[--no-steps] [--exit-after-ms N]\n");
        return 2;
    }
    double seconds = atof(argv[1]);
    const char *stopfile = argv[2];
    int api = 0, steps = 1, flight = 0;
    double step_ms = 2, exit_after = -1, return_after = -1;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--api") == 0)
            api = 1;
        else if (strcmp(argv[i], "--flight") == 0)
            flight = 1;
        else if (strcmp(argv[i], "--log") == 0)
            strobe_set_log_fn(strobe_log_stderr, (void *)(intptr_t)STROBE_LOG_INFO);
        else if (strcmp(argv[i], "--no-steps") == 0)
            steps = 0;
        else if (strcmp(argv[i], "--step-ms") == 0 && i + 1 < argc)
            step_ms = atof(argv[++i]);
        else if (strcmp(argv[i], "--exit-after-ms") == 0 && i + 1 < argc)
            exit_after = atof(argv[++i]);
        else if (strcmp(argv[i], "--return-after-ms") == 0 && i + 1 < argc)
            return_after = atof(argv[++i]);
    }
    if (api && strobe_ondemand_start(NULL) != 0) {
        fprintf(stderr, "ondemand_target: strobe_ondemand_start failed\n");
        return 1;
    }
    char sock[512];
    if (strobe_ondemand_socket_path(sock, sizeof sock) != 0) {
        fprintf(stderr, "ondemand_target: no endpoint (set STROBE_ONDEMAND=1 or pass --api)\n");
        return 1;
    }
    if (flight) {
        strobe_config cfg;
        strobe_config_init(&cfg);
        cfg.ring_bytes = 4u << 20;
        cfg.chunk_bytes = 4096; /* small chunks: the window fills within a few steps */
        if (strobe_start(&cfg) != 0) {
            fprintf(stderr, "ondemand_target: strobe_start (flight recorder) failed\n");
            return 1;
        }
    }
    printf("ready %s\n", sock);
    fflush(stdout);
    double t0 = now_s();
    while (now_s() - t0 < seconds && access(stopfile, F_OK) != 0) {
        if (exit_after >= 0 && (now_s() - t0) * 1000 >= exit_after) _exit(3);
        if (return_after >= 0 && (now_s() - t0) * 1000 >= return_after) break;
        {
            STROBE_OP("aten::mm");
            {
                STROBE_OP("aten::add");
                for (int k = 0; k < 1000; k++)
                    sink += k * 0.5;
            }
            void *p = malloc(4096);
            strobe_record_alloc(STROBE_DEVICE_CPU_ID, p, 4096, 4096, 4096);
            strobe_record_free(STROBE_DEVICE_CPU_ID, p, 4096, 0, 4096);
            free(p);
        }
        if (steps) strobe_step();
        usleep((useconds_t)(step_ms * 1000));
    }
    if (flight) {
        strobe_result *r = NULL;
        if (strobe_stop(&r) == 0) strobe_result_free(r);
    }
    if (api) strobe_ondemand_stop();
    return 0;
}
