"""``python -m workbook build|zip|check-coverage`` (run with ``tools/`` on ``sys.path``)."""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

from .build import ROOT, build, chapter_paths, make_zip, missing_checks
from .chapters import read_chapter
from .downloads import build_wheel


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workbook")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write the student (or the instructor) notebooks")
    b.add_argument("--book", type=pathlib.Path, default=ROOT / "book")
    b.add_argument("--out", type=pathlib.Path, default=ROOT / "workbook")
    b.add_argument("--instructor", action="store_true", help="the instructor's, with solutions")
    b.add_argument("--keep", action="store_true", help="keep notebooks that exist (answers)")
    b.add_argument("--built", type=pathlib.Path, default=None, help="a built book (_build)")
    z = sub.add_parser("zip", help="zip a built workbook with the package's wheel and a README")
    z.add_argument("--out", type=pathlib.Path, default=ROOT / "workbook")
    z.add_argument("zip", type=pathlib.Path)
    sub.add_parser("coverage", help="list exercises without a check")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        try:
            written = build(
                args.book,
                args.out,
                instructor=args.instructor,
                overwrite=not args.keep,
                built=args.built,
            )
        except ValueError as exc:
            print(f"workbook: {exc}", file=sys.stderr)
            return 2
        print(f"workbook: {len(written)} notebooks in {args.out}")
    elif args.cmd == "zip":
        with tempfile.TemporaryDirectory() as tmp:
            wheel = build_wheel(ROOT, pathlib.Path(tmp))
            print(f"workbook: {make_zip(args.out, args.zip, wheel=wheel)}")
    else:
        missing = missing_checks([read_chapter(p) for p in chapter_paths(ROOT / "book")])
        print("\n".join(missing) or "every exercise has a check")
        return 1 if missing else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
