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
from refimpl.experiments.analysis import (
    attention_by_distance,
    long_term_decay,
    position_probe_r2,
)
from refimpl.experiments.encodings import (
    ALiBi,
    Hybrid,
    NoPE,
    PartialRoPE,
    ProportionalRoPE,
    RoPE,
    Sinusoidal,
    T5Bias,
    XPos,
)
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
    _assert_adjoint(RoPE(8, base=base), seq, seed)


def _assert_adjoint(enc, seq: int, seed: int) -> None:
    # <R q, g> = <q, R^T g>: the backward rotation by -m is the transpose of the forward one
    rng = np.random.default_rng(seed)
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


# ---------------------------------------------------------------- partial rotary, p-RoPE, hybrid

VARIANT_ENCODINGS = {
    "partial": lambda: PartialRoPE(16, 8),
    "p-rope": lambda: ProportionalRoPE(16, 0.5),
    "hybrid-rope-nope": lambda: Hybrid([RoPE(16), NoPE()]),
    "hybrid-nope-rope": lambda: Hybrid([NoPE(), RoPE(16)]),
    "hybrid-p-rope-alibi": lambda: Hybrid([ProportionalRoPE(16, 0.25), ALiBi()]),
    "hybrid-xpos-partial": lambda: Hybrid([XPos(16, scale_base=8.0), PartialRoPE(16, 4)]),
}


@pytest.mark.parametrize("name", sorted(VARIANT_ENCODINGS))
def test_variant_gradients_match_finite_differences(name):
    enc = VARIANT_ENCODINGS[name]()
    rng = np.random.default_rng(2)
    params = init_params(CFG, enc, rng)
    tokens, targets = make_batch("fetch", rng, batch=3, seq_len=9, vocab=CFG.vocab, offset=2)
    assert gradient_check(params, tokens, targets, CFG, enc, n_probe=4) < GRAD_TOL


def test_gradient_check_catches_a_wrong_backward_in_one_layer_of_a_hybrid():
    class WrongSign(ProportionalRoPE):  # rotates the gradient by +m instead of -m
        def rotate_backward(self, dq, dk, positions):
            return super().rotate_backward(dq, dk, -np.asarray(positions))

    enc = Hybrid([NoPE(), WrongSign(16, 0.5)])
    rng = np.random.default_rng(1)
    params = init_params(CFG, enc, rng)
    tokens, targets = make_batch("fetch", rng, batch=3, seq_len=9, vocab=CFG.vocab, offset=2)
    assert gradient_check(params, tokens, targets, CFG, enc, n_probe=4) > 1e-2


@given(
    st.integers(min_value=1, max_value=12),
    st.sampled_from([("partial", 2), ("partial", 4), ("partial", 8), ("p-rope", 0.0)])
    | st.tuples(st.just("p-rope"), st.floats(min_value=0.0, max_value=1.0)),
    st.integers(min_value=0, max_value=2**31 - 1),
)
def test_variant_backward_is_the_adjoint_of_the_forward(seq, variant, seed):
    kind, arg = variant
    enc = PartialRoPE(8, arg, base=100.0) if kind == "partial" else ProportionalRoPE(8, arg)
    _assert_adjoint(enc, seq, seed)


def test_partial_rotary_rotates_the_leading_features_at_its_own_width():
    # features [0, r) are a RoPE of width r (theta_i = b^(-2i/r)); the rest pass through
    from refimpl.rotary import apply_rope

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 2, 7, 16))
    pos = np.arange(7, dtype=np.float64)
    rx, _ = PartialRoPE(16, 4, base=100.0).rotate(x, x, pos)
    assert np.array_equal(rx[..., 4:], x[..., 4:])
    want = apply_rope(x[..., :4], pos, base=100.0)  # its own width: theta = (1, 100^(-1/2))
    np.testing.assert_array_equal(rx[..., :4], want)
    np.testing.assert_allclose(PartialRoPE(16, 4, base=100.0).training_inv_freq(), [1.0, 0.1])


def test_p_rope_keeps_the_highest_frequencies_of_the_whole_head():
    from refimpl.rotary import inv_freq
    from refimpl.scaling import ROPE_SCALINGS

    enc = ProportionalRoPE(16, 0.25)
    f = enc.training_inv_freq()
    want = ROPE_SCALINGS["proportional"](dim=16, base=1e4, partial_rotary_factor=0.25).inv_freq
    np.testing.assert_array_equal(f, want)
    np.testing.assert_array_equal(f[:2], inv_freq(16, 1e4)[:2])  # exponent over the head
    assert enc.rotated_pairs == 2 and np.all(f[2:] == 0.0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 2, 9, 16))
    rx, _ = enc.rotate(x, x, np.arange(9, dtype=np.float64))
    still = [2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15]  # half pairing: pairs (i, i + 8), i >= 2
    assert np.array_equal(rx[..., still], x[..., still])
    assert not np.allclose(rx[..., [0, 1, 8, 9]], x[..., [0, 1, 8, 9]])
    # linear scaling divides the rotating pairs only, as the record's factor does
    f4, s = enc.with_scaling("linear", factor=4.0)._freqs(32)
    np.testing.assert_array_equal(
        f4,
        ROPE_SCALINGS["proportional"](
            dim=16, base=1e4, partial_rotary_factor=0.25, factor=4.0
        ).inv_freq,
    )
    assert s == 1.0


@pytest.mark.parametrize(
    "enc", [PartialRoPE(16, 8), ProportionalRoPE(16, 0.5)], ids=lambda enc: type(enc).__name__
)
def test_variant_scores_depend_only_on_relative_position(enc):
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(1, 1, 16)), rng.normal(size=(1, 1, 16))
    s = []
    for shift in (0.0, 5.0, 40.0):
        rq, _ = enc.rotate(q, q, np.array([shift + 7.0]))
        _, rk = enc.rotate(k, k, np.array([shift + 3.0]))
        s.append(float(np.sum(rq * rk)))
    np.testing.assert_allclose(s, s[0], rtol=1e-12)


def _first_layer_attention(enc, params, tokens, cfg=CFG):
    return forward(params, tokens, cfg, enc)[1]["attn"]


def test_hybrid_layers_use_their_own_encoding():
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, CFG.vocab, size=(2, 10))
    params = init_params(CFG, NoPE(), rng)
    rope, nope = RoPE(16), NoPE()
    same = forward(params, tokens, CFG, Hybrid([rope, rope]))[0]
    assert np.array_equal(same, forward(params, tokens, CFG, rope)[0])
    assert np.array_equal(
        forward(params, tokens, CFG, Hybrid([nope, nope]))[0],
        forward(params, tokens, CFG, nope)[0],
    )
    for first, second in ((rope, nope), (nope, rope)):
        hyb = _first_layer_attention(Hybrid([first, second]), params, tokens)
        plain = _first_layer_attention(first, params, tokens)
        assert np.array_equal(hyb[0], plain[0])  # layer 0 is the first encoding's
        assert not np.allclose(hyb[1], plain[1])  # layer 1 is the other one's


def test_make_encoding_builds_the_variants():
    enc = make_encoding("hybrid", head_dim=16, max_len=8, layers=("rope", "nope"), base=100.0)
    assert isinstance(enc, Hybrid) and enc.n_layers == 2
    assert enc.describe()["layers"] == [
        {"name": "rope", "base": 100.0, "scaling": "default", "scaling_kwargs": {}},
        {"name": "nope"},
    ]
    assert (
        make_encoding("partial", head_dim=16, max_len=8, rotary_dim=4).describe()["rotary_dim"] == 4
    )
    assert make_encoding("p-rope", head_dim=16, max_len=8, proportion=0.5).rotated_pairs == 4


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: Hybrid([RoPE(16), T5Bias()]), "no embedding and no trainable parameters"),
        (lambda: Hybrid([Sinusoidal(), NoPE()]), "no embedding and no trainable parameters"),
        (lambda: Hybrid([NoPE(), Hybrid([NoPE()])]), "other than Hybrid"),
        (lambda: Hybrid([]), "one encoding per layer"),
        (lambda: make_encoding("hybrid", head_dim=16, max_len=8), "needs layers="),
        (lambda: make_encoding("hybrid", head_dim=16, max_len=8, layers="rope"), "sequence"),
        (lambda: ProportionalRoPE(16, 1.5), "proportion must be in"),
        (lambda: ProportionalRoPE(16, -0.1), "proportion must be"),
        (lambda: PartialRoPE(16, 32), "rotary_dim must be <= head_dim"),
        (lambda: PartialRoPE(16, 5), "rotary_dim must be even"),
        (
            lambda: PartialRoPE(16, 4).with_frequencies(np.ones(8)),
            r"inv_freq must have shape \(2,\)",
        ),
    ],
)
def test_variant_bad_input_raises_with_a_message(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_forward_rejects_a_hybrid_of_the_wrong_depth():
    enc = Hybrid([RoPE(16), NoPE(), RoPE(16)])
    params = init_params(CFG, enc, np.random.default_rng(0))
    with pytest.raises(ValueError, match="encoding has 3 layers but the model has n_layers=2"):
        forward(params, np.zeros((1, 4), dtype=int), CFG, enc)


# ---------------------------------------------------------------- analysis


def test_attention_by_distance_reads_the_diagonals():
    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 8, 8))
    a = np.tril(a)
    a /= a.sum(-1, keepdims=True)
    prof, uniform = attention_by_distance(a, 3)
    for h in range(3):
        for d in range(4):
            want = np.mean([a[b, h, i, i - d] for b in range(2) for i in range(3, 8)])
            assert prof[h, d] == pytest.approx(want, rel=1e-12)
    assert uniform == pytest.approx(np.mean([1 / (i + 1) for i in range(3, 8)]))
    onehot = np.zeros((1, 1, 8, 8))
    onehot[0, 0, np.arange(8), np.maximum(np.arange(8) - 2, 0)] = 1.0  # attends 2 back
    p1, _ = attention_by_distance(onehot, 4)
    np.testing.assert_array_equal(p1[0], [0, 0, 1, 0, 0])


def test_position_probe_finds_a_linear_code_and_not_noise():
    rng = np.random.default_rng(0)
    pos = np.tile(np.arange(16.0), 40)
    basis = rng.normal(size=(2, 32))
    feats = np.outer(pos, basis[0]) + np.outer(1 / (pos + 1), basis[1])  # linear in pos
    noise = rng.normal(size=feats.shape)
    assert position_probe_r2(feats, pos, feats + 1e-9 * noise, pos) > 1 - 1e-9
    assert position_probe_r2(noise[:320], pos[:320], noise[320:], pos[320:]) < 0.2
    with pytest.raises(ValueError, match="test_y must not be constant"):
        position_probe_r2(feats, pos, feats, np.zeros_like(pos))
    with pytest.raises(ValueError, match="train_x must be"):
        position_probe_r2(feats[:, 0], pos, feats, pos)


def test_long_term_decay_is_the_bound_factor_and_the_zero_pairs_never_decay():
    from refimpl.scaling import proportional_frequencies

    theta = proportional_frequencies(dim=16, base=1e4, partial_rotary_factor=0.5).inv_freq
    r = np.array([0.0, 1.0, 7.0, 300.0])
    out = long_term_decay(theta, r)
    for j, dist in enumerate(r):  # the loop form of (1/n) sum_j |S_j| and (1/n) sum cos
        partial = [sum(np.exp(1j * dist * t) for t in theta[:m]) for m in range(1, 9)]
        assert out["bound"][j] == pytest.approx(np.mean(np.abs(partial)) / 4.5, rel=1e-12)
        assert out["ones_score"][j] == pytest.approx(np.mean(np.cos(dist * theta)), rel=1e-12)
    assert out["bound"][0] == 1.0 and out["ones_score"][0] == 1.0
    # four zero pairs: the all-ones score stays within 4/8 of its constant part 4/8
    far = long_term_decay(theta, np.arange(1.0, 5000.0))["ones_score"]
    assert np.all(np.abs(far - 0.5) <= 0.5 + 1e-12)
    with pytest.raises(ValueError, match="inv_freq must be"):
        long_term_decay([1.0, -1.0], r)


def test_validator_checks_the_nested_lists_and_sections():
    nope = json.loads((RESULTS / "nope_hybrid.json").read_text())
    validate_result(nope)
    nope["results"][0]["probe"] = [{"layer": 0, "r2": 0.0}]
    with pytest.raises(ValueError, match=r"results\[0\]\.probe\[0\] of nope_hybrid .* 'features'"):
        validate_result(nope)
    part = json.loads((RESULTS / "partial_rotary.json").read_text())
    validate_result(part)
    del part["decay"][1]["bound"]
    with pytest.raises(ValueError, match=r"decay\[1\] of partial_rotary is missing key 'bound'"):
        validate_result(part)
    del part["decay"]
    with pytest.raises(ValueError, match="decay of partial_rotary must be a list"):
        validate_result(part)


def test_nope_hybrid_results_record_each_layers_encoding():
    doc = load_result(RESULTS / "nope_hybrid.json")
    for row in doc["results"]:
        assert row["layers"] == doc["hybrids"][row["encoding"]]
        names = [layer["name"] for layer in row["settings"].get("layers", [])]
        assert names in ([], row["layers"])
        assert {p["layer"] for p in row["probe"]} == set(range(doc["model"]["n_layers"] + 1))
        for a in row["attention"]:
            assert len(a["profile"]) == doc["attention_profile"]["max_distance"] + 1
            assert 0.0 <= min(a["profile"]) and max(a["profile"]) <= 1.0


def test_partial_rotary_results_match_the_encodings_frequencies():
    doc = load_result(RESULTS / "partial_rotary.json")
    head = doc["model"]["d_model"] // doc["model"]["n_heads"]
    for row in doc["results"]:
        kw = {k: v for k, v in doc["variants"][row["encoding"]].items() if k != "kind"}
        enc = make_encoding(
            doc["variants"][row["encoding"]]["kind"], head_dim=head, max_len=1, **kw
        )
        f = enc.training_inv_freq()
        want = np.concatenate([f, np.zeros(head // 2 - f.size)])
        np.testing.assert_allclose(row["inv_freq"], want, rtol=0, atol=1e-8)  # stored to 8 places
        assert row["rotated_pairs"] == np.count_nonzero(want)
    for row in doc["decay"]:
        assert row["bound"][0] <= 1.0 + 1e-6 and len(row["bound"]) == len(row["distance"])


def test_the_plain_runs_of_the_new_experiments_reproduce_length_generalisation():
    # same model, seed and settings: the NoPE and RoPE rows must be the same runs (to the
    # rounding of each file), which also pins the faster RoPE plug-in to the earlier bits
    old = {
        (r["encoding"], r["task"]): r["eval"]
        for r in load_result(RESULTS / "length_generalisation.json")["results"]
    }
    for name, plain in (("nope_hybrid", ("nope", "rope")), ("partial_rotary", ("rope",))):
        for row in load_result(RESULTS / f"{name}.json")["results"]:
            if row["encoding"] in plain:
                for new, ref in zip(row["eval"], old[row["encoding"], row["task"]], strict=True):
                    assert new["acc"] == pytest.approx(ref["acc"], abs=1e-6)
