"""The ``engines`` subcommand of ``python -m refimpl``.

``python -m refimpl engines CONFIG [--dtype D]`` prints, for llama.cpp, vLLM and MLX-LM, the
attention factor each engine multiplies into cos and sin, whether YaRN's ramp is truncated,
the length policy, the rope type it runs, and the largest cos/sin and attention-score
difference from transformers' reference over the sampled positions
(:func:`refimpl.engines.engine_differences`). Every failure is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import sys

from .engines import engine_differences

HELP = "how llama.cpp, vLLM and MLX-LM compute a config's RoPE, against transformers"


def _run(args) -> int:
    reports = engine_differences(args.config, dtype=args.dtype, seq_len=args.seq_len)
    out = sys.stdout
    first = reports[0]
    print(f"config            {args.config}", file=out)
    print(f"transformers A    {first.reference_factor:.6g}", file=out)
    print(f"positions         0..63 and 64 geometric steps to {first.positions}", file=out)
    for r in reports:
        print(f"\n{r.engine}", file=out)
        print(f"  attention factor  {r.attention_factor:.6g}", file=out)
        ramp = "n/a" if r.truncated_ramp is None else ("truncated" if r.truncated_ramp else "exact")
        print(f"  yarn ramp         {ramp}", file=out)
        print(f"  length policy     {r.length_policy}", file=out)
        print(f"  rope type         {r.rope_type}", file=out)
        print(f"  max |cos/sin|     {r.max_table_error:.3g}", file=out)
        print(f"  max |score|       {r.max_score_error:.3g}", file=out)
        for note in r.notes:
            print(f"  note              {note}", file=out)
        print(f"  arithmetic        {r.backend}", file=out)
        print(f"  semantics from    {r.source}", file=out)
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``engines`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser("engines", help=HELP, description=HELP)
    p.add_argument("config", help="model config.json")
    p.add_argument(
        "--dtype",
        choices=("float32", "bfloat16", "float16"),
        help="vLLM's model dtype (default: the config's torch_dtype, else bfloat16)",
    )
    p.add_argument(
        "--seq-len",
        type=int,
        help="sequence length the tables are for (default: max_position_embeddings); dynamic "
        "NTK and LongRoPE choose their frequencies by it",
    )
    p.set_defaults(func=_run)
    return p
