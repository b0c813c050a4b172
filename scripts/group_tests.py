#!/usr/bin/env python3
"""group_tests.py: groups tests/CMakeLists.txt's blocks under one heading per layer.

    scripts/group_tests.py [FILE]          rewrites FILE (default tests/CMakeLists.txt) in place
    scripts/group_tests.py --check [FILE]  exits 1, naming the first misplaced block, if not grouped

A block starts at a line "# ---- LAYER: what it tests ----" (or "# ---- LAYER ----") and runs to
the next such line; the lines before the first block (the helper functions) stay first. Blocks
are moved, never edited: each keeps its text, and blocks of one layer keep the order they were
added in. Each layer gets one heading, "# ==== LAYER ====", which this script writes (and drops
and writes again on a later run). New helpers append their block at the end of the file; run this
afterwards to move it into its layer. A block whose if()/endif(), function()/endfunction() or
foreach()/endforeach() do not balance, or whose layer is not in LAYERS, stops the script: a block
must stand alone to be moved.

Moving a block changes the order in which CMake reads it, so compare the tests CMake defines before
and after (`ctest --show-only=json-v1` in the build folder, sorted by name).
"""
import re
import sys

# The layers, in the order of the file: the rules every file follows, then bottom-up through the
# library, then what sits on it, then the whole.
LAYERS = ["Project", "Public API", "Core", "Trace layer", "Reader", "CLI", "Devices", "Sources",
          "Drivers", "Bindings", "Python", "Whole library"]
BLOCK = re.compile(r"^# ---- (.+?)(?::| ----)")
GROUP = re.compile(r"^# ==== .* =+$")


def split(text):
    """(preamble lines, [(layer, block lines)])."""
    lines = [l for l in text.split("\n") if not GROUP.match(l)]
    pre, blocks = [], []
    for line in lines:
        m = BLOCK.match(line)
        if m:
            blocks.append((m.group(1), [line]))
        elif blocks:
            blocks[-1][1].append(line)
        else:
            pre.append(line)
    return pre, blocks


def balanced(block):
    depth = {"if": 0, "function": 0, "foreach": 0, "macro": 0, "while": 0}
    for line in block:
        code = line.split("#", 1)[0].strip().lower()
        for word in depth:
            if re.match(r"^%s\s*\(" % word, code):
                depth[word] += 1
            elif re.match(r"^end%s\s*\(" % word, code):
                depth[word] -= 1
    return all(d == 0 for d in depth.values())


def trim(lines):
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return lines


def group(text):
    pre, blocks = split(text)
    for layer, block in blocks:
        if layer not in LAYERS:
            raise SystemExit("group_tests.py: %r: layer %r is not one of %s (add it to LAYERS)"
                             % (block[0], layer, ", ".join(LAYERS)))
        if not balanced(block):
            raise SystemExit("group_tests.py: %r: its if/function/foreach do not balance, so it "
                             "cannot be moved alone" % block[0])
    out = trim(pre)
    for layer in LAYERS:
        mine = [trim(b) for l, b in blocks if l == layer]
        if not mine:
            continue
        out += ["", "# ==== %s " % layer + "=" * (100 - len(layer) - 8)]
        for b in mine:
            out += [""] + b
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    check = bool(args) and args[0] == "--check"
    if check:
        args = args[1:]
    path = args[0] if args else "tests/CMakeLists.txt"
    text = open(path).read()
    grouped = group(text)
    if check:
        if grouped != text:
            print("%s: not grouped by layer (run scripts/group_tests.py)" % path)
            return 1
        print("%s: grouped by layer" % path)
        return 0
    open(path, "w").write(grouped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
