"""Builds strobe's Python package: strobe._strobe, a C extension that carries libstrobe.

The extension is compiled from the repository's own sources (../src, with the trace model in
../src/model, and ../cli), so nothing needs installing first: only a C compiler, the Python
headers, setuptools and zlib's headers. The in-tree build backend (strobe_build.py) calls this
file, so that `pip install --no-build-isolation ./python` works offline without the `wheel`
package; `python setup.py build_ext --inplace` works too, for development.

Beside the extension, the build makes what `strobe record` preloads, from the same objects:
strobe/lib/libstrobe_record.so (record_hook.c and malloc_hook.c over the library, as
CMakeLists.txt links it), libstrobe_record_mpi.so (with the MPI interposer, src/mpi/mpi_hook.c)
where MPI's compile flags are found, and the import hook of `strobe record --torch`
(strobe/lib/pyhook) with the torch observer (strobe/lib/libstrobe_torch.so, a copy of
strobe._torch_observer) where torch is importable. Every object is compiled in one parallel
batch, with a counter on stderr (`pip install -v` shows it).
"""
import concurrent.futures
import glob
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import threading

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
    """The library's sources as CMakeLists.txt assembles them, the trace reader, the trace model
    and the CLI (for strobe.load and `python -m strobe`), and the binding's own."""
    if not os.path.isfile(os.path.join(ROOT, "src", "core", "session.c")):
        sys.exit("strobe: the library's sources are not at %s (set STROBE_SOURCE_DIR)" % ROOT)
    src = []
    # Every folder of src/ (a new one is found without a change here), but the preloaded
    # libraries (src/preload, and src/mpi, the MPI interposer preloaded by `strobe record --mpi`,
    # built only where mpi.h is: programs of their own); not src/ itself, the shared library's
    # exported entry points (inject_export.c). The backends' table is src/devices/backends.c.
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "src")):
        dirnames[:] = sorted(d for d in dirnames if d not in ("preload", "mpi"))
        if os.path.samefile(dirpath, os.path.join(ROOT, "src")):
            continue
        src += sorted(os.path.join(dirpath, f) for f in filenames if f.endswith(".c"))
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


def mpi_flags():
    """MPI's compile and link flags as two lists, or None where MPI's C headers are not found:
    pkg-config (Open MPI's ompi-c, MPICH's mpich, Debian's mpi-c), else Open MPI's compiler
    wrapper (mpicc --showme). STROBE_PY_MPI=0 leaves the interposer out."""
    if os.environ.get("STROBE_PY_MPI") == "0":
        return None

    def run(cmd):
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return None
        return shlex.split(r.stdout) if r.returncode == 0 else None

    for name in ("mpi-c", "ompi-c", "mpich"):
        cflags = run(["pkg-config", "--cflags", name])
        libs = run(["pkg-config", "--libs", name])
        if cflags is not None and libs is not None:
            return cflags, libs
    mpicc = os.environ.get("MPICC", "mpicc")
    cflags = run([mpicc, "--showme:compile"])
    libs = run([mpicc, "--showme:link"])
    if cflags is not None and libs is not None:
        return cflags, libs
    return None


def _rel(path):
    """A source's path for the progress lines: relative to the repository when inside it."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


class BuildExt(build_ext):
    """Compiles the sources of the extension and of the preloaded libraries in one parallel batch
    (STROBE_BUILD_JOBS, else the CPU count; setuptools alone compiles one file at a time), with a
    counter on stderr, recompiles only the objects older than their source or than any header,
    under the same flags (a build folder kept between builds, as STROBE_BUILD_TEMP gives one,
    rebuilds what changed), links the extension with a version script that keeps every symbol
    local but the module's init function, then links the preloaded libraries (strobe/lib/). The
    torch observer, where torch is importable, compiles in a thread of its own meanwhile."""

    def run(self):
        super().run()
        # setuptools builds in build_lib and copies only the extensions into the sources for
        # --inplace; the preloaded libraries and the torch observer are copied here.
        if self.inplace:
            src_dir = self.get_finalized_command("build_py").get_package_dir("strobe")
            lib_dir = os.path.join(self.build_lib, "strobe")
            for rel in getattr(self, "strobe_outputs", []):
                dst = os.path.join(src_dir, os.path.relpath(rel, lib_dir))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(rel, dst)

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
        mpi = mpi_flags()
        # The preloaded libraries' own sources (CMakeLists.txt: strobe_record, strobe_record_mpi),
        # compiled in the same batch as the extension's: (source, preprocessor flags, optional).
        # -fno-builtin: the compiler must not turn the allocator hooks' code into allocator calls.
        hooks = [(os.path.join(ROOT, "src", "preload", n), ["-DSTROBE_MALLOC_EMBEDDED=1"], False)
                 for n in ("record_hook.c", "malloc_hook.c")]
        if mpi:
            hooks.append((os.path.join(ROOT, "src", "mpi", "mpi_hook.c"), mpi[0], True))
        self.strobe_hook_objects = {}
        self.strobe_library_objects = []

        def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                    extra_preargs=None, extra_postargs=None, depends=None):
            macros, objects, extra, pp_opts, build = cc._setup_compile(
                output_dir, macros, include_dirs, sources, depends, extra_postargs)
            cc_args = cc._get_cc_args(pp_opts, debug, extra_preargs)
            # Objects are reused only under the same compiler, flags and Python headers.
            stamp = os.path.join(self.build_temp, "strobe_flags.txt")
            flags = repr((cc.compiler_so, cc_args, extra, sysconfig.get_paths()["include"], mpi))
            same = os.path.isfile(stamp) and open(stamp).read() == flags
            newest = _newest_header()

            def stale(obj, src):
                return (not same or not os.path.isfile(obj) or
                        os.path.getmtime(obj) < max(os.path.getmtime(src), newest))

            # (object, source, compiler args, postargs, optional)
            batch = [(o, build[o][0], cc_args, extra, False) for o in objects]
            hook_dir = os.path.join(self.build_temp, "strobe_record")
            for src, pp, optional in hooks:
                obj = cc.object_filenames([src], output_dir=hook_dir)[0]
                batch.append((obj, src, cc_args + pp, extra + ["-fno-builtin"], optional))
            todo = [b for b in batch if stale(b[0], b[1])]
            for b in todo:
                os.makedirs(os.path.dirname(b[0]), exist_ok=True)
            total = len(todo)
            if total:
                print("strobe: compiling %d of %d files with %d jobs" % (total, len(batch), jobs),
                      file=sys.stderr, flush=True)
            else:
                print("strobe: all %d objects are up to date" % len(batch), file=sys.stderr,
                      flush=True)
            failed = set()
            with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
                futures = {ex.submit(one, o, src, os.path.splitext(src)[1], args, post,
                                     pp_opts): (o, src, opt)
                           for o, src, args, post, opt in todo}
                for done, f in enumerate(concurrent.futures.as_completed(futures), 1):
                    o, src, optional = futures[f]
                    try:
                        f.result()
                    except Exception as e:
                        if not optional:
                            raise
                        failed.add(src)
                        print("strobe: %s does not compile (%s); left out" % (_rel(src), e),
                              file=sys.stderr, flush=True)
                        continue
                    print("strobe: [%d/%d] %s" % (done, total, _rel(src)), file=sys.stderr,
                          flush=True)
            with open(stamp, "w") as f:
                f.write(flags)
            for o, src, _, _, _ in batch[len(objects):]:
                if src not in failed:
                    self.strobe_hook_objects[os.path.basename(src)] = o
            # The library's own objects, for the preloaded libraries: src/ but the trace reader
            # and the trace model (STROBE_SOURCES in CMakeLists.txt), not the CLI's nor the
            # binding's.
            lib_src = os.path.join(ROOT, "src")
            offline = [os.path.join(lib_src, d) for d in ("reader", "model")]
            self.strobe_library_objects = [
                o for o in objects
                if os.path.commonpath([build[o][0], lib_src]) == lib_src
                and all(os.path.commonpath([build[o][0], d]) != d for d in offline)]
            return objects

        cc.compile = compile
        # Always through compile() above, which skips what is up to date itself: setuptools would
        # skip an extension newer than its sources, and leave nothing for the libraries' link.
        self.force = True
        self.strobe_outputs = []
        # The torch observer (one C++ file against torch's headers, the longest compile) beside
        # the C batch rather than after it.
        observer = threading.Thread(target=self.build_torch_observer)
        observer.start()
        try:
            super().build_extensions()
            self.build_record_libraries(mpi)
        finally:
            observer.join()
        # `strobe record --torch` loads the observer from the folder of libstrobe_record.so, as
        # libstrobe_torch.so (a copy of a small file: a wheel holds no links).
        built = self.get_ext_fullpath("strobe._torch_observer")
        copy = os.path.join(os.path.dirname(self.get_ext_fullpath("strobe._strobe")), "lib",
                            "libstrobe_torch.so")
        if built in self.strobe_outputs:
            shutil.copy2(built, copy)
            self.strobe_outputs.append(copy)
        elif os.path.exists(copy):
            os.remove(copy)  # from an earlier build with torch: --torch must not find an old one.

    def build_record_libraries(self, mpi):
        """strobe/lib/libstrobe_record.so and, where the interposer compiled,
        libstrobe_record_mpi.so, linked as CMakeLists.txt links them: the library's objects in a
        static archive whose symbols stay local (--exclude-libs), so that only the hooks' entry
        points are exported and a recorded program that uses libstrobe keeps its own copy. Also
        the import hook of `strobe record --torch` (strobe/lib/pyhook/sitecustomize.py)."""
        cc = self.compiler
        out_dir = os.path.join(os.path.dirname(self.get_ext_fullpath("strobe._strobe")), "lib")
        os.makedirs(os.path.join(out_dir, "pyhook"), exist_ok=True)
        hook = os.path.join(out_dir, "pyhook", "sitecustomize.py")
        shutil.copyfile(os.path.join(ROOT, "src", "torch", "pyhook", "sitecustomize.py"), hook)
        self.strobe_outputs.append(hook)
        archive = cc.library_filename("strobe_core", output_dir=self.build_temp)
        if os.path.exists(archive):
            os.remove(archive)  # ar adds to an existing archive; start afresh.
        cc.create_static_lib(self.strobe_library_objects, "strobe_core",
                             output_dir=self.build_temp)
        hooks = self.strobe_hook_objects
        libs = [("libstrobe_record.so", ["record_hook.c", "malloc_hook.c"], [])]
        if mpi and "mpi_hook.c" in hooks:
            # MPI's library folder as the runtime path too, as CMake links it.
            rpath = ["-Wl,-rpath," + f[2:] for f in mpi[1] if f.startswith("-L")]
            libs.append(("libstrobe_record_mpi.so", ["record_hook.c", "malloc_hook.c",
                                                     "mpi_hook.c"], mpi[1] + rpath))
        elif mpi:
            print("strobe: libstrobe_record_mpi.so is not built (mpi_hook.c did not compile)",
                  file=sys.stderr)
        else:
            print("strobe: MPI's compile flags were not found (pkg-config ompi-c or mpich, or "
                  "mpicc; Debian: libopenmpi-dev): libstrobe_record_mpi.so is not built, "
                  "`strobe record --mpi` will say so", file=sys.stderr)
        for name, srcs, extra in libs:
            target = os.path.join(out_dir, name)
            print("strobe: linking strobe/lib/%s" % name, file=sys.stderr, flush=True)
            cc.link_shared_object([hooks[s] for s in srcs] + [archive], target,
                                  libraries=["z", "m", "pthread", "dl"],
                                  extra_postargs=["-Wl,--exclude-libs,ALL"] + extra)
            self.strobe_outputs.append(target)
        stale = os.path.join(out_dir, "libstrobe_record_mpi.so")
        if len(libs) == 1 and os.path.exists(stale):
            os.remove(stale)  # from an earlier build with MPI: --mpi must not find an old one.

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
            self.strobe_outputs.append(out)
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
            self.strobe_outputs.append(out)
            print("strobe: built strobe._torch_observer", file=sys.stderr, flush=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print("strobe: strobe._torch_observer could not be built (%s); the package builds "
                  "without it" % e, file=sys.stderr)


cupti = cupti_include()
macros = [("_GNU_SOURCE", None), ("STROBE_BUILDING", "1")]
# The repository's root for the binding's "cli/cli.h" (cli_main()); the CLI's sources find their
# own headers beside them, and the trace model's ("model/model.h") under src/.
include_dirs = [os.path.join(ROOT, "include"), os.path.join(ROOT, "src"), ROOT,
                os.path.join(HERE, "src")]
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
    # The whole command line as `strobe` (strobe_build.py writes the same entry point).
    entry_points={"console_scripts": ["strobe = strobe.__main__:main"]},
    python_requires=">=3.9",
)
