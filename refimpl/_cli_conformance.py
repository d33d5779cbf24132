"""The ``conformance`` and ``verify`` subcommands of ``python -m refimpl``.

``python -m refimpl conformance CONFIG --dtype {float32,bfloat16,float16} --out DIR`` writes the
golden cases of a model configuration (:func:`refimpl.conformance.write_suite`), with progress
on stderr. ``python -m refimpl verify SUITE RESULTS`` checks an implementation's outputs
(:func:`refimpl.conformance.verify_outputs`), prints the report, and exits with status 0 when
every case passes and 1 when one fails. Every other outcome (a missing directory or manifest,
a bad config, an unreadable file) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from .conformance import DTYPES, verify_outputs, write_suite

HELP = "write golden RoPE cases of a model config (safetensors and .npz, with a manifest)"
VERIFY_HELP = "verify a kernel's outputs against a conformance suite"


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``conformance`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser("conformance", help=HELP, description=HELP)
    p.add_argument("config", help="model config.json")
    p.add_argument("--dtype", choices=DTYPES, default="float32", help="dtype of the inputs")
    p.add_argument("--out", required=True, help="directory to write the suite into")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)
    return p


def add_verify_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``verify`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser("verify", help=VERIFY_HELP, description=VERIFY_HELP)
    p.add_argument("suite", help="suite directory (with manifest.json)")
    p.add_argument("results", help="directory mirroring the suite with the outputs")
    p.set_defaults(func=run_verify)
    return p


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split()) or '(no message)'}"


def run(args) -> int:
    """Write the suite; 0 on success, 2 (one line on stderr) on any error."""

    def progress(done, total, name):
        print(f"conformance: {done}/{total} cases ({name})", file=sys.stderr)

    try:
        manifest = write_suite(
            args.config,
            args.out,
            dtype=args.dtype,
            seed=args.seed,
            progress=None if args.quiet else progress,
        )
    except (ValueError, TypeError, OSError) as exc:
        print(f"refimpl conformance: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    print(f"wrote {len(manifest['cases'])} cases ({args.dtype}) to {args.out}")
    return 0


def run_verify(args) -> int:
    """Verify; 0 when every case passes, 1 when one fails, 2 on any error."""
    try:
        report = verify_outputs(args.suite, args.results)
    except (ValueError, TypeError, OSError, KeyError) as exc:
        print(f"refimpl verify: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    print(report)
    return 0 if report.ok else 1


def main(argv=None) -> int:
    """Run ``conformance`` or ``verify`` on their own (as ``python -m refimpl`` does)."""
    parser = argparse.ArgumentParser(prog="python -m refimpl._cli_conformance")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    add_verify_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
