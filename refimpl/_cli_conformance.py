"""The ``conformance`` and ``verify`` subcommands of ``python -m refimpl``.

``python -m refimpl conformance CONFIG --out DIR [--dtype D] [--seed N] [--frequencies
{given,computed}] [--sweep]`` writes the golden cases of a model configuration
(:func:`refimpl.conformance.write_suite`), with progress on stderr.

``python -m refimpl verify SUITE RESULTS [--json] [--no-diagnosis]`` checks an
implementation's outputs (:func:`refimpl.conformance.verify_outputs`): each case's verdict is
printed as it is reached, then the summary, then the diagnosis of the failing cases
(``--json``: one JSON object, the :class:`~refimpl.conformance.VerifyReport`).

Exit status: 0 every case passes; 1 a case fails; 2 a usage error (a missing directory,
results inside the suite, a bad config, a directory that is not a suite's to overwrite);
3 the suite cannot be used (no or malformed manifest, an earlier format, a changed file).
Every error is one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from .conformance import (
    DTYPES,
    EXIT_FAIL,
    EXIT_PASS,
    EXIT_SUITE,
    EXIT_USAGE,
    FREQUENCY_MODES,
    SuiteFileError,
    verify_outputs,
    write_suite,
)

HELP = "write golden RoPE cases of a model config (format refimpl-conformance/2)"
VERIFY_HELP = "verify a kernel's outputs against a conformance suite"
_EXIT_TEXT = (
    f"exit status: {EXIT_PASS} every case passes, {EXIT_FAIL} a case fails, {EXIT_USAGE} usage "
    f"error (missing directory, results inside the suite), {EXIT_SUITE} the suite cannot be "
    "used (no or malformed manifest, an earlier format, a file changed since it was written)"
)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``conformance`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser(
        "conformance",
        help=HELP,
        description=HELP,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("config", help="model config.json")
    p.add_argument("--out", required=True, help="directory to write the suite into")
    p.add_argument("--dtype", choices=DTYPES, default="float32", help="dtype of the inputs")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument(
        "--frequencies",
        choices=FREQUENCY_MODES,
        default="given",
        help="'given': inv_freq in every inputs file; 'computed': none, the kernel computes "
        "them from the manifest's scaling parameters",
    )
    p.add_argument(
        "--sweep",
        action="store_true",
        help="also head sizes 64/128/256, rotary fractions 1, 1/2, 1/4 and the other pairing",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)
    return p


def add_verify_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``verify`` on an argparse subparsers object; returns the new parser."""
    p = subparsers.add_parser(
        "verify",
        help=VERIFY_HELP,
        description=VERIFY_HELP,
        epilog=_EXIT_TEXT,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("suite", help="suite directory (with manifest.json, inputs/, expected/)")
    p.add_argument("results", help="results directory (not the suite): RESULTS/<case>.*")
    p.add_argument(
        "--json", action="store_true", help="print the report as one JSON object on stdout"
    )
    p.add_argument(
        "--no-diagnosis", action="store_true", help="verdicts only, no diagnosis of failures"
    )
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
            frequencies=args.frequencies,
            sweep=args.sweep,
        )
    except (ValueError, TypeError, OSError) as exc:
        print(f"refimpl conformance: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {len(manifest['cases'])} cases ({args.dtype}) to {args.out}")
    return EXIT_PASS


def run_verify(args) -> int:
    """Verify; 0 when every case passes, 1 when one fails, 2 usage errors, 3 a bad suite."""
    on_case = None if args.json else (lambda c: print(f"  {c}", flush=True))
    try:
        report = verify_outputs(
            args.suite, args.results, diagnose=not args.no_diagnosis, on_case=on_case
        )
    except SuiteFileError as exc:
        print(f"refimpl verify: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_SUITE
    except (ValueError, TypeError, OSError) as exc:
        print(f"refimpl verify: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print(report.summary())
        for line in report.diagnosis:
            print(f"diagnosis: {line}")
    return EXIT_PASS if report.ok else EXIT_FAIL


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
