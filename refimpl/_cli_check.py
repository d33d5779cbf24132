"""The ``check`` subcommand of ``python -m refimpl``.

``python -m refimpl check MODULE:FUNCTION --dim D [--config CONFIG] [--base B] [--pairing P]``
imports ``FUNCTION`` from ``MODULE`` (a dotted module name importable from the current
directory, or a path to a ``.py`` file), runs :func:`refimpl.check_rope` on it, prints the
report, and exits with status 0 when the verdict passes and 1 when it fails. Every other
outcome -- a target that cannot be imported (missing, not a ``.py`` file, a syntax error, an
exception at import), a bad config or argument, ``fn`` raising -- is one line on stderr and
exit status 2. Peers (torch) are imported so that a module of the same name in the current
directory cannot shadow them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import pathlib
import sys

from .check import DEFAULT_TOLERANCE, check_rope
from .config import rope_from_config

HELP = "check a RoPE implementation fn(x, positions) against the reference"


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``check`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser("check", help=HELP, description=HELP)
    p.add_argument(
        "target",
        metavar="MODULE:FUNCTION",
        help="function to check: a dotted module (importable from the current directory) or a "
        "path to a .py file, a colon, and the function's name",
    )
    p.add_argument("--dim", type=int, required=True, help="feature width of x (head dim)")
    p.add_argument("--config", help="model config.json: expected configuration (rope_from_config)")
    p.add_argument("--seq-len", type=int, help="sequence length for dynamic/longrope configs")
    p.add_argument("--base", type=float, help="expected base (rope_theta)")
    p.add_argument("--pairing", choices=("half", "interleaved"), help="expected pairing")
    p.add_argument("--rotary-dim", type=int, help="expected number of rotated features")
    p.add_argument("--attention-scaling", type=float, help="expected attention scaling")
    p.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_TOLERANCE,
        help="allowed deviation per radian of angle (default: 2**-20, float32 arithmetic)",
    )
    p.add_argument(
        "--backend", choices=("auto", "numpy", "torch"), default="auto", help="how to call fn"
    )
    p.set_defaults(func=run)
    return p


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    return f"{type(exc).__name__}: {text}"


def _exec_file(path: pathlib.Path, module_name: str):
    if path.suffix != ".py":
        raise ValueError(f"module file {module_name!r} must be a .py file")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise ValueError(f"cannot import module file {module_name!r}: {_one_line(exc)}") from exc
    return module


def load_function(target: str):
    """Import ``MODULE:FUNCTION``; raises ValueError with a one-line message for every failure
    (including a syntax error or an exception raised by the module at import)."""
    if ":" not in target:
        raise ValueError(f"target must be MODULE:FUNCTION, got {target!r}")
    module_name, _, func_name = target.rpartition(":")
    if not module_name or not func_name:
        raise ValueError(f"target must be MODULE:FUNCTION, got {target!r}")
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        path = pathlib.Path(module_name)
        if not path.is_file():
            raise ValueError(f"module file {module_name!r} does not exist")
        module = _exec_file(path, module_name)
    else:
        if "" not in sys.path:
            sys.path.insert(0, "")
        try:
            module = importlib.import_module(module_name)
        except (Exception, SystemExit) as exc:
            raise ValueError(f"cannot import module {module_name!r}: {_one_line(exc)}") from exc
    fn = getattr(module, func_name, None)
    if fn is None:
        raise ValueError(f"module {module_name!r} has no attribute {func_name!r}")
    if not callable(fn):
        raise ValueError(f"{target} is not callable")
    return fn


def run(args) -> int:
    """Run the check for parsed arguments; print the report; return the exit status."""
    try:
        fn = load_function(args.target)
        kw = {} if args.seq_len is None else {"seq_len": args.seq_len}
        expected = None if args.config is None else rope_from_config(args.config, **kw)
    except (TypeError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        report = check_rope(
            fn,
            dim=args.dim,
            base=args.base,
            pairing=args.pairing,
            expected=expected,
            rotary_dim=args.rotary_dim,
            attention_scaling=args.attention_scaling,
            tolerance=args.tolerance,
            backend=args.backend,
        )
    except (TypeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # fn itself failed at the first positions: its error, one line
        print(f"error: {args.target} raised {_one_line(exc)}", file=sys.stderr)
        return 2
    print(report)
    return 0 if report.ok else 1
