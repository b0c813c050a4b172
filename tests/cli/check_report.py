#!/usr/bin/env python3
"""check_report.py: `strobe report` (the one-file HTML report) against numbers worked out here.

  check_report.py STROBE WORK_DIR data [SHARED_DIR]
      1. A small trace written here (two profiler steps, nested operators, launches, kernels on
         two streams, [memory] events, a name made to break HTML, a malformed event): the data
         the page embeds is read back from the HTML file and its numbers compared with those
         worked out in Python from the events: operators' calls and CPU times, kernels' totals,
         the busy fraction of each stream per time bucket, memory per bucket, the warnings; the
         flame graph's root and a Python frame's label (function first, path last); the
         sections in the navigation's order, the flame graph among them.
      2. Escaping: nothing from the trace can end the script element or open a tag.
      3. The HTA commands' --format table headers: a column of microseconds says (us) (HTA's
         JSON keys say no unit, or "(ns)"), and its values are microseconds.
      4. A CPU-only trace: no device events, kernels nor utilization tracks in the data.
      5. Bounds: 1000 operator names keep 200 rows; the time series have at most 1000 points.
      6. Several ranks: the per-rank sections; bad input and usage (exit 2, one line); the
         malformed samples of SHARED_DIR/validators/samples/bad (a page, or exit 2).
  check_report.py STROBE WORK_DIR browser [SHARED_DIR]
      The page opened in headless Chromium (skipped, 77, without it): no script error (and the
      check must catch one injected in a copy of the page), the DOM holds one row per operator
      the data has, the charts, and deviceProperties as a table (its JSON in a closed
      <details>); a screenshot (report.png in WORK_DIR, of the shared resnet50 trace's report
      when SHARED_DIR has it). The generated trace's page: every time and size cell with its
      unit (us, ms, s; B, KiB, MiB, GiB), values worked out from the events, no header saying
      ns, the kernel tables longest first. The CPU-only trace's page: its device sections and
      their links hidden, no Device row, no step column that is zero throughout. A flame graph
      screenshot once `strobe flamegraph` exists (flame_screenshot below; skipped with a
      message before).
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import expect, fail, finish, write_cut, x  # noqa: E402
import tracegen  # noqa: E402

STROBE, WORK, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
SHARED = sys.argv[4] if len(sys.argv) > 4 else ""
os.makedirs(WORK, exist_ok=True)

EVIL = '</script><img src=x onerror="window.__pwned=1">&\'"\x01end'


def mem(ts, nbytes, dev):
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "ts": ts,
            "pid": 1, "tid": 1,
            "args": {"Bytes": nbytes, "Device Type": dev, "Device Id": 0 if dev else -1}}


def events():
    """The trace of part 1 (times in us)."""
    ev = [
        x("user_annotation", "ProfilerStep#1", 0, 1000),
        x("cpu_op", "aten::linear", 10, 400),
        x("cpu_op", "aten::mm", 20, 300),
        x("cuda_runtime", "cudaLaunchKernel", 30, 20, correlation=1),
        x("cpu_op", "aten::relu", 500, 100,
          **{"Call stack": "model.py(12): forward;train.py(3): <module>"}),
        x("cuda_runtime", "cudaLaunchKernel", 510, 10, correlation=2),
        x("user_annotation", "ProfilerStep#2", 1000, 1000),
        x("cpu_op", "aten::linear", 1010, 400),
        x("cpu_op", "aten::mm", 1020, 300),
        x("cuda_runtime", "cudaLaunchKernel", 1030, 20, correlation=3),
        x("cuda_runtime", "cudaMemcpyAsync", 1500, 10, correlation=4),
        x("cpu_op", EVIL, 1700, 50),
        x("kernel", "gemm_kernel", 60, 200, pid=0, tid=7, stream=7, correlation=1),
        x("kernel", "relu_kernel", 530, 50, pid=0, tid=7, stream=7, correlation=2),
        x("kernel", "gemm_kernel", 1060, 200, pid=0, tid=7, stream=7, correlation=3),
        x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 1520, 30, pid=0, tid=8, stream=8,
          correlation=4),
        mem(25, 1024, 1), mem(100, 100, 0), mem(600, -512, 1), mem(1025, 2048, 1),
        # Malformed: a "dur" that is no number (the reader flags it; the report counts it).
        {"ph": "X", "cat": "cpu_op", "name": "bad", "ts": 1800, "dur": "oops", "pid": 1, "tid": 1},
    ]
    return ev


def report(*args):
    out = os.path.join(WORK, "r.html")
    if os.path.exists(out):
        os.remove(out)
    rc, so, se = tracegen.run(STROBE, "report", "-q", "-o", out, *args)
    return rc, so, se, out


def page_data(html):
    m = re.search(r'<script type="application/json" id="strobe-data">(.*?)</script>', html, re.S)
    if not m:
        fail("no strobe-data script element")
        return None
    return json.loads(m.group(1))


def buckets(t0, t1):
    span = max(t1 - t0, 1)
    width = max(-(-span // 1000), 1)
    return width, -(-span // width)


def busy_series(evs, t0, width, n):
    """The busy fraction per bucket of intervals [s, e) in ns, worked out bucket by bucket."""
    out = []
    for b in range(n):
        lo, hi = t0 + b * width, t0 + (b + 1) * width
        cover = sum(max(0, min(e, hi) - max(s, lo)) for s, e in evs)
        out.append(min(1.0, cover / width))
    return out


def memory_series(ms, t0, width, n):
    """The highest running sum of Bytes in each bucket, the level carried over empty ones."""
    ms = sorted(ms)
    cur, out, i = 0, [], 0
    for b in range(n):
        top = None
        while i < len(ms) and (b == n - 1 or (ms[i][0] - t0) // width <= b):
            cur += ms[i][1]
            top = cur if top is None or cur > top else top
            i += 1
        out.append(cur if top is None else top)
    return out


def part_data():
    ev = events()
    path = tracegen.write(os.path.join(WORK, "t.json"), ev)
    rc, so, se, out = report(path)
    expect("report exit status", rc, 0)
    expect("report stdout", so, "")
    html = open(out, encoding="utf-8").read()
    d = page_data(html)
    if d is None:
        return
    # ---- operators: calls, CPU total, self CPU (us) from the nesting above ----
    rows = {r["Name"]: r for r in d["summary"]["rows"]}
    want = {"aten::linear": (2, 800.0, 800.0 - 600.0), "aten::mm": (2, 600.0, 600.0 - 40.0),
            "aten::relu": (1, 100.0, 100.0 - 10.0), "cudaLaunchKernel": (3, 50.0, 50.0),
            EVIL.replace("\x01", "\x01"): (1, 50.0, 50.0)}
    for name, (calls, total, self_) in want.items():
        r = rows.get(name)
        if r is None:
            fail("operator %r missing from the report's rows" % name)
            continue
        expect("%r: calls, CPU total, self CPU" % name[:20],
               (r["# of Calls"], r["CPU total"], r["Self CPU"]), (calls, total, self_))
    _, sj, _ = tracegen.run(STROBE, "summary", "-q", "-f", "json", path)
    expect("rows = strobe summary's", (len(d["summary"]["rows"]), d["summary_rows"]),
           (len(json.loads(sj)["rows"]),) * 2)
    # ---- the flame graph (self CPU by stack): inline, its root the self CPU of every range ----
    fl = re.search(r'<svg[^>]*id="report-flame".*?</svg>', html, re.S)
    expect("flame graph inline in the page", fl is not None, True)
    if fl:
        root = re.search(r'data-v="(\d+)" data-d="0"><title>all ', fl.group(0))
        # Self CPU summed over the ranges above (+ the profiler steps' own, worked out by
        # the summary's rows being the only ranges): every row's self CPU, in ns.
        want_ns = round(sum(r["Self CPU"] for r in d["summary"]["rows"]) * 1000)
        want_hand = round(sum(v[2] for v in want.values()) * 1000)
        expect("flame root = the ranges' self CPU", int(root.group(1)) if root else None,
               want_ns)
        expect("flame root >= the hand-worked operators' self CPU",
               int(root.group(1)) >= want_hand if root else None, True)
        # A Python frame reads function first, path last; its hover title keeps the name.
        py = re.search(r'data-l="([^"]*)"><title>model\.py\(12\): forward \([^<]*</title>'
                       r'<rect[^>]*><text[^>]*>([^<]*)</text>', fl.group(0))
        lab, shown = py.groups() if py else (None, "")
        expect("flame label of model.py(12): forward, and the text drawn (%r) its start" % shown,
               (lab, lab is not None and lab.startswith(shown.replace("..", ""))),
               ("forward \u2014 model.py(12)", True))
    # ---- the sections in the navigation's order, the flame graph among them ----
    nav = re.findall(r'<a href="#([^"]+)"', re.search(r"<nav>.*?</nav>", html, re.S).group(0))
    sections = re.findall(r'<section id="([^"]+)"', html)
    expect("sections in the navigation's order", sections, nav)
    expect("the flame graph inside its section", re.search(
        r'<section id="flame">(?:(?!</section>).)*id="report-flame"', html, re.S) is not None,
        True)
    # ---- kernels (us) ----
    ks = {k["Name"]: k for k in d["kernels"]["kernels"]}
    expect("kernels: gemm calls and total", (ks["gemm_kernel"]["# of Calls"],
                                            ks["gemm_kernel"]["Total"]), (2, 400.0))
    # Kernels only (cat kernel): the copy is no kernel.
    expect("kernel time total", d["kernels"]["kernel_time_total_us"], 400.0 + 50.0)
    # ---- steps: the two profiler steps ----
    expect("steps", [s["step"] for s in d["steps"]], [1, 2])
    # ---- utilization and memory per bucket ----
    timed = [e for e in ev if isinstance(e.get("dur", 0), int)]
    t0 = min(e["ts"] for e in timed) * 1000
    t1 = max((e["ts"] + e.get("dur", 0)) * 1000 for e in timed)
    width, n = buckets(t0, t1)
    expect("time buckets", (d["time"]["start_ns"], d["time"]["bucket_ns"], d["time"]["buckets"]),
           (t0, width, n))
    for tid in (7, 8):
        evs = [(e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000) for e in ev
               if e.get("pid") == 0 and e.get("tid") == tid]
        want_b = busy_series(evs, t0, width, n)
        got = [t for t in d["utilization"] if t["tid"] == tid]
        if len(got) != 1:
            fail("utilization: stream %d: %d tracks" % (tid, len(got)))
            continue
        worst = max(abs(a - b) for a, b in zip(got[0]["busy"], want_b))
        expect("utilization of stream %d: %d buckets, off by < 0.001" % (tid, n),
               (len(got[0]["busy"]), worst < 0.001), (n, True))
    for dev, name in ((1, "device"), (0, "CPU")):
        ms = [(e["ts"] * 1000, e["args"]["Bytes"]) for e in ev
              if e["name"] == "[memory]" and e["args"]["Device Type"] == dev]
        got = [t for t in d["memory"] if t["device"] == name]
        expect("memory of %s" % name, got[0]["bytes"] if got else None,
               memory_series(ms, t0, width, n))
        expect("memory peak of %s" % name, got[0]["peak"] if got else None,
               max(sum(b for _, b in ms[:k + 1]) for k in range(len(ms))))
    # ---- warnings and metadata ----
    w = d["ranks"][0]["warnings"]
    expect("malformed events counted", (w["bad_events"], sum(r["events"] for r in w["reasons"])),
           (1, 1))
    expect("rank and events", (d["ranks"][0]["meta"]["rank"], d["ranks"][0]["meta"]["events"]),
           (0, len(ev)))
    expect("device events (kernels, copies, memsets)", d["ranks"][0]["meta"]["device_events"],
           sum(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") for e in ev))
    # ---- 2. escaping: no '<' in the data; the name only as data; the title as text ----
    data_text = re.search(r'id="strobe-data">(.*?)</script>', html, re.S).group(1)
    expect("no '<' inside the embedded data", "<" in data_text, False)
    expect("no <img from the trace anywhere in the page", "<img" in html, False)
    rc, _, _, out = report("--title", "<b>T&</b>", path)
    html = open(out, encoding="utf-8").read()
    expect("title escaped", ("<title>&lt;b&gt;T&amp;&lt;/b&gt;</title>" in html, "<b>T" in html),
           (True, False))
    expect("self-contained: no http(s) URL, no <link>, no tag with src=", re.findall(
        r'(?:https?://(?!www\.w3\.org/2000/svg)|<link|<[^>]*\bsrc=)', html), [])
    return path


def cpu_only_events():
    """A CPU-only trace (as the demo writes one): steps and operators, no device work."""
    ev = []
    for step in range(2):
        base = step * 1000
        ev.append(x("user_annotation", "ProfilerStep#%d" % step, base, 900))
        ev.append(x("cpu_op", "aten::mm", base + 10, 300))
        ev.append(x("cpu_op", "aten::relu", base + 400, 100))
    return ev


def part_cpu_only():
    # As the demo writes it: an empty deviceProperties.
    path = os.path.join(WORK, "cpu.json")
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "deviceProperties": [], "traceEvents": cpu_only_events()},
                  f)
    rc, _, _, out = report(path)
    expect("CPU-only trace: exit status", rc, 0)
    d = page_data(open(out, encoding="utf-8").read())
    expect("CPU-only trace: no device events, no kernels, no utilization track",
           (d["ranks"][0]["meta"]["device_events"], len(d["kernels"]["kernels"]),
            d["utilization"]), (0, 0, []))
    return out


def part_bounds():
    # Rows: ProfilerStep*, 1000 operators, 4 kernel names.
    ev = [x("user_annotation", "ProfilerStep#1", 0, 2000000)]
    for k in range(1000):
        ev.append(x("cpu_op", "op_%04d" % k, 1 + k * 1000, 500 + k))
        ev.append(x("kernel", "k_%d" % (k % 3), 1 + k * 1000, 300, pid=0, tid=7, stream=7))
    # 5000 kernels that overlap and each last nearly the whole trace: the busy fraction is 1
    # everywhere, in one step per kernel (not one per kernel and bucket).
    for k in range(5000):
        ev.append(x("kernel", "long", k, 2000000 - k, pid=0, tid=9, stream=9))
    path = tracegen.write(os.path.join(WORK, "big.json"), ev)
    rc, _, _, out = report(path)
    d = page_data(open(out, encoding="utf-8").read())
    expect("1000 operators: rows kept, rows found", (len(d["summary"]["rows"]),
                                                     d["summary_rows"]), (200, 1 + 1000 + 4))
    expect("the longest operator first", d["summary"]["rows"][0]["Name"], "ProfilerStep*")
    busy9 = [t["busy"] for t in d["utilization"] if t["tid"] == 9]
    expect("overlapping long kernels: busy everywhere", busy9 and set(busy9[0]), {1})
    expect("time series at most 1000 points",
           max(len(t["busy"]) for t in d["utilization"]) <= 1000, True)
    size = os.path.getsize(out)
    expect("page under 1 MB for 7000 events (%d bytes)" % size, size < 1 << 20, True)


def part_ranks_and_bad():
    paths = []
    for rank in (0, 1):
        ev = []
        for step in range(3):
            base = step * 1000
            slow = 400 if rank == 1 else 0
            ev.append(x("user_annotation", "ProfilerStep#%d" % step, base, 900))
            ev.append(x("cpu_op", "aten::mm", base + 10, 300))
            ev.append(x("cuda_runtime", "cudaLaunchKernel", base + 20, 10,
                        correlation=step + 1))
            ev.append(x("kernel", "gemm", base + 40, 100 + slow, pid=0, tid=7, stream=7,
                        correlation=step + 1))
        paths.append(tracegen.write(os.path.join(WORK, "rank%d.json" % rank), ev, rank=rank))
    rc, _, se, out = report(*paths)
    expect("two ranks: exit status", rc, 0)
    d = page_data(open(out, encoding="utf-8").read())
    expect("ranks", [r["meta"]["rank"] for r in d["ranks"]], [0, 1])
    expect("breakdown per rank", [r["rank"] for r in d["breakdown"]], [0, 1])
    steps = sorted((r["rank"], r["iter"], r["dur"]) for r in d["ranks_steps"]["steps"])
    expect("step times per rank (HTA keeps the steps before each rank's last)",
           steps, [(r, i, 900) for r in (0, 1) for i in (0, 1)])
    # Utilization per rank, each over its own span: busy time adds up to the kernels' time.
    for rank, kernel_us in ((0, 3 * 100), (1, 3 * 500)):
        got = [t for t in d["utilization"] if t["rank"] == rank]
        busy = sum(got[0]["busy"]) * got[0]["bucket_ns"] if got else 0
        expect("rank %d: busy time ~ its kernels' %d us" % (rank, kernel_us),
               abs(busy - kernel_us * 1000) < kernel_us * 1000 * 0.01, True)
    # Bad input and usage: exit 2 and one line naming the file or the problem.
    cut = write_cut(os.path.join(WORK, "cut.json"))
    rc, so, se, out = report(cut)
    expect("cut trace: exit 2, one line naming it", (rc, len(se.strip().splitlines()), cut in se),
           (2, 1, True))
    expect("cut trace: no page written", os.path.exists(out), False)
    rc, _, se = tracegen.run(STROBE, "report", paths[0])
    expect("no -o: exit 2, one line", (rc, len(se.strip().splitlines())), (2, 1))
    rc, _, se = tracegen.run(STROBE, "report", "-o", "/nonexistent-dir/r.html", paths[0])
    expect("unwritable output: exit 2, naming it", (rc, "/nonexistent-dir/r.html" in se), (2, True))


# HTA's columns whose values are the trace's microseconds (breakdown_analysis.py, idle_time,
# queue_length, cuda_kernel_launch_stats): their table headers must say (us), whatever HTA names
# the JSON and CSV key (no unit, or "(ns)" in get_gpu_kernel_breakdown).
HTA_TIMES = {"idle_time", "compute_time", "non_compute_time", "kernel_time", "sum", "sum (ns)",
             "max (ns)", "min (ns)", "mean (ns)", "stddev", "cpu_duration", "gpu_duration",
             "launch_delay", "duration_at_max_queue_length"}


def table_blocks(text):
    """The tables of a --format table output: [(headers, rows of cells)], columns split at two
    spaces or more (a header's own words are one space apart)."""
    blocks, lines, i = [], text.splitlines(), 0
    while i + 2 < len(lines):
        if not (lines[i].startswith("--") and lines[i + 2].startswith("--")):
            i += 1
            continue
        head, rows, i = re.split(r"\s{2,}", lines[i + 1].strip()), [], i + 3
        while i < len(lines) and not lines[i].startswith("--"):
            rows.append(re.split(r"\s{2,}", lines[i].strip()))
            i += 1
        blocks.append((head, rows))
        i += 1
    return blocks


def part_cli_headers(path):
    """Each HTA command's table headers against its JSON keys: a time column says (us), no
    header says (ns), and the values under "(us)" are microseconds worked out here."""
    for cmd in (["breakdown"], ["kernels", "--by-type"], ["idle"], ["overlap"], ["launches"],
                ["queue"]):
        rc, tab, _ = tracegen.run(STROBE, *cmd, "-q", path)
        rc2, js, _ = tracegen.run(STROBE, *cmd, "-q", "-f", "json", path)
        what = " ".join(cmd)
        expect("%s: table and json exit status" % what, (rc, rc2), (0, 0))
        doc = json.loads(js)
        tables = list(doc.values()) if isinstance(doc, dict) else [doc]
        blocks = table_blocks(tab)
        expect("%s: tables printed" % what, len(blocks), len(tables))
        for rows, (head, cells) in zip(tables, blocks):
            if not rows:
                continue
            keys = list(rows[0].keys())
            want = [re.sub(r" \(ns\)$", "", k) + " (us)" if k in HTA_TIMES else k for k in keys]
            expect("%s: headers with units" % what, head, want)
            expect("%s: no header says (ns)" % what, [h for h in head if "(ns)" in h], [])
            if keys[0] == "name" and cells:
                gemm = [c for c in cells if c[0] == "gemm_kernel"]
                # HTA keeps the kernels of the profiler steps before the last one.
                ev = events()
                steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                               if e["name"].startswith("ProfilerStep#"))[:-1]
                want_us = sum(e["dur"] for e in ev if e["name"] == "gemm_kernel" and
                              any(a <= e["ts"] < b for a, b in steps))
                expect("kernels --by-type: gemm_kernel's sum (us) is microseconds",
                       gemm[0][head.index("sum (us)")] if gemm else None, str(want_us))


def fmt_bytes(b):
    """A size as the page should show it: B below 1 KiB, else KiB, MiB, GiB with 2 decimals."""
    units, k, a = ["B", "KiB", "MiB", "GiB", "TiB"], 0, float(b)
    while abs(a) >= 1024 and k < len(units) - 1:
        a, k = a / 1024, k + 1
    return ("%d" % b if k == 0 else "%.2f" % a) + " " + units[k]


# ---- browser -----------------------------------------------------------------------------------

def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def browse(exe, html_path, *args):
    """Runs headless Chromium on the page (with #selftest: the page sorts its operator table by
    clicks on two headers, checks the order, and says so in data-selftest): (stdout, the
    console's error lines)."""
    prof = os.path.join(WORK, "chromium-profile")
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--user-data-dir=" + prof, "--enable-logging=stderr", "--v=0",
           *args, "file://" + os.path.abspath(html_path) + "#selftest"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    console = [ln for ln in p.stderr.splitlines()
               if "CONSOLE" in ln and ("Uncaught" in ln or "Error" in ln)]
    return p.stdout, console


def script_errors(dom, console):
    """The page's script errors as the page itself counts them, or the console shows them."""
    m = re.search(r'data-script-errors="(\d+)"', dom)
    n = int(m.group(1)) if m else 0
    if 'data-rendered="1"' not in dom:
        n += 1
    return n + len(console)


def flame_screenshot(exe):
    """The flame graph's screenshot, once `strobe flamegraph` exists (issue 21)."""
    rc, _, _ = tracegen.run(STROBE, "help", "flamegraph")
    if rc != 0:
        print("skip  flame graph screenshot: this strobe has no flamegraph command yet")
        return
    # The command as issue 21 names it: strobe flamegraph TRACE -o OUT.svg.
    src = os.path.join(SHARED, "traces", "kineto_tb_resnet50_nw0.pt.trace.json.gz")
    if not (SHARED and os.path.exists(src)):
        src = os.path.join(WORK, "t.json")
    svg = os.path.join(WORK, "flame.svg")
    rc, _, se = tracegen.run(STROBE, "flamegraph", "-q", src, "-o", svg)
    expect("strobe flamegraph: exit status (%s)" % se.strip(), rc, 0)
    png = os.path.join(WORK, "flame.png")
    if os.path.exists(png):
        os.remove(png)
    browse(exe, svg, "--window-size=1200,700", "--screenshot=" + png)
    ok = os.path.exists(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    expect("flame graph screenshot %s written (a PNG)" % png, ok, True)


def part_browser():
    exe = chromium()
    if exe is None:
        print("chromium missing (scripts/deps.sh --test installs it): skipped")
        sys.exit(77)
    # 1. The page of a real trace (the shared resnet50 one; else the generated one), its DOM and
    # its screenshot in one run.
    path = tracegen.write(os.path.join(WORK, "t.json"), events())
    src = os.path.join(SHARED, "traces", "kineto_tb_resnet50_nw0.pt.trace.json.gz")
    if not (SHARED and os.path.exists(src)):
        print("note  %s missing: the screenshot shows the generated trace" % src)
        src = path
    rc, _, _, out = report("--title", "resnet50 (strobe report)", src)
    d = page_data(open(out, encoding="utf-8").read())
    png = os.path.join(WORK, "report.png")
    if os.path.exists(png):
        os.remove(png)
    dom, console = browse(exe, out, "--window-size=1200,1500", "--screenshot=" + png,
                          "--dump-dom")
    expect("no script error (page counter, console)", (script_errors(dom, console), console),
           (0, []))
    expect("DOM: one row per operator in the data",
           len(re.findall(r'<tr class="op-row">', dom)), len(d["summary"]["rows"]))
    m = re.search(r'data-selftest="([^"]*)"', dom)
    expect("sorting by a click on # of Calls and on Name (the page's self-test)",
           m.group(1) if m else None, "ok")
    expect("DOM: one row per kernel", len(re.findall(r'<tr class="kernel-row">', dom)),
           len(d["kernels"]["kernels"]))
    charts = ["chart-steps", "chart-breakdown", "chart-kernel-types", "chart-util"]
    if d["memory"]:
        charts.append("chart-memory")
    for chart in charts:
        expect("DOM: chart %s" % chart, ('id="%s"' % chart) in dom, True)
    # deviceProperties: a table, a row per device, the JSON in a collapsed <details>.
    dp = d["ranks"][0]["meta"]["device_properties"]
    if dp:
        devs = json.loads(dp)
        expect("DOM: a device table row per deviceProperties entry",
               len(re.findall(r'<tr class="device-row">', dom)), len(devs))
        expect("DOM: the raw deviceProperties in a closed <details>",
               re.search(r"<details><summary>deviceProperties[^<]*</summary><pre>", dom)
               is not None, True)
        mem = fmt_bytes(devs[0]["totalGlobalMem"])
        expect("DOM: the first device's memory as %s" % mem,
               re.search(r'<tr class="device-row">(?:(?!</tr>).)*<td>%s</td>' % re.escape(mem),
                         dom) is not None, True)
    expect("DOM: step bars", len(re.findall(r'<rect class="bar"', dom)) > 0, True)
    expect("DOM: utilization cells", len(re.findall(r'<rect class="cell"', dom)) > 0, True)
    ok = os.path.exists(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    expect("screenshot %s written (a PNG)" % png, ok, True)
    # 2. The check must be able to fail: the generated trace's page (its hostile name drawn as
    # text, never as an element) with an error put at the end of its script.
    rc, _, _, out = report(path)
    bad = os.path.join(WORK, "broken.html")
    mark = 'document.documentElement.setAttribute("data-rendered", "1");'
    with open(out, encoding="utf-8") as f, open(bad, "w", encoding="utf-8") as g:
        page = f.read()
        expect("the page sets data-rendered once", page.count(mark), 1)
        g.write(page.replace(mark, "noSuchFunction();"))
    dom, console = browse(exe, bad, "--dump-dom")
    expect("an injected script error is caught", script_errors(dom, console) > 0, True)
    expect("DOM: the hostile name is text", ("<img" in dom, "window.__pwned" in dom),
           (False, True))
    # 3. Units: the generated trace's page, every time and size cell with its unit, values
    # worked out here, and the kernel tables longest first.
    rc, _, _, out = report(path)
    d = page_data(open(out, encoding="utf-8").read())
    dom, console = browse(exe, out, "--dump-dom")
    expect("units page: no script error", script_errors(dom, console), 0)
    part_units(dom, d)
    # 4. A CPU-only trace: no device section, no Device row, no step column of zeros.
    out = part_cpu_only()
    dom, console = browse(exe, out, "--dump-dom")
    expect("CPU only: no script error", script_errors(dom, console), 0)
    for sec in ("utilization", "hta", "kernels"):
        expect("CPU only: section %s and its link hidden" % sec,
               (re.search(r'<section id="%s"[^>]* hidden' % sec, dom) is not None,
                re.search(r'<a href="#%s" hidden' % sec, dom) is not None), (True, True))
    expect("CPU only: no deviceProperties heading for an empty list",
           "<h3>deviceProperties</h3>" in dom, False)
    ov = re.search(r'<section id="overview">.*?</section>', dom, re.S)
    expect("CPU only: no Device row in the overview", ov is not None and
           re.search(r"<td>Device</td>|CUDA", ov.group(0)) is not None, False)
    cols = re.findall(r'<th[^>]*data-col="([^"]*)"',
                      re.search(r'<table[^>]*id="steps-table".*?</thead>', dom, re.S).group(0))
    # The roles a CPU-only step has: CPU Exec (its operators) and Other (the time no operator
    # covers), in strobe steps' order; no device role.
    ev = cpu_only_events()
    steps = [e for e in ev if e["name"].startswith("ProfilerStep#")]
    ops = [e for e in ev if e["cat"] == "cpu_op"]
    other = any(st["dur"] > sum(o["dur"] for o in ops if st["ts"] <= o["ts"] < st["ts"] + st["dur"])
                for st in steps)
    want = ["step", "CPU Exec"] + (["Other"] if other else []) + ["Total"]
    expect("CPU only: the steps table's columns", cols, want)
    flame_screenshot(exe)


def fmt_us(us):
    """A time in microseconds as the page should show it: us, ms or s with 3 decimals."""
    a = abs(us)
    if a >= 1e6:
        return "%.3f s" % (us / 1e6)
    if a >= 1e3:
        return "%.3f ms" % (us / 1e3)
    return "%.3f \u00b5s" % us


def dom_table(dom, tid):
    """Table `tid` of the rendered page: (its columns' keys (data-col), its headers, its rows of
    cell texts); None when the page has no such table."""
    m = re.search(r'<table[^>]*id="%s".*?</table>' % tid, dom, re.S)
    if m is None:
        return None
    t = m.group(0)
    keys = [html.unescape(k) for k in re.findall(r'<th[^>]*data-col="([^"]*)"', t)]
    heads = [html.unescape(h) for h in re.findall(r"<th[^>]*>([^<]*)</th>", t)]
    rows = [[html.unescape(c) for c in re.findall(r"<td[^>]*>([^<]*)</td>", r)]
            for r in re.findall(r"<tr[^>]*>(.*?)</tr>", t.split("</thead>", 1)[1], re.S)]
    return keys, heads, rows


TIME_RE = re.compile(r"^-?[\d.]+ (\u00b5s|ms|s)$")
SIZE_RE = re.compile(r"^-?[\d.]+ (B|KiB|MiB|GiB|TiB)$")


def part_units(dom, d):
    # Per table: its time columns and its size columns (the data's keys), as the test reads
    # the commands' definitions (torch's summary, strobe kernels, HTA's tables).
    dev = "(CPU|CUDA|XPU|MTIA|HPU|PRIVATEUSEONE)"
    summary_time = re.compile("^(Self %s|%s total|%s time avg)$" % (dev, dev, dev))
    summary_size = re.compile("^(Self )?%s Mem$" % dev)
    tables = {
        "op-table": (lambda k: summary_time.match(k), lambda k: summary_size.match(k)),
        "kernel-table": (lambda k: k in ("Total", "Avg", "Min", "Max"), lambda k: False),
        "stream-table": (lambda k: k in ("Busy", "Idle", "Span"), lambda k: False),
        "steps-table": (lambda k: k != "step", lambda k: False),
        "breakdown-table": (lambda k: k in HTA_TIMES, lambda k: False),
        "kernel-type-table": (lambda k: k in HTA_TIMES, lambda k: False),
        "idle-table": (lambda k: k in HTA_TIMES, lambda k: False),
    }
    for tid, (is_time, is_size) in tables.items():
        t = dom_table(dom, tid)
        if t is None:
            fail("units: no table %s" % tid)
            continue
        keys, heads, rows = t
        bad = []
        for r in rows:
            for k, c in zip(keys, r):
                if c and ((is_time(k) and not TIME_RE.match(c)) or
                          (is_size(k) and not SIZE_RE.match(c))):
                    bad.append((k, c))
        expect("units: %s: every time and size cell says its unit" % tid, bad[:3], [])
        expect("units: %s: no header says ns" % tid, [h for h in heads if re.search(r"\bns\b", h)], [])
        expect("units: %s: time columns exist" % tid, any(is_time(k) for k in keys), True)
    # Values: aten::linear's CPU total (2 x 400 us), gemm_kernel's total (2 x 200 us), the
    # [memory] events' sizes in the operator table where torch's memory columns are.
    ev = events()
    keys, _, rows = dom_table(dom, "op-table")
    lin = [r for r in rows if r[0] == "aten::linear"]
    want = fmt_us(sum(e["dur"] for e in ev if e["name"] == "aten::linear"))
    expect("units: aten::linear's CPU total", lin[0][keys.index("CPU total")] if lin else None,
           want)
    keys, _, rows = dom_table(dom, "kernel-table")
    gemm = [r for r in rows if r[0] == "gemm_kernel"]
    want = fmt_us(sum(e["dur"] for e in ev if e["name"] == "gemm_kernel"))
    expect("units: gemm_kernel's total", gemm[0][keys.index("Total")] if gemm else None, want)
    # Order: longest total first (ties in the data's order).
    want = [r["Name"] for r in sorted(d["kernels"]["kernels"], key=lambda r: -r["Total"])]
    expect("kernel table: longest total first", [r[0] for r in rows], want)
    keys, heads, rows = dom_table(dom, "kernel-type-table")
    want = [r["name"] for r in sorted(d["kernel_types"]["kernels"], key=lambda r: -r["sum (ns)"])]
    expect("kernel type table: longest sum first, its header marked",
           ([r[0] for r in rows], 'class="sorted-desc"' in dom), (want, True))


def part_bad_samples():
    """Every malformed sample of ../shared: a page (exit 0, the problems counted) or exit 2 with a
    message naming the file; never a crash."""
    folder = os.path.join(SHARED, "validators", "samples", "bad")
    if not (SHARED and os.path.isdir(folder)):
        print("skip  bad samples: %s missing" % folder)
        return
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        rc, _, se, _ = report(path)
        ok = rc == 0 or (rc == 2 and name in se)
        expect("bad sample %s: exit 0, or 2 naming it (got %d)" % (name, rc),
               (ok, "Sanitizer" in se or "runtime error" in se), (True, False))


if MODE == "data":
    part_cli_headers(part_data())
    part_cpu_only()
    part_bounds()
    part_ranks_and_bad()
    part_bad_samples()
elif MODE == "browser":
    part_browser()
else:
    sys.exit("usage: check_report.py STROBE WORK_DIR data|browser [SHARED_DIR]")
finish()
