/* test_dlclose.c: a program that loads libstrobe with dlopen(), uses it and dlclose()s it survives
 * what happens after: a thread that used strobe exiting (its thread-exit destructor lives in the
 * library), and, with STROBE_ONDEMAND=1, the endpoint thread waking for a request. Each case runs
 * in a child process, so that a crash is reported as a failure, not as the test's own death.
 *
 * Usage: test_dlclose PATH_TO_LIBSTROBE_SO OUT_DIR */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "strobe/session.h" /* the config's layout only: nothing of the library is linked */

static const char *lib_path;

/* The library's entry points, looked up by name: this program is not linked with it. */
typedef void (*config_defaults_fn)(strobe_config *, size_t);
typedef int (*start_fn)(const void *);
typedef int (*stop_fn)(void **);
typedef void (*free_fn)(void *);
typedef void (*begin_fn)(const char *, int);
typedef void (*end_fn)(void);

static void *lib;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int session_done, may_exit, helper_rc = 1;

static void *sym(const char *name) {
    void *p = dlsym(lib, name);
    if (p == NULL) fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
    return p;
}

/* Runs a whole session on this thread, then waits (alive, holding strobe's per-thread state) until
 * the library is closed, and exits: the thread-exit destructor runs then. */
static void *helper(void *arg) {
    (void)arg;
    /* strobe_config_init() is inline in the header: what it does, through the library's
     * exported defaults routine. */
    config_defaults_fn config_defaults = (config_defaults_fn)sym("strobe__config_defaults");
    start_fn start = (start_fn)sym("strobe_start");
    stop_fn stop = (stop_fn)sym("strobe_stop");
    free_fn result_free = (free_fn)sym("strobe_result_free");
    begin_fn begin = (begin_fn)sym("strobe__begin_name");
    end_fn end = (end_fn)sym("strobe__end");
    int rc = 1;
    if (config_defaults && start && stop && result_free && begin && end) {
        strobe_config cfg;
        memset(&cfg, 0, sizeof cfg);
        config_defaults(&cfg, sizeof cfg);
        void *r = NULL;
        if (start(&cfg) == 0) {
            begin("on helper", 4);
            end();
            rc = stop(&r);
            if (r) result_free(r);
        }
    }
    pthread_mutex_lock(&mu);
    helper_rc = rc;
    session_done = 1;
    pthread_cond_broadcast(&cv);
    while (!may_exit)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static int case_thread_exit(void) {
    lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, helper, NULL) != 0) return 1;
    pthread_mutex_lock(&mu);
    while (!session_done)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    if (helper_rc != 0) {
        fprintf(stderr, "session on the helper thread failed: %d\n", helper_rc);
        return 1;
    }
    if (dlclose(lib) != 0) {
        fprintf(stderr, "dlclose: %s\n", dlerror());
        return 1;
    }
    pthread_mutex_lock(&mu);
    may_exit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(th, NULL);
    /* A thread that never used strobe also exits cleanly. */
    return 0;
}

/* STROBE_ONDEMAND=1: loading the library starts the endpoint's thread. After dlclose, a request
 * wakes that thread. */
static int case_ondemand(const char *dir) {
    setenv("STROBE_ONDEMAND", "1", 1);
    setenv("STROBE_RUNTIME_DIR", dir, 1);
    lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    char sock[300];
    snprintf(sock, sizeof sock, "%s/%ld.sock", dir, (long)getpid());
    struct stat st;
    for (int i = 0; i < 200 && stat(sock, &st) != 0; i++)
        usleep(10000);
    if (stat(sock, &st) != 0) {
        fprintf(stderr, "the endpoint did not start: no %s\n", sock);
        return 1;
    }
    if (dlclose(lib) != 0) {
        fprintf(stderr, "dlclose: %s\n", dlerror());
        return 1;
    }
    /* Wake the endpoint: connect, ask for its state, read whatever comes back. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(sock) >= sizeof sa.sun_path) {
        fprintf(stderr, "socket path too long: %s\n", sock);
        return 1;
    }
    memcpy(sa.sun_path, sock, strlen(sock) + 1);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        fprintf(stderr, "connect %s: %s\n", sock, strerror(errno));
        return 1;
    }
    static const char req[] = "status\n";
    if (write(fd, req, sizeof req - 1) < 0) return 1;
    char buf[512];
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
        buf[n] = '\0';
        printf("endpoint answered after dlclose: %s", buf);
    }
    /* Give the endpoint thread time to run after its request. */
    usleep(200000);
    return 0;
}

static int run_case(const char *name, int (*fn)(const char *), const char *arg) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(fn(arg));
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return 1;
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "FAIL %s: the process died of signal %d after dlclose\n", name,
                WTERMSIG(status));
        return 1;
    }
    if (WEXITSTATUS(status) != 0) {
        fprintf(stderr, "FAIL %s: exit status %d\n", name, WEXITSTATUS(status));
        return 1;
    }
    printf("ok %s\n", name);
    return 0;
}

static int thread_case(const char *unused) {
    (void)unused;
    return case_thread_exit();
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s LIBSTROBE_SO OUT_DIR\n", argv[0]);
        return 2;
    }
    lib_path = argv[1];
    mkdir(argv[2], 0700);
    chmod(argv[2], 0700);
    int fails = 0;
    fails += run_case("thread exits after dlclose", thread_case, NULL);
    fails += run_case("STROBE_ONDEMAND=1 endpoint after dlclose", case_ondemand, argv[2]);
    return fails ? 1 : 0;
}
