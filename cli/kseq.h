/* kseq.h: `strobe kernels --sequences`, HTA's frequent CUDA kernel sequences
 * (CudaKernelAnalysis.get_frequent_cuda_kernel_sequences in hta/analyzers/cuda_kernel_analysis.py)
 * and its overlaid trace. cmd_kernels.c lists the options (KSEQ_OPTIONS) and hands a command line
 * that holds one of them to kseq_main(). */
#ifndef STROBE_CLI_KSEQ_H
#define STROBE_CLI_KSEQ_H

#include <getopt.h>

#include "common.h"

enum {
    KSEQ_OPT_SEQUENCES = CLI_LONG_ONLY + 40,
    KSEQ_OPT_OPERATOR,
    KSEQ_OPT_MIN_LEN,
    KSEQ_OPT_TOP_K,
    KSEQ_OPT_RANK,
    KSEQ_OPT_OUTPUT = 'o'
};

/* The entries of `strobe kernels`'s option table for --sequences. */
#define KSEQ_OPTIONS                                                                               \
    {"sequences", no_argument, NULL, KSEQ_OPT_SEQUENCES},                                          \
        {"operator", required_argument, NULL, KSEQ_OPT_OPERATOR},                                  \
        {"min-pattern-len", required_argument, NULL, KSEQ_OPT_MIN_LEN},                            \
        {"top-k", required_argument, NULL, KSEQ_OPT_TOP_K},                                        \
        {"rank", required_argument, NULL, KSEQ_OPT_RANK}, {                                        \
        "output", required_argument, NULL, KSEQ_OPT_OUTPUT                                         \
    }

/* Whether argv (a `strobe kernels` command line) holds --sequences or one of its options.
 * Permutes argv as getopt does. */
int kseq_wanted(int argc, char **argv);

/* Runs `strobe kernels --sequences` on argv (argv[0] "kernels"). @return the exit status. */
int kseq_main(int argc, char **argv);

#endif
