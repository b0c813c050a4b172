/* tb.c: see tb.h. The TensorBoard plugin's definitions (pytorch/kineto tb_plugin/
 * torch_tb_profiler, read at main; the resnet50 sample trace is from 041e7ce), in strobe's terms:
 *   - tensor_core.py: TC_Allowlist (a kernel uses Tensor Cores when its name contains one of the
 *     patterns) and TC_OP_Allowlist (eligible operators, by exact name).
 *   - gpu_metrics_parser.py (GPUMetricsParser): per device (a kernel's "device" arg), over the
 *     steps' span [S, E): GPU Utilization = the length of the union of its kernels within [S, E),
 *     / (E - S). Est. SM Efficiency: at each moment, the sum of "blocks per SM" of the kernels
 *     running then (those with a positive value), capped at 1 (merge_ranges_with_value in
 *     range_utils.py), integrated over [S, E) and / (E - S); none when no such kernel runs in
 *     [S, E). Est. Achieved Occupancy: the mean of "est. achieved occupancy %" over the kernels
 *     with a non-negative value, each weighted by its time within [S, E); none when that is 0.
 *   - tensor_cores_parser.py: Kernel Time using Tensor Cores = the TC kernels' time within
 *     [S, E) / all kernels' time within [S, E), per device; 0 when the latter is 0, none when
 *     the trace has no kernel. tc_eligible_ops_kernel_ratio = the kernel time launched directly
 *     by the "bottom" eligible operators (eligible, with no eligible operator below them) / the
 *     kernel time launched directly by the operator view's operators.
 *   - kernel_parser.py: tc_used_ratio = TC kernels' time / all kernels' time (whole trace).
 *   - node.py (OperatorNode.fill_stats): an operator is eligible when its name is listed, when it
 *     launched a TC kernel itself, or (a CPU operator) when one of its child operators is
 *     eligible; tc_self is the TC kernel time it launched directly, tc_total with its
 *     descendants'; device self and total likewise for all device work. op_agg.py: the
 *     operator view's tc_self_ratio = tc_self / device self, tc_total_ratio = tc_total / device
 *     total (0 when the denominator is 0).
 * Operators, their nesting and the device work each launched are strobe's (model/oplink.h), the
 * same as strobe summary's and the plugin's own operator view's
 * (tests/cli/check_tb_operator_view.py).
 *
 * Contents: allowlists, device properties (and the memory rule), GPU metrics, operator tree,
 * the operator view's table. */
#include "tb.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "model/oplink.h"
#include "reader/trace_reader.h"
#include "model/step.h"
#include "common.h"
#include "strobe/error.h"
#include "util/table.h"

/* ---- allowlists ----------------------------------------------------------------------------- */

int cli_tb_tc_kernel(const char *name) {
    static const char *const pats[] = {"h884",
                                       "s884",
                                       "h1688",
                                       "s1688",
                                       "hmma",
                                       "i8816",
                                       "16816",
                                       "dgrad_1x1_stride_2x2",
                                       "first_layer_wgrad_kernel",
                                       "conv1x1",
                                       "conv2d_c1_k1",
                                       "direct_group",
                                       "xmma_implicit_gemm",
                                       "xmma_sparse_conv",
                                       "xmma_warp_specialized_implicit_gemm",
                                       "xmma_gemm",
                                       "xmma_sparse_gemm",
                                       "c1688"};
    for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++)
        if (strstr(name, pats[k])) return 1;
    return 0;
}

int cli_tb_tc_op(const char *name) {
    static const char *const ops[] = {"aten::_convolution",
                                      "aten::_convolution_nogroup",
                                      "aten::conv1d",
                                      "aten::conv2d",
                                      "aten::conv3d",
                                      "aten::conv_tbc",
                                      "aten::conv_transpose1d",
                                      "aten::conv_transpose2d",
                                      "aten::conv_transpose3d",
                                      "aten::convolution",
                                      "aten::cudnn_convolution",
                                      "aten::cudnn_convolution_transpose",
                                      "aten::prelu",
                                      "aten::addmm",
                                      "aten::addmv",
                                      "aten::addr",
                                      "aten::matmul",
                                      "aten::mm",
                                      "aten::mv",
                                      "aten::linear",
                                      "aten::addbmm",
                                      "aten::baddbmm",
                                      "aten::bmm",
                                      "aten::chain_matmul",
                                      "aten::linalg_multi_dot",
                                      "aten::_thnn_fused_lstm_cell",
                                      "aten::_thnn_fused_gru_cell",
                                      "aten::lstm_cell",
                                      "aten::gru_cell",
                                      "aten::rnn_tanh_cell",
                                      "aten::rnn_relu_cell",
                                      "CudnnConvolutionBackward",
                                      "BmmBackward0",
                                      "aten::cudnn_convolution_transpose_backward",
                                      "CudnnConvolutionTransposeBackward",
                                      "MmBackward",
                                      "aten::cudnn_convolution_backward_weight",
                                      "aten::addmm_",
                                      "AddmvBackward",
                                      "MvBackward",
                                      "aten::cudnn_convolution_transpose_backward_weight",
                                      "aten::cudnn_convolution_transpose_backward_input",
                                      "AddmmBackward",
                                      "aten::cudnn_convolution_backward_input",
                                      "AddbmmBackward",
                                      "aten::cudnn_convolution_backward"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (strcmp(name, ops[k]) == 0) return 1;
    return 0;
}

double cli_tb_blocks_per_sm(const md_kargs *k) {
    return k && !isnan(k->blocks_per_sm) ? k->blocks_per_sm : 0;
}

double cli_tb_occupancy(const md_kargs *k) {
    return k && !isnan(k->occupancy) ? k->occupancy : 0;
}

/* ---- device properties ---------------------------------------------------------------------- */

static int64_t member_int(const char *obj, size_t len, const char *key, int64_t dflt) {
    strobe_rd_value v;
    int64_t n;
    if (strobe_rd_obj_get(obj, len, key, &v) == 1 && strobe_rd_value_int(&v, &n) == 0) return n;
    return dflt;
}

/* Calls fn on each object at depth one of the deviceProperties array (the reader checked the text
 * as JSON, so skipping strings is enough to find them). */
static void each_device(const md_model *m,
                        void (*fn)(void *ctx, size_t k, const char *obj, size_t len), void *ctx) {
    if (!m->device_props) return;
    const char *s = md_str(m, m->device_props);
    size_t len = strlen(s), start = 0, n = 0;
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == '"') {
            for (i++; i < len && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
        } else if (ch == '[' || ch == '{') {
            if (ch == '{' && depth == 1) start = i;
            depth++;
        } else if (ch == ']' || ch == '}') {
            depth--;
            if (ch == '}' && depth == 1) fn(ctx, n++, s + start, i + 1 - start);
        }
    }
}

/* The plugin finds a device's properties at its index in the array (_get_gpu_info). */
static void fill_props(void *ctx, size_t k, const char *obj, size_t len) {
    cli_tb_metrics *t = ctx;
    if (k == 0) t->major0 = (int)member_int(obj, len, "computeMajor", -1);
    for (size_t g = 0; g < t->ngpus; g++) {
        cli_tb_gpu *d = &t->gpus[g];
        if (d->id < 0 || (size_t)d->id != k) continue;
        strobe_rd_value v;
        size_t n = 0;
        if (strobe_rd_obj_get(obj, len, "name", &v) == 1 &&
            strobe_rd_value_str(&v, d->name, sizeof d->name, &n) != 0)
            d->name[0] = '\0';
        d->mem = member_int(obj, len, "totalGlobalMem", -1);
        d->major = (int)member_int(obj, len, "computeMajor", -1);
        d->minor = (int)member_int(obj, len, "computeMinor", -1);
    }
}

/* The memory rule: device k's totalGlobalMem against its peak. */
typedef struct mem_ctx {
    cli_tb_metrics *t;
    const md_model *m;
} mem_ctx;

static void check_mem(void *ctx, size_t k, const char *obj, size_t len) {
    mem_ctx *c = ctx;
    if (c->t->mem_dev >= 0) return;
    int64_t total = member_int(obj, len, "totalGlobalMem", -1);
    for (size_t p = 0; p < c->m->mem_peak_count && total > 0; p++) {
        const struct md_mem_peak *q = &c->m->mem_peaks[p];
        if (q->id < 0 || (size_t)q->id != k || !((double)q->peak > (double)total * 0.9)) continue;
        c->t->mem_dev = q->id;
        c->t->mem_peak = q->peak;
        c->t->mem_total = total;
        return;
    }
}

/* ---- GPU metrics ---------------------------------------------------------------------------- */

typedef struct kspan {
    int64_t s, e;
    double v;
} kspan;

static int by_s(const void *a, const void *b) {
    const kspan *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

typedef struct endpoint {
    int64_t t;
    int end; /* 0 start, 1 end: starts first at equal times */
    size_t k;
    double v;
} endpoint;

static int by_endpoint(const void *a, const void *b) {
    const endpoint *x = a, *y = b;
    if (x->t != y->t) return (x->t > y->t) - (x->t < y->t);
    if (x->end != y->end) return x->end - y->end;
    return (x->k > y->k) - (x->k < y->k);
}

/* m->kargs is in event order: a binary search. */
const md_kargs *cli_tb_kargs(const md_model *m, uint32_t i) {
    size_t lo = 0, hi = m->kargs_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->kargs[mid].ev < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->kargs_count && m->kargs[lo].ev == i ? &m->kargs[lo] : NULL;
}

static int64_t clip_len(int64_t s, int64_t e, int64_t S, int64_t E) {
    int64_t a = s > S ? s : S, b = e < E ? e : E;
    return b > a ? b - a : 0;
}

/* One device's figures from its kernels k[0..n) (v: blocks per SM), in file order. */
static int device_metrics(cli_tb_gpu *d, kspan *k, size_t n, const double *occ, const uint8_t *tc,
                          int64_t S, int64_t E) {
    double span = E > S ? (double)(E - S) : 0;
    /* Est. Achieved Occupancy and the Tensor Core share: kernel by kernel, clipped to [S, E). */
    double occ_sum = 0, tc_time = 0, all_time = 0, occ_time = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t len = clip_len(k[i].s, k[i].e, S, E);
        if (!isnan(occ[i]) && occ[i] >= 0) {
            d->occ_kernels++;
            occ_sum += occ[i] * (double)len;
            occ_time += (double)len;
        }
        all_time += (double)len;
        if (tc[i]) tc_time += (double)len;
    }
    d->occupancy = occ_time > 0 ? occ_sum / occ_time : NAN;
    d->tc_ratio = all_time > 0 ? tc_time / all_time : 0;
    /* Est. SM Efficiency: a sweep over the starts and ends of the kernels with blocks. */
    endpoint *ep = malloc((2 * n + 1) * sizeof *ep);
    if (ep == NULL) return STROBE_ENOMEM;
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(k[i].v) || !(k[i].v > 0)) continue;
        d->bps_kernels++;
        ep[ne++] = (endpoint){k[i].s, 0, i, k[i].v};
        ep[ne++] = (endpoint){k[i].e, 1, i, k[i].v};
    }
    cli_qsort(ep, ne, sizeof *ep, by_endpoint);
    double level = ne ? ep[0].v : 0, weighted = 0;
    int any = 0;
    for (size_t i = 1; i < ne; i++) {
        if (ep[i].t > ep[i - 1].t && level > 0) {
            int64_t len = clip_len(ep[i - 1].t, ep[i].t, S, E);
            if (len > 0) {
                weighted += (level < 1 ? level : 1) * (double)len;
                any = 1;
            }
        }
        level += ep[i].end ? -ep[i].v : ep[i].v;
    }
    free(ep);
    d->sm_eff = any && span > 0 ? weighted / span : NAN;
    /* GPU Utilization: the union of all the device's kernels within [S, E). */
    cli_qsort(k, n, sizeof *k, by_s);
    int64_t busy = 0, cs = 0, ce = 0;
    int open = 0;
    for (size_t i = 0; i < n; i++) {
        if (open && k[i].s <= ce) {
            if (k[i].e > ce) ce = k[i].e;
            continue;
        }
        if (open) busy += clip_len(cs, ce, S, E);
        cs = k[i].s;
        ce = k[i].e;
        open = 1;
    }
    if (open) busy += clip_len(cs, ce, S, E);
    d->util = span > 0 ? (double)busy / span : 0;
    return 0;
}

static int by_id(const void *a, const void *b) {
    const cli_tb_gpu *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

int cli_tb_metrics_get(const md_model *m, int64_t S, int64_t E, cli_tb_metrics *t) {
    memset(t, 0, sizeof *t);
    t->major0 = -1;
    t->mem_dev = -1;
    size_t nk = m->kargs_count;
    kspan *k = malloc((nk ? nk : 1) * sizeof *k);
    double *occ = malloc((nk ? nk : 1) * sizeof *occ);
    uint8_t *tc = malloc(nk ? nk : 1);
    int32_t *dev = malloc((nk ? nk : 1) * sizeof *dev);
    int err = 0;
    if (!k || !occ || !tc || !dev) err = STROBE_ENOMEM;
    /* The kernel parser's share covers every kernel, with or without a device. */
    double tc_all = 0, all = 0;
    size_t n = 0;
    for (size_t i = 0; i < m->count && !err; i++) {
        if ((m->ev_flags[i] & (MD_F_TIME | MD_F_BAD)) != MD_F_TIME) continue;
        md_class c = md_class_of(m, (uint32_t)i);
        if (c.kind != MD_KERNEL || c.ph != 'X') continue;
        int64_t s = md_ts(m, (uint32_t)i), e = s + md_dur(m, (uint32_t)i);
        int is_tc = cli_tb_tc_kernel(md_str(m, md_name_of(m, (uint32_t)i)));
        t->has_kernel = 1;
        all += (double)(e - s);
        if (is_tc) tc_all += (double)(e - s);
        const md_kargs *a = cli_tb_kargs(m, (uint32_t)i);
        if (a == NULL || a->device < 0) continue; /* the plugin places a kernel by its "device" */
        k[n] = (kspan){s, e, a->blocks_per_sm};
        occ[n] = a->occupancy;
        tc[n] = (uint8_t)is_tc;
        dev[n] = a->device;
        n++;
    }
    t->tc_used_ratio = all > 0 ? tc_all / all : 0;
    /* The devices, in id order, each with its kernels gathered. */
    for (size_t i = 0; i < n && !err; i++) {
        size_t g = 0;
        while (g < t->ngpus && t->gpus[g].id != dev[i])
            g++;
        if (g < t->ngpus) continue;
        cli_tb_gpu *gp = realloc(t->gpus, (t->ngpus + 1) * sizeof *gp);
        if (gp == NULL) {
            err = STROBE_ENOMEM;
            break;
        }
        t->gpus = gp;
        memset(&gp[t->ngpus], 0, sizeof *gp);
        gp[t->ngpus].id = dev[i];
        gp[t->ngpus].mem = -1;
        gp[t->ngpus].major = gp[t->ngpus].minor = -1;
        t->ngpus++;
    }
    if (!err && t->ngpus) cli_qsort(t->gpus, t->ngpus, sizeof *t->gpus, by_id);
    kspan *dk = err ? NULL : malloc((n ? n : 1) * sizeof *dk);
    double *docc = err ? NULL : malloc((n ? n : 1) * sizeof *docc);
    uint8_t *dtc = err ? NULL : malloc(n ? n : 1);
    if (!err && (!dk || !docc || !dtc)) err = STROBE_ENOMEM;
    for (size_t g = 0; g < t->ngpus && !err; g++) {
        size_t dn = 0;
        for (size_t i = 0; i < n; i++) {
            if (dev[i] != t->gpus[g].id) continue;
            dk[dn] = k[i];
            docc[dn] = occ[i];
            dtc[dn] = tc[i];
            dn++;
        }
        err = device_metrics(&t->gpus[g], dk, dn, docc, dtc, S, E);
    }
    free(dk);
    free(docc);
    free(dtc);
    free(k);
    free(occ);
    free(tc);
    free(dev);
    if (!err) each_device(m, fill_props, t);
    mem_ctx mc = {t, m};
    if (!err) each_device(m, check_mem, &mc);
    /* The distributed rules' facts (data.py _analyze_distributed_metrics; event_parser.py). */
    for (size_t i = 0; i < m->count && !err; i++) {
        md_class c = md_class_of(m, (uint32_t)i);
        if (c.kind != MD_CPU_OP) continue;
        const char *name = md_str(m, md_name_of(m, (uint32_t)i));
        if (strcmp(name, "DataParallel.forward") == 0) t->use_dp = 1;
        if (strcmp(name, "DistributedDataParallel.forward") == 0) t->use_ddp = 1;
        if (strncmp(name, "nccl:", 5) == 0) t->has_nccl = 1;
    }
    t->devices_used = (int)t->ngpus;
    if (!err) {
        cli_tb_ops ops;
        err = cli_tb_ops_get(m, 0, &ops);
        if (!err) t->tc_eligible_ratio = ops.tc_eligible_ratio;
        cli_tb_ops_free(&ops);
    }
    if (err) cli_tb_metrics_free(t);
    return err;
}

void cli_tb_metrics_free(cli_tb_metrics *t) {
    free(t->gpus);
    t->gpus = NULL;
    t->ngpus = 0;
}

/* ---- operator tree -------------------------------------------------------------------------- */

int cli_tb_view_op(const md_model *m, uint32_t i) {
    if (md_kind_of(m, i) != MD_CPU_OP) return 0;
    const char *n = md_str(m, md_name_of(m, i));
    size_t len = strlen(n);
    int64_t step;
    if (md_step_number(n, &step)) return 0;
    if (strncmp(n, "enumerate(DataLoader)#", 22) == 0 && len >= 9 &&
        strcmp(n + len - 9, ".__next__") == 0)
        return 0;
    if (strncmp(n, "Optimizer.", 10) == 0) return 0;
    return strcmp(n, "DataParallel.forward") != 0 &&
           strcmp(n, "DistributedDataParallel.forward") != 0;
}

void cli_tb_ops_free(cli_tb_ops *t) {
    free(t->eligible);
    free(t->dev_self);
    free(t->dev_total);
    free(t->tc_self);
    free(t->tc_total);
    free(t->kern_self);
    free(t->parent);
    free(t->merged);
    free(t->owner);
    memset(t, 0, sizeof *t);
}

int cli_tb_ops_get(const md_model *m, int totals, cli_tb_ops *t) {
    size_t n = m->count ? m->count : 1;
    memset(t, 0, sizeof *t);
    t->eligible = calloc(n, 1);
    if (totals) {
        t->dev_self = calloc(n, sizeof *t->dev_self);
        t->dev_total = calloc(n, sizeof *t->dev_total);
        t->tc_total = calloc(n, sizeof *t->tc_total);
    }
    t->tc_self = calloc(n, sizeof *t->tc_self);
    t->kern_self = calloc(n, sizeof *t->kern_self);
    t->parent = malloc(n * sizeof *t->parent);
    t->merged = calloc(n, 1);
    int64_t *self = malloc(n * sizeof *self);
    uint32_t *owner = t->owner = calloc(n, sizeof *owner);
    uint8_t *below = calloc(n, 1); /* an eligible operator lies below */
    int err = 0;
    if (totals && (!t->dev_self || !t->dev_total || !t->tc_total)) err = STROBE_ENOMEM;
    if (!t->eligible || !t->tc_self || !t->kern_self || !t->parent || !t->merged || !self ||
        !owner || !below)
        err = STROBE_ENOMEM;
    if (!err) err = md_cpu_tree(m, t->parent, self, t->merged);
    if (!err) err = md_link(m, owner);
    /* Device work to the operator that launched it (a merged one's to the event it joined). */
    for (size_t i = 0; i < m->count && !err; i++) {
        if (owner[i] == 0) continue;
        md_class c = md_class_of(m, (uint32_t)i);
        if (!md_is_device_work(c.kind) || c.ph != 'X') continue;
        if ((m->ev_flags[i] & (MD_F_TIME | MD_F_BAD)) != MD_F_TIME) continue;
        uint32_t o = owner[i] - 1;
        if (t->merged[o]) o = t->parent[o];
        owner[i] = o + 1;
        if (o == MD_NONE) continue;
        int64_t d = md_dur(m, (uint32_t)i);
        if (totals) t->dev_self[o] += d;
        if (c.kind == MD_KERNEL) {
            t->kern_self[o] += d;
            if (cli_tb_tc_kernel(md_str(m, md_name_of(m, (uint32_t)i)))) t->tc_self[o] += d;
        }
    }
    /* Totals, and eligibility (named, or launched a TC kernel; then up through CPU operators). */
    for (size_t i = 0; i < m->count && !err; i++) {
        int kind = md_kind_of(m, (uint32_t)i);
        if (!md_is_op(kind) || t->merged[i]) continue;
        if (totals && (t->dev_self[i] || t->tc_self[i])) {
            for (uint32_t p = (uint32_t)i; p != MD_NONE; p = t->parent[p]) {
                t->dev_total[p] += t->dev_self[i];
                t->tc_total[p] += t->tc_self[i];
            }
        }
        if (!(kind == MD_CPU_OP && cli_tb_tc_op(md_str(m, md_name_of(m, (uint32_t)i)))) &&
            t->tc_self[i] == 0)
            continue;
        t->eligible[i] = 1;
        int up = kind == MD_CPU_OP;
        for (uint32_t p = t->parent[i]; p != MD_NONE; p = t->parent[p]) {
            below[p] = 1;
            if (up && md_kind_of(m, p) == MD_CPU_OP)
                t->eligible[p] = 1;
            else
                up = 0;
        }
    }
    /* tc_eligible_ops_kernel_ratio. */
    double bottom = 0, all = 0;
    for (size_t i = 0; i < m->count && !err; i++) {
        if (t->kern_self[i] == 0 || t->merged[i]) continue;
        if (t->eligible[i] && !below[i]) bottom += (double)t->kern_self[i];
        if (cli_tb_view_op(m, (uint32_t)i)) all += (double)t->kern_self[i];
    }
    t->tc_eligible_ratio = all > 0 ? bottom / all : 0;
    /* owner[i]: 1 + the operator, 0 where none; as the header says: the operator or MD_NONE. */
    for (size_t i = 0; i < m->count && !err; i++)
        owner[i] -= 1;
    free(self);
    free(below);
    if (err) cli_tb_ops_free(t);
    return err;
}

/* ---- the operator view's table (summary --tensor-cores) ------------------------------------- */

/* run_generator.py _generate_op_table, grouped by name (op_agg.py aggregate_ops): the operator
 * view's operators (cli_tb_view_op), not merged; calls, device self and total, host self and total
 * summed; eligibility that of the name's first call (by start); the ratios of the sums. Sorted by
 * device self duration when the trace has device work, else by host self duration (the plugin's
 * order), then by name. */
typedef struct oprow {
    uint32_t name, first;
    uint64_t calls;
    int64_t dev_self, dev_total, host_self, host_total, tc_self, tc_total, first_ts;
} oprow;

static const md_model *g_om;
static int g_by_dev;

static int by_self(const void *a, const void *b) {
    const oprow *x = a, *y = b;
    int64_t u = g_by_dev ? x->dev_self : x->host_self, v = g_by_dev ? y->dev_self : y->host_self;
    if (u != v) return u < v ? 1 : -1;
    return strcmp(md_str(g_om, x->name), md_str(g_om, y->name));
}

static void put_us(FILE *out, int64_t ns) {
    fprintf(out, "%s%" PRId64 ".%03" PRId64, ns < 0 ? "-" : "", (ns < 0 ? -ns : ns) / 1000,
            (ns < 0 ? -ns : ns) % 1000);
}

static double pct(int64_t a, int64_t b) {
    return b > 0 ? 100.0 * (double)a / (double)b : 0;
}

int cli_tb_op_table(FILE *out, const md_model *m, size_t limit, int format, size_t name_width) {
    int json = format == CLI_JSON, table = format == CLI_TABLE;
    cli_tb_ops t;
    int err = cli_tb_ops_get(m, 1, &t);
    if (err) return err;
    size_t nstr = m->strings.count ? m->strings.count : 1;
    uint32_t *row_of = malloc(nstr * sizeof *row_of);
    oprow *rows = malloc(nstr * sizeof *rows);
    int64_t *self = malloc((m->count ? m->count : 1) * sizeof *self);
    uint32_t *parent = malloc((m->count ? m->count : 1) * sizeof *parent);
    uint8_t *merged = calloc(m->count ? m->count : 1, 1);
    if (!row_of || !rows || !self || !parent || !merged) err = STROBE_ENOMEM;
    if (!err) err = md_cpu_tree(m, parent, self, merged);
    size_t nrows = 0;
    int any_dev = 0;
    for (size_t k = 0; k < nstr && !err; k++)
        row_of[k] = MD_NONE;
    for (size_t i = 0; i < m->count && !err; i++) {
        if (t.dev_self[i]) any_dev = 1;
        if (merged[i] || !cli_tb_view_op(m, (uint32_t)i)) continue;
        if ((m->ev_flags[i] & (MD_F_TIME | MD_F_BAD)) != MD_F_TIME) continue;
        const md_event e = md_at(m, (uint32_t)i);
        if (!md_in_cpu_tree(m, &e)) continue;
        if (row_of[e.name] == MD_NONE) {
            rows[nrows] = (oprow){.name = e.name, .first = (uint32_t)i, .first_ts = e.ts};
            row_of[e.name] = (uint32_t)nrows++;
        }
        oprow *r = &rows[row_of[e.name]];
        if (e.ts < r->first_ts) {
            r->first_ts = e.ts;
            r->first = (uint32_t)i;
        }
        r->calls++;
        r->dev_self += t.dev_self[i];
        r->dev_total += t.dev_total[i];
        r->host_self += self[i];
        r->host_total += e.dur;
        r->tc_self += t.tc_self[i];
        r->tc_total += t.tc_total[i];
    }
    if (!err) {
        g_om = m;
        g_by_dev = any_dev;
        cli_qsort(rows, nrows, sizeof *rows, by_self);
        size_t shown = limit == 0 || limit > nrows ? nrows : limit;
        static const char *const cols[] = {"Name",
                                           "Calls",
                                           "Device Self Duration (us)",
                                           "Device Total Duration (us)",
                                           "Host Self Duration (us)",
                                           "Host Total Duration (us)",
                                           "Tensor Cores Eligible",
                                           "Tensor Cores Self (%)",
                                           "Tensor Cores Total (%)"};
        size_t w[9] = {0, 8, 27, 28, 25, 26, 23, 23, 23};
        if (table) {
            size_t longest = 4;
            for (size_t k = 0; k < shown; k++) {
                size_t len = strobe__utf8_len(cli_esc(md_str(m, rows[k].name)));
                if (len > longest) longest = len;
            }
            w[0] = longest + 4 < name_width ? longest + 4 : name_width;
            strobe__table_separator(out, w, 9);
            for (int c = 0; c < 9; c++)
                strobe__table_cell(out, cols[c], w[c], 0, 0);
            fputc('\n', out);
            strobe__table_separator(out, w, 9);
        } else if (json) {
            fputs("[", out);
        } else {
            for (int c = 0; c < 9; c++)
                fprintf(out, "%s%s", c ? "," : "", cols[c]);
            fputc('\n', out);
        }
        for (size_t k = 0; k < shown; k++) {
            const oprow *r = &rows[k];
            int64_t v[4] = {r->dev_self, r->dev_total, r->host_self, r->host_total};
            if (table) {
                char b[8][64];
                snprintf(b[0], sizeof b[0], "%" PRIu64, r->calls);
                for (int c = 0; c < 4; c++)
                    snprintf(b[1 + c], sizeof b[1 + c], "%.3f", (double)v[c] / 1000.0);
                snprintf(b[5], sizeof b[5], "%s", t.eligible[r->first] ? "Yes" : "No");
                snprintf(b[6], sizeof b[6], "%.2f", pct(r->tc_self, r->dev_self));
                snprintf(b[7], sizeof b[7], "%.2f", pct(r->tc_total, r->dev_total));
                strobe__table_cell(out, cli_esc(md_str(m, r->name)), w[0], 0, name_width - 3);
                for (int c = 1; c < 9; c++)
                    strobe__table_cell(out, b[c - 1], w[c], 0, 0);
                fputc('\n', out);
                continue;
            }
            if (json) {
                fprintf(out, "%s\n {\"Name\": ", k ? "," : "");
                cli_json_str(out, md_str(m, r->name));
                fprintf(out, ", \"Calls\": %" PRIu64, r->calls);
            } else {
                cli_csv_str(out, md_str(m, r->name));
                fprintf(out, ",%" PRIu64, r->calls);
            }
            for (int c = 0; c < 4; c++) {
                if (json) fprintf(out, ", \"%s\": ", cols[2 + c]);
                if (!json) fputc(',', out);
                put_us(out, v[c]);
            }
            const char *yes = t.eligible[r->first] ? "Yes" : "No";
            double ps = pct(r->tc_self, r->dev_self), pt = pct(r->tc_total, r->dev_total);
            if (json)
                fprintf(out, ", \"%s\": \"%s\", \"%s\": %.2f, \"%s\": %.2f}", cols[6], yes, cols[7],
                        ps, cols[8], pt);
            else
                fprintf(out, ",%s,%.2f,%.2f\n", yes, ps, pt);
        }
        if (json) fputs(shown ? "\n]\n" : "]\n", out);
        if (table) strobe__table_separator(out, w, 9);
    }
    free(row_of);
    free(rows);
    free(self);
    free(parent);
    free(merged);
    cli_tb_ops_free(&t);
    return err;
}
