"""readme_commands.py: README.md's commands run as written, and the documents hold together.

    python3 readme_commands.py SOURCE_DIR BUILD_DIR STROBE OUT_DIR [README]

Contents: the checks on the documents (length, paragraphs, links, man pages), then the scratch
folder, then the commands of README.md's fenced sh blocks and its C example.

The documents: README.md stays under 350 lines; no prose paragraph of README.md or docs/*.md runs
past 15 lines; every relative link of those files names a file that exists and, with an anchor, a
heading of that file (GitHub's rule for heading anchors); every `man strobe-NAME` the README
names is a command with a manual.

The commands run in a scratch folder that stands for a fresh clone after ./scripts/demo.sh: the
source tree's top-level entries linked in, build/demo_trace.json written by the demo program, and
this build's strobe first on PATH as `strobe`. A command that needs what this machine may lack or
must not be touched (a GPU, MPI, a network, sudo, an install) is printed with the reason it is
skipped; every other one must exit 0, and a file it names with -o or > must then exist. The C
block with a main() is compiled against this build's libstrobe and run.
"""
import os
import re
import shutil
import subprocess
import sys

MAX_README_LINES = 350
MAX_PARAGRAPH_LINES = 15

# Commands that do not run here, matched in order on the command's text: (pattern, reason).
SKIPS = [
    (r"^\./scripts/test\.sh", "runs every test, this one included (it would recurse)"),
    (r"^\./scripts/demo\.sh", "builds strobe in a fresh clone: checked by hand, as the report says;"
     " the demo program it runs made build/demo_trace.json here"),
    (r"\bsudo\b", "needs sudo"),
    (r"scripts/deps\.sh", "installs system packages (apt-get, sudo)"),
    (r"^cmake ", "builds or installs strobe: this test runs against the build it belongs to"),
    (r"\bpip install\b", "installs into the user's Python (python_wheel tests it in a venv)"),
    (r"\bmpirun\b|--mpi\b", "needs MPI ranks (test_mpi_record)"),
    (r"\bnsys\b|\bncu\b|--activities[ =]cpu,cuda", "needs an NVIDIA GPU (scripts/gpu-check.sh)"),
    (r"\bssh\b|\bdyno\b|^perfetto\b", "needs a network or a daemon"),
    (r"\bstrobe open\b", "waits for a browser to fetch the trace (cli_open tests it)"),
]


def fail(msg):
    print("FAIL  " + msg)
    return 1


# ---- The documents -------------------------------------------------------------------------

def prose_paragraphs(text):
    """(first line number, line count) of each prose paragraph: code blocks, tables and headings
    left out; a list item starts a paragraph of its own."""
    out, start, count, in_code = [], None, 0, False
    for i, line in enumerate(text.split("\n") + [""], 1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code or line.startswith("```") or not line.strip() or line.startswith(("|", "#")) \
                or line.startswith(("- ", "* ")):
            if start is not None:
                out.append((start, count))
            start, count = None, 0
            if in_code or line.startswith("```") or not line.strip() \
                    or line.startswith(("|", "#")):
                continue
        if start is None:
            start = i
        count += 1
    return out


def anchors(text):
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered."""
    seen, out, in_code = {}, set(), False
    for line in text.split("\n"):
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"^#{1,6} (.*)$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else "%s-%d" % (slug, n))
    return out


def check_documents(src, readme):
    bad = 0
    docs = [readme] + sorted(os.path.join(src, "docs", f)
                             for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))
    text = open(readme, encoding="utf-8").read()
    lines = text.count("\n")
    if lines >= MAX_README_LINES:
        bad |= fail("README.md: %d lines, want under %d" % (lines, MAX_README_LINES))
    for path in docs:
        body = open(path, encoding="utf-8").read()
        for start, count in prose_paragraphs(body):
            if count > MAX_PARAGRAPH_LINES:
                bad |= fail("%s:%d: a paragraph of %d lines, want %d at most"
                            % (os.path.relpath(path, src), start, count, MAX_PARAGRAPH_LINES))
        for target in re.findall(r"\]\(([^)\s]+)\)", body):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            file, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(where):
                bad |= fail("%s: a link to %s, which does not exist"
                            % (os.path.relpath(path, src), target))
            elif anchor and where.endswith(".md") and \
                    anchor not in anchors(open(where, encoding="utf-8").read()):
                bad |= fail("%s: a link to %s, whose file has no heading with that anchor"
                            % (os.path.relpath(path, src), target))
    return bad


def check_man_pages(text, strobe):
    bad = 0
    for name in sorted(set(re.findall(r"man strobe-([a-z-]+[a-z])", text))):
        if name == "COMMAND":
            continue
        r = subprocess.run([strobe, "help", name], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=30)
        if r.returncode != 0:
            bad |= fail("README.md names `man strobe-%s`, but `strobe help %s` fails: %s"
                        % (name, name, r.stderr.decode(errors="replace").strip()))
    return bad


# ---- The scratch folder ----------------------------------------------------------------------

def scratch(src, build, strobe, out):
    """A folder that looks like a clone after ./scripts/demo.sh; returns (folder, environment)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "build"))
    for entry in os.listdir(src):
        if entry == ".git" or entry == "build" or entry.startswith("build-"):
            continue
        os.symlink(os.path.join(src, entry), os.path.join(out, entry))
    bindir = os.path.join(out, ".bin")
    os.makedirs(bindir)
    os.symlink(strobe, os.path.join(bindir, "strobe"))
    home = os.path.join(out, ".home")
    os.makedirs(home)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), HOME=home)
    demo = os.path.join(build, "examples", "strobe_demo")
    r = subprocess.run([demo, "build/demo_trace.json"], cwd=out, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        raise SystemExit(fail("the demo program (%s) failed: %s"
                              % (demo, r.stderr.decode(errors="replace").strip())))
    return out, env


# ---- The commands ----------------------------------------------------------------------------

def fenced(text, lang):
    """The blocks of one language, each as its text."""
    return re.findall(r"^```%s\n(.*?)^```" % re.escape(lang), text, re.M | re.S)


def commands(block):
    """The block's commands: backslash-continued lines joined, blank and comment lines left out."""
    out, cur = [], ""
    for line in block.split("\n"):
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.strip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out


def outputs(cmd):
    """The files a command says it writes: after -o, --output or a > redirection."""
    code = re.sub(r"\s#\s.*$", "", cmd)
    return re.findall(r"(?:\s-o|\s--output[ =]|>)\s*([^\s|&;]+)", code)


def run_commands(text, folder, env, build, src):
    bad, ran, skipped = 0, 0, []
    torch_built = any(f.startswith("libstrobe_torch") for f in os.listdir(build))
    for cmd in [c for block in fenced(text, "sh") for c in commands(block)]:
        reason = next((why for pat, why in SKIPS if re.search(pat, cmd)), None)
        if reason is None and "--torch" in cmd and not torch_built:
            reason = "needs the torch observer, which this build lacks"
        if reason:
            skipped.append((cmd, reason))
            print("skip  %s\n      (%s)" % (cmd, reason))
            continue
        ran += 1
        try:
            r = subprocess.run(["bash", "-c", cmd], cwd=folder, env=env, timeout=300,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            rc, log = r.returncode, r.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired:
            rc, log = "timeout (300 s)", ""
        missing = [f for f in outputs(cmd) if rc == 0 and not (
            os.path.isfile(os.path.join(folder, f)) and os.path.getsize(os.path.join(folder, f)))]
        if rc != 0 or missing:
            why = "exit %s" % rc if rc != 0 else "no output file %s" % ", ".join(missing)
            bad |= fail("%s: %s\n%s" % (cmd, why, "\n".join("      " + l
                                                          for l in log.splitlines()[-15:])))
        else:
            print("ok    " + cmd)
    for i, block in enumerate(fenced(text, "c")):
        if "main(" not in block:
            continue
        ran += 1
        bad |= run_c_example(block, i, folder, env, build, src)
    return bad, ran, skipped


def run_c_example(block, i, folder, env, build, src):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("skip  the C example %d (no C compiler)" % i)
        return 0
    path, exe = os.path.join(folder, "example%d.c" % i), os.path.join(folder, "example%d" % i)
    with open(path, "w") as f:
        f.write(block)
    cmd = [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(src, "include"), path,
           "-L", build, "-lstrobe", "-Wl,-rpath," + build, "-o", exe]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    if r.returncode != 0:
        return fail("the C example %d does not compile: %s\n%s"
                    % (i, " ".join(cmd), r.stdout.decode(errors="replace")))
    r = subprocess.run([exe], cwd=folder, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
    written = re.findall(r'strobe_result_save\(r, "([^"]+)"\)', block)
    lost = [w for w in written if not os.path.exists(os.path.join(folder, w))]
    if r.returncode != 0 or lost:
        return fail("the C example %d: exit %d, missing %s\n%s"
                    % (i, r.returncode, lost, r.stdout.decode(errors="replace")))
    print("ok    the C example %d (compiled with %s, run, wrote %s)" % (i, cc, ", ".join(written)))
    return 0


def main():
    if len(sys.argv) not in (5, 6):
        print(__doc__)
        return 2
    src, build, strobe, out = (os.path.abspath(a) for a in sys.argv[1:5])
    readme = os.path.abspath(sys.argv[5]) if len(sys.argv) == 6 else os.path.join(src, "README.md")
    text = open(readme, encoding="utf-8").read()
    bad = check_documents(src, readme) | check_man_pages(text, strobe)
    folder, env = scratch(src, build, strobe, out)
    run_bad, ran, skipped = run_commands(text, folder, env, build, src)
    bad |= run_bad
    print("%d command(s) run, %d skipped (reasons above)" % (ran, len(skipped)))
    if ran == 0:
        return fail("no command of README.md ran")
    if bad:
        return 1
    print("ok  README.md's commands run as written; the documents' links and paragraphs hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
