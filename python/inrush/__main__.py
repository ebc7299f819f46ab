"""The ``inrush`` command, installed by the wheel: the same program as the Rust binary, run in
this process (``python -m inrush`` works too)."""

import sys

from inrush import _inrush


def main() -> None:
    sys.exit(_inrush.main(["inrush", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
