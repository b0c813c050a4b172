"""python -m strobe ARGS, and the `strobe` console script: the strobe command line tool (compiled
into the extension).

`strobe record` finds the libraries it preloads in strobe/lib/, beside the extension
(libstrobe_record.so; libstrobe_record_mpi.so for --mpi where MPI was found at build time;
libstrobe_torch.so and pyhook/ for --torch where torch was importable), not beside the
interpreter; STROBE_RECORD_LIB still names another.
"""
import sys

from . import _strobe


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return _strobe.cli(["strobe"] + argv)


if __name__ == "__main__":
    sys.exit(main())
