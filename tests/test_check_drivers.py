"""The checker's drivers: operators that take cos/sin, start-offset APIs, scripted calls whose
frequencies depend on the call (dynamic NTK, LongRoPE's switch, stale caches), the attention
scale of each layer, and packing derived from position ids.

Peer arithmetic is re-expressed here where the peer needs a GPU (flash-attention's
``apply_rotary_emb_torch`` reference, Transformer Engine's unfused ``apply_rotary_pos_emb``).
"""

import numpy as np
import pytest

import refimpl
from refimpl.check import check_rope, check_rope_operator, from_start_offset

D = 64


def _half(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[:, :h], x[:, h:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=1)


# --- operators that take cos/sin -----------------------------------------------------------


def flash_attn_apply_rotary_emb_torch(x, cos, sin, interleaved=False):
    """flash_attn/layers/rotary.py ``apply_rotary_emb_torch``: cos/sin (seq, r/2) repeated to
    the rotated width, ``x * cos + rotate_half(x) * sin`` on the first ro_dim features."""
    ro = 2 * cos.shape[-1]
    if interleaved:
        c, s = np.repeat(cos, 2, -1), np.repeat(sin, 2, -1)
        x1, x2 = x[:, :ro:2], x[:, 1:ro:2]
        rot = np.stack([-x2, x1], -1).reshape(len(x), ro)
    else:
        c, s = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
        x1, x2 = x[:, : ro // 2], x[:, ro // 2 : ro]
        rot = np.concatenate([-x2, x1], -1)
    return np.concatenate([x[:, :ro] * c + rot * s, x[:, ro:]], -1)


def te_apply_rotary_pos_emb(t, freqs):
    """Transformer Engine's unfused ``apply_rotary_pos_emb`` (bshd, not interleaved): the angle
    table ``freqs`` (seq, r) is ``cat(angles, angles)``; cos/sin are taken of it."""
    r = freqs.shape[-1]
    rot = np.concatenate([-t[:, r // 2 : r], t[:, : r // 2]], -1)
    return np.concatenate([t[:, :r] * np.cos(freqs) + rot * np.sin(freqs), t[:, r:]], -1)


@pytest.mark.parametrize("interleaved", [False, True])
def test_flash_attention_apply_rotary_emb_arithmetic(interleaved):
    op = lambda x, c, s: flash_attn_apply_rotary_emb_torch(x, c, s, interleaved)  # noqa: E731
    pairing = "interleaved" if interleaved else "half"
    rep = check_rope_operator(op, dim=D, pairing=pairing)
    assert rep.ok and rep.pairing == pairing, str(rep)
    partial = check_rope_operator(op, dim=D, rotary_dim=32, pairing=pairing)
    assert partial.ok and partial.rotary_dim == 32, str(partial)
    wrong = check_rope_operator(op, dim=D, pairing="interleaved" if not interleaved else "half")
    assert not wrong.ok and "pairs features" in " ".join(wrong.findings)


def test_transformer_engine_angle_tables():
    op = lambda x, ang: te_apply_rotary_pos_emb(x, np.concatenate([ang, ang], -1))  # noqa: E731
    assert check_rope_operator(op, dim=D, tables="angles", pairing="half").ok


def test_operator_bugs_are_named():
    flipped = lambda x, c, s: _half(x, c, -s)  # noqa: E731
    rep = check_rope_operator(flipped, dim=D)
    assert not rep.ok and "wrong way" in rep.findings[0]
    # an operator that reads the full-width table as if it were half-width
    wrong_width = lambda x, c, s: _half(x, c[:, : D // 2], s[:, : D // 2])  # noqa: E731
    assert check_rope_operator(wrong_width, dim=D, tables="full").ok
    half_of_half = lambda x, c, s: _half(x, c[:, ::2], s[:, ::2])  # noqa: E731
    assert not check_rope_operator(half_of_half, dim=D, tables="full").ok
    scaled = lambda x, c, s: 1.2 * _half(x, c, s)  # noqa: E731
    assert not check_rope_operator(scaled, dim=D).ok


def test_operator_with_position_ids_gathers_its_rows():
    """An operator that takes a cos/sin cache and position ids (ONNX RotaryEmbedding, vLLM's
    cos_sin_cache): a gather one row late is an offset; a clamped gather stops the angles."""
    gather = lambda x, c, s, p: _half(x, c[p], s[p])  # noqa: E731
    rep = check_rope_operator(gather, dim=D, pairing="half", position_ids=True)
    assert rep.ok and rep.position_offset == 0.0, str(rep)

    def late(x, c, s, p):
        i = np.minimum(p + 1, len(c) - 1)  # one row late, the last row repeated
        return _half(x, c[i], s[i])

    rep = check_rope_operator(late, dim=D, position_ids=True, positions=[0, 1, 2, 3, 5, 8, 64])
    assert not rep.ok and rep.position_offset == 1.0, str(rep)
    angles = lambda x, a, p: _half(x, np.cos(a[p]), np.sin(a[p]))  # noqa: E731
    assert check_rope_operator(angles, dim=D, tables="angles", position_ids=True).ok


def test_operator_position_ids_arguments_are_refused_by_name():
    gather = lambda x, c, s, p: _half(x, c[p], s[p])  # noqa: E731
    with pytest.raises(ValueError, match="non-negative integers with position_ids=True"):
        check_rope_operator(gather, dim=D, position_ids=True, positions=[0, 1, 2.5])
    with pytest.raises(ValueError, match="non-negative integers with position_ids=True"):
        check_rope_operator(gather, dim=D, position_ids=True, positions=[-1, 0, 1])
    with pytest.raises(ValueError, match="probe smaller positions"):
        check_rope_operator(gather, dim=D, position_ids=True, positions=[0, 1, 2**30])
    with pytest.raises(TypeError, match="position_ids must be True or False"):
        check_rope_operator(gather, dim=D, position_ids=1)


def test_operator_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="tables must be one of"):
        check_rope_operator(_half, dim=D, tables="quarter")
    with pytest.raises(TypeError, match="op must be callable"):
        check_rope_operator(None, dim=D)
    with pytest.raises(ValueError, match="rotary_dim=128 exceeds dim=64"):
        check_rope_operator(_half, dim=D, rotary_dim=128)


def test_start_offset_adapter():
    """MLX's ``mx.fast.rope`` takes an offset, not per-token positions."""
    ranged = lambda x, o: refimpl.apply_rope(x, np.arange(len(x)) + o)  # noqa: E731
    rep = check_rope(from_start_offset(ranged), dim=D, base=10000.0)
    assert rep.ok, str(rep)
    off_by_one = lambda x, o: refimpl.apply_rope(x, np.arange(len(x)) + o + 1)  # noqa: E731
    assert check_rope(from_start_offset(off_by_one), dim=D).position_offset == 1.0
    with pytest.raises(TypeError, match="fn_offset must be callable"):
        from_start_offset(3)


# --- scripted calls --------------------------------------------------------------------------

DYNAMIC = {
    "model_type": "llama", "hidden_size": 2 * D, "num_attention_heads": 2, "head_dim": D,
    "max_position_embeddings": 4096, "rope_theta": 10000.0,
    "rope_scaling": {"rope_type": "dynamic", "factor": 4.0},
}  # fmt: skip
CALLS = [(np.arange(0, 100), 100), (np.arange(0, 8000), 8000), (np.arange(0, 6000), 6000)]


def _by_length(config, length_of):
    """fn(x, positions, seq_len) rotating with the frequencies of length_of(seq_len)."""
    state = {"calls": []}

    def fn(x, positions, seq_len):
        state["calls"].append(seq_len)
        spec = refimpl.rope_from_config(config, seq_len=length_of(seq_len, state))
        return refimpl.apply_rope(x, positions, inv_freq=spec.inv_freq)

    return fn


def test_dynamic_ntk_as_transformers_passes():
    def transformers_length(n, state):  # grow with the longest call since the last reset
        return max(max(state["calls"]), 4096)

    rep = check_rope(_by_length(DYNAMIC, transformers_length), config=DYNAMIC, calls=CALLS)
    assert rep.ok, str(rep)
    assert rep.lengths == [4096, 8000, 8000]


def test_fixed_length_policy_is_named():
    """vLLM builds one dynamic-NTK cache for max_model_len (issues #3488, #41236)."""
    fixed = _by_length(DYNAMIC, lambda n, s: 16384)
    rep = check_rope(fixed, config=DYNAMIC, calls=CALLS)
    assert not rep.ok and "fixed length 16384" in str(rep), str(rep)
    per_call = _by_length(DYNAMIC, lambda n, s: max(n, 4096))
    rep = check_rope(per_call, config=DYNAMIC, calls=CALLS)
    assert not rep.ok and "earlier call" not in str(rep)
    assert check_rope(per_call, config=DYNAMIC, calls=CALLS, policy="per_call").ok


def test_vllm_policy_fixed_max_model_len():
    """vLLM computes dynamic NTK once, for max_model_len (vllm-project/vllm#52665): judged as
    the declared policy it passes; as transformers' it fails and the finding names the
    policy to declare; with another max_model_len it fails."""
    vllm = _by_length(DYNAMIC, lambda n, s: 16384)
    rep = check_rope(vllm, config=DYNAMIC, calls=CALLS, policy="vllm", max_model_len=16384)
    assert rep.ok and rep.lengths == [16384] * 3, str(rep)
    rep = check_rope(vllm, config=DYNAMIC, calls=CALLS, policy="transformers")
    assert not rep.ok and "policy='vllm', max_model_len=16384" in str(rep), str(rep)
    rep = check_rope(vllm, config=DYNAMIC, calls=CALLS, policy="vllm", max_model_len=8192)
    assert not rep.ok and "fixed length 16384" in str(rep), str(rep)

    # transformers' own behaviour is not vLLM's
    def transformers_length(n, state):
        return max(max(state["calls"]), 4096)

    hf = _by_length(DYNAMIC, transformers_length)
    assert not check_rope(hf, config=DYNAMIC, calls=CALLS, policy="vllm", max_model_len=16384).ok


LONGROPE = {
    "model_type": "phi3",
    "hidden_size": 2 * D,
    "num_attention_heads": 2,
    "max_position_embeddings": 131072,
    "original_max_position_embeddings": 4096,
    "rope_theta": 10000.0,
    "rope_scaling": {
        "type": "longrope",
        "short_factor": list(np.round(np.linspace(1.0, 1.5, D // 2), 4)),
        "long_factor": list(np.round(np.linspace(1.0, 12.0, D // 2), 4)),
    },
}  # fmt: skip  (hand-made, Phi-3-like factors)


def test_a_fixed_dynamic_length_outside_the_candidates_is_solved():
    """The served length need not be a call's or the config's: it is read back from the
    slowest pair's frequency (dynamic NTK's base grows with the length)."""
    fixed = _by_length(DYNAMIC, lambda n, s: 12345)
    rep = check_rope(fixed, config=DYNAMIC, calls=CALLS)
    assert not rep.ok and rep.used == [12345] * 3, str(rep)
    assert "policy='vllm', max_model_len=12345" in str(rep)


def test_vllm_policy_longrope_long_factors_for_every_call():
    """vllm-project/vllm#27431: with max_model_len beyond the original context vLLM rotates
    every sequence, short ones included, with the long factors."""
    calls = [(np.arange(0, 2000), 2000), (np.arange(0, 9000), 9000)]

    def vllm(x, positions, seq_len):
        return refimpl.rope_from_config(LONGROPE, seq_len=131072).apply(x, positions)

    rep = check_rope(vllm, config=LONGROPE, calls=calls, policy="vllm", max_model_len=131072)
    assert rep.ok, str(rep)
    rep = check_rope(vllm, config=LONGROPE, calls=calls)  # transformers: short factors first
    assert not rep.ok and rep.used[0] != 2000 and "call 0 (seq_len 2000)" in str(rep), str(rep)
    assert rep.errors[1] <= 1e-12  # the long call is right under both policies


def test_table_length_policy_grows_and_never_shrinks():
    """A cos/sin table extended when a call is longer than it and kept afterwards (transformers'
    rotary modules before 4.38; llama.cpp's allocated context)."""
    calls = [*CALLS, (np.arange(0, 2000), 2000)]

    def grown(n, state):
        return max([4096, *state["calls"]])

    table = _by_length(DYNAMIC, grown)
    rep = check_rope(table, config=DYNAMIC, calls=calls, policy="table_length", table_length=4096)
    assert rep.ok and rep.lengths == [4096, 8000, 8000, 8000], str(rep)
    rep = check_rope(table, config=DYNAMIC, calls=calls)  # transformers resets at call 3
    assert not rep.ok and "call 3 (seq_len 2000)" in str(rep)
    assert "the longest call so far" in str(rep) and "policy='table_length'" in str(rep)

    # transformers' behaviour judged as the table-length policy fails at the reset
    def transformers_length(n, state):
        return max(max(state["calls"]), 4096) if n >= 4096 else 4096

    hf = _by_length(DYNAMIC, transformers_length)
    assert check_rope(hf, config=DYNAMIC, calls=calls).ok
    rep = check_rope(hf, config=DYNAMIC, calls=calls, policy="table_length", table_length=4096)
    assert not rep.ok and "call 3" in str(rep)


def test_policy_lengths_are_required_and_refused_by_name():
    fn = _by_length(DYNAMIC, lambda n, s: n)
    with pytest.raises(ValueError, match=r"policy='vllm' needs max_model_len="):
        check_rope(fn, config=DYNAMIC, calls=CALLS, policy="vllm")
    with pytest.raises(ValueError, match=r"policy='table_length' needs table_length="):
        check_rope(fn, config=DYNAMIC, calls=CALLS, policy="table_length")
    with pytest.raises(ValueError, match=r"max_model_len= is used only with policy='vllm'"):
        check_rope(fn, config=DYNAMIC, calls=CALLS, max_model_len=8192)
    with pytest.raises(ValueError, match=r"table_length= is used only with policy='table_len"):
        check_rope(fn, config=DYNAMIC, calls=CALLS, policy="vllm", max_model_len=8, table_length=8)
    with pytest.raises(TypeError, match="max_model_len must be an integer"):
        check_rope(fn, config=DYNAMIC, calls=CALLS, policy="vllm", max_model_len=8192.5)
    with pytest.raises(TypeError, match="used only with config= and calls="):
        check_rope(refimpl.apply_rope, dim=D, max_model_len=8192)


def test_stale_cache_keyed_on_an_earlier_call():
    """transformers#25104: a cache built for one length reused at another."""
    calls = [(np.arange(0, 5000), 5000), (np.arange(0, 9000), 9000)]
    stuck = _by_length(DYNAMIC, lambda n, s: s["calls"][0])  # keyed on the first call
    rep = check_rope(stuck, config=DYNAMIC, calls=calls)
    assert not rep.ok and "an earlier call's (call 0)" in str(rep), str(rep)


def test_call_arguments_are_refused_by_name():
    with pytest.raises(TypeError, match="config and calls must be given together"):
        check_rope(lambda x, p, n: x, config=DYNAMIC)
    with pytest.raises(TypeError, match="calls must be a non-empty sequence"):
        check_rope(lambda x, p, n: x, config=DYNAMIC, calls=[])
    with pytest.raises(ValueError, match="policy must be one of"):
        check_rope(lambda x, p, n: x, config=DYNAMIC, calls=CALLS, policy="vllm-ish")
    with pytest.raises(TypeError, match="calls seq_len must be an integer"):
        check_rope(lambda x, p, n: x, config=DYNAMIC, calls=[([0, 1], 2.5)])
    with pytest.raises(TypeError, match="needs dim="):
        check_rope(refimpl.apply_rope)


# --- attention scale -------------------------------------------------------------------------

LLAMA4 = {"model_type": "llama4_text", "head_dim": 16, "num_hidden_layers": 4,
          "hidden_size": 64, "num_attention_heads": 4}  # fmt: skip


def _scores(schedule, *, temperature=True, nope_rotates=False):
    def fn(i, q, k, p):
        layer = schedule[i]
        spec = layer.spec
        if spec is None and nope_rotates:
            q, k = refimpl.apply_rope(q, p), refimpl.apply_rope(k, p)
        elif spec is not None:
            q, k = spec.apply(q, p), spec.apply(k, p)
        qs = layer.query_scaling
        if qs is not None and temperature:
            q = q * qs(p)[:, None]
        soft = qs.softmax_scale if qs is not None else 1.0
        return q @ k.T * soft / np.sqrt(q.shape[-1])

    return fn


def test_llama4_nope_layers_and_temperature():
    sched = refimpl.rope_schedule(LLAMA4)
    assert refimpl.check_attention_scale(_scores(sched), sched).ok
    rep = refimpl.check_attention_scale(_scores(sched, temperature=False), sched)
    assert not rep.ok and "query temperature" in str(rep) and "is missing" in str(rep)
    rep = refimpl.check_attention_scale(_scores(sched, nope_rotates=True), sched)
    assert not rep.ok and "NoPE layer rotates" in str(rep)


def test_mla_softmax_scale_missing():
    import pathlib

    path = (
        pathlib.Path(__file__).parent / "parity" / "configs" / "kimi-k2-instruct-0905.excerpt.json"
    )
    sched = refimpl.rope_schedule(path)
    qs = sched[0].query_scaling
    assert qs is not None and qs.softmax_scale > 1.0

    def no_mscale(i, q, k, p):
        spec = sched[i].spec
        return spec.apply(q, p) @ spec.apply(k, p).T / np.sqrt(spec.dim)

    rep = refimpl.check_attention_scale(no_mscale, sched, positions=[0, 1, 5, 100])
    assert not rep.ok and "softmax scale factor" in str(rep) and "missing" in str(rep)


def test_attention_scale_errors():
    sched = refimpl.rope_schedule(LLAMA4)
    with pytest.raises(TypeError, match="fn_scores must be callable"):
        refimpl.check_attention_scale(None, sched)
    with pytest.raises(ValueError, match="fn_scores must return"):
        refimpl.check_attention_scale(lambda i, q, k, p: q, sched)


# --- packing from position ids ---------------------------------------------------------------


def test_packing_from_position_ids():
    ids = np.array([[0, 1, 2, 0, 1, 2, 3], [0, 1, 0, 1, 2, 3, 4]])
    cu = refimpl.packing_from_position_ids(ids)
    np.testing.assert_array_equal(cu, [0, 3, 7, 9, 14])
    # the positions each document restarts at agree with varlen_positions
    np.testing.assert_array_equal(refimpl.varlen_positions(cu), ids.reshape(-1))


def test_mrope_ids_read_as_a_packed_batch():
    """transformers' FlashAttention path flattens position_ids with reshape(-1) and starts a
    document at every minimum: (3, B, S) M-RoPE ids become three documents per real one."""
    text = np.arange(3)
    # one document: 3 text tokens, a 2x2 image at temporal position 3, 2 more text tokens
    t = np.r_[text, [3, 3, 3, 3], [5, 6]]
    h = np.r_[text, [3, 3, 4, 4], [5, 6]]
    w = np.r_[text, [3, 4, 3, 4], [5, 6]]
    ids = np.stack([np.r_[t, t][None], np.r_[h, h][None], np.r_[w, w][None]])  # 2 documents
    cu = refimpl.packing_from_position_ids(ids)
    np.testing.assert_array_equal(cu, [0, 9, 18])
    emulated = refimpl.packing_from_position_ids(ids, emulate="transformers")
    assert emulated[-1] == 3 * 18 and len(emulated) == 7  # six "documents" over 54 tokens


def test_packing_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="emulate must be one of"):
        refimpl.packing_from_position_ids([[0, 1]], emulate="vllm")
    with pytest.raises(ValueError, match=r"M-RoPE ids \(3, B, S\)"):
        refimpl.packing_from_position_ids(np.zeros((2, 1, 4), dtype=int))
    with pytest.raises(TypeError, match="position_ids must be integers"):
        refimpl.packing_from_position_ids([[0.5, 1.0]])
    with pytest.raises(ValueError, match="position_ids must have 2 or 3 dimension"):
        refimpl.packing_from_position_ids([0, 1, 2])
