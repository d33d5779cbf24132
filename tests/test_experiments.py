"""Tests of the toy-model experiments: gradients, training, reproducibility, result files."""

import json
import pathlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.experiments import (
    ModelConfig,
    TrainConfig,
    accuracy,
    cross_entropy,
    forward,
    gradient_check,
    init_params,
    make_batch,
    make_encoding,
    train,
)
from refimpl.experiments.encodings import ALiBi, RoPE, T5Bias, XPos
from refimpl.experiments.results import RESULT_KEYS, load_result, validate_result

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
CFG = ModelConfig(vocab=11, d_model=32, n_heads=2, n_layers=2)  # head width 16
GRAD_TOL = 1e-6  # central differences with eps=1e-5 in float64 agree to ~5e-8


def _encoding(name):
    if name == "xpos":
        return XPos(16, scale_base=8.0)  # a short scale, so that the decay matters over 9 tokens
    if name == "t5":
        return T5Bias(num_buckets=6, max_distance=8)  # exact and log buckets within 9 tokens
    return make_encoding(name, head_dim=16, max_len=12)


ALL = ["nope", "learned", "sinusoidal", "rope", "alibi", "t5", "xpos"]


@pytest.mark.parametrize("name", ALL)
def test_gradients_match_finite_differences(name):
    enc = _encoding(name)
    rng = np.random.default_rng(1)
    params = init_params(CFG, enc, rng)
    if "pe.t5" in params:  # a non-zero table, so that the bias path is exercised
        params["pe.t5"] = rng.normal(size=params["pe.t5"].shape)
    tokens, targets = make_batch("fetch", rng, batch=3, seq_len=9, vocab=CFG.vocab, offset=2)
    assert gradient_check(params, tokens, targets, CFG, enc, n_probe=4) < GRAD_TOL


def test_gradient_check_catches_a_wrong_rope_backward():
    class WrongSign(RoPE):  # rotates the gradient by +m instead of -m
        def rotate_backward(self, dq, dk, positions):
            return super().rotate_backward(dq, dk, -np.asarray(positions))

    enc = WrongSign(16)
    rng = np.random.default_rng(1)
    params = init_params(CFG, enc, rng)
    tokens, targets = make_batch("fetch", rng, batch=3, seq_len=9, vocab=CFG.vocab, offset=2)
    assert gradient_check(params, tokens, targets, CFG, enc, n_probe=4) > 1e-2


@given(
    st.integers(min_value=1, max_value=12),
    st.floats(min_value=2.0, max_value=1e6),
    st.integers(min_value=0, max_value=2**31 - 1),
)
def test_rope_backward_is_the_adjoint_of_the_forward(seq, base, seed):
    # <R q, g> = <q, R^T g>: the backward rotation by -m is the transpose of the forward one
    rng = np.random.default_rng(seed)
    enc = RoPE(8, base=base)
    q, k, gq, gk = (rng.normal(size=(2, seq, 8)) for _ in range(4))
    pos = np.arange(seq, dtype=np.float64)
    rq, rk = enc.rotate(q, k, pos)
    bq, bk = enc.rotate_backward(gq, gk, pos)
    np.testing.assert_allclose(np.sum(rq * gq), np.sum(q * bq), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.sum(rk * gk), np.sum(k * bk), rtol=1e-12, atol=1e-12)


def test_rope_scores_depend_only_on_relative_position():
    rng = np.random.default_rng(0)
    enc = RoPE(16)
    q, k = rng.normal(size=(1, 1, 16)), rng.normal(size=(1, 1, 16))
    s = []
    for shift in (0.0, 5.0, 40.0):
        rq, _ = enc.rotate(q, q, np.array([shift + 7.0]))
        _, rk = enc.rotate(k, k, np.array([shift + 3.0]))
        s.append(float(np.sum(rq * rk)))
    np.testing.assert_allclose(s, s[0], rtol=1e-12)


def test_alibi_plugin_penalises_distance_linearly_with_the_real_slopes():
    b = ALiBi().bias({}, 5, 4)  # (H, T, T)
    m = 2.0 ** (-8.0 * np.arange(1, 5) / 4)  # slopes of 4 heads, written out
    for h in range(4):
        for i in range(5):
            for j in range(5):
                want = -m[h] * (i - j) if j <= i else -np.inf
                assert b[h, i, j] == want


def test_t5_plugin_scatter_is_the_adjoint_of_its_gather():
    # <bias(table), G> = <table, bias_grad(G)> for every table and upstream gradient G
    rng = np.random.default_rng(0)
    enc = T5Bias(num_buckets=6, max_distance=8)
    table, g = rng.normal(size=(6, 3)), rng.normal(size=(3, 11, 11))
    lhs = np.sum(enc.bias({"pe.t5": table}, 11, 3) * g)
    rhs = np.sum(table * enc.bias_grad({"pe.t5": table}, g)["pe.t5"])
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)
    # past distances 0, 1, 2 have their own buckets; the key after the query shares bucket 0
    bk = enc.buckets(11)
    assert bk[5, 5] == 0 and bk[5, 4] == 1 and bk[5, 3] == 2 and bk[5, 6] == 0


@given(st.integers(min_value=1, max_value=12), st.integers(min_value=0, max_value=2**31 - 1))
def test_xpos_plugin_backward_is_the_adjoint_of_its_forward(seq, seed):
    rng = np.random.default_rng(seed)
    enc = XPos(8, scale_base=4.0)
    q, k, gq, gk = (rng.normal(size=(2, seq, 8)) for _ in range(4))
    pos = np.arange(seq, dtype=np.float64)
    rq, rk = enc.rotate(q, k, pos)
    bq, bk = enc.rotate_backward(gq, gk, pos)
    np.testing.assert_allclose(np.sum(rq * gq), np.sum(q * bq), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.sum(rk * gk), np.sum(k * bk), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    ("method", "kwargs"),
    [
        ("linear", {"factor": 4.0}),
        ("ntk", {"factor": 4.0}),
        ("dynamic", {"factor": 1.0, "max_position": 16}),
        ("yarn", {"factor": 4.0, "original_max_position": 16}),
    ],
)
def test_rope_with_scaling_uses_the_registry_frequencies(method, kwargs):
    from refimpl.scaling import scale_frequencies

    enc = RoPE(16, base=100.0).with_scaling(method, **kwargs)
    f, s = enc._freqs(64)
    extra = {"seq_len": 64} if method == "dynamic" else {}
    want = scale_frequencies(method, dim=16, base=100.0, **kwargs, **extra)
    np.testing.assert_array_equal(f, want.inv_freq)
    assert s == want.attention_scaling
    if method == "yarn":
        assert s > 1.0
        off = RoPE(16, base=100.0).with_scaling(method, attention_scaling=1.0, **kwargs)
        assert off._freqs(64)[1] == 1.0
        np.testing.assert_array_equal(off._freqs(64)[0], want.inv_freq)
    if method == "dynamic":  # recomputed for every length: l = 32 gives the base 100 * 2^(8/7)
        np.testing.assert_allclose(enc._freqs(32)[0][1], (100.0 * 2 ** (16 / 14)) ** (-2 / 16))


def test_short_training_reduces_the_loss_by_the_stated_margin():
    # fetch-3-back with RoPE: the loss starts near ln(64) = 4.16 (chance) and must fall to
    # below a tenth of it, 0.4, in 200 Adam steps (measured: about 1e-3)
    cfg = ModelConfig()
    enc = make_encoding("rope", head_dim=cfg.head_dim, max_len=16)
    tc = TrainConfig(task="fetch", seq_len=12, steps=200, batch=16, seed=0, lr=1e-2)
    _, history = train(cfg, enc, tc, log_every=20)
    first, last = history[0][1], history[-1][1]
    assert first > 3.5
    assert last < 0.1 * np.log(cfg.vocab)


def test_a_tiny_run_is_bit_identical_twice():
    cfg = ModelConfig(vocab=16, d_model=16, n_heads=1, n_layers=1)
    enc = make_encoding("learned", head_dim=16, max_len=8)
    tc = TrainConfig(task="fetch", seq_len=8, steps=15, batch=4, seed=3)
    p1, h1 = train(cfg, enc, tc, log_every=5)
    p2, h2 = train(cfg, enc, tc, log_every=5)
    assert h1 == h2
    for key in p1:
        assert np.array_equal(p1[key], p2[key]), key


@pytest.mark.parametrize("task", ["fetch", "induction", "index"])
def test_task_targets_follow_their_definition(task):
    rng = np.random.default_rng(0)
    tokens, targets = make_batch(task, rng, batch=5, seq_len=20, vocab=32)
    for b in range(5):
        for t in range(20):
            if targets[b, t] < 0:
                continue
            if task == "fetch":
                assert targets[b, t] == tokens[b, t - 3]
            elif task == "index":
                assert t > 2 and targets[b, t] == tokens[b, 2]
            else:  # the token after the previous occurrence of the current token
                prev = [s for s in range(t) if tokens[b, s] == tokens[b, t]]
                assert len(prev) >= 1 and targets[b, t] == tokens[b, prev[-1] + 1]
                assert len(set(tokens[b, : prev[-1] + 1])) == prev[-1] + 1 or len(prev) > 1


def test_accuracy_is_exact_match_over_scored_positions():
    logits = np.zeros((1, 4, 3))
    logits[0, [0, 1, 2, 3], [1, 2, 0, 0]] = 1.0
    targets = np.array([[1, 0, -1, 0]])
    assert accuracy(logits, targets) == pytest.approx(2 / 3)
    assert accuracy(logits, targets, start=2) == 1.0


def test_cross_entropy_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 5))
    targets = np.array([[0, 4, -1], [2, -1, 1]])
    _, g = cross_entropy(logits, targets)
    eps = 1e-6
    for idx in [(0, 0, 0), (0, 1, 3), (1, 2, 1), (0, 2, 2)]:
        lp, lm = logits.copy(), logits.copy()
        lp[idx] += eps
        lm[idx] -= eps
        fd = (cross_entropy(lp, targets)[0] - cross_entropy(lm, targets)[0]) / (2 * eps)
        assert g[idx] == pytest.approx(fd, abs=1e-8)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: make_batch("copy", np.random.default_rng(0), batch=1, seq_len=8, vocab=4),
            "task must be one of",
        ),
        (
            lambda: make_batch("fetch", np.random.default_rng(0), batch=1, seq_len=3, vocab=4),
            "offset must be < seq_len",
        ),
        (
            lambda: make_batch("induction", np.random.default_rng(0), batch=1, seq_len=40, vocab=4),
            "seq_len // 2 <= vocab",
        ),
        (
            lambda: make_batch("index", np.random.default_rng(0), batch=1, seq_len=3, vocab=4),
            "index must be < seq_len - 1",
        ),
        (
            lambda: make_batch("fetch", np.random.default_rng(0), batch=0, seq_len=8, vocab=4),
            "batch must be positive",
        ),
        (lambda: ModelConfig(d_model=30, n_heads=4), "d_model must be a multiple of n_heads"),
        (lambda: make_encoding("fourier", head_dim=16, max_len=8), "name must be one of"),
        (
            lambda: cross_entropy(np.zeros((1, 2, 3)), np.array([[-1, -1]])),
            "at least one scored position",
        ),
        (lambda: accuracy(np.zeros((1, 2, 3)), np.array([[0, 1]]), start=2), "no scored positions"),
        (lambda: RoPE(16).with_frequencies(np.ones(3)), "inv_freq must have shape"),
        (lambda: RoPE(15), "head_dim must be even"),
        (lambda: TrainConfig(lr=0.0), "lr must be positive"),
    ],
)
def test_bad_input_raises_with_a_message(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_forward_rejects_tokens_outside_the_vocabulary():
    enc = make_encoding("nope", head_dim=16, max_len=8)
    params = init_params(CFG, enc, np.random.default_rng(0))
    with pytest.raises(ValueError, match="tokens must be integers in"):
        forward(params, np.array([[0, 11]]), CFG, enc)
    with pytest.raises(ValueError, match="tokens must have shape"):
        forward(params, np.array([0, 1]), CFG, enc)


def test_learned_table_refuses_lengths_beyond_its_size():
    enc = make_encoding("learned", head_dim=16, max_len=8)
    params = init_params(CFG, enc, np.random.default_rng(0))
    with pytest.raises(ValueError, match="seq_len must be <= max_len"):
        forward(params, np.zeros((1, 9), dtype=int), CFG, enc)


RESULT_FILES = sorted(RESULTS.glob("*.json"))


def test_every_experiment_has_a_committed_result_file():
    names = {p.stem for p in RESULT_FILES}
    assert set(RESULT_KEYS) <= names, f"missing result files: {set(RESULT_KEYS) - names}"


@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda p: p.name)
def test_result_files_match_their_schema(path):
    doc = load_result(path)
    assert doc["experiment"] == path.stem
    assert (ROOT / "experiments" / f"{path.stem}.py").exists()
    assert (
        doc["command"].endswith(f"experiments/{path.stem}.py")
        or f"{path.stem}.py" in doc["command"]
    )
    assert doc["pending"] == [], "every part of every experiment has real results"
    for row in doc["results"]:
        for ev in row.get("eval", []):
            assert 0.0 <= ev["acc"] <= 1.0


def test_validator_rejects_a_row_without_its_keys():
    doc = json.loads((RESULTS / "rope_base.json").read_text()) if RESULT_FILES else None
    if doc is None:
        pytest.skip("no result files yet")
    doc["results"] = [{"task": "fetch"}]
    with pytest.raises(ValueError, match="missing key 'base'"):
        validate_result(doc)
