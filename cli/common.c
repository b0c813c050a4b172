/* common.c: see common.h. */
#include "common.h"
#include "emit.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "strobe/error.h"
#include "strobe/strobe.h"

/* ---- escaping ------------------------------------------------------------------------------ */

/* Writes the escape of the character at p (which needs one) into out; @return bytes consumed. */
static size_t escape_one(const unsigned char *p, size_t n, char *out) {
    unsigned char c = p[0];
    if (c == '\n') return (void)strcpy(out, "\\n"), 1;
    if (c == '\t') return (void)strcpy(out, "\\t"), 1;
    if (c == '\r') return (void)strcpy(out, "\\r"), 1;
    if (c == 0x1b) return (void)strcpy(out, "\\e"), 1;
    if (c == 0xc2 && n >= 2 && p[1] >= 0x80 && p[1] < 0xa0) {
        snprintf(out, 8, "\\u%04x", p[1]);
        return 2;
    }
    snprintf(out, 8, "\\x%02x", c);
    return 1;
}

static int needs_escape(const unsigned char *p, size_t n, size_t *len) {
    if (p[0] < 0x20 || p[0] == 0x7f) return 1;
    if (p[0] < 0x80) {
        *len = 1;
        return 0;
    }
    *len = cli_utf8_seq((const char *)p, n);
    return *len == 0 || (p[0] == 0xc2 && p[1] < 0xa0); /* not UTF-8, or a C1 control */
}

/* s[0..len), NUL-terminated there when `terminated`, which lets it be returned as it is. */
/* Per thread: the HTA commands computed rank by rank say their messages on the thread that read
 * the rank (cli_hta_err). A worker thread gives its buffers back as it ends (esc_release). */
static _Thread_local char *esc_bufs[8];
static _Thread_local size_t esc_caps[8];

static void esc_release(void) {
    for (size_t k = 0; k < 8; k++) {
        free(esc_bufs[k]);
        esc_bufs[k] = NULL;
        esc_caps[k] = 0;
    }
}

static const char *escape(const char *s, size_t len, int terminated) {
    char **bufs = esc_bufs;
    size_t *caps = esc_caps;
    static _Thread_local unsigned next;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, step = 0;
    while (i < len && !needs_escape(p + i, len - i, &step))
        i += step;
    if (i == len && terminated) return s;
    /* Each byte becomes at most 6 (\u0080 takes two), so 4 per byte is always enough. */
    unsigned k = next++ % 8;
    size_t need = 4 * len + 1;
    if (caps[k] < need) {
        char *b = realloc(bufs[k], need);
        if (b == NULL) return "(out of memory)";
        bufs[k] = b;
        caps[k] = need;
    }
    char *o = bufs[k];
    memcpy(o, s, i);
    o += i;
    while (i < len) {
        if (needs_escape(p + i, len - i, &step)) {
            char esc[8];
            i += escape_one(p + i, len - i, esc);
            size_t el = strlen(esc);
            memcpy(o, esc, el);
            o += el;
        } else {
            memcpy(o, p + i, step);
            o += step;
            i += step;
        }
    }
    *o = '\0';
    return bufs[k];
}

const char *cli_esc_n(const char *s, size_t len) {
    return escape(s, len, 0);
}

const char *cli_esc(const char *s) {
    return s ? escape(s, strlen(s), 1) : "(null)";
}

void cli_put_esc(FILE *f, const char *s) {
    if (s == NULL) s = "(null)";
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s), i = 0, step = 0;
    while (i < len) {
        if (needs_escape(p + i, len - i, &step)) {
            char esc[8];
            i += escape_one(p + i, len - i, esc);
            fputs(esc, f);
        } else {
            fwrite(p + i, 1, step, f);
            i += step;
        }
    }
}

/* ---- options ------------------------------------------------------------------------------- */

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
               int *first_operand) {
    if (*first_operand == 0) {
        optind = 0; /* glibc: start over, whatever an earlier command left */
        opterr = 0; /* the errors are ours: one line, with the help hint */
        *first_operand = -1;
    }
    int c = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (c == -1) *first_operand = optind;
    return c;
}

int cli_usage_error(const char *cmd, const char *msg, const char *arg) {
    fprintf(stderr, "strobe %s: %s%s%s (strobe %s --help)\n", cmd, cli_esc(msg), arg ? ": " : "",
            arg ? cli_esc(arg) : "", cmd);
    return CLI_BAD_INPUT;
}

int cli_option_error(const char *cmd, int c, char **argv, const struct option *longopts) {
    /* A long option is the word before optind (getopt has moved past it); it refused a short
     * one when optopt names a character that is not that long option's. */
    const char *word = optind > 0 ? argv[optind - 1] : "";
    int is_long = strncmp(word, "--", 2) == 0 && word[2] != '\0';
    if (is_long && optopt != 0) {
        size_t n = strcspn(word + 2, "=");
        const struct option *o = longopts;
        while (o->name && !(strncmp(o->name, word + 2, n) == 0 && o->val == optopt))
            o++;
        is_long = o->name != NULL;
    }
    char shortopt[3] = {'-', (char)optopt, '\0'};
    if (!is_long) word = shortopt;
    return cli_usage_error(cmd, c == ':' ? "option needs a value" : "unknown option", word);
}

int cli_help(const char *usage) {
    fputs(usage, stdout);
    return CLI_OK;
}

int cli_version(void) {
    printf("strobe %s\n", strobe_version());
    return CLI_OK;
}

int cli_trace_operand(const char *cmd, int argc, char **argv, int first, const char **path) {
    if (first >= argc) return cli_usage_error(cmd, "no trace given", NULL);
    if (first + 1 < argc) return cli_usage_error(cmd, "more than one trace", argv[first + 1]);
    *path = argv[first];
    return 0;
}

int cli_parse_count(const char *cmd, const char *opt, const char *v, unsigned long long max,
                    unsigned long long *out) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0' || errno || n > max) {
        char msg[96];
        if (max >= UINT32_MAX)
            snprintf(msg, sizeof msg, "bad %s (a count, 0 or more)", opt);
        else
            snprintf(msg, sizeof msg, "bad %s (0 to %llu)", opt, max);
        return cli_usage_error(cmd, msg, v);
    }
    *out = n;
    return 0;
}

int cli_parse_name_width(const char *cmd, const char *v, size_t *out) {
    unsigned long long n;
    if (cli_parse_count(cmd, "--name-width", v, 10000, &n) != 0) return CLI_BAD_INPUT;
    if (n < 4) return cli_usage_error(cmd, "--name-width takes 4 to 10000", v);
    *out = (size_t)n;
    return 0;
}

/* ---- progress ------------------------------------------------------------------------------ */

int cli_progress_delay_ms = 1000;
int cli_progress_tty = -1;

struct cli_progress {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
    char cmd[64];
    char path[512]; /* escaped */
    int stdin_input;
    dev_t dev;
    ino_t ino;
    long long size; /* -1: unknown (a pipe) */
    int fd;         /* the descriptor last found to hold the file, -1 */
    size_t shown;   /* length of the line on the terminal, 0 when none */
};

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

size_t cli_progress_format(char *buf, size_t cap, const char *cmd, const char *path, long long pos,
                           long long size, long long elapsed_ms) {
    int n;
    if (size > 0)
        n = snprintf(buf, cap, "strobe %s: reading %s: %lld%% (%lld MB)", cmd, path,
                     pos >= size ? 100 : pos * 100 / size, pos / 1000000);
    else
        n = snprintf(buf, cap, "strobe %s: reading %s: %lld s", cmd, path, elapsed_ms / 1000);
    return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}

/* A file position the progress line cannot learn (not an error: the line shows no position). */
#define POS_UNKNOWN (-1LL)

/* A descriptor's position, from /proc/self/fdinfo: read by path, so that the watcher never uses
 * a descriptor the loading thread may close (and the system reuse) meanwhile, or POS_UNKNOWN. */
static long long fdinfo_pos(int fd) {
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    FILE *f = fopen(path, "r");
    if (f == NULL) return POS_UNKNOWN;
    long long pos = POS_UNKNOWN;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "pos: %lld", &pos) == 1) break;
    fclose(f);
    return pos;
}

/* Whether descriptor fd holds the file being read (its /proc link, stat'ed by path). */
static int holds_input(const cli_progress *p, int fd) {
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return stat(path, &st) == 0 && st.st_dev == p->dev && st.st_ino == p->ino;
}

/* The file's position in whichever descriptor holds it now (the reader may open it twice), or
 * POS_UNKNOWN. */
static long long file_pos(cli_progress *p) {
    if (p->fd >= 0 && holds_input(p, p->fd)) {
        long long pos = fdinfo_pos(p->fd);
        if (pos >= 0) return pos;
    }
    p->fd = -1;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) return POS_UNKNOWN;
    long long pos = POS_UNKNOWN;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd < 3 || fd == dirfd(d)) continue;
        if (holds_input(p, (int)fd)) {
            p->fd = (int)fd;
            pos = fdinfo_pos((int)fd);
            break;
        }
    }
    closedir(d);
    return pos;
}

static void show(cli_progress *p, const char *line, size_t len) {
    char out[1200];
    size_t n = 0;
    out[n++] = '\r';
    memcpy(out + n, line, len);
    n += len;
    /* Blank out what is left of a longer line before. */
    for (size_t k = len; k < p->shown && n < sizeof out - 1; k++)
        out[n++] = ' ';
    ssize_t w = write(2, out, n);
    (void)w;
    p->shown = len;
}

static void *watch(void *arg) {
    cli_progress *p = arg;
    long long start = now_ms();
    pthread_mutex_lock(&p->lock);
    /* The first look comes at once: a load that ends before the delay shows nothing. */
    for (;;) {
        long long elapsed = now_ms() - start;
        long long wait = elapsed < cli_progress_delay_ms ? cli_progress_delay_ms - elapsed : 250;
        if (elapsed >= cli_progress_delay_ms) {
            long long pos = p->stdin_input ? fdinfo_pos(0) : file_pos(p);
            if (pos >= 0 || p->size < 0) {
                char line[1100];
                size_t len = cli_progress_format(line, sizeof line, p->cmd, p->path, pos,
                                                 pos >= 0 ? p->size : -1, elapsed);
                show(p, line, len);
            }
        }
        if (p->stop) break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)(wait / 1000);
        until.tv_nsec += (long)(wait % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&p->cond, &p->lock, &until);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

cli_progress *cli_progress_start(const char *cmd, const char *path, int quiet) {
    int tty = cli_progress_tty >= 0 ? cli_progress_tty : isatty(2);
    if (quiet || !tty) return NULL;
    cli_progress *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    snprintf(p->cmd, sizeof p->cmd, "%s", cmd);
    snprintf(p->path, sizeof p->path, "%s", cli_esc(path));
    p->stdin_input = strcmp(path, "-") == 0;
    p->fd = -1;
    struct stat st;
    int ok = p->stdin_input ? fstat(0, &st) == 0 : stat(path, &st) == 0;
    if (!ok) {
        free(p);
        return NULL; /* cli_load says why */
    }
    p->dev = st.st_dev;
    p->ino = st.st_ino;
    p->size = S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    if (pthread_create(&p->thread, NULL, watch, p) != 0) {
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        free(p);
        return NULL;
    }
    return p;
}

void cli_progress_stop(cli_progress *p) {
    if (p == NULL) return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    if (p->shown) {
        show(p, "", 0);
        ssize_t w = write(2, "\r", 1);
        (void)w;
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p);
}

/* ---- loading and finishing ----------------------------------------------------------------- */

int cli_load(md_model *m, const char *cmd, const char *path, int quiet) {
    cli_progress *p = cli_progress_start(cmd, path, quiet);
    int rc = md_load(m, path);
    cli_progress_stop(p);
    return cli_load_said(m, cmd, path, rc);
}

int cli_load_said(md_model *m, const char *cmd, const char *path, int rc) {
    if (rc == 0) {
        /* Read all the same, as a cut JSON array is; but a cut packet loses events, so say so. */
        if (m->pf_cut)
            fprintf(stderr,
                    "strobe %s: warning: %s: Perfetto trace cut inside a packet at byte %lld: "
                    "read up to the last whole packet\n",
                    cmd, strcmp(path, "-") == 0 ? "<stdin>" : cli_esc(path),
                    (long long)m->pf_cut_offset);
        /* gzip reads such a file too, and warns ("trailing garbage ignored"). */
        if (m->gz_trailing_bytes)
            fprintf(stderr,
                    "strobe %s: warning: %s: trailing %s ignored: %lld byte(s) after the gzip "
                    "data, from byte %lld\n",
                    cmd, strcmp(path, "-") == 0 ? "<stdin>" : cli_esc(path),
                    m->gz_trailing_zeros ? "zero bytes" : "garbage",
                    (long long)m->gz_trailing_bytes, (long long)m->gz_trailing_offset);
        /* strobe writes at most 8 counters; a file naming more keeps the first MD_PERF_MAX. */
        if (m->perf_dropped)
            fprintf(stderr,
                    "strobe %s: warning: %s: %llu perf counter name(s) in strobe_perf_events past "
                    "the first %d left out\n",
                    cmd, strcmp(path, "-") == 0 ? "<stdin>" : cli_esc(path),
                    (unsigned long long)m->perf_dropped, MD_PERF_MAX);
        return 0;
    }
    fprintf(stderr, "strobe %s: %s\n", cmd, cli_esc(m->err));
    md_free(m);
    return CLI_BAD_INPUT;
}

void cli_say_skipped(const char *cmd, const char *path, const md_model *m) {
    if (m->bad_events)
        fprintf(stderr,
                "strobe %s: %s: %llu malformed event(s) skipped; `strobe check` lists them\n", cmd,
                strcmp(path, "-") == 0 ? "<stdin>" : cli_esc(path),
                (unsigned long long)m->bad_events);
}

int cli_finish(const char *cmd, const char *path, int work, int ok_code) {
    if (work != 0) {
        fflush(stdout);
        fprintf(stderr, "strobe %s: %s: %s\n", cmd, cli_esc(path), strobe_strerror(work));
        return CLI_BAD_INPUT;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "strobe %s: writing the output: %s\n", cmd, strerror(errno));
        return CLI_BAD_INPUT;
    }
    return ok_code;
}

const char *cli_out_reason(int rc, int sys_errno) {
    if ((rc == STROBE_ESYS || rc == STROBE_EIO) && sys_errno > 0) return strerror(sys_errno);
    return strobe_strerror(rc);
}

void cli_print_id(const md_model *m, int64_t num, uint8_t kind, int json) {
    if (kind == MD_ID_STR && json)
        cli_json_str(stdout, md_str(m, (uint32_t)num));
    else if (kind == MD_ID_STR)
        printf("\"%s\"", cli_esc(md_str(m, (uint32_t)num)));
    else if (kind == MD_ID_NONE)
        fputs(json ? "null" : "(none)", stdout);
    else
        printf("%lld", (long long)num);
}

/* ---- files --------------------------------------------------------------------------------- */

int cli_ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static int by_path(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void cli_free_paths(char **paths, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

int cli_folder_files(const char *dir, int (*want)(const char *name), const struct stat *skip,
                     char ***paths, size_t *n) {
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (d == NULL) return -1;
    char **v = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d)) != NULL;) {
        if (!want(de->d_name)) continue;
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        if (count == cap) {
            size_t c2 = cap ? 2 * cap : 16;
            char **v2 = realloc(v, c2 * sizeof *v2);
            if (v2 == NULL) {
                rc = STROBE_ENOMEM;
                break;
            }
            v = v2;
            cap = c2;
        }
        char *p = malloc(len);
        if (p == NULL) {
            rc = STROBE_ENOMEM;
            break;
        }
        snprintf(p, len, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) &&
            !(skip && st.st_dev == skip->st_dev && st.st_ino == skip->st_ino))
            v[count++] = p;
        else
            free(p);
    }
    closedir(d);
    if (rc) {
        cli_free_paths(v, count);
        return rc;
    }
    if (count > 1) qsort(v, count, sizeof *v, by_path);
    *paths = v;
    *n = count;
    return 0;
}

void cli_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    if (n > 1) qsort(base, n, size, cmp);
}

/* ---- jobs ---------------------------------------------------------------------------------- */

int cli_jobs;

int cli_jobs_for(size_t n) {
    long jobs = cli_jobs;
    if (jobs <= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            jobs = CPU_COUNT(&set);
        else
            jobs = sysconf(_SC_NPROCESSORS_ONLN);
        /* Processes of one launch on this machine share its cores, unless the launcher bound
         * each to cores of its own (then the affinity above has fewer than all of them). */
        static const char *const local[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
        for (size_t k = 0; k < sizeof local / sizeof local[0]; k++) {
            const char *v = getenv(local[k]);
            long per = v ? strtol(v, NULL, 10) : 0;
            if (per > 1 && jobs >= sysconf(_SC_NPROCESSORS_ONLN)) {
                jobs /= per;
                break;
            }
        }
    }
    if (jobs > (long)n) jobs = (long)n;
    return jobs < 1 ? 1 : (int)jobs;
}

int cli_parse_jobs(const char *cmd, const char *arg) {
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v < 1 || v > 4096)
        return cli_usage_error(cmd, "--jobs needs a number from 1 to 4096", arg);
    cli_jobs = (int)v;
    return 0;
}

typedef struct par_state {
    pthread_mutex_t lock;
    size_t next, n;
    int stop;
    int (*work)(void *arg, size_t i);
    void *arg;
} par_state;

/* The work items' loop, on the caller's thread or one of its own (own: a thread cli_parallel
 * started, whose escaping buffers go with it). */
static void par_loop(par_state *s) {
    for (;;) {
        pthread_mutex_lock(&s->lock);
        size_t i = s->next;
        int go = !s->stop && i < s->n;
        if (go) s->next++;
        pthread_mutex_unlock(&s->lock);
        if (!go) return;
        if (s->work(s->arg, i) != 0) {
            pthread_mutex_lock(&s->lock);
            s->stop = 1;
            pthread_mutex_unlock(&s->lock);
        }
    }
}

static void *par_worker(void *p) {
    par_loop(p);
    esc_release();
    return NULL;
}

void cli_parallel(size_t n, int jobs, int (*work)(void *arg, size_t i), void *arg) {
    par_state s = {.next = 0, .n = n, .stop = 0, .work = work, .arg = arg};
    if (jobs <= 1 || n <= 1) {
        for (size_t i = 0; i < n; i++)
            if (work(arg, i) != 0) break;
        return;
    }
    pthread_t *t = malloc((size_t)jobs * sizeof *t);
    pthread_mutex_init(&s.lock, NULL);
    int started = 0;
    for (; t && started < jobs; started++)
        if (pthread_create(&t[started], NULL, par_worker, &s) != 0) break;
    /* With no thread started (no memory for them) the caller's own does the work. */
    if (started == 0) par_loop(&s);
    for (int k = 0; k < started; k++)
        pthread_join(t[k], NULL);
    pthread_mutex_destroy(&s.lock);
    free(t);
}
