"""Type stubs of strobe."""
import os
from typing import Any, List, Tuple, Union

from . import profiler as profiler

__version__: str

class Trace:
    path: str
    threads: List[Tuple[int, str, int, int]]
    metadata_keys: List[str]
    def events(self) -> profiler.EventList: ...
    def key_averages(self, group_by_input_shape: bool = ...,
                     group_by_stack_n: int = ...) -> profiler.EventList: ...

def load(path: Union[str, bytes, os.PathLike]) -> Trace: ...
