"""strobe: a low-overhead profiler for native and Python programs (libstrobe inside).

``strobe.profiler`` has torch.profiler's interface; ``strobe.load(path)`` reads any trace the
``strobe`` command reads (strobe's or PyTorch's, JSON or Perfetto, plain or gzip) and gives the
same ``events()`` and ``key_averages()``; ``python -m strobe ARGS`` runs the command line tool.
"""
import os as _os

from . import _strobe
from . import profiler

__all__ = ["profiler", "load", "Trace", "__version__"]
__version__ = _strobe.version()


class Trace:
    """A trace read from a file by strobe.load(): events(), key_averages(), metadata_keys."""

    def __init__(self, path, events, threads, metadata_keys):
        self.path = path
        self._rows = events
        self.threads = threads
        self.metadata_keys = metadata_keys
        self._events = None

    def events(self) -> "profiler.EventList":
        """The trace's events as FunctionEvents (as profile.events() gives them)."""
        if self._events is None:
            self._events = profiler._build_events(self._rows)
        return self._events

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> "profiler.EventList":
        """The events averaged by name, as profile.key_averages() does."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)


def load(path) -> Trace:
    """Reads the trace at `path`; RuntimeError naming the file and the problem when it cannot."""
    if not isinstance(path, (str, bytes, _os.PathLike)):
        raise TypeError("load(): path must be a str or os.PathLike, not %s" % type(path).__name__)
    events, threads, meta = _strobe.load(path)
    return Trace(_os.fspath(path), events, threads, meta)
