"""python -m strobe ARGS, and the `strobe` console script: the strobe command line tool (compiled
into the extension).

`strobe record` looks for the library it preloads beside its own program, which here is the
Python interpreter; the package carries it in strobe/lib/ (libstrobe_record.so, and
libstrobe_record_mpi.so for --mpi where MPI was found at build time), so the launcher names it
with STROBE_RECORD_LIB, and the torch observer with STROBE_RECORD_TORCH_LIB, unless the user set
them. The --torch import hook is found beside the library (strobe/lib/pyhook).
"""
import glob
import os
import sys

from . import _strobe


def _record_environment() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    lib = os.path.join(here, "lib", "libstrobe_record.so")
    if not os.environ.get("STROBE_RECORD_LIB") and os.path.isfile(lib):
        os.environ["STROBE_RECORD_LIB"] = lib
    observer = sorted(glob.glob(os.path.join(here, "_torch_observer*.so")))
    if not os.environ.get("STROBE_RECORD_TORCH_LIB") and observer:
        os.environ["STROBE_RECORD_TORCH_LIB"] = observer[0]


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _record_environment()
    return _strobe.cli(["strobe"] + argv)


if __name__ == "__main__":
    sys.exit(main())
