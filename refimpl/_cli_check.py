"""The ``check`` subcommand of ``python -m refimpl``.

``python -m refimpl check MODULE:FUNCTION [mode] [options]`` imports ``FUNCTION`` from
``MODULE`` (a dotted module name importable from the current directory, or a path to a ``.py``
file), runs one check on it, prints the report, and exits with status 0 when the verdict
passes and 1 when it fails. The mode says what ``FUNCTION`` is:

- no mode: ``fn(x, positions)``, judged by :func:`refimpl.check_rope` (``--dim`` required);
- ``--operator``: ``op(x, cos, sin)`` (``op(x, cos, sin, position_ids)`` with
  ``--position-ids``), judged by :func:`refimpl.check_rope_operator`;
- ``--calls N,START:STOP,...`` with ``--config``: ``fn(x, positions, seq_len)``, a scripted
  sequence of calls judged by the call driver (``check_rope(fn, config=, calls=, policy=)``);
- ``--attention-scale`` with ``--config``: ``fn_scores(layer, q, k, positions)``, the logits of
  every layer judged by :func:`refimpl.check_attention_scale`;
- ``--dual-chunk``: ``fn_scores(q, k, positions)``, Dual Chunk Attention logits judged by
  :func:`refimpl.check_dual_chunk_attention` (the settings from ``--config``'s
  ``dual_chunk_attention_config`` or ``--chunk-size``/``--local-size``).

Every other outcome -- a target that cannot be imported (missing, not a ``.py`` file, a
syntax error, an exception at import), a bad config or argument, an option of another mode,
``fn`` raising -- is one line on stderr and exit status 2. Peers (torch) are imported so that
a module of the same name in the current directory cannot shadow them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import pathlib
import sys

from .check import DEFAULT_TOLERANCE, OPERATOR_TABLES, POLICIES, check_rope
from .config import rope_from_config

HELP = (
    "check a RoPE implementation (or an operator, a call sequence, attention logits) against "
    "the reference"
)

EPILOG = """modes (FUNCTION's signature):
  (none)             fn(x, positions); --dim required
  --operator         op(x, cos, sin), or op(x, cos, sin, position_ids) with --position-ids
  --calls LIST       fn(x, positions, seq_len); --config required; LIST is comma-separated
                     calls, each N (positions 0..N-1, seq_len N) or START:STOP (positions
                     START..STOP-1, seq_len STOP)
  --attention-scale  fn_scores(layer, q, k, positions) -> logits; --config required
  --dual-chunk       fn_scores(q, k, positions) -> logits; --config with
                     dual_chunk_attention_config, or --chunk-size and --local-size
exit status: 0 pass, 1 fail, 2 usage error (one line on stderr)"""

# Options that belong to one mode, and the mode's flag.
_MODE_OPTIONS = {
    "tables": "--operator",
    "position_ids": "--operator",
    "policy": "--calls",
    "max_model_len": "--calls",
    "table_length": "--calls",
    "head_dim": "--attention-scale",
    "chunk_size": "--dual-chunk",
    "local_size": "--dual-chunk",
    "softmax_scale": "--dual-chunk",
}


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``check`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser(
        "check",
        help=HELP,
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "target",
        metavar="MODULE:FUNCTION",
        help="function to check: a dotted module (importable from the current directory) or a "
        "path to a .py file, a colon, and the function's name",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--operator", action="store_true", help="FUNCTION is op(x, cos, sin) (given tables)"
    )
    mode.add_argument(
        "--calls", metavar="LIST", help="FUNCTION is fn(x, positions, seq_len): calls to make"
    )
    mode.add_argument(
        "--attention-scale",
        action="store_true",
        help="FUNCTION is fn_scores(layer, q, k, positions): the logits of every layer",
    )
    mode.add_argument(
        "--dual-chunk",
        action="store_true",
        help="FUNCTION is fn_scores(q, k, positions): Dual Chunk Attention logits",
    )
    p.add_argument("--dim", type=int, help="feature width of x (head dim)")
    p.add_argument(
        "--config",
        help="model config.json: the expected configuration (rope_from_config), the calls' "
        "model, the attention schedule, or the dual_chunk_attention_config",
    )
    p.add_argument("--seq-len", type=int, help="sequence length for dynamic/longrope configs; "
                   "with --dual-chunk, the tokens probed")  # fmt: skip
    p.add_argument("--base", type=float, help="expected base (rope_theta)")
    p.add_argument("--pairing", choices=("half", "interleaved"), help="expected pairing")
    p.add_argument("--rotary-dim", type=int, help="expected number of rotated features")
    p.add_argument("--attention-scaling", type=float, help="expected attention scaling")
    p.add_argument("--positions", help="comma-separated positions to probe")
    p.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_TOLERANCE,
        help="allowed deviation per radian of angle (default: 2**-20, float32 arithmetic)",
    )
    p.add_argument(
        "--backend", choices=("auto", "numpy", "torch"), default="auto", help="how to call fn"
    )
    p.add_argument("--tables", choices=OPERATOR_TABLES, help="--operator: the tables' layout "
                   "(default half: (seq, rotary_dim/2) cos and sin)")  # fmt: skip
    p.add_argument("--position-ids", action="store_true", help="--operator: op gathers rows of "
                   "a cos/sin cache by position id")  # fmt: skip
    p.add_argument("--policy", choices=POLICIES, help="--calls: the length policy judged "
                   "(default transformers)")  # fmt: skip
    p.add_argument("--max-model-len", type=int, help="--calls with --policy vllm: the length")
    p.add_argument("--table-length", type=int, help="--calls with --policy table_length: the "
                   "table's initial rows")  # fmt: skip
    p.add_argument("--head-dim", type=int, help="--attention-scale: width of q and k")
    p.add_argument("--chunk-size", type=int, help="--dual-chunk: chunk_size")
    p.add_argument("--local-size", type=int, help="--dual-chunk: local_size")
    p.add_argument("--softmax-scale", type=float, help="--dual-chunk: the scale the logits "
                   "include (default 1)")  # fmt: skip
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


def parse_calls(text: str) -> list:
    """``--calls``: ``N`` is positions ``0..N-1`` with seq_len ``N``; ``START:STOP`` is
    positions ``START..STOP-1`` with seq_len ``STOP``."""
    import numpy as np

    calls = []
    for item in text.split(","):
        item = item.strip()
        try:
            start, _, stop = item.rpartition(":")
            lo, hi = (int(start) if start else 0), int(stop)
        except ValueError:
            raise ValueError(
                f"--calls: each call is N or START:STOP (integers), got {item!r}"
            ) from None
        if not 0 <= lo < hi:
            raise ValueError(f"--calls: a call needs 0 <= START < STOP, got {item!r}")
        calls.append((np.arange(lo, hi), hi))
    return calls


def _parse_positions(text):
    if text is None:
        return None
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"--positions must be comma-separated integers, got {text!r}") from None


def _check_mode_options(args, mode: str) -> None:
    for name, flag in _MODE_OPTIONS.items():
        value = getattr(args, name)
        if value not in (None, False) and flag != mode:
            option = "--" + name.replace("_", "-")
            raise ValueError(f"{option} is used only with {flag}")


def _need(value, option: str, mode: str):
    if value is None:
        raise ValueError(f"{mode} needs {option}")
    return value


def _mode(args) -> str:
    if args.operator:
        return "--operator"
    if args.calls is not None:
        return "--calls"
    if args.attention_scale:
        return "--attention-scale"
    if args.dual_chunk:
        return "--dual-chunk"
    return "check_rope"


def _run_plain(fn, args):
    kw = {} if args.seq_len is None else {"seq_len": args.seq_len}
    expected = None if args.config is None else rope_from_config(args.config, **kw)
    return check_rope(
        fn, dim=_need(args.dim, "--dim", "check"), base=args.base, pairing=args.pairing,
        expected=expected, rotary_dim=args.rotary_dim, attention_scaling=args.attention_scaling,
        tolerance=args.tolerance, backend=args.backend, positions=_parse_positions(args.positions),
    )  # fmt: skip


def _run_operator(fn, args):
    from .check import check_rope_operator

    kw = {}
    if args.config is not None:
        spec = rope_from_config(
            args.config, **({} if args.seq_len is None else {"seq_len": args.seq_len})
        )
        kw = dict(inv_freq=spec.inv_freq, rotary_dim=spec.rotary_dim,
                  attention_scaling=spec.attention_scaling)  # fmt: skip
        kw["pairing"] = args.pairing or spec.pairing
        dim = args.dim if args.dim is not None else spec.dim
    else:
        dim = _need(args.dim, "--dim", "--operator")
        kw = dict(pairing=args.pairing, rotary_dim=args.rotary_dim)
        if args.base is not None:
            kw["base"] = args.base
        if args.attention_scaling is not None:
            kw["attention_scaling"] = args.attention_scaling
    return check_rope_operator(
        fn, dim=dim, tables=args.tables or "half", position_ids=args.position_ids,
        positions=_parse_positions(args.positions), tolerance=args.tolerance,
        backend=args.backend, **kw,
    )  # fmt: skip


def _run_calls(fn, args):
    return check_rope(
        fn, config=_need(args.config, "--config", "--calls"), calls=parse_calls(args.calls),
        policy=args.policy or "transformers", max_model_len=args.max_model_len,
        table_length=args.table_length, tolerance=args.tolerance,
    )  # fmt: skip


def _run_attention(fn, args):
    from .check import check_attention_scale
    from .config import rope_schedule

    schedule = rope_schedule(_need(args.config, "--config", "--attention-scale"))
    return check_attention_scale(
        fn, schedule, head_dim=args.head_dim, positions=_parse_positions(args.positions)
    )


def _run_dual_chunk(fn, args):
    from .check import check_dual_chunk_attention
    from .remap import DualChunkAttention

    if args.config is not None:
        if args.chunk_size is not None or args.local_size is not None:
            raise ValueError("--dual-chunk takes --config or --chunk-size/--local-size, not both")
        config = json.loads(pathlib.Path(args.config).read_text(encoding="utf8"))
        if not isinstance(config, dict) or "dual_chunk_attention_config" not in config:
            raise ValueError(f"--config {args.config} has no dual_chunk_attention_config")
        dca = DualChunkAttention.from_config(config["dual_chunk_attention_config"])
    else:
        size = _need(args.chunk_size, "--chunk-size (or --config)", "--dual-chunk")
        local = _need(args.local_size, "--local-size (or --config)", "--dual-chunk")
        dca = DualChunkAttention(chunk_size=size, local_size=local)
    kw = {k: v for k, v in (("dim", args.dim), ("base", args.base), ("pairing", args.pairing),
                            ("seq_len", args.seq_len), ("softmax_scale", args.softmax_scale))
          if v is not None}  # fmt: skip
    return check_dual_chunk_attention(fn, dca, **kw)


_RUNNERS = {
    "check_rope": _run_plain,
    "--operator": _run_operator,
    "--calls": _run_calls,
    "--attention-scale": _run_attention,
    "--dual-chunk": _run_dual_chunk,
}


def run(args) -> int:
    """Run the check for parsed arguments; print the report; return the exit status."""
    mode = _mode(args)
    try:
        _check_mode_options(args, mode)
        fn = load_function(args.target)
    except (TypeError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        report = _RUNNERS[mode](fn, args)
    except (TypeError, ValueError, OSError) as exc:
        print(f"error: {_one_line(exc).partition(': ')[2]}", file=sys.stderr)
        return 2
    except Exception as exc:  # fn itself failed at the first positions: its error, one line
        print(f"error: {args.target} raised {_one_line(exc)}", file=sys.stderr)
        return 2
    print(report)
    return 0 if report.ok else 1
