"""strobe._torch: the torch observer's loader (ctypes).

The observer (src/torch/observer.cpp) is a small C++ shared object built against the installed
torch: strobe/_torch_observer*.so inside this package when torch was importable at build time,
or CMake's libstrobe_torch.so. It registers a global RecordFunction callback that records
torch's operators into a strobe session, through the table of one copy of strobe's core:
_strobe._torch_api() gives this package's own (what strobe.profiler uses); None asks for
libstrobe.so's, found in the process (what `strobe record --torch` uses).

    load(path=None) -> the ctypes handle, or RuntimeError saying why not
    on(api_address, flags) -> warnings (a list of str)
    off()
    warnings() -> what the observer could not do since the last call (a list of str)
"""
import ctypes
import glob
import os

# Flags of on(): what the observer records beside each op (src/torch/observer.h).
SHAPES = 0x1  # record_shapes: "Input Dims", "Input type", "Concrete Inputs"
MEMORY = 0x2  # profile_memory: torch's memory reports as [memory] events
STACK = 0x4  # with_stack: each op's Python "Call stack"
FLOPS = 0x8  # with_flops: torch's FLOP formulas ("flops")
MODULES = 0x10  # with_modules (accepted; records nothing more yet)

_lib = None
_lib_path = None


def _candidates(path):
    if path:
        return [path], "the given path"
    env = os.environ.get("STROBE_TORCH_OBSERVER")
    if env:
        return [env], "STROBE_TORCH_OBSERVER"
    here = os.path.dirname(os.path.abspath(__file__))
    return sorted(glob.glob(os.path.join(here, "_torch_observer*.so"))), "the strobe package"


def load(path=None):
    """Loads the observer (once; a later call with another path raises) and returns its ctypes
    handle. Search order: `path`, $STROBE_TORCH_OBSERVER, the package's _torch_observer*.so.
    torch is imported first (the observer links torch's libraries). Raises RuntimeError with
    the reason when it cannot."""
    global _lib, _lib_path
    found, where = _candidates(path)
    if _lib is not None:
        if path is None or os.path.realpath(path) == os.path.realpath(_lib_path):
            return _lib
        raise RuntimeError("strobe: the torch observer is already loaded from %s" % _lib_path)
    if not found:
        raise RuntimeError("strobe: the torch observer is not built (no _torch_observer*.so in "
                           "the strobe package: torch was not importable when it was built)")
    p = found[0]
    if not os.path.isfile(p):
        raise RuntimeError("strobe: the torch observer %s (from %s) does not exist" % (p, where))
    try:
        import torch  # noqa: F401  (loads torch's libraries, which the observer links)
    except Exception as e:
        raise RuntimeError("strobe: torch is not importable: %s" % e) from None
    try:
        lib = ctypes.CDLL(p)
    except OSError as e:
        raise RuntimeError("strobe: the torch observer %s cannot be loaded: %s" % (p, e)) from None
    lib.strobe_torch_observer_on.argtypes = [ctypes.c_void_p, ctypes.c_uint]
    lib.strobe_torch_observer_on.restype = ctypes.c_int
    lib.strobe_torch_observer_off.argtypes = []
    lib.strobe_torch_observer_off.restype = ctypes.c_int
    lib.strobe_torch_observer_warning.argtypes = []
    lib.strobe_torch_observer_warning.restype = ctypes.c_char_p
    lib.strobe_torch_observer_floor.argtypes = [ctypes.c_int]
    lib.strobe_torch_observer_floor.restype = ctypes.c_int
    _lib, _lib_path = lib, p
    return lib


def warnings():
    """What the observer could not do since the last call, each message once."""
    if _lib is None:
        return []
    out = []
    while True:
        w = _lib.strobe_torch_observer_warning()
        if w is None:
            return out
        out.append(w.decode("utf-8", "replace"))


def on(api_address, flags=0):
    """Turns the observer on: torch's ops are recorded into the copy of strobe whose table is at
    `api_address` (an int; None: libstrobe.so's) while its session records. Calling it again
    changes the flags. Returns the observer's warnings."""
    lib = load()
    rc = lib.strobe_torch_observer_on(api_address, int(flags))
    if rc != 0:
        why = ("no strobe library in this process (libstrobe.so)" if api_address is None
               else "the table is not one this observer can use")
        raise RuntimeError("strobe: the torch observer cannot start (error %d): %s" % (rc, why))
    return warnings()


def off():
    """Turns the observer off (torch's ops cost nothing of strobe's afterwards). Returns its
    warnings."""
    if _lib is None:
        return []
    _lib.strobe_torch_observer_off()
    return warnings()


def floor(mode):
    """For the benchmark: 0 removes, 1 registers a do-nothing global callback (torch's floor),
    2 one that also asks for inputs."""
    rc = load().strobe_torch_observer_floor(int(mode))
    if rc != 0:
        raise ValueError("strobe: floor mode must be 0, 1 or 2")
