"""cpu_profile.py: the CPU samples of a JSON trace, for the tests that check their stacks.

strobe writes samples in JSON as Chrome writes CPU profiles: per thread a "Profile" event and
"ProfileChunk" events (ph "P", one id per profile) whose cpuProfile nodes (id, parent, callFrame)
may be spread over several chunks, and whose samples name a node each. Traces written before that
have "cpu_sample" instants with a "Call stack" (innermost first, ";"-separated); both are read.
"""

import re

# A Python frame: torch's "file.py(LINE): function" (as strobe's sampler names them, and older
# traces kept them), or "function (file.py)" (a CPU profile's node: one per function,
# src/trace/json_profile.c).
PY = re.compile(r"\.py\(\d+\): |\(.*\.py\)$")
TORCH = re.compile(r"\.py\(\d+\): (.*)$")
PROFILE = re.compile(r"^(.*) \(.*\.py\)$")


def py_func(frame):
    """The function a Python frame names, in either form; None for another frame."""
    m = TORCH.search(frame) or PROFILE.match(frame)
    return m.group(1) if m else None


def frame_name(call_frame):
    """The frame's text as the "Call stack" of an instant gives it: "name (file)" or "name"."""
    name = call_frame.get("functionName", "")
    url = call_frame.get("url", "")
    return "%s (%s)" % (name, url) if url else name


def samples_by_tid(trace):
    """{tid: [[frame, ...] innermost first, one list per sample]} of a loaded JSON trace."""
    out = {}
    nodes = {}  # (pid, profile id) -> {node id: (parent, frame)}
    chunks = []
    for e in trace.get("traceEvents", []):
        if e.get("cat") == "cpu_sample":
            stack = e.get("args", {}).get("Call stack", "")
            out.setdefault(e["tid"], []).append(stack.split(";") if stack else [])
        elif e.get("ph") == "P" and e.get("name") == "ProfileChunk":
            prof = e.get("args", {}).get("data", {}).get("cpuProfile", {})
            table = nodes.setdefault((e.get("pid"), e.get("id")), {})
            for n in prof.get("nodes", []):
                table[n["id"]] = (n.get("parent"), frame_name(n.get("callFrame", {})))
            chunks.append((e, prof.get("samples", [])))
    for e, ids in chunks:
        table = nodes[(e.get("pid"), e.get("id"))]
        for node in ids:
            stack = []
            while node in table:
                parent, name = table[node]
                if parent is None and name == "(root)":
                    break
                stack.append(name)
                node = parent
            out.setdefault(e["tid"], []).append(stack)
    return out
