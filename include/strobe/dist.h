/* strobe/dist.h: the process's place in a parallel job (its rank), written into its traces.
 *
 * Every trace a session writes carries, when the rank is known, Kineto's top-level
 * "distributedInfo" object ({"backend", "rank", "world_size", "local_rank"}, the keys HTA and
 * strobe's own analyses read) and "strobe_job" ({"id", "host", "pid"}: which job, machine and
 * process the trace comes from). The rank comes from strobe_set_rank() when the program called it,
 * else from the launcher's environment, the first of these that is set:
 *   torchrun        RANK, WORLD_SIZE, LOCAL_RANK                      (backend "unknown")
 *   Open MPI        OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK          (backend "mpi")
 *   MPICH / PMI     PMI_RANK, PMI_SIZE, MPI_LOCALRANKID               (backend "mpi")
 *   Slurm           SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID         (backend "unknown")
 * (a rank without a valid world size is kept, and "world_size" left out; a rank not below the
 * world size, or not a decimal number, passes on to the next launcher). The job's id is
 * SLURM_JOB_ID, else PMIX_NAMESPACE, OMPI_MCA_orte_ess_jobid or OMPI_MCA_ess_base_jobid (Open MPI),
 * else TORCHELASTIC_RUN_ID; "id" is left out when none is set. `strobe record` expands %r in its
 * output path to the same rank (0 when none is known). */
#ifndef STROBE_DIST_H
#define STROBE_DIST_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets this process's rank, local rank (its index among the job's processes on this machine; -1:
 * unknown) and the job's world size, and the communication backend ("mpi", "nccl", "gloo",
 * "unknown"; NULL: "unknown"; at most 31 letters, digits, '_', '-' or ':'). It wins over the
 * environment from now on, also for the session that runs (its trace gets the new values). Any
 * thread. @return 0 or STROBE_EINVAL (rank < 0, world_size < 1, rank >= world_size, local_rank <
 * -1, or a bad backend name). */
STROBE_API int strobe_set_rank(int rank, int local_rank, int world_size, const char *backend);

/* The rank as strobe knows it (strobe_set_rank(), else the environment). Each out pointer may be
 * NULL; *local_rank is -1 and *world_size 0 when unknown. @return 1 when a rank is known, else 0
 * (outs untouched). */
STROBE_API int strobe_get_rank(int *rank, int *local_rank, int *world_size);

#ifdef __cplusplus
}
#endif
#endif /* STROBE_DIST_H */
