"""Type stubs of strobe.profiler (torch.profiler's interface)."""
import enum
from typing import Any, Callable, Dict, Iterable, List, Optional

from ._strobe import record_function as record_function

class ProfilerActivity(enum.Enum):
    CPU: int
    CUDA: int

class ProfilerAction(enum.Enum):
    NONE: int
    WARMUP: int
    RECORD: int
    RECORD_AND_SAVE: int

class DeviceType(enum.Enum):
    CPU: int
    CUDA: int
    XPU: int
    HPU: int
    MTIA: int
    PrivateUse1: int

def supported_activities() -> set: ...
def schedule(*, wait: int, warmup: int, active: int, repeat: int = ...,
             skip_first: int = ...) -> Callable[[int], ProfilerAction]: ...
def tensorboard_trace_handler(dir_name: str, worker_name: Optional[str] = ...,
                              use_gzip: bool = ...) -> Callable[["profile"], None]: ...

class Interval:
    start: float
    end: float
    def __init__(self, start: float, end: float) -> None: ...
    def elapsed_us(self) -> float: ...

class FunctionEvent:
    id: int
    name: str
    category: str
    start_ns: int
    end_ns: int
    thread: int
    device_type: DeviceType
    device_index: int
    correlation_id: int
    args: Dict[str, str]
    scope: int
    cpu_parent: Optional["FunctionEvent"]
    cpu_children: List["FunctionEvent"]
    kernels: List["FunctionEvent"]
    cpu_memory_usage: int
    self_cpu_memory_usage: int
    input_shapes: Any
    stack: List[str]
    flops: int
    module_hierarchy: str
    key: str
    trace_name: str
    count: int
    time_range: Interval
    is_cpu: bool
    cpu_time_total: float
    cpu_time: float
    self_cpu_time_total: float
    device_time_total: float
    cuda_time_total: float
    device_time: float
    cuda_time: float
    self_device_time_total: float
    self_cuda_time_total: float
    device_memory_usage: int
    cuda_memory_usage: int
    self_device_memory_usage: int
    self_cuda_memory_usage: int
    is_async: bool
    is_remote: bool
    is_legacy: bool
    node_id: int
    sequence_nr: int

class FunctionEventAvg:
    key: Optional[str]
    count: int
    node_id: int
    is_async: bool
    is_remote: bool
    is_legacy: bool
    cpu_time_total: float
    device_time_total: float
    self_cpu_time_total: float
    self_device_time_total: float
    input_shapes: Any
    stack: Optional[List[str]]
    scope: Optional[int]
    cpu_memory_usage: int
    device_memory_usage: int
    self_cpu_memory_usage: int
    self_device_memory_usage: int
    device_type: DeviceType
    flops: int
    cpu_time: float
    device_time: float
    cuda_time: float
    cuda_time_total: float
    self_cuda_time_total: float
    cuda_memory_usage: int
    self_cuda_memory_usage: int
    def add(self, other: Any) -> "FunctionEventAvg": ...

class EventList(list):
    self_cpu_time_total: float
    def key_averages(self, group_by_input_shapes: bool = ..., group_by_stack_n: int = ...,
                     group_by_input_shape: Optional[bool] = ...) -> "EventList": ...
    def total_average(self) -> FunctionEventAvg: ...
    def table(self, sort_by: Optional[str] = ..., row_limit: int = ...,
              max_src_column_width: int = ..., max_name_column_width: int = ...,
              max_shapes_column_width: int = ..., header: Optional[str] = ...,
              top_level_events_only: bool = ...) -> str: ...
    def export_stacks(self, path: str, metric: str = ...) -> None: ...

class profile:
    activities: set
    schedule: Callable[[int], ProfilerAction]
    on_trace_ready: Optional[Callable[..., Any]]
    record_shapes: bool
    profile_memory: bool
    with_stack: bool
    with_flops: bool
    with_modules: bool
    experimental_config: Any
    cpu_sample_hz: int
    call_graph: Optional[str]
    python_frames: bool
    record_steps: bool
    step_num: int
    current_action: ProfilerAction
    def __init__(self, *, activities: Optional[Iterable[ProfilerActivity]] = ...,
                 schedule: Optional[Callable[[int], ProfilerAction]] = ...,
                 on_trace_ready: Optional[Callable[..., Any]] = ...,
                 record_shapes: bool = ..., profile_memory: bool = ...,
                 with_stack: bool = ..., with_flops: bool = ..., with_modules: bool = ...,
                 experimental_config: Any = ..., use_cuda: Optional[bool] = ...,
                 cpu_sample_hz: int = ..., call_graph: Optional[str] = ...,
                 python_frames: bool = ...) -> None: ...
    def __enter__(self) -> "profile": ...
    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def step(self) -> None: ...
    def prepare_trace(self) -> None: ...
    def start_trace(self) -> None: ...
    def stop_trace(self) -> None: ...
    def events(self) -> EventList: ...
    def key_averages(self, group_by_input_shape: bool = ...,
                     group_by_stack_n: int = ...) -> EventList: ...
    def export_chrome_trace(self, path: str) -> None: ...
    def export_stacks(self, path: str, metric: str = ...) -> None: ...
    def add_metadata(self, key: str, value: str) -> None: ...
    def add_metadata_json(self, key: str, value: str) -> None: ...
    @property
    def profiler(self) -> "profile": ...
