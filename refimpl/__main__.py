"""Command line: ``python -m refimpl COMMAND ...``.

Commands are registered by small functions ``register_NAME(subparsers)`` listed in
:data:`COMMANDS`; each sets ``func`` (``func(args) -> int``) on its parser. Errors in the
input (bad path, bad config, bad argument) print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from . import __version__
from ._checks import check_positive_int
from .config import PRECISIONS, RopeSpec, rope_from_config
from .streaming import ProgressPrinter, StreamedArray, write_npz_streams


def _describe(args) -> int:
    spec = rope_from_config(args.config, seq_len=args.seq_len)
    out = sys.stdout
    print(f"config            {spec.source}", file=out)
    print(f"rope type         {spec.rope_type}", file=out)
    print(f"base              {spec.base:g}", file=out)
    print(f"head dim          {spec.dim}", file=out)
    print(f"rotary width      {spec.rotary_dim} ({spec.rotary_dim // 2} pairs)", file=out)
    print(f"attention scaling {spec.attention_scaling!r}", file=out)
    shown = {k: v for k, v in spec.params.items() if k not in ("dim", "base")}
    for k in ("short_factor", "long_factor"):
        if k in shown:
            shown[k] = f"[{len(shown[k])} values]"
    print(f"parameters        {shown}", file=out)
    for note in spec.notes:
        print(f"note              {note}", file=out)
    t = spec.pair_table()
    print(
        f"{'pair':>4} {'wavelength':>14} {'scaled wavelength':>18} {'scale':>10}  regime", file=out
    )
    for i in range(t["pair"].shape[0]):
        print(
            f"{i:>4} {t['wavelength'][i]:>14.6g} {t['scaled_wavelength'][i]:>18.6g} "
            f"{t['scale'][i]:>10.6g}  {t['regime'][i]}",
            file=out,
        )
    return 0


def register_describe(subparsers) -> None:
    """``describe CONFIG [--seq-len L]``: the config's RoPE and a per-pair table."""
    p = subparsers.add_parser(
        "describe", help="summarise the RoPE of a config.json (type, base, widths, per pair)"
    )
    p.add_argument("config", help="path to a model config.json")
    p.add_argument("--seq-len", type=int, default=None, help="sequence length (dynamic, longrope)")
    p.set_defaults(func=_describe)


def stream_golden_members(
    spec: RopeSpec, n: int, precision: str, chunk: int = 65536, progress: bool = False
) -> dict:
    """The members of a ``golden`` file for positions ``0 .. n-1``, tables streamed.

    ``cos`` and ``sin`` are :class:`refimpl.streaming.StreamedArray` s computed by
    ``spec.cos_sin`` on ``chunk`` positions at a time (every entry depends only on its own
    position, so the file equals ``spec.cos_sin`` of the whole range bit for bit); memory is
    bounded by the chunk. The two tables are written as two members, one after the other, so
    each chunk's ``cos_sin`` is evaluated once per member: about twice the arithmetic of one
    in-memory call, the price of a bound on memory. ``progress=True`` prints the position count
    and the rate on stderr about once a second.
    """
    check_positive_int(chunk, "chunk")
    inv = spec.inv_freq if precision == "float64" else spec.inv_freq_float32
    dt = np.dtype(np.float64 if precision == "float64" else np.float32)
    width = spec.rotary_dim // 2

    def positions():
        for p0 in range(0, n, chunk):
            yield np.arange(p0, min(n, p0 + chunk), dtype=np.int64)

    def table(which: int, name: str) -> StreamedArray:
        printer = ProgressPrinter(label=f"{name} positions") if progress else None

        def chunks():
            t0 = time.perf_counter()
            for pos in positions():
                yield spec.cos_sin(pos, precision=precision)[which]
                if printer is not None:
                    printer(int(pos[-1]) + 1, n, time.perf_counter() - t0)

        return StreamedArray((n, width), dt, chunks)

    return {
        "positions": StreamedArray((n,), np.int64, positions),
        "inv_freq": inv,
        "cos": table(0, "cos"),
        "sin": table(1, "sin"),
    }


def _golden(args) -> int:
    if args.positions <= 0:
        raise ValueError(f"--positions must be positive, got {args.positions}")
    if args.chunk <= 0:
        raise ValueError(f"--chunk must be positive, got {args.chunk}")
    seq_len = args.seq_len
    spec = rope_from_config(args.config, seq_len=seq_len)
    if seq_len is None and spec.rope_type in ("dynamic", "longrope"):
        spec = rope_from_config(args.config, seq_len=args.positions)
    spec.cos_sin([args.positions - 1], precision=args.precision)  # fail before writing
    meta = {
        "config": spec.source,
        "rope_type": spec.rope_type,
        "base": spec.base,
        "head_dim": spec.dim,
        "rotary_dim": spec.rotary_dim,
        "seq_len": spec.seq_len,
        "precision": args.precision,
        "refimpl_version": __version__,
        "layout": "cos/sin are half width (positions, rotary_dim // 2), times attention_scaling",
        "notes": list(spec.notes),
    }
    progress = not args.quiet and args.positions > args.chunk
    members = stream_golden_members(spec, args.positions, args.precision, args.chunk, progress)
    write_npz_streams(
        args.out,
        {
            "positions": members.pop("positions"),
            "attention_scaling": np.float64(spec.attention_scaling),
            "metadata": np.array(json.dumps(meta)),
            **members,
        },
    )
    print(f"wrote {args.out}: {args.positions} positions, {spec.rotary_dim // 2} pairs")
    return 0


def register_golden(subparsers) -> None:
    """``golden CONFIG --positions N --out FILE.npz [--precision P] [--seq-len L] [--chunk C]
    [--quiet]``: tables streamed chunk by chunk, progress on stderr for runs over one chunk."""
    p = subparsers.add_parser("golden", help="write golden cos/sin tables of a config to .npz")
    p.add_argument("config", help="path to a model config.json")
    p.add_argument("--positions", type=int, required=True, help="number of positions 0..N-1")
    p.add_argument("--out", required=True, help="output .npz file")
    p.add_argument("--precision", choices=PRECISIONS, default="float64")
    p.add_argument(
        "--seq-len",
        type=int,
        default=None,
        help="sequence length for dynamic/longrope (default: --positions)",
    )
    p.add_argument(
        "--chunk",
        type=int,
        default=65536,
        help="positions computed and written at a time (memory is bounded by the chunk)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=_golden)


def register_check(subparsers) -> None:
    """``check MODULE:FUNCTION --dim D [--config C] [--base B] [--pairing P]``: run
    :func:`refimpl.check_rope` on a function; exit status 1 when the verdict fails."""
    from . import _cli_check

    _cli_check.add_parser(subparsers)


COMMANDS = [register_describe, register_golden, register_check]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered command."""
    parser = argparse.ArgumentParser(
        prog="python -m refimpl", description="refimpl: golden positional encodings"
    )
    parser.add_argument("--version", action="version", version=f"refimpl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(sub)
    return parser


def main(argv=None) -> int:
    """Run the command line; return the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"refimpl {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
