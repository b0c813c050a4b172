"""Builds strobe's Python package: strobe._strobe, a C extension that carries libstrobe.

The extension is compiled from the repository's own sources (../src, ../cli), so nothing needs
installing first: only a C compiler, the Python headers, setuptools and zlib's headers. The
in-tree build backend (strobe_build.py) calls this file, so that `pip install
--no-build-isolation ./python` works offline without the `wheel` package; `python setup.py
build_ext --inplace` works too, for development.
"""
import concurrent.futures
import glob
import os
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("STROBE_SOURCE_DIR") or os.path.dirname(HERE)


def version():
    """The library's version, from include/strobe/version.h (written once, there)."""
    parts = {}
    with open(os.path.join(ROOT, "include", "strobe", "version.h")) as f:
        for line in f:
            bits = line.split()
            if len(bits) == 3 and bits[0] == "#define" and bits[1].startswith("STROBE_VERSION_"):
                parts[bits[1][len("STROBE_VERSION_"):]] = bits[2]
    return "%s.%s.%s" % (parts["MAJOR"], parts["MINOR"], parts["PATCH"])


def sources():
    """The library's sources as CMakeLists.txt assembles them, the trace reader and the CLI
    (for strobe.load and `python -m strobe`), and the binding's own."""
    if not os.path.isfile(os.path.join(ROOT, "src", "core", "session.c")):
        sys.exit("strobe: the library's sources are not at %s (set STROBE_SOURCE_DIR)" % ROOT)
    src = []
    # Every folder of src/ (a new one is found without a change here), but the preloaded
    # libraries (src/preload, and src/mpi, the MPI interposer preloaded by `strobe record --mpi`,
    # built only where mpi.h is: programs of their own); of src/ itself backends.c, not the shared
    # library's exported entry points (inject_export.c).
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "src")):
        dirnames[:] = sorted(d for d in dirnames if d not in ("preload", "mpi"))
        if os.path.samefile(dirpath, os.path.join(ROOT, "src")):
            continue
        src += sorted(os.path.join(dirpath, f) for f in filenames if f.endswith(".c"))
    src.append(os.path.join(ROOT, "src", "backends.c"))
    src += sorted(p for p in glob.glob(os.path.join(ROOT, "cli", "*.c"))
                  if os.path.basename(p) != "main.c")
    src += sorted(glob.glob(os.path.join(HERE, "src", "*.c")))
    return src


def cupti_include():
    """A folder holding cupti.h, or None: without it the CUDA backend says it is unavailable."""
    for d in ("/usr/local/cuda/include", os.path.join(os.environ.get("CUDA_HOME", "/nonexistent"),
              "include"), "/usr/local/cuda/extras/CUPTI/include"):
        if os.path.isfile(os.path.join(d, "cupti.h")):
            return d
    return None


def _newest_header():
    newest = 0.0
    for d in (os.path.join(ROOT, "include"), os.path.join(ROOT, "src"), os.path.join(ROOT, "cli"),
              os.path.join(HERE, "src")):
        for dirpath, _, names in os.walk(d):
            for n in names:
                if n.endswith(".h"):
                    newest = max(newest, os.path.getmtime(os.path.join(dirpath, n)))
    return newest


class BuildExt(build_ext):
    """Compiles the sources of the extension in parallel (STROBE_BUILD_JOBS, else the CPU count;
    setuptools alone compiles one file at a time), recompiles only the objects older than their
    source or than any header, under the same flags (a build folder kept between builds, as
    STROBE_BUILD_TEMP gives one, rebuilds what changed), and links with a version script that
    keeps every symbol local but the module's init function."""

    def build_extensions(self):
        jobs = int(os.environ.get("STROBE_BUILD_JOBS", "0")) or os.cpu_count() or 1
        os.makedirs(self.build_temp, exist_ok=True)
        script = os.path.join(self.build_temp, "strobe_py.map")
        with open(script, "w") as f:
            f.write("{ global: PyInit__strobe; local: *; };\n")
        for ext in self.extensions:
            ext.extra_link_args = ext.extra_link_args + ["-Wl,--version-script=" + script]
        cc = self.compiler
        one = cc._compile

        def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                    extra_preargs=None, extra_postargs=None, depends=None):
            macros, objects, extra, pp_opts, build = cc._setup_compile(
                output_dir, macros, include_dirs, sources, depends, extra_postargs)
            cc_args = cc._get_cc_args(pp_opts, debug, extra_preargs)
            # Objects are reused only under the same compiler, flags and Python headers.
            stamp = os.path.join(self.build_temp, "strobe_flags.txt")
            flags = repr((cc.compiler_so, cc_args, extra, sysconfig.get_paths()["include"]))
            same = os.path.isfile(stamp) and open(stamp).read() == flags
            newest = _newest_header()

            def stale(obj, src):
                return (not same or not os.path.isfile(obj) or
                        os.path.getmtime(obj) < max(os.path.getmtime(src), newest))

            todo = [(o, build[o]) for o in objects if stale(o, build[o][0])]
            for o, _ in todo:
                os.makedirs(os.path.dirname(o), exist_ok=True)
            with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
                for f in [ex.submit(one, o, src, e, cc_args, extra, pp_opts) for o, (src, e) in todo]:
                    f.result()
            with open(stamp, "w") as f:
                f.write(flags)
            return objects

        cc.compile = compile
        super().build_extensions()
        self.build_torch_observer()

    def build_torch_observer(self):
        """strobe._torch_observer: the torch observer (src/torch/observer.cpp), a plain shared
        object that strobe/_torch.py loads with ctypes, built when the building interpreter can
        import torch: against that torch's headers and libraries, with its C++ ABI flag. Any
        failure leaves it out with a message; the package builds without it."""
        out = self.get_ext_fullpath("strobe._torch_observer")
        src = os.path.join(ROOT, "src", "torch", "observer.cpp")
        try:
            import torch
            from torch.utils import cpp_extension
            abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
            incs = cpp_extension.include_paths()
            libs = cpp_extension.library_paths()
        except Exception as e:  # torch absent or unusable: the observer is optional
            print("strobe: torch is not importable (%s): strobe._torch_observer is not built"
                  % (str(e).splitlines() or ["?"])[0], file=sys.stderr)
            return
        if os.path.isfile(out) and os.path.getmtime(out) > max(os.path.getmtime(src),
                                                               _newest_header()):
            return
        cmd = [os.environ.get("CXX", "c++"), "-std=c++17", "-O2", "-fPIC", "-shared",
               "-fvisibility=hidden", "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi, "-DNDEBUG",
               "-DSTROBE_BUILDING=1", "-I" + os.path.join(ROOT, "include"),
               "-I" + os.path.join(ROOT, "src")]
        # -DNDEBUG as torch's own build: RecordFunction's debug-only checks (inputs_valid_) read
        # state that a release torch never sets, and would throw on every inputs() call.
        cmd += ["-isystem" + d for d in incs]
        cmd += [src, "-o", out]
        cmd += ["-L" + d for d in libs] + ["-Wl,-rpath," + d for d in libs]
        cmd += ["-ltorch_cpu", "-lc10", "-ldl"]
        os.makedirs(os.path.dirname(out), exist_ok=True)
        print("strobe: building strobe._torch_observer against torch %s" % torch.__version__,
              file=sys.stderr)
        try:
            subprocess.run(cmd, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print("strobe: strobe._torch_observer could not be built (%s); the package builds "
                  "without it" % e, file=sys.stderr)


cupti = cupti_include()
macros = [("_GNU_SOURCE", None), ("STROBE_BUILDING", "1")]
# Not cli/: its link.h would hide the system's <link.h>. Its sources find their own headers.
include_dirs = [os.path.join(ROOT, "include"), os.path.join(ROOT, "src"), os.path.join(HERE, "src")]
if cupti:
    macros.append(("STROBE_HAVE_CUPTI_HEADERS", "1"))
    include_dirs.append(cupti)
# DWARF unwinding of CPU samples (src/core/unwind.c) where elfutils' header is (Debian:
# libdw-dev); libdw.so.1 is opened at run time, so nothing more is linked.
if os.path.isfile("/usr/include/elfutils/libdwfl.h"):
    macros.append(("STROBE_HAVE_LIBDW", "1"))
warnings = ["-Wall", "-Wextra", "-Wno-missing-field-initializers", "-Wno-unused-parameter",
            "-Wno-cast-function-type"]
if os.environ.get("STROBE_PY_WERROR") == "1":
    warnings.append("-Werror")

ext = Extension(
    "strobe._strobe",
    sources=sources(),
    include_dirs=include_dirs,
    define_macros=macros,
    libraries=["z", "m", "pthread", "dl"],
    extra_compile_args=["-std=c11", "-O2", "-fvisibility=hidden", "-ftls-model=initial-exec",
                        "-fno-omit-frame-pointer"] + warnings,
)

setup(
    name="strobe",
    version=version(),
    description="strobe.profiler: a low-overhead profiler shaped like torch.profiler",
    packages=["strobe"],
    package_dir={"strobe": os.path.join(os.path.relpath(HERE, os.getcwd()), "strobe")
                 if os.getcwd() != HERE else "strobe"},
    package_data={"strobe": ["py.typed", "*.pyi"]},
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExt},
    python_requires=">=3.9",
)
