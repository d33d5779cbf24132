"""Each grader passes the reference solution (written here from the formula) and fails typical
wrong answers with the right hint."""

import numpy as np
import pytest

import refimpl
from refimpl.exercises import (
    Grade,
    grade_alibi_slopes,
    grade_apply_rope,
    grade_expression,
    grade_function,
    grade_inv_freq,
    grade_rotated,
    grade_scaled_inv_freq,
    grade_sinusoidal,
    grade_value,
    grade_yarn_inv_freq,
)

D, B = 16, 10000.0


def solution_inv_freq(d=D, base=B):
    return 1.0 / base ** (np.arange(0, d, 2) / d)


def test_grade_is_truthy_and_prints_its_hint():
    g = grade_inv_freq(solution_inv_freq(), dim=D)
    assert isinstance(g, Grade) and g and g.passed
    assert str(g).startswith("Correct")
    bad = grade_inv_freq(np.ones(D // 2), dim=D)
    assert not bad and str(bad) == bad.hint


# --- inv_freq ------------------------------------------------------------------------------


def test_inv_freq_reference_passes_in_float32():
    assert grade_inv_freq(solution_inv_freq().astype(np.float32), dim=D)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (B ** (-np.arange(2, D + 1, 2) / D), "starts at 1"),
        (B ** (-np.arange(D // 2) / D), "exponent is i/d"),
        (B ** (np.arange(0, D, 2) / D), "reciprocals"),
        (2 * np.pi * B ** (np.arange(0, D, 2) / D), "wavelengths"),
        (B ** (-np.arange(D) / D), "one frequency per pair"),
        (solution_inv_freq()[::-1], "reversed"),
        (solution_inv_freq(base=500000.0), "fit base 500000"),
        (np.ones(3), "should have shape (8,)"),
    ],
)
def test_inv_freq_mistakes(answer, hint):
    g = grade_inv_freq(answer, dim=D)
    assert not g.passed
    assert hint in g.hint, g.hint


def test_inv_freq_bf16_rounding():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    ans = solution_inv_freq().astype(ml_dtypes.bfloat16).astype(np.float64)
    g = grade_inv_freq(ans, dim=D)
    assert not g and "bfloat16" in g.hint


def test_inv_freq_generic_hint_names_first_difference():
    ans = solution_inv_freq().copy()
    ans[3] *= 1.5
    g = grade_inv_freq(ans, dim=D)
    assert not g and "index (3,)" in g.hint


# --- sinusoidal ----------------------------------------------------------------------------


def solution_sinusoidal(n, d, base=B):
    pe = np.zeros((n, d))
    for p in range(n):
        for i in range(d // 2):
            w = base ** (-2 * i / d)
            pe[p, 2 * i], pe[p, 2 * i + 1] = np.sin(p * w), np.cos(p * w)
    return pe


def test_sinusoidal_reference_passes():
    assert grade_sinusoidal(solution_sinusoidal(10, D), num_positions=10, dim=D)


def _swap(pe):
    out = pe.copy()
    out[:, 0::2], out[:, 1::2] = pe[:, 1::2], pe[:, 0::2]
    return out


@pytest.mark.parametrize(
    ("make", "hint"),
    [
        (lambda: _swap(solution_sinusoidal(10, D)), "swapped"),
        (
            lambda: np.concatenate(
                [solution_sinusoidal(10, D)[:, 0::2], solution_sinusoidal(10, D)[:, 1::2]], 1
            ),
            "sines first",
        ),
        (lambda: solution_sinusoidal(11, D)[1:], "start at 1"),
        (lambda: solution_sinusoidal(10, D).T, "transposed"),
        (lambda: solution_sinusoidal(10, D, base=100.0), "i/d instead of 2i/d"),
    ],
)
def test_sinusoidal_mistakes(make, hint):
    g = grade_sinusoidal(make(), num_positions=10, dim=D)
    assert not g and hint in g.hint, g.hint


# --- rotated arrays and functions ----------------------------------------------------------


def solution_rope(x, positions, base=B):
    x = np.asarray(x, float)
    d = x.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)
    ang = np.outer(positions, theta)
    x1, x2 = x[:, : d // 2], x[:, d // 2 :]
    return np.concatenate(
        [x1 * np.cos(ang) - x2 * np.sin(ang), x2 * np.cos(ang) + x1 * np.sin(ang)], axis=1
    )


def test_rotated_reference_and_mistakes():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, D))
    pos = np.arange(6)
    assert grade_rotated(solution_rope(x, pos), x, pos)
    g = grade_rotated(solution_rope(x, -pos), x, pos)
    assert not g and "wrong way" in g.hint
    g = grade_rotated(solution_rope(x, pos + 1), x, pos)
    assert not g and "shifted by one" in g.hint
    g = grade_rotated(refimpl.apply_rope(x, pos, pairing="interleaved"), x, pos)
    assert not g and "pairing='half'" in g.hint


def test_apply_rope_grader():
    assert grade_apply_rope(solution_rope, dim=D)
    g = grade_apply_rope(lambda x, p: solution_rope(x, -np.asarray(p)), dim=D)
    assert not g and "wrong way" in g.hint
    g = grade_apply_rope(lambda x, p: solution_rope(x, p, base=100.0), dim=D)
    assert not g and "sqrt(10000)" in g.hint


# --- YaRN and ALiBi (their modules land on other branches) ---------------------------------


def test_yarn_grader():
    scaling = pytest.importorskip("refimpl.scaling", reason="refimpl.scaling not present yet")
    kw = dict(dim=64, base=10000.0, factor=8.0, original_max_position=4096)
    ref = scaling.ROPE_SCALINGS["yarn"](**kw).inv_freq
    assert grade_yarn_inv_freq(ref, **kw)
    plain = refimpl.inv_freq(64)
    g = grade_yarn_inv_freq(plain / 8.0, **kw)
    assert not g and "plain position interpolation" in g.hint
    g = grade_yarn_inv_freq(plain, **kw)
    assert not g and "unscaled" in g.hint
    paper = scaling.ROPE_SCALINGS["yarn"](**kw, ramp="paper").inv_freq
    g = grade_yarn_inv_freq(paper, **kw)
    assert not g and "paper's ramp" in g.hint


def test_alibi_grader():
    bias = pytest.importorskip("refimpl.bias", reason="refimpl.bias not present yet")
    for n in (8, 12):
        ref = np.asarray(bias.alibi_slopes(n))
        assert grade_alibi_slopes(ref, n_heads=n)
        g = grade_alibi_slopes(ref[::-1], n_heads=n)
        assert not g and "reversed" in g.hint
    g = grade_alibi_slopes(2.0 ** (-8.0 * np.arange(8) / 8), n_heads=8)
    assert not g and "starts at 0" in g.hint


# --- errors --------------------------------------------------------------------------------


def test_grader_errors():
    with pytest.raises(ValueError, match="dim must be even"):
        grade_inv_freq(np.ones(3), dim=7)
    g = grade_inv_freq(["a", "b"], dim=4)  # a wrong answer is a failing grade, not an error
    assert not g and "answer must be a real numeric array" in g.hint
    with pytest.raises(ValueError, match="num_positions must be positive"):
        grade_sinusoidal(np.ones((1, 4)), num_positions=0, dim=4)
    with pytest.raises(ValueError, match="rtol must be positive"):
        grade_inv_freq(np.ones(2), dim=4, rtol=0.0)
    with pytest.raises(ValueError, match="pairing must be one of"):
        grade_rotated(np.ones((1, 4)), np.ones((1, 4)), [0], pairing="neox")
    g = grade_inv_freq([np.nan, 1.0], dim=4)
    assert not g and "NaN" in g.hint


def test_scaled_inv_freq_grader():
    from refimpl.exercises import grade_scaled_inv_freq

    kw = dict(dim=64, base=500000.0, factor=8.0, original_max_position=8192)
    llama3 = refimpl.ROPE_SCALINGS["llama3"](**kw).inv_freq
    assert grade_scaled_inv_freq(llama3, rope_type="llama3", **kw)
    g = grade_scaled_inv_freq(refimpl.inv_freq(64, 500000.0) / 8.0, rope_type="llama3", **kw)
    assert not g and "plain position interpolation" in g.hint
    yarn = refimpl.ROPE_SCALINGS["yarn"](**kw).inv_freq
    g = grade_scaled_inv_freq(yarn, rope_type="llama3", **kw)
    assert not g and "'yarn' frequencies" in g.hint
    with pytest.raises(KeyError, match="linear"):
        grade_scaled_inv_freq(llama3, rope_type="nope", **kw)


# --- regressions: issue 17 (grader arguments) and issue 19 (classic mistakes) ---------------


ALL_ARRAY_GRADERS = [
    lambda **kw: grade_inv_freq(np.ones(4), dim=8, **kw),
    lambda **kw: grade_sinusoidal(np.ones((2, 4)), num_positions=2, dim=4, **kw),
    lambda **kw: grade_rotated(np.ones((1, 4)), np.ones((1, 4)), [0], **kw),
    lambda **kw: grade_yarn_inv_freq(
        np.ones(4), dim=8, base=1e4, factor=2.0, original_max_position=64, **kw
    ),
    lambda **kw: grade_scaled_inv_freq(np.ones(4), rope_type="linear", dim=8, factor=2.0, **kw),
    lambda **kw: grade_alibi_slopes(np.ones(4), n_heads=4, **kw),
    lambda **kw: grade_value(1.0, 1.0, **kw),
]


@pytest.mark.parametrize("grader", ALL_ARRAY_GRADERS)
@pytest.mark.parametrize(
    ("rtol", "exc", "match"),
    [
        (float("nan"), ValueError, "rtol must be finite"),
        (-1e-3, ValueError, "rtol must be positive"),
        (2.0, ValueError, "rtol must be below 1"),
        ("1e-6", TypeError, "rtol must be a real number"),
        (True, TypeError, "rtol must be a real number"),
    ],
)
def test_every_grader_validates_rtol(grader, rtol, exc, match):
    with pytest.raises(exc, match=match):
        grader(rtol=rtol)


@pytest.mark.parametrize(
    ("base", "exc"),
    [(None, TypeError), ("1e4", TypeError), (0.5, ValueError), (np.inf, ValueError)],
)
def test_grade_apply_rope_refuses_a_missing_expectation(base, exc):
    with pytest.raises(exc, match="base"):
        grade_apply_rope(refimpl.apply_rope, dim=8, base=base)
    with pytest.raises((TypeError, ValueError), match="pairing"):
        grade_apply_rope(refimpl.apply_rope, dim=8, pairing=None)


def test_grade_inv_freq_linspace_blames_the_denominator_not_the_base():
    d = 64
    g = grade_inv_freq(10000.0 ** -np.linspace(0, 1, d // 2), dim=d)
    assert not g and "d/2 - 1" in g.hint and "base is right" in g.hint
    assert "13459" not in g.hint


def test_grade_inv_freq_valid_wrong_answer_whose_base_fit_overflows():
    ans = np.ones(32)
    ans[1] = 1e-300  # a[1] ** (-d/2) overflows: no base fits, the generic hint stands
    g = grade_inv_freq(ans, dim=64)
    assert not g and "differs from the reference" in g.hint


def test_grade_inv_freq_float16():
    g = grade_inv_freq(refimpl.inv_freq(64).astype(np.float16), dim=64)
    assert not g and "float16" in g.hint


def _timing_signal(n, d, base=1e4):
    """tensor2tensor's get_timing_signal_1d / fairseq's SinusoidalPositionalEmbedding."""
    half = d // 2
    inc = np.log(base) / (half - 1)
    t = np.arange(n)[:, None] * np.exp(np.arange(half) * -inc)[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1)


def test_grade_sinusoidal_names_the_timing_signal():
    g = grade_sinusoidal(_timing_signal(50, 16), num_positions=50, dim=16)
    assert not g and "tensor2tensor/fairseq" in g.hint and "sines first" in g.hint
    inter = np.empty((50, 16))
    t = _timing_signal(50, 16)
    inter[:, 0::2], inter[:, 1::2] = t[:, :8], t[:, 8:]
    g = grade_sinusoidal(inter, num_positions=50, dim=16)
    assert not g and "d/2 - 1" in g.hint and "layout is right" in g.hint


def test_grade_alibi_power_of_two_formula_on_twelve_heads():
    pytest.importorskip("refimpl.bias")
    g = grade_alibi_slopes(2.0 ** (-8.0 * np.arange(1, 13) / 12), n_heads=12)
    assert not g and "power-of-two formula" in g.hint and "8 slopes" in g.hint


def test_grade_apply_rope_student_exception_is_a_failing_grade():
    def batch_only(x, p):
        assert x.ndim == 3, "expected (batch, seq, dim)"
        return x

    g = grade_apply_rope(batch_only, dim=8)
    assert not g and "AssertionError: expected (batch, seq, dim)" in g.hint
    g = grade_apply_rope(..., dim=8)
    assert not g and "must be a function" in g.hint


def test_grade_apply_rope_flags_in_place_mutation():
    def in_place(x, p):
        x[...] = refimpl.apply_rope(x, p)
        return x

    g = grade_apply_rope(in_place, dim=8)
    assert not g and "in place" in g.hint
    assert grade_apply_rope(lambda x, p: refimpl.apply_rope(x, p), dim=8)


def test_grade_value_and_function_and_expression():
    import sympy as sp

    assert grade_value(2 * np.pi * 1e4, 2 * np.pi * 1e4 * (1 + 1e-9))
    g = grade_value(5, 4, what="the count", mistakes=[(5, "Counted from 1.")])
    assert not g and g.hint == "Counted from 1."
    g = grade_value(..., 4, what="the count")
    assert not g and "real numeric array" in g.hint
    g = grade_value([1.0, 2.0], [1.0, 2.5], what="v")
    assert not g and "first at index (1,)" in g.hint

    def boom(v):
        raise ZeroDivisionError("oops")

    g = grade_function(boom, lambda v: v, [(np.ones(2),)], what="f")
    assert not g and "ZeroDivisionError: oops" in g.hint
    g = grade_function(lambda v: v[::-1], lambda v: v, [(np.arange(3.0),)], what="f")
    assert not g and "hidden input #0" in g.hint
    a, b = sp.symbols("a b")
    assert grade_expression(sp.cos(a - b), sp.cos(a) * sp.cos(b) + sp.sin(a) * sp.sin(b))
    g = grade_expression(sp.cos(a + b), sp.cos(a - b), mistakes=[(sp.cos(b + a), "sign")])
    assert not g and g.hint == "sign"
    g = grade_expression("cos(a)", sp.cos(a))
    assert not g and "SymPy expression" in g.hint


# --- the sandbox: every failure of an answer is a failing grade, never an escape ------------

X8 = [(np.linspace(-1.0, 1.0, 16).reshape(2, 8), np.arange(2))]


def _reference(x, p):
    return refimpl.apply_rope(x, p)  # looked up at call time, as check cells write it


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda x, p: x * np.nan, "NaN or inf"),
        (lambda x, p: None, "returned None, not an array of real numbers"),
        (lambda x, p: [[1.0], [1.0, 2.0]], "returned a ragged or mixed list"),
        (lambda x, p: "rotated", "dtype <U7"),
        (lambda x, p: x[:, :2], "it must have x's shape"),
        (lambda x, p: {"x": x}, "returned dict"),
    ],
    ids=["nan", "none", "ragged", "str", "shape", "dict"],
)
def test_bad_results_are_failing_grades(answer, hint):
    g = grade_apply_rope(answer, dim=8)
    assert not g and hint in g.hint, g.hint
    if "must have x's shape" not in hint:
        g = grade_function(answer, _reference, X8, what="f")
        assert not g and ("f returned" in g.hint or "NaN" in g.hint), g.hint


def _exits(x, p):
    import sys

    sys.exit(3)


def _ends_process(x, p):
    import os

    os._exit(0)


def _sleeps(x, p):
    import time

    time.sleep(60)  # bounded: a broken sandbox fails this test after a minute, never hangs
    return x


def _interrupts(x, p):
    raise KeyboardInterrupt


def _spins(x, p):
    while True:  # CPU-bound: stopped once it has used the time limit in CPU seconds
        pass


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (_exits, "called sys.exit(3)"),
        (_ends_process, "ended its process with exit status 0"),
        (_sleeps, "did not finish within 0.75 s"),
        (_spins, "did not finish within 0.75 s"),
        (_interrupts, "was interrupted"),
    ],
    ids=["sys.exit", "os._exit", "sleep", "spin", "KeyboardInterrupt"],
)
def test_exits_hangs_and_interrupts_are_failing_grades(answer, hint):
    from refimpl.exercises import ANSWER_TIME_LIMIT

    assert ANSWER_TIME_LIMIT < 1.0  # a check stays under one second (on an idle machine)
    graders = [lambda: grade_function(answer, _reference, X8)]
    if answer is not _spins:  # one spin is enough: it costs the limit in CPU seconds
        graders.append(lambda: grade_apply_rope(answer, dim=8))
    for grade in graders:
        g = grade()
        assert not g and hint in g.hint, g.hint


def test_an_answer_that_patches_refimpl_when_called_does_not_pass():
    """The answer runs in a forked child: its patch of refimpl.apply_rope dies with it, and the
    reference, computed in the grader's process, is the real one."""

    def cheat(x, p):
        refimpl.apply_rope = lambda *a, **k: np.zeros_like(a[0])
        refimpl.rotary.apply_rope = refimpl.apply_rope
        return np.zeros_like(x)

    before = refimpl.apply_rope
    g = grade_function(cheat, _reference, X8, what="cheat")
    assert not g and "hidden input #0" in g.hint, g.hint
    assert not grade_apply_rope(cheat, dim=8)
    assert refimpl.apply_rope is before  # the grader's process was never touched


@pytest.mark.parametrize(
    "target",
    [
        ("refimpl", "apply_rope"),
        ("refimpl.rotary", "apply_rope"),
        ("refimpl.rotary", "inv_freq"),
        ("numpy", "cos"),
    ],
    ids=lambda t: ".".join(t),
)
def test_a_function_replaced_before_grading_fails_every_grader_by_name(monkeypatch, target):
    import importlib

    module = importlib.import_module(target[0])
    monkeypatch.setattr(module, target[1], lambda *a, **k: np.zeros(1))
    name = ".".join(target)
    for g in (
        grade_function(lambda x, p: x, _reference, X8),
        grade_apply_rope(lambda x, p: x, dim=8),
        grade_inv_freq(np.zeros(4), dim=8),
        grade_value(1.0, 1.0),
    ):
        assert not g and f"{name} is not the function that was loaded" in g.hint, g.hint
    monkeypatch.undo()
    assert grade_inv_freq(refimpl.inv_freq(8), dim=8)


def test_answer_values_built_from_the_readers_classes_are_converted_in_the_sandbox():
    class Slow:
        def __array__(self, dtype=None, copy=None):
            import time

            time.sleep(60)

    class Broken:
        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("no array here")

    class Fine:
        def __array__(self, dtype=None, copy=None):
            return refimpl.inv_freq(8)

    g = grade_inv_freq(Slow(), dim=8)
    assert not g and "converting answer to an array did not finish" in g.hint, g.hint
    g = grade_inv_freq(Broken(), dim=8)
    assert not g and "RuntimeError: no array here" in g.hint, g.hint
    assert grade_inv_freq(Fine(), dim=8)
    assert grade_inv_freq([1.0, 0.1, 0.01, 0.001], dim=8)  # plain data: no child needed


def test_the_answer_runs_under_an_address_space_limit_and_its_prints_come_back(capsys):
    """Inside the answer, RLIMIT_AS is set: the address space it may still add is about
    ANSWER_MEMORY_LIMIT (2 GiB)."""
    resource = pytest.importorskip("resource")
    import os

    if not os.path.exists("/proc/self/statm"):
        pytest.skip("the address-space limit is set from /proc (Linux)")

    def room(v):
        print("inside the answer")
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        return np.array([float(soft != resource.RLIM_INFINITY), (soft - used) / 2**30])

    g = grade_function(room, lambda v: np.array([1.0, 2.0]), [(0,)], atol=0.25, what="room")
    assert g, g.hint
    assert "inside the answer" in capsys.readouterr().out


def test_unknown_keywords_name_the_public_grader():
    kw = dict(rope_type="linear", dim=8, factor=2.0)
    with pytest.raises(TypeError, match=r"grade_scaled_inv_freq.* 'runtime'.*it takes .*factor"):
        grade_scaled_inv_freq(np.ones(4), runtime=True, **kw)


# --- issue 29: wrong answers get a message that names the mistake, never the reference ------


def _rope_without_minus(x, positions, pairing="half"):
    """x * C + swap(x) * S: rotate_half written as cat(x2, x1), the minus sign forgotten."""
    x = np.asarray(x, float)
    c, s = refimpl.cos_sin(positions, dim=x.shape[-1])
    first, second = (slice(0, D // 2), slice(D // 2, D))
    if pairing == "interleaved":
        first, second = slice(0, D, 2), slice(1, D, 2)
    y = x.copy()
    y[:, first] = x[:, first] * c + x[:, second] * s
    y[:, second] = x[:, second] * c + x[:, first] * s
    return y


@pytest.mark.parametrize(
    ("pairing", "swap"), [("half", "cat(x2, x1)"), ("interleaved", "(x2, x1)")]
)
def test_apply_rope_names_the_missing_minus_of_rotate_half(pairing, swap):
    g = grade_apply_rope(lambda x, p: _rope_without_minus(x, p, pairing), dim=D, pairing=pairing)
    assert not g and g.hint.startswith("The minus sign is missing") and swap in g.hint, g.hint
    assert "pairing" not in g.hint, g.hint  # not blamed on the layout of cos/sin
    right = grade_apply_rope(lambda x, p: refimpl.apply_rope(x, p, pairing=pairing), dim=D,
                             pairing=pairing)  # fmt: skip
    assert right, right.hint


def test_apply_rope_keeps_the_checker_finding_for_other_non_rotations():
    def doubled(x, p):  # every pair scaled by 2: not the missing minus
        return 2.0 * refimpl.apply_rope(x, p)

    g = grade_apply_rope(doubled, dim=D)
    assert not g and "minus sign" not in g.hint, g.hint


def test_sinusoidal_names_the_half_dimension_slip():
    n, d = 50, 16
    w = 1e4 ** (-2 * np.arange(d // 2) / (d / 2))  # w = 10^4^(-2i/(d/2))
    table = np.empty((n, d))
    table[:, 0::2], table[:, 1::2] = (
        np.sin(np.outer(np.arange(n), w)),
        np.cos(np.outer(np.arange(n), w)),
    )
    g = grade_sinusoidal(table, num_positions=n, dim=d)
    assert not g and "2i/(d/2)" in g.hint and "width of the table" in g.hint, g.hint
    assert grade_sinusoidal(solution_sinusoidal(n, d), num_positions=n, dim=d)


LLAMA32 = dict(dim=64, base=5e5, factor=32.0, original_max_position=8192)


def _llama3_by_hand(turns, low=1.0, high=4.0):
    theta = solution_inv_freq(64, 5e5)
    g = np.clip((turns(theta) - low) / (high - low), 0.0, 1.0)
    return (1 - g) * theta / 32.0 + g * theta


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (_llama3_by_hand(lambda t: 8192 * t / (2 * np.pi), low=4.0, high=1.0), "are swapped"),
        (_llama3_by_hand(lambda t: 8192 * t), "without the 2 pi"),
    ],
)
def test_llama3_names_swapped_factors_and_the_forgotten_two_pi(answer, words):
    g = grade_scaled_inv_freq(answer, rope_type="llama3", **LLAMA32)
    assert not g and words in g.hint, g.hint
    right = _llama3_by_hand(lambda t: 8192 * t / (2 * np.pi))
    assert grade_scaled_inv_freq(right, rope_type="llama3", **LLAMA32)


QWEN_YARN = dict(dim=128, base=1e6, factor=4.0, original_max_position=32768)


def _yarn_by_hand(low, high, reversed_ramp=False):
    theta = solution_inv_freq(128, 1e6)
    w = np.clip((np.arange(64) - low) / (high - low), 0.0, 1.0)
    w = 1.0 - w if reversed_ramp else w
    return theta / 4.0 * w + theta * (1.0 - w)


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (_yarn_by_hand(23, 40, reversed_ramp=True), "ramp is reversed"),
        (_yarn_by_hand(24, 41), "both bounds are one pair too high"),
        (_yarn_by_hand(23, 41), "the high bound is one pair too high"),
        (_yarn_by_hand(22, 40), "the low bound is one pair too low"),
    ],
)
def test_yarn_names_a_reversed_ramp_and_bounds_off_by_one(answer, words):
    for g in (
        grade_yarn_inv_freq(answer, **QWEN_YARN),
        grade_scaled_inv_freq(answer, rope_type="yarn", **QWEN_YARN),
    ):
        assert not g and words in g.hint, g.hint
    assert grade_yarn_inv_freq(_yarn_by_hand(23, 40), **QWEN_YARN)


@pytest.mark.parametrize(
    ("answer", "expected", "words"),
    [
        (2 * np.pi, 16 * np.pi, "the answer is 6.2831853: too small by a factor of about 8."),
        (1.03 * 1.2345, 1.2345, "the answer is 1.271535: too large by about 3%."),
        (-2.5, 2.71828, "its sign is wrong"),
        ([1.0, 3.9], [1.0, 3.14159], "first at index (1,): got 3.9 (too large by about 20%)."),
        ([0.0, 0.5], [0.0, 0.0], "got 0.5 (too large)."),
        ([0.0, 0.0], [0.0, 0.75], "got 0 (it should not be 0)."),
    ],
)
def test_a_generic_hint_says_how_the_answer_misses_without_the_reference(answer, expected, words):
    g = grade_value(answer, expected)
    assert not g and words in g.hint, g.hint
    assert "expected" not in g.hint and "reference is" not in g.hint, g.hint
    for got, want in zip(np.ravel(answer), np.ravel(expected), strict=True):
        if want not in (got, 0.0):
            assert f"{want:.8g}" not in g.hint and f"{want:.4g}" not in g.hint, g.hint
