/* mpi.c: MPI loaded at run time (mpi.h).
 *
 * Open MPI and MPICH have one C API and different handles: Open MPI's MPI_Comm and MPI_Datatype
 * are pointers (MPI_COMM_WORLD is the address of ompi_mpi_comm_world, MPI_BYTE of ompi_mpi_byte,
 * MPI_STATUS_IGNORE is 0: its mpi.h), MPICH's are ints (MPI_COMM_WORLD 0x44000000, MPI_BYTE
 * 0x4c00010d, MPI_STATUS_IGNORE 1: its mpi.h, also Intel MPI's and MVAPICH's). Each function is
 * called through a pointer of the type its library declares. */
#include "mpi.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FLAVOR_NONE, FLAVOR_OMPI, FLAVOR_MPICH };

static struct {
    int flavor;
    void *lib;
    void *comm_world, *byte; /* Open MPI's handles */
    int (*init_thread)(int *, char ***, int, int *);
    int (*finalize)(void);
    void *rank, *size, *send, *recv, *abort; /* typed at each call by flavor */
} mpi;

#define MPICH_COMM_WORLD 0x44000000
#define MPICH_BYTE 0x4c00010d
#define MPICH_STATUS_IGNORE ((void *)1)

typedef void *ompi_comm, *ompi_type;
typedef int mpich_comm, mpich_type;

static int env_size(const char *name) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') return 1;
    char *end;
    long n = strtol(v, &end, 10);
    return *end == '\0' && n > 1 && n < INT_MAX ? (int)n : 1;
}

int cli_mpi_launched_size(void) {
    /* The launchers strobe record knows (src/core/dist.c), and PMIx's (Open MPI 5, prrte). */
    int n = env_size("OMPI_COMM_WORLD_SIZE");
    if (n == 1) n = env_size("PMI_SIZE");
    if (n == 1 && getenv("PMIX_RANK")) n = env_size("PMIX_SIZE");
    if (n == 1 && getenv("SLURM_PROCID")) n = env_size("SLURM_NTASKS");
    return n;
}

int cli_mpi_launched_rank(void) {
    /* The variable that goes with the size cli_mpi_launched_size found, in its order. */
    const char *v = NULL;
    if (env_size("OMPI_COMM_WORLD_SIZE") > 1)
        v = getenv("OMPI_COMM_WORLD_RANK");
    else if (env_size("PMI_SIZE") > 1)
        v = getenv("PMI_RANK");
    else if (getenv("PMIX_RANK") && env_size("PMIX_SIZE") > 1)
        v = getenv("PMIX_RANK");
    else if (getenv("SLURM_PROCID") && env_size("SLURM_NTASKS") > 1)
        v = getenv("SLURM_PROCID");
    if (v == NULL || *v == '\0') return 0;
    char *end;
    long r = strtol(v, &end, 10);
    /* A rank that cannot be read counts as 0: a message said twice is better than none. */
    return *end == '\0' && r > 0 && r < INT_MAX ? (int)r : 0;
}

static int load(void) {
    static const struct {
        const char *name;
        int flavor;
    } libs[] = {{"libmpi.so.40", FLAVOR_OMPI}, {"libmpi.so.12", FLAVOR_MPICH}};
    for (size_t k = 0; k < sizeof libs / sizeof libs[0] && mpi.lib == NULL; k++) {
        /* RTLD_GLOBAL: Open MPI's own plugins, which it dlopens, look its symbols up. */
        mpi.lib = dlopen(libs[k].name, RTLD_NOW | RTLD_GLOBAL);
        mpi.flavor = libs[k].flavor;
    }
    if (mpi.lib == NULL) return -1;
    if (mpi.flavor == FLAVOR_OMPI) {
        mpi.comm_world = dlsym(mpi.lib, "ompi_mpi_comm_world");
        mpi.byte = dlsym(mpi.lib, "ompi_mpi_byte");
        if (mpi.comm_world == NULL || mpi.byte == NULL) return -1;
    }
    *(void **)&mpi.init_thread = dlsym(mpi.lib, "MPI_Init_thread");
    *(void **)&mpi.finalize = dlsym(mpi.lib, "MPI_Finalize");
    mpi.rank = dlsym(mpi.lib, "MPI_Comm_rank");
    mpi.size = dlsym(mpi.lib, "MPI_Comm_size");
    mpi.send = dlsym(mpi.lib, "MPI_Send");
    mpi.recv = dlsym(mpi.lib, "MPI_Recv");
    mpi.abort = dlsym(mpi.lib, "MPI_Abort");
    return mpi.init_thread && mpi.finalize && mpi.rank && mpi.size && mpi.send && mpi.recv &&
                   mpi.abort
               ? 0
               : -1;
}

static int comm_query(void *fn, int *out) {
    if (mpi.flavor == FLAVOR_OMPI) {
        int (*f)(ompi_comm, int *);
        *(void **)&f = fn;
        return f(mpi.comm_world, out);
    }
    int (*f)(mpich_comm, int *);
    *(void **)&f = fn;
    return f(MPICH_COMM_WORLD, out);
}

int cli_mpi_start(const char *cmd, int *rank, int *size) {
    /* Every process fails alike here: rank 0 alone says so, the others end silently. */
    int say = cli_mpi_launched_rank() == 0;
    if (load() != 0) {
        if (say)
            fprintf(stderr,
                    "strobe %s: started by an MPI launcher, and no MPI library could be loaded "
                    "(libmpi.so.40 of Open MPI, libmpi.so.12 of MPICH): %s\n",
                    cmd, dlerror() ? "not found" : "symbols missing");
        mpi.flavor = FLAVOR_NONE;
        return -1;
    }
    /* MPI_THREAD_FUNNELED (1 in both): threads read the traces, the main thread alone calls MPI. */
    int provided = 0;
    if (mpi.init_thread(NULL, NULL, 1, &provided) != 0 || comm_query(mpi.rank, rank) != 0 ||
        comm_query(mpi.size, size) != 0) {
        if (say) fprintf(stderr, "strobe %s: MPI_Init_thread failed\n", cmd);
        mpi.flavor = FLAVOR_NONE;
        return -1;
    }
    return 0;
}

/* MPI's counts are ints: a message goes in pieces of at most this. */
#define PIECE (1 << 30)

static int send_bytes(const void *p, int n, int to) {
    if (mpi.flavor == FLAVOR_OMPI) {
        int (*f)(const void *, int, ompi_type, int, int, ompi_comm);
        *(void **)&f = mpi.send;
        return f(p, n, mpi.byte, to, 0, mpi.comm_world);
    }
    int (*f)(const void *, int, mpich_type, int, int, mpich_comm);
    *(void **)&f = mpi.send;
    return f(p, n, MPICH_BYTE, to, 0, MPICH_COMM_WORLD);
}

static int recv_bytes(void *p, int n, int from) {
    if (mpi.flavor == FLAVOR_OMPI) {
        int (*f)(void *, int, ompi_type, int, int, ompi_comm, void *);
        *(void **)&f = mpi.recv;
        return f(p, n, mpi.byte, from, 0, mpi.comm_world, NULL);
    }
    int (*f)(void *, int, mpich_type, int, int, mpich_comm, void *);
    *(void **)&f = mpi.recv;
    return f(p, n, MPICH_BYTE, from, 0, MPICH_COMM_WORLD, MPICH_STATUS_IGNORE);
}

int cli_mpi_send(int to, const void *buf, uint64_t len) {
    if (send_bytes(&len, (int)sizeof len, to) != 0) return -1;
    for (uint64_t at = 0; at < len; at += PIECE) {
        uint64_t n = len - at < PIECE ? len - at : PIECE;
        if (send_bytes((const uint8_t *)buf + at, (int)n, to) != 0) return -1;
    }
    return 0;
}

int cli_mpi_recv(int from, uint8_t **buf, uint64_t *len) {
    *buf = NULL;
    if (recv_bytes(len, (int)sizeof *len, from) != 0) return -1;
    uint8_t *p = malloc(*len ? (size_t)*len : 1);
    if (p == NULL) return -1; /* the caller ends every process (cli_mpi_abort) */
    for (uint64_t at = 0; at < *len; at += PIECE) {
        uint64_t n = *len - at < PIECE ? *len - at : PIECE;
        if (recv_bytes(p + at, (int)n, from) != 0) {
            free(p);
            return -1;
        }
    }
    *buf = p;
    return 0;
}

void cli_mpi_finish(void) {
    if (mpi.flavor != FLAVOR_NONE) mpi.finalize();
    mpi.flavor = FLAVOR_NONE;
}

void cli_mpi_abort(int code) {
    if (mpi.flavor == FLAVOR_NONE) return;
    if (mpi.flavor == FLAVOR_OMPI) {
        int (*f)(ompi_comm, int);
        *(void **)&f = mpi.abort;
        f(mpi.comm_world, code);
        return;
    }
    int (*f)(mpich_comm, int);
    *(void **)&f = mpi.abort;
    f(MPICH_COMM_WORLD, code);
}
