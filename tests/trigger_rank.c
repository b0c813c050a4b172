/* trigger_rank.c: one "rank" of a job for the job-wide trigger test (test_trigger_hosts.sh). It
 * serves an on-demand endpoint (STROBE_ONDEMAND=1, in the socket folder $STROBE_RUNTIME_DIR: one
 * folder per "host"), takes its rank from RANK, and steps (strobe_step()) at a speed of its own:
 * each step holds a "rank work" range of 1 + RANK ms.
 *
 *   trigger_rank DIR STEPS HOLD
 *
 * At step HOLD it writes DIR/ready.RANK (its pid) and waits for DIR/go: the test triggers every
 * rank meanwhile, as a synchronous job's ranks (kept together by their collectives) are all at
 * the same step when the requests arrive. Then it runs on to step STEPS at its own speed, and
 * waits for DIR/exit (at most 60 s) before it exits, so that its trace is written. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <strobe/strobe.h>

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int exists(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: trigger_rank DIR STEPS HOLD\n");
        return 2;
    }
    const char *dir = argv[1];
    int steps = atoi(argv[2]), hold = atoi(argv[3]);
    const char *r = getenv("RANK");
    int rank = r ? atoi(r) : 0;
    char sock[512];
    for (int i = 0; strobe_ondemand_socket_path(sock, sizeof sock) != 0; i++) {
        if (i == 500) {
            fprintf(stderr, "trigger_rank: no endpoint (STROBE_ONDEMAND=1?)\n");
            return 1;
        }
        sleep_ms(10);
    }
    for (int s = 1; s <= steps; s++) {
        strobe_step();
        {
            STROBE_SCOPE("rank work");
            sleep_ms(1 + rank);
        }
        if (s == hold) {
            char p[4096], tmp[4096];
            snprintf(tmp, sizeof tmp, "%s/ready.%d.tmp", dir, rank);
            snprintf(p, sizeof p, "%s/ready.%d", dir, rank);
            FILE *f = fopen(tmp, "w");
            if (f == NULL) return 1;
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
            if (rename(tmp, p) != 0) return 1;
            for (int i = 0; !exists(dir, "go"); i++) {
                if (i == 6000) return 1;
                sleep_ms(10);
            }
        }
    }
    for (int i = 0; i < 6000 && !exists(dir, "exit"); i++)
        sleep_ms(10);
    return 0;
}
