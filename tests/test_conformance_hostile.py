"""Crafted files against the conformance suite's readers: manifests, safetensors and .npz
results, results directories, interrupted writes; the ``conformance`` and ``verify`` CLI run
as subprocesses under a time and memory cap. Every refusal names the file and the key or
rule; nothing hangs, nothing reads an ignored member, no crafted suite verifies."""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import zipfile
import zlib

import numpy as np
import pytest

from refimpl import _cli_conformance
from refimpl.conformance import (
    EXIT_FAIL,
    EXIT_PASS,
    EXIT_SUITE,
    EXIT_USAGE,
    SuiteFileError,
    read_safetensors,
    verify_outputs,
    write_safetensors,
    write_suite,
)

# Hand-made (labelled): a small default-RoPE config (head width 8, 4096 positions).
SMALL = {"head_dim": 8, "rope_theta": 10000.0, "max_position_embeddings": 4096}
# Every subprocess runs under these caps: a hang or a read of a 1 GiB member fails the test.
TIME_CAP = 120
MEMORY_CAP = 512 * 2**20
GIB = 2**30


def _cli(*args):
    """``python -m refimpl._cli_conformance ARGS`` under the time and memory caps."""

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-m", "refimpl._cli_conformance", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=TIME_CAP,
        preexec_fn=cap,
        env=env,
    )


def _good_results(suite, dest):
    """A results directory holding each case's expected outputs (a perfect kernel)."""
    dest.mkdir()
    man = json.loads((suite / "manifest.json").read_text())
    for case in man["cases"]:
        exp, _ = read_safetensors(suite / case["files"]["expected"]["safetensors"])
        write_safetensors(
            dest / f"{case['name']}.safetensors", {o: exp[o] for o in case["outputs"]}
        )
    return man


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    write_suite(SMALL, root / "suite")
    man = _good_results(root / "suite", root / "good")
    return root, man


@pytest.fixture
def suite(made, tmp_path):
    """A fresh copy of the suite to spoil."""
    shutil.copytree(made[0] / "suite", tmp_path / "suite")
    return tmp_path / "suite"


class _Replace:
    """A change that replaces the whole manifest (by ``make(manifest)``)."""

    def __init__(self, make):
        self.make = make


def _edit_manifest(suite, change):
    path = suite / "manifest.json"
    man = json.loads(path.read_text())
    if isinstance(change, _Replace):
        man = change.make(man)
    else:
        change(man)
    path.write_text(json.dumps(man))


# ---------------------------------------------------------------- manifests


def test_the_good_results_pass(made):
    root, man = made
    report = verify_outputs(root / "suite", root / "good")
    assert report.ok and len(report.cases) == len(man["cases"])
    done = _cli("verify", root / "suite", root / "good")
    assert done.returncode == EXIT_PASS, done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_Replace(lambda m: [m]), "the manifest must be a JSON object, got a list"),
        (lambda m: m.pop("cases"), "missing key 'cases'"),
        (lambda m: m.pop("files"), "missing key 'files'"),
        (lambda m: m.pop("dtype"), "missing key 'dtype'"),
        (lambda m: m.update(cases={}), "key 'cases' must be a list"),
        (lambda m: m.update(dtype="int8"), "key 'dtype' is 'int8', not one of"),
        (lambda m: m.update(format="refimpl-conformance/9"), "key 'format' is"),
        (
            lambda m: m.update(format="refimpl-conformance/1"),
            "'refimpl-conformance/1' is no longer read; rewrite the suite with "
            "'python -m refimpl conformance",
        ),
        (lambda m: m["cases"][0].pop("outputs"), "cases[0]: missing key 'outputs'"),
        (lambda m: m["cases"][0].update(name="../prefill"), "is not a unique plain name"),
        (lambda m: m["cases"][1].update(name="prefill"), "is not a unique plain name"),
        (
            lambda m: m["files"].update({"/etc/passwd": "0" * 64}),
            "file name '/etc/passwd' leaves the suite directory",
        ),
        (
            lambda m: m["files"].update({"inputs/../../x": "0" * 64}),
            "leaves the suite directory",
        ),
        (lambda m: m["files"].update({"inputs/x": "nope"}), "has no sha256 hex digest"),
        (
            lambda m: m["cases"][0]["files"]["inputs"].update(safetensors="inputs/other"),
            "inputs file 'inputs/other' is not in key 'files'",
        ),
    ],
)
def test_malformed_manifests_are_refused_naming_file_and_key(suite, tmp_path, change, message):
    _edit_manifest(suite, change)
    (tmp_path / "r").mkdir()
    with pytest.raises(SuiteFileError) as err:
        verify_outputs(suite, tmp_path / "r")
    assert message in str(err.value) and "manifest.json" in str(err.value)
    if isinstance(change, _Replace) or "missing key 'cases'" in message or "/1" in message:
        done = _cli("verify", suite, tmp_path / "r")  # the CLI on a few: one line, exit 3
        assert done.returncode == EXIT_SUITE and done.stdout == ""
        assert done.stderr.count("\n") == 1 and message in done.stderr


def test_a_manifest_that_is_not_json_or_absent(suite, tmp_path):
    (tmp_path / "r").mkdir()
    (suite / "manifest.json").write_bytes(b"\xff{")
    with pytest.raises(SuiteFileError, match=r"manifest\.json: not JSON"):
        verify_outputs(suite, tmp_path / "r")
    (suite / "manifest.json").unlink()
    done = _cli("verify", suite, tmp_path / "r")
    assert done.returncode == EXIT_SUITE and "no manifest.json" in done.stderr


def test_a_symlink_leading_out_of_the_suite_is_refused(suite, tmp_path):
    outside = tmp_path / "outside.safetensors"
    shutil.copy(suite / "inputs" / "prefill.safetensors", outside)
    (suite / "inputs" / "prefill.safetensors").unlink()
    (suite / "inputs" / "prefill.safetensors").symlink_to(outside)
    (tmp_path / "r").mkdir()
    with pytest.raises(SuiteFileError, match="resolves outside the suite directory"):
        verify_outputs(suite, tmp_path / "r")


@pytest.mark.parametrize("kind", ["inputs", "expected"])
def test_a_changed_or_missing_suite_file_is_refused(suite, tmp_path, kind):
    path = suite / kind / "decode.safetensors"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    (tmp_path / "r").mkdir()
    with pytest.raises(SuiteFileError, match=r"decode\.safetensors: sha256 differs"):
        verify_outputs(suite, tmp_path / "r")
    path.unlink()
    with pytest.raises(SuiteFileError, match="missing"):
        verify_outputs(suite, tmp_path / "r")


# ---------------------------------------------------------------- the results directory


def test_results_may_not_be_the_suite_or_inside_it(made, tmp_path):
    root, _ = made
    for results in (root / "suite", root / "suite" / "inputs"):
        with pytest.raises(ValueError, match="is the suite directory or inside it"):
            verify_outputs(root / "suite", results)
        done = _cli("verify", root / "suite", results)
        assert done.returncode == EXIT_USAGE and "inside it" in done.stderr
    done = _cli("verify", root / "suite", tmp_path / "none")
    assert done.returncode == EXIT_USAGE and "is not a directory" in done.stderr


def test_expected_outputs_are_never_read_from_results(made, tmp_path):
    """A results file that is a link to the suite's expected file fails its case."""
    root, _ = made
    (tmp_path / "r").mkdir()
    link = tmp_path / "r" / "prefill.safetensors"
    link.symlink_to(root / "suite" / "expected" / "prefill.safetensors")
    by = {c.name: c for c in verify_outputs(root / "suite", tmp_path / "r").cases}
    assert "resolves into the suite directory" in by["prefill"].message


# ---------------------------------------------------------------- crafted results files


def _results_with(made, tmp_path, name, payload: bytes, suffix="safetensors"):
    root, _ = made
    shutil.copytree(root / "good", tmp_path / "r")
    (tmp_path / "r" / "prefill.safetensors").unlink()
    (tmp_path / "r" / f"prefill.{suffix}").write_bytes(payload)
    return root / "suite", tmp_path / "r"


def _st(header: dict, data: bytes = b"", n: int | None = None) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text) if n is None else n) + text + data


Q = {"dtype": "F32", "shape": [1, 4, 64, 8], "data_offsets": [0, 4 * 4 * 64 * 8]}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\x01\x02", "not a safetensors file"),
        (_st({}, n=2**60), "header length 1152921504606846976 exceeds the file"),
        (b"\x04\x00\x00\x00\x00\x00\x00\x00nope", "safetensors header is not JSON"),
        (_st([1, 2]), "header is not a JSON object"),
        (
            _st({"q_out": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
            "unsupported dtype",
        ),
        (_st({"q_out": {**Q, "data_offsets": [0, 8]}}, b"\0" * 8), "do not hold shape"),
        (_st({"q_out": Q}, b"\0" * 16), "do not hold shape"),
        (_st({"q_out": {**Q, "shape": [-1]}}), "non-negative integers"),
        (
            _st({"q_out": {**Q, "dtype": "I64", "data_offsets": [0, 8 * 2048]}}, bytes(16384)),
            "not a float dtype",
        ),
        (
            _st({"k_out": {**Q, "shape": [1, 2, 64, 8], "data_offsets": [0, 4096]}}, bytes(4096)),
            "results lack the array 'q_out'",
        ),
    ],
)  # fmt: skip
def test_crafted_safetensors_results_fail_the_case(made, tmp_path, payload, message):
    suite, results = _results_with(made, tmp_path, "prefill", payload)
    report = verify_outputs(suite, results)
    by = {c.name: c for c in report.cases}
    assert not by["prefill"].ok and message in by["prefill"].message, by["prefill"].message
    assert all(c.ok for c in report.cases if c.name != "prefill")
    if "header length" in message or "not JSON" in message:  # the CLI on two: exit 1
        done = _cli("verify", "--no-diagnosis", suite, results)
        assert done.returncode == EXIT_FAIL and "Traceback" not in done.stderr
        assert message in done.stdout


def _npz(members: dict) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, arr in members.items():
            with z.open(f"{name}.npy", "w") as f:
                np.lib.format.write_array(f, np.asanyarray(arr), allow_pickle=True)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"q_out": np.array([{"a": 1}], dtype=object)}, "has dtype object"),
        ({"q_out": np.asfortranarray(np.zeros((1, 4, 64, 8), np.float32))}, "Fortran order"),
        ({"q_out": np.zeros(3, np.float32), "k_out": np.zeros(3)}, "q_out has shape (3,)"),
        ({"q_out": np.zeros((1, 4, 64, 8), ">f4")}, "little-endian"),
    ],
)
def test_crafted_npz_results_fail_the_case(made, tmp_path, members, message):
    suite, results = _results_with(made, tmp_path, "prefill", _npz(members), "npz")
    by = {c.name: c for c in verify_outputs(suite, results).cases}
    assert not by["prefill"].ok and message in by["prefill"].message, by["prefill"].message


def test_an_npz_that_is_not_a_zip(made, tmp_path):
    suite, results = _results_with(made, tmp_path, "prefill", b"PK\x03\x04garbage", "npz")
    by = {c.name: c for c in verify_outputs(suite, results).cases}
    assert "not a readable .npz file" in by["prefill"].message


def test_an_ignored_1_gib_member_is_never_read(made, tmp_path):
    """The outputs plus a 1 GiB member (sparse files): in a safetensors file and in an .npz,
    verify passes in a process capped at 512 MiB."""
    root, _ = made
    shutil.copytree(root / "good", tmp_path / "r")
    exp, _ = read_safetensors(root / "suite" / "expected" / "prefill.safetensors")
    arrays = {o: exp[o].astype(np.float32) for o in ("q_out", "k_out")}
    header, off = {}, 0
    for name, a in arrays.items():
        header[name] = {
            "dtype": "F32",
            "shape": list(a.shape),
            "data_offsets": [off, off + a.nbytes],
        }
        off += a.nbytes
    header["junk"] = {"dtype": "F64", "shape": [GIB // 8], "data_offsets": [off, off + GIB]}
    path = tmp_path / "r" / "prefill.safetensors"
    path.write_bytes(_st(header, b"".join(a.tobytes() for a in arrays.values())))
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size + GIB)  # sparse: the file is 1 GiB long, on no disk
    dexp, _ = read_safetensors(root / "suite" / "expected" / "decode.safetensors")
    (tmp_path / "r" / "decode.safetensors").unlink()
    members = {f"{n}.npy": _npy_bytes(dexp[n].astype(np.float32)) for n in ("q_out", "k_out")}
    _sparse_zip(tmp_path / "r" / "decode.npz", members, "junk.npy", GIB)
    done = _cli("verify", root / "suite", tmp_path / "r")
    assert done.returncode == EXIT_PASS, done.stdout[-2000:] + done.stderr


def _npy_bytes(a) -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, a)
    return buf.getvalue()


def _sparse_zip(path, members: dict, junk: str, junk_size: int) -> None:
    """A stored zip of ``members`` (name -> bytes) and a ``junk`` member of ``junk_size``
    bytes left as a hole in a sparse file (its data is never written)."""
    entries = [(name, data, len(data)) for name, data in members.items()]
    entries.append((junk, None, junk_size))
    central, offset = b"", 0
    with open(path, "wb") as f:
        for name, data, size in entries:
            crc = zlib.crc32(data) if data is not None else 0
            raw = name.encode()
            local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, size, size,
                                len(raw), 0)  # fmt: skip
            f.write(local + raw)
            if data is not None:
                f.write(data)
            else:
                f.seek(size, os.SEEK_CUR)  # a hole
            central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, crc,
                                   size, size, len(raw), 0, 0, 0, 0, 0, offset) + raw  # fmt: skip
            offset += len(local) + len(raw) + size
        f.write(central)
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries),
                            len(central), offset, 0))  # fmt: skip


# ---------------------------------------------------------------- interrupted writes


def test_an_interrupted_rewrite_leaves_no_suite_that_verifies(made, tmp_path):
    """The old failure: a rewrite stopped after 3 cases left the old manifest beside new cases,
    and a correct kernel then failed. Now the old manifest goes first."""
    root, _ = made
    shutil.copytree(root / "suite", tmp_path / "s")

    def stop(done, total, name):
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_suite(SMALL, tmp_path / "s", seed=1, progress=stop)
    assert not (tmp_path / "s" / "manifest.json").exists()
    with pytest.raises(SuiteFileError, match=r"no manifest\.json"):
        verify_outputs(tmp_path / "s", root / "good")
    assert not list((tmp_path / "s").rglob("*.tmp"))  # no half-written file either


def test_a_killed_conformance_process_leaves_no_suite_that_verifies(made, tmp_path):
    root, _ = made
    cmd = [sys.executable, "-m", "refimpl._cli_conformance", "conformance", "-", "--out"]
    config = tmp_path / "config.json"
    config.write_text(json.dumps(SMALL))
    cmd[4] = str(config)
    proc = subprocess.Popen([*cmd, str(tmp_path / "s")], stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if line.startswith("conformance: 3/"):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=TIME_CAP)
    assert proc.returncode == -signal.SIGKILL
    assert (tmp_path / "s" / "inputs").is_dir() and not (tmp_path / "s" / "manifest.json").exists()
    done = _cli("verify", tmp_path / "s", root / "good")
    assert done.returncode == EXIT_SUITE and "no manifest.json" in done.stderr


def test_conformance_refuses_directories_that_are_not_a_suites(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "thesis.tex").write_text("x")
    done = _cli("conformance", tmp_path / "nope.json", "--out", tmp_path / "x")
    assert done.returncode == EXIT_USAGE and "no such file" in done.stderr
    config = tmp_path / "c.json"
    config.write_text(json.dumps(SMALL))
    done = _cli("conformance", config, "--out", tmp_path / "d")
    assert done.returncode == EXIT_USAGE and "thesis.tex" in done.stderr
    (tmp_path / "f").write_text("a file")
    done = _cli("conformance", config, "--out", tmp_path / "f")
    assert done.returncode == EXIT_USAGE and "is not a directory" in done.stderr
    assert (tmp_path / "d" / "thesis.tex").read_text() == "x"


# ---------------------------------------------------------------- coverage of the CLI options

#: Every option of the two subcommands, and the test above that feeds it hostile values.
COVERAGE = {
    "conformance": {
        "config": "test_conformance_refuses_directories_that_are_not_a_suites",
        "--out": "test_conformance_refuses_directories_that_are_not_a_suites",
        "--dtype": "test_conformance.py::test_write_suite_and_verify_argument_errors",
        "--seed": "test_an_interrupted_rewrite_leaves_no_suite_that_verifies",
        "--frequencies": "test_conformance.py::test_write_suite_and_verify_argument_errors",
        "--sweep": "test_conformance.py::test_sweep_is_behind_its_flag",
        "--quiet": "test_a_killed_conformance_process_leaves_no_suite_that_verifies",
    },
    "verify": {
        "suite": "test_malformed_manifests_are_refused_naming_file_and_key",
        "results": "test_crafted_safetensors_results_fail_the_case",
        "--json": "test_conformance.py::test_cli_prints_verdicts_before_the_diagnosis_and_json",
        "--no-diagnosis": "test_crafted_safetensors_results_fail_the_case",
    },
}


CONFIG_CASES = {
    "binary junk": (b"junk\x00\x01", (), "not valid JSON"),
    "a JSON list": (b"[1, 2]", (), "must hold a JSON object"),
    "a config nested too deep": (b"[" * 5000 + b"]" * 5000, (), "config"),
    "seed -1": (json.dumps(SMALL).encode(), ("--seed", "-1"), "seed"),
    "dtype bogus": (json.dumps(SMALL).encode(), ("--dtype", "x"), "invalid choice"),
    "frequencies bogus": (json.dumps(SMALL).encode(), ("--frequencies", "x"), "invalid choice"),
}


@pytest.mark.parametrize("name", sorted(CONFIG_CASES))
def test_conformance_cli_refuses_crafted_configs_and_options(tmp_path, name):
    data, options, words = CONFIG_CASES[name]
    (tmp_path / "config.json").write_bytes(data)
    done = _cli("conformance", tmp_path / "config.json", "--out", tmp_path / "s", *options)
    assert done.returncode == 2, (name, done.returncode, done.stderr[-500:])
    assert words in done.stderr and "Traceback" not in done.stderr, done.stderr[-500:]
    assert not (tmp_path / "s" / "manifest.json").exists()
    done = _cli("conformance", tmp_path / "none.json", "--out", tmp_path / "s")
    assert done.returncode == 2 and "no such file" in done.stderr


def test_every_cli_option_has_a_hostile_entry():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    parsers = {
        "conformance": _cli_conformance.add_parser(sub),
        "verify": _cli_conformance.add_verify_parser(sub),
    }
    for name, p in parsers.items():
        options = {
            (a.option_strings[0] if a.option_strings else a.dest)
            for a in p._actions
            if a.dest != "help"
        }
        assert options == set(COVERAGE[name]), name
