/* tb.h: the TensorBoard profiler plugin's GPU figures (pytorch/kineto tb_plugin,
 * torch_tb_profiler): the overview's GPU Summary, its Tensor Core shares, and the operator view's
 * Tensor Core columns. The definitions are the plugin's; tb.c says which of its files and functions
 * each follows. */
#ifndef STROBE_CLI_TB_H
#define STROBE_CLI_TB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"

/* Whether a kernel of this name uses Tensor Cores: its name contains one of the plugin's
 * patterns (tensor_core.py, TC_Allowlist: "h884", "s1688", "xmma_gemm" ...). */
int cli_tb_tc_kernel(const char *name);

/* Whether an operator of this name is on the plugin's list of Tensor Core eligible operators
 * (tensor_core.py, TC_OP_Allowlist: "aten::conv2d", "aten::mm", "AddmmBackward" ...). */
int cli_tb_tc_op(const char *name);

/* One device of the GPU Summary. Fractions are 0..1; occupancy is in percent, as the trace's. */
typedef struct cli_tb_gpu {
    int32_t id;
    char name[128];       /* deviceProperties' "name"; "" when none */
    int64_t mem;          /* totalGlobalMem, bytes; -1 when none */
    int major, minor;     /* compute capability; -1 when none */
    double util;          /* GPU Utilization */
    double sm_eff;        /* Est. SM Efficiency; NAN when no kernel in the steps has blocks */
    double occupancy;     /* Est. Achieved Occupancy (%); NAN when none */
    double tc_ratio;      /* Kernel Time using Tensor Cores; NAN when the trace has no kernel */
    uint64_t bps_kernels; /* kernels with a positive "blocks per SM" */
    uint64_t occ_kernels; /* kernels with a non-negative "est. achieved occupancy %" */
} cli_tb_gpu;

/* The GPU figures of a trace over the steps' span [steps_s, steps_e) (the first step's start to
 * the last step's end, as strobe steps finds them). */
typedef struct cli_tb_metrics {
    cli_tb_gpu *gpus; /* by id */
    size_t ngpus;
    int has_kernel;
    double tc_used_ratio;     /* TC kernels' share of all kernels' time (kernel_parser.py) */
    double tc_eligible_ratio; /* the plugin's tc_eligible_ops_kernel_ratio */
    int major0;               /* deviceProperties[0]'s computeMajor; -1 when none */
    int use_dp, use_ddp, has_nccl, devices_used;
    /* The first device (in the order the trace's [memory] events name them) whose peak "Total
     * Allocated" passes 90% of its totalGlobalMem (data.py), -1 when none; the peak and memory. */
    int64_t mem_dev, mem_peak, mem_total;
} cli_tb_metrics;

/* Fills *out (free with cli_tb_metrics_free). @return 0 or STROBE_ENOMEM. */
int cli_tb_metrics_get(const md_model *m, int64_t steps_s, int64_t steps_e, cli_tb_metrics *out);
void cli_tb_metrics_free(cli_tb_metrics *t);

/* The operator tree's Tensor Core figures (node.py OperatorNode.fill_stats), per event of
 * m->count: for operators of torch's CPU tree (model/oplink.h md_cpu_tree), 0 elsewhere. */
typedef struct cli_tb_ops {
    uint8_t *eligible;             /* tc_eligible */
    int64_t *dev_self, *dev_total; /* device time (kernels, copies, memsets), ns */
    int64_t *tc_self, *tc_total;   /* time of Tensor Core kernels, ns */
    int64_t *kern_self;            /* kernels only, launched directly */
    uint32_t *parent;              /* md_cpu_tree's */
    uint8_t *merged;               /* md_cpu_tree's */
    uint32_t *owner; /* device work: the operator that launched it (not merged), else MD_NONE */
    double tc_eligible_ratio; /* see cli_tb_metrics */
} cli_tb_ops;

/* Whether an operator is one of the operator view's rows (node.py is_operator_node): a CPU
 * operator but ProfilerStep#N, enumerate(DataLoader)#...__next__, Optimizer.* and
 * (Distributed)DataParallel.forward. */
int cli_tb_view_op(const md_model *m, uint32_t i);

/* Fills *t (free with cli_tb_ops_free); dev_self, dev_total and tc_total only when `totals` is
 * set (NULL otherwise: the overview does not need them). @return 0 or STROBE_ENOMEM. */
int cli_tb_ops_get(const md_model *m, int totals, cli_tb_ops *t);
void cli_tb_ops_free(cli_tb_ops *t);

/* Event i's launch figures (model.h md_kargs), or NULL when it has none. */
const md_kargs *cli_tb_kargs(const md_model *m, uint32_t i);

/* The kernel view's figures of one kernel event (kargs: its md_kargs, or NULL). */
double cli_tb_blocks_per_sm(const md_kargs *k); /* 0 when absent, as the plugin fills None */
double cli_tb_occupancy(const md_kargs *k);

/* The operator view's table with its Tensor Core columns (strobe summary --tensor-cores): one row
 * per operator name, in format CLI_TABLE, CLI_CSV or CLI_JSON (emit.h), its first `limit` rows
 * (0: all), names cut at name_width in the table. @return 0 or STROBE_ENOMEM. */
int cli_tb_op_table(FILE *out, const md_model *m, size_t limit, int format, size_t name_width);

#endif
