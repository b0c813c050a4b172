"""strobe.profiler: torch.profiler's interface over strobe.

Replace ``import torch.profiler`` (or ``from torch.profiler import ...``) by ``strobe.profiler``
and a program keeps working for profile, record_function, schedule, ProfilerActivity,
ProfilerAction, tensorboard_trace_handler, step(), export_chrome_trace(), export_stacks(),
key_averages().table(), events() and add_metadata(_json)(), with torch's names and meanings.

Contents: activities and actions, schedule, tensorboard_trace_handler, record_function, the
events and their averages (FunctionEvent, FunctionEventAvg, EventList and its table), profile.
"""
import atexit
import enum
import functools
import json
import math
import os
import shutil
import socket
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from . import _strobe

__all__ = ["ProfilerActivity", "ProfilerAction", "schedule", "tensorboard_trace_handler",
           "record_function", "profile", "supported_activities", "FunctionEvent",
           "FunctionEventAvg", "EventList"]


# ---- Activities and actions ---------------------------------------------------------------

class ProfilerActivity(enum.Enum):
    """What a profile traces: CPU (always) and CUDA (kernels, copies, runtime calls, through
    CUPTI loaded at start; where CUDA cannot be traced the trace says why)."""
    CPU = 0
    CUDA = 1


class ProfilerAction(enum.Enum):
    """What a schedule asks of a step (torch.profiler.ProfilerAction)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def _activity(a) -> Optional[ProfilerActivity]:
    """strobe's activity for `a`: one of ours, or torch's own ProfilerActivity value (matched
    by name; one strobe does not trace, as XPU, warns and gives None)."""
    if isinstance(a, ProfilerActivity):
        return a
    if type(a).__name__ == "ProfilerActivity" and isinstance(getattr(a, "name", None), str):
        if a.name in ProfilerActivity.__members__:
            return ProfilerActivity[a.name]
        _warn_once("strobe.profiler: ProfilerActivity.%s is not traced by strobe: ignored"
                   % a.name)
        return None
    raise TypeError("activities must hold ProfilerActivity values, not %s" % type(a).__name__)


_warned = set()


def _warn_once(msg: str) -> None:
    """warnings.warn(msg), once per message in the process (a schedule's cycles would repeat
    it)."""
    if msg not in _warned:
        _warned.add(msg)
        # Attributed to the user's line that called into this module.
        level, f = 2, sys._getframe(1)
        while f is not None and f.f_code.co_filename == __file__:
            f = f.f_back
            level += 1
        warnings.warn(msg, stacklevel=level)


def supported_activities():
    """The activities this machine can trace: CPU, and CUDA where a driver is present."""
    acts = {ProfilerActivity.CPU}
    if os.path.exists("/dev/nvidiactl"):
        acts.add(ProfilerActivity.CUDA)
    return acts


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0,
             skip_first: int = 0) -> Callable[[int], ProfilerAction]:
    """Returns a callable giving the action of each step, as torch.profiler.schedule does:
    skip_first steps are left alone, then each cycle waits ``wait`` steps, warms up ``warmup``
    steps, records ``active`` steps (the last one RECORD_AND_SAVE), ``repeat`` times (0: no end).
    """
    for name, v in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                    ("skip_first", skip_first)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError("schedule(): argument '%s' must be int, not %s"
                            % (name, type(v).__name__))
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise ValueError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results")
    num_steps = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError("Invalid step: %d" % step)
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


_last_name_ns = [0]
_name_lock = threading.Lock()


def tensorboard_trace_handler(dir_name: str, worker_name: Optional[str] = None,
                              use_gzip: bool = False) -> Callable[["profile"], None]:
    """Returns an on_trace_ready handler that writes each trace to
    ``dir_name/{worker_name}.{time}.pt.trace.json[.gz]``, the names the TensorBoard plugin and
    HTA read. worker_name defaults to ``{hostname}_{pid}``; the folder is created."""
    if not isinstance(dir_name, (str, os.PathLike)):
        raise TypeError("tensorboard_trace_handler(): dir_name must be a path, not %s"
                        % type(dir_name).__name__)
    dir_name = os.fspath(dir_name)

    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = "{}_{}".format(socket.gethostname(), str(os.getpid()))
        # Milliseconds as torch writes them would let two traces of one worker share a name:
        # nanoseconds, strictly increasing.
        with _name_lock:
            now = max(time.time_ns(), _last_name_ns[0] + 1)
            _last_name_ns[0] = now
        file_name = "{}.{}.pt.trace.json".format(worker_name, now)
        if use_gzip:
            file_name = file_name + ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


# ---- record_function ------------------------------------------------------------------------

record_function = _strobe.record_function


def _decorate(rf, fn):
    """record_function(name)(fn): fn wrapped in a range of its own per call."""
    if not callable(fn):
        raise TypeError("record_function() decorates a callable, not %s" % type(fn).__name__)
    name, args = rf.name, rf.args

    @functools.wraps(fn)
    def wrapper(*a, **k):
        with record_function(name, args):
            return fn(*a, **k)

    return wrapper


_strobe._set_decorate(_decorate)


# ---- Events ---------------------------------------------------------------------------------

def _format_time(time_us: float) -> str:
    """torch's _format_time."""
    if time_us >= 1000.0 * 1000.0:
        return "{:.3f}s".format(time_us / (1000.0 * 1000.0))
    if time_us >= 1000.0:
        return "{:.3f}ms".format(time_us / 1000.0)
    return "{:.3f}us".format(time_us)


def _format_share(part_ns: int, total_ns: int) -> str:
    if total_ns == 0:
        return "NaN"
    return "{:.2f}%".format(part_ns * 100.0 / total_ns)


def _format_memory(nbytes: int) -> str:
    # torch 2.x's units (torch/autograd/profiler_util.py; 1.13 wrote "b", "Kb", "Mb", "Gb").
    kb, mb, gb = 1024.0, 1024.0 * 1024.0, 1024.0 * 1024.0 * 1024.0
    if abs(nbytes) >= gb:
        return "{:.2f} GB".format(nbytes * 1.0 / gb)
    if abs(nbytes) >= mb:
        return "{:.2f} MB".format(nbytes * 1.0 / mb)
    if abs(nbytes) >= kb:
        return "{:.2f} KB".format(nbytes * 1.0 / kb)
    return str(nbytes) + " B"


class Interval:
    """A time range in microseconds (torch's Interval): start, end, elapsed_us()."""
    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float):
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        return self.end - self.start


class DeviceType(enum.Enum):
    """The device an event ran on (strobe_device_type)."""
    CPU = 0
    CUDA = 1
    XPU = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


_DEVICE_TYPES = list(DeviceType)


class FunctionEvent:
    """One event: a range (an operator, a user range, a kernel) or a memory event, with torch's
    attribute names. Times are microseconds (floats) as in torch; start_ns/end_ns keep strobe's
    integer nanoseconds since the epoch."""
    __slots__ = ("id", "name", "trace_name", "category", "start_ns", "end_ns", "thread",
                 "device_type",
                 "device_index", "correlation_id", "args", "cpu_parent", "cpu_children",
                 "kernels", "_self_ns", "_device_ns", "_self_device_ns", "cpu_memory_usage",
                 "self_cpu_memory_usage", "input_shapes", "stack", "flops", "scope",
                 "module_hierarchy", "_top_level")

    def __init__(self, id, name, category, start_ns, end_ns, thread, device_type, device_index,
                 correlation_id, args, scope):
        self.id = id
        # torch's name (torch/autograd/profiler_util.py, _rewrite_name with_wildcard): every
        # step is "ProfilerStep*", so that key_averages() gives the steps one row; trace_name
        # keeps the step's own.
        self.trace_name = name
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.category = category
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.thread = thread
        self.device_type = _DEVICE_TYPES[device_type] if 0 <= device_type < 6 else DeviceType.CPU
        self.device_index = device_index
        self.correlation_id = correlation_id
        self.args = args
        self.scope = scope
        self.cpu_parent = None
        self.cpu_children = []
        self.kernels = []
        self._self_ns = end_ns - start_ns
        self._device_ns = 0
        self._self_device_ns = 0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self._top_level = True
        self.input_shapes = _json_arg(args, "Input Dims", [])
        stack = _json_arg(args, "Call stack", "")
        self.stack = [s for s in stack.split(";") if s] if isinstance(stack, str) else []
        flops = _json_arg(args, "flops", 0)
        self.flops = int(flops) if isinstance(flops, (int, float)) else 0
        self.module_hierarchy = _json_arg(args, "Module Hierarchy", "")

    @property
    def key(self) -> str:
        return self.name

    @property
    def count(self) -> int:
        return 1

    @property
    def time_range(self) -> Interval:
        return Interval(self.start_ns / 1000.0, self.end_ns / 1000.0)

    @property
    def is_cpu(self) -> bool:
        return self.device_type == DeviceType.CPU

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) / 1000.0 if self.is_cpu else 0.0

    cpu_time = cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        return self._self_ns / 1000.0 if self.is_cpu else 0.0

    @property
    def device_time_total(self) -> float:
        return self._device_ns / 1000.0

    cuda_time_total = device_time_total
    device_time = device_time_total
    cuda_time = device_time_total

    @property
    def self_device_time_total(self) -> float:
        return self._self_device_ns / 1000.0

    self_cuda_time_total = self_device_time_total

    @property
    def device_memory_usage(self) -> int:
        return 0

    cuda_memory_usage = device_memory_usage
    self_device_memory_usage = device_memory_usage
    self_cuda_memory_usage = device_memory_usage
    is_async = False
    is_remote = False
    is_legacy = False
    node_id = -1
    sequence_nr = -1

    def __repr__(self):
        return ("<FunctionEvent id={} name={} device_type={} start_us={:.3f} end_us={:.3f} "
                "thread={}>".format(self.id, self.name, self.device_type.name,
                                    self.start_ns / 1000.0, self.end_ns / 1000.0, self.thread))


def _int_arg(args, key, default):
    """An integer arg (given as a number or as text), else `default`."""
    v = _json_arg(args, key, None)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _json_arg(args, key, default):
    v = args.get(key)
    if v is None:
        return default
    try:
        return json.loads(v)
    except ValueError:
        return v


class FunctionEventAvg:
    """The events of one key (name, and shapes or stack when grouped by them), summed: torch's
    FunctionEventAvg. Times are microseconds."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = -1
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.flops = 0
        self._self_ns = 0
        self._total_ns = 0
        self._top_level = False
        self._gpu_annotation = False

    def add(self, other) -> "FunctionEventAvg":
        """Adds an event (or another average) of the same key."""
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.flops += other.flops
        if isinstance(other, FunctionEvent):
            self._gpu_annotation = other.category == "gpu_user_annotation"
            if other.is_cpu:
                self._total_ns += other.end_ns - other.start_ns
                self._self_ns += other._self_ns
            self._top_level = self._top_level or other.cpu_parent is None
        else:
            self._total_ns += other._total_ns
            self._self_ns += other._self_ns
            self._top_level = self._top_level or other._top_level
            self._gpu_annotation = other._gpu_annotation
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time

    @property
    def cuda_time_total(self) -> float:
        return self.device_time_total

    @property
    def self_cuda_time_total(self) -> float:
        return self.self_device_time_total

    @property
    def cuda_memory_usage(self) -> int:
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self) -> int:
        return self.self_device_memory_usage

    def __repr__(self):
        return ("<FunctionEventAvg key={} self_cpu_time={} cpu_time={} count={}>".format(
            self.key, _format_time(self.self_cpu_time_total), _format_time(self.cpu_time),
            self.count))


class EventList(list):
    """A list of events or averages, with torch's table(), key_averages(), export_stacks() and
    total_average()."""

    def __init__(self, *args, **kwargs):
        self._with_stack = kwargs.pop("with_stack", False)
        self._profile_memory = kwargs.pop("profile_memory", False)
        super().__init__(*args, **kwargs)

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_input_shape: Optional[bool] = None) -> "EventList":
        """Averages the events by key (name), and by input shapes (their "Input Dims") and the
        top group_by_stack_n frames of their Call stack when asked. group_by_input_shape is
        profile.key_averages()'s spelling of group_by_input_shapes (torch's EventList's)."""
        group_by_input_shape = bool(group_by_input_shapes if group_by_input_shape is None
                                    else group_by_input_shape)
        if not isinstance(group_by_stack_n, int) or group_by_stack_n < 0:
            raise ValueError("group_by_stack_n must be a non-negative int")
        stats: Dict[Tuple, FunctionEventAvg] = {}
        for evt in self:
            # torch groups by device type too: a kernel, or a record_function's GPU annotation,
            # never shares a row with a CPU range of the same name.
            key = [str(evt.key), str(evt.node_id), str(evt.device_type)]
            if group_by_input_shape:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            avg = stats.get(tuple(key))
            if avg is None:
                avg = stats[tuple(key)] = FunctionEventAvg()
            avg.add(evt)
        out = EventList(stats.values(), with_stack=self._with_stack,
                        profile_memory=self._profile_memory)
        for avg in out:
            avg.stack = avg.stack[:group_by_stack_n] if avg.stack else avg.stack
            if not group_by_input_shape:
                avg.input_shapes = None
        out._group_by_input_shape = group_by_input_shape
        out._group_by_stack_n = group_by_stack_n
        return out

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for evt in self:
            total.add(evt)
            total.key = None
        total.key = "Total"
        return total

    def table(self, sort_by: Optional[str] = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: Optional[str] = None,
              top_level_events_only: bool = False) -> str:
        """torch's table: one row per entry, sorted by the attribute ``sort_by`` (descending:
        "cpu_time_total", "self_cpu_time_total", "count", "cpu_memory_usage",
        "device_time_total", ...), at most row_limit rows (a negative limit: all)."""
        return _build_table(self, sort_by, row_limit, max_src_column_width,
                            max_name_column_width, max_shapes_column_width, header,
                            top_level_events_only)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Writes each event's Call stack with its metric (microseconds, an int), one line per
        stack, frames outermost first and separated by ';': the input of flamegraph.pl."""
        if metric not in ("self_cpu_time_total", "self_cuda_time_total",
                          "self_device_time_total"):
            raise ValueError("metric should be one of: self_cpu_time_total, "
                             "self_cuda_time_total, self_device_time_total")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack:
                    value = int(getattr(evt, metric))
                    if value > 0:
                        frames = ";".join(e.replace(" ", "_") for e in reversed(evt.stack))
                        f.write("{} {}\n".format(frames, value))


def _build_table(events, sort_by, row_limit, max_src_column_width, max_name_column_width,
                 max_shapes_column_width, header, top_level_events_only) -> str:
    if len(events) == 0:
        return ""
    has_device = any(e.self_device_time_total > 0 or e.device_time_total > 0 for e in events)
    # The columns torch's _build_table (torch/autograd/profiler_util.py) shows: memory with
    # profile_memory, shapes where an entry has them (key_averages keeps them only when grouped
    # by them), FLOPs in the unit of the smallest count.
    has_mem = getattr(events, "_profile_memory", False) or any(
        e.cpu_memory_usage != 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    has_stack = getattr(events, "_group_by_stack_n", 0) > 0 and any(e.stack for e in events)
    has_flops = any(e.flops > 0 for e in events)
    if sort_by is not None:
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    if top_level_events_only:
        events = [e for e in events if e._top_level]
    if row_limit is not None and row_limit >= 0:
        shown = list(events)[:row_limit]
    else:
        shown = list(events)

    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    col = 12
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    widths = [name_width] + [col] * 5
    if has_device:
        headers += ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
        widths += [col] * 4
    if has_mem:
        headers += ["CPU Mem", "Self CPU Mem"]
        widths += [col] * 2
    headers.append("# of Calls")
    widths.append(col)
    shapes_width = src_width = 0
    if has_shapes:
        shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4,
                           max_shapes_column_width)
        headers.append("Input Shapes")
        widths.append(shapes_width)
    if has_stack:
        src_width = min(max(len(f) for e in events for f in (e.stack or [""])) + 4,
                        max_src_column_width)
        headers.append("Source Location")
        widths.append(src_width)
    flops_scale = 1.0
    if has_flops:
        units = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
        least = min(e.flops for e in events if e.flops > 0)
        k = int(max(0.0, min(math.log10(least) / 3, float(len(units) - 1))))
        flops_scale = 10.0 ** (-3 * k)
        headers.append("Total " + units[k])
        widths.append(col)

    sep = "".join("-" * w + "  " for w in widths)
    line_length = len(sep)

    def row(cells):
        return "".join(("{:>%d}  " % w).format(c) for c, w in zip(cells, widths))

    # Shares are of the self times of every entry, in integer nanoseconds like the C summary.
    self_total_ns = sum(e._self_ns for e in events)
    # As torch's footer: the device's own events (an operator's self device time is its
    # kernels', counted there), not the GPU copies of user annotations.
    self_device_total = sum(e.self_device_time_total for e in events
                            if e.device_type != DeviceType.CPU
                            and not getattr(e, "_gpu_annotation", False)
                            and getattr(e, "category", "") != "gpu_user_annotation")
    out = []
    if header is not None:
        out.append("=" * line_length)
        out.append(header)
    if top_level_events_only:
        out.append("=" * line_length)
        out.append("This report only display top-level operations statistics")
    out.append(sep)
    out.append(row(headers))
    out.append(sep)
    for e in shown:
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        # The average from the integer ns total, as the C library's table divides it: the float
        # sum of microseconds can differ in the last bit, and so in the third decimal of an
        # average that falls on a half (23.0405).
        avg_us = e._total_ns / 1000.0 / e.count if e.count and e._total_ns else e.cpu_time
        cells = [name, _format_share(e._self_ns, self_total_ns),
                 _format_time(e.self_cpu_time_total), _format_share(e._total_ns, self_total_ns),
                 _format_time(e.cpu_time_total), _format_time(avg_us)]
        if has_device:
            cells += [_format_time(e.self_device_time_total),
                      "NaN" if self_device_total == 0 else "{:.2f}%".format(
                          e.self_device_time_total * 100.0 / self_device_total),
                      _format_time(e.device_time_total), _format_time(e.device_time)]
        if has_mem:
            cells += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        cells.append(str(e.count))
        if has_shapes:
            cells.append(str(e.input_shapes)[:shapes_width])
        if has_stack:
            src = e.stack[0] if e.stack else ""
            if len(src) > src_width:
                src = "..." + src[len(src) - src_width + 3:]
            cells.append(src)
        if has_flops:
            cells.append("{:8.3f}".format(e.flops * flops_scale) if e.flops > 0 else "--")
        out.append(row(cells))
    out.append(sep)
    out.append("Self CPU time total: " + _format_time(self_total_ns / 1000.0))
    if has_device:
        out.append("Self CUDA time total: " + _format_time(self_device_total))
    return "".join(s + "\n" for s in out)


# Names torch leaves out of its events (torch/autograd/profiler_util.py, _filter_name): the
# record_function helpers' own operators and a few utility ops; what they enclose belongs to
# their parent.
_FILTERED_NAMES = frozenset(("[OutOfMemory]", "profiler::_record_function_enter",
                             "profiler::_record_function_enter_new",
                             "profiler::_record_function_exit", "aten::is_leaf",
                             "aten::output_nr", "aten::_version"))


def _remove_dup_nodes(out: EventList) -> EventList:
    """torch's EventList._remove_dup_nodes: an operator that is the only child of an operator
    of the same name (a wrapper redispatching to itself) is one event, the parent; the child's
    children and kernels move up."""
    drop = set()
    for ev in out:
        par = ev.cpu_parent
        while par is not None and id(par) in drop:
            par = par.cpu_parent
        if par is None or par.name != ev.name or len(par.cpu_children) != 1 or \
                par.cpu_children[0] is not ev:
            continue
        drop.add(id(ev))
        par.cpu_children = ev.cpu_children
        par.kernels = ev.kernels
        # The parent's self time is what the child's children leave of it.
        par._self_ns += ev._self_ns
        par.self_cpu_memory_usage += ev.self_cpu_memory_usage
        par._self_device_ns += ev._self_device_ns
        for ch in ev.cpu_children:
            ch.cpu_parent = par
    if not drop:
        return out
    kept = EventList([ev for ev in out if id(ev) not in drop], with_stack=out._with_stack,
                     profile_memory=out._profile_memory)
    for i, ev in enumerate(kept):
        ev.id = i
    return kept


def _build_events(rows, with_stack=False, profile_memory=False) -> EventList:
    """FunctionEvents from the tuples of Result.events() (or strobe.load): ranges (CPU and
    device) and [memory] events, without python_function events (torch's events() leaves them
    out too: they are in the trace). Self times, children and memory usage follow torch:
    a child is the nearest enclosing range that is kept; memory counts in every enclosing op."""
    out = EventList(with_stack=with_stack, profile_memory=profile_memory)
    kept: List[Optional[FunctionEvent]] = [None] * len(rows)
    parent_of = [r[6] for r in rows]
    by_corr: Dict[int, FunctionEvent] = {}  # operators and user ranges, by External id
    by_rt_corr: Dict[int, FunctionEvent] = {}  # runtime and driver calls, by correlation
    device_rows = []
    for i, r in enumerate(rows):
        (name, cat, start, end, tid, _ti, parent, _depth, kind, scope, dtype, dindex, corr,
         _flags, args, _value) = r
        if kind == 0 and (cat == "python_function" or name in _FILTERED_NAMES):
            continue
        if kind == 1 and name == "[memory]":
            margs = dict(args)
            nbytes = _json_arg(margs, "Bytes", 0)
            p = parent
            first = True
            while p >= 0:
                ev = kept[p]
                if ev is not None and ev.is_cpu:
                    ev.cpu_memory_usage += nbytes
                    if first:
                        ev.self_cpu_memory_usage += nbytes
                        first = False
                p = parent_of[p]
            if first and _int_arg(margs, "Device Type", 0) == 0:
                # Outside every operator: a "[memory]" event of its own, as torch's top-level
                # memory events (a row in key_averages, no time).
                ev = FunctionEvent(len(out), name, "cpu_instant_event", start, start, tid, 0,
                                   dindex, 0, margs, scope)
                ev.cpu_memory_usage = ev.self_cpu_memory_usage = nbytes
                ev._self_ns = 0
                out.append(ev)
            continue
        if kind != 0:
            continue
        ev = FunctionEvent(len(out), name, cat, start, end, tid, dtype, dindex, corr,
                           dict(args), scope)
        kept[i] = ev
        out.append(ev)
        if ev.is_cpu:
            p = parent
            while p >= 0 and kept[p] is None:
                p = parent_of[p]
            if p >= 0:
                par = kept[p]
                ev.cpu_parent = par
                ev._top_level = False
                par.cpu_children.append(ev)
                par._self_ns -= end - start
            # Device work belongs to the operator or user range of its External id, as torch
            # links it; the runtime and driver calls inside share that id and take none (they
            # are found by their CUPTI correlation, for work without an External id).
            if cat.endswith(("_runtime", "_driver")) or cat == "Runtime":
                rc = _int_arg(ev.args, "correlation", corr)
                if rc:
                    by_rt_corr[rc] = ev
            else:
                ext = _int_arg(ev.args, "External id", corr)
                if ext:
                    by_corr[ext] = ev
        else:
            device_rows.append(ev)
    # Device work counts in the CPU op that launched it (same correlation id), and in that op's
    # enclosing ops' totals.
    for k in device_rows:
        dur = k.end_ns - k.start_ns
        k._device_ns = dur
        k._self_device_ns = dur
        if k.category == "gpu_user_annotation":
            continue  # a row of its own; its range's work is already counted by its kernels
        op = by_corr.get(_int_arg(k.args, "External id", k.correlation_id))
        if op is None:
            # No operator with its External id: the launch's enclosing operator.
            op = by_rt_corr.get(_int_arg(k.args, "correlation", k.correlation_id))
            while op is not None and (op.category.endswith(("_runtime", "_driver")) or
                                      op.category == "Runtime"):
                op = op.cpu_parent
        if op is None:
            continue
        op.kernels.append(k)
        op._self_device_ns += dur
        while op is not None:
            op._device_ns += dur
            op = op.cpu_parent
    return _remove_dup_nodes(out)


# ---- the torch observer -----------------------------------------------------------------------

# The torch observer (strobe._torch: a global RecordFunction callback built against the
# installed torch) records torch's operators into this extension's copy of the core. It is used
# only where the program has imported torch itself: strobe.profiler never imports torch.
_observer: Dict[str, Any] = {"mod": None, "error": None}


def _torch_observer():
    """strobe._torch with its observer loaded, or None: torch is not imported, or the observer
    cannot be loaded (said once, with the reason)."""
    if "torch" not in sys.modules:
        return None
    if _observer["mod"] is not None:
        return _observer["mod"]
    if _observer["error"] is not None:
        return None
    try:
        from . import _torch
        _torch.load()
    except Exception as e:  # noqa: BLE001: any failure leaves torch's operators unrecorded
        _observer["error"] = str(e) or type(e).__name__
        _warn_once("strobe.profiler: torch's operators are not recorded: the torch observer is "
                   "unavailable (%s)" % _observer["error"])
        return None
    _observer["mod"] = _torch
    return _torch


def _observer_flags(t, prof) -> int:
    flags = 0
    if prof.record_shapes:
        flags |= t.SHAPES
    if prof.profile_memory:
        flags |= t.MEMORY
    if prof.with_flops:
        flags |= t.FLOPS
    if prof.with_modules:
        flags |= t.MODULES
    # Not t.STACK: with_stack's "Call stack" comes from the Python hook at stop, for torch's
    # operators as for every other range.
    return flags


# ---- profile --------------------------------------------------------------------------------

_running: "List[profile]" = []
# Held while a profiler stops its session, so that two threads stopping one profiler at once
# stop it once: the second finds it stopped (a check, then a note that it stopped, with the GIL
# free to switch threads between them and during the stop itself).
_stop_lock = threading.Lock()


class profile:
    """Profiles the code it is entered around (or between start() and stop()), as
    torch.profiler.profile does: CPU ranges of every thread (record_function, and Python
    functions with with_stack), CUDA work with ProfilerActivity.CUDA; a schedule and step()
    choose which steps are recorded, and on_trace_ready(prof) is called after each recorded
    cycle."""

    def __init__(self, *, activities: Optional[Iterable[ProfilerActivity]] = None,
                 schedule: Optional[Callable[[int], ProfilerAction]] = None,
                 on_trace_ready: Optional[Callable[..., Any]] = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, use_cuda: Optional[bool] = None,
                 cpu_sample_hz: int = 0, call_graph: Optional[str] = None,
                 python_frames: bool = True):
        # cpu_sample_hz, call_graph and python_frames are strobe's own (torch.profiler has no CPU
        # sampling): every thread's call stack sampled this often per second of CPU time, taken as
        # perf's --call-graph says: "fp", "dwarf" or "dwarf,SIZE" (None: dwarf where built in),
        # with the Python frames of each sample unless python_frames is False. The same keys may
        # come in an experimental_config dict instead (a keyword given both ways must agree).
        acts = set(_activity(a) for a in activities) if activities else \
            supported_activities()
        acts.discard(None)
        if use_cuda is not None:
            warnings.warn("use_cuda is deprecated, use activities argument instead")
            if use_cuda:
                acts.add(ProfilerActivity.CUDA)
            else:
                acts.discard(ProfilerActivity.CUDA)
        if not acts:
            raise ValueError("No valid profiler activities found")
        if schedule is not None and not callable(schedule):
            raise TypeError("schedule must be a callable (step) -> ProfilerAction")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError("on_trace_ready must be a callable (profile) -> None")
        self.activities = acts
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        # strobe's own options may also come in a dict (keeping the call torch's): the keys above.
        # Anything else (torch's _ExperimentalConfig) is ignored.
        opts = experimental_config if isinstance(experimental_config, dict) else {}
        known = {"cpu_sample_hz": (cpu_sample_hz, 0), "call_graph": (call_graph, None),
                 "python_frames": (python_frames, True)}
        unknown = sorted(set(map(str, opts)) - set(known))
        if unknown:
            raise ValueError("experimental_config: unknown strobe option(s) %s (known: %s)" %
                             (", ".join(unknown), ", ".join(sorted(known))))
        chosen = {}
        for key, (given, default) in known.items():
            if key in opts and given != default and opts[key] != given:
                raise ValueError("%s given twice, as %r and in experimental_config as %r" %
                                 (key, given, opts[key]))
            chosen[key] = opts.get(key, given)
        hz = chosen["cpu_sample_hz"]
        if not isinstance(hz, int) or isinstance(hz, bool) or not 0 <= hz <= 10000:
            raise ValueError("cpu_sample_hz must be an int in 0 .. 10000")
        if chosen["call_graph"] is not None and not isinstance(chosen["call_graph"], str):
            raise ValueError("call_graph must be 'fp', 'dwarf' or 'dwarf,SIZE'")
        self.cpu_sample_hz = hz
        self.call_graph = chosen["call_graph"]
        self.python_frames = bool(chosen["python_frames"])
        if schedule:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._result = None
        self._events = None
        self._saved: Optional[str] = None
        self._pending_meta: List[Tuple[str, str]] = []
        self._session = False
        A = ProfilerAction
        self.action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [
                functools.partial(warnings.warn, "Incorrect schedule: WARMUP followed by NONE"),
                self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [
                functools.partial(warnings.warn, "Incorrect schedule: RECORD followed by NONE"),
                self.stop_trace],
            (A.RECORD, A.WARMUP): [
                functools.partial(warnings.warn, "Incorrect schedule: RECORD followed by WARMUP"),
                self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace, self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready,
                                                     self.prepare_trace, self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    # -- session control --

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()

    # As torch.profiler's (torch/profiler/profiler.py): with a schedule, "ProfilerStep#N" is a
    # range of the thread that calls start() and step(), ended by the next step() (before the
    # schedule acts on it) or by stop(); without one, steps are not marked. The with_stack hook
    # records no frame of these three methods (nor of __enter__ and __exit__): a step begins in
    # one call and ends in another, and their frames would cross it.
    def start(self) -> None:
        """Starts profiling (or the schedule's first step's action)."""
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            _strobe.step(self.step_num)

    def stop(self) -> None:
        """Stops profiling; a recording cycle ends in on_trace_ready."""
        if self.record_steps:
            _strobe.step_end()
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Signals that the next step begins: moves the schedule along, and marks the step in
        the trace ("ProfilerStep#N") when a schedule is given."""
        if self.record_steps:
            _strobe.step_end()
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            _strobe.step(self.step_num)

    def _transit_action(self, prev_action, current_action) -> None:
        for action in self.action_map.get((prev_action, current_action)) or []:
            action()

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def prepare_trace(self) -> None:
        """Sets a session up without recording (a schedule's warm-up)."""
        mask = _strobe.ACTIVITY_CPU
        if ProfilerActivity.CUDA in self.activities:
            mask |= _strobe.ACTIVITY_CUDA
        _strobe.start(activities=mask, record_shapes=self.record_shapes,
                      profile_memory=self.profile_memory, with_stack=self.with_stack,
                      with_flops=self.with_flops, with_modules=self.with_modules,
                      prepare_only=True, cpu_sample_hz=self.cpu_sample_hz,
                      python_frames=self.python_frames,
                      call_graph=self.call_graph)
        self._session = True
        _running.append(self)

    def start_trace(self) -> None:
        """Opens the prepared session's window (with torch's operators, through the torch
        observer, where the program has imported torch)."""
        self._observer_on()
        try:
            _strobe.start_prepared()
        except BaseException:
            self._observer_off()
            raise
        self._result = None
        self._events = None
        self._saved = None
        for k, v in self._pending_meta:
            _strobe.add_metadata_json(k, v)

    def stop_trace(self) -> None:
        """Stops the session and keeps its result for the exports and tables."""
        with _stop_lock:
            if not self._session:
                return
            self._session = False
            if self in _running:
                _running.remove(self)
            try:
                self._result = _strobe.stop()
            finally:
                self._observer_off()
            self._events = None
            self._saved = None
        # What the session could not trace (CUDA without a driver, events dropped) is said, not
        # only written into the trace.
        for msg in self._result.info()["warnings"]:
            _warn_once("strobe.profiler: " + msg)

    def _observer_on(self) -> None:
        """Turns the torch observer on for this window, or says which options record nothing
        without it (strobe's own ranges have no shapes, FLOPs or memory)."""
        t = _torch_observer()
        self._observer_used = False
        if t is not None:
            try:
                msgs = t.on(_strobe._torch_api(), _observer_flags(t, self))
            except Exception as e:  # noqa: BLE001: the profile goes on without torch's ops
                _warn_once("strobe.profiler: torch's operators are not recorded: the torch "
                           "observer did not start (%s)" % e)
            else:
                self._observer_used = True
                for msg in msgs:
                    _warn_once("strobe.profiler: " + msg)
                return
        why = ("the torch observer is unavailable" if "torch" in sys.modules
               else "torch is not imported")
        for opt, on in (("record_shapes", self.record_shapes),
                        ("profile_memory", self.profile_memory),
                        ("with_flops", self.with_flops)):
            if on:
                _warn_once("strobe.profiler: %s=True records nothing: %s (shapes, memory and "
                           "FLOPs come from torch's operators)" % (opt, why))

    def _observer_off(self) -> None:
        if not getattr(self, "_observer_used", False):
            return
        self._observer_used = False
        # off() gives the observer's messages since on() (strobe_torch_observer_warning).
        for msg in _observer["mod"].off() or []:
            _warn_once("strobe.profiler: " + msg)

    # -- results --

    def _need_result(self):
        if self._result is None:
            raise RuntimeError("strobe: no trace: the profiler has not recorded a step yet")
        return self._result

    def events(self) -> EventList:
        """The recorded events (FunctionEvent): ranges of every thread, device work, memory."""
        if self._events is None:
            self._events = _build_events(self._need_result().events(), self.with_stack,
                                         self.profile_memory)
        return self._events

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """The events averaged by name (and input shapes, and stack frames), as torch does."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Writes the trace: Kineto's JSON (gzip when the path ends in .gz), or Perfetto's
        protobuf format for .pftrace."""
        res = self._need_result()
        path = os.fspath(path)
        if self._saved is None:
            res.save(path)
            self._saved = path
        elif os.path.abspath(path) != os.path.abspath(self._saved):
            # A result is written once; later exports copy that file.
            if _fmt(path) != _fmt(self._saved):
                raise RuntimeError("strobe: the trace was exported as %s already; export it "
                                   "again with the same suffix" % self._saved)
            try:
                shutil.copyfile(self._saved, path)
            except OSError as e:
                raise RuntimeError("strobe: cannot save the trace to %s: %s" % (path, e)) from e

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Writes the Call stacks (with_stack=True) with their metric for flamegraph.pl."""
        if not self.with_stack:
            raise RuntimeError("export_stacks() requires with_stack=True")
        self.events().export_stacks(path, metric)

    def add_metadata(self, key: str, value: str) -> None:
        """Adds a string entry to the trace's top-level metadata."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("add_metadata(): key and value must be str")
        self.add_metadata_json(key, json.dumps(value))

    def add_metadata_json(self, key: str, value: str) -> None:
        """Adds an entry whose value is JSON text to the trace's top-level metadata."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("add_metadata_json(): key and value must be str")
        if _strobe.is_active() and self._session:
            _strobe.add_metadata_json(key, value)
        elif self._result is not None:
            self._result.add_metadata_json(key, value)
        else:
            json.loads(value) if value else None
            self._pending_meta.append((key, value))

    @property
    def profiler(self):
        """torch's inner profiler object: here the profile itself."""
        return self

    def _stats(self):
        return self._need_result().info()

    def _summary_table(self, sort=0, limit=0) -> str:
        """The C library's own table for this session (strobe/summary.h)."""
        return self._need_result().summary_table(sort, limit)


_strobe._hide_frames(profile.start, profile.stop, profile.step, profile.__enter__,
                     profile.__exit__)


def _fmt(path: str) -> str:
    if path.endswith(".pftrace") or path.endswith(".perfetto-trace") or \
            path.endswith(".pftrace.gz"):
        return "pftrace" + (".gz" if path.endswith(".gz") else "")
    return "json" + (".gz" if path.endswith(".gz") else "")


@atexit.register
def _stop_at_exit() -> None:
    """A profiler left running at interpreter exit is stopped, its result dropped."""
    with _stop_lock:
        while _running:
            p = _running.pop()
            try:
                p._session = False
                _strobe.stop()
            except RuntimeError:
                pass
            try:
                p._observer_off()
            except Exception:  # noqa: BLE001: at exit, nothing is left to tell
                pass
