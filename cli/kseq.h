/* kseq.h: `strobe kernels --sequences`, HTA's frequent CUDA kernel sequences
 * (CudaKernelAnalysis.get_frequent_cuda_kernel_sequences in hta/analyzers/cuda_kernel_analysis.py)
 * and its overlaid trace. cmd_kernels.c lists the options (CLI_KSEQ_OPTIONS) and hands a command
 * line that holds one of them to cli_kseq_main(). */
#ifndef STROBE_CLI_KSEQ_H
#define STROBE_CLI_KSEQ_H

#include <getopt.h>

#include "common.h"

enum {
    CLI_KSEQ_OPT_SEQUENCES = CLI_LONG_ONLY + 40,
    CLI_KSEQ_OPT_OPERATOR,
    CLI_KSEQ_OPT_MIN_LEN,
    CLI_KSEQ_OPT_TOP_K,
    CLI_KSEQ_OPT_RANK,
    CLI_KSEQ_OPT_OUTPUT = 'o'
};

/* The entries of `strobe kernels`'s option table for --sequences. */
#define CLI_KSEQ_OPTIONS                                                                           \
    {"sequences", no_argument, NULL, CLI_KSEQ_OPT_SEQUENCES},                                      \
        {"operator", required_argument, NULL, CLI_KSEQ_OPT_OPERATOR},                              \
        {"min-pattern-len", required_argument, NULL, CLI_KSEQ_OPT_MIN_LEN},                        \
        {"top-k", required_argument, NULL, CLI_KSEQ_OPT_TOP_K},                                    \
        {"rank", required_argument, NULL, CLI_KSEQ_OPT_RANK}, {                                    \
        "output", required_argument, NULL, CLI_KSEQ_OPT_OUTPUT                                     \
    }

/* Whether argv (a `strobe kernels` command line) holds --sequences or one of its options.
 * Permutes argv as getopt does. */
int cli_kseq_wanted(int argc, char **argv);

/* Runs `strobe kernels --sequences` on argv (argv[0] "kernels"). @return the exit status. */
int cli_kseq_main(int argc, char **argv);

#endif
