#!/usr/bin/env python3
"""Checks `strobe flamegraph` (cli/flame.c, cli/cmd_flamegraph.c).

Usage: check_flame.py STROBE WORK_DIR generated|browser|torch
       check_flame.py STROBE WORK_DIR shared SHARED_DIR

generated: traces written here with known nesting, times, kernels, allocations and samples. The
expected stacks are worked out by a small folding of the trace's events in this file (nesting by
containment on each thread, self time = duration less the children's, "Call stack" frames root
first); for every metric and grouping the SVG must be well-formed XML, every frame's value must
equal the inclusive value worked out here (so the root's is the total), every rectangle's width
must be its share of the drawing's width, and children must lie inside their parent. Also: the
differential graph's colours (red grew, blue shrank, grey unchanged) and its base values, names
with markup characters, control characters and bytes that are not UTF-8, the merging of frames
narrower than --min-width, an empty trace ("no samples"), bad input and bad usage (exit 2, one
line naming the file), a .pftrace giving what its JSON gives.

browser: the script in headless chromium (skipped with a note without it): search with its share
(a match inside a match counted once), zoom and unzoom, no script error; and a screenshot.

torch: a legacy-format trace written by Debian's python3-torch (skipped with a note without it):
the root is torch's own self CPU total.

shared: the resnet50 trace of SHARED_DIR (exit 77 without it): the SVG's frames against the lines
of `strobe stacks` (each shown frame's value is the sum of the lines under it, within their
rounding), the device total against the trace's kernels, copies and memsets, the memory total
against its [memory] events, and both commands' times.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, finish, load, run, write, write_cut, x  # noqa: E402

NS = "{http://www.w3.org/2000/svg}"
XPAD = 10

# ---- an independent folding of a (well nested) trace --------------------------------------------

OPS = ("cpu_op", "user_annotation")
ROWS = OPS + ("cuda_runtime", "cuda_driver")
DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")
DEVICE_ANY = DEVICE + ("Kernel", "Memcpy", "Memset")  # both schemas


def us_ns(v):
    return int(round(float(v) * 1000))


def fold(doc, metric, group):
    """{stack tuple: weight} as flamegraph's --metric and --group-by define them."""
    evs = doc["traceEvents"]
    xs = [e for e in evs if e.get("ph") == "X" and e.get("cat") in ROWS]
    for i, e in enumerate(xs):
        e["_i"], e["_t0"], e["_t1"] = i, us_ns(e["ts"]), us_ns(e["ts"]) + us_ns(e["dur"])

    def enclosing(thread, t0, t1, cats, skip=None):
        """The innermost event of `cats` on `thread` (other than `skip`) containing [t0, t1]."""
        cands = [o for o in xs if o is not skip and o["cat"] in cats
                 and (o["pid"], o["tid"]) == thread and o["_t0"] <= t0 and t1 <= o["_t1"]]
        return min(cands, key=lambda o: o["_t1"] - o["_t0"]) if cands else None

    def op_parent(e):
        return enclosing((e["pid"], e["tid"]), e["_t0"], e["_t1"], OPS, skip=e)

    def frames(e):
        stack = e.get("args", {}).get("Call stack")
        if group == "stack" and stack:
            return [f for f in reversed(stack.split(";")) if f] + [e["name"]]
        p = op_parent(e)
        return (frames(p) if p else []) + [e["name"]]

    def at(thread, t):
        """The innermost operator on thread containing time t."""
        best = None
        for o in xs:
            if o["cat"] in OPS and (o["pid"], o["tid"]) == thread and o["_t0"] <= t < o["_t1"]:
                if best is None or o["_t1"] - o["_t0"] < best["_t1"] - best["_t0"]:
                    best = o
        return best

    out = {}

    def add(stack, w):
        key = tuple(f.replace(";", "_") for f in stack)
        out[key] = out.get(key, 0) + w

    if metric == "self_cpu":
        for e in xs:
            kids = [c for c in xs if c is not e and (c["pid"], c["tid"]) == (e["pid"], e["tid"])
                    and enclosing((c["pid"], c["tid"]), c["_t0"], c["_t1"], ROWS, skip=c) is e]
            w = e["_t1"] - e["_t0"] - sum(c["_t1"] - c["_t0"] for c in kids)
            if w:
                add(frames(e), w)
    elif metric == "self_device":
        by_corr = {e["args"]["correlation"]: e for e in xs
                   if e["cat"] == "cuda_runtime" and "correlation" in e.get("args", {})}
        for k in evs:
            if k.get("ph") != "X" or k.get("cat") not in DEVICE or not us_ns(k["dur"]):
                continue
            rt = by_corr.get(k.get("args", {}).get("correlation"))
            op = op_parent(rt) if rt else None
            add((frames(op) if op else []) + [k["name"]], us_ns(k["dur"]))
    elif metric == "memory":
        for m in evs:
            if m.get("name") != "[memory]" or m["args"]["Bytes"] <= 0:
                continue
            op = at((m["pid"], m["tid"]), us_ns(m["ts"]))
            add(frames(op) if op else ["[outside any range]"], m["args"]["Bytes"])
    elif metric == "samples":
        for s in evs:
            if s.get("cat") != "cpu_sample":
                continue
            if group == "stack":
                add([f for f in reversed(s["args"]["Call stack"].split(";")) if f], 1)
            else:
                op = at((s["pid"], s["tid"]), us_ns(s["ts"]))
                add(frames(op) if op else ["[outside any range]"], 1)
    return out


def inclusive(folded):
    """{path tuple: inclusive value}, the root () included."""
    inc = {}
    for stack, w in folded.items():
        for k in range(len(stack) + 1):
            inc[stack[:k]] = inc.get(stack[:k], 0) + max(w, 0)
    return inc


# ---- reading the SVG ----------------------------------------------------------------------------

def parse_svg(path):
    """(svg root element, frames): each frame a dict with its name, value, rectangle, path."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        fail("%s: not well-formed XML: %s" % (path, e))
        return None, []
    frs = []
    for g in root.iter(NS + "g"):
        if g.get("class") != "f":
            continue
        title = g.find(NS + "title").text
        rect, text = g.find(NS + "rect"), g.find(NS + "text")
        frs.append({"o": int(g.get("data-o")), "v": int(g.get("data-v")), "d": int(g.get("data-d")),
                    "b": int(g.get("data-b", "-1")), "title": title,
                    "name": re.sub(r" \([^()]*\)$", "", title), "x": float(rect.get("x")),
                    "w": float(rect.get("width")), "fill": rect.get("fill"),
                    "text": text.text or ""})
    # Parents by containment one level down (siblings never overlap; no frame is empty).
    for f in frs:
        f["parent"] = None
        for p in frs:
            if p["d"] == f["d"] - 1 and p["o"] <= f["o"] and f["o"] + f["v"] <= p["o"] + p["v"]:
                f["parent"] = p
    for f in frs:
        path, p = [], f
        while p is not None and p["d"] > 0:
            path.append(p["name"])
            p = p["parent"]
        f["path"] = tuple(reversed(path))
    return root, frs


def check_geometry(what, root, frs, width):
    """Root width is the drawing's, each width its value's share, children inside their parent,
    children's widths summing to at most their parent's."""
    bad = []
    tops = [f for f in frs if f["d"] == 0]
    if len(tops) != 1:
        bad.append("%d root frames" % len(tops))
        return expect(what + ": geometry", bad, [])
    total = tops[0]["v"]
    draw = width - 2 * XPAD
    if abs(tops[0]["x"] - XPAD) > 1e-9 or abs(tops[0]["w"] - draw) > 1e-9:
        bad.append("root at %s width %s" % (tops[0]["x"], tops[0]["w"]))
    kids = {}
    for f in frs:
        if f["d"] > 0 and f["parent"] is None:
            bad.append("%s: no parent" % f["title"])
        if abs(f["w"] - f["v"] * draw / total) > 0.011:
            bad.append("%s: width %s for value %d" % (f["title"], f["w"], f["v"]))
        if abs(f["x"] - (XPAD + f["o"] * draw / total)) > 0.006:
            bad.append("%s: x %s for offset %d" % (f["title"], f["x"], f["o"]))
        p = f["parent"]
        if p is not None:
            kids.setdefault(id(p), (p, []))[1].append(f)
            if f["x"] < p["x"] - 1e-9 or f["x"] + f["w"] > p["x"] + p["w"] + 1e-9:
                bad.append("%s sticks out of %s" % (f["title"], p["title"]))
    for p, ks in kids.values():
        if sum(k["w"] for k in ks) > p["w"] + 1e-6 or sum(k["v"] for k in ks) > p["v"]:
            bad.append("children of %s wider than it" % p["title"])
    if int(root.get("width")) != width:
        bad.append("svg width %s" % root.get("width"))
    expect(what + ": geometry (widths, containment)", bad, [])


def check_values(what, frs, want, min_val=0):
    """Every frame's value is the inclusive value of its path; every path worth showing is
    shown."""
    got = {f["path"]: f["v"] for f in frs}
    if len(got) != len(frs):
        fail("%s: %d frames but %d distinct paths" % (what, len(frs), len(got)))
    expect(what + ": frame values", got, {p: v for p, v in want.items() if v > 0 and v >= min_val})


def flame(strobe, out, *args):
    rc, _, err = run(strobe, "flamegraph", *args, "-o", out)
    if rc != 0:
        fail("strobe flamegraph %s: exit %d: %s" % (" ".join(args), rc, err.strip()))
        return None, []
    return parse_svg(out)


def rgb(fill):
    return tuple(int(v) for v in re.match(r"rgb\((\d+),(\d+),(\d+)\)", fill).groups())


# ---- generated traces ---------------------------------------------------------------------------

def runtime(name, ts, dur, corr, tid=1):
    return x("cuda_runtime", name, ts, dur, tid=tid, correlation=corr)


def kernel(name, ts, dur, corr):
    return x("kernel", name, ts, dur, tid=7, pid=0, stream=7, correlation=corr, device=0)


def memory(ts, nbytes, tid=1):
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "ts": ts,
            "pid": 1, "tid": tid, "args": {"Device Type": 0, "Device Id": -1, "Bytes": nbytes,
                                           "Addr": 4096, "Total Allocated": 0,
                                           "Total Reserved": 0}}


def sample(ts, stack, tid=1):
    return {"ph": "i", "s": "t", "cat": "cpu_sample", "name": "cpu_sample", "ts": ts, "pid": 1,
            "tid": tid, "args": {"Call stack": stack}}


def main_trace(path):
    """Thread 1/1 (times in us):
      outer (user_annotation) [0, 100)
        aten::linear [10, 60)   Call stack "model.py(20): forward;train.py(5): <module>"
          aten::addmm [15, 45)
            cudaLaunchKernel [20, 25) corr 100 -> k_gemm [30, 38)
          cudaLaunchKernel [50, 54) corr 101 -> k_bias [60, 62)
        aten::relu [70, 90)
    Thread 1/2: aten::mm [0, 30) Call stack "train.py(9): <module>"; aten::mm [40, 50).
    k_orphan [96, 97) corr 999: launched by nothing.
    Allocations: +4096 at 12 (linear), +1024 at 16 (addmm), -512 at 17 (a free), +256 at 95
    (outer), +64 at 200 (outside any range).
    Samples (innermost first): "leaf;mid;main" at 16 and 17, "other;main" at 71, "leaf;mid;main"
    at 150 (outside any range)."""
    evs = [
        x("user_annotation", "outer", 0, 100),
        x("cpu_op", "aten::linear", 10, 50,
          **{"Call stack": "model.py(20): forward;train.py(5): <module>"}),
        x("cpu_op", "aten::addmm", 15, 30),
        runtime("cudaLaunchKernel", 20, 5, 100),
        runtime("cudaLaunchKernel", 50, 4, 101),
        x("cpu_op", "aten::relu", 70, 20),
        x("cpu_op", "aten::mm", 0, 30, tid=2, **{"Call stack": "train.py(9): <module>"}),
        x("cpu_op", "aten::mm", 40, 10, tid=2),
        kernel("k_gemm", 30, 8, 100),
        kernel("k_bias", 60, 2, 101),
        kernel("k_orphan", 96, 1, 999),
        memory(12, 4096), memory(16, 1024), memory(17, -512), memory(95, 256), memory(200, 64),
        sample(16, "leaf;mid;main"), sample(17, "leaf;mid;main"), sample(71, "other;main"),
        sample(150, "leaf;mid;main"),
    ]
    return write(path, evs)


def test_metrics(strobe, work):
    path = main_trace(os.path.join(work, "main.json"))
    doc = load(path)
    # Hand-worked totals, against which the folding above is checked too (us -> ns).
    totals = {"self_cpu": 100000 + 30000 + 10000, "self_device": 11000, "memory": 4096 + 1024 + 256
              + 64, "samples": 4}
    for metric in ("self_cpu", "self_device", "memory", "samples"):
        for group in ("stack", "range"):
            what = "%s by %s" % (metric, group)
            want = inclusive(fold(doc, metric, group))
            expect(what + ": the folding here adds up to the hand-worked total", want[()],
                   totals[metric])
            svg, frs = flame(strobe, os.path.join(work, "main_%s_%s.svg" % (metric, group)),
                             path, "--metric", metric, "--group-by", group)
            if svg is None:
                continue
            check_geometry(what, svg, frs, 1200)
            check_values(what, frs, want)
    # The same trace as Perfetto protobuf (`strobe convert`) gives the same frames (CPU samples
    # excepted: the reader does not take them from a .pftrace, as `strobe stacks` says).
    pf = os.path.join(work, "main.pftrace")
    rc, _, err = run(strobe, "convert", path, "-o", pf)
    expect("convert to .pftrace", (rc, err), (0, ""))
    for metric in ("self_cpu", "self_device", "memory"):
        for group in ("stack", "range"):
            _, a = parse_svg(os.path.join(work, "main_%s_%s.svg" % (metric, group)))
            _, b = flame(strobe, os.path.join(work, "pf_%s_%s.svg" % (metric, group)), pf,
                         "--metric", metric, "--group-by", group)
            expect(".pftrace: %s by %s as from JSON" % (metric, group),
                   sorted((f["path"], f["v"], f["o"]) for f in b),
                   sorted((f["path"], f["v"], f["o"]) for f in a))
    # A few stacks spelled out, so that the folding above is not the only judge.
    _, frs = parse_svg(os.path.join(work, "main_self_cpu_stack.svg"))
    got = {f["path"]: f["v"] for f in frs}
    expect("self_cpu by stack: Python frames root first, then the operators",
           got.get(("train.py(5): <module>", "model.py(20): forward", "aten::linear",
                    "aten::addmm", "cudaLaunchKernel")), 5000)
    expect("self_cpu by stack: linear (50) less addmm and a launch", got.get(
        ("train.py(5): <module>", "model.py(20): forward", "aten::linear")), 50000)
    _, frs = parse_svg(os.path.join(work, "main_self_cpu_range.svg"))
    got = {f["path"]: f["v"] for f in frs}
    expect("self_cpu by range: no Python frames", got.get(("outer", "aten::linear")), 50000)
    expect("self_cpu by range: outer's inclusive value", got.get(("outer",)), 100000)
    _, frs = parse_svg(os.path.join(work, "main_self_device_stack.svg"))
    got = {f["path"]: f["v"] for f in frs}
    expect("self_device: the kernel under its launching operator's stack", got.get(
        ("train.py(5): <module>", "model.py(20): forward", "aten::linear", "aten::addmm",
         "k_gemm")), 8000)
    expect("self_device: unlinked work on the root", got.get(("k_orphan",)), 1000)
    _, frs = parse_svg(os.path.join(work, "main_samples_stack.svg"))
    got = {f["path"]: f["v"] for f in frs}
    expect("samples: native frames root first, counted", got.get(("main", "mid", "leaf")), 3)
    # Colours by kind: operators red-dominant, Python green, kernels blue-green, the legend.
    svg, frs = parse_svg(os.path.join(work, "main_self_device_stack.svg"))
    kinds = {}
    for f in frs:
        r, g, b = rgb(f["fill"])
        if f["name"].startswith("aten::"):
            kinds.setdefault("operator red", []).append(r > g and r > b)
        elif ".py(" in f["name"]:
            kinds.setdefault("Python green", []).append(g > r and g > b)
        elif f["name"].startswith("k_"):
            kinds.setdefault("kernel cyan", []).append(b > r and g > r)
    expect("colours by kind", {k: all(v) for k, v in kinds.items()},
           {"operator red": True, "Python green": True, "kernel cyan": True})
    legend = [t.text for g in svg.iter(NS + "g") if g.get("class") == "legend"
              for t in g.iter(NS + "text")]
    expect("legend names the kinds shown", legend, ["operator", "Python", "kernel / device"])
    # Labels: the full label where it fits, cut with ".." where not, none where under 3 chars
    # fit. A Python frame's label is its function first, its path last ("forward \u2014
    # model.py(20)" for "model.py(20): forward"), so that a cut keeps the function.
    bad, python = [], 0
    for f in frs:
        m = re.match(r"^(.*\(\d+\)): (.+)$", f["name"])
        lab = m.group(2) + " \u2014 " + m.group(1) if m else f["name"]
        python += m is not None
        fit = int((f["w"] - 6) / (12 * 0.59))
        want = "" if fit < 3 else lab if len(lab) <= fit else lab[:fit - 2] + ".."
        if f["text"] != want:
            bad.append((f["name"], f["w"], f["text"]))
    expect("labels fit their frames", bad, [])
    expect("Python frames labelled function first", python > 0, True)
    # The default metric and grouping are self_cpu by stack; the title and width options.
    svg, frs2 = flame(strobe, os.path.join(work, "main_default.svg"), path, "--width", "600",
                      "--title", "T<1>")
    if svg is not None:
        check_geometry("--width 600", svg, frs2, 600)
        check_values("defaults", frs2, inclusive(fold(doc, "self_cpu", "stack")))
        heading = [t.text for t in svg.iter(NS + "text") if t.get("class") == "heading"]
        expect("--title", heading, ["T<1>"])


def test_diff(strobe, work):
    base = write(os.path.join(work, "base.json"), [
        x("cpu_op", "A", 0, 100), x("cpu_op", "B", 0, 40), x("cpu_op", "C", 50, 10),
        x("cpu_op", "D", 100, 50), x("cpu_op", "F", 150, 30)])
    test = write(os.path.join(work, "test.json"), [
        x("cpu_op", "A", 0, 100), x("cpu_op", "B", 0, 70), x("cpu_op", "C", 70, 5),
        x("cpu_op", "D", 100, 50), x("cpu_op", "E", 150, 10)])
    out = os.path.join(work, "diff.svg")
    rc, _, err = run(strobe, "flamegraph", "--diff", base, test, "-o", out)
    expect("--diff exit status", (rc, err), (0, ""))
    svg, frs = parse_svg(out)
    if svg is None:
        return
    check_geometry("diff", svg, frs, 1200)
    tb, tt = inclusive(fold(load(base), "self_cpu", "range")), inclusive(fold(load(test),
                                                                             "self_cpu", "range"))
    check_values("diff: the shape is TEST's", frs, tt)
    expect("diff: base values", {f["path"]: f["b"] for f in frs},
           {p: tb.get(p, 0) for p in tt if tt[p] > 0})

    def sign(f):
        r, g, b = rgb(f["fill"])
        return "grew" if r > b else "shrank" if b > r else "same"
    # A 100 -> 100, B 40 -> 70, C 10 -> 5, D 50 -> 50, E new, F gone; the root 180 -> 160.
    expect("diff: colour by the sign of the change", {f["name"]: sign(f) for f in frs},
           {"all": "shrank", "A": "same", "B": "grew", "C": "shrank", "D": "same", "E": "grew"})
    inten = {f["name"]: rgb(f["fill"]) for f in frs}
    expect("diff: a new frame full red, B (+75%) less so, C (-50%) blue",
           (inten["E"], inten["B"][1] > inten["E"][1], inten["C"][2] > inten["C"][0]),
           ((255, 0, 0), True, True))
    b_title = [f["title"] for f in frs if f["name"] == "B"]
    expect("diff: the title shows both values and the change", b_title,
           ["B (70.000 \u00b5s, 43.75%; base 40.000 \u00b5s, +30.000 \u00b5s, +75.00%)"])


def test_escaping(strobe, work):
    names = ['a<b>&"q\'', "ctl\x01\x1b\x85x;semi", "BADUTF"]
    evs = [x("cpu_op", n, 10 * k, 10) for k, n in enumerate(names)]
    raw = json.dumps({"traceEvents": evs}).encode()
    path = os.path.join(work, "escape.json")
    with open(path, "wb") as f:
        f.write(raw.replace(b"BADUTF", b"bad\xff\xfeutf\xef\xbf\xbf"))
    svg, frs = flame(strobe, os.path.join(work, "escape.svg"), path)
    if svg is None:
        return
    expect("names escaped: markup kept as text, controls and ';' as '_', bad bytes as U+FFFD",
           sorted(f["name"] for f in frs),
           sorted(["all", 'a<b>&"q\'', "ctl___x_semi", "bad\ufffd\ufffdutf\ufffd"]))
    # The <title> of a frame in a file with a hostile path and title.
    evil = os.path.join(work, "e<v>&il.json")
    shutil.copy(path, evil)
    svg, _ = flame(strobe, os.path.join(work, "escape2.svg"), evil, "--title", "x\x01]]><y")
    if svg is not None:
        texts = [t.text for t in svg.iter(NS + "text") if t.get("class") in ("heading", "sub")]
        expect("heading and source escaped", texts,
               ["x_]]><y", "e<v>&il.json: self CPU time, total 30.000 \u00b5s"])


def test_merge(strobe, work):
    """One operator of 1 s and 40 of 1 us beside it under `top`: at 1200 px each small one is
    about 0.001 px, below 0.1 px, so merged into top, which keeps its width."""
    evs = [x("user_annotation", "top", 0, 2000000), x("cpu_op", "big", 0, 1000000)]
    evs += [x("cpu_op", "small%02d" % k, 1000000 + 10 * k, 1) for k in range(40)]
    path = write(os.path.join(work, "merge.json"), evs)
    out = os.path.join(work, "merge.svg")
    svg, frs = flame(strobe, out, path)
    if svg is None:
        return
    check_geometry("merge", svg, frs, 1200)
    draw = 1180.0
    want = inclusive(fold(load(path), "self_cpu", "stack"))
    check_values("merge: small frames gone, their value in their parent", frs, want,
                 min_val=want[()] * 0.1 / draw)
    notes = [t.text for t in svg.iter(NS + "text") if t.get("class") == "note"]
    expect("merge: the SVG says so", notes,
           ["40 frames narrower than 0.1 px (0.00% of the total) merged into their parents; "
            "3 frames shown"])
    svg, frs = flame(strobe, out, path, "--min-width", "0.0001")
    expect("--min-width 0.0001 keeps them", len(frs), 43)


def test_empty_and_bad(strobe, work):
    empty = write(os.path.join(work, "empty.json"), [])
    for args in ([], ["--metric", "samples"], ["--metric", "memory"]):
        out = os.path.join(work, "empty.svg")
        svg, frs = flame(strobe, out, empty, *args)
        if svg is not None:
            texts = [t.text for t in svg.iter(NS + "text")]
            expect("empty trace %s: a valid SVG that says no samples" % args,
                   ("no samples" in texts, len(frs)), (True, 0))
    # The main trace has no cpu_sample on thread 2, but some: the samples metric of a trace
    # without any is the empty graph too (not an error, unlike `strobe stacks --samples`).
    cut = write_cut(os.path.join(work, "cut.json"))
    out = os.path.join(work, "never.svg")
    for args, what in (([cut], "a cut trace"), ([os.path.join(work, "missing.json")], "no file"),
                       (["--diff", empty, cut], "--diff with a cut TEST"),
                       (["--diff", cut, empty], "--diff with a cut BASE")):
        rc, _, err = run(strobe, "flamegraph", *args, "-o", out)
        lines = err.strip().split("\n")
        name = os.path.basename(args[-1] if "cut" not in what else cut)
        expect("%s: exit 2, one line naming the file" % what,
               (rc, len(lines), name in err), (2, 1, True))
        if "cut" in what:
            expect("%s: the byte offset" % what, "byte 58" in err, True)
    expect("a bad trace leaves no output file", os.path.exists(out), False)
    for args, what in ((["--metric", "nope", empty], "unknown metric"),
                       (["--group-by", "x", empty], "unknown grouping"),
                       (["--width", "5", empty], "width too small"),
                       (["--min-width", "-1", empty], "negative min width"),
                       (["--diff", empty], "--diff with one trace"),
                       ([empty, empty], "two traces without --diff"),
                       (["--diff", "-", "-"], "stdin twice")):
        rc, _, err = run(strobe, "flamegraph", *args)
        expect("usage error (%s): exit 2, one line" % what, (rc, err.count("\n")), (2, 1))
    # A malformed event is skipped and counted on standard error; the rest is drawn.
    bad_ev = x("cpu_op", "bad", 0, 5)
    bad_ev["ts"] = "x"
    skip = write(os.path.join(work, "skip.json"), [x("cpu_op", "good", 0, 10), bad_ev])
    out = os.path.join(work, "skip.svg")
    rc, _, err = run(strobe, "flamegraph", skip, "-o", out)
    _, frs = parse_svg(out)
    expect("a malformed event: exit 0, counted on stderr, the rest drawn",
           (rc, "1 malformed event" in err, sorted((f["name"], f["v"]) for f in frs)),
           (0, True, [("all", 10000), ("good", 10000)]))
    rc, _, err = run(strobe, "flamegraph", empty, "-o", os.path.join(work, "no/such/dir.svg"))
    expect("unwritable output: exit 2 naming it", (rc, "dir.svg" in err), (2, True))
    # -o /dev/null writes to it (no temporary file renamed over it); no temporary file is left.
    rc, _, err = run(strobe, "flamegraph", empty, "-o", "/dev/null")
    expect("-o /dev/null", (rc, err, os.path.exists("/dev/null") and
                            not os.path.isfile("/dev/null")), (0, "", True))
    expect("no temporary file left", [n for n in os.listdir(work) if ".strobe-flamegraph." in n],
           [])
    # Standard output by default, and from standard input.
    with open(empty, "rb") as f:
        p = subprocess.run([strobe, "flamegraph", "-"], stdin=f, capture_output=True)
    expect("stdin to stdout", (p.returncode, p.stdout.startswith(b"<?xml")), (0, True))


# ---- a legacy trace written by torch itself -----------------------------------------------------

TORCH_SCRIPT = """
import sys, torch
from torch.autograd import profiler
x = torch.randn(64, 64)
with profiler.profile() as prof:
    with profiler.record_function("outer"):
        for _ in range(3):
            y = torch.mm(x, x).relu()
prof.export_chrome_trace(sys.argv[1])
print(sum(e.self_cpu_time_total for e in prof.key_averages()))
"""


def test_torch_legacy(strobe, work):
    """Debian's python3-torch writes the legacy profiler's format (no "cat"; pid "CPU
    functions"): the root is torch's own self CPU total (key_averages(), in us)."""
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
        print("skip  a legacy trace by torch: %s cannot import torch" % py)
        return
    path = os.path.join(work, "legacy.json")
    p = subprocess.run([py, "-c", TORCH_SCRIPT, path], capture_output=True, text=True)
    if p.returncode != 0:
        fail("torch could not write a trace: " + p.stderr[-300:])
        return
    svg, frs = flame(strobe, os.path.join(work, "legacy.svg"), path)
    if svg is not None:
        check_geometry("legacy torch trace", svg, frs, 1200)
        expect("legacy torch trace: the root is torch's self CPU total (us)",
               frs[0]["v"] / 1000 if frs else 0, float(p.stdout.split()[-1]))


# ---- the script, in a browser -------------------------------------------------------------------

def test_browser(strobe, work):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("skip  the script in a browser: chromium not installed")
        return
    path = main_trace(os.path.join(work, "main.json"))
    svg_path = os.path.join(work, "main_self_cpu_range.svg")
    if flame(strobe, svg_path, path, "--group-by", "range")[0] is None:
        return
    with open(svg_path, encoding="utf-8") as f:
        svg = f.read()
    svg = svg[svg.index("<svg"):]
    # The SVG inside an HTML page (as `strobe report` embeds it), driven by a script that writes
    # what it finds into the page; chromium --dump-dom prints the page after the scripts ran.
    probe = """<script>
var out = [];
window.onerror = function (m) { out.push('error: ' + m); };
window.addEventListener('load', function () {
  var svg = document.querySelector('svg'), fl = svg.flame;
  var total = fl.frames[0].v;
  out.push('frames ' + fl.frames.length);
  out.push('nested ' + (fl.search('^aten::(linear|addmm)$') / total).toFixed(6));
  out.push('matched ' + svg.querySelector('.matched').textContent);
  out.push('outer ' + (fl.search('^outer$|^aten::') / total).toFixed(6));
  fl.resetSearch();
  var k = 0; while (fl.frames[k].n !== 'aten::linear') k++;
  fl.zoom(k);
  var f = fl.frames[k];
  out.push('zoomed ' + f.r.getAttribute('x') + ' ' + f.r.getAttribute('width'));
  var hidden = 0;
  for (var j = 0; j < fl.frames.length; j++)
    if (fl.frames[j].g.classList.contains('hide')) hidden++;
  out.push('hidden ' + hidden);
  fl.unzoom();
  out.push('unzoomed ' + f.r.getAttribute('width'));
  document.getElementById('out').textContent = out.join('|');
});
</script>"""
    page = os.path.join(work, "browser.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write("<!DOCTYPE html><html><head><meta charset='utf-8'>" + probe +
                "</head><body>" + svg + "<pre id='out'></pre></body></html>")
    try:
        p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--dump-dom", "file://" + page],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        fail("chromium did not finish in 60 s")
        return
    m = re.search(r"<pre id=\"out\">(.*?)</pre>", p.stdout, re.S)
    got = m.group(1).split("|") if m else ["no output: " + p.stderr[-500:]]
    doc = load(path)
    inc = inclusive(fold(doc, "self_cpu", "range"))
    # linear (50) holds addmm (30): matched once, 50 of 140.
    want_nested = inc[("outer", "aten::linear")] / inc[()]
    want_outer = (inc[("outer",)] + inc[("aten::mm",)]) / inc[()]
    draw = 1180
    lin = inc[("outer", "aten::linear")] / inc[()] * draw
    expect("browser: no script error, search, zoom", got, [
        "frames %d" % len(parse_svg(svg_path)[1]),
        "nested %.6f" % want_nested,
        "matched Matched: %.2f%% (2 frames)" % (100 * want_nested),
        "outer %.6f" % want_outer,
        "zoomed 10.00 %.2f" % draw,
        "hidden %d" % 2,  # aten::relu, and aten::mm on the other thread
        "unzoomed %.2f" % lin,
    ])
    # A screenshot of the standalone SVG, for a person to look at.
    shot = os.path.join(work, "flamegraph.png")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                    "--screenshot=" + shot, "--window-size=1200,260", "file://" + svg_path],
                   capture_output=True, timeout=60)
    print("note  screenshot:", shot if os.path.exists(shot) else "(not made)")


# ---- the shared resnet50 trace ------------------------------------------------------------------

def test_shared(strobe, work, shared):
    path = os.path.join(shared, "traces", "kineto_tb_resnet50_nw0.pt.trace.json.gz")
    if not os.path.exists(path):
        print("SKIP: %s not found" % path)
        sys.exit(77)
    t0 = time.monotonic()
    p = subprocess.run([strobe, "stacks", path], capture_output=True, text=True)
    t_stacks = time.monotonic() - t0
    expect("strobe stacks exit status", p.returncode, 0)
    lines = [ln.rsplit(" ", 1) for ln in p.stdout.splitlines()]
    folded = {tuple(s.split(";")): int(w) for s, w in lines}
    out = os.path.join(work, "resnet.svg")
    t0 = time.monotonic()
    svg, frs = flame(strobe, out, path)
    t_flame = time.monotonic() - t0
    if svg is None:
        return
    check_geometry("resnet50 self_cpu", svg, frs, 1200)
    # Each shown frame against the stacks' lines under it: equal within their rounding (half a
    # microsecond per line).
    bad = []
    for f in frs:
        under = [w for s, w in folded.items() if s[:len(f["path"])] == f["path"]]
        if abs(f["v"] / 1000 - sum(under)) > 0.5 * len(under) + 1e-9:
            bad.append((f["path"][-3:], f["v"], sum(under), len(under)))
    expect("resnet50: frames against `strobe stacks` (%d lines)" % len(folded), bad[:5], [])
    expect("resnet50: the root is the sum of the stacks", abs(frs[0]["v"] / 1000 -
           sum(folded.values())) <= 0.5 * len(folded), True)
    expect("resnet50: size bounded", os.path.getsize(out) < 2 << 20, True)
    doc = load(path)
    evs = doc["traceEvents"]
    dev = sum(us_ns(e["dur"]) for e in evs if e.get("ph") == "X" and e.get("cat") in DEVICE_ANY)
    svg, frs = flame(strobe, os.path.join(work, "resnet_device.svg"), path, "--metric",
                     "self_device")
    if svg is not None:
        check_geometry("resnet50 self_device", svg, frs, 1200)
        expect("resnet50: self_device root = the kernels', copies' and memsets' time", frs[0]["v"],
               dev)
    mem = sum(e["args"]["Bytes"] for e in evs if e.get("name") == "[memory]"
              and e.get("args", {}).get("Bytes", 0) > 0)
    svg, frs = flame(strobe, os.path.join(work, "resnet_memory.svg"), path, "--metric", "memory",
                     "--group-by", "range")
    if svg is not None:
        check_geometry("resnet50 memory", svg, frs, 1200)
        expect("resnet50: memory root = the bytes allocated", frs[0]["v"] if frs else 0, mem)
    print("note  resnet50: strobe stacks %.2f s, strobe flamegraph %.2f s" % (t_stacks, t_flame))


def main():
    strobe, work, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    if mode == "shared":
        test_shared(strobe, work, sys.argv[4])
    elif mode == "browser":
        test_browser(strobe, work)
    elif mode == "torch":
        test_torch_legacy(strobe, work)
    else:
        test_metrics(strobe, work)
        test_diff(strobe, work)
        test_escaping(strobe, work)
        test_merge(strobe, work)
        test_empty_and_bad(strobe, work)
    finish()


main()
