/* cmd_record.c: `strobe record [options] [--] PROGRAM [ARGS...]`: runs PROGRAM with strobe
 * injected (libstrobe_record.so, src/preload/record_hook.c), records every process it starts, and
 * merges their traces into one (merge.c) when it exits.
 *
 * Contents: the usage text; finding PROGRAM and the preload library; the output path and the
 * parts folder; the environment; running and waiting (signals); collecting the parts and
 * merging; the command. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"
#include "merge.h"
#include "strobe/strobe.h"

extern char **environ;

const char cmd_record_usage[] =
    "NAME\n"
    "    strobe record - run a program and record a trace of it, with no change to it\n"
    "\n"
    "SYNOPSIS\n"
    "    strobe record [-o PATH] [--delay SEC] [--duration SEC] [--activities cpu,cuda]\n"
    "                  [--capture-range nvtx:NAME|cuda-profiler-api] [--sample[=HZ]]\n"
    "                  [--call-graph fp|dwarf[,SIZE]] [--no-python-frames]\n"
    "                  [--markers MODE[:SINKS]] [--heap[=all|BYTES]] [--heap-stacks]\n"
    "                  [--mpi] [--torch] [--record-shapes] [--profile-memory] [--with-stack]\n"
    "                  [--no-follow] [--max-part-size SIZE] [--stats] [--keep-parts] [-q]\n"
    "                  [--] PROGRAM [ARGS...]\n"
    "\n"
    "DESCRIPTION\n"
    "    Runs PROGRAM (found as the shell finds it, through PATH) with strobe injected\n"
    "    (LD_PRELOAD of libstrobe_record.so), records it from its start to its exit, and\n"
    "    writes one trace. Options end at PROGRAM or at \"--\"; what follows is PROGRAM's.\n"
    "\n"
    "    PROGRAM runs as it would without strobe: the same standard input, output and error,\n"
    "    working folder, arguments and environment, but for the variables strobe adds for\n"
    "    itself (STROBE_RECORD_*, its library at the end of LD_PRELOAD, and as the NVTX and\n"
    "    CUDA tool and NCCL's profiler plugin: NVTX_INJECTION64_PATH, CUDA_INJECTION64_PATH,\n"
    "    NCCL_PROFILER_PLUGIN; with --torch, its import hook first on PYTHONPATH). Ctrl-C and\n"
    "    Ctrl-\\ go to PROGRAM (strobe record ignores them and writes the trace when PROGRAM\n"
    "    is done); SIGTERM and SIGHUP sent to strobe record are passed on to PROGRAM.\n"
    "\n"
    "    The programs PROGRAM starts are recorded too (fork, fork and exec, posix_spawn,\n"
    "    shell scripts), each as a process of its own in the one trace; --no-follow records\n"
    "    PROGRAM's first process only. Every process streams its trace to a part file while\n"
    "    it runs, so a process that is killed keeps what it had recorded; when PROGRAM exits,\n"
    "    the parts are merged into PATH on one timeline and removed.\n"
    "\n"
    "    What a process records: its NVTX ranges, marks and named threads (strobe is the\n"
    "    program's NVTX tool); with --heap, its allocations summed per call site, sampled\n"
    "    [memory] events and allocation counters (--heap=all: every allocation, as\n"
    "    libstrobe_malloc.so records them); with --activities cpu,cuda, its CUDA\n"
    "    activity through CUPTI from its first cuInit on (the driver calls strobe then: a\n"
    "    program that never uses CUDA does not load it; a program without CUDA gets a note\n"
    "    and no device events); the threads that record, named as the program names them\n"
    "    (pthread_setname_np). A tool already named in NVTX_INJECTION64_PATH or\n"
    "    CUDA_INJECTION64_PATH (Nsight's) keeps its place: strobe then records no NVTX, or\n"
    "    starts CUDA with each process, and says so. A program linked with libstrobe.so\n"
    "    (two copies of strobe in one process) keeps CUDA for its own sessions (CUPTI takes\n"
    "    one client), which get no NVTX ranges (strobe record is the NVTX tool); strobe\n"
    "    record records the rest and says so.\n"
    "\n"
    "    PyTorch: with --torch, every Python process PROGRAM starts (DataLoader workers,\n"
    "    torchrun's and subprocess's children) records torch's operators as torch.profiler\n"
    "    would: an import hook (a sitecustomize.py in a folder strobe record puts first on\n"
    "    PYTHONPATH, before the program's own entries) waits for the program to import torch,\n"
    "    then turns on strobe's torch observer (libstrobe_torch.so, built where torch's CMake\n"
    "    config was found), a RecordFunction callback recording each operator with torch's\n"
    "    args (\"Sequence number\", \"External id\", forward-backward flows). The program's own\n"
    "    sitecustomize still runs. A program that imports torch recorded without --torch gets\n"
    "    a note saying so.\n"
    "\n"
    "    PATH: \".json\" writes Kineto-format JSON, \".pftrace\" Perfetto's protobuf format,\n"
    "    either gzip-compressed when it ends in \".gz\". In PATH, %p is the first process's\n"
    "    pid, %r the rank given by RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID (the\n"
    "    first one set with its world size, as the trace's distributedInfo has it; 0 when\n"
    "    none is), %% a '%'. PATH's folder must be writable: strobe record checks it before\n"
    "    it runs PROGRAM. The parts go to PATH.parts/ meanwhile.\n"
    "\n"
    "    One line on standard error says where the trace went, how many processes and events\n"
    "    it holds. A program that does not load LD_PRELOAD libraries (statically linked,\n"
    "    set-user-ID) is not recorded, nor a child started with an environment of its own\n"
    "    that leaves out LD_PRELOAD (env -i); when PROGRAM itself is not, or a process's\n"
    "    part file could not be written (a full disk), strobe record says which, and why.\n"
    "    PATH must not be PROGRAM, another executable file, or an existing file that is not\n"
    "    a regular one (a device, a FIFO): strobe record refuses it (exit 2).\n"
    "\n"
    "OPTIONS\n"
    "    -o, --output PATH     the trace (default PROGRAM-YYYYmmdd-HHMMSS.json in the working\n"
    "                          folder)\n"
    "    --delay SEC           start recording SEC seconds after each process starts\n"
    "    --duration SEC        record for SEC seconds (per process; the program runs on)\n"
    "    --activities LIST     cpu (always), cuda\n"
    "    --heap[=all|BYTES]    record allocations (malloc, free, ...): summed per call\n"
    "                          stack (frame pointers) in the process (calls, bytes, peak\n"
    "                          live bytes, bytes leaked at exit, temporary allocations),\n"
    "                          the sites written to the trace (\"strobe_heap\", shown by\n"
    "                          strobe summary and report) and the largest printed at the\n"
    "                          end; [memory] events only of allocations sampled one every\n"
    "                          BYTES on average (K, M or G; default 512K; an allocation of\n"
    "                          BYTES or more always is one; each carries the bytes it\n"
    "                          stands for as its \"Weight\") and of their frees; the\n"
    "                          allocated bytes and their high-water mark (as \"reserved\")\n"
    "                          as counters (at most every 1 ms). --heap=all: a [memory]\n"
    "                          event for every call, no sites\n"
    "    --torch               record PyTorch's operators (see PyTorch above); fails at once\n"
    "                          when strobe was built without the torch observer\n"
    "    --record-shapes       --torch, and each operator's \"Input Dims\" and \"Input type\"\n"
    "                          (torch.profiler's record_shapes)\n"
    "    --profile-memory      --torch, and torch's allocations as [memory] events\n"
    "                          (torch.profiler's profile_memory)\n"
    "    --with-stack          --torch, and each operator's Python \"Call stack\"\n"
    "                          (torch.profiler's with_stack)\n"
    "    --mpi                 record PROGRAM's MPI calls (a PMPI interposer,\n"
    "                          libstrobe_record_mpi.so, built where mpi.h was found):\n"
    "                          point-to-point, collectives with Kineto's args (\"Collective\n"
    "                          name\", \"In msg nelems\", ...), waits and tests, each nonblocking\n"
    "                          call linked to its completion (args \"request\", \"completes\");\n"
    "                          at MPI_Init and MPI_Finalize each rank measures its clock\n"
    "                          against rank 0's (\"strobe_clock_sync\" in the trace). Run one\n"
    "                          strobe record per rank: mpirun -np N strobe record --mpi -o\n"
    "                          out_%r.json -- PROGRAM\n"
    "    --heap-stacks         --heap's sites, and a [memory] event for every call (as\n"
    "                          --heap=all), each allocation's with its call stack (frame\n"
    "                          pointers: the program's own frames need them) as its \"Call\n"
    "                          stack\". With --heap and --heap-stacks the largest allocators\n"
    "                          (leaf function and its caller, by bytes allocated, with counts\n"
    "                          and peak live bytes) are printed at the end, on standard error\n"
    "                          (with --stats, standard output)\n"
    "    --capture-range nvtx:NAME\n"
    "                          record only inside the program's NVTX ranges named NAME\n"
    "                          (push/pop, any domain; every such range, each process), as\n"
    "                          nsys --capture-range=nvtx does; not with --delay/--duration\n"
    "    --capture-range cuda-profiler-api\n"
    "                          record only between the program's cuProfilerStart() and\n"
    "                          cuProfilerStop() (cudaProfilerStart/Stop, any number of such\n"
    "                          windows; seen through CUPTI's callbacks, so cudart linked\n"
    "                          statically too), as nsys --capture-range=cudaProfilerApi does;\n"
    "                          implies --activities cpu,cuda; not with --delay/--duration\n"
    "    --sample[=HZ]         sample every thread's call stack HZ times a second of CPU\n"
    "                          time (default 1000, at most 10000; perf_event_open); in a\n"
    "                          CPython 3.11 or 3.12 process, the stacks get the Python frames\n"
    "                          (\"file.py(line): function\") where the interpreter runs them\n"
    "    --call-graph fp|dwarf[,SIZE]\n"
    "                          how --sample takes call stacks, as perf does: fp walks frame\n"
    "                          pointers (cheap; code built without them, as most distribution\n"
    "                          libraries are, gives short stacks); dwarf copies SIZE bytes of\n"
    "                          stack per sample (default 8192, at most 65528) and unwinds them\n"
    "                          with the modules' call frame information (libdw). Default: dwarf\n"
    "                          where it is built in, else fp\n"
    "    --no-python-frames    with --sample, leave Python frames out (no SIGTRAP per sample)\n"
    "    --markers MODE[:SINKS]\n"
    "                          also send the ranges strobe records (NVTX ones included) to\n"
    "                          other tools: MODE interval, event or interval,event; SINKS\n"
    "                          nvtx, ftrace or nvtx,ftrace (default nvtx); see strobe/markers.h\n"
    "    --no-follow           record PROGRAM's first process only\n"
    "    --max-part-size SIZE  stop writing a process's part file at SIZE bytes (K, M, G\n"
    "                          suffixes: 1024s); what did not fit is counted (\"capped\" and\n"
    "                          \"capped_events\" in the part's strobe_stream object) and the\n"
    "                          merge warns. Default: a quarter of the free space of the\n"
    "                          output's folder when recording starts, at least 64M and at most\n"
    "                          16G, so that a process left running (strobe record killed) or\n"
    "                          a flood of events cannot fill the disk\n"
    "    --stats               print the operator summary (strobe summary) and, when there\n"
    "                          was device activity, the top kernels (strobe kernels) at the\n"
    "                          end\n"
    "    --keep-parts          keep the folder of per-process parts\n"
    "    -q, --quiet           no closing line\n"
    "    -h, --help            show this text\n"
    "    -V, --version         show strobe's version\n"
    "\n"
    "ENVIRONMENT\n"
    "    STROBE_RECORD_LIB     the libstrobe_record.so to inject (default: beside strobe, or\n"
    "                          in the installed library folder; for the strobe of the\n"
    "                          Python package, in its strobe/lib/)\n"
    "    STROBE_RECORD_TORCH_LIB\n"
    "                          the torch observer that --torch loads (default:\n"
    "                          libstrobe_torch.so beside libstrobe_record.so)\n"
    "\n"
    "EXIT STATUS\n"
    "    PROGRAM's exit status, or 128+N when signal N ended it; 127 when PROGRAM is not\n"
    "    found, 126 when it cannot be run; 2 for a usage error, an output that cannot be\n"
    "    written (PROGRAM then does not run), or a trace that could not be merged after\n"
    "    PROGRAM exited with 0 (the parts are then kept). When no process recorded anything\n"
    "    (each ended before --delay), no trace is written and the status is PROGRAM's.\n";

enum {
    OPT_DELAY = CLI_LONG_ONLY + 1,
    OPT_DURATION,
    OPT_ACTIVITIES,
    OPT_HEAP,
    OPT_NO_FOLLOW,
    OPT_STATS,
    OPT_KEEP_PARTS,
    OPT_SAMPLE,
    OPT_NO_PYTHON_FRAMES,
    OPT_CALL_GRAPH,
    OPT_MARKERS,
    OPT_CAPTURE_RANGE,
    OPT_MPI,
    OPT_HEAP_STACKS,
    OPT_MAX_PART_SIZE,
    OPT_TORCH,
    OPT_RECORD_SHAPES,
    OPT_PROFILE_MEMORY,
    OPT_WITH_STACK,
};

const struct option cmd_record_options[] = {
    {"output", required_argument, NULL, 'o'},
    {"delay", required_argument, NULL, OPT_DELAY},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"activities", required_argument, NULL, OPT_ACTIVITIES},
    {"heap", optional_argument, NULL, OPT_HEAP},
    {"no-follow", no_argument, NULL, OPT_NO_FOLLOW},
    {"stats", no_argument, NULL, OPT_STATS},
    {"keep-parts", no_argument, NULL, OPT_KEEP_PARTS},
    {"sample", optional_argument, NULL, OPT_SAMPLE},
    {"no-python-frames", no_argument, NULL, OPT_NO_PYTHON_FRAMES},
    {"call-graph", required_argument, NULL, OPT_CALL_GRAPH},
    {"markers", required_argument, NULL, OPT_MARKERS},
    {"capture-range", required_argument, NULL, OPT_CAPTURE_RANGE},
    {"mpi", no_argument, NULL, OPT_MPI},
    {"heap-stacks", no_argument, NULL, OPT_HEAP_STACKS},
    {"max-part-size", required_argument, NULL, OPT_MAX_PART_SIZE},
    {"torch", no_argument, NULL, OPT_TORCH},
    {"record-shapes", no_argument, NULL, OPT_RECORD_SHAPES},
    {"profile-memory", no_argument, NULL, OPT_PROFILE_MEMORY},
    {"with-stack", no_argument, NULL, OPT_WITH_STACK},
    CLI_OPTION_QUIET,
    CLI_OPTIONS_STD,
    {NULL, 0, NULL, 0},
};

typedef struct rec_opts {
    const char *output;
    long long delay_ms, duration_ms; /* duration_ms < 0: to the end */
    int cuda, heap, no_follow, stats, keep_parts, quiet;
    unsigned sample_hz;     /* 0: no sampling */
    int no_python_frames;   /* --no-python-frames */
    const char *call_graph; /* --call-graph's "fp" or "dwarf,SIZE"; NULL: the default */
    char call_graph_buf[32];
    const char *markers; /* STROBE_MARKERS for every process; NULL: none */
    const char *capture; /* --capture-range nvtx:NAME: NAME; NULL: none */
    int mpi;             /* --mpi: libstrobe_record_mpi.so, beside libstrobe_record.so */
    int capture_cuda;    /* --capture-range cuda-profiler-api */
    int heap_stacks;     /* --heap-stacks */
    uint64_t heap_rate;  /* --heap=BYTES: one sampled event every BYTES; 0: --heap=all */
    uint64_t max_part;   /* --max-part-size in bytes; 0: the default, from the free space */
    int torch;           /* --torch (or one of the options below, which imply it) */
    int torch_shapes, torch_memory, torch_stack; /* --record-shapes, --profile-memory ... */
    char torch_lib[PATH_MAX];                    /* --torch: the observer, libstrobe_torch.so */
    char torch_hook[PATH_MAX]; /* --torch: the folder of the import hook (sitecustomize.py) */
} rec_opts;

static int usage_error(const char *msg, const char *arg) {
    return cli_usage_error("record", msg, arg);
}

/* --call-graph fp|dwarf[,SIZE]: checks it (dwarf must be built in and libdw present) and writes
 * what STROBE_RECORD_CALL_GRAPH carries ("fp" or "dwarf,SIZE") into out. @return 0, or the
 * usage error's exit status. */
static int parse_call_graph(const char *arg, char *out, size_t size) {
    if (strcmp(arg, "fp") == 0) {
        snprintf(out, size, "fp");
        return 0;
    }
    unsigned long bytes = STROBE_CPU_SAMPLE_STACK_DEFAULT;
    if (strncmp(arg, "dwarf", 5) != 0 || (arg[5] != '\0' && arg[5] != ','))
        return usage_error("--call-graph takes fp or dwarf[,SIZE]", arg);
    if (arg[5] == ',') {
        char *end;
        errno = 0;
        bytes = strtoul(arg + 6, &end, 10);
        if (errno || end == arg + 6 || *end != '\0' || bytes < 8 ||
            bytes > STROBE_CPU_SAMPLE_STACK_MAX)
            return usage_error("--call-graph dwarf,SIZE takes a stack size in bytes (8 .. 65528)",
                               arg);
    }
    char why[200];
    if (!strobe_cpu_sample_dwarf_available(why, sizeof why)) {
        fprintf(stderr, "strobe record: --call-graph dwarf: %s\n", why);
        return 2;
    }
    snprintf(out, size, "dwarf,%lu", bytes);
    return 0;
}

/* ---- finding PROGRAM and the library --------------------------------------------------------- */

#define EXIT_NOT_FOUND 127
#define EXIT_CANNOT_RUN 126

/* Finds `prog` as execvp() would: a name with a '/' as it is, else the first regular executable
 * file of that name in PATH (default "/usr/local/bin:/usr/bin:/bin"). @return 0 with the path in
 * out, EXIT_NOT_FOUND or EXIT_CANNOT_RUN after the message. */
static int find_program(const char *prog, char *out, size_t size) {
    struct stat st;
    if (strchr(prog, '/')) {
        snprintf(out, size, "%s", prog);
        if (stat(prog, &st) != 0) {
            int e = errno;
            fprintf(stderr, "strobe record: %s: %s\n", cli_esc(prog), strerror(e));
            return e == ENOENT || e == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
        }
        if (S_ISDIR(st.st_mode) || access(prog, X_OK) != 0) {
            fprintf(stderr, "strobe record: %s: %s\n", cli_esc(prog),
                    strerror(S_ISDIR(st.st_mode) ? EISDIR : EACCES));
            return EXIT_CANNOT_RUN;
        }
        return 0;
    }
    const char *path = getenv("PATH");
    if (path == NULL) path = "/usr/local/bin:/usr/bin:/bin";
    int denied = 0;
    if (prog[0] != '\0') {
        for (const char *p = path;; p++) {
            size_t len = strcspn(p, ":");
            /* An empty entry is the working folder. */
            int n = snprintf(out, size, "%.*s%s%s", (int)len, len ? p : ".", "/", prog);
            if (n > 0 && (size_t)n < size && stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) {
                if (access(out, X_OK) == 0) return 0;
                denied = 1;
            }
            p += len;
            if (*p == '\0') break;
        }
    }
    if (denied) {
        fprintf(stderr, "strobe record: %s: %s\n", cli_esc(prog), strerror(EACCES));
        return EXIT_CANNOT_RUN;
    }
    fprintf(stderr, "strobe record: %s: command not found\n", cli_esc(prog));
    return EXIT_NOT_FOUND;
}

#ifndef STROBE_RECORD_BIN_TO_LIB
#define STROBE_RECORD_BIN_TO_LIB "../lib"
#endif

/* An address in the module that holds the CLI, for dladdr(). */
static const char cli_record_anchor = 0;

/* The library to inject: STROBE_RECORD_LIB, else beside the strobe binary (the build tree), else
 * in the library folder relative to it (an install). When the CLI is compiled into the Python
 * package's extension (`python -m strobe`, pip's `strobe` command), the program is the
 * interpreter, whose folders may hold another strobe's library: the package's own is in lib/
 * beside the extension's file (strobe/lib/), and only there. @return 0 with its absolute path, or
 * -1 after the message. */
static int find_library(char *out, size_t size) {
    const char *env = getenv("STROBE_RECORD_LIB");
    char cand[PATH_MAX + 64];
    if (env && env[0]) {
        if (realpath(env, out) == NULL || access(out, R_OK) != 0) {
            fprintf(stderr, "strobe record: STROBE_RECORD_LIB=%s: %s\n", cli_esc(env),
                    strerror(errno));
            return -1;
        }
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        Dl_info info;
        char mod[PATH_MAX];
        if (dladdr(&cli_record_anchor, &info) != 0 && info.dli_fname != NULL &&
            realpath(info.dli_fname, mod) != NULL && strcmp(mod, exe) != 0) {
            *strrchr(mod, '/') = '\0';
            snprintf(cand, sizeof cand, "%s/lib/libstrobe_record.so", mod);
            if (access(cand, R_OK) == 0 && realpath(cand, out) != NULL) return 0;
            fprintf(stderr, "strobe record: %s: %s (set STROBE_RECORD_LIB)\n", cli_esc(cand),
                    strerror(errno));
            return -1;
        }
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        const char *rel[] = {"", "/" STROBE_RECORD_BIN_TO_LIB};
        for (size_t i = 0; i < 2; i++) {
            snprintf(cand, sizeof cand, "%s%s/libstrobe_record.so", exe, rel[i]);
            if (access(cand, R_OK) == 0 && realpath(cand, out) != NULL) return 0;
        }
    }
    (void)size;
    fprintf(stderr, "strobe record: libstrobe_record.so not found beside strobe or in its library "
                    "folder (set STROBE_RECORD_LIB)\n");
    return -1;
}

/* --mpi: the library with the MPI interposer, libstrobe_record_mpi.so, in the folder of `lib`
 * (replaced with it). @return 0, or -1 after the message. */
static int mpi_library(char *lib, size_t size) {
    char cand[PATH_MAX + 32];
    const char *slash = strrchr(lib, '/');
    int dir = slash ? (int)(slash - lib) : 0;
    snprintf(cand, sizeof cand, "%.*s/libstrobe_record_mpi.so", dir, lib);
    if (access(cand, R_OK) != 0 || strlen(cand) >= size) {
        fprintf(stderr,
                "strobe record: --mpi: %s not found (strobe was built without MPI: mpi.h, "
                "Debian's libopenmpi-dev, was not found)\n",
                cli_esc(cand));
        return -1;
    }
    snprintf(lib, size, "%s", cand);
    return 0;
}

/* --torch: the observer (STROBE_RECORD_TORCH_LIB, else libstrobe_torch.so in the folder of `lib`)
 * and the import hook's folder (pyhook/ there in the build tree, strobe/pyhook/ in an install's
 * library folder), into o->torch_lib and o->torch_hook. @return 0, or -1 after the message. */
static int torch_library(rec_opts *o, const char *lib) {
    char folder[PATH_MAX], cand[PATH_MAX + 64];
    const char *slash = strrchr(lib, '/');
    snprintf(folder, sizeof folder, "%.*s", slash ? (int)(slash - lib) : 0, lib);
    const char *env = getenv("STROBE_RECORD_TORCH_LIB");
    if (env && env[0]) {
        if (realpath(env, o->torch_lib) == NULL || access(o->torch_lib, R_OK) != 0) {
            fprintf(stderr, "strobe record: --torch: STROBE_RECORD_TORCH_LIB=%s: %s\n",
                    cli_esc(env), strerror(errno));
            return -1;
        }
    } else {
        snprintf(cand, sizeof cand, "%s/libstrobe_torch.so", folder);
        if (access(cand, R_OK) != 0 || realpath(cand, o->torch_lib) == NULL) {
            fprintf(stderr,
                    "strobe record: --torch: %s not found: strobe was built without the torch "
                    "observer (torch's CMake config, TorchConfig.cmake, was not found when it "
                    "was configured)\n",
                    cli_esc(cand));
            return -1;
        }
    }
    static const char *const hooks[] = {"pyhook", "strobe/pyhook"};
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
        snprintf(cand, sizeof cand, "%s/%s/sitecustomize.py", folder, hooks[i]);
        if (access(cand, R_OK) != 0) continue;
        *strrchr(cand, '/') = '\0';
        if (realpath(cand, o->torch_hook) != NULL) return 0;
    }
    fprintf(stderr,
            "strobe record: --torch: the import hook (sitecustomize.py) is in neither %s/pyhook "
            "nor %s/strobe/pyhook\n",
            cli_esc(folder), cli_esc(folder));
    return -1;
}

/* ---- the output path and the parts folder -----------------------------------------------------
 */

/* The rank of this process in a parallel job, from the launcher's variables as the library reads
 * them for the trace's distributedInfo (strobe/dist.h), into buf; NULL when none is set. */
static const char *launcher_rank(char *buf, size_t size) {
    int rank;
    if (!strobe_get_rank(&rank, NULL, NULL)) return NULL;
    snprintf(buf, size, "%d", rank);
    return buf;
}

/* Writes `pattern` with %p (pid), %r (rank) and %% expanded into out. @return 0 or -1 (too
 * long). */
static int expand_output(const char *pattern, long pid, char *out, size_t size) {
    char rank_buf[16];
    const char *rank = launcher_rank(rank_buf, sizeof rank_buf);
    size_t o = 0;
    for (const char *s = pattern; *s; s++) {
        char num[32];
        const char *add = s;
        size_t len = 1;
        if (s[0] == '%' && (s[1] == 'p' || s[1] == 'r' || s[1] == '%')) {
            if (s[1] == 'p') {
                snprintf(num, sizeof num, "%ld", pid);
                add = num;
            } else if (s[1] == 'r') {
                add = rank ? rank : "0";
            }
            len = strlen(add);
            s++;
        }
        if (o + len >= size) return -1;
        memcpy(out + o, add, len);
        o += len;
    }
    out[o] = '\0';
    return 0;
}

/* The default output: PROGRAM-YYYYmmdd-HHMMSS.json in the working folder. */
static void default_output(const char *prog, char *out, size_t size) {
    const char *base = strrchr(prog, '/');
    base = base ? base + 1 : prog;
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32] = "";
    if (localtime_r(&now, &tm)) strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(out, size, "%s-%s.json", base[0] ? base : "program", stamp);
}

/* Whether the trace may go to `out`: not over PROGRAM (`prog`, the file it runs from), nor over
 * any other existing executable file or anything that is not a regular file (a folder, a device,
 * a FIFO), which a trace would replace or never reach. A folder keeps prepare_output's message.
 * @return 0, or -1 after a one-line message. */
static int output_replaceable(const char *out, const char *prog) {
    struct stat st, ps;
    if (stat(out, &st) != 0 || S_ISDIR(st.st_mode)) return 0;
    if (stat(prog, &ps) == 0 && st.st_dev == ps.st_dev && st.st_ino == ps.st_ino) {
        fprintf(stderr, "strobe record: %s: the output is PROGRAM itself (%s); not replaced\n",
                cli_esc(out), cli_esc(prog));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "strobe record: %s: the output exists and is not a regular file\n",
                cli_esc(out));
        return -1;
    }
    if (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) {
        fprintf(stderr,
                "strobe record: %s: the output is an existing executable file; not "
                "replaced\n",
                cli_esc(out));
        return -1;
    }
    return 0;
}

/* Checks that the output can be written (its folder exists and takes files; it is not a folder)
 * and makes the parts folder beside it (PATH.parts, or PATH.parts.N when that is taken).
 * @return 0 with the parts folder's absolute path, or -1 after the message. */
static int prepare_output(const char *out, char *parts, size_t size) {
    struct stat st;
    if (out[0] == '\0' || out[strlen(out) - 1] == '/') {
        fprintf(stderr, "strobe record: %s: the output must name a file\n", cli_esc(out));
        return -1;
    }
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "strobe record: %s: %s\n", cli_esc(out), strerror(EISDIR));
        return -1;
    }
    char dir[PATH_MAX];
    const char *slash = strrchr(out, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == out)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - out), out);
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "strobe record: %s: cannot write in %s: %s\n", cli_esc(out), cli_esc(dir),
                strerror(errno));
        return -1;
    }
    char want[PATH_MAX + 32];
    for (int n = 0; n < 100; n++) {
        if (n == 0)
            snprintf(want, sizeof want, "%s.parts", out);
        else
            snprintf(want, sizeof want, "%s.parts.%d", out, n);
        if (mkdir(want, 0700) == 0) {
            if (realpath(want, parts) == NULL || strlen(parts) >= size) {
                rmdir(want);
                break;
            }
            return 0;
        }
        if (errno != EEXIST) {
            fprintf(stderr, "strobe record: %s: cannot make a folder for the parts: %s\n",
                    cli_esc(want), strerror(errno));
            return -1;
        }
    }
    fprintf(stderr, "strobe record: %s: cannot make a folder for the parts\n", cli_esc(out));
    return -1;
}

/* ---- the environment --------------------------------------------------------------------------
 */

typedef struct env_list {
    char **v;
    size_t n, cap;
} env_list;

static int env_add(env_list *e, const char *name, const char *value) {
    if (e->n + 2 > e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        char **v = realloc(e->v, cap * sizeof *v);
        if (v == NULL) return -1;
        e->v = v;
        e->cap = cap;
    }
    size_t len = strlen(name) + strlen(value) + 2;
    char *s = malloc(len);
    if (s == NULL) return -1;
    snprintf(s, len, "%s=%s", name, value);
    e->v[e->n++] = s;
    e->v[e->n] = NULL;
    return 0;
}

static void env_free(env_list *e) {
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
}

/* SIZE: a whole number of bytes, with an optional K, M or G (powers of 1024). */
/* --heap's sampling rate: one [memory] event every 512 KiB allocated, on average. tcmalloc's
 * default of 2 MiB is made for heap profiles taken all the time in production; a recording is
 * shorter and its timeline shows the events, so four times as many: a busy PyTorch process that
 * allocates some 10 GB a second then writes some 20 000 events a second (docs/GUIDE.md). */
#define HEAP_RATE_DEFAULT (UINT64_C(512) << 10)

static int parse_size(const char *v, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || v[0] == '-') return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10;
    if (*end == 'M' || *end == 'm') shift = 20;
    if (*end == 'G' || *end == 'g') shift = 30;
    if (shift) end++;
    if (*end != '\0' || n == 0 || n > (UINT64_C(1) << 50) >> shift) return -1;
    *out = (uint64_t)n << shift;
    return 0;
}

/* The default part cap: a quarter of the free space of `dir`'s file system, 64 MiB .. 16 GiB. */
static uint64_t default_part_cap(const char *dir) {
    struct statvfs fs;
    uint64_t cap = UINT64_C(16) << 30;
    if (statvfs(dir, &fs) == 0) {
        uint64_t avail = (uint64_t)fs.f_bavail * (uint64_t)fs.f_frsize;
        if (avail / 4 < cap) cap = avail / 4;
    }
    return cap < (UINT64_C(64) << 20) ? UINT64_C(64) << 20 : cap;
}

/* PROGRAM's environment: ours, less any STROBE_RECORD_* and LD_PRELOAD, plus the settings and
 * LD_PRELOAD with the library at its end. @return 0 or -1 (out of memory). */
static int make_env(env_list *e, const rec_opts *o, const char *parts, const char *lib) {
    int rc = 0;
    const char *preload = NULL, *pythonpath = NULL;
    for (char **p = environ; *p && rc == 0; p++) {
        if (strncmp(*p, "STROBE_RECORD_", 14) == 0) continue;
        if (o->torch && strncmp(*p, "PYTHONPATH=", 11) == 0) {
            pythonpath = *p + 11; /* --torch: kept, after the import hook's folder */
            continue;
        }
        if (o->markers && strncmp(*p, "STROBE_MARKERS=", 15) == 0) continue; /* --markers' */
        if (strncmp(*p, "LD_PRELOAD=", 11) == 0) {
            preload = *p + 11;
            continue;
        }
        const char *eq = strchr(*p, '=');
        if (eq == NULL) continue;
        char name[256];
        size_t nl = (size_t)(eq - *p);
        if (nl >= sizeof name) {
            /* Kept as it is: copied whole. */
            if (env_add(e, "", "") != 0) return -1;
            free(e->v[e->n - 1]);
            e->v[e->n - 1] = strdup(*p);
            if (e->v[e->n - 1] == NULL) return -1;
            continue;
        }
        memcpy(name, *p, nl);
        name[nl] = '\0';
        rc = env_add(e, name, eq + 1);
    }
    char num[32];
    if (rc == 0) rc = env_add(e, "STROBE_RECORD_DIR", parts);
    if (rc == 0) rc = env_add(e, "STROBE_RECORD_ACTIVITIES", o->cuda ? "cpu,cuda" : "cpu");
    if (rc == 0 && o->delay_ms > 0) {
        snprintf(num, sizeof num, "%lld", o->delay_ms);
        rc = env_add(e, "STROBE_RECORD_DELAY_MS", num);
    }
    if (rc == 0 && o->duration_ms >= 0) {
        snprintf(num, sizeof num, "%lld", o->duration_ms);
        rc = env_add(e, "STROBE_RECORD_DURATION_MS", num);
    }
    if (rc == 0 && o->heap) {
        char rate[32];
        snprintf(rate, sizeof rate, "%llu", (unsigned long long)o->heap_rate);
        rc = env_add(e, "STROBE_RECORD_HEAP", o->heap_rate && !o->heap_stacks ? rate : "all");
    }
    if (rc == 0 && o->heap_stacks) rc = env_add(e, "STROBE_RECORD_HEAP_STACKS", "1");
    if (rc == 0 && o->sample_hz) {
        snprintf(num, sizeof num, "%u", o->sample_hz);
        rc = env_add(e, "STROBE_RECORD_SAMPLE_HZ", num);
    }
    if (rc == 0 && o->no_python_frames) rc = env_add(e, "STROBE_RECORD_NO_PYTHON_FRAMES", "1");
    if (rc == 0 && o->sample_hz && o->call_graph)
        rc = env_add(e, "STROBE_RECORD_CALL_GRAPH", o->call_graph);
    /* Markers start at load in every process (src/markers reads STROBE_MARKERS). */
    if (rc == 0 && o->markers) rc = env_add(e, "STROBE_MARKERS", o->markers);
    if (rc == 0 && o->capture) rc = env_add(e, "STROBE_RECORD_CAPTURE_NVTX", o->capture);
    if (rc == 0 && o->capture_cuda) rc = env_add(e, "STROBE_RECORD_CAPTURE_CUDA", "1");
    if (rc == 0 && o->no_follow) rc = env_add(e, "STROBE_RECORD_NO_FOLLOW", "1");
    if (rc == 0 && o->torch) {
        /* The import hook (src/torch/pyhook/sitecustomize.py) reads these; its folder comes
         * first on PYTHONPATH, so that Python imports it as sitecustomize (it then runs the
         * program's own). */
        char flags[64];
        snprintf(flags, sizeof flags, "%s%s%s", o->torch_shapes ? "shapes," : "",
                 o->torch_memory ? "memory," : "", o->torch_stack ? "stack," : "");
        size_t fl = strlen(flags);
        if (fl) flags[fl - 1] = '\0';
        rc = env_add(e, "STROBE_RECORD_TORCH_LIB", o->torch_lib);
        if (rc == 0) rc = env_add(e, "STROBE_RECORD_TORCH_FLAGS", flags);
        size_t len = strlen(o->torch_hook) + (pythonpath ? strlen(pythonpath) + 1 : 0) + 1;
        char *v = rc == 0 ? malloc(len) : NULL;
        if (v == NULL) return -1;
        snprintf(v, len, "%s%s%s", o->torch_hook, pythonpath && pythonpath[0] ? ":" : "",
                 pythonpath ? pythonpath : "");
        rc = env_add(e, "PYTHONPATH", v);
        free(v);
    }
    if (rc == 0) rc = env_add(e, "STROBE_RECORD_PRELOAD", lib);
    snprintf(num, sizeof num, "%llu",
             (unsigned long long)(o->max_part ? o->max_part : default_part_cap(parts)));
    if (rc == 0) rc = env_add(e, "STROBE_RECORD_MAX_BYTES", num);
    /* The recorded processes stop recording if this one dies (record_hook.c, the watch). */
    snprintf(num, sizeof num, "%ld", (long)getpid());
    if (rc == 0) rc = env_add(e, "STROBE_RECORD_WATCH_PID", num);
    /* NVTX ranges and, with CUDA, the driver's first cuInit reach the preloaded library through
     * its entry points (src/preload/record_hook.c). A tool the user named already (Nsight's) is
     * kept: it is theirs, and strobe records without it (warned in run_record). */
    if (rc == 0 && !getenv("NVTX_INJECTION64_PATH")) rc = env_add(e, "NVTX_INJECTION64_PATH", lib);
    if (rc == 0 && o->cuda && !getenv("CUDA_INJECTION64_PATH"))
        rc = env_add(e, "CUDA_INJECTION64_PATH", lib);
    /* NCCL's events reach the session through its profiler plugin (src/nccl), unless the user
     * named a plugin of their own. */
    if (rc == 0 && !getenv("NCCL_PROFILER_PLUGIN")) rc = env_add(e, "NCCL_PROFILER_PLUGIN", lib);
    if (rc == 0) {
        size_t len = (preload ? strlen(preload) + 1 : 0) + strlen(lib) + 1;
        char *v = malloc(len);
        if (v == NULL) return -1;
        snprintf(v, len, "%s%s%s", preload && preload[0] ? preload : "",
                 preload && preload[0] ? ":" : "", lib);
        rc = env_add(e, "LD_PRELOAD", v);
        free(v);
    }
    return rc;
}

/* ---- running and waiting ----------------------------------------------------------------------
 */

static volatile sig_atomic_t child_pid;

/* SIGTERM and SIGHUP sent to strobe record go on to PROGRAM. */
static void forward(int sig) {
    if (child_pid > 0) kill((pid_t)child_pid, sig);
}

/* Runs PROGRAM. @return its exit status (128+N for signal N), or EXIT_CANNOT_RUN /
 * EXIT_NOT_FOUND when it could not be started; *pid is its pid (0 when it did not start). */
static int run_program(const char *file, char **argv, char **envp, long *pid) {
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGQUIT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    fflush(NULL);
    pid_t c = fork();
    if (c < 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        fprintf(stderr, "strobe record: cannot start %s: %s\n", cli_esc(file), strerror(errno));
        *pid = 0;
        return EXIT_CANNOT_RUN;
    }
    if (c == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        execve(file, argv, envp);
        int e = errno;
        if (e == ENOEXEC) {
            /* A script without "#!": the shell runs it, as execvp() and shells do. */
            size_t n = 0;
            while (argv[n])
                n++;
            char **sh = calloc(n + 2, sizeof *sh);
            if (sh) {
                sh[0] = "sh";
                sh[1] = (char *)file;
                memcpy(sh + 2, argv + 1, n * sizeof *sh); /* argv[1..n], NULL included */
                execve("/bin/sh", sh, envp);
            }
        }
        fprintf(stderr, "strobe record: %s: %s\n", cli_esc(argv[0]), strerror(e));
        _exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
    }
    *pid = (long)c;
    child_pid = c;
    struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward}, o_int, o_quit,
                     o_term, o_hup;
    sigemptyset(&ign.sa_mask);
    sigemptyset(&fwd.sa_mask);
    sigaction(SIGINT, &ign, &o_int);
    sigaction(SIGQUIT, &ign, &o_quit);
    sigaction(SIGTERM, &fwd, &o_term);
    sigaction(SIGHUP, &fwd, &o_hup);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int status = 0;
    while (waitpid(c, &status, 0) < 0 && errno == EINTR) {
    }
    child_pid = 0;
    sigaction(SIGINT, &o_int, NULL);
    sigaction(SIGQUIT, &o_quit, NULL);
    sigaction(SIGTERM, &o_term, NULL);
    sigaction(SIGHUP, &o_hup, NULL);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_CANNOT_RUN;
}

/* ---- collecting the parts and merging ---------------------------------------------------------
 */

typedef struct part {
    long pid, seq;
    char *path, *name;
} part;

/* The first process's parts first (in order), then by pid and sequence. */
static long root_pid_for_sort;
static int cmp_parts(const void *a, const void *b) {
    const part *x = a, *y = b;
    int rx = x->pid == root_pid_for_sort, ry = y->pid == root_pid_for_sort;
    if (rx != ry) return rx ? -1 : 1;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Reads the program name the preload left beside a part (NULL when there is none). */
static char *read_name(const char *parts, const char *stem) {
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s.name", parts, stem);
    FILE *f = fopen(path, "re");
    if (f == NULL) return NULL;
    char buf[256];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return buf[0] ? strdup(buf) : NULL;
}

/* Lists the parts of the folder. @return their count (0: none), or -1 out of memory. */
static long list_parts(const char *parts, long root, part **out) {
    DIR *d = opendir(parts);
    *out = NULL;
    if (d == NULL) return 0;
    part *v = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        /* PID.json or PID.N.json */
        char *end;
        long pid = strtol(de->d_name, &end, 10), seq = 0;
        if (end == de->d_name || pid <= 0) continue;
        if (*end == '.' && end[1] >= '0' && end[1] <= '9') seq = strtol(end + 1, &end, 10);
        if (strcmp(end, ".json") != 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            part *w = realloc(v, cap * sizeof *w);
            if (w == NULL) break;
            v = w;
        }
        char stem[300];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(de->d_name) - 5), de->d_name);
        size_t len = strlen(parts) + strlen(de->d_name) + 2;
        v[n].path = malloc(len);
        if (v[n].path == NULL) break;
        snprintf(v[n].path, len, "%s/%s", parts, de->d_name);
        v[n].pid = pid;
        v[n].seq = seq;
        v[n].name = read_name(parts, stem);
        n++;
    }
    closedir(d);
    root_pid_for_sort = root;
    if (n) qsort(v, n, sizeof *v, cmp_parts);
    *out = v;
    return (long)n;
}

static void remove_parts(const char *parts) {
    DIR *d = opendir(parts);
    if (d) {
        for (struct dirent *de; (de = readdir(d)) != NULL;) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            char path[PATH_MAX + 300];
            snprintf(path, sizeof path, "%s/%s", parts, de->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(parts);
}

/* ---- what was not recorded, and why -----------------------------------------------------------
 */

/* Whether the loader runs `file` in secure-execution mode for this user (set-user-ID to another
 * user, set-group-ID to another group; the kernel ignores both bits on a "#!" script): ld.so then
 * ignores LD_PRELOAD, and the program is not recorded. */
static int secure_exec(const char *file) {
    struct stat st;
    if (stat(file, &st) != 0) return 0;
    int setuid = (st.st_mode & S_ISUID) && st.st_uid != getuid();
    int setgid = (st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid();
    if (!setuid && !setgid) return 0;
    char magic[2] = {0, 0};
    FILE *f = fopen(file, "re");
    if (f) {
        if (fread(magic, 1, 2, f) != 2) magic[0] = 0;
        fclose(f);
    }
    return !(magic[0] == '#' && magic[1] == '!');
}

/* The bytes free on the filesystem of the parts folder (ULLONG_MAX when unknown). */
static unsigned long long parts_fs_free(const char *parts) {
    struct statvfs sv;
    return statvfs(parts, &sv) == 0 ? (unsigned long long)sv.f_bavail * sv.f_frsize : ULLONG_MAX;
}

/* Says which processes were not recorded: PROGRAM's first process when it left no part at all
 * (`root`, run from `file`; not said where --delay or --capture-range can leave none), and each
 * process that reserved a part (PARTS/STEM.name) but has no part file: its part could not be
 * created or its session not started (the preload said why, without naming it). The parts'
 * filesystem counts as full with less than 1 MiB free. */
static void report_unrecorded(const rec_opts *o, const char *parts, long root, const char *file) {
    unsigned long long free_bytes = parts_fs_free(parts);
    int full = free_bytes < (1u << 20), root_seen = 0, orphans = 0;
    DIR *d = opendir(parts);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (end == de->d_name || pid <= 0) continue;
        if (*end == '.' && end[1] >= '0' && end[1] <= '9') strtol(end + 1, &end, 10);
        if (strcmp(end, ".json") == 0) root_seen |= pid == root;
        if (strcmp(end, ".name") != 0) continue;
        char json[PATH_MAX + 320], stem[300];
        snprintf(stem, sizeof stem, "%.*s", (int)(end - de->d_name), de->d_name);
        snprintf(json, sizeof json, "%s/%s.json", parts, stem);
        if (access(json, F_OK) == 0) continue;
        root_seen |= pid == root;
        orphans++;
        char *name = read_name(parts, stem);
        fprintf(stderr,
                "strobe record: process %ld (%s) was not recorded: its part file could not be "
                "created or written in %s%s; all its events are lost\n",
                pid, name ? cli_esc(name) : "name unknown", cli_esc(parts),
                full ? " (the filesystem is full)" : "");
        free(name);
    }
    if (d) closedir(d);
    /* A part that hit the full filesystem while its process ran ends at its last complete
     * write (the stream's error line above gives its path, PARTS/PID[.N].json). */
    if (full && (orphans || free_bytes == 0))
        fprintf(stderr,
                "strobe record: the filesystem of %s is full: what a process recorded after "
                "its part's last complete write is lost\n",
                cli_esc(parts));
    if (root_seen || root <= 0) return;
    if (secure_exec(file))
        fprintf(stderr,
                "strobe record: %s (pid %ld) was not recorded: it is set-user-ID or "
                "set-group-ID, and the loader ignores LD_PRELOAD for it\n",
                cli_esc(file), root);
    else if (o->delay_ms <= 0 && !o->capture && !o->capture_cuda)
        fprintf(stderr,
                "strobe record: %s (pid %ld) was not recorded: no part file appeared for it "
                "(%s)\n",
                cli_esc(file), root,
                full ? "the filesystem of the parts is full"
                     : "statically linked, set-user-ID, or it cleared LD_PRELOAD");
}

/* Merges the parts into `out`. @return 0, 1 when there were none (said on stderr: nothing is
 * written and the parts folder is removed), or -1 (said on stderr). */
static int merge_parts(const rec_opts *o, const char *parts, long root, int64_t end_ns,
                       const char *out, const char *trace_name, int *device_events) {
    part *v = NULL;
    long n = list_parts(parts, root, &v);
    int rc = -1;
    if (n <= 0) {
        /* Every process ended before its --delay, or none could record (each said why). */
        fprintf(stderr, "strobe record: no process recorded anything: %s not written\n",
                cli_esc(out));
        rc = 1;
    } else {
        cli_merge_input *in = calloc((size_t)n, sizeof *in);
        cli_merge_stats st;
        if (in != NULL) {
            for (long i = 0; i < n; i++) {
                in[i].path = v[i].path;
                in[i].process_name = v[i].name;
                in[i].pid = v[i].pid;
                /* The first process's last image ended when waitpid() said so. */
                if (v[i].pid == root && (i + 1 == n || v[i + 1].pid != root)) in[i].end_ns = end_ns;
            }
            rc = cli_merge("record", in, (size_t)n, out, trace_name, &st);
            free(in);
            *device_events = rc == 0 && st.device_events > 0;
        }
        if (rc == 0 && !o->quiet)
            fprintf(stderr, "strobe record: wrote %s: %zu process%s, %llu event%s\n", cli_esc(out),
                    st.processes, st.processes == 1 ? "" : "es", (unsigned long long)st.events,
                    st.events == 1 ? "" : "s");
        if (rc == 0 && o->cuda && st.device_events == 0)
            fprintf(stderr, "strobe record: note: no CUDA activity was recorded (the program "
                            "used no GPU, or CUDA could not be traced here)\n");
        if (rc == 0 && st.dropped)
            fprintf(stderr,
                    "strobe record: warning: %llu event(s) were dropped while recording: a "
                    "process's record buffer was full (its part's writer fell behind the "
                    "program); the trace holds the rest\n",
                    (unsigned long long)st.dropped);
        if (rc == 0 && st.clipped)
            fprintf(stderr,
                    "strobe record: %llu slice(s) ended after the slice around them: ended "
                    "with it\n",
                    (unsigned long long)st.clipped);
    }
    for (long i = 0; i < n; i++) {
        free(v[i].path);
        free(v[i].name);
    }
    free(v);
    return rc;
}

/* --heap, --heap-stacks: the largest allocation sites. Each part has its own list
 * (PARTS/<part>.heap, written by the preload: "BYTES\tCOUNT\tPEAK\tLEAF\tCALLER" lines, then
 * "missed\tN"); the rows of every part are summed by leaf and caller, the peak the highest of one
 * part (one process, or one captured window). */
typedef struct heap_row {
    char *leaf, *caller;
    long long bytes, peak;
    unsigned long long count;
} heap_row;

static int cmp_heap_rows(const void *a, const void *b) {
    const heap_row *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    int c = strcmp(x->leaf, y->leaf);
    return c ? c : strcmp(x->caller, y->caller);
}

#define HEAP_TOP 10

static void print_heap_sites(const char *parts, FILE *to) {
    DIR *d = opendir(parts);
    if (d == NULL) return;
    heap_row *v = NULL;
    size_t n = 0, cap = 0;
    unsigned long long missed = 0;
    int files = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".heap") != 0) continue;
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", parts, de->d_name);
        FILE *f = fopen(path, "re");
        if (f == NULL) continue;
        files++;
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            unsigned long long m;
            if (sscanf(line, "missed\t%llu", &m) == 1) {
                missed += m;
                continue;
            }
            char *f1 = line, *f2, *f3, *f4, *f5;
            if (!(f2 = strchr(f1, '\t')) || !(f3 = strchr(f2 + 1, '\t')) ||
                !(f4 = strchr(f3 + 1, '\t')) || !(f5 = strchr(f4 + 1, '\t')))
                continue;
            *f2++ = *f3++ = *f4++ = *f5++ = '\0';
            heap_row r = {f4, f5, strtoll(f1, NULL, 10), strtoll(f3, NULL, 10),
                          strtoull(f2, NULL, 10)};
            size_t i = 0;
            while (i < n && !(strcmp(v[i].leaf, r.leaf) == 0 && strcmp(v[i].caller, r.caller) == 0))
                i++;
            if (i < n) {
                v[i].bytes += r.bytes;
                v[i].count += r.count;
                if (r.peak > v[i].peak) v[i].peak = r.peak;
                continue;
            }
            if (n == cap) {
                size_t c2 = cap ? 2 * cap : 64;
                heap_row *w = realloc(v, c2 * sizeof *w);
                if (w == NULL) break;
                v = w;
                cap = c2;
            }
            r.leaf = strdup(r.leaf);
            r.caller = strdup(r.caller);
            if (r.leaf == NULL || r.caller == NULL) {
                free(r.leaf);
                free(r.caller);
                break;
            }
            v[n++] = r;
        }
        fclose(f);
    }
    closedir(d);
    if (n) qsort(v, n, sizeof *v, cmp_heap_rows);
    fprintf(to, "%sLargest allocators (--heap), by bytes allocated:\n",
            to == stderr ? "strobe record: " : "\n");
    if (files == 0 || n == 0) {
        fprintf(to, "  (no allocation sites were recorded)\n");
    } else {
        fprintf(to, "  %14s %10s %14s  %s\n", "bytes", "count", "peak live",
                "site (leaf <- caller)");
        for (size_t i = 0; i < n && i < HEAP_TOP; i++)
            fprintf(to, "  %14lld %10llu %14lld  %s <- %s\n", v[i].bytes, v[i].count, v[i].peak,
                    cli_esc(v[i].leaf), cli_esc(v[i].caller));
        if (n > HEAP_TOP) fprintf(to, "  (%zu more sites)\n", n - HEAP_TOP);
    }
    if (missed)
        fprintf(to, "  %llu allocation(s) not assigned to a site (no stack, or too many sites)\n",
                missed);
    for (size_t i = 0; i < n; i++) {
        free(v[i].leaf);
        free(v[i].caller);
    }
    free(v);
}

/* PyTorch: each recorded process that had loaded torch (libtorch_cpu) when its session stopped
 * left PARTS/<part>.torch, saying whether the torch observer was on in it ("observed") or not
 * ("unobserved"; record_hook.c). Without --torch, one note suggests it, for the whole run; with
 * it, one note counts the processes whose operators were not recorded (the import hook did not
 * run in them), and one says when no process imported torch at all. */
static void torch_notes(const rec_opts *o, const char *parts) {
    DIR *d = opendir(parts);
    if (d == NULL) return;
    long seen = 0, unobserved = 0, first_pid = 0;
    char *first_name = NULL;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        size_t len = strlen(de->d_name);
        if (len < 7 || strcmp(de->d_name + len - 6, ".torch") != 0) continue;
        char path[PATH_MAX + 300], buf[32] = "";
        snprintf(path, sizeof path, "%s/%s", parts, de->d_name);
        FILE *f = fopen(path, "re");
        if (f == NULL) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        seen++;
        if (strncmp(buf, "unobserved", 10) != 0) continue;
        if (unobserved++ == 0) {
            char stem[300];
            snprintf(stem, sizeof stem, "%.*s", (int)(len - 6), de->d_name);
            first_pid = strtol(stem, NULL, 10);
            first_name = read_name(parts, stem);
        }
    }
    closedir(d);
    const char *name = first_name ? cli_esc(first_name) : "the program";
    if (!o->torch && unobserved)
        fprintf(stderr,
                "strobe record: %s (pid %ld) imports torch: add --torch to record its "
                "operators\n",
                name, first_pid);
    else if (o->torch && unobserved)
        fprintf(stderr,
                "strobe record: --torch: %ld process%s that loaded torch, %s (pid %ld) the "
                "first, had no torch observer: the import hook did not run there (python -E, "
                "-I or -S, PYTHONPATH replaced, or not a Python program); their operators are "
                "not recorded\n",
                unobserved, unobserved == 1 ? "" : "es", name, first_pid);
    else if (o->torch && seen == 0)
        fprintf(stderr, "strobe record: --torch: no recorded process imported torch\n");
    free(first_name);
}

/* --stats: the operator summary and, when the trace has device events, the top kernels, through
 * their commands. */
static void print_stats(const char *out, int kernels) {
    char *sargv[] = {"summary", "-q", (char *)out, NULL};
    fflush(stderr);
    cmd_summary(3, sargv);
    fflush(stdout);
    if (!kernels) return;
    char *kargv[] = {"kernels", "-q", "-n", "10", (char *)out, NULL};
    cmd_kernels(5, kargv);
    fflush(stdout);
}

/* ---- the command ------------------------------------------------------------------------------
 */

/* Parses SEC (a decimal number of seconds, up to 30 days) into ms. @return 0 or -1. */
/* Whether each comma-separated word of text[0..len) is one of `words` (spaces and case ignored,
 * as strobe_markers_start() reads them). */
static int words_ok(const char *text, size_t len, const char *const *words) {
    const char *p = text, *end = text + len;
    while (p <= end) {
        const char *q = p;
        while (q < end && *q != ',')
            q++;
        char w[16];
        size_t n = 0;
        for (const char *c = p; c < q; c++)
            if (*c != ' ' && *c != '\t') {
                if (n + 1 >= sizeof w) return 0;
                w[n++] = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
            }
        w[n] = '\0';
        int found = 0;
        for (size_t i = 0; words[i]; i++)
            found |= strcmp(w, words[i]) == 0;
        if (!found) return 0;
        p = q + 1;
    }
    return 1;
}

/* --markers MODE[:SINKS]: the words strobe/markers.h takes (the library checks them again). */
static int markers_ok(const char *v) {
    static const char *const modes[] = {"interval", "event", NULL};
    static const char *const sinks[] = {"nvtx", "ftrace", NULL};
    const char *colon = strchr(v, ':');
    size_t mlen = colon ? (size_t)(colon - v) : strlen(v);
    return words_ok(v, mlen, modes) && (!colon || words_ok(colon + 1, strlen(colon + 1), sinks));
}

static int parse_seconds(const char *v, long long *ms) {
    char *end;
    errno = 0;
    double s = strtod(v, &end);
    if (errno || end == v || *end != '\0' || !(s >= 0) || s > 30.0 * 86400) return -1;
    *ms = (long long)(s * 1000.0 + 0.5);
    return 0;
}

int cmd_record(int argc, char **argv) {
    rec_opts o = {.duration_ms = -1};
    int first = 0;
    for (int c; (c = cli_getopt(argc, argv, "+:o:qhV", cmd_record_options, &first)) != -1;) {
        switch (c) {
        case 'h':
            return cli_help(cmd_record_usage);
        case 'V':
            return cli_version();
        case 'q':
            o.quiet = 1;
            break;
        case 'o':
            if (optarg[0] == '\0') return usage_error("the output is empty", NULL);
            o.output = optarg;
            break;
        case OPT_DELAY:
            if (parse_seconds(optarg, &o.delay_ms) != 0)
                return usage_error("--delay takes seconds (0 .. 2592000)", optarg);
            break;
        case OPT_DURATION:
            if (parse_seconds(optarg, &o.duration_ms) != 0)
                return usage_error("--duration takes seconds (0 .. 2592000)", optarg);
            break;
        case OPT_ACTIVITIES: {
            o.cuda = 0;
            for (const char *p = optarg;;) {
                size_t len = strcspn(p, ",");
                if (len == 4 && strncmp(p, "cuda", 4) == 0)
                    o.cuda = 1;
                else if (!(len == 3 && strncmp(p, "cpu", 3) == 0))
                    return usage_error("unknown activity (cpu, cuda)", optarg);
                p += len;
                if (*p == '\0') break;
                p++;
            }
            break;
        }
        case OPT_HEAP:
            o.heap = 1;
            o.heap_rate = HEAP_RATE_DEFAULT;
            if (optarg && strcmp(optarg, "all") == 0)
                o.heap_rate = 0;
            else if (optarg && parse_size(optarg, &o.heap_rate) != 0)
                return usage_error("--heap takes \"all\" or a sampling rate in bytes (with K, M "
                                   "or G)",
                                   optarg);
            break;
        case OPT_TORCH:
            o.torch = 1;
            break;
        case OPT_RECORD_SHAPES:
            o.torch = o.torch_shapes = 1;
            break;
        case OPT_PROFILE_MEMORY:
            o.torch = o.torch_memory = 1;
            break;
        case OPT_WITH_STACK:
            o.torch = o.torch_stack = 1;
            break;
        case OPT_MPI:
            o.mpi = 1;
            break;
        case OPT_HEAP_STACKS:
            o.heap = o.heap_stacks = 1;
            break;
        case OPT_NO_FOLLOW:
            o.no_follow = 1;
            break;
        case OPT_STATS:
            o.stats = 1;
            break;
        case OPT_KEEP_PARTS:
            o.keep_parts = 1;
            break;
        case OPT_MAX_PART_SIZE:
            if (parse_size(optarg, &o.max_part) != 0)
                return usage_error("--max-part-size takes a size in bytes (with K, M or G)",
                                   optarg);
            break;
        case OPT_NO_PYTHON_FRAMES:
            o.no_python_frames = 1;
            break;
        case OPT_SAMPLE: {
            o.sample_hz = STROBE_CPU_SAMPLE_HZ_DEFAULT;
            if (optarg == NULL) break;
            char *end;
            errno = 0;
            unsigned long hz = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end != '\0' || hz < 1 || hz > STROBE_CPU_SAMPLE_HZ_MAX)
                return usage_error("--sample takes a rate in Hz (1 .. 10000)", optarg);
            o.sample_hz = (unsigned)hz;
            break;
        }
        case OPT_CALL_GRAPH: {
            int rc = parse_call_graph(optarg, o.call_graph_buf, sizeof o.call_graph_buf);
            if (rc != 0) return rc;
            o.call_graph = o.call_graph_buf;
            break;
        }
        case OPT_CAPTURE_RANGE:
            o.capture = NULL;
            o.capture_cuda = 0;
            if (strcmp(optarg, "cuda-profiler-api") == 0) {
                o.capture_cuda = 1;
                break;
            }
            if (strncmp(optarg, "nvtx:", 5) != 0 || optarg[5] == '\0' || strlen(optarg) > 1000)
                return usage_error("--capture-range takes nvtx:NAME or cuda-profiler-api", optarg);
            o.capture = optarg + 5;
            break;
        case OPT_MARKERS:
            if (!markers_ok(optarg))
                return usage_error("--markers takes MODE[:SINKS]: interval, event or "
                                   "interval,event; nvtx, ftrace or nvtx,ftrace",
                                   optarg);
            o.markers = optarg;
            break;
        default:
            return cli_option_error("record", c, argv, cmd_record_options);
        }
    }
    if (first >= argc) return usage_error("no PROGRAM to run", NULL);
    if (o.capture_cuda) o.cuda = 1; /* the windows are seen through CUDA's injection */
    if ((o.capture || o.capture_cuda) && (o.delay_ms > 0 || o.duration_ms >= 0))
        return usage_error("--capture-range does not go with --delay or --duration", NULL);
    if (o.call_graph && !o.sample_hz) return usage_error("--call-graph needs --sample", NULL);
    char **prog_argv = argv + first;
    char file[PATH_MAX];
    int rc = find_program(prog_argv[0], file, sizeof file);
    if (rc != 0) return rc;
    char lib[PATH_MAX];
    if (find_library(lib, sizeof lib) != 0) return CLI_BAD_INPUT;
    if (o.mpi && mpi_library(lib, sizeof lib) != 0) return CLI_BAD_INPUT;
    if (o.torch && torch_library(&o, lib) != 0) return CLI_BAD_INPUT;

    /* The output: %r now, %p once the first process has a pid (this process's own stands in
     * for the checks and the parts folder's name). */
    char pattern[PATH_MAX], check[PATH_MAX], parts[PATH_MAX];
    if (o.output)
        snprintf(pattern, sizeof pattern, "%s", o.output);
    else
        default_output(prog_argv[0], pattern, sizeof pattern);
    if (expand_output(pattern, (long)getpid(), check, sizeof check) != 0) {
        fprintf(stderr, "strobe record: %s: the path is too long\n", cli_esc(pattern));
        return CLI_BAD_INPUT;
    }
    if (output_replaceable(check, file) != 0) return CLI_BAD_INPUT;
    if (prepare_output(check, parts, sizeof parts) != 0) return CLI_BAD_INPUT;

    env_list env = {0};
    if (make_env(&env, &o, parts, lib) != 0) {
        fprintf(stderr, "strobe record: out of memory\n");
        env_free(&env);
        remove_parts(parts);
        return CLI_BAD_INPUT;
    }
    /* Another tool named already keeps its place (see make_env): say what is not recorded. */
    const char *nvtx_tool = getenv("NVTX_INJECTION64_PATH");
    if (nvtx_tool && *nvtx_tool)
        fprintf(stderr,
                "strobe record: warning: NVTX_INJECTION64_PATH names another tool (%s): NVTX "
                "ranges are not recorded\n",
                cli_esc(nvtx_tool));
    const char *cuda_tool = getenv("CUDA_INJECTION64_PATH");
    if (o.cuda && cuda_tool && *cuda_tool)
        fprintf(stderr,
                "strobe record: warning: CUDA_INJECTION64_PATH names another tool (%s): strobe "
                "starts CUDA with each process instead of at its cuInit\n",
                cli_esc(cuda_tool));
    long pid = 0;
    int status = run_program(file, prog_argv, env.v, &pid);
    struct timespec ended;
    clock_gettime(CLOCK_REALTIME, &ended);
    int64_t end_ns = (int64_t)ended.tv_sec * 1000000000 + ended.tv_nsec;
    env_free(&env);

    char out[PATH_MAX];
    if (expand_output(pattern, pid, out, sizeof out) != 0) snprintf(out, sizeof out, "%s", check);
    const char *base = strrchr(prog_argv[0], '/');
    base = base ? base + 1 : prog_argv[0];
    int device_events = 0;
    report_unrecorded(&o, parts, pid, file);
    /* An output that %p named only now gets the check the others had before PROGRAM ran. */
    int merged = strcmp(out, check) != 0 && output_replaceable(out, file) != 0
                     ? -1
                     : merge_parts(&o, parts, pid, end_ns, out, base, &device_events);
    torch_notes(&o, parts);
    /* The allocation sites are read before the parts go: on standard error, or with --stats on
     * standard output after the summary. */
    char *heap_text = NULL;
    size_t heap_len = 0;
    int heap_sites = o.heap && (o.heap_stacks || o.heap_rate > 0);
    if (heap_sites && !o.stats && !o.quiet) print_heap_sites(parts, stderr);
    if (heap_sites && o.stats) {
        FILE *mem = open_memstream(&heap_text, &heap_len);
        if (mem) {
            print_heap_sites(parts, mem);
            fclose(mem);
        }
    }
    if ((merged == 0 && !o.keep_parts) || merged == 1)
        remove_parts(parts);
    else if (merged != 0 || !o.quiet)
        fprintf(stderr, "strobe record: the parts are kept in %s\n", cli_esc(parts));
    if (merged == 0 && o.stats) print_stats(out, device_events);
    if (heap_text) {
        fputs(heap_text, stdout);
        fflush(stdout);
        free(heap_text);
    }
    if (merged < 0 && status == 0) return CLI_BAD_INPUT;
    return status;
}
