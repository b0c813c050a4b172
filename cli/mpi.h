/* mpi.h: the commands that read a job's ranks, run under mpirun (or srun), split the rank files
 * across the processes; rank 0 gathers what the others read and writes the output alone.
 *
 * MPI is loaded at run time (dlopen: Open MPI's libmpi.so.40, then MPICH's libmpi.so.12), so that
 * strobe builds and runs without it. A launch is told by the launcher's variables, the ones strobe
 * record reads for the rank (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE with PMIX_RANK, or
 * SLURM_NTASKS with a libmpi to load): a size above 1 means several processes. */
#ifndef STROBE_CLI_MPI_H
#define STROBE_CLI_MPI_H

#include <stddef.h>
#include <stdint.h>

/* The processes of the launch this process is one of, from the launcher's variables (1: not under
 * a launcher, or alone). */
int cli_mpi_launched_size(void);
/* This process's rank in that launch, from the same launcher's variables (0: not under a launcher,
 * alone, or a rank that cannot be read). Before MPI is started, it tells which process is to
 * print what every process finds alike: only rank 0 does. */
int cli_mpi_launched_rank(void);

/* Starts MPI (MPI_Init_thread, MPI_THREAD_FUNNELED) on the library found. @return 0 with *rank and
 * *size set, or -1 after a message on stderr (no libmpi could be loaded or started). */
int cli_mpi_start(const char *cmd, int *rank, int *size);

/* Sends len bytes to process `to`, in pieces MPI's int counts can carry (its length first).
 * @return 0 or -1 (MPI failed). */
int cli_mpi_send(int to, const void *buf, uint64_t len);
/* Receives from `from` what it sent by cli_mpi_send into a malloc'd *buf of *len bytes.
 * @return 0, or -1 (MPI failed, or no memory: then *buf is NULL). */
int cli_mpi_recv(int from, uint8_t **buf, uint64_t *len);

/* Ends MPI (MPI_Finalize). */
void cli_mpi_finish(void);
/* Ends every process (MPI_Abort) with status code; returns only when MPI is not running. */
void cli_mpi_abort(int code);

#endif
