"""Command line: ``python -m refimpl SUBCOMMAND ...`` (``python -m refimpl --help``)."""

from __future__ import annotations

import argparse
import sys

from . import _cli_check


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m refimpl", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _cli_check.add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
