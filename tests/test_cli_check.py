"""`python -m refimpl check MODULE:FUNCTION --dim D ...`: prints the report, exit status 0 on a
passing verdict, 1 on a failing one, 2 on a usage error."""

import subprocess
import sys
import textwrap

import pytest

from refimpl import _cli_check

MODULE = textwrap.dedent(
    """
    import numpy as np
    import refimpl

    def good(x, positions):
        return refimpl.apply_rope(x, positions)

    def flipped(x, positions):
        return refimpl.apply_rope(x, -np.asarray(positions))

    def interleaved(x, positions):
        return refimpl.apply_rope(x, positions, pairing="interleaved")

    def yarn8(x, positions):  # YaRN factor 8 from 4096 positions, as the config below
        spec = refimpl.rope_from_config(CONFIG)
        return spec.apply(x, positions)

    def yarn8_no_attention_factor(x, positions):
        spec = refimpl.rope_from_config(CONFIG)
        return refimpl.apply_rope(x, positions, inv_freq=spec.inv_freq)

    CONFIG = {
        "hidden_size": 128, "num_attention_heads": 2, "head_dim": 64,
        "max_position_embeddings": 32768, "rope_theta": 10000.0,
        "rope_scaling": {"rope_type": "yarn", "factor": 8.0,
                         "original_max_position_embeddings": 4096},
    }

    not_a_function = 3
    """
)


@pytest.fixture
def impl_dir(tmp_path):
    (tmp_path / "my_rope.py").write_text(MODULE)
    return tmp_path


def run(args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "refimpl", "check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_passing_implementation_exits_zero(impl_dir):
    out = run(["my_rope:good", "--dim", "32", "--base", "10000"], impl_dir)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("RoPE check: PASS")
    assert "pairing            half" in out.stdout


def test_failing_implementation_exits_one_with_the_finding(impl_dir):
    out = run(["my_rope:flipped", "--dim", "32"], impl_dir)
    assert out.returncode == 1
    assert "RoPE check: FAIL" in out.stdout and "wrong way" in out.stdout


def test_file_path_and_pairing(impl_dir):
    path = str(impl_dir / "my_rope.py")
    out = run([f"{path}:interleaved", "--dim", "16", "--pairing", "half"], impl_dir)
    assert out.returncode == 1
    assert "interleaved_to_half_weights" in out.stdout
    ok = run([f"{path}:interleaved", "--dim", "16", "--pairing", "interleaved"], impl_dir)
    assert ok.returncode == 0


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("my_rope", "target must be MODULE:FUNCTION"),
        ("no_such_module_xyz:f", "cannot import module 'no_such_module_xyz'"),
        ("my_rope:missing", "has no attribute 'missing'"),
        ("my_rope:not_a_function", "is not callable"),
        ("./nope.py:f", "does not exist"),
    ],
)
def test_bad_targets_exit_two(impl_dir, target, message):
    out = run([target, "--dim", "16"], impl_dir)
    assert out.returncode == 2
    assert message in out.stderr


def test_config_gives_the_expected_configuration(impl_dir):
    import json

    config = {
        "hidden_size": 128,
        "num_attention_heads": 2,
        "head_dim": 64,
        "max_position_embeddings": 32768,
        "rope_theta": 10000.0,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 8.0,
            "original_max_position_embeddings": 4096,
        },
    }
    (impl_dir / "config.json").write_text(json.dumps(config))
    ok = run(["my_rope:yarn8", "--dim", "64", "--config", "config.json"], impl_dir)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "applied: once" in ok.stdout
    bad = run(
        ["my_rope:yarn8_no_attention_factor", "--dim", "64", "--config", "config.json"], impl_dir
    )
    assert bad.returncode == 1 and "is missing" in bad.stdout
    plain = run(["my_rope:good", "--dim", "64", "--config", "config.json"], impl_dir)
    assert plain.returncode == 1 and "scaling method was not applied" in plain.stdout


def test_bad_dim_exits_two(impl_dir):
    out = run(["my_rope:good", "--dim", "7"], impl_dir)
    assert out.returncode == 2 and "dim must be even" in out.stderr


def test_missing_dim_is_a_usage_error(impl_dir):
    out = run(["my_rope:good"], impl_dir)
    assert out.returncode == 2 and "--dim" in out.stderr


def test_load_function_in_process(impl_dir, monkeypatch):
    monkeypatch.chdir(impl_dir)
    fn = _cli_check.load_function(str(impl_dir / "my_rope.py") + ":good")
    assert callable(fn)
    with pytest.raises(ValueError, match="target must be MODULE:FUNCTION"):
        _cli_check.load_function(":good")
