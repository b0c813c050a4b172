"""A PEP 517 build backend for strobe's Python package, kept in the tree (pyproject.toml).

setuptools (through setup.py) compiles the extension and the libraries `strobe record` preloads;
this module packs the wheel: a zip with the package, the extension, strobe/lib/ and a .dist-info
folder (METADATA, WHEEL, entry_points.txt for the `strobe` command, RECORD). It needs nothing
but setuptools, so that pip installs the package offline without the `wheel` package, which
setuptools' own backend needs for wheels before setuptools 70.1.
"""
import base64
import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _version():
    root = os.environ.get("STROBE_SOURCE_DIR") or os.path.dirname(HERE)
    with open(os.path.join(root, "include", "strobe", "version.h")) as f:
        text = f.read()
    parts = {}
    for line in text.splitlines():
        bits = line.split()
        if len(bits) == 3 and bits[0] == "#define" and bits[1].startswith("STROBE_VERSION_"):
            parts[bits[1][len("STROBE_VERSION_"):]] = bits[2]
    return "%s.%s.%s" % (parts["MAJOR"], parts["MINOR"], parts["PATCH"])


def _tag():
    impl = "cp%d%d" % sys.version_info[:2]
    abi = impl + getattr(sys, "abiflags", "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return impl, abi, plat


def get_requires_for_build_wheel(config_settings=None):
    return []


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: strobe\nVersion: %s\n"
            "Summary: strobe.profiler: a low-overhead profiler shaped like torch.profiler\n"
            "Requires-Python: >=3.9\n" % version)


# The `strobe` command: pip writes a script that calls strobe.__main__.main (setup.py declares the
# same entry point for setuptools' own commands).
ENTRY_POINTS = "[console_scripts]\nstrobe = strobe.__main__:main\n"


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    name = "strobe-%s.dist-info" % version
    d = os.path.join(metadata_directory, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(_metadata(version))
    with open(os.path.join(d, "entry_points.txt"), "w") as f:
        f.write(ENTRY_POINTS)
    impl, abi, plat = _tag()
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write("Wheel-Version: 1.0\nGenerator: strobe_build\nRoot-Is-Purelib: false\n"
                "Tag: %s-%s-%s\n" % (impl, abi, plat))
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    impl, abi, plat = _tag()
    with tempfile.TemporaryDirectory() as tmp:
        lib = os.path.join(tmp, "lib")
        build_temp = os.environ.get("STROBE_BUILD_TEMP") or os.path.join(tmp, "temp")
        # setup.py's output goes to stderr, a line per compiled file: pip shows it with -v (and
        # when the build fails); without -v, each line turns pip's spinner.
        subprocess.run([sys.executable, os.path.join(HERE, "setup.py"), "-q", "build_ext",
                        "--build-lib", lib, "--build-temp", build_temp], cwd=HERE,
                       check=True, stdout=sys.stderr)
        files = {}
        pkg = os.path.join(HERE, "strobe")
        for name in sorted(os.listdir(pkg)):
            if name.endswith((".py", ".pyi")) or name == "py.typed":
                files["strobe/" + name] = open(os.path.join(pkg, name), "rb").read()
        for root, _, names in os.walk(lib):
            for name in names:
                full = os.path.join(root, name)
                files[os.path.relpath(full, lib).replace(os.sep, "/")] = open(full, "rb").read()
        info = "strobe-%s.dist-info" % version
        files[info + "/METADATA"] = _metadata(version).encode()
        files[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: strobe_build\n"
                                  "Root-Is-Purelib: false\nTag: %s-%s-%s\n"
                                  % (impl, abi, plat)).encode()
        files[info + "/top_level.txt"] = b"strobe\n"
        files[info + "/entry_points.txt"] = ENTRY_POINTS.encode()
        record = []
        for path, data in files.items():
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append("%s,sha256=%s,%d" % (path, digest.decode(), len(data)))
        record.append(info + "/RECORD,,")
        files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
        wheel_name = "strobe-%s-%s-%s-%s.whl" % (version, impl, abi, plat)
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                             zipfile.ZIP_DEFLATED) as z:
            for path, data in files.items():
                z.writestr(path, data)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("strobe: build the package from the repository (pip install ./python): "
                       "the extension is compiled from the library's sources beside it")
