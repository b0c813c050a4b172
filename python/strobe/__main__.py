"""python -m strobe ARGS: the strobe command line tool (compiled into the extension)."""
import sys

from . import _strobe


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return _strobe.cli(["strobe"] + argv)


if __name__ == "__main__":
    sys.exit(main())
