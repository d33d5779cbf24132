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


def _one_line_exit_two(out, *words):
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert "Traceback" not in out.stderr
    for w in words:
        assert w in lines[0], out.stderr


def test_unimportable_targets_are_one_line_exit_two(impl_dir):
    (impl_dir / "x.json").write_text("{}")
    (impl_dir / "broken_syntax.py").write_text("def f(x, p:\n    return x\n")
    (impl_dir / "raises_on_import.py").write_text("raise RuntimeError('no GPU here')\n")
    (impl_dir / "exits_on_import.py").write_text("import sys\nsys.exit(3)\n")
    cases = [
        ([f"{impl_dir / 'x.json'}:fn"], ("must be a .py file",)),
        (["broken_syntax:f"], ("SyntaxError",)),
        ([f"{impl_dir / 'broken_syntax.py'}:f"], ("SyntaxError",)),
        (["raises_on_import:f"], ("RuntimeError: no GPU here",)),
        ([f"{impl_dir / 'raises_on_import.py'}:f"], ("RuntimeError: no GPU here",)),
        (["exits_on_import:f"], ("SystemExit",)),
    ]
    for target, words in cases:
        _one_line_exit_two(run([*target, "--dim", "16"], impl_dir), *words)


def test_fn_raising_and_bad_config_are_one_line_exit_two(impl_dir):
    (impl_dir / "bad_fn.py").write_text("def f(x, p):\n    raise KeyError('cos_cached')\n")
    _one_line_exit_two(run(["bad_fn:f", "--dim", "16"], impl_dir), "bad_fn:f raised KeyError")
    (impl_dir / "cfg.json").write_text('{"rope_theta": "ten thousand"')
    _one_line_exit_two(run(["my_rope:good", "--dim", "16", "--config", "cfg.json"], impl_dir))


def test_dim_over_the_limit_refused_up_front(impl_dir):
    from refimpl.check import MAX_CHECK_DIM

    _one_line_exit_two(run(["my_rope:good", "--dim", "4096"], impl_dir), str(MAX_CHECK_DIM))


def test_torch_in_the_working_directory_cannot_shadow_the_peer(impl_dir):
    pytest.importorskip("torch", reason="torch not installed (make venv-torch)")
    marker = impl_dir / "shadow_ran"
    (impl_dir / "torch.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\nraise RuntimeError('shadow torch imported')\n"
    )
    (impl_dir / "tensor_rope.py").write_text(
        textwrap.dedent(
            """
            import refimpl

            def f(x, positions):  # needs tensors: NumPy arrays have no .clone()
                x = x.clone()
                return refimpl.apply_rope(x.numpy(), positions.numpy())
            """
        )
    )
    out = run(["tensor_rope:f", "--dim", "16"], impl_dir)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("RoPE check: PASS") and not marker.exists()
