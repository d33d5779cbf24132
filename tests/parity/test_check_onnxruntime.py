"""check_rope_operator on ONNX Runtime's CPU ``RotaryEmbedding``: the com.microsoft contrib op
and the ONNX-standard op of opset 23, each in its half-split and interleaved layouts, with
``position_ids`` gathering rows of a cos/sin cache and (standard op) with per-token tables.
The models are built with ``onnx.helper``; the kernels run are ONNX Runtime's own.

Pins (installed with ``pip install --no-deps`` by ``make venv-checker-peers``, see
mk/checker.mk): onnxruntime 1.31.1, onnx 1.23.2, protobuf 7.36.2 (the one package these two
import beyond NumPy, ml_dtypes and typing_extensions). ONNX Runtime computes in float32, so
the precision class is float32.

The last tests plant a mistake in the cos/sin handed to the operator (a cache built one row
late, tables rounded to bfloat16, the inverse rotation's tables) and require the checker to
name it.
"""

import numpy as np
import pytest

import refimpl
from refimpl.check import check_rope, check_rope_operator, from_start_offset
from refimpl.numerics import round_to

ort = pytest.importorskip(
    "onnxruntime", reason="onnxruntime not installed (make venv-checker-peers installs it)"
)
onnx = pytest.importorskip("onnx", reason="onnx not installed (make venv-checker-peers)")
helper, TensorProto = onnx.helper, onnx.TensorProto

D = 64
CONTRIB, STANDARD = "com.microsoft", ""
OPSET = 23  # the first opset with the standard RotaryEmbedding


def _session(domain, *, interleaved, rotary_dim=D, position_ids=True):
    """An InferenceSession of one RotaryEmbedding node on x (1, seq, D), one head."""
    if domain == CONTRIB:
        names = ["x", "position_ids", "cos", "sin"]  # the contrib op's input order
    else:
        names = ["x", "cos", "sin", *(["position_ids"] if position_ids else [])]
    inputs = [
        helper.make_tensor_value_info(
            n, TensorProto.INT64 if n == "position_ids" else TensorProto.FLOAT, None
        )
        for n in names
    ]
    node = helper.make_node(
        "RotaryEmbedding",
        names,
        ["y"],
        domain=domain,
        interleaved=int(interleaved),
        num_heads=1,
        rotary_embedding_dim=0 if rotary_dim == D else rotary_dim,  # 0: the whole head
    )
    graph = helper.make_graph(
        [node], "rope", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    )
    opsets = [helper.make_opsetid("", OPSET)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _f32(a):
    return np.ascontiguousarray(a, dtype=np.float32)


def _cache_op(sess):
    """op(x, cos_cache, sin_cache, position_ids) running the session on one sequence."""

    def op(x, cos, sin, position_ids):
        feeds = {"x": _f32(x)[None], "cos": _f32(cos), "sin": _f32(sin)}
        feeds["position_ids"] = np.asarray(position_ids, dtype=np.int64)[None]
        return sess.run(None, feeds)[0][0].astype(np.float64)

    return op


@pytest.mark.parametrize("domain", [CONTRIB, STANDARD], ids=["contrib", "opset23"])
@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_rotary_embedding_with_position_ids(domain, pairing):
    sess = _session(domain, interleaved=pairing == "interleaved")
    rep = check_rope_operator(_cache_op(sess), dim=D, pairing=pairing, position_ids=True)
    assert rep.ok, str(rep)
    assert rep.pairing == pairing and rep.base == 10000.0 and rep.position_offset == 0.0
    assert rep.precision == "float32" and rep.direction == 1
    other = "half" if pairing == "interleaved" else "interleaved"
    wrong = check_rope_operator(_cache_op(sess), dim=D, pairing=other, position_ids=True)
    assert not wrong.ok and "pairs features" in " ".join(wrong.findings), str(wrong)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_standard_op_with_per_token_tables(pairing):
    """Without position_ids the standard op takes cos/sin of shape (batch, seq, r/2)."""
    sess = _session(STANDARD, interleaved=pairing == "interleaved", position_ids=False)

    def op(x, cos, sin):
        feeds = {"x": _f32(x)[None], "cos": _f32(cos)[None], "sin": _f32(sin)[None]}
        return sess.run(None, feeds)[0][0].astype(np.float64)

    rep = check_rope_operator(op, dim=D, pairing=pairing)
    assert rep.ok and rep.pairing == pairing and rep.precision == "float32", str(rep)


@pytest.mark.parametrize("domain", [CONTRIB, STANDARD], ids=["contrib", "opset23"])
def test_partial_rotary_embedding_dim(domain):
    sess = _session(domain, interleaved=False, rotary_dim=32)
    rep = check_rope_operator(
        _cache_op(sess), dim=D, rotary_dim=32, pairing="half", position_ids=True
    )
    assert rep.ok and rep.rotary_dim == 32, str(rep)
    np.testing.assert_array_equal(rep.rotated_features, np.arange(32))


def test_contrib_op_start_offset():
    """The contrib op's position_ids of shape (1,) is a start offset: rows sit at offset,
    offset + 1, ..., which from_start_offset turns into per-token positions."""
    sess = _session(CONTRIB, interleaved=False)
    cos, sin = refimpl.cos_sin(np.arange(40000), dim=D)

    def ranged(x, offset):
        feeds = {"x": _f32(x)[None], "cos": _f32(cos), "sin": _f32(sin)}
        feeds["position_ids"] = np.array([offset], dtype=np.int64)
        return sess.run(None, feeds)[0][0]

    rep = check_rope(from_start_offset(ranged), dim=D, base=10000.0, pairing="half")
    assert rep.ok and rep.position_offset == 0.0, str(rep)


# --- mistakes planted in the tables handed to the operator -----------------------------------


def _next_row(cos, sin):
    """The cache row after the last one, by the angle-addition formula (row 1 is one step)."""
    c, s = cos[-1] * cos[1] - sin[-1] * sin[1], sin[-1] * cos[1] + cos[-1] * sin[1]
    return c[None], s[None]


def test_cache_built_one_row_late_is_an_offset():
    """A cache built from arange(1, n + 1) (positions counted from 1): row m holds m + 1."""
    op = _cache_op(_session(CONTRIB, interleaved=False))

    def late(x, cos, sin, position_ids):
        c1, s1 = _next_row(cos, sin)
        return op(x, np.vstack([cos[1:], c1]), np.vstack([sin[1:], s1]), position_ids)

    rep = check_rope_operator(late, dim=D, pairing="half", position_ids=True)
    assert not rep.ok and rep.position_offset == 1.0, str(rep)
    assert "rotated as m + 1" in rep.findings[0]
    assert not any("stop growing" in f or "suggest" in f for f in rep.findings), str(rep)


def test_bfloat16_tables_are_named_by_stage():
    """cos/sin cast to bfloat16 before the operator (a model cast to bf16 with its buffers)."""
    op = _cache_op(_session(STANDARD, interleaved=True))

    def bf16(x, cos, sin, position_ids):
        return op(x, round_to(cos, "bfloat16"), round_to(sin, "bfloat16"), position_ids)

    rep = check_rope_operator(bf16, dim=D, pairing="interleaved", position_ids=True)
    assert not rep.ok and rep.precision == "bfloat16 tables", str(rep)
    assert [(st.stage, st.format) for st in rep.precision_stages] == [("tables", "bfloat16")]
    assert rep.position_offset == 0.0 and rep.base == 10000.0


def test_inverse_tables_are_a_flipped_direction():
    """The sin of the inverse rotation (the backward pass's conjugate tables) handed forward."""
    op = _cache_op(_session(CONTRIB, interleaved=True))
    conj = lambda x, cos, sin, p: op(x, cos, -sin, p)  # noqa: E731
    rep = check_rope_operator(conj, dim=D, pairing="interleaved", position_ids=True)
    assert not rep.ok and rep.direction == -1 and "wrong way" in rep.findings[0], str(rep)
