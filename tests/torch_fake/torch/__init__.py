# A fake `torch` package for test_record_torch_hook.sh: it loads a library named libtorch_cpu.so
# (as the real torch does; strobe record notes the processes that loaded one) and offers op(NAME),
# which records a range through the stub observer (tests/torch_stub_observer.c) once the import
# hook of `strobe record --torch` has turned it on.
import ctypes
import os

_cpu = ctypes.CDLL(os.environ["FAKE_LIBTORCH_CPU"])
_stub = None


def op(name):
    global _stub
    lib = os.environ.get("STROBE_RECORD_TORCH_LIB")
    if lib is None:
        return
    if _stub is None:
        try:
            _stub = ctypes.CDLL(lib)
        except OSError:
            _stub = False  # not a library (the test's bad observer): no ops recorded
            return
        _stub.stub_op.argtypes = [ctypes.c_char_p]
    if _stub:
        _stub.stub_op(name.encode())
