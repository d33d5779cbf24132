"""Command line: ``python -m refimpl COMMAND ...``.

Commands are registered by small functions ``register_NAME(subparsers)`` listed in
:data:`COMMANDS`; each sets ``func`` (``func(args) -> int``) on its parser. Every failure in
the input (bad path, bad config, bad argument, a size over the package's limits) prints one
line on stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time

import numpy as np

from . import __version__
from ._checks import MAX_POSITION, check_positive_int, check_table_size
from .config import PRECISIONS, RopeSchedule, RopeSpec, rope_schedule
from .gguf import gguf_schedule, is_gguf
from .scaling import ROPE_SCALINGS
from .streaming import ProgressPrinter, StreamedArray, write_npz_streams

# Errors that mean "bad input" and become one line on stderr with exit status 2.
INPUT_ERRORS = (ValueError, TypeError, OSError, ArithmeticError, RecursionError, MemoryError)


def _progression(indices: list[int]) -> int | None:
    """The common step of three or more evenly spaced indices (None otherwise)."""
    if len(indices) < 3:
        return None
    step = indices[1] - indices[0]
    ok = step > 1 and all(b - a == step for a, b in itertools.pairwise(indices))
    return step if ok else None


def _ranges(indices: list[int]) -> str:
    """Layer indices compactly: ``"0-2, 5, 7-8"``; ``"3, 7, ..., 47 (every 4th)"``; or
    ``"0-46 except 3, 7, ..., 43"`` when the layers missing in between are evenly spaced."""
    step = _progression(indices)
    if step is not None:
        return f"{indices[0]}, {indices[1]}, ..., {indices[-1]} (every {step}th)"
    others = sorted(set(range(indices[0], indices[-1] + 1)) - set(indices))
    if _progression(others) is not None:
        return f"{indices[0]}-{indices[-1]} except {others[0]}, {others[1]}, ..., {others[-1]}"
    out, start = [], None
    for i, v in enumerate(indices):
        if start is None:
            start = v
        if i + 1 == len(indices) or indices[i + 1] != v + 1:
            out.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return ", ".join(out)


def schedule_lines(schedule: RopeSchedule) -> tuple[list[str], list[RopeSpec]]:
    """One line per distinct (spec, layer type, query scaling, indexer) with its layer ranges,
    and the distinct specs in order (the line's label ``A``, ``B``, ... indexes them)."""
    specs = schedule.specs()
    keys = [k for k in schedule.groups() if k is not None]
    groups: dict = {}
    indexers: dict = {}
    for layer in schedule:
        k = None if layer.spec is None else layer.spec.key()
        ik = None if layer.indexer is None else layer.indexer.key()
        indexers.setdefault(ik, layer.indexer)
        sig = (k, layer.layer_type, layer.query_scaling, ik)
        groups.setdefault(sig, []).append(layer.index)
    lines = []
    for (k, layer_type, query, ik), indices in groups.items():
        label = "-" if k is None else _label(keys.index(k))
        what = "no RoPE" if k is None else specs[k].describe()
        if query is not None:
            what += "; " + query.describe()
        if ik is not None:
            what += "; indexer: " + _indexer_text(indexers[ik])
        word = "layer " if len(indices) == 1 else "layers"
        lines.append(f"{label} {word} {_ranges(indices)} ({layer_type}): {what}")
    return lines, [specs[k] for k in keys]


def _indexer_text(spec: RopeSpec) -> str:
    """An indexer's rotation in a few words (its tables are its layer's)."""
    where = "trailing" if spec.rotary_offset else "leading"
    order = ", half-order output" if spec.output_order == "half" else ""
    return (
        f"{spec.pairing} pairs{order} on the {where} {spec.rotary_dim} of {spec.dim} features "
        "(the layer's tables)"
    )


def _label(i: int) -> str:
    """Spec labels ``A`` .. ``Z``, then ``S26``, ``S27``, ..."""
    return chr(ord("A") + i) if i < 26 else f"S{i}"


def _pair_lines(spec: RopeSpec) -> list[str]:
    t = spec.pair_table()
    lines = [f"{'pair':>4} {'wavelength':>14} {'scaled wavelength':>18} {'scale':>10}  regime"]
    for i in range(t["pair"].shape[0]):
        lines.append(
            f"{i:>4} {t['wavelength'][i]:>14.6g} {t['scaled_wavelength'][i]:>18.6g} "
            f"{t['scale'][i]:>10.6g}  {t['regime'][i]}"
        )
    return lines


def schedule_of(path, seq_len=None) -> RopeSchedule:
    """The schedule of a ``config.json`` or, for a GGUF file, the one llama.cpp runs."""
    if is_gguf(path):
        return gguf_schedule(path, seq_len=seq_len)
    return rope_schedule(path, seq_len=seq_len)


def _describe(args) -> int:
    schedule = schedule_of(args.config, seq_len=args.seq_len)
    lines, specs = schedule_lines(schedule)
    out = [
        f"config            {schedule.source}",
        f"model type        {schedule.model_type}",
    ]
    if schedule.reason:
        out.append(f"family            {schedule.family or 'none (generic reading)'}")
        out.append(f"read by           {schedule.reason}")
    out += [f"layers            {len(schedule)}", *lines]
    dca = schedule.dual_chunk_attention
    if dca is not None:
        out.append(
            f"dual chunk attn   chunk_size {dca.chunk_size}, local_size {dca.local_size}: "
            "ignored by transformers, run by vLLM and SGLang"
        )
    out += [f"note              {n}" for n in schedule.notes]
    for i, spec in enumerate(specs):
        label = _label(i)
        out += [
            f"spec {label:<13}{spec.rope_type}, base {spec.base:g}",
            f"  head dim        {spec.dim}",
            f"  rotary width    {spec.rotary_dim} ({spec.rotary_dim // 2} pairs)",
            f"  attention scaling {spec.attention_scaling!r}",
        ]
        out += [f"  note            {n}" for n in spec.notes if n not in schedule.notes]
        if args.pairs:
            out += _pair_lines(spec)
    for indexer in {
        layer.indexer.key(): layer.indexer for layer in schedule if layer.indexer
    }.values():
        out.append(f"indexer           {_indexer_text(indexer)}")
        out.append(f"  note            {indexer.notes[-1]}")
    print("\n".join(out))
    return 0


def register_describe(subparsers) -> None:
    """``describe CONFIG [--seq-len L] [--no-pairs]``: which family read the config and why,
    the per-layer schedule (layer ranges -> base, widths, pairing, scaling, NoPE, query
    scaling, indexer RoPE), Dual Chunk Attention settings, notes, and a per-pair table of
    each distinct spec."""
    p = subparsers.add_parser(
        "describe", help="summarise the RoPE of a config.json layer by layer (and per pair)"
    )
    p.add_argument("config", help="path to a model config.json or a .gguf file")
    p.add_argument("--seq-len", type=int, default=None, help="sequence length (dynamic, longrope)")
    p.add_argument(
        "--no-pairs", dest="pairs", action="store_false", help="leave out the per-pair tables"
    )
    p.set_defaults(func=_describe)


# The precisions whose tables are angles of one stored frequency vector, and that vector. An
# engine's pipeline (ggml's repeated products, MLX's and vLLM's own powers) forms its frequencies
# inside its arithmetic, so a golden file of an engine precision has no ``inv_freq`` member
# rather than one that the tables were not computed from.
_OWN_FREQUENCIES = {
    "float64": lambda spec: spec.inv_freq,
    "transformers-float32": lambda spec: spec.inv_freq_float32,
}


# Table methods of golden files (float64 only): the correctly rounded tables of the exact
# frequencies, or the float64 precision's np.cos of the float64 angles.
GOLDEN_METHODS = ("correct", "fast")


def golden_tables(spec: RopeSpec, positions, precision: str, method: str | None):
    """The tables of a golden file: ``spec.cos_sin(positions, precision, method=...)``
    (``method="correct"``: the correctly rounded tables of the record's exact frequencies,
    times ``attention_scaling`` folded in before the rounding)."""
    return spec.cos_sin(positions, precision=precision, method=method or "fast")


def _check_method(precision: str, method: str | None) -> str | None:
    """``--method`` applies to float64 tables (default ``correct``); refused with others."""
    if precision != "float64":
        if method is not None:
            raise ValueError(
                f"--method {method} applies to --precision float64 only; {precision} tables "
                "are that arithmetic's own"
            )
        return None
    return "correct" if method is None else method


def stream_golden_members(
    spec: RopeSpec,
    n: int,
    precision: str,
    chunk: int = 65536,
    progress: bool = False,
    method: str | None = None,
) -> dict:
    """The members of a ``golden`` file for positions ``0 .. n-1``, tables streamed.

    ``cos`` and ``sin`` are :class:`refimpl.streaming.StreamedArray` s computed by
    :func:`golden_tables` (``method="correct"``: correctly rounded float64 tables of the exact
    frequencies; otherwise ``spec.cos_sin``) on ``chunk`` positions at a time (every entry
    depends only on its own
    position, so the file equals ``spec.cos_sin`` of the whole range bit for bit); memory is
    bounded by the chunk. The two tables are written as two members, one after the other, so
    each chunk's ``cos_sin`` is evaluated once per member: about twice the arithmetic of one
    in-memory call, the price of a bound on memory. ``progress=True`` prints the position count
    and the rate on stderr about once a second.
    """
    check_positive_int(chunk, "chunk")
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
                yield golden_tables(spec, pos, precision, method)[which]
                if printer is not None:
                    printer(int(pos[-1]) + 1, n, time.perf_counter() - t0)

        return StreamedArray((n, width), dt, chunks)

    members = {"positions": StreamedArray((n,), np.int64, positions)}
    if method == "correct":  # the float64 nearest each exact frequency the tables are of
        freqs = ROPE_SCALINGS[spec.rope_type].exact_frequencies(**spec.method_params())
        members["inv_freq"] = freqs.float64()
    elif precision in _OWN_FREQUENCIES:
        members["inv_freq"] = _OWN_FREQUENCIES[precision](spec)
    return {
        **members,
        "cos": table(0, "cos"),
        "sin": table(1, "sin"),
    }


def _spec_meta(spec: RopeSpec) -> dict:
    return {
        "rope_type": spec.rope_type,
        "base": spec.base,
        "head_dim": spec.dim,
        "rotary_dim": spec.rotary_dim,
        "rotary_offset": spec.rotary_offset,
        "pairing": spec.pairing,
        "output_order": spec.output_order,
        "attention_scaling": spec.attention_scaling,
        "seq_len": spec.seq_len,
        "mrope_section": None if spec.mrope_section is None else list(spec.mrope_section),
        "mrope_layout": spec.mrope_layout,
        "description": spec.describe(),
        "notes": list(spec.notes),
    }


def _schedule_meta(schedule: RopeSchedule, keys: list) -> list[dict]:
    out = []
    for layer in schedule:
        q = layer.query_scaling
        out.append(
            {
                "index": layer.index,
                "layer_type": layer.layer_type,
                "spec": None if layer.spec is None else keys.index(layer.spec.key()),
                "query_scaling": None
                if q is None
                else {"kind": q.kind, "params": dict(q.params), "softmax_scale": q.softmax_scale},
            }
        )
    return out


_METHOD_WORDS = {
    "correct": "the float64 nearest attention_scaling * cos and * sin of the exact angles "
    "(position times the rope type's exact frequencies), bit-identical on every machine; "
    "inv_freq is the float64 nearest each exact frequency",
    "fast": "np.cos and np.sin of the float64 angles of the float64 inv_freq",
    None: "the precision's own arithmetic",
}


def _golden(args) -> int:
    n = check_positive_int(args.positions, "--positions", maximum=MAX_POSITION)
    chunk = check_positive_int(args.chunk, "--chunk", maximum=MAX_POSITION)
    schedule = schedule_of(args.config, seq_len=args.seq_len or n)
    specs = schedule.specs()
    keys = [k for k in schedule.groups() if k is not None]
    if not keys:
        raise ValueError(f"{schedule.source}: no layer applies RoPE; there are no tables to write")
    method = _check_method(args.precision, args.method)
    for k in keys:  # fail before writing: sizes, then the last position
        check_table_size(n, specs[k].rotary_dim // 2, "--positions table")
        specs[k].cos_sin([n - 1], precision=args.precision)
        golden_tables(specs[k], np.array([n - 1]), args.precision, method)
    one = len(keys) == 1
    meta = {
        "config": schedule.source,
        "model_type": schedule.model_type,
        "precision": args.precision,
        "method": method,
        "tables": _METHOD_WORDS[method],
        "refimpl_version": __version__,
        "layout": "cos/sin are half width (positions, rotary_dim // 2), times attention_scaling"
        + ("" if one else "; member NAME_k belongs to specs[k]")
        + (
            ""
            if args.precision in _OWN_FREQUENCIES
            else f"; no inv_freq member: {args.precision} forms its frequencies in its own "
            "arithmetic"
        ),
        "specs": [_spec_meta(specs[k]) for k in keys],
        "schedule": _schedule_meta(schedule, keys),
        "notes": list(schedule.notes),
    }
    if one:
        meta.update({k: v for k, v in meta["specs"][0].items() if k != "notes"})
        meta["notes"] = list(dict.fromkeys(meta["notes"] + meta["specs"][0]["notes"]))
    progress = not args.quiet and n > chunk
    members = {"metadata": np.array(json.dumps(meta))}
    for i, k in enumerate(keys):
        suffix = "" if one else f"_{i}"
        streamed = stream_golden_members(specs[k], n, args.precision, chunk, progress, method)
        if i == 0:
            members = {"positions": streamed.pop("positions"), **members}
        streamed.pop("positions", None)
        members[f"attention_scaling{suffix}"] = np.float64(specs[k].attention_scaling)
        members.update({f"{name}{suffix}": v for name, v in streamed.items()})
    if one:  # the historical member order
        members = {
            name: members[name]
            for name in ("positions", "attention_scaling", "metadata", "inv_freq", "cos", "sin")
            if name in members
        }
    write_npz_streams(args.out, members)
    pairs = ", ".join(str(specs[k].rotary_dim // 2) for k in keys)
    print(f"wrote {args.out}: {n} positions, {len(keys)} table set(s) of {pairs} pairs")
    return 0


def register_golden(subparsers) -> None:
    """``golden CONFIG --positions N --out FILE.npz [--precision P] [--method M] [--seq-len L]
    [--chunk C] [--quiet]``: one table set per distinct layer spec, streamed chunk by chunk
    (progress on stderr for runs over one chunk), the schedule and the method in the
    metadata."""
    p = subparsers.add_parser(
        "golden", help="write golden cos/sin tables of a config to .npz (one set per layer spec)"
    )
    p.add_argument("config", help="path to a model config.json or a .gguf file")
    p.add_argument(
        "--positions",
        type=int,
        required=True,
        help=f"number of positions 0..N-1 (at most {MAX_POSITION})",
    )
    p.add_argument("--out", required=True, help="output .npz file")
    p.add_argument("--precision", choices=PRECISIONS, default="float64")
    p.add_argument(
        "--method",
        choices=GOLDEN_METHODS,
        default=None,
        help="float64 tables: correct (default; correctly rounded values of the exact angles) "
        "or fast (np.cos of the float64 angles)",
    )
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


def register_engines(subparsers) -> None:
    """``engines CONFIG [--dtype D]``: how llama.cpp, vLLM and MLX-LM compute the config's
    RoPE, against transformers (:func:`refimpl.engines.engine_differences`)."""
    from . import _cli_engines

    _cli_engines.add_parser(subparsers)


def register_conformance(subparsers) -> None:
    """``conformance CONFIG --out DIR [--dtype D]`` and ``verify SUITE RESULTS``: write golden
    cases of a config and check a kernel's outputs against them (exit 0/1/2)."""
    from . import _cli_conformance

    _cli_conformance.add_parser(subparsers)
    _cli_conformance.add_verify_parser(subparsers)


COMMANDS = [
    register_describe,
    register_golden,
    register_check,
    register_engines,
    register_conformance,
]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered command."""
    parser = _Parser(prog="python -m refimpl", description="refimpl: golden positional encodings")
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
    except INPUT_ERRORS as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        print(f"refimpl {args.command}: error: {text}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"refimpl {args.command}: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:  # only code a command runs (check's function) raises it here
        print(
            f"refimpl {args.command}: error: the code it ran called sys.exit({exc.code!r})",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
