#!/usr/bin/env python3
"""check_tb_overview.py: the TensorBoard profiler plugin's GPU figures in strobe (steps --overview,
kernels --tb-view, summary --tensor-cores) against numbers worked out independently.

1. A small trace written here, with two GPUs, whose figures are worked out by hand in the
   comments, by the plugin's definitions (pytorch/kineto tb_plugin/torch_tb_profiler:
   gpu_metrics_parser.py, tensor_cores_parser.py, kernel_parser.py, tensor_core.py, node.py,
   op_agg.py, data.py's recommendations); and its twin without Tensor Core kernels (the mixed
   precision recommendation).
2. Bad input: --overview with csv, a cut trace.
3. The shared resnet50 trace (skipped with a message when ../shared is missing): the plugin's
   formulas recomputed here in plain Python from the JSON.

Usage: check_tb_overview.py STROBE SHARED_DIR WORK_DIR
"""
import bisect
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, finish, load, write_cut, x  # noqa: E402
import tracegen  # noqa: E402

STROBE, SHARED, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(WORK, exist_ok=True)


def run(cmd, *args):
    return tracegen.run(STROBE, cmd, "-q", *args)


def kern(name, ts, dur, dev, corr, bps=None, occ=None):
    a = {"device": dev, "stream": 7, "correlation": corr, "registers per thread": 32,
         "shared memory": 0, "grid": [80, 1, 1], "block": [256, 1, 1]}
    if bps is not None:
        a["blocks per SM"] = bps
    if occ is not None:
        a["est. achieved occupancy %"] = occ
    return x("kernel", name, ts, dur, pid=dev, tid=7, **a)


PROPS = [{"id": 0, "name": "Test GPU", "totalGlobalMem": 17179869184, "computeMajor": 8,
          "computeMinor": 0, "numSms": 80},
         {"id": 1, "name": "Second GPU", "totalGlobalMem": 8589934592, "computeMajor": 7,
          "computeMinor": 5, "numSms": 40}]


def mem(ts, dev, nbytes, total):
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "ts": ts,
            "pid": 1, "tid": 1, "args": {"Device Type": 1, "Device Id": dev, "Addr": 1 << 20,
                                         "Bytes": nbytes, "Total Allocated": total,
                                         "Total Reserved": total}}


def trace(name, k1, k5):
    ev = [
        x("cpu_op", "ProfilerStep#1", 0, 100),
        x("cpu_op", "ProfilerStep#2", 100, 100),
        x("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 20),
        x("cpu_op", "aten::conv2d", 20, 40),
        x("cpu_op", "aten::cudnn_convolution", 22, 36),
        x("cuda_runtime", "cudaLaunchKernel", 25, 2, correlation=1),
        x("cuda_runtime", "cudaLaunchKernel", 30, 2, correlation=2),
        x("cpu_op", "aten::mm", 110, 40),
        x("cuda_runtime", "cudaLaunchKernel", 115, 2, correlation=3),
        x("cpu_op", "aten::relu", 150, 40),
        x("cuda_runtime", "cudaLaunchKernel", 155, 2, correlation=4),
        x("cuda_runtime", "cudaLaunchKernel", 170, 2, correlation=6),
        x("cpu_op", "custom::fused", 190, 8),
        x("cuda_runtime", "cudaLaunchKernel", 191, 2, correlation=5),
        kern(k1, 30, 40, 0, 1, bps=0.5, occ=40),
        kern("elementwise_kernel", 50, 40, 0, 2, bps=2.0, occ=60),
        kern("sgemm_nn", 120, 60, 0, 3, bps=0.25),  # no occupancy
        kern("relu_kernel", 160, 30, 1, 4, bps=-1, occ=50),  # blocks not positive
        kern("relu_kernel", 175, 10, 1, 6, bps=0.5, occ=80),
        kern(k5, 193, 5, 1, 5, bps=0.5, occ=30),
        mem(40, 0, 1000, 12000000000),  # 12e9 of GPU 0's 16 GiB: 69.8%, under 90%
        mem(41, 1, 4096, 8000000000),  # 8e9 of GPU 1's 8 GiB: 93.1%
        mem(42, 1, -4096, 7999995904),
        {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "ts": 43, "pid": 1,
         "tid": 1, "args": {"Device Type": 0, "Device Id": -1, "Bytes": 64,
                            "Total Allocated": 10 ** 12}},  # the CPU: not a device
    ]
    p = os.path.join(WORK, name)
    with open(p, "w") as f:
        json.dump({"schemaVersion": 1, "deviceProperties": PROPS, "traceEvents": ev}, f)
    return p


# ---- 1. hand-made traces ---------------------------------------------------------------------
# Steps [0, 100) and [100, 200): every kernel ends inside the step of its launch, so neither moves;
# the span S..E is [0, 200), 200 us.
# GPU 0: K1 [30, 70) blocks .5 occ 40 (Tensor Cores: "h884"), K2 [50, 90) blocks 2 occ 60,
#   K3 [120, 180) blocks .25, no occupancy.
#   Utilization: [30, 90) + [120, 180) = 120 / 200 = 60%.
#   SM efficiency: [30, 50) .5, [50, 70) min(2.5, 1), [70, 90) min(2, 1), [120, 180) .25:
#   10 + 20 + 20 + 15 = 65 / 200 = 32.5%.
#   Occupancy: (40 * 40 + 60 * 40) / 80 = 50% (K3 has none).
#   Tensor Cores: 40 / (40 + 40 + 60) = 28.5714%.
# GPU 1: K4 [160, 190) blocks -1 (left out of SM efficiency) occ 50, K6 [175, 185) blocks .5
#   occ 80, K5 [193, 198) blocks .5 occ 30 (Tensor Cores: "xmma_gemm").
#   Utilization: 30 + 5 = 35 / 200 = 17.5%. SM efficiency: (.5 * 10 + .5 * 5) / 200 = 3.75%.
#   Occupancy: (50 * 30 + 80 * 10 + 30 * 5) / 45 = 54.4444%. Tensor Cores: 5 / 45 = 11.1111%.
# Recommendations: DataLoader 20 of step 1, 0 of step 2: 10 / 100 = 10.0% > 5%; GPU 1 under
# 50%. Tensor Cores are used, so no mixed precision advice. GPU 1's memory peaks at 8e9 bytes of
# 8 GiB (8589934592): 93.1% > 90%.
# tc_used_ratio: (40 + 5) / 185; eligible: bottom eligible operators aten::cudnn_convolution (80
# of kernels), aten::mm (60), custom::fused (5: eligible for its Tensor Core kernel) over all
# operators' kernels, 185: 145 / 185.
p = trace("tb.json", "volta_h884gemm_64x64_nn", "xmma_gemm_f16")
rc, out, err = run("steps", "--overview", "-f", "json", p)
expect("overview: exit 0", (rc, err), (0, ""))
o = json.loads(out) if rc == 0 else {"gpus": [], "recommendations": []}


def gpu_row(g):
    return [g["id"], g["name"], g["memory_gb"], g["compute_capability"],
            round(g["gpu_utilization_pct"], 4),
            None if g["est_sm_efficiency_pct"] is None else round(g["est_sm_efficiency_pct"], 4),
            round(g["est_achieved_occupancy_pct"], 4), round(g["tensor_cores_pct"], 4)]


expect("overview: GPU Summary", [gpu_row(g) for g in o["gpus"]], [
    [0, "Test GPU", 16.0, "8.0", 60.0, 32.5, 50.0, 28.5714],
    [1, "Second GPU", 8.0, "7.5", 17.5, 3.75, 54.4444, 11.1111],
])
expect("overview: tc_used_ratio, tc_eligible_ops_kernel_ratio",
       (round(o.get("tc_used_ratio", 0), 6), round(o.get("tc_eligible_ops_kernel_ratio", 0), 6)),
       (round(45 / 185, 6), round(145 / 185, 6)))
expect("overview: DataLoader share", round(o.get("average", {}).get("DataLoader", {})
                                           .get("pct", 0), 4), 10.0)
expect("overview: recommendations", [r[:60] for r in o["recommendations"]], [
    "This run has high time cost on input data loading. 10.0% of ",
    "GPU 1 has low utilization. You could try to increase batch s",
    "Device memory usage is at the limit of device memory capacit",
])
expect("overview: the memory advice's figures", [r[62:88] for r in o["recommendations"][2:]],
       ["(93.1% of 8.0GB on GPU1). "])
rc, out, err = run("steps", "--overview", p)
expect("overview table: the GPU Summary's lines with units",
       [l.split(None, 0)[0].strip() for l in out.splitlines()
        if l.strip().startswith(("GPU Utilization", "Est. SM", "Memory", "Kernel Time"))],
       ["Memory                           16.00 GB",
        "GPU Utilization                  60.00 %",
        "Est. SM Efficiency               32.50 %",
        "Kernel Time using Tensor Cores   28.57 %",
        "Memory                           8.00 GB",
        "GPU Utilization                  17.50 %",
        "Est. SM Efficiency               3.75 %",
        "Kernel Time using Tensor Cores   11.11 %"])

# The twin without Tensor Core kernels: tc_used_ratio 0 on a device of compute capability 8, and
# the bottom eligible operators (aten::cudnn_convolution 80, aten::mm 60; custom::fused is no
# longer eligible) launch 140 of 185: "Kernels with 76% time ...".
p2 = trace("tb_notc.json", "volta_sgemm_128x64_nn", "plain_kernel")
rc, out, err = run("steps", "--overview", "-f", "json", p2)
o2 = json.loads(out) if rc == 0 else {"recommendations": []}
expect("no TC: mixed precision advice", [r for r in o2["recommendations"] if "Tensor" in r], [
    "Kernels with 76% time are launched by Tensor Cores eligible operators. You could enable "
    "Automatic Mixed Precision (https://pytorch.org/docs/stable/amp.html) to speedup by using "
    "FP16."])

# DataParallel on two GPUs and DDP without NCCL (devices of compute capability 8.0 and 7.5), and
# both GPUs busy 5 of the step's 100 us: three of the plugin's rules, in its order.
p3 = os.path.join(WORK, "tb_dp.json")
with open(p3, "w") as f:
    json.dump({"deviceProperties": PROPS, "traceEvents": [
        x("cpu_op", "ProfilerStep#1", 0, 100),
        x("cpu_op", "DataParallel.forward", 0, 50),
        x("cuda_runtime", "cudaLaunchKernel", 10, 2, correlation=1),
        x("cuda_runtime", "cudaLaunchKernel", 30, 2, correlation=2),
        x("cpu_op", "DistributedDataParallel.forward", 60, 30),
        kern("k0", 20, 5, 0, 1), kern("k1", 35, 5, 1, 2)]}, f)
rc, out, err = run("steps", "--overview", "-f", "json", p3)
o3 = json.loads(out) if rc == 0 else {"recommendations": []}
expect("DP, DDP and two idle GPUs: the advice", o3["recommendations"], [
    "It is recommended to use DistributedDataParallel instead of DataParallel "
    "(https://pytorch.org/docs/stable/notes/cuda.html#cuda-nn-ddp-instead) to do multi-GPU "
    "training.",
    "Nccl backend is currently the fastest and highly recommended backend when using DDP for "
    "training.",
    "GPU 0 and 1 have low utilization. You could try to increase batch size to improve. Note: "
    "Increasing batch size may affect the speed and stability of model convergence."])

# Kernel view. relu_kernel: 2 calls, 30 and 10 us; blocks (-1 * 30 + .5 * 10) / 40 = -0.625,
# occupancy (50 * 30 + 80 * 10) / 40 = 57.5. sgemm_nn has no occupancy: 0, as the plugin fills.
rc, out, err = run("kernels", "--tb-view", "-f", "json", p)
rows = json.loads(out) if rc == 0 else []
expect("kernel view: rows", [[r["Name"], r["Tensor Cores Used"], r["Calls"],
                              r["Total Duration (us)"], r["Mean Duration (us)"],
                              r["Max Duration (us)"], r["Min Duration (us)"],
                              round(r["Mean Blocks Per SM"], 4),
                              round(r["Mean Est. Achieved Occupancy (%)"], 4)] for r in rows], [
    ["sgemm_nn", "No", 1, 60.0, 60.0, 60.0, 60.0, 0.25, 0.0],
    ["elementwise_kernel", "No", 1, 40.0, 40.0, 40.0, 40.0, 2.0, 60.0],
    ["relu_kernel", "No", 2, 40.0, 20.0, 30.0, 10.0, -0.625, 57.5],
    ["volta_h884gemm_64x64_nn", "Yes", 1, 40.0, 40.0, 40.0, 40.0, 0.5, 40.0],
    ["xmma_gemm_f16", "Yes", 1, 5.0, 5.0, 5.0, 5.0, 0.5, 30.0],
])

# Kernel view by operator: each kernel with the operator around its launch; both relu_kernel
# launches lie in aten::relu (one row of 2 calls, not eligible); grid and block as the plugin prints
# the lists. Ties of total duration keep the order of the names.
rc, out, err = run("kernels", "--tb-by-op", "-f", "json", p)
rows = json.loads(out) if rc == 0 else []
expect("kernel view by operator: rows", [[r["Name"], r["Operator"], r["Grid"], r["Block"],
                                         r["Register Per Thread"], r["Shared Memory"],
                                         r["Kernel Uses TC"], r["Op is TC Eligible"], r["Calls"],
                                         r["Total Duration (us)"],
                                         round(r["Mean Est. Achieved Occupancy (%)"], 4)]
                                        for r in rows], [
    ["sgemm_nn", "aten::mm", "[80, 1, 1]", "[256, 1, 1]", 32, 0, "No", "Yes", 1, 60.0, 0.0],
    ["elementwise_kernel", "aten::cudnn_convolution", "[80, 1, 1]", "[256, 1, 1]", 32, 0, "No",
     "Yes", 1, 40.0, 60.0],
    ["relu_kernel", "aten::relu", "[80, 1, 1]", "[256, 1, 1]", 32, 0, "No", "No", 2, 40.0, 57.5],
    ["volta_h884gemm_64x64_nn", "aten::cudnn_convolution", "[80, 1, 1]", "[256, 1, 1]", 32, 0,
     "Yes", "Yes", 1, 40.0, 40.0],
    ["xmma_gemm_f16", "custom::fused", "[80, 1, 1]", "[256, 1, 1]", 32, 0, "Yes", "Yes", 1, 5.0,
     30.0],
])

# Operator view. aten::cudnn_convolution: device self 80 (K1, K2), TC 40: 50%; host self
# 36 - 2 - 2 = 32. aten::conv2d: no device self (0%), total 80 with TC 40: 50%; host self
# 40 - 36 = 4. aten::mm: 60, eligible by name, 0%. aten::relu: 40, not eligible. custom::fused:
# eligible for its TC kernel, 100%. The DataLoader's range and the steps are no rows.
rc, out, err = run("summary", "--tensor-cores", "-f", "json", p)
rows = json.loads(out) if rc == 0 else []
expect("operator view: rows", [[r["Name"], r["Calls"], r["Device Self Duration (us)"],
                                r["Device Total Duration (us)"], r["Host Self Duration (us)"],
                                r["Tensor Cores Eligible"], r["Tensor Cores Self (%)"],
                                r["Tensor Cores Total (%)"]] for r in rows], [
    ["aten::cudnn_convolution", 1, 80.0, 80.0, 32.0, "Yes", 50.0, 50.0],
    ["aten::mm", 1, 60.0, 60.0, 38.0, "Yes", 0.0, 0.0],
    ["aten::relu", 1, 40.0, 40.0, 36.0, "No", 0.0, 0.0],
    ["custom::fused", 1, 5.0, 5.0, 6.0, "Yes", 100.0, 100.0],
    ["aten::conv2d", 1, 0.0, 80.0, 4.0, "Yes", 0.0, 50.0],
])

# The report carries the same figures, each with its unit in the page's section.
html = os.path.join(WORK, "tb.html")
rc, out, err = tracegen.run(STROBE, "report", "-q", "-o", html, p)
expect("report: exit 0", rc, 0)
page = open(html, encoding="utf-8").read() if rc == 0 else ""
m = re.search(r'<script type="application/json" id="strobe-data">(.*?)</script>', page, re.S)
data = json.loads(m.group(1).replace("\\u003c", "<")) if m else {}
expect("report: the GPU Summary's data", [gpu_row(g) for g in
                                          (data.get("tb_overview") or {}).get("gpus", [])],
       [gpu_row(g) for g in o["gpus"]])
expect("report: the recommendations", (data.get("tb_overview") or {}).get("recommendations"),
       o["recommendations"])
expect("report: the operators' and kernels' Tensor Core rows",
       (len(data.get("tb_operators") or []), len(data.get("tb_kernels") or [])), (5, 5))
expect("report: the section and its units",
       all(t in page for t in ('id="tb-gpu"', '" GB"', '" %"', "Time (us)")), True)

# ---- 2. bad input ----------------------------------------------------------------------------
rc, out, err = run("steps", "--overview", "-f", "csv", p)
expect("--overview -f csv: exit 2, one line", (rc, err.count("\n")), (2, 1))
cut = write_cut(os.path.join(WORK, "cut.json"))
for cmd in (["steps", "--overview"], ["kernels", "--tb-view"], ["kernels", "--tb-by-op"],
            ["summary", "--tensor-cores"]):
    rc, out, err = run(*cmd, cut)
    expect("%s on a cut trace: exit 2, one line naming the file" % " ".join(cmd),
           (rc, err.count("\n"), "cut.json" in err), (2, 1, True))
rc, out, err = run("kernels", "--tb-view", "--by-type", p)
expect("--tb-view with --by-type: exit 2", rc, 2)

# ---- 3. the shared resnet50 trace ------------------------------------------------------------
RESNET = os.path.join(SHARED, "traces", "kineto_tb_resnet50_nw0.pt.trace.json.gz")

TC_KERNEL = ["h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
             "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group",
             "xmma_implicit_gemm", "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm",
             "xmma_gemm", "xmma_sparse_gemm", "c1688"]


def is_tc(name):
    return any(p in name for p in TC_KERNEL)


def steps_span(events):
    """The plugin's first step start and last step end (event_parser.py), 2021 categories."""
    steps, calls, devs = [], [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, a = e.get("cat", "").lower(), e.get("args", {})
        if cat == "operator" and e["name"].startswith("ProfilerStep#"):
            steps.append([e["ts"], e["ts"] + e["dur"]])
        elif cat == "runtime":
            calls.append((e["ts"], e["ts"] + e["dur"], a.get("correlation")))
        elif cat in ("kernel", "memcpy", "memset"):
            devs.append((a.get("correlation"), e["ts"], e["ts"] + e["dur"]))
    steps.sort()
    by_corr = {}
    for d in devs:
        by_corr.setdefault(d[0], []).append(d)
    info, claimed = [], set()
    for st in steps:
        mine = [d for (s, t, c) in calls if st[0] <= s and t <= st[1] for d in by_corr.get(c, [])]
        claimed.update(mine)
        info.append((min((d[1] for d in mine), default=None),
                     max((d[2] for d in mine), default=None), len(mine)))
    prev = steps[0][0]
    for d in devs:
        if d not in claimed and d[2] < info[0][0]:
            prev = max(prev, d[2])
    for st, (lo, hi, n) in zip(steps, info):
        st[0] = max(prev, st[0])
        st[1] = max(st[1], hi if hi is not None else st[0], st[0])
        prev = st[1]
    last = max(i for i, (_, _, n) in enumerate(info) if n > 0)
    keep = last + 1
    if last > 0 and info[last - 1][2] * 0.8 > info[last][2]:
        keep = last
    return steps[0][0], steps[keep - 1][1]


def gpu_metrics(events, S, E):
    """gpu_metrics_parser.py and tensor_cores_parser.py, per device, over [S, E)."""
    per = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "").lower() == "kernel":
            dev = e.get("args", {}).get("device")
            if dev is not None:
                per.setdefault(dev, []).append(e)
    out = {}
    for dev, ks in sorted(per.items()):
        rs = sorted((k["ts"], k["ts"] + k["dur"]) for k in ks)
        union, busy = [], 0
        for s, t in rs:
            if union and s <= union[-1][1]:
                union[-1][1] = max(union[-1][1], t)
            else:
                union.append([s, t])
        busy = sum(max(0, min(t, E) - max(s, S)) for s, t in union)
        eps = []
        for k in ks:
            b = k["args"].get("blocks per SM")
            if b is not None and b > 0:
                eps += [(k["ts"], 0, b), (k["ts"] + k["dur"], 1, b)]
        eps.sort(key=lambda p: (p[0], p[1]))
        w, level = 0.0, eps[0][2] if eps else 0
        for i in range(1, len(eps)):
            if eps[i][0] > eps[i - 1][0] and level > 0:
                w += min(level, 1.0) * max(0, min(eps[i][0], E) - max(eps[i - 1][0], S))
            level += -eps[i][2] if eps[i][1] else eps[i][2]
        occ_w = occ_t = tc_t = all_t = 0
        for k in ks:
            ln = max(0, min(k["ts"] + k["dur"], E) - max(k["ts"], S))
            o = k["args"].get("est. achieved occupancy %")
            if o is not None and o >= 0:
                occ_w += o * ln
                occ_t += ln
            all_t += ln
            tc_t += ln if is_tc(k["name"]) else 0
        out[dev] = [100 * busy / (E - S), 100 * w / (E - S), occ_w / occ_t,
                    100 * tc_t / all_t if all_t else 0]
    return out


if not os.path.exists(RESNET):
    print("SKIP  resnet50: %s missing" % RESNET)
else:
    doc = load(RESNET)
    events = doc["traceEvents"]
    S, E = steps_span(events)
    want = gpu_metrics(events, S, E)
    rc, out, err = run("steps", "--overview", "-f", "json", RESNET)
    expect("resnet50: exit 0", rc, 0)
    o = json.loads(out)
    got = {g["id"]: [g["gpu_utilization_pct"], g["est_sm_efficiency_pct"],
                     g["est_achieved_occupancy_pct"], g["tensor_cores_pct"]] for g in o["gpus"]}
    expect("resnet50: GPU Summary (utilization, SM efficiency, occupancy, TC share)",
           {d: [round(v, 4) for v in r] for d, r in got.items()},
           {d: [round(v, 4) for v in r] for d, r in want.items()})
    dev0 = doc["deviceProperties"][0]
    expect("resnet50: device lines", [(g["name"], g["memory_gb"], g["compute_capability"])
                                      for g in o["gpus"]][:1],
           [(dev0["name"], round(dev0["totalGlobalMem"] / 2 ** 30, 2),
             "%d.%d" % (dev0["computeMajor"], dev0["computeMinor"]))])
    # The DataLoader's share, from the step breakdown that check_steps.py checks.
    rc, sout, err = run("steps", "-f", "json", RESNET)
    srows = json.loads(sout)
    share = 100 * sum(r["DataLoader"] for r in srows) / sum(r["Total"] for r in srows)
    expect("resnet50: the DataLoader recommendation (about a third of each step)",
           [r for r in o["recommendations"] if "DataLoader" in r][:1],
           ["This run has high time cost on input data loading. %.1f%% of the step time is in "
            "DataLoader. You could try to set num_workers on DataLoader's construction and enable "
            "multi-processes on data loading (https://pytorch.org/docs/stable/data.html"
            "#single-and-multi-process-data-loading)." % share])
    expect("resnet50: DataLoader about a third", 25 < share < 40, True)
    # The kernel view: duration-weighted means per name (missing values as 0).
    agg = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "").lower() == "kernel":
            a = e.get("args", {})
            r = agg.setdefault(e["name"], [0, 0.0, 0.0])
            r[0] += e["dur"]
            r[1] += (a.get("blocks per SM") or 0) * e["dur"]
            r[2] += (a.get("est. achieved occupancy %") or 0) * e["dur"]
    rc, kout, err = run("kernels", "--tb-view", "-f", "json", RESNET)
    krows = json.loads(kout)
    expect("resnet50: kernel view, blocks per SM and occupancy per name",
           {r["Name"]: (round(r["Mean Blocks Per SM"], 4),
                        round(r["Mean Est. Achieved Occupancy (%)"], 4)) for r in krows},
           {n: (round(r[1] / r[0], 4) if r[0] else 0.0, round(r[2] / r[0], 4) if r[0] else 0.0)
            for n, r in agg.items()})
    expect("resnet50: Tensor Cores Used per name", {r["Name"]: r["Tensor Cores Used"]
                                                    for r in krows},
           {n: "Yes" if is_tc(n) else "No" for n in agg})
    # Mixed precision advice: compute capability 7.0, no Tensor Core kernel; the bottom eligible
    # operators' share of the kernel time launched directly by operators, worked out from the
    # operator nesting (by time, per thread) and the launches' correlation ids.
    ops_by_tid, rt = {}, {}
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat", "").lower()
        if cat == "operator":
            ops_by_tid.setdefault(e["tid"], []).append(e)
        elif cat == "runtime":
            rt[e["args"].get("correlation")] = e
    TC_OPS = set("""aten::_convolution aten::_convolution_nogroup aten::conv1d aten::conv2d
        aten::conv3d aten::conv_tbc aten::conv_transpose1d aten::conv_transpose2d
        aten::conv_transpose3d aten::convolution aten::cudnn_convolution
        aten::cudnn_convolution_transpose aten::prelu aten::addmm aten::addmv aten::addr
        aten::matmul aten::mm aten::mv aten::linear aten::addbmm aten::baddbmm aten::bmm
        aten::chain_matmul aten::linalg_multi_dot aten::_thnn_fused_lstm_cell
        aten::_thnn_fused_gru_cell aten::lstm_cell aten::gru_cell aten::rnn_tanh_cell
        aten::rnn_relu_cell CudnnConvolutionBackward BmmBackward0
        aten::cudnn_convolution_transpose_backward CudnnConvolutionTransposeBackward MmBackward
        aten::cudnn_convolution_backward_weight aten::addmm_ AddmvBackward MvBackward
        aten::cudnn_convolution_transpose_backward_weight
        aten::cudnn_convolution_transpose_backward_input AddmmBackward
        aten::cudnn_convolution_backward_input AddbmmBackward aten::cudnn_convolution_backward
        """.split())
    parent, starts, nodes = {}, {}, {}
    for tid, ops in ops_by_tid.items():
        ops.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in ops:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] < e["ts"] + e["dur"]:
                stack.pop()
            parent[id(e)] = stack[-1] if stack else None
            stack.append(e)
        starts[tid] = [e["ts"] for e in ops]
        nodes[tid] = ops
    kself = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "").lower() == "kernel":
            r = rt.get(e["args"].get("correlation"))
            if r is None or r["tid"] not in nodes:
                continue
            ops = nodes[r["tid"]]
            i = bisect.bisect_right(starts[r["tid"]], r["ts"]) - 1
            owner = None
            while i >= 0:  # the innermost operator containing the call
                c = ops[i]
                if c["ts"] <= r["ts"] and r["ts"] + r["dur"] <= c["ts"] + c["dur"]:
                    owner = c
                    break
                i -= 1
            if owner is not None:
                kself[id(owner)] = kself.get(id(owner), 0) + e["dur"]
    elig, below = set(), set()
    for ops in nodes.values():
        for e in ops:
            if e["name"] in TC_OPS:
                elig.add(id(e))
                p = parent[id(e)]
                while p is not None:
                    elig.add(id(p))
                    below.add(id(p))
                    p = parent[id(p)]
    allops = [e for ops in nodes.values() for e in ops]

    def view_op(n):
        return not (n.startswith("ProfilerStep#") or n.startswith("Optimizer.") or
                    (n.startswith("enumerate(DataLoader)#") and n.endswith(".__next__")) or
                    n in ("DataParallel.forward", "DistributedDataParallel.forward"))
    num = sum(kself.get(id(e), 0) for e in allops if id(e) in elig and id(e) not in below)
    den = sum(kself.get(id(e), 0) for e in allops if view_op(e["name"]))
    expect("resnet50: the mixed precision advice",
           [r for r in o["recommendations"] if "Tensor Cores" in r],
           ["Kernels with %d%% time are launched by Tensor Cores eligible operators. You could "
            "enable Automatic Mixed Precision (https://pytorch.org/docs/stable/amp.html) to speedup"
            " by using FP16." % round(100 * num / den)])
    # The operator view: no Tensor Core kernel, so every share is 0; listed names are eligible.
    rc, tout, err = run("summary", "--tensor-cores", "-f", "json", RESNET)
    trows = json.loads(tout)
    expect("resnet50: operator view, TC shares all 0",
           sorted({(r["Tensor Cores Self (%)"], r["Tensor Cores Total (%)"]) for r in trows}),
           [(0.0, 0.0)])
    expect("resnet50: operator view, listed operators eligible",
           [r["Name"] for r in trows if r["Name"] in TC_OPS and r["Tensor Cores Eligible"] != "Yes"],
           [])

finish()
