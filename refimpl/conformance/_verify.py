"""Verifying a kernel's results against a suite: the suite checked (format, keys, names
inside it, every file's sha256), the results read against the manifest's shapes, one
verdict per case computed before any diagnosis."""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import re
from collections.abc import Callable, Mapping

import numpy as np

from .._pipeline_classes import HALF_FORMATS, PIPELINE_CLASSES, SUITE_DTYPES
from ._files import (
    FLOAT_DTYPES,
    SuiteFileError,
    file_members,
    inside,
    read_arrays,
    sha256,
)
from ._layout import Tolerance, class_bound, logical_outputs, pair_slots
from ._write import EXPECTED, FORMAT, INPUTS, MANIFEST, OLD_FORMATS, refuse_old_format

#: Exit status of ``python -m refimpl verify``: every case passes.
EXIT_PASS = 0
#: A case fails (the verdict).
EXIT_FAIL = 1
#: The command line or an argument is wrong (a missing directory, results inside the suite).
EXIT_USAGE = 2
#: The suite cannot be used (no or malformed manifest, an earlier format, a file whose sha256
#: differs from the manifest's, a file name leaving the suite).
EXIT_SUITE = 3
# A manifest above this size is refused unread (a suite of a few hundred cases is ~1 MB).
MAX_MANIFEST_BYTES = 2**26
# Case names are plain file names (they name the results files).
_CASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ENTRY_KEYS = ("name", "files", "outputs", "rope", "layout", "position_form", "inputs")


@dataclasses.dataclass
class CaseResult:
    """Verdict on one case: the worst element (largest error over allowed error) of the
    results, and the tightest pipeline class every element meets (``""`` if none)."""

    name: str
    ok: bool
    index: tuple = ()
    position: float | None = None
    pair: int | None = None
    expected: float = 0.0
    got: float = 0.0
    allowed: float = 0.0
    tensor: str = ""
    pipeline: str = ""
    message: str = ""
    err: float = 0.0

    def __str__(self) -> str:
        head = f"{'PASS' if self.ok else 'FAIL'} {self.name}"
        if not self.index:
            return f"{head}: {self.message or 'no elements'}"
        where = f"{self.tensor}{list(self.index)}"
        pair = "copied feature" if self.pair is None else f"pair {self.pair}"
        msg = f"{self.message}; " if self.message else ""
        return (
            f"{head} [{self.pipeline or 'no pipeline class'}]: {msg}worst {where} "
            f"at position {self.position:g} ({pair}): expected {self.expected:.9g}, "
            f"got {self.got:.9g}, err {self.err:.3g}, allowed {self.allowed:.3g}"
        )

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["index"] = list(self.index)
        for k in ("expected", "got", "allowed", "err"):
            v = out[k]
            out[k] = v if math.isfinite(v) else str(v)
        return out


@dataclasses.dataclass
class VerifyReport:
    """Result of :func:`verify_outputs`: ``ok`` when every case passes; ``pipeline`` the
    tightest class every case meets (``""`` when some case meets none)."""

    ok: bool
    cases: list = dataclasses.field(default_factory=list)
    diagnosis: list = dataclasses.field(default_factory=list)
    pipeline: str = ""
    dtype: str = ""

    def summary(self) -> str:
        n_ok = sum(c.ok for c in self.cases)
        cls = f" [{self.pipeline}]" if self.pipeline else ""
        return f"{'PASS' if self.ok else 'FAIL'}: {n_ok} of {len(self.cases)} cases pass{cls}"

    def __str__(self) -> str:
        lines = [f"  {c}" for c in self.cases] + [self.summary()]
        lines += [f"diagnosis: {d}" for d in self.diagnosis]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "pipeline": self.pipeline,
            "dtype": self.dtype,
            "exit_code": EXIT_PASS if self.ok else EXIT_FAIL,
            "cases": [c.to_dict() for c in self.cases],
            "diagnosis": list(self.diagnosis),
        }


def _need(obj, key: str, kind, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise SuiteFileError(f"{where}: missing key {key!r}")
    if not isinstance(obj[key], kind):
        raise SuiteFileError(f"{where}: key {key!r} must be a {kind.__name__}")
    return obj[key]


def load_manifest(suite: pathlib.Path) -> dict:
    """The manifest of a suite, checked: format, required keys, case names and file names
    inside the suite (SuiteFileError naming the file and the key otherwise)."""
    path = suite / MANIFEST
    if not suite.is_dir():
        raise ValueError(f"suite_dir {suite} is not a directory")
    if not path.is_file():
        raise SuiteFileError(
            f"suite_dir {suite}: no manifest.json (the suite was not written completely, or "
            "this is not a suite); write it with 'python -m refimpl conformance CONFIG --out DIR'"
        )
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise SuiteFileError(f"{path}: larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        manifest = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise SuiteFileError(f"{path}: not JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise SuiteFileError(
            f"{path}: the manifest must be a JSON object, got a {type(manifest).__name__}"
        )
    fmt = manifest.get("format")
    if fmt in OLD_FORMATS:
        refuse_old_format(path, fmt)
    if fmt != FORMAT:
        raise SuiteFileError(f"{path}: key 'format' is {fmt!r}, expected {FORMAT!r}")
    dtype = _need(manifest, "dtype", str, str(path))
    if dtype not in SUITE_DTYPES:
        raise SuiteFileError(f"{path}: key 'dtype' is {dtype!r}, not one of {SUITE_DTYPES}")
    cases = _need(manifest, "cases", list, str(path))
    files = _need(manifest, "files", dict, str(path))
    for rel, digest in files.items():
        inside(suite, rel, f"{path}: key 'files'")
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise SuiteFileError(f"{path}: key 'files': {rel!r} has no sha256 hex digest")
    seen = set()
    for i, entry in enumerate(cases):
        where = f"{path}: cases[{i}]"
        for key in _ENTRY_KEYS:
            _need(entry, key, str if key in ("name", "layout", "position_form") else dict, where)
        if not _CASE_NAME.match(entry["name"]) or entry["name"] in seen:
            raise SuiteFileError(
                f"{where}: key 'name' {entry['name']!r} is not a unique plain name"
            )
        seen.add(entry["name"])
        for kind in (INPUTS, EXPECTED):
            rel = _need(entry["files"], kind, dict, f"{where}['files']").get("safetensors")
            if rel not in files:
                raise SuiteFileError(f"{where}: {kind} file {rel!r} is not in key 'files'")
    return manifest


def check_hashes(suite: pathlib.Path, manifest: Mapping) -> None:
    """Every file the manifest lists exists inside the suite with the sha256 it states."""
    for rel, digest in manifest["files"].items():
        p = inside(suite, rel, f"{suite / MANIFEST}: key 'files'")
        if not p.is_file():
            raise SuiteFileError(f"{p}: missing (the manifest lists it)")
        if sha256(p) != digest:
            raise SuiteFileError(
                f"{p}: sha256 differs from the manifest's: the file changed after the suite "
                "was written (rewrite the suite)"
            )


def check_results_dir(suite: pathlib.Path, results: pathlib.Path) -> None:
    """The results directory exists and is neither the suite nor inside it."""
    if not results.is_dir():
        raise ValueError(f"results_dir {results} is not a directory")
    top, res = suite.resolve(), results.resolve()
    if res == top or res.is_relative_to(top):
        raise ValueError(
            f"results_dir {results} is the suite directory or inside it: write results into "
            "a directory of their own (expected outputs are never read from results)"
        )


def _results_file(suite: pathlib.Path, results: pathlib.Path, name: str):
    """(path, None) of a case's results file, or (None, why not)."""
    for fmt in ("safetensors", "npz"):
        p = results / f"{name}.{fmt}"
        if p.is_file():
            if p.resolve().is_relative_to(suite.resolve()):
                return None, f"{p} resolves into the suite directory"
            return p, None
    return None, "no results file"


def read_results(path: pathlib.Path, entry: Mapping) -> tuple[dict, str | None]:
    """The case's outputs from a results file: every output's declared dtype and shape checked
    before its data is read, other members never read. ``(arrays, None)`` or ``({}, why)``."""
    try:
        members = file_members(path, set(entry["outputs"]))
    except SuiteFileError as exc:
        return {}, str(exc)
    for out, spec in entry["outputs"].items():
        want = tuple(spec["shape"])
        m = members.get(out)
        if m is None:
            return {}, f"results lack the array {out!r}"
        if m.dtype not in FLOAT_DTYPES:
            return {}, f"{out} has dtype {m.dtype}, not a float dtype {FLOAT_DTYPES}"
        if m.shape != want:
            return {}, _shape_message(out, m.shape, want)
    try:
        return read_arrays(path, list(entry["outputs"])), None
    except SuiteFileError as exc:
        return {}, str(exc)


def _shape_message(out: str, got: tuple, want: tuple) -> str:
    text = f"{out} has shape {got}, expected {want}"
    if sorted(got) == sorted(want):
        text += " (the same axes in another order: check the layout)"
    elif math.prod(got) == math.prod(want):
        text += " (the same number of elements: check how heads are split)"
    return text


@dataclasses.dataclass
class _Judged:
    """A case's verdict and what the diagnosis needs."""

    result: CaseResult
    entry: dict
    inputs: dict
    expected: dict
    got: dict
    switch: tuple | None = None


def _worst(logical, expected: Mapping, got: Mapping, outputs: Mapping):
    """(ratio, lg, idx, err, want, allowed, g) of the worst element over the outputs."""
    best = None
    for lg in logical:
        spec = outputs[lg.name]
        want = lg.to_heads(expected[spec["expected"]])
        allowed = lg.to_heads(expected[spec["allowed"]])
        g = lg.to_heads(np.asarray(got[lg.name], dtype=np.float64))
        err = np.abs(g - want)
        err[~np.isfinite(g)] = np.inf
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(err == 0, 0.0, err / allowed)
        if ratio.size == 0:
            continue
        idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        item = (float(ratio[idx]), lg, idx, err, want, allowed, g)
        if best is None or item[0] > best[0]:
            best = item
    return best


def _class_met(logical, expected, got, outputs, inv, rope, dtype) -> str:
    """The tightest pipeline class (registry order) whose bound every element meets."""
    checks = []
    for lg in logical:
        want = lg.to_heads(expected[outputs[lg.name]["expected"]])
        g = lg.to_heads(np.asarray(got[lg.name], dtype=np.float64))
        with np.errstate(invalid="ignore"):
            err = np.where(np.isfinite(g), np.abs(g - want), np.inf)
        checks.append((err, Tolerance(lg.x, lg.m, inv, rope, dtype, lg.rotate)))
    for name in PIPELINE_CLASSES:
        if all(np.all(err <= tol.allowed(class_bound(name))) for err, tol in checks):
            return name
    return ""


def class_message(name: str) -> str:
    """What meeting class ``name`` (and no accepted one) means, and the fix."""
    fmt, _, stage = name.partition("-")
    if fmt in HALF_FORMATS and stage in ("positions", "frequencies", "angles"):
        return (
            f"meets only the {fmt} classes (positions, frequencies or angles rounded to "
            f"{fmt}: their errors are alike): keep positions integer and form frequencies and "
            "angles in float32 or wider"
        )
    return f"meets only {name}: {PIPELINE_CLASSES[name].fix}"


def _judge(entry: dict, inputs: dict, expected: dict, got: dict, dtype: str) -> CaseResult:
    name, outputs, rope = entry["name"], entry["outputs"], entry["rope"]
    logical = logical_outputs(entry, inputs)
    inv = np.asarray(expected["inv_freq"], dtype=np.float64)
    worst = _worst(logical, expected, got, outputs)
    ok = worst is None or worst[0] <= 1.0
    met = _class_met(logical, expected, got, outputs, inv, rope, dtype)
    message = ""
    if not ok and met and not PIPELINE_CLASSES[met].accepted_for(dtype):
        message = class_message(met)
    elif ok and not met:
        message = "within the accepted envelope, no single class"
    if worst is None:
        return CaseResult(name, ok, pipeline=met, message=message or "no elements")
    _, lg, idx, err, want, allowed, g = worst
    lo, r = int(rope["rotary_offset"]), int(rope["rotary_dim"])
    _, _, oa, ob = pair_slots(rope)
    f = idx[-1] - lo
    pair = int(np.nonzero((oa == f) | (ob == f))[0][0]) if 0 <= f < r else None
    mrow = lg.m[idx[:-1]]
    position = float(mrow[0] if mrow.shape[-1] == 1 or pair is None else mrow[pair])
    if lg.rotate is not None and not lg.rotate[idx[:-1]]:
        pair = None
    stored = np.unravel_index(np.ravel_multi_index(idx, lg.x.shape), lg.stored_shape)
    return CaseResult(
        name, ok, tuple(int(i) for i in stored), position, pair, float(want[idx]),
        float(g[idx]), float(allowed[idx]), lg.name, met, message, float(err[idx]),
    )  # fmt: skip


def _read_case(suite: pathlib.Path, entry: Mapping) -> tuple[dict, dict]:
    """The case's inputs and expected arrays (from the hash-checked suite files)."""
    files = entry["files"]
    ins = read_arrays(inside(suite, files[INPUTS]["safetensors"], entry["name"]))
    exp = read_arrays(inside(suite, files[EXPECTED]["safetensors"], entry["name"]))
    values = {
        k: np.asarray(v, dtype=np.float64) if v.dtype.kind == "f" else v for k, v in ins.items()
    }
    return values, exp


def verify_outputs(
    suite_dir, results_dir, *, diagnose: bool = True, on_case: Callable | None = None
) -> VerifyReport:
    """Verify an implementation's outputs against a suite written by
    :func:`refimpl.conformance.write_suite`.

    Parameters
    ----------
    suite_dir : path
        The suite (``manifest.json``, ``inputs/``, ``expected/``).
    results_dir : path
        A directory of its own (not the suite, not inside it) with, for each case,
        ``<case>.safetensors`` or ``<case>.npz`` holding the case's outputs under the names
        of its ``outputs`` (``q_out``, ``k_out``; ``query_out``, ``key_out``; ``qkv_out``;
        ``q``, ``k`` for the in-place case), any float dtype, the stated shapes; other
        arrays are ignored unread.
    diagnose : bool, default True
        When a case fails, name the cause (:mod:`refimpl.conformance._diagnose`).
    on_case : callable, optional
        ``on_case(CaseResult)`` as each verdict is reached (before any diagnosis).

    Returns
    -------
    VerifyReport
        ``ok``, one :class:`CaseResult` per case (the worst element: case, index, position,
        pair, expected, got, allowed, err; the tightest pipeline class met), the tightest
        class every case meets, and the diagnosis (one line per finding; a diagnosis that
        cannot run says so in one line).

    Raises
    ------
    ValueError
        ``results_dir`` is missing, is the suite or is inside it; ``suite_dir`` is not a
        directory.
    refimpl.conformance.SuiteFileError
        (a ValueError) The suite cannot be used: no or malformed ``manifest.json`` (a list,
        a missing ``cases``/``files``/``dtype``), an earlier format (the message names the
        command that rewrites it), a file name leaving the suite, a file whose sha256 differs.
    """
    suite, results = pathlib.Path(suite_dir), pathlib.Path(results_dir)
    manifest = load_manifest(suite)
    check_results_dir(suite, results)
    check_hashes(suite, manifest)
    dtype = manifest["dtype"]
    report = VerifyReport(True, dtype=dtype)
    failed = []
    for entry in manifest["cases"]:
        inputs, expected = _read_case(suite, entry)
        path, why = _results_file(suite, results, entry["name"])
        got = {}
        if path is not None:
            got, why = read_results(path, entry)
        if why is not None:
            result = CaseResult(entry["name"], False, message=why)
        else:
            result = _judge(entry, inputs, expected, got, dtype)
        report.cases.append(result)
        if on_case is not None:
            on_case(result)
        if not result.ok:
            switch = _other_side(suite, manifest, entry) if got else None
            failed.append(_Judged(result, entry, inputs, expected, got, switch))
    report.ok = all(c.ok for c in report.cases)
    report.pipeline = _suite_class(report.cases)
    if failed and diagnose:
        from ._diagnose import diagnose_cases

        report.diagnosis = diagnose_cases(failed, manifest)
    return report


_SIDES = ("below-switch-", "above-switch-")


def _other_side(suite: pathlib.Path, manifest: Mapping, entry: Mapping):
    """For a case on one side of a length switch: (the other side's name, its frequencies,
    its rope entry), from the same case on the other side; None otherwise."""
    name = entry["name"]
    for here, there in (_SIDES, _SIDES[::-1]):
        if here in name:
            other = name.replace(here, there, 1)
            match = next((e for e in manifest["cases"] if e["name"] == other), None)
            if match is None:
                return None
            path = inside(suite, match["files"][EXPECTED]["safetensors"], other)
            inv = read_arrays(path, ["inv_freq"])["inv_freq"]
            return there.split("-")[0], np.asarray(inv, np.float64), match["rope"]
    return None


def _suite_class(cases) -> str:
    """The tightest class every case meets: the loosest of the cases' classes."""
    order = list(PIPELINE_CLASSES)
    if not cases or any(not c.pipeline for c in cases):
        return ""
    return max((c.pipeline for c in cases), key=order.index)
