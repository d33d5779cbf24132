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


# --- the other modes: operator, call sequence, attention scale, dual chunk ---------------------

MODES = textwrap.dedent(
    """
    import numpy as np
    import refimpl

    def _half(x, c, s):
        h = x.shape[-1] // 2
        return np.concatenate([x[:, :h] * c - x[:, h:] * s, x[:, h:] * c + x[:, :h] * s], 1)

    def half_op(x, cos, sin):
        return _half(x, cos, sin)

    def flipped_op(x, cos, sin):
        return _half(x, cos, -sin)

    def gather_op(x, cos, sin, position_ids):
        return _half(x, cos[position_ids], sin[position_ids])

    def _by_length(length_of):
        seen = []

        def fn(x, positions, seq_len):
            seen.append(seq_len)
            spec = refimpl.rope_from_config("dynamic.json", seq_len=length_of(seq_len, seen))
            return refimpl.apply_rope(x, positions, inv_freq=spec.inv_freq)

        return fn

    dynamic_hf = _by_length(lambda n, seen: max(max(seen), 512))
    dynamic_fixed = _by_length(lambda n, seen: 4096)

    SCHED = refimpl.rope_schedule("llama4.json")

    def _scores(temperature):
        def fn(i, q, k, p):
            layer = SCHED[i]
            if layer.spec is not None:
                q, k = layer.spec.apply(q, p), layer.spec.apply(k, p)
            qs = layer.query_scaling
            if qs is not None and temperature:
                q = q * qs(p)[:, None]
            soft = qs.softmax_scale if qs is not None else 1.0
            return q @ k.T * soft / np.sqrt(q.shape[-1])

        return fn

    scores_ok, scores_no_temperature = _scores(True), _scores(False)

    def _dca(chunk_size, local_size):
        rec = refimpl.DualChunkAttention(chunk_size=chunk_size, local_size=local_size)
        return lambda q, k, p: refimpl.dual_chunk_attention_scores(q, k, p, rec).scores

    dca_ok, dca_wrong_local = _dca(24, 8), _dca(24, 4)
    """
)


@pytest.fixture
def modes_dir(tmp_path):
    import json

    (tmp_path / "my_modes.py").write_text(MODES)
    (tmp_path / "dynamic.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 32, "num_attention_heads": 2, "head_dim": 16,
        "max_position_embeddings": 512, "rope_theta": 10000.0,
        "rope_scaling": {"rope_type": "dynamic", "factor": 4.0},
    }))  # fmt: skip
    (tmp_path / "llama4.json").write_text(json.dumps({
        "model_type": "llama4_text", "head_dim": 16, "num_hidden_layers": 4,
        "hidden_size": 64, "num_attention_heads": 4,
    }))  # fmt: skip
    (tmp_path / "dca.json").write_text(json.dumps({
        "dual_chunk_attention_config": {"chunk_size": 24, "local_size": 8},
    }))  # fmt: skip
    return tmp_path


def test_operator_mode(modes_dir):
    ok = run(["my_modes:half_op", "--operator", "--dim", "16", "--pairing", "half"], modes_dir)
    assert ok.returncode == 0 and ok.stdout.startswith("RoPE check: PASS"), ok.stdout + ok.stderr
    bad = run(["my_modes:flipped_op", "--operator", "--dim", "16"], modes_dir)
    assert bad.returncode == 1 and "wrong way" in bad.stdout
    gather = ["my_modes:gather_op", "--operator", "--position-ids", "--dim", "16"]
    assert run(gather, modes_dir).returncode == 0


def test_calls_mode_and_policies(modes_dir):
    calls = ["--config", "dynamic.json", "--calls", "100,0:2000,1500"]
    ok = run(["my_modes:dynamic_hf", *calls], modes_dir)
    assert ok.returncode == 0 and "every call matches" in ok.stdout, ok.stdout + ok.stderr
    bad = run(["my_modes:dynamic_fixed", *calls], modes_dir)
    assert bad.returncode == 1 and "policy='vllm', max_model_len=4096" in bad.stdout
    vllm = ["--policy", "vllm", "--max-model-len", "4096"]
    assert run(["my_modes:dynamic_fixed", *calls, *vllm], modes_dir).returncode == 0


def test_attention_scale_mode(modes_dir):
    args = ["--attention-scale", "--config", "llama4.json", "--positions", "0,1,5,8191,9000"]
    ok = run(["my_modes:scores_ok", *args], modes_dir)
    assert ok.returncode == 0 and "PASS" in ok.stdout, ok.stdout + ok.stderr
    bad = run(["my_modes:scores_no_temperature", *args], modes_dir)
    assert bad.returncode == 1 and "query temperature" in bad.stdout


def test_dual_chunk_mode(modes_dir):
    ok = run(["my_modes:dca_ok", "--dual-chunk", "--config", "dca.json", "--dim", "16"], modes_dir)
    assert ok.returncode == 0 and "PASS" in ok.stdout, ok.stdout + ok.stderr
    args = ["--dual-chunk", "--chunk-size", "24", "--local-size", "8", "--dim", "16"]
    bad = run(["my_modes:dca_wrong_local", *args], modes_dir)
    assert bad.returncode == 1 and "local window is local_size = 4" in bad.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["my_modes:half_op", "--dim", "16", "--tables", "full"], "--tables is used only with"),
        (["my_modes:half_op", "--operator"], "--operator needs --dim"),
        (["my_modes:dynamic_hf", "--calls", "100"], "--calls needs --config"),
        (["my_modes:dynamic_hf", "--config", "dynamic.json", "--calls", "10:5"], "START < STOP"),
        (["my_modes:dca_ok", "--dual-chunk", "--config", "dynamic.json"], "no dual_chunk_"),
    ],
)
def test_mode_usage_errors_are_one_line_exit_two(modes_dir, args, words):
    _one_line_exit_two(run(args, modes_dir), words)
