# sitecustomize.py: the import hook of `strobe record --torch` (cli/cmd_record.c).
#
# strobe record puts this file's folder first on PYTHONPATH, so that every Python process the
# recorded program starts (the program itself, DataLoader workers started with spawn or
# forkserver, torchrun's and subprocess's children) imports it at start-up, from site.py. It
#   1. runs the user's own sitecustomize, the next one on sys.path, as Python would have without
#      this file (usercustomize is left to site.py, which imports it after this module);
#   2. waits for the program to import torch, without importing torch itself: a finder first on
#      sys.meta_path wraps the loader of the top-level "torch" package, so that right after
#      torch's __init__ has run, the observer (libstrobe_torch.so, src/torch/observer.h) is
#      loaded with ctypes and turned on, recording into the session of the preloaded
#      libstrobe_record.so (its table comes from strobe__record_torch_api_get(), record_hook.c);
#   3. never breaks the program: a failure prints one line "strobe record: ..." on standard error
#      and the program runs on, unobserved.
# A child forked without exec (a DataLoader worker under fork) inherits the callback that its
# parent registered; the preloaded library starts a session of its own in the child.
#
# The settings come from the environment that strobe record sets:
#   STROBE_RECORD_TORCH_LIB    the observer to load (absolute path)
#   STROBE_RECORD_TORCH_FLAGS  comma-separated words: shapes, memory, stack (observer.h's
#                              STROBE_TORCH_SHAPES, STROBE_TORCH_MEMORY, STROBE_TORCH_STACK)
# Without STROBE_RECORD_TORCH_LIB, or in a process that strobe record does not record
# (--no-follow's children), the hook does nothing but step 1.

import os as _os
import sys as _sys

# The values of observer.h's flags, by the words strobe record writes.
_FLAGS = {"shapes": 0x1, "memory": 0x2, "stack": 0x4, "flops": 0x8, "modules": 0x10}


def _say(msg):
    try:
        _sys.stderr.write("strobe record: %s (pid %d): %s\n" % (_prog(), _os.getpid(), msg))
        _sys.stderr.flush()
    except Exception:
        pass


def _prog():
    # The name the record hook gives the process: the base name of the argv[0] it was started
    # with (program_invocation_short_name), not the script's.
    argv = getattr(_sys, "orig_argv", None) or [_sys.executable or "python"]
    return _os.path.basename(argv[0]) or "python"


def _run_user_sitecustomize():
    """Runs the next sitecustomize on sys.path (the user's, or the distribution's), as the module
    `sitecustomize`, in place of this one."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    rest = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    # As site.py would: the user's module is `sitecustomize` from now on.
    me = _sys.modules.get("sitecustomize")
    _sys.modules["sitecustomize"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        # site.py reports a failing sitecustomize and goes on; so does this.
        if me is not None:
            _sys.modules["sitecustomize"] = me
        _sys.stderr.write(
            "Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n"
            % (type(e).__name__, e)
        )


def _flags():
    words = _os.environ.get("STROBE_RECORD_TORCH_FLAGS", "")
    flags = 0
    for w in words.split(","):
        w = w.strip()
        if w:
            flags |= _FLAGS.get(w, 0)
    return flags


def _record_api():
    """The table of the preloaded libstrobe_record.so's session, or None where this process is
    not recorded (no such library, or it records nothing here). Given to the observer by address
    rather than NULL: NULL would prefer a libstrobe.so the program may have loaded itself."""
    import ctypes

    try:
        get = ctypes.CDLL(None).strobe__record_torch_api_get
    except (AttributeError, OSError):
        return None
    get.restype = ctypes.c_void_p
    get.argtypes = []
    return get()


def _observe():
    """Loads the observer and turns it on (after `import torch` completed)."""
    lib = _os.environ.get("STROBE_RECORD_TORCH_LIB", "")
    try:
        import ctypes

        api = _record_api()
        if not api:
            return
        obs = ctypes.CDLL(lib)
        obs.strobe_torch_observer_on.restype = ctypes.c_int
        obs.strobe_torch_observer_on.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        rc = obs.strobe_torch_observer_on(api, _flags())
        if rc != 0:
            _say("the torch observer could not start (error %d); torch's operators are not "
                 "recorded" % rc)
            return
        warn = getattr(obs, "strobe_torch_observer_warning", None)
        if warn is not None:
            warn.restype = ctypes.c_char_p
            warn.argtypes = []
            msg = warn()
            if msg:
                _say(msg.decode("utf-8", "replace"))
    except Exception as e:
        _say("cannot load the torch observer %s: %s; torch's operators are not recorded"
             % (lib, e))


class _Loader:
    """Wraps torch's loader: its module runs as before, then the observer starts."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        # The original loader stays the module's (torch reads its own __spec__ and __loader__).
        module.__loader__ = self._inner
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._inner
        self._inner.exec_module(module)
        _observe()


class _Finder:
    """First on sys.meta_path until torch is imported: finds "torch" through the other finders
    and hands back its spec with the wrapped loader."""

    _busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or _Finder._busy:
            return None
        _Finder._busy = True
        try:
            try:
                _sys.meta_path.remove(self)
            except ValueError:
                pass
            import importlib.util

            spec = importlib.util.find_spec("torch")
        except Exception:
            return None
        finally:
            _Finder._busy = False
        if spec is None:
            # Not found (yet): a later import, after sys.path changed, is watched again.
            _sys.meta_path.insert(0, self)
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader)
        return spec


def _install():
    if not _os.environ.get("STROBE_RECORD_TORCH_LIB"):
        return
    if "torch" in _sys.modules:
        _observe()
        return
    _sys.meta_path.insert(0, _Finder())


try:
    _install()
except Exception as _e:
    _say("the torch import hook failed: %s; torch's operators are not recorded" % _e)

# Last, so that the user's module is `sitecustomize` when site.py is done with this one.
try:
    _run_user_sitecustomize()
except Exception as _e:
    _say("cannot run the program's own sitecustomize: %s" % _e)
