"""The workbook's checks: one per exercise of the book, keyed by the exercise's label.

This file is copied into the workbook as ``workbook_checks.py``; a notebook's check cell runs
``check("ex-label")``, which reads the names the answer cell defines from the notebook's
namespace, grades them with :mod:`refimpl.exercises` (or a small check of its own) and prints
a verdict with a hint. A check never raises because of the answer: an answer left as ``...``,
a function still raising :class:`NotDoneYet`, a function that raises anything else, an answer
of the wrong type: each is a failing verdict that says what to do.

Each :class:`Check` holds

* ``stub``: the code of the answer cell (the names to define, ``...`` as their value, or a
  function whose body raises :class:`NotDoneYet`);
* ``grade``: a function of the notebook namespace returning a :class:`refimpl.exercises.Grade`;
* ``how``: one sentence shown above the answer cell, saying how the answer is checked;
* ``hint``: a nudge shown with a failing verdict that has no more specific diagnosis.

For nbgrader or otter-grader autograding, set ``REFIMPL_WORKBOOK_STRICT=1``: a failing check
then raises ``AssertionError`` with its hint (the cell fails, the points are lost).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import os
import sys
from collections.abc import Callable
from fractions import Fraction

import numpy as np

import refimpl
from refimpl.exercises import (
    Grade,
    grade_alibi_slopes,
    grade_apply_rope,
    grade_expression,
    grade_function,
    grade_inv_freq,
    grade_scaled_inv_freq,
    grade_sinusoidal,
    grade_value,
    grade_yarn_inv_freq,
)

#: Environment variable that turns failing checks into AssertionErrors (autograding).
STRICT_ENV = "REFIMPL_WORKBOOK_STRICT"
#: Verdicts of this kernel's checks, by label (the last one run).
RESULTS: dict[str, Grade] = {}
_INF = float("inf")


class NotDoneYet(Exception):
    """Raised by the stub of a function the reader has not written yet."""

    def __init__(self, name: str = "this function"):
        super().__init__(f"{name} is not done yet: write its body in the answer cell")


@dataclasses.dataclass(frozen=True)
class Check:
    """How one exercise is answered (``stub``) and graded (``grade``)."""

    stub: str
    grade: Callable[[dict], Grade]
    how: str
    hint: str

    @property
    def names(self) -> tuple[str, ...]:
        """The names the answer cell defines (assignments and functions of the stub)."""
        out: list[str] = []
        for node in ast.parse(self.stub).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            for t in targets:
                elts = t.elts if isinstance(t, ast.Tuple) else [t]
                out += [e.id for e in elts if isinstance(e, ast.Name)]
            if isinstance(node, ast.FunctionDef):
                out.append(node.name)
        return tuple(out)


# ------------------------------------------------------------------------------------------
# small graders for answers the refimpl graders do not cover


def _passed(*parts: str) -> Grade:
    return Grade(True, "Correct: " + "; ".join(parts) + ".", 0.0)


def _failed(hint: str) -> Grade:
    return Grade(False, hint, _INF)


def _all(*grades: Grade) -> Grade:
    """The first failing grade, or one passing grade summing up the parts."""
    for g in grades:
        if not g:
            return g
    parts = [str(g).removeprefix("Correct: ").rstrip(".") for g in grades]
    return Grade(True, "Correct: " + "; ".join(parts) + ".", max(g.max_error for g in grades))


def _choice(answer, correct, what: str, hints: dict | None = None) -> Grade:
    """An answer among a few words (case and spaces ignored) or a boolean."""
    norm = (lambda v: v.strip().lower()) if isinstance(correct, str) else (lambda v: v)
    if isinstance(correct, str) and not isinstance(answer, str):
        return _failed(f"{what} should be a string such as {correct!r}-like words, got {answer!r}.")
    if isinstance(correct, bool) and not isinstance(answer, (bool, np.bool_)):
        return _failed(f"{what} should be True or False, got {answer!r}.")
    if norm(answer) == norm(correct):
        return _passed(f"{what} is {correct!r}")
    for wrong, hint in (hints or {}).items():
        if norm(answer) == norm(wrong):
            return _failed(hint)
    return _failed(f"{what} is not {answer!r}.")


def _equal(answer, expected, what: str, hint: str = "") -> Grade:
    """Exact equality for integers, tuples, dicts (no tolerance)."""
    try:
        same = bool(answer == expected)
    except Exception:  # arrays compared with ==
        same = False
    if same:
        return _passed(f"{what} is {expected!r}")
    return _failed(f"{what} is {answer!r}, not the expected value. {hint}".strip())


def _int(answer, expected: int, what: str, mistakes=()) -> Grade:
    if isinstance(answer, (bool, np.bool_)) or not isinstance(answer, (int, np.integer)):
        if not (isinstance(answer, (float, np.floating)) and float(answer).is_integer()):
            return _failed(f"{what} should be a whole number, got {answer!r}.")
    return grade_value(answer, expected, rtol=1e-12, what=what, mistakes=mistakes)


def _sorted_numbers(value) -> np.ndarray:
    """A collection of numbers in any form a prompt allows (list, tuple, set, array, a single
    number), as a sorted float array."""
    if isinstance(value, (set, frozenset, dict)) or type(value).__name__ in ("dict_keys",):
        value = list(value)
    return np.sort(np.asarray(value, dtype=float).ravel())


def _is_perm(p, n: int) -> bool:
    p = np.asarray(p)
    return p.shape == (n,) and p.dtype.kind in "iu" and sorted(p.tolist()) == list(range(n))


def _sym(ns: dict, name: str):
    import sympy as sp

    v = ns.get(name)
    return v if isinstance(v, sp.Basic) else sp.Symbol(name)


def given_mystery():
    """The colleague's function of exercise ex-pair-detect (its pairing is for you to find)."""
    which = ("half", "interleaved")[len("RoPE") % 3]

    def mystery(x, positions):
        return refimpl.apply_rope(x, positions, pairing=which)

    return mystery


# ------------------------------------------------------------------------------------------
# the check cell's entry point


def check(label: str, namespace: dict | None = None) -> None:
    """Grade the answer of exercise ``label`` and print the verdict with a hint.

    Parameters
    ----------
    label : str
        The exercise's label (``ex-...``), as in the book.
    namespace : dict, optional
        Where the answer's names live; the calling notebook's globals by default.

    The verdict is kept in :data:`RESULTS`. With the environment variable ``STRICT_ENV`` set
    to 1, a failing verdict raises ``AssertionError`` (for nbgrader/otter autograding).
    """
    if label not in CHECKS:
        raise KeyError(f"no check for exercise {label!r}; known: {len(CHECKS)} labels")
    spec = CHECKS[label]
    ns = sys._getframe(1).f_globals if namespace is None else namespace
    grade = _run(spec, ns)
    RESULTS[label] = grade
    mark = "PASS" if grade else "FAIL"
    print(f"[{label}] {mark}: {grade.hint}")
    if not grade and spec.hint not in grade.hint:
        print(f"  Hint: {spec.hint}")
    if not grade and os.environ.get(STRICT_ENV) == "1":
        raise AssertionError(f"{label}: {grade.hint}")


def _run(spec: Check, ns) -> Grade:
    missing = [n for n in spec.names if n not in ns or ns[n] is Ellipsis]
    if missing:
        names = ", ".join(f"`{n}`" for n in missing)
        return _failed(
            f"Not done yet: give {names} a value in the answer cell, run it, then run "
            "this cell again."
        )
    try:
        grade = spec.grade(ns)
    except NotDoneYet as exc:
        return _failed(f"Not done yet: {exc}.")
    except Exception as exc:  # the answer made the check itself fail: a failing verdict
        return _failed(
            f"Your answer could not be checked: {type(exc).__name__}: {exc}. Check its type and "
            "shape against the comment in the answer cell."
        )
    if "NotDoneYet" in grade.hint:
        return _failed(f"Not done yet: {grade.hint.split('NotDoneYet: ', 1)[-1].split('.')[0]}.")
    return grade


# ------------------------------------------------------------------------------------------
# the checks, chapter by chapter (one entry per exercise label)

CHECKS: dict[str, Check] = {}


def _add(label: str, stub: str, how: str, hint: str):
    def register(grade: Callable[[dict], Grade]):
        CHECKS[label] = Check(stub=stub.strip("\n"), grade=grade, how=how, hint=hint)
        return grade

    return register


# --- why_positions ------------------------------------------------------------------------


@_add(
    "ex-why-set",
    """
q = k = v = ...  # (5, 4) arrays: queries, keys, values (seeded random)
p = ...          # a permutation of 5 tokens (not the identity)
""",
    "The check verifies that `p` is a non-trivial permutation and that attention(q, k[p], v[p]) "
    "equals attention(q, k, v).",
    "Draw q, k, v with np.random.default_rng(1).standard_normal((3, 5, 4)) and p with "
    "rng.permutation(5); shuffle only the keys and values.",
)
def _why_set(ns):
    q, k, v, p = (np.asarray(ns[n]) for n in ("q", "k", "v", "p"))
    if not _is_perm(p, len(k)) or np.array_equal(p, np.arange(len(k))):
        return _failed("p must be a permutation of the key indices other than the identity.")
    if q is k or np.array_equal(q, k):
        return _failed("Use different random arrays for q, k and v, or the test proves little.")
    return grade_value(
        refimpl.attention(q, k[p], v[p]),
        refimpl.attention(q, k, v),
        rtol=1e-9,
        atol=1e-12,
        what="attention with shuffled keys and values",
    )


@_add(
    "ex-why-bias",
    """
p = ...    # a permutation of 5 tokens for which the biased head is NOT equivariant
rev = ...  # a permutation of 5 tokens for which it still is
""",
    "The check runs the head with the bias -|i - j| on hidden random q, k, v under both "
    "permutations.",
    "Equivariance means f(q[p], k[p], v[p]) == f(q, k, v)[p]; a permutation that keeps every "
    "distance |i - j| commutes with the bias.",
)
def _why_bias(ns):
    n = 5
    idx = np.arange(n)
    bias = -np.abs(idx[:, None] - idx[None, :]).astype(float)
    q, k, v = np.random.default_rng(12).standard_normal((3, n, 4))

    def equivariant(perm):
        f = refimpl.attention
        return np.allclose(f(q[perm], k[perm], v[perm], bias=bias), f(q, k, v, bias=bias)[perm])

    for name, want in (("p", False), ("rev", True)):
        perm = np.asarray(ns[name])
        if not _is_perm(perm, n):
            return _failed(f"{name} must be a permutation of range(5) (integers), got {perm!r}.")
        if equivariant(perm) != want:
            return _failed(
                f"The head {'is' if not want else 'is not'} equivariant under {name} = "
                f"{perm.tolist()}. "
                + (
                    "Pick a shuffle that changes some distances |i - j|."
                    if not want
                    else "Which permutation keeps every distance |i - j|?"
                )
            )
    return _passed("the bias breaks equivariance under p and keeps it under rev")


@_add(
    "ex-why-entropy",
    "H = ...  # (8,) entropies of the rows of a causal softmax of equal scores, L = 8",
    "Compared with log(i + 1) (natural log), row by row.",
    "Row i sees i + 1 keys with equal weights.",
)
def _why_entropy(ns):
    i = np.arange(8)
    return grade_value(
        ns["H"],
        np.log(i + 1.0),
        rtol=1e-9,
        atol=1e-12,
        what="the row entropies",
        mistakes=[
            (np.log2(i + 1.0), "These are in bits (log2); the entropy here uses the natural log."),
            (np.log(8.0) * np.ones(8), "Without the causal mask every row sees all 8 keys."),
        ],
    )


# --- naive --------------------------------------------------------------------------------


@_add(
    "ex-naive-fp16",
    "first = ...  # the first positive integer p with float(np.float16(p)) != p",
    "Compared with the first integer that float16 rounds (found by a loop).",
    "float16 has an 11-bit significand; find p by a loop over range(1, 10000).",
)
def _naive_fp16(ns):
    want = next(p for p in range(1, 10_000) if float(np.float16(p)) != p)
    return _int(
        ns["first"],
        want,
        "the first integer float16 cannot hold",
        mistakes=[(want - 1, f"{want - 1} = 2**11 is still exact; the next integer is not.")],
    )


@_add(
    "ex-naive-length",
    """
code_len4 = ...  # the code of position 3 at length 4
code_len7 = ...  # the code of position 3 at length 7
N_same = ...     # the length at which position 3 gets the code position 1 has at length 4
""",
    "Compared with refimpl.normalized_encoding.",
    "normalized_encoding divides the position by N - 1.",
)
def _naive_length(ns):
    enc = refimpl.normalized_encoding
    return _all(
        grade_value(
            ns["code_len4"],
            enc(4, 1)[3, 0],
            what="the code at length 4",
            mistakes=[(3 / 4, "The code divides by N - 1, not N.")],
        ),
        grade_value(
            ns["code_len7"],
            enc(7, 1)[3, 0],
            what="the code at length 7",
            mistakes=[(3 / 7, "The code divides by N - 1, not N.")],
        ),
        _int(
            ns["N_same"],
            next(n for n in range(5, 1000) if enc(n, 1)[3, 0] == enc(4, 1)[1, 0]),
            "the length",
            mistakes=[(9, "Solve 3/(N - 1) = 1/3 for N.")],
        ),
    )


# --- sinusoidal ---------------------------------------------------------------------------


@_add(
    "ex-sin-symmetric",
    """
lhs = ...  # SymPy: <PE_p, PE_{p+k}> for two frequencies (symbols p, k and w2 of the setup)
rhs = ...  # SymPy: <PE_p, PE_{p-k}>
""",
    "Both expressions are compared symbolically with sum_i cos(k omega_i).",
    "Use sinusoidal_pe(p, w2) with w2 = frequency_symbols(2, 'omega'); the inner product of "
    "two column vectors a, b is (a.T * b)[0].",
)
def _sin_symmetric(ns):
    import sympy as sp

    from refimpl.symbolic import frequency_symbols

    k = _sym(ns, "k")
    w2 = ns.get("w2", frequency_symbols(2, "omega"))
    want = sum(sp.cos(k * w) for w in w2)
    return _all(
        grade_expression(ns["lhs"], want, what="<PE_p, PE_{p+k}>"),
        grade_expression(ns["rhs"], want, what="<PE_p, PE_{p-k}>"),
    )


@_add(
    "ex-sin-last-wavelength",
    """
lam_max = ...  # the longest wavelength for d = 512, b = 1e4 (tokens)
gap = ...      # 2*pi*1e4 - lam_max (tokens)
""",
    "Compared with 2 pi / inv_freq(512)[-1] to a relative 1e-9.",
    "The last pair is i = d/2 - 1: its exponent is (d - 2)/d, not 1.",
)
def _sin_last(ns):
    lam = 2 * np.pi / refimpl.inv_freq(512, 1e4)[-1]
    return _all(
        grade_value(
            ns["lam_max"],
            lam,
            rtol=1e-9,
            what="the longest wavelength",
            mistakes=[(2 * np.pi * 1e4, "That is 2*pi*b: the last pair is i = d/2 - 1.")],
        ),
        grade_value(
            ns["gap"],
            2 * np.pi * 1e4 - lam,
            rtol=1e-6,
            what="the gap",
            mistakes=[(lam - 2 * np.pi * 1e4, "The sign: the claim is longer than the truth.")],
        ),
    )


@_add(
    "ex-sin-build-shift",
    """
kk = ...  # the offset k you chose
M = ...   # (8, 8) shift matrix M_k for d = 8, built with NumPy only
""",
    "Compared with refimpl.sinusoidal_shift_matrix(kk, 8).",
    "Each pair's 2x2 block is [[cos k w, sin k w], [-sin k w, cos k w]] acting on (sin, cos).",
)
def _sin_shift(ns):
    kk = float(ns["kk"])
    if kk == 0:
        return _failed("Choose an offset kk other than 0 (M_0 is the identity).")
    ref = refimpl.sinusoidal_shift_matrix(kk, 8)
    return grade_value(
        ns["M"],
        ref,
        rtol=1e-9,
        atol=1e-12,
        what="M_k",
        mistakes=[(ref.T, "This is M_k transposed, i.e. M_{-k}: swap the signs of the sines.")],
    )


@_add(
    "ex-sin-table",
    "table = ...  # (50, 16): PE for positions 0..49, d = 16, NumPy only",
    "Graded by refimpl.exercises.grade_sinusoidal(table, num_positions=50, dim=16).",
    "w_i = 10000**(-2i/d); sines in even columns, cosines in odd ones.",
)
def _sin_table(ns):
    return grade_sinusoidal(ns["table"], num_positions=50, dim=16)


# --- notation -----------------------------------------------------------------------------


@_add(
    "ex-notation-one-based",
    """
slip = ...   # (4,) frequencies b**(-2i/d) with i = 1 .. d/2, d = 8, b = 1e4
right = ...  # (4,) the correct frequencies, with NumPy (no refimpl.inv_freq)
""",
    "slip is compared with the 1-based formula; right is graded by grade_inv_freq(dim=8).",
    "The correct pair index runs i = 0 .. d/2 - 1.",
)
def _notation_one_based(ns):
    i = np.arange(1, 5)
    return _all(
        grade_value(ns["slip"], 1e4 ** (-2 * i / 8), what="the 1-based frequencies"),
        grade_inv_freq(ns["right"], dim=8, base=1e4),
    )


@_add(
    "ex-notation-config",
    """
d_rot = ...        # the rotary width d
lam_slowest = ...  # wavelength of the slowest pair (tokens)
n_heads_k = ...    # the n_heads to pass to interleaved_to_half_weights for k_proj
""",
    "Compared with the values the config implies (head width hidden_size / heads).",
    "k_proj has one block of rows per key-value head.",
)
def _notation_config(ns):
    return _all(
        _int(ns["d_rot"], 128, "d", mistakes=[(4096, "d is the width of one head.")]),
        grade_value(
            ns["lam_slowest"],
            2 * np.pi / refimpl.inv_freq(128, 5e5)[-1],
            rtol=1e-9,
            what="the slowest wavelength",
            mistakes=[(2 * np.pi * 5e5, "The slowest pair is i = d/2 - 1, exponent (d-2)/d.")],
        ),
        _int(
            ns["n_heads_k"],
            8,
            "n_heads for k_proj",
            mistakes=[(32, "k_proj has num_key_value_heads = 8 heads, not 32 (GQA).")],
        ),
    )


# --- rope ---------------------------------------------------------------------------------


@_add(
    "ex-rope-direction",
    '''
def blockwise(x, positions, transpose=False):
    """RoPE of each row of x (seq, 8) by refimpl.rotation_matrix (its transpose if asked)."""
    raise NotDoneYet("blockwise")
''',
    "Both versions are graded by grade_apply_rope(fn, dim=8): the block R must pass and the "
    "transposed block must be diagnosed as the wrong direction.",
    "Row j of x is rotated by refimpl.rotation_matrix(positions[j], refimpl.inv_freq(8)).",
)
def _rope_direction(ns):
    fn = ns["blockwise"]
    g = grade_apply_rope(fn, dim=8)
    if not g:
        return g
    g_t = grade_apply_rope(lambda x, p: fn(x, p, transpose=True), dim=8)
    if g_t:
        return _failed(
            "blockwise(..., transpose=True) rotates the same way as transpose=False; it should "
            "use R(m theta).T, a rotation by -m theta, which the grader calls the wrong direction"
        )
    if "wrong way" not in str(g_t):
        return _failed(
            "blockwise(..., transpose=True) should use R(m theta).T, a rotation by -m theta; "
            f"instead it fails for another reason: {g_t}"
        )
    return _passed("R passes, and the transposed block rotates the wrong way")


@_add(
    "ex-rope-zero-pair",
    """
ev = ...             # eigenvalues of R(pi/3) (complex, shape (2,))
fixed_every_m = ...  # True or False: is a non-zero pair unchanged at every position?
""",
    "The eigenvalues are compared with exp(+-i pi/3); the yes/no answer with the theory.",
    "A 2x2 rotation by alpha has eigenvalues exp(+i alpha) and exp(-i alpha).",
)
def _rope_zero_pair(ns):
    ev = np.sort_complex(np.asarray(ns["ev"], dtype=complex).ravel())
    want = np.sort_complex(np.exp(np.array([-1j, 1j]) * np.pi / 3))
    if ev.shape != (2,) or not np.allclose(ev, want, atol=1e-12):
        return _failed(f"ev should be the two eigenvalues exp(+-i pi/3), got {ev}.")
    return _all(
        _passed("the eigenvalues are exp(+-i pi/3)"),
        _choice(
            ns["fixed_every_m"],
            False,
            "fixed_every_m",
            {True: "A fixed vector needs eigenvalue 1 at every m, i.e. theta = 0."},
        ),
    )


# --- pairings -----------------------------------------------------------------------------


@_add(
    "ex-pair-reshape",
    """
W = ...     # (32, 5) random q/k projection rows, H = 4 heads of d = 8
hf_w = ...  # W converted by reshape/transpose (no refimpl)
back = ...  # hf_w converted back by reshape/transpose
""",
    "Compared with refimpl.interleaved_to_half_weights(W, 4) and with W.",
    "View W as (H, d/2, 2, d_model), exchange axes 1 and 2, reshape back.",
)
def _pair_reshape(ns):
    W = np.asarray(ns["W"], dtype=float)
    if W.shape[0] != 32:
        return _failed(f"W should have 4 * 8 = 32 rows, got shape {W.shape}.")
    return _all(
        grade_value(
            ns["hf_w"],
            refimpl.interleaved_to_half_weights(W, 4),
            rtol=1e-12,
            what="hf_w",
            mistakes=[(refimpl.half_to_interleaved_weights(W, 4), "That is the inverse map.")],
        ),
        grade_value(ns["back"], W, rtol=1e-12, what="back (the inverse applied to hf_w)"),
    )


#: Engines' names for the two pairings, read as the words the prompt asks for.
_PAIRING_ALIASES = {"neox": "half", "rotate_half": "half", "gptj": "interleaved",
                    "normal": "interleaved"}  # fmt: skip


@_add(
    "ex-pair-detect",
    """
mystery = given_mystery()  # the colleague's function (given)
verdict = ...              # "half" or "interleaved"
""",
    "Compared with the pairing refimpl.check_rope finds, then graded with "
    "grade_apply_rope(mystery, dim=8, pairing=verdict).",
    "Rotate e_0 to position 1: its partner feature receives sin(1).",
)
def _pair_detect(ns):
    truth = refimpl.check_rope(ns["mystery"], dim=8).pairing
    other = {"half": "interleaved", "interleaved": "half"}[truth]
    verdict = alias = ns["verdict"]
    if isinstance(verdict, str):
        verdict = _PAIRING_ALIASES.get(verdict.strip().lower(), verdict)
        if verdict.strip().lower() not in ("half", "interleaved"):
            return _failed(
                f"the verdict should be 'half' or 'interleaved', got {ns['verdict']!r}. Engines' "
                "names are taken too: 'neox' and 'rotate_half' mean half, 'gptj' and 'normal' "
                "mean interleaved."
            )
    if verdict == alias:
        wrong = f"No: the sine lands elsewhere ({other})."
    else:  # an engine's name for the other pairing
        wrong = f"No: {alias!r} means {other}, and with {other} pairing the sine lands elsewhere."
    g = _choice(verdict, truth, "the pairing", {other: wrong})
    return _all(g, grade_apply_rope(ns["mystery"], dim=8, pairing=truth))


@_add(
    "ex-pair-gqa",
    '''
def k_rows_ok(H, H_kv, hd=8):
    """True when permuting W_k with H // H_kv heads gives the rows that H_kv heads give."""
    raise NotDoneYet("k_rows_ok")
''',
    "Run on hidden head counts and compared with the correct verdicts.",
    "Compare interleaved_to_half_weights(Wk, n) for n = H_kv and for n = H // H_kv.",
)
def _pair_gqa(ns):
    def ref(H, H_kv, hd=8):
        rows = np.random.default_rng(H * 97 + H_kv).standard_normal((H_kv * hd, 3))
        right = refimpl.interleaved_to_half_weights(rows, H_kv)
        return np.array_equal(right, refimpl.interleaved_to_half_weights(rows, H // H_kv))

    cases = [(4, 2), (8, 2), (32, 8), (9, 3), (6, 3), (16, 4), (1, 1)]
    return grade_function(ns["k_rows_ok"], ref, cases, what="k_rows_ok")


# --- rope_forms ---------------------------------------------------------------------------


@_add(
    "ex-forms-scaling",
    """
plain = ...   # scores of RoPE'd q and k, attention_scaling = 1 (any seeded q, k, positions)
scaled = ...  # the same scores with attention_scaling = 1.2
""",
    "The ratio scaled / plain is compared with 1.2**2.",
    "Both q and k are rotated with the scaled tables.",
)
def _forms_scaling(ns):
    plain = np.asarray(ns["plain"], dtype=float)
    scaled = np.asarray(ns["scaled"], dtype=float)
    if plain.shape != scaled.shape or not np.any(plain):
        return _failed("plain and scaled should be non-zero score arrays of the same shape.")
    return grade_value(
        scaled,
        1.2**2 * plain,
        rtol=1e-9,
        what="the scaled scores",
        mistakes=[(1.2 * plain, "That is s * plain: the tables scale q and k, so s**2.")],
    )


@_add(
    "ex-forms-rotate-half",
    '''
def my_rope(x, positions, d, sign=+1):
    """y = x * [C, C] + sign * rotate_half(x) * [S, S] with tables from refimpl.cos_sin."""
    raise NotDoneYet("my_rope")
''',
    "graded by grade_apply_rope(lambda x, p: my_rope(x, p, 32), dim=32); sign=-1 must be "
    "diagnosed as the wrong direction.",
    "rotate_half(x) = [-x[d/2:], x[:d/2]].",
)
def _forms_rotate_half(ns):
    fn = ns["my_rope"]
    g = grade_apply_rope(lambda x, p: fn(x, p, 32), dim=32)
    if not g:
        return g
    g_neg = grade_apply_rope(lambda x, p: fn(x, p, 32, sign=-1), dim=32)
    if g_neg or "wrong way" not in str(g_neg):
        return _failed(f"my_rope(..., sign=-1) should rotate the other way; grader: {g_neg}")
    return _passed("the rotate_half form passes, and sign=-1 rotates the wrong way")


# --- rope_decay ---------------------------------------------------------------------------


@_add(
    "ex-forms-decay",
    "first_rise = ...  # the smallest r >= 1 with score(r) > score(r - 1), d = 128, b = 1e4",
    "Compared with the first increase of sum_i cos(r theta_i).",
    "Compute the score for r = 0 .. 199 and look at np.diff.",
)
def _forms_decay(ns):
    sc = np.cos(np.multiply.outer(np.arange(200), refimpl.inv_freq(128))).sum(1)
    want = int(np.flatnonzero(np.diff(sc) > 0)[0]) + 1
    return _int(
        ns["first_rise"],
        want,
        "the first rise",
        mistakes=[(want - 1, "Off by one: np.diff(sc)[j] compares r = j + 1 with r = j.")],
    )


@_add(
    "ex-decay-base",
    """
theta_mine = ...  # (64,) your frequencies for d = 128, base 5e5
small = ...       # bound factor at r = 100, base 1e4
large = ...       # bound factor at r = 100, base 5e5
""",
    "theta_mine is graded by grade_inv_freq; the factors are compared with "
    "mean_j |S_j| computed from refimpl.inv_freq.",
    "S_j = sum_{l <= j} exp(i r theta_l); take np.abs(np.cumsum(...)).mean().",
)
def _decay_base(ns):
    def factor(b):
        return np.abs(np.cumsum(np.exp(1j * 100 * refimpl.inv_freq(128, b)))).mean()

    return _all(
        grade_inv_freq(ns["theta_mine"], dim=128, base=5e5),
        grade_value(ns["small"], factor(1e4), rtol=1e-9, what="the factor for base 1e4"),
        grade_value(ns["large"], factor(5e5), rtol=1e-9, what="the factor for base 5e5"),
    )


# --- complexity ---------------------------------------------------------------------------


@_add(
    "ex-complexity-nonzeros",
    "nonzeros_128 = ...  # number of nonzero entries of R_m for d = 128 (generic angles)",
    "Compared with np.count_nonzero(refimpl.rotation_matrix(3.0, refimpl.inv_freq(128))).",
    "Only the 2x2 blocks on the diagonal are nonzero.",
)
def _complexity_nonzeros(ns):
    want = int(np.count_nonzero(refimpl.rotation_matrix(3.0, refimpl.inv_freq(128))))
    return _int(
        ns["nonzeros_128"],
        want,
        "the nonzero count",
        mistakes=[
            (128**2, "That is every entry: only the d/2 diagonal 2x2 blocks are nonzero."),
            (128, "Each 2x2 block has 4 nonzero entries, not 2."),
        ],
    )


@_add(
    "ex-complexity-bias-memory",
    """
bias_bytes = ...  # one head's float32 bias table, L = 131072
rope_bytes = ...  # RoPE's float32 cos and sin tables, L = 131072, d = 128
""",
    "Compared with L**2 * 4 and 2 * L * (d/2) * 4.",
    "The bias is L x L; each RoPE table is L x d/2 (one value per pair).",
)
def _complexity_memory(ns):
    L, d = 131072, 128
    return _all(
        _int(ns["bias_bytes"], L * L * 4, "bias_bytes", mistakes=[(L * L, "float32 is 4 bytes.")]),
        _int(
            ns["rope_bytes"],
            2 * L * (d // 2) * 4,
            "rope_bytes",
            mistakes=[
                (2 * L * d * 4, "One value per pair: each table is L x d/2, not L x d."),
                (L * (d // 2) * 4, "There are two tables, cos and sin."),
            ],
        ),
    )


# --- quickstart ---------------------------------------------------------------------------


@_add(
    "ex-quick-interleaved",
    '''
def my_rope_interleaved(x, positions, base=10000.0):
    """RoPE with pair i = features (2i, 2i+1): x (seq, d), positions (seq,)."""
    raise NotDoneYet("my_rope_interleaved")

converter = ...  # the refimpl function that converts the q/k projection weights instead
''',
    "graded by grade_apply_rope(fn, dim=64, pairing='interleaved'); converter is compared with "
    "the refimpl function the checker names.",
    "x[..., 0::2] and x[..., 1::2] are the two members of each pair.",
)
def _quick_interleaved(ns):
    conv = ns["converter"]
    name = conv if isinstance(conv, str) else getattr(conv, "__name__", repr(conv))
    return _all(
        grade_apply_rope(ns["my_rope_interleaved"], dim=64, pairing="interleaved"),
        _choice(
            name.removeprefix("refimpl."),
            "interleaved_to_half_weights",
            "converter",
            {"half_to_interleaved_weights": "That converts the other way."},
        ),
    )


@_add(
    "ex-quick-partial",
    """
table_shape = ...   # shape of the exported cos table (1024 positions)
rotary_width = ...  # the rotary width (features rotated per head)
""",
    "Compared with refimpl.rope_from_config on the same config.",
    "The head width is hidden_size / heads; partial_rotary_factor of it is rotated.",
)
def _quick_partial(ns):
    spec = refimpl.rope_from_config(
        {
            "hidden_size": 2560,
            "num_attention_heads": 32,
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.25,
            "max_position_embeddings": 2048,
        }
    )
    want = spec.cos_sin(np.arange(1024))[0].shape
    return _all(
        _equal(tuple(ns["table_shape"]), want, "table_shape", "One column per rotated pair."),
        _int(
            ns["rotary_width"],
            spec.rotary_dim,
            "rotary_width",
            mistakes=[(80, "That is the head width.")],
        ),
    )


# --- check_rope, check_rope_cases, common_mistakes, troubleshooting ------------------------


@_add(
    "ex-check-inv-freq",
    "answer = ...  # (64,) RoPE frequencies, d = 128, base 500000",
    "Graded by grade_inv_freq(answer, dim=128, base=500000.0).",
    "theta_i = base**(-2i/d), i = 0 .. d/2 - 1.",
)
def _check_inv_freq(ns):
    return grade_inv_freq(ns["answer"], dim=128, base=500000.0)


@_add(
    "ex-check-probe",
    "angles = ...  # (16,) angles of the 2x2 blocks of apply_rope at m = 1 (half pairing, d = 32)",
    "Graded by grade_inv_freq(angles, dim=32, base=10000.0).",
    "Pair i = features (i, i + 16); the angle is arctan2 of its block's sine and cosine.",
)
def _check_probe(ns):
    return grade_inv_freq(ns["angles"], dim=32, base=10000.0)


@_add(
    "ex-check-apply",
    '''
def my_rope(x, positions):
    """Interleaved RoPE, base 10000, without refimpl.apply_rope: x (seq, d) -> (seq, d)."""
    raise NotDoneYet("my_rope")
''',
    "Graded by grade_apply_rope(my_rope, dim=32, pairing='interleaved') on hidden inputs.",
    "Pair i is (x[:, 2i], x[:, 2i+1]); rotate it by positions * theta_i.",
)
def _check_apply(ns):
    return grade_apply_rope(ns["my_rope"], dim=32, pairing="interleaved")


@_add(
    "ex-check-precision-class",
    """
predicted_class = ...      # the class of refimpl.check.PRECISIONS for float16 tables
float32_tables_pass = ...  # True or False: does the recipe with float32 tables pass?
""",
    "Compared with what refimpl.check_rope reports for both kernels.",
    "Rounding the tables adds a constant error of the table format's unit roundoff.",
)
def _check_precision(ns):
    from refimpl.numerics import round_to

    def kernel(fmt):
        th = refimpl.inv_freq(64)

        def fn(x, p):
            ang = np.outer(np.asarray(p, float), th)
            c = round_to(np.cos(ang), fmt).astype(float)
            s = round_to(np.sin(ang), fmt).astype(float)
            return np.concatenate([x[:, :32] * c - x[:, 32:] * s, x[:, 32:] * c + x[:, :32] * s], 1)

        return fn

    rep16 = refimpl.check_rope(kernel("float16"), dim=64, base=10000.0, pairing="half")
    ok32 = refimpl.check_rope(kernel("float32"), dim=64, base=10000.0, pairing="half").ok
    return _all(
        _choice(ns["predicted_class"], rep16.precision, "the precision class"),
        _choice(ns["float32_tables_pass"], bool(ok32), "float32_tables_pass"),
    )


@_add(
    "ex-mistakes-find",
    '''
def corrected(x, p):
    """mystery with its mistake fixed: half pairing, d = 64, base 10000."""
    raise NotDoneYet("corrected")
''',
    "Graded by grade_apply_rope(corrected, dim=64).",
    "Run check_rope(mystery, dim=64) and read its first finding.",
)
def _mistakes_find(ns):
    return grade_apply_rope(ns["corrected"], dim=64)


@_add(
    "ex-mistakes-sinusoidal",
    "table = ...  # (50, 32) sinusoidal table",
    "Graded by grade_sinusoidal(table, num_positions=50, dim=32).",
    "Sines in even columns, cosines in odd ones, w_i = 10000**(-2i/d), positions from 0.",
)
def _mistakes_sinusoidal(ns):
    return grade_sinusoidal(ns["table"], num_positions=50, dim=32)


@_add(
    "ex-trouble-yarn",
    """
s16 = ...      # YaRN's attention factor for factor 16
applied = ...  # "missing", "once" or "twice": how the implementation applies it
""",
    "s16 is compared with 0.1 ln 16 + 1; applied with check_rope's verdict on the implementation.",
    "Compare 1.2773 with s16 and with s16**2.",
)
def _trouble_yarn(ns):
    from refimpl.scaling import yarn_attention_scaling

    s16 = yarn_attention_scaling(factor=16.0)
    rep = refimpl.check_rope(
        lambda x, p: refimpl.apply_rope(x, p, attention_scaling=1.2773),
        dim=16,
        attention_scaling=s16,
    )
    return _all(
        grade_value(
            ns["s16"],
            s16,
            rtol=1e-6,
            what="the attention factor",
            mistakes=[(s16**2, "That is the factor on the logits; cos/sin carry 0.1 ln s + 1.")],
        ),
        _choice(ns["applied"], rep.attention_scaling_applied, "applied"),
    )


@_add(
    "ex-trouble-fix",
    '''
def fixed(x, p):
    """drifting with its position rounding fixed (d = 64)."""
    raise NotDoneYet("fixed")
''',
    "Graded by grade_apply_rope(fixed, dim=64).",
    "bfloat16 holds integers exactly only up to 256; float32 up to 2**24.",
)
def _trouble_fix(ns):
    return grade_apply_rope(ns["fixed"], dim=64)


@_add(
    "ex-trouble-yarn-freq",
    "answer = ...  # (32,) YaRN frequencies: d = 64, base 1e4, factor 8, L = 4096",
    "Graded by grade_yarn_inv_freq(dim=64, base=1e4, factor=8, original_max_position=4096).",
    "Pairs below the rounded low bound keep theta_i; above the high bound they are divided by s.",
)
def _trouble_yarn_freq(ns):
    return grade_yarn_inv_freq(
        ns["answer"], dim=64, base=10000.0, factor=8.0, original_max_position=4096
    )


# --- base_selection -----------------------------------------------------------------------


@_add(
    "ex-base-freq",
    """
answer = ...  # (64,) Code Llama frequencies, d = 128, base 1e6
n = ...       # number of pairs completing a full turn within 16384 tokens
""",
    "answer is graded by grade_inv_freq(answer, dim=128, base=1e6); n is compared with the "
    "count of wavelengths 2 pi / theta_i <= 16384.",
    "A pair completes a turn when its wavelength 2 pi / theta_i is at most 16384 tokens.",
)
def _base_freq(ns):
    th = refimpl.inv_freq(128, 1e6)
    want = int(np.sum(2 * np.pi / th <= 16384))
    return _all(
        grade_inv_freq(ns["answer"], dim=128, base=1e6),
        _int(
            ns["n"],
            want,
            "the count",
            mistakes=[(64 - want, "That counts the pairs that do not complete a turn.")],
        ),
    )


@_add(
    "ex-base-backwards",
    """
which_is_reversed = ...  # "values" or "labels": which half of the claim is reversed?
fastest_turn = ...       # tokens per turn of the pair with theta = 1
""",
    "Compared with the wavelengths of refimpl.inv_freq(128, 1e4).",
    "theta_0 = 1 rad/token turns every 2 pi tokens: is that long or short range?",
)
def _base_backwards(ns):
    return _all(
        _choice(
            ns["which_is_reversed"],
            "labels",
            "which_is_reversed",
            {"values": "The values 1 ... 1e-4 are right; look at what they are called."},
        ),
        grade_value(ns["fastest_turn"], 2 * np.pi / refimpl.inv_freq(128)[0], what="the turn"),
    )


# --- alibi, t5-bias, xpos -----------------------------------------------------------------


@_add(
    "ex-alibi-six",
    """
answer = ...  # (6,) the ALiBi slopes of 6 heads
unused = ...  # the two slopes of the 8-head list that 6 heads do not use
""",
    "answer is graded by grade_alibi_slopes(answer, n_heads=6); unused is compared as a set.",
    "Take the 4 geometric slopes of 4 heads, then every other slope of the 8-head list.",
)
def _alibi_six(ns):
    from refimpl.bias import alibi_slopes

    want = sorted(set(alibi_slopes(8).tolist()) - set(alibi_slopes(6).tolist()))
    got = _sorted_numbers(ns["unused"])
    return _all(
        grade_alibi_slopes(ns["answer"], n_heads=6),
        grade_value(got, np.array(want), rtol=1e-12, what="the unused slopes (sorted)"),
    )


@_add(
    "ex-alibi-cache",
    "shift = ...  # (4,) per head: alibi_shifted_bias(4, 1, 10) - alibi_bias(4, 1, 10)",
    "Compared with 9 * alibi_slopes(4); the softmax is unchanged by a constant per row.",
    "The rows differ by m * i with i = 9.",
)
def _alibi_cache(ns):
    from refimpl.bias import alibi_slopes

    m = alibi_slopes(4)
    return grade_value(
        np.asarray(ns["shift"], dtype=float).ravel(),
        9 * m,
        rtol=1e-12,
        what="the shift per head",
        mistakes=[(-9 * m, "The sign: the shifted row is the larger one."), (10 * m, "i = 9.")],
    )


@_add(
    "ex-t5-widths",
    "widths = ...  # number of distances in each past bucket, distances 0 .. 127 (defaults)",
    "Compared with np.bincount of t5_relative_position_bucket(-np.arange(128)).",
    "Past distances are negative relative positions.",
)
def _t5_widths(ns):
    from refimpl.bias import t5_relative_position_bucket

    want = np.bincount(t5_relative_position_bucket(-np.arange(0, 128)))
    return grade_value(ns["widths"], want, rtol=1e-12, what="the bucket widths")


@_add(
    "ex-t5-cache",
    "buckets = ...  # buckets of keys 0, 173, 200, 299, 300 for the query at 300 (decoder)",
    "Compared with t5_relative_position_bucket(key - 300, bidirectional=False).",
    "A decoder is unidirectional; relative position = key - query.",
)
def _t5_cache(ns):
    from refimpl.bias import t5_relative_position_bucket

    keys = np.array([0, 173, 200, 299, 300])
    want = t5_relative_position_bucket(keys - 300, bidirectional=False)
    bi = t5_relative_position_bucket(keys - 300, bidirectional=True)
    return grade_value(
        np.asarray(ns["buckets"], dtype=float).ravel(),
        want,
        rtol=1e-12,
        what="the buckets",
        mistakes=[(bi, "These are bidirectional buckets; a decoder uses bidirectional=False.")],
    )


@_add(
    "ex-xpos-halflife",
    "half = ...  # tokens after which pair 0's envelope is 1/2, d = 64, B = 512",
    "Compared with B ln 2 / (-ln zeta_0).",
    "Solve zeta**(Delta / B) = 1/2 for Delta.",
)
def _xpos_halflife(ns):
    from refimpl import xpos_zeta

    z0 = xpos_zeta(64)[0]
    return grade_value(
        ns["half"],
        512 * np.log(2) / -np.log(z0),
        rtol=1e-9,
        what="the half-life",
        mistakes=[(512 * np.log(2) / (1 - z0), "Use -ln(zeta), not 1 - zeta.")],
    )


@_add(
    "ex-xpos-future",
    """
m_ = n_ = ...  # query position and a future key position (n_ > m_)
factor = ...  # (32,) per-pair score factor xpos_scale([m_])[0] / xpos_scale([n_])[0], d = 64
""",
    "Compared with xPos's factor zeta**((m - n)/B) at your positions; every entry must exceed 1.",
    "The score factor is zeta_i**((m - n)/B); with n > m the exponent is negative.",
)
def _xpos_future(ns):
    m_, n_ = (float(v) for v in (ns["m_"], ns["n_"]))
    if not n_ > m_:
        return _failed("Choose the key in the future: n_ > m_.")
    want = refimpl.xpos_scale([m_], 64)[0] / refimpl.xpos_scale([n_], 64)[0]
    g = grade_value(ns["factor"], want, rtol=1e-9, what="the factor")
    if g and not np.all(want > 1):
        return _failed("The factor should exceed 1 for every pair.")
    return g


# --- learned, multiaxis -------------------------------------------------------------------


@_add(
    "ex-learned-diagonal",
    "G = ...  # rope_scores_grad(...) for 5 copies of (q, k) at positions 0..4, inv_freq(64)",
    "Compared with rope_scores_grad on the page's q and k; its diagonal must be exactly zero.",
    "On the diagonal the distance is 0: the score does not depend on theta.",
)
def _learned_diagonal(ns):
    grad = ns.get("rope_scores_grad")
    q, k = np.asarray(ns["q"]), np.asarray(ns["k"])
    want = grad(q[None].repeat(5, 0), k[None].repeat(5, 0), np.arange(5.0), refimpl.inv_freq(64))
    g = grade_value(ns["G"], want, rtol=1e-9, atol=1e-12, what="G")
    G = np.asarray(ns["G"])
    if g and np.any(G[np.arange(5), np.arange(5)] != 0):
        return _failed("The diagonal of G should be exactly zero.")
    return g


@_add(
    "ex-learned-heads",
    """
F = ...  # (2, 4) frequencies: head 0 base 10000, head 1 base 100, d = 8
x = ...  # (2, 20, 8): one vector per head, repeated at 20 positions
y = ...  # apply_rope_per_head(x, np.arange(20), F)
""",
    "F is compared with inv_freq; y with apply_rope_per_head; each head's scores must depend "
    "only on the distance.",
    "Stack inv_freq(8, 10000.0) and inv_freq(8, 100.0).",
)
def _learned_heads(ns):
    from refimpl import apply_rope_per_head

    want_F = np.stack([refimpl.inv_freq(8, 1e4), refimpl.inv_freq(8, 100.0)])
    x = np.asarray(ns["x"], dtype=float)
    g = _all(
        grade_value(ns["F"], want_F, rtol=1e-12, what="F"),
        grade_value(
            ns["y"], apply_rope_per_head(x, np.arange(20), want_F), rtol=1e-9, atol=1e-12, what="y"
        ),
    )
    if not g:
        return g
    for hd in range(2):
        S = np.asarray(ns["y"])[hd] @ np.asarray(ns["y"])[hd].T
        if not np.all(x[hd] == x[hd][0]):
            return _failed("Repeat one vector per head along the positions (x[h] rows equal).")
        diag = [np.diagonal(S, off) for off in range(-19, 20)]
        if max(np.ptp(dg) for dg in diag) > 1e-9 * np.abs(S).max():
            return _failed(f"Head {hd}'s scores are not relative.")
    return g


@_add(
    "ex-mrope-width",
    """
blocked = ...      # pair indices that follow the width, blocked layout
interleaved = ...  # the same, interleaved layout
""",
    "Compared with the pairs whose sine is non-zero in mrope_cos_sin for ids (0, 0, 1).",
    "Set only the width coordinate to 1 and look where sin is non-zero.",
)
def _mrope_width(ns):
    from refimpl import mrope_cos_sin

    ids = np.array([[0], [0], [1]])
    out = []
    for name in ("blocked", "interleaved"):
        _, s = mrope_cos_sin(ids, np.ones(64) * 0.5, [16, 24, 24], layout=name)
        out.append(
            grade_value(np.asarray(ns[name]).ravel(), np.flatnonzero(s[0]), rtol=1e-12, what=name)
        )
    return _all(*out)


@_add(
    "ex-rope2d-shift",
    """
X = ...  # (2, H*W, 16): queries X[0] and keys X[1] on the page's grid (rows, cols)
A = ...  # apply_rope_2d(X, rows, cols)
B = ...  # apply_rope_2d(X, rows + 5, cols - 2)
""",
    "A and B are compared with apply_rope_2d; their score matrices must agree, the vectors not.",
    "Scores depend only on differences of rows and of columns.",
)
def _rope2d(ns):
    from refimpl import apply_rope_2d

    X, rows, cols = (np.asarray(ns[n]) for n in ("X", "rows", "cols"))
    A, B = apply_rope_2d(X, rows, cols), apply_rope_2d(X, rows + 5, cols - 2)
    g = _all(
        grade_value(ns["A"], A, rtol=1e-9, atol=1e-12, what="A"),
        grade_value(ns["B"], B, rtol=1e-9, atol=1e-12, what="B"),
    )
    if g and np.allclose(A, B):
        return _failed("A and B should differ as vectors (the grid moved).")
    return g


# --- context extension --------------------------------------------------------------------


def _scaling():
    from refimpl import scaling

    return scaling


@_add(
    "ex-pi-order",
    """
mpos = ...     # float32 positions (e.g. 100000 .. 100199)
th = ...       # float32 frequencies (e.g. inv_freq(128, 5e5))
by_pos = ...   # float32 angles (mpos / 3) * th
by_freq = ...  # float32 angles mpos * (th / 3)
""",
    "Both are recomputed in float32 from your mpos and th; some entries must differ, and both "
    "must agree with the exact angles to within float32 rounding.",
    "Do every operation in float32 (np.float32(3.0)).",
)
def _pi_order(ns):
    f32 = np.float32
    mpos, th = np.asarray(ns["mpos"]), np.asarray(ns["th"])
    if mpos.dtype != f32 or th.dtype != f32:
        return _failed("mpos and th should be float32 arrays (the question is about float32).")
    by_pos = (mpos / f32(3.0))[:, None] * th[None, :]
    by_freq = mpos[:, None] * (th / f32(3.0))[None, :]
    g = _all(
        grade_value(ns["by_pos"], by_pos, rtol=1e-12, what="by_pos"),
        grade_value(ns["by_freq"], by_freq, rtol=1e-12, what="by_freq"),
    )
    if g and not np.any(by_pos != by_freq):
        return _failed("Your angles are all equal: try larger positions (1e5 and up).")
    return g


@_add(
    "ex-pi-resolution",
    """
turn = ...    # tokens per full turn of the fastest pair with s = 8
answer = ...  # (32,) interpolated frequencies, d = 64, b = 1e4, s = 8
""",
    "turn is compared with 2 pi s; answer is graded by grade_scaled_inv_freq(rope_type='linear').",
    "Position interpolation divides every frequency by s.",
)
def _pi_resolution(ns):
    return _all(
        grade_value(
            ns["turn"],
            2 * np.pi * 8,
            rtol=1e-9,
            what="the turn",
            mistakes=[
                (2 * np.pi / 8, "Dividing theta by s multiplies the wavelength by s."),
                (
                    2 * np.pi,
                    "That is the turn of the unscaled fastest pair (theta_0 = 1 rad/token). "
                    "Interpolation divides every frequency by s = 8, so the turn takes s times "
                    "as many tokens.",
                ),
            ],
        ),
        grade_scaled_inv_freq(ns["answer"], rope_type="linear", dim=64, base=1e4, factor=8.0),
    )


@_add(
    "ex-ntk-exponent",
    """
got = ...    # how much b' = s b divides the lowest frequency (d = 128, s = 8)
wrong = ...  # (64,) the frequencies with b' = s b
""",
    "got is compared with theta_63(b) / theta_63(s b); wrong with inv_freq(128, 8e4).",
    "theta_{d/2-1} = b**(-(d-2)/d): multiplying b by s divides it by s**((d-2)/d).",
)
def _ntk_exponent(ns):
    return _all(
        grade_value(
            ns["got"],
            8.0 ** (126 / 128),
            rtol=1e-9,
            what="the factor",
            mistakes=[(8.0, "8 is what the exact NTK base gives; b' = s b gives less.")],
        ),
        grade_value(ns["wrong"], refimpl.inv_freq(128, 8e4), rtol=1e-9, what="wrong"),
    )


@_add(
    "ex-ntk-sqrt",
    "sol = ...  # SymPy: the pair index i (in the page's symbol d) where NTK divides by sqrt(s)",
    "Compared symbolically with (d - 2)/4.",
    "NTK divides pair i by s**(2i/(d-2)); solve 2i/(d-2) = 1/2.",
)
def _ntk_sqrt(ns):
    sol = ns["sol"]
    if isinstance(sol, (list, tuple)):
        if len(sol) != 1:
            return _failed(f"There is one solution; sol has {len(sol)} entries.")
        sol = sol[0]
    d = _sym(ns, "d")
    return grade_expression(
        sol,
        (d - 2) / 4,
        what="the pair index",
        mistakes=[
            (
                d / 4,
                "Off by one pair: d/4 solves 2i/d = 1/2, with the exponent of the plain "
                "frequencies. NTK divides pair i by s**(2i/(d-2)): the denominator is d - 2 so "
                "that the last pair, i = d/2 - 1, is divided by exactly s.",
            ),
            (
                d / 4 - 1,
                "Off by one pair the other way: solve 2i/(d-2) = 1/2 for i exactly (SymPy's "
                "solve), without shifting the index.",
            ),
        ],
    )


@_add(
    "ex-dynamic-eff",
    """
l_eq = ...    # the length at which dynamic NTK (s = 4, L = 4096) uses static NTK's base
static = ...  # (64,) static NTK frequencies, d = 128, factor 4
""",
    "l_eq is compared with the solution of s l / L - (s - 1) = s; static is graded by "
    "grade_scaled_inv_freq(rope_type='ntk', ...).",
    "The dynamic factor is s l / L - (s - 1).",
)
def _dynamic_eff(ns):
    return _all(
        _int(
            ns["l_eq"],
            7 * 4096 // 4,
            "l_eq",
            mistakes=[(4 * 4096, "At l = s L the dynamic factor is 2s - 1 = 7, not s.")],
        ),
        grade_scaled_inv_freq(ns["static"], rope_type="ntk", dim=128, factor=4.0),
    )


@_add(
    "ex-dynamic-history",
    "calls = ...  # three max positions passed to a fresh StatefulDynamic (dim 64, L = 64)",
    "Your calls are replayed on a fresh module, then one call with max position 70; it must "
    "use a length other than 71.",
    "The module only shrinks its cache when a call is shorter than L.",
)
def _dynamic_history(ns):
    cls = ns["StatefulDynamic"]
    calls = list(ns["calls"])
    if len(calls) != 3 or not all(isinstance(c, (int, np.integer)) and c >= 0 for c in calls):
        return _failed(f"calls should be three non-negative integers, got {calls!r}.")
    mod = cls(dim=64, base=1e4, factor=2.0, max_position=64)
    for c in calls:
        mod(int(c))
    used = mod(70)
    if used == 71:
        return _failed("After these calls, max position 70 still uses l = 71; a long call first.")
    return _passed(f"after {calls}, max position 70 uses l = {used}")


@_add(
    "ex-llama3-32",
    "answer = ...  # (32,) Llama 3.2 1B frequencies: d = 64, b = 5e5, L = 8192, s = 32",
    "Graded by grade_scaled_inv_freq(answer, rope_type='llama3', ...).",
    "Pairs with L theta / 2 pi above 4 turns are kept, below 1 divided, between smoothed.",
)
def _llama3_32(ns):
    return grade_scaled_inv_freq(
        ns["answer"],
        rope_type="llama3",
        dim=64,
        base=5e5,
        factor=32.0,
        original_max_position=8192,
    )


@_add(
    "ex-llama3-factor",
    """
ang_train = ...  # largest angle of the slowest pair in training (8192 tokens)
ang_ext = ...    # the same at 131072 tokens with Llama 3.1's scaled frequencies
""",
    "Compared with the page's Llama 3.1 configuration (d = 128, b = 5e5, s = 8, L = 8192).",
    "The slowest pair is divided by the factor 8, not by the context ratio 16.",
)
def _llama3_factor(ns):
    f = _scaling().ROPE_SCALINGS["llama3"](
        dim=128, base=5e5, factor=8.0, original_max_position=8192
    )
    th = refimpl.inv_freq(128, 5e5)
    return _all(
        grade_value(ns["ang_train"], 8192 * th[-1], rtol=1e-9, what="ang_train"),
        grade_value(
            ns["ang_ext"],
            131072 * f.inv_freq[-1],
            rtol=1e-9,
            what="ang_ext",
            mistakes=[(131072 * th[-1], "Use the scaled frequency of the slowest pair.")],
        ),
    )


@_add(
    "ex-longrope-phi3",
    """
af = ...            # Phi-3-mini-128k's attention factor (multiplied into cos and sin)
logit_factor = ...  # the resulting factor on the attention logits
""",
    "Compared with sqrt(1 + ln s / ln L), s = 131072 / 4096, and its square.",
    "q and k both carry the factor.",
)
def _longrope_phi3(ns):
    af = math.sqrt(1 + math.log(32) / math.log(4096))
    return _all(
        grade_value(ns["af"], af, rtol=1e-9, what="the attention factor"),
        grade_value(
            ns["logit_factor"],
            af**2,
            rtol=1e-9,
            what="the logit factor",
            mistakes=[(af, "q and k are both multiplied: the logits get af**2.")],
        ),
    )


@_add(
    "ex-longrope-switch",
    """
set_4095 = ...  # "short" or "long": the factors for largest position id 4095
set_4096 = ...  # the same for 4096
""",
    "Compared with the set refimpl's LongRoPE picks for seq_len = id + 1 (page's kw).",
    "The long factors apply when seq_len = largest id + 1 exceeds the original 4096.",
)
def _longrope_switch(ns):
    longrope = _scaling().ROPE_SCALINGS["longrope"]
    kw = ns["kw"]
    short = longrope(seq_len=1, **kw).inv_freq

    def which(pid):
        return (
            "short" if np.array_equal(longrope(seq_len=pid + 1, **kw).inv_freq, short) else "long"
        )

    return _all(
        _choice(ns["set_4095"], which(4095), "set_4095"),
        _choice(ns["set_4096"], which(4096), "set_4096", {"short": "seq_len is 4097 here."}),
    )


@_add(
    "ex-yarn-range",
    """
lo = hi = ...  # YaRN correction range without truncation: d = 128, b = 1e6, L = 32768
turns = ...   # turns of pair lo over L tokens
""",
    "Compared with yarn_correction_range(..., truncate=False) and L / (2 pi b**(2 lo/d)).",
    "The bound for beta turns solves L / (2 pi b**(2i/d)) = beta for i.",
)
def _yarn_range(ns):
    lo, hi = _scaling().yarn_correction_range(
        dim=128, base=1e6, original_max_position=32768, truncate=False
    )
    return _all(
        grade_value(
            ns["lo"], lo, rtol=1e-9, what="lo", mistakes=[(23.0, "Untruncated: no floor.")]
        ),
        grade_value(ns["hi"], hi, rtol=1e-9, what="hi", mistakes=[(40.0, "Untruncated: no ceil.")]),
        grade_value(
            ns["turns"], 32768 / (2 * np.pi * 1e6 ** (2 * lo / 128)), rtol=1e-9, what="turns"
        ),
    )


@_add(
    "ex-yarn-by-hand",
    "answer = ...  # (64,) YaRN frequencies: Qwen2.5, factor 4 (d = 128, b = 1e6, L = 32768)",
    "Graded by grade_yarn_inv_freq(dim=128, base=1e6, factor=4.0, original_max_position=32768).",
    "Use the truncated range (23, 40) and transformers' ramp, linear in the pair index.",
)
def _yarn_by_hand(ns):
    return grade_yarn_inv_freq(
        ns["answer"], dim=128, base=1e6, factor=4.0, original_max_position=32768
    )


@_add(
    "ex-yarn-mscale",
    """
cos_sin_factor = ...  # the factor transformers multiplies into cos and sin
softmax_extra = ...   # the extra factor on the softmax scale
""",
    "Compared with yarn_attention_scaling(factor=40, mscale=1, mscale_all_dim=1) and "
    "(0.1 ln 40 + 1)**2.",
    "With mscale = mscale_all_dim the two get_mscale terms cancel in cos/sin.",
)
def _yarn_mscale(ns):
    want = _scaling().yarn_attention_scaling(factor=40.0, mscale=1.0, mscale_all_dim=1.0)
    extra = (0.1 * np.log(40.0) + 1) ** 2
    return _all(
        grade_value(ns["cos_sin_factor"], want, rtol=1e-9, what="the cos/sin factor"),
        grade_value(
            ns["softmax_extra"],
            extra,
            rtol=1e-9,
            what="the softmax factor",
            mistakes=[(math.sqrt(extra), "The softmax scale gets mscale squared.")],
        ),
    )


@_add(
    "ex-compare-ood",
    "count = ...  # pairs of the page's head (d = 128, b = 1e4, L = 4096) unseen at L' = 32768",
    "Compared with the count of pairs with L theta_i < 2 pi.",
    "A pair is out of distribution when it has not turned a full period in training.",
)
def _compare_ood(ns):
    th = refimpl.inv_freq(128, 1e4)
    want = int(np.sum(4096 * th < 2 * np.pi))
    return _int(
        ns["count"], want, "count", mistakes=[(64 - want, "That counts the pairs that turned.")]
    )


@_add(
    "ex-compare-heads",
    "r = ...  # (64,) the ratio h(theta_i) / theta_i of the page's YaRN head (code ramp)",
    "Compared with the YaRN frequencies of the page's head; it must take more than two values.",
    "Divide YaRN's inv_freq by the unscaled one.",
)
def _compare_heads(ns):
    f = _scaling().ROPE_SCALINGS["yarn"](dim=128, base=1e4, factor=8.0, original_max_position=4096)
    want = f.inv_freq / refimpl.inv_freq(128, 1e4)
    return grade_value(ns["r"], want, rtol=1e-9, what="r")


@_add(
    "ex-configs-neox",
    "neox = ...  # the RopeSpec read from the Pythia-70m-like config",
    "Its rotary width and frequencies are compared with rotary_pct * head width and inv_freq.",
    "GPT-NeoX configs name the fraction rotary_pct and the base rotary_emb_base.",
)
def _configs_neox(ns):
    spec = ns["neox"]
    if not hasattr(spec, "rotary_dim"):
        return _failed("neox should be the RopeSpec that refimpl.rope_from_config returns.")
    return _all(
        _int(spec.rotary_dim, 16, "rotary_dim", mistakes=[(64, "rotary_pct = 0.25 was ignored.")]),
        grade_value(spec.inv_freq, refimpl.inv_freq(16, 1e4), rtol=1e-12, what="inv_freq"),
    )


@_add(
    "ex-configs-golden",
    "g = ...  # the .npz written by `python -m refimpl golden` for llama3_style (1000 positions)",
    "Its cos table is compared with rope_from_config(llama3_style).cos_sin(..., "
    "'transformers-float32').",
    "Pass --precision transformers-float32 and --positions 1000.",
)
def _configs_golden(ns):
    g = ns["g"]
    if not hasattr(g, "files") or "cos" not in g.files:
        return _failed("g should be the result of np.load on the golden .npz file.")
    spec = refimpl.rope_from_config(ns["llama3_style"])
    want = spec.cos_sin(np.arange(len(g["cos"])), "transformers-float32")[0]
    return grade_value(g["cos"], want, rtol=1e-12, what="the golden cos table")


# --- numerics -----------------------------------------------------------------------------


def _numerics():
    from refimpl import numerics

    return numerics


@_add(
    "ex-numerics-exponent",
    """
rel = ...    # relative error of 5e5**(-e) from rounding e = 126/128 to float32 alone
bound = ...  # your bound u * e * ln(b), u = 2**-24
""",
    "Both are recomputed; rel must not exceed the bound.",
    "Only the exponent is rounded: compare b**(-float32(e)) with b**(-e) in float64.",
)
def _numerics_exponent(ns):
    e = 126 / 128
    rel = abs(500000.0 ** -float(np.float32(e)) / 500000.0**-e - 1)
    return _all(
        grade_value(ns["rel"], rel, rtol=1e-6, atol=1e-22, what="rel"),
        grade_value(ns["bound"], 2.0**-24 * e * np.log(500000.0), rtol=1e-6, what="the bound"),
    )


@_add(
    "ex-numerics-ulp-zero",
    """
r = i = ...  # position, pair of the float64 entry with the smallest |cos| (p < 2000, d = 128)
u_err = ...  # its error in ulps against the oracle
""",
    "The entry is checked to have an absolute error below 1e-14 and an error above 1e6 ulps, "
    "recomputed with the oracle.",
    "Take np.argmin(abs(cos)) over the table of positions 0..1999.",
)
def _numerics_ulp_zero(ns):
    num = _numerics()
    r, i = int(ns["r"]), int(ns["i"])
    c = refimpl.cos_sin(np.array([float(r)]), dim=128, method="fast")[0][:, i : i + 1]
    c_star = num.oracle_cos_sin([float(r)], dim=128, pairs=[i])[0]
    u = num.ulp_error(c, c_star)[0, 0]
    if not (abs(c[0, 0] - c_star[0, 0]) < 1e-14 and u > 1e6):
        return _failed(f"Entry ({r}, {i}) has {u:.3g} ulps; look for the smallest |cos|.")
    return grade_value(ns["u_err"], u, rtol=1e-6, what="u_err")


@_add(
    "ex-numerics-twoproduct",
    """
s = e = ...  # TwoProduct of m = 2**31 - 1 and theta = rn(1e4**(-2/128)): rounded product, error
""",
    "s + e is compared exactly (Fractions) with m * theta, and s with the float64 product.",
    "refimpl._exact has _two_prod and _split.",
)
def _numerics_twoproduct(ns):
    m, th = np.float64(2**31 - 1), np.float64(10000.0 ** (-2 / 128))
    s, e = float(ns["s"]), float(ns["e"])
    if s != float(m * th):
        return _failed("s should be the rounded float64 product m * theta.")
    if Fraction(s) + Fraction(e) != Fraction(float(m)) * Fraction(float(th)):
        return _failed("s + e is not the exact product: the error term is off.")
    return _passed("s + e is the exact product, and e != 0" if e else "s + e is exact")


@_add(
    "ex-numerics-reduce-rounded",
    "u = ...  # ulps of cos(rn(m theta)) from the truth, m = 1e9, pair 1, d = 128, b = 1e4",
    "Recomputed with mpmath and the oracle.",
    "Reduce the float64 product m * theta exactly, then compare with oracle_cos_sin.",
)
def _numerics_reduce(ns):
    num = _numerics()
    m, th = 10**9, refimpl.inv_freq(128)[1]
    # the cosine of the float64 product, correctly rounded: the oracle at position 1
    wrong = refimpl.oracle_cos_sin([1.0], inv_freq=np.array([m * th]))[0][0, 0]
    truth = num.oracle_cos_sin([m], dim=128, pairs=[1])[0]
    return grade_value(
        ns["u"], num.ulp_error(np.array([[wrong]]), truth)[0, 0], rtol=1e-6, what="the ulps"
    )


@_add(
    "ex-numerics-predict-1e3",
    """
predicted = ...  # position where the float32 bound for pair 1 reaches 1e-3 (d = 128, b = 1e4)
actual = ...     # first scanned position (step 97, < 1e6) with float32 table error > 1e-3
""",
    "predicted is compared with the bound solved for m; actual is rescanned.",
    "Bound: m theta (delta_theta + u) + 2**-23 with delta_theta = u (ln b * 2i/d + 3).",
)
def _numerics_predict(ns):
    num = _numerics()
    dim, base = 128, 10000.0
    # below 2**24 the bound is affine in the position: solve bound(m) = 1e-3 from two points
    b0, b1 = num.error_bound("float32-pow", [0.0, 1.0], dim=dim, base=base)[:, 1]
    predicted = (1e-3 - b0) / (b1 - b0)
    scan = np.arange(0, 10**6, 97, dtype=float)
    c, s = num.pipeline_cos_sin("float32-pow", scan, dim=dim, base=base)
    rc, rs = refimpl.cos_sin(scan, dim=dim, base=base, method="accurate")
    err = np.maximum(abs(c - rc), abs(s - rs)).max(axis=1)
    return _all(
        grade_value(ns["predicted"], predicted, rtol=1e-3, what="predicted"),
        grade_value(ns["actual"], scan[np.argmax(err > 1e-3)], rtol=1e-12, what="actual"),
    )


@_add(
    "ex-numerics-fp16-angles",
    """
a16 = ...  # the angle 70000 stored in float16 (round_to)
c = ...    # its cosine
""",
    "a16 must be infinite and c NaN, as round_to and np.cos give them.",
    "float16's largest finite value is 65504.",
)
def _numerics_fp16(ns):
    a16, c = np.asarray(ns["a16"], dtype=float).ravel(), np.asarray(ns["c"], dtype=float).ravel()
    if not (a16.size and np.isinf(a16[0])):
        return _failed(f"a16 is {a16}; 70000 > 65504 overflows float16 to inf (use round_to).")
    if not (c.size and np.isnan(c[0])):
        return _failed(f"c is {c}; the cosine of inf is NaN.")
    return _passed("the angle overflows to inf and its cosine is NaN")


@_add(
    "ex-numerics-recurrence-steps",
    """
steps = ...  # float32 recurrence steps before the bound can exceed 1e-3 (pair 0)
err = ...    # measured error at that step
""",
    "steps is compared with 1e-3 / ((sqrt 2 + sqrt 5) 2**-24) (to within one step); err is rerun.",
    "With delta_theta = 0 the bound is m (sqrt 2 + sqrt 5) u.",
)
def _numerics_rec_steps(ns):
    num = _numerics()
    want = 1e-3 / ((np.sqrt(2) + np.sqrt(5)) * 2.0**-24)
    st = int(ns["steps"])
    c, s = num.cos_sin_recurrence([st], dim=2, dtype="float32")
    err = max(abs(c[0, 0] - np.cos(st)), abs(s[0, 0] - np.sin(st)))
    return _all(
        grade_value(st, want, rtol=0.0 + 1.5 / want, what="steps"),
        grade_value(ns["err"], err, rtol=1e-6, atol=1e-12, what="err"),
    )


@_add(
    "ex-numerics-recurrence-systematic",
    """
from_w = ...  # max error of w32**M in float64 arithmetic, M = 2**16 (page's dim, base)
full = ...    # max error of the float32 recurrence at M
""",
    "Both are recomputed; from_w must be a large share of full.",
    "w32 = exp(i theta32) rounded to complex64; the exact value is exp(i M theta).",
)
def _numerics_rec_sys(ns):
    num = _numerics()
    dim, base, M = ns["dim"], ns["base"], 2**16
    theta = refimpl.inv_freq(dim, base)
    c1, s1 = num.cos_sin_recurrence([1], dim=dim, base=base, dtype="float32")
    w32 = (c1 + 1j * s1)[0].astype(np.complex128)  # the recurrence's rounded step
    z = np.exp(1j * M * theta)
    c32, s32 = num.cos_sin_recurrence([M], dim=dim, base=base, dtype="float32")
    return _all(
        grade_value(ns["from_w"], np.abs(w32**M - z).max(), rtol=1e-6, what="from_w"),
        grade_value(ns["full"], np.abs((c32 + 1j * s32)[0] - z).max(), rtol=1e-6, what="full"),
    )


@_add(
    "ex-numerics-drift-bound",
    """
score_err = ...  # float32 pipeline's score error against exact RoPE, m = 1e5 (page's r, q, k)
eps = ...        # largest table error at m and m + r
""",
    "Both are recomputed with the page's q, k, r, dim and base; the bound 2 sqrt 2 eps must hold.",
    "Use pipeline_cos_sin, cos_sin(method='accurate') and relative_drift(..., against='exact').",
)
def _numerics_drift(ns):
    num = _numerics()
    r, q, k, dim, base = (ns[n] for n in ("r", "q", "k", "dim", "base"))
    mm = np.array([1e5, 1e5 + r])
    c, s = num.pipeline_cos_sin("float32-pow", mm, dim=dim, base=base)
    ce, se = refimpl.cos_sin(mm, dim=dim, base=base, method="accurate")
    eps = max(abs(c - ce).max(), abs(s - se).max())
    err = num.relative_drift("float32-pow", mm[:1], r, q, k, dim=dim, base=base, against="exact")[0]
    return _all(
        grade_value(ns["eps"], eps, rtol=1e-6, what="eps"),
        grade_value(ns["score_err"], err, rtol=1e-6, atol=1e-18, what="score_err"),
    )


@_add(
    "ex-numerics-bf16-rotated",
    """
near = ...  # relative_drift('accurate', positions 10..59, ..., rotated_dtype='bfloat16')
far = ...   # the same at positions 1e6 .. 1e6 + 49
""",
    "Both are recomputed with the page's r, q, k.",
    "Pass rotated_dtype='bfloat16' to relative_drift.",
)
def _numerics_bf16(ns):
    num = _numerics()
    r, q, k = ns["r"], ns["q"], ns["k"]
    kw = dict(rotated_dtype="bfloat16")
    near = num.relative_drift("accurate", np.arange(10.0, 60.0), r, q, k, **kw)
    far = num.relative_drift("accurate", np.arange(1e6, 1e6 + 50), r, q, k, **kw)
    return _all(
        grade_value(ns["near"], near, rtol=1e-6, atol=1e-15, what="near"),
        grade_value(ns["far"], far, rtol=1e-6, atol=1e-15, what="far"),
    )


# --- experiments --------------------------------------------------------------------------


@_add(
    "ex-exp-temperature",
    """
h16 = h128 = ...  # entropies of the row (2, 0, ..., 0) over 16 and 128 keys
h128_t = ...      # the entropy at 128 keys with the logits times (0.1 ln 8 + 1)**2
restored = ...    # True or False: is the entropy back to its value at 16 keys?
""",
    "The entropies are recomputed with refimpl.attention_entropy.",
    "softmax of the scaled logits, then attention_entropy.",
)
def _exp_temperature(ns):
    def h(n, scale=1.0):
        z = np.zeros(n)
        z[0] = 2.0
        return float(refimpl.attention_entropy(refimpl.softmax(scale * z)))

    t = h(128, (0.1 * np.log(8) + 1) ** 2)
    return _all(
        grade_value(ns["h16"], h(16), rtol=1e-9, what="h16"),
        grade_value(ns["h128"], h(128), rtol=1e-9, what="h128"),
        grade_value(ns["h128_t"], t, rtol=1e-9, what="h128_t"),
        _choice(ns["restored"], bool(t <= h(16)), "restored"),
    )


@_add(
    "ex-exp-uniform-bound",
    "expected = ...  # mean of log(t + 1) over the rows t = 48 .. 63",
    "Compared with the mean, and with the page's result file (uniform_entropy at length 64).",
    "Row t has t + 1 visible keys.",
)
def _exp_uniform(ns):
    want = np.mean(np.log(np.arange(48, 64) + 1.0))
    return grade_value(
        ns["expected"],
        want,
        rtol=1e-9,
        what="the mean",
        mistakes=[(np.mean(np.log(np.arange(48, 64))), "Row t sees t + 1 keys: log(t + 1).")],
    )


@_add(
    "ex-exp-full-turn",
    "full_turn = ...  # {base: pairs with wavelength <= 16} for bases 10, 100, 1e4, 1e6; d = 16",
    "Compared with the count of 2 pi / inv_freq(16, b) <= 16 for each base.",
    "The wavelength of pair i is 2 pi b**(2i/d).",
)
def _exp_full_turn(ns):
    want = {
        b: int(np.sum(2 * np.pi / refimpl.inv_freq(16, b) <= 16)) for b in (10.0, 100.0, 1e4, 1e6)
    }
    got = ns["full_turn"]
    if not isinstance(got, dict):
        return _failed("full_turn should be a dict {base: count}.")
    got = {float(b): v for b, v in got.items()}
    return _equal(got, want, "full_turn", "Recount the pairs per base (d = 16).")


@_add(
    "ex-exp-pi-offset",
    """
offset_presented = ...  # the offset whose rotation the key 3 places back presents, s = 8
angle_change = ...      # change of the fastest pair's angle (rad)
""",
    "Compared with 3/8 and 3 - 3/8.",
    "Linear scaling divides every angle by s.",
)
def _exp_pi_offset(ns):
    return _all(
        grade_value(ns["offset_presented"], 3 / 8, rtol=1e-12, what="the offset"),
        grade_value(ns["angle_change"], 3 - 3 / 8, rtol=1e-12, what="the angle change"),
    )


@_add(
    "ex-exp-dynamic-static",
    '''
def equivalent_factor(l):
    """Static NTK factor with the frequencies of dynamic NTK (factor 1, L = 16) at length l."""
    raise NotDoneYet("equivalent_factor")
''',
    "Run on hidden lengths; each answer is also checked against the registry's frequencies.",
    "With s = 1 the dynamic base is b (l/L)**(d/(d-2)).",
)
def _exp_dyn_static(ns):
    fn = ns["equivalent_factor"]
    g = grade_function(
        fn, lambda n: n / 16, [(32,), (64,), (128,), (40,)], what="equivalent_factor"
    )
    if not g:
        return g
    sf = _scaling().scale_frequencies
    dyn = sf("dynamic", dim=16, base=1e4, factor=1.0, max_position=16, seq_len=96)
    ntk = sf("ntk", dim=16, base=1e4, factor=float(fn(96)))
    if not np.allclose(dyn.inv_freq, ntk.inv_freq, rtol=1e-12):
        return _failed("The registry's dynamic and NTK frequencies disagree at l = 96.")
    return g


@_add(
    "ex-exp-nope",
    """
prediction = ...  # {"nope": True/False, "rope": True/False}: can it learn fetch in 200 steps?
result = ...      # {"nope": accuracy, "rope": accuracy} after training both (length 12)
""",
    "Your prediction is compared with the theory, and your measured accuracies with it.",
    "Without positions, a key's score cannot depend on its offset.",
)
def _exp_nope(ns):
    pred, res = ns["prediction"], ns["result"]
    if not (isinstance(pred, dict) and isinstance(res, dict)):
        return _failed("prediction and result should be dicts keyed by 'nope' and 'rope'.")
    g = _all(
        _choice(pred.get("nope"), False, "prediction['nope']"),
        _choice(pred.get("rope"), True, "prediction['rope']"),
    )
    if g and not (res.get("rope", 0) > 0.9 and res.get("nope", 1) < 0.5):
        return _failed(f"Your measured accuracies {res} do not show it: train 200 steps each.")
    return g


@_add(
    "ex-exp-learned-table",
    """
changes = ...        # True or False: does zeroing rows 12+ change accuracy on index at 48?
before = after = ... # measured acc_beyond before and after zeroing
""",
    "The prediction is compared with the theory and with your measurements.",
    "The task needs the key at position 2 to be recognisable, not the query's own row.",
)
def _exp_learned(ns):
    g = _choice(ns["changes"], False, "changes")
    if g and not (float(ns["before"]) > 0.95 and float(ns["after"]) > 0.95):
        return _failed("Your measurements do not show it: train 300 steps on length 12.")
    return g


@_add(
    "ex-exp-xpos-backward",
    """
pos = ...         # positions (T,), e.g. np.arange(10.0)
g = ...           # (T, 16) upstream gradient
B = ...           # xPos scale_base, e.g. 32.0
backward_g = ...  # the transpose of (scale Z times rotation R_m) applied to g
""",
    "Compared with R_{-m}(Z g) computed by refimpl for your pos, g and B (d = 16).",
    "Z is diagonal and commutes with R_m; R_m transposed is R_{-m}.",
)
def _exp_xpos_backward(ns):
    pos, g = np.asarray(ns["pos"], float), np.asarray(ns["g"], float)
    d = g.shape[-1]
    z = refimpl.xpos_scale(pos, d, scale_base=float(ns["B"]))
    Z = np.concatenate([z, z], axis=1)
    f = refimpl.inv_freq(d)
    want = refimpl.apply_rope(g * Z, -pos, inv_freq=f)
    return grade_value(
        ns["backward_g"],
        want,
        rtol=1e-9,
        atol=1e-12,
        what="backward_g",
        mistakes=[
            (refimpl.apply_rope(g * Z, pos, inv_freq=f), "R_m transposed is R_{-m}: rotate back."),
            (refimpl.apply_rope(g / Z, -pos, inv_freq=f), "Z is its own transpose, not 1/Z."),
        ],
    )


@_add(
    "ex-exp-params",
    "extra = ...  # {encoding name: {parameter name: shape}} beyond NoPE's parameters",
    "Compared with init_params for each encoding of the page's model.",
    "Only encodings with trainable positions add parameters.",
)
def _exp_params(ns):
    from refimpl.experiments import ENCODINGS, init_params, make_encoding

    cfg, rng = ns["cfg"], np.random.default_rng(0)
    base = set(init_params(cfg, make_encoding("nope", head_dim=16, max_len=12), rng))
    want = {}
    for name in ENCODINGS:
        p = init_params(cfg, make_encoding(name, head_dim=16, max_len=12), rng)
        want[name] = {k: tuple(p[k].shape) for k in set(p) - base}
    got = ns["extra"]
    if not isinstance(got, dict):
        return _failed("extra should be a dict {encoding: {parameter: shape}}.")
    got = {n: {k: tuple(v) for k, v in dict(ps).items()} for n, ps in got.items()}
    wrong = sorted(n for n in want if got.get(n) != want[n])
    if wrong:
        return _failed(f"These encodings' parameters are not right: {', '.join(wrong)}.")
    return _passed("every encoding's parameters are listed")


# --- beyond: functional biases, training-free remaps ---------------------------------------


@_add(
    "ex-bias-kerple-vs-alibi",
    "first = ...  # first distance > 0 with Kerple's log penalty (r1 = r2 = 1) below ALiBi's (1/8)",
    "Compared with the first delta > 0 with log(1 + delta) < delta / 8.",
    "Compare np.log1p(delta) with delta / 8 for delta = 1, 2, ...",
)
def _bias_kerple(ns):
    want = next(dl for dl in range(1, 10_000) if np.log1p(dl) < dl / 8)
    return _int(ns["first"], want, "the first distance", mistakes=[(want - 1, "Off by one.")])


@_add(
    "ex-bias-sandwich-relative",
    "blocks = ...  # last six keys' blocks of sandwich_bias([1.0], 6, 6 + o, ...), o = 0, 5, 50",
    "Each block is recomputed with the page's sandwich_bias; all three must be equal.",
    "Keep the last six keys: columns o: of the (6, 6 + o) bias.",
)
def _bias_sandwich(ns):
    sb = ns["sandwich_bias"]
    want = [sb([1.0], 6, 6 + o, dim=16, causal=False)[0][:, o:] for o in (0, 5, 50)]
    got = list(ns["blocks"])
    if len(got) != 3:
        return _failed(f"blocks should hold 3 matrices (o = 0, 5, 50), got {len(got)}.")
    return _all(
        *(
            grade_value(g, w, rtol=1e-9, atol=1e-12, what=f"the block for o = {o}")
            for g, w, o in zip(got, want, (0, 5, 50), strict=True)
        ),
        grade_value(want[2], want[0], rtol=1e-9, atol=1e-12, what="the blocks' agreement"),
    )


@_add(
    "ex-remap-self-extend-reach",
    "reach = ...  # largest distance Self-Extend shows (G = 4, W = 2048, 16384 tokens)",
    "Compared with -self_extend_relative_positions(1, 16384, group=4, window=2048).min().",
    "Last query i = 16383, first key j = 0: floor(i/G) + W - floor(W/G).",
)
def _remap_reach(ns):
    want = int(-ns["self_extend_relative_positions"](1, 16384, group=4, window=2048).min())
    return _int(ns["reach"], want, "the reach", mistakes=[(16383 // 4, "Add W - W // G.")])


@_add(
    "ex-remap-rerope-two-pass",
    """
q = k = ...     # (40, 16) queries and keys (seeded random)
two_pass = ...  # (40, 40) clipped ReRoPE scores from two ordinary RoPE passes (w = 8)
""",
    "Compared with relative_rope_scores(q, k, rerope_relative_positions(40, window=8)).",
    "Second pass: every query at position w, every key at 0; use it where delta > w.",
)
def _remap_rerope(ns):
    q, k = np.asarray(ns["q"], float), np.asarray(ns["k"], float)
    want = ns["relative_rope_scores"](q, k, ns["rerope_relative_positions"](40, window=8))
    return grade_value(ns["two_pass"], want, rtol=1e-9, atol=1e-9, what="the two-pass scores")


# --- real models: hybrid schedules, MLA, proportional RoPE ---------------------------------


@_add(
    "ex-models-hybrid-groups",
    "distinct = ...  # {config name: number of distinct rope tables (NoPE layers need none)}",
    "Recomputed from the page's schedules with spec.key().",
    "Group the layers whose spec is not None by spec.key().",
)
def _models_groups(ns):
    want = {
        name: len({layer.spec.key() for layer in s if layer.spec is not None})
        for name, s in ns["schedules"].items()
    }
    return _equal(dict(ns["distinct"]), want, "distinct", "Count spec.key() values per config.")


@_add(
    "ex-models-hybrid-tau",
    """
first_pos = ...  # first position where Llama 4's temperature exceeds 1
tau = ...        # its value there
""",
    "Compared with the page's NoPE layer query_scaling (schedule ll).",
    "The temperature is 1 + 0.1 ln(floor((p + 1)/8192) + 1).",
)
def _models_tau(ns):
    layer = next(x for x in ns["ll"] if x.spec is None)
    p = np.arange(0, 20000)
    t = layer.query_scaling(p)
    first = int(p[np.argmax(t > 1)])
    return _all(
        _int(ns["first_pos"], first, "first_pos", mistakes=[(first + 1, "Positions start at 0.")]),
        grade_value(ns["tau"], t[first], rtol=1e-12, what="tau"),
    )


@_add(
    "ex-models-mla-v3",
    """
softmax_factor = ...  # DeepSeek-V3's factor on the softmax scale
naive_width = ...     # the rotary width hidden_size // num_attention_heads would give
""",
    "Compared with (0.1 ln 40 + 1)**2 and with the hand-made config's numbers.",
    "The factor is mscale squared; MLA rotates qk_rope_head_dim features.",
)
def _models_mla_v3(ns):
    import json

    cfg = json.loads((ns["CONFIGS"] / "deepseek-v3.handmade.json").read_text())
    return _all(
        grade_value(
            ns["softmax_factor"], (0.1 * np.log(40.0) + 1.0) ** 2, rtol=1e-9, what="the factor"
        ),
        _int(ns["naive_width"], cfg["hidden_size"] // cfg["num_attention_heads"], "naive_width"),
    )


@_add(
    "ex-models-mla-deinterleave",
    "via_half = ...  # half-pairing RoPE of the permuted xr[:, p64] at the page's pos",
    "Compared with the page's DeepSeek spec applied to xr (its interleaved module).",
    "p64 = refimpl.pairing_permutation(64) de-interleaves the features.",
)
def _models_mla_deinterleave(ns):
    spec = ns["v3spec"] if "v3spec" in ns else ns["spec"]  # the page's DeepSeek spec
    want = spec.apply(ns["xr"], ns["pos"])
    return grade_value(ns["via_half"], want, rtol=1e-9, atol=1e-12, what="via_half")


@_add(
    "ex-models-proportional-features",
    """
prop_features = ...     # set of features rotated by proportional RoPE (D = 512, p = 0.25)
partial_features = ...  # set of features rotated by partial rotary
shared = ...            # how many features they have in common
""",
    "Compared with the page's rotated features and rotary width r.",
    "Proportional RoPE keeps D/2 pairs (i, i + D/2) and rotates the first p D/2 of them.",
)
def _models_prop_features(ns):
    prop, part = set(ns["rotated"].tolist()), set(range(int(ns["r"])))
    return _all(
        _equal(set(ns["prop_features"]), prop, "prop_features", "Pairs are (i, i + 256)."),
        _equal(set(ns["partial_features"]), part, "partial_features"),
        _int(ns["shared"], len(prop & part), "shared"),
    )


@_add(
    "ex-models-proportional-factor",
    "g8 = ...  # the RopeSpec of a global layer with factor 8 in rope_parameters['full_attention']",
    "Its rotating frequencies are compared with the page's glob.inv_freq / 8; the rest must be 0.",
    "rope_from_config(cfg8, layer_type='full_attention').",
)
def _models_prop_factor(ns):
    g8, glob, k = ns["g8"], ns["glob"], int(ns["k"])
    if not hasattr(g8, "inv_freq"):
        return _failed("g8 should be the RopeSpec that rope_from_config returns.")
    g = grade_value(g8.inv_freq[:k], glob.inv_freq[:k] / 8.0, rtol=1e-12, what="the rotating pairs")
    if g and np.any(np.asarray(g8.inv_freq[k:]) != 0):
        return _failed("The pass-through pairs must keep frequency 0.")
    return g


@_add(
    "ex-models-mrope-axis",
    """
axis_17_qwen25 = ...  # "t", "h" or "w": the axis pair 17 follows in Qwen2.5-VL (blocked)
axis_17_qwen3 = ...   # the same in Qwen3-VL (interleaved)
axis_61_qwen3 = ...   # pair 61 in Qwen3-VL
""",
    "Compared with the axis mrope_cos_sin reads for each pair of the page's specs.",
    "Give the axes different positions (t = 1, h = 2, w = 3) and read the angle of the pair.",
)
def _models_mrope_axis(ns):
    from refimpl import mrope_cos_sin

    probe = np.array([[1], [2], [3]])

    def axis(s, pair):
        c, _ = mrope_cos_sin(
            probe, np.ones(s.rotary_dim // 2), s.mrope_section, layout=s.mrope_layout
        )
        return "thw"[int(np.rint(np.arccos(c[0, pair]))) - 1]

    specs = ns["specs"]
    return _all(
        _choice(ns["axis_17_qwen25"], axis(specs["Qwen2.5-VL"], 17), "pair 17, Qwen2.5-VL"),
        _choice(ns["axis_17_qwen3"], axis(specs["Qwen3-VL"], 17), "pair 17, Qwen3-VL"),
        _choice(ns["axis_61_qwen3"], axis(specs["Qwen3-VL"], 61), "pair 61, Qwen3-VL"),
    )


@_add(
    "ex-models-mrope-textonly",
    "gap = ...  # per token: max |cos| difference between mrope_cos_sin and s3.cos_sin(ids[0])",
    "Recomputed from the page's ids and Qwen3-VL spec.",
    "Text tokens have equal axes; only image tokens differ.",
)
def _models_mrope_text(ns):
    from refimpl import mrope_cos_sin

    s3, ids = ns["specs"]["Qwen3-VL"], ns["ids"]
    c_m, _ = mrope_cos_sin(ids, s3.inv_freq, s3.mrope_section, layout=s3.mrope_layout)
    want = np.max(np.abs(c_m - s3.cos_sin(ids[0])[0]), axis=1)
    return grade_value(ns["gap"], want, rtol=1e-9, atol=1e-15, what="gap")


# --- beyond: NoPE and contextual positions --------------------------------------------------


@_add(
    "ex-cope-words",
    "p_last_first = ...  # CoPE p_ij of the first key for the last query (gates closed on '.')",
    "Compared with the page's cope_positions for those gates.",
    "An open gate (sigmoid(40) ~ 1) counts one; a closed one (sigmoid(-40) ~ 0) none.",
)
def _cope_words(ns):
    toks = ["the", "cat", "sat", ".", "it", "slept", "."]
    lg = np.array([[-40.0 if t == "." else 40.0 for t in toks]] * len(toks))
    want = ns["cope_positions"](lg)[-1, 0]
    return grade_value(
        ns["p_last_first"],
        want,
        rtol=1e-9,
        what="p",
        mistakes=[(len(toks), "The periods' gates are closed: they do not count.")],
    )


@_add(
    "ex-cope-interpolation",
    "term = ...  # CoPE position term q . e[p] at p = 1.25 (embeddings and q of the prompt)",
    "Compared with the linear interpolation of q . e[1] and q . e[2].",
    "Interpolate between floor(p) and ceil(p) with weights 0.75 and 0.25.",
)
def _cope_interp(ns):
    emb = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    q = np.array([2.0, 4.0])
    want = 0.75 * (q @ emb[1]) + 0.25 * (q @ emb[2])
    got = np.asarray(ns["term"], dtype=float).ravel()
    return grade_value(
        got[0] if got.size == 1 else got,
        want,
        rtol=1e-9,
        what="the position term",
        mistakes=[(0.25 * 2 + 0.75 * 4, "The weights are swapped: p = 1.25 is closer to 1.")],
    )


@_add(
    "ex-nope-count",
    "v_all = ...  # (T, d) values: every token writes e = (1, 0, ..., 0) (page's T, d)",
    "The causal attention output of your values (page's q, k) must be e at every position.",
    "Average i + 1 copies of e.",
)
def _nope_count(ns):
    v = np.asarray(ns["v_all"], dtype=float)
    T, d = int(ns["T"]), int(ns["d"])
    e = np.zeros(d)
    e[0] = 1.0
    if v.shape != (T, d) or not np.allclose(v, e):
        return _failed(f"v_all should be ({T}, {d}) with every row e = (1, 0, ..., 0).")
    out = ns["attention"](ns["q"], ns["k"], v, causal=True)
    return grade_value(out[:, 0], np.ones(T), rtol=1e-9, what="the outputs' first feature")


def _first_wrong_float32(top: int = 2**25, chunk: int = 2**20) -> int:
    """First position i < top whose float32-rounded output no longer gives i back (chunked)."""
    from refimpl.numerics import round_to

    for start in range(1, top, chunk):
        i = np.arange(start, min(start + chunk, top), dtype=np.float64)
        stored = np.asarray(round_to(np.reciprocal(i + 1.0), "float32"), dtype=np.float64)
        recovered = np.rint(np.reciprocal(stored) - 1.0)
        lost = np.flatnonzero(recovered != i)
        if lost.size:
            return int(i[lost[0]])
    raise ValueError(f"float32 recovers every position below {top}")


@_add(
    "ex-nope-decode",
    """
decoded = ...      # positions recovered from the causal outputs o_i = e/(i + 1) of 40 tokens
first_wrong = ...  # first position float32-rounded o_i no longer recovers (scan up to 2**25)
""",
    "decoded is compared with 0..39; first_wrong is recomputed by the same scan.",
    "i = 1/o_i - 1, rounded to the nearest integer.",
)
def _nope_decode(ns):
    return _all(
        grade_value(
            np.asarray(ns["decoded"]).ravel(),
            np.arange(40),
            rtol=1e-12,
            what="decoded",
            mistakes=[
                (
                    np.arange(1, 41),
                    "Off by one: 1/o_i = i + 1 (query i averages i + 1 keys), so these are "
                    "positions 1 .. 40. Subtract 1 before rounding: positions start at 0.",
                )
            ],
        ),
        _int(ns["first_wrong"], _first_wrong_float32(), "first_wrong"),
    )


@_add(
    "ex-configs-nope",
    """
no_rope = ...  # the NoPE layers of the SmolLM3-like schedule (no no_rope_layers given)
n_specs = ...  # number of groups of sch.groups() (distinct specs, NoPE's None included)
flags = ...    # a no_rope_layers list that makes only the last of the 36 layers NoPE
""",
    "Compared with refimpl's rope_schedule for the same config; your flags are applied to it.",
    "rope_schedule(config).groups() maps each distinct spec (None for NoPE) to its layers.",
)
def _configs_nope(ns):
    smol = {"model_type": "smollm3", "num_hidden_layers": 36, "head_dim": 128, "rope_theta": 5e6}
    schedule = ns["rope_schedule"]  # as the page imports it
    groups = schedule(smol).groups()
    flagged = schedule({**smol, "no_rope_layers": list(ns["flags"])}).groups()
    return _all(
        _equal(list(ns["no_rope"]), list(groups[None]), "no_rope", "Read sch.groups()[None]."),
        _int(ns["n_specs"], len(groups), "n_specs"),
        _equal(
            list(flagged.get(None, [])),
            [35],
            "the NoPE layers under your flags",
            "no_rope_layers holds 1 where a layer rotates and 0 where it is NoPE.",
        ),
    )


# --- conformance --------------------------------------------------------------------------


@_add(
    "ex-conformance-offset",
    "shifted = ...  # the VerifyReport of the page's NumPy kernel run with positions + 1",
    "The report must fail and its diagnosis must name positions rotated as m + 1.",
    "Run kernel.run(work / 'f32', out, mistake='shift'), then verify_outputs(work / 'f32', out).",
)
def _conformance_offset(ns):
    rep = ns["shifted"]
    if not hasattr(rep, "diagnosis") or not hasattr(rep, "ok"):
        return _failed("shifted should be the VerifyReport that verify_outputs returns.")
    if rep.ok:
        return _failed("Your suite run passes: the kernel still counts positions from 0.")
    if not any("m + 1" in d for d in rep.diagnosis):
        return _failed("The diagnosis does not name positions rotated as m + 1: shift by one.")
    return _passed("the suite fails and the checker reads positions rotated as m + 1")


@_add(
    "ex-format-varlen",
    "m20 = ...  # the position of token 20 of the page's varlen case (eq:conformance-form-varlen)",
    "Compared with 20 - cu_seqlens[j] + offsets[j] for the sequence j holding token 20.",
    "Find j with cu_seqlens[j] <= 20 < cu_seqlens[j + 1]; then t - cu_seqlens[j] + offsets[j].",
)
def _format_varlen(ns):
    return _int(
        ns["m20"],
        2003,
        "m20",
        mistakes=[
            (20, "That is the packed index t: positions restart at each sequence."),
            (3, "Add the sequence's offset (2000): it continues a cache."),
        ],
    )


@_add(
    "ex-format-view",
    "flat = ...  # index into the flat q_buffer of the view's element [0, 1, 2, 3]",
    "Compared with q_view_offset + sum(index * stride) from the strided case's metadata.",
    "Strides are in elements: flat = offset + 0*s0 + 1*s1 + 2*s2 + 3*s3.",
)
def _format_view(ns):
    from refimpl.conformance import read_safetensors

    arrays, meta = read_safetensors(ns["suite"] / "inputs" / "strided.safetensors")
    # the reference from NumPy's own view machinery: the view laid over the buffer's indices
    where = np.arange(arrays[meta["q_view_buffer"]].size)
    view = np.lib.stride_tricks.as_strided(
        where[int(meta["q_view_offset"]) :],
        shape=[int(v) for v in meta["q_view_shape"].split(",")],
        strides=[where.itemsize * int(v) for v in meta["q_view_strides"].split(",")],
    )
    want = int(view[0, 1, 2, 3])
    return _int(
        ns["flat"],
        want,
        "flat",
        mistakes=[(want - int(meta["q_view_offset"]), "Add the view's offset.")],
    )


# --- resonance, engines, multimodal ids, model index ----------------------------------------


@_add(
    "ex-resonance-wavelengths",
    """
lam = ...  # (4,) wavelengths 2 pi / theta_i for d = 8, b = 100
new = ...  # (4,) wavelengths after resonance (dim=8, base=100.0, original_max_position=32)
""",
    "Compared with inv_freq and with the page's resonance registry entry.",
    "Wavelengths below L = 32 are rounded to whole tokens; the others are kept.",
)
def _resonance_wavelengths(ns):
    f = ns["ROPE_SCALINGS"]["resonance"](dim=8, base=100.0, original_max_position=32)
    return _all(
        grade_value(ns["lam"], 2 * np.pi / refimpl.inv_freq(8, 100.0), rtol=1e-9, what="lam"),
        grade_value(ns["new"], 2 * np.pi / f.inv_freq, rtol=1e-9, what="the new wavelengths"),
    )


@_add(
    "ex-resonance-change",
    """
th1 = ...      # (64,) resonance frequencies, d = 128, b = 5e5, L = 8192
rounded = ...  # (64,) booleans: which pairs have their wavelength rounded
""",
    "Compared with the registry; theta**2 / (4 pi - theta) must bound every rounded pair.",
    "A wavelength is rounded when it is below L.",
)
def _resonance_change(ns):
    th0 = refimpl.inv_freq(128, 5e5)
    th1 = ns["ROPE_SCALINGS"]["resonance"](dim=128, base=5e5, original_max_position=8192).inv_freq
    want = 2 * np.pi / th0 < 8192
    g = _all(
        grade_value(ns["th1"], th1, rtol=1e-12, what="th1"),
        grade_value(np.asarray(ns["rounded"], dtype=float), want.astype(float), what="rounded"),
    )
    if g and not np.all(
        np.abs(th1 - th0)[want] <= th0[want] ** 2 / (4 * np.pi - th0[want]) + 1e-15
    ):
        return _failed("The bound does not hold on every rounded pair.")
    return g


@_add(
    "ex-engines-yarn-magnitude",
    """
attn = ...       # llama.cpp's attn_factor for YaRN, s = 32, no mscale keys
magnitude = ...  # the magnitude multiplying cos and sin in llama.cpp
""",
    "Compared with 1 and with transformers' 0.1 ln s + 1.",
    "ggml multiplies by its own 1 + 0.1 ln(1/freq_scale); attn divides the converter's by it.",
)
def _engines_yarn(ns):
    from refimpl.scaling import yarn_attention_scaling

    m = yarn_attention_scaling(factor=32.0)
    return _all(
        grade_value(ns["attn"], 1.0, rtol=1e-6, what="attn", mistakes=[(m, "ggml applies it.")]),
        grade_value(
            ns["magnitude"],
            m,
            rtol=1e-6,
            what="the magnitude",
            mistakes=[(m * m, "Applied twice: ggml already multiplies by 1 + 0.1 ln s.")],
        ),
    )


@_add(
    "ex-engines-llama3-top-level",
    """
f8k = ...      # (32,) Llama 3.2 1B rope_freqs divisors with L = 8192
f4k = ...      # the same with L = 4096
changed = ...  # number of pairs whose divisor changes
""",
    "Compared with refimpl's llama3 frequencies (divisor = theta / scaled theta) at both L, and "
    "f8k with the page's GGUF tensor.",
    "Pairs with wavelength below L/4 keep 1, above L get s, in between are smoothed.",
)
def _engines_llama3(ns):
    llama3 = _scaling().ROPE_SCALINGS["llama3"]
    th = refimpl.inv_freq(64, 5e5)

    def divisors(L):
        return th / llama3(dim=64, base=5e5, factor=32.0, original_max_position=L).inv_freq

    d8, d4 = divisors(8192), divisors(4096)
    return _all(
        grade_value(ns["f8k"], d8, rtol=1e-6, what="f8k"),
        grade_value(ns["f4k"], d4, rtol=1e-6, what="f4k"),
        _int(ns["changed"], int(np.sum(~np.isclose(d8, d4))), "changed"),
    )


@_add(
    "ex-mrope-answer-start",
    """
first_answer = ...  # position (t) of the answer's first token in the page's chat
nxt = ...           # position ids of the first generated token (mrope_decode_position_ids)
""",
    "Compared with one past the largest position before the answer, and with "
    "mrope_decode_position_ids(chat_delta, [prompt length]).",
    "The answer is the last text run (6 tokens); text continues one past the largest position.",
)
def _mrope_answer(ns):
    ids = ns["chat_ids"]
    want_next = ns["mrope_decode_position_ids"](ns["chat_delta"], [ids.shape[1]])
    return _all(
        _int(ns["first_answer"], int(ids[:, :-6].max()) + 1, "first_answer"),
        grade_value(ns["nxt"], want_next, rtol=1e-12, what="nxt"),
    )


@_add(
    "ex-mrope-timestamps",
    "gap = ...  # distance on t between the two frames, Qwen3-VL layout (timestamps of 3 tokens)",
    "Recomputed with the page's timestamped_video_segments and mrope_position_ids.",
    "Frame 1 starts after frame 0's largest position, its end-of-vision token and the timestamp.",
)
def _mrope_timestamps(ns):
    grid = ns["vid_grid"]
    ids = ns["mrope_position_ids"](ns["timestamped_video_segments"](grid, [3, 3])).position_ids
    frame = (grid[1] // 2) * (grid[2] // 2)
    want = int(ids[0, 3 + frame + 1 + 3] - ids[0, 3])
    return _int(ns["gap"], want, "gap")


@_add(
    "ex-coverage-alibi",
    "alibi_types = ...  # sorted model types refused with ALiBi's bias as their API",
    "Recomputed from the coverage table (entries): refused types whose api names alibi.",
    "Look at entry['api'] of the refused entries.",
)
def _coverage_alibi(ns):
    refused = {k: e for k, e in ns["entries"].items() if e["status"] == "refused"}
    want = sorted(k for k, e in refused.items() if "alibi_bias" in str(e.get("api")))
    got = ns["alibi_types"]
    if isinstance(got, (set, frozenset, tuple)):
        got = sorted(got)
    return _equal(got, want, "alibi_types", "Only refused entries count; sort the names.")


@_add(
    "ex-coverage-unknown",
    """
message = ...   # the ValueError's text for 'my_decoder' with no_rope_layers
n_layers = ...  # len(rope_schedule(...)) once no_rope_layers is removed
""",
    "The message must name the model type and the key; n_layers is compared with Llama's "
    "class-default num_hidden_layers.",
    "Catch the ValueError with try/except and keep str(exc).",
)
def _coverage_unknown(ns):
    message, n = ns["message"], ns["n_layers"]
    if not isinstance(message, str):
        return _failed(f"message should be the error's text (a str), got {type(message).__name__}.")
    if "my_decoder" not in message or "no_rope_layers" not in message:
        return _failed("message should be refimpl's refusal, naming 'my_decoder' and the key.")
    return _equal(n, ns["CLASS_CONFIGS"]["llama"]["num_hidden_layers"], "n_layers")


@_add(
    "ex-models-index-notes",
    "nested = ...  # stems of the page's config files whose schedule notes mention text_config",
    "Recomputed from rope_schedule(p).notes for the page's files.",
    "Look for 'text_config' in each note of schedule.notes (the refused files have none).",
)
def _models_notes(ns):
    refused = {r["file"] for r in ns["refused"]}
    want = [
        p.stem
        for p in ns["files"]
        if p.stem not in refused and any("text_config" in n for n in ns["rope_schedule"](p).notes)
    ]
    return _equal(sorted(ns["nested"]), sorted(want), "nested")


@_add(
    "ex-models-index-width",
    "differ = ...  # {config stem: (rotated width, hidden_size // heads)} where the two differ",
    "Recomputed from the page's files with rope_schedule; the keys and widths are compared.",
    "Take the first layer with a spec; text_config holds a VLM's language fields.",
)
def _models_width(ns):
    import json

    want = {}
    refused = {r["file"] for r in ns["refused"]}
    for p in ns["files"]:
        if p.stem in refused:
            continue
        cfg = json.loads(p.read_text())
        cfg = cfg.get("text_config", cfg)
        width = cfg.get("hidden_size") or cfg.get("n_embd")
        heads = cfg.get("num_attention_heads") or cfg.get("n_head")
        spec = next((x.spec for x in ns["rope_schedule"](p) if x.spec is not None), None)
        if spec is None or width is None or heads is None:  # no RoPE, or a diff-style file
            continue
        if spec.rotary_dim != width // heads:
            want[p.stem] = (spec.rotary_dim, width // heads)
    got = {k: tuple(v) for k, v in dict(ns["differ"]).items()}
    return _equal(got, want, "differ")


# --- vision -----------------------------------------------------------------------------------


@_add(
    "ex-pixtral-axial",
    """
X = ...          # (2, 36, 16): q = X[0], k = X[1] on a 6 x 6 grid (seeded random)
P = ...          # X rotated with Pixtral's table (pixtral_angles, apply_rope_tables)
A = ...          # X rotated with the axial table (apply_rope_2d)
same = ...       # True or False: are the score matrices P[0] @ P[1].T and A[0] @ A[1].T equal?
""",
    "P and A are recomputed from your X with the page's functions; same is compared too.",
    "Both tables are relative (scores depend on offsets) but use different frequencies.",
)
def _pixtral_axial(ns):
    from refimpl.multiaxis import apply_rope_2d
    from refimpl.rotary import apply_rope_tables

    X = np.asarray(ns["X"], dtype=float)
    r6, c6 = (g.ravel() for g in np.meshgrid(np.arange(6), np.arange(6), indexing="ij"))
    ang = ns["pixtral_angles"](r6, c6, dim=16)
    P, A = apply_rope_tables(X, np.cos(ang), np.sin(ang)), apply_rope_2d(X, r6, c6)
    return _all(
        grade_value(ns["P"], P, rtol=1e-9, atol=1e-12, what="P"),
        grade_value(ns["A"], A, rtol=1e-9, atol=1e-12, what="A"),
        _choice(ns["same"], bool(np.allclose(P[0] @ P[1].T, A[0] @ A[1].T)), "same"),
    )


@_add(
    "ex-llama4-cls",
    """
Q = ...  # (17, 16) queries: 16 patches of a 4 x 4 grid and the class token last
R = ...  # Q rotated with llama4_vision_angles(4, dim=16) (interleaved tables)
""",
    "R is recomputed from your Q; the class token's row must come back unrotated.",
    "The class token's angle is zero.",
)
def _llama4_cls(ns):
    from refimpl.rotary import apply_rope_tables

    Q = np.asarray(ns["Q"], dtype=float)
    ang = ns["llama4_vision_angles"](4, dim=16)
    R = apply_rope_tables(Q, np.cos(ang), np.sin(ang), pairing="interleaved")
    g = grade_value(ns["R"], R, rtol=1e-9, atol=1e-12, what="R")
    if g and not np.allclose(np.asarray(ns["R"])[-1], Q[-1]):
        return _failed("The class token's row should equal its unrotated query.")
    return g


# --- audio, the multi-axis framework, graphs ------------------------------------------------


@_add(
    "ex-whisper-vs-sinusoidal",
    """
perm = ...        # (384,) channel order of sinusoidal(1500, 384) as sines first, then cosines
equal_after = ...  # True or False: sinusoidal(1500, 384)[:, perm] == whisper_sinusoids(1500, 384)?
""",
    "perm is compared with the even then odd channels; the yes/no answer with the two tables.",
    "Whisper's frequencies are T**(-i/(C/2 - 1)), not b**(-2i/C).",
)
def _whisper(ns):
    want = np.r_[np.arange(0, 384, 2), np.arange(1, 384, 2)]
    table = refimpl.sinusoidal(1500, 384)[:, want]
    truth = bool(np.allclose(table, ns["whisper_sinusoids"](1500, 384)))
    return _all(
        grade_value(ns["perm"], want, rtol=1e-12, what="perm"),
        _choice(ns["equal_after"], truth, "equal_after", {True: "Compare a middle channel pair."}),
    )


@_add(
    "ex-pitch-shift",
    """
Q2 = ...  # queries of the page's 96 patches rotated with every band moved up by 2 (ff + 2)
K2 = ...  # the same for the keys
""",
    "Recomputed with apply_rope_time_frequency; the scores Q2 @ K2.T must equal the page's S.",
    "Only band offsets enter the scores.",
)
def _pitch_shift(ns):
    f = ns["apply_rope_time_frequency"]
    q, k, tt, ff = (ns[n] for n in ("q", "k", "tt", "ff"))
    Q2, K2 = f(np.tile(q, (96, 1)), tt, ff + 2), f(np.tile(k, (96, 1)), tt, ff + 2)
    return _all(
        grade_value(ns["Q2"], Q2, rtol=1e-9, atol=1e-12, what="Q2"),
        grade_value(ns["K2"], K2, rtol=1e-9, atol=1e-12, what="K2"),
        grade_value(Q2 @ K2.T, ns["S"], rtol=1e-9, atol=1e-9, what="the shifted scores"),
    )


@_add(
    "ex-framework-fourth-axis",
    "U4 = ...  # (len(th), 4) frequencies of a blocked 4-section layout (4, 4, 4, 4), page's th",
    "Compared with the matrix whose row j holds theta_j in the column of its axis; "
    "mrope_cos_sin must give cos(z U4^T).",
    "Each row has one non-zero entry, theta_j, in the column mrope_axis_of_pair gives.",
)
def _fourth_axis(ns):
    from refimpl import mrope_cos_sin

    th, sec4 = np.asarray(ns["th"]), (4, 4, 4, 4)
    want = th[:, None] * np.eye(4)[ns["mrope_axis_of_pair"](sec4)]
    z = np.random.default_rng(5).integers(0, 40, size=(10, 4))
    g = grade_value(ns["U4"], want, rtol=1e-12, what="U4")
    if g and not np.allclose(mrope_cos_sin(z.T, th, sec4)[0], np.cos(z @ want.T)):
        return _failed("mrope_cos_sin disagrees with cos(z U4^T).")
    return g


@_add(
    "ex-framework-mixed-text",
    "freq = ...  # per-pair frequency of a RoPE-Mixed token with x = y = p (page's F)",
    "Compared with F[0, 0] + F[1, 0] and with the angles rope_mixed_angles gives.",
    "The angle of pair j is x f_x,j + y f_y,j.",
)
def _mixed_text(ns):
    F = np.asarray(ns["F"])
    want = F[0, 0] + F[1, 0]
    p = np.arange(6)
    if not np.allclose(ns["rope_mixed_angles"](p, p, F)[0], np.outer(p, want)):
        return _failed("The page's rope_mixed_angles does not give p (f_x + f_y).")
    return grade_value(ns["freq"], want, rtol=1e-12, what="the frequency")


@_add(
    "ex-graph-path",
    "graph_buckets = ...  # (12, 12) bucketed hop distances of a 12-node path (8 buckets, max 16)",
    "Compared with T5's one-directional buckets of -|j - i| (same settings).",
    "On a path the hop distance is |j - i|.",
)
def _graph_path(ns):
    from refimpl.bias import t5_relative_position_bucket

    ii, jj = np.meshgrid(np.arange(12), np.arange(12), indexing="ij")
    want = t5_relative_position_bucket(
        -np.abs(jj - ii), bidirectional=False, num_buckets=8, max_distance=16
    )
    return grade_value(ns["graph_buckets"], want, rtol=1e-12, what="the buckets")


@_add(
    "ex-graph-rw-limit",
    """
rw_h = ...  # random_walk_encoding of the 6-cycle, 4 steps
rw_t = ...  # random_walk_encoding of two disjoint triangles, 4 steps
""",
    "Both are recomputed with the page's random_walk_encoding.",
    "A triangle returns in 3 steps; a hexagon (bipartite) never at an odd length.",
)
def _graph_rw(ns):
    def cyc(m):
        c = np.zeros((m, m))
        c[np.arange(m), (np.arange(m) + 1) % m] = 1
        return c + c.T

    tri = np.zeros((6, 6))
    tri[:3, :3] = tri[3:, 3:] = cyc(3)
    enc = ns["random_walk_encoding"]
    return _all(
        grade_value(ns["rw_h"], enc(cyc(6), 4), rtol=1e-9, atol=1e-12, what="rw_h"),
        grade_value(ns["rw_t"], enc(tri, 4), rtol=1e-9, atol=1e-12, what="rw_t"),
    )


# --- PoPE -----------------------------------------------------------------------------------


@_add(
    "ex-pope-width",
    """
n_features = ...  # features of PoPE's embedding for a head of width 64
n_freqs = ...     # number of frequencies it uses
slowest = ...     # the slowest frequency for b = 1e4
""",
    "Compared with the page's apply_pope and pope_inv_freq.",
    "PoPE keeps a cosine and a sine half, one frequency b**(-j/d) per input feature.",
)
def _pope_width(ns):
    f = ns["pope_inv_freq"](64)
    width = ns["apply_pope"](np.zeros((1, 64)), [3.0]).shape[-1]
    return _all(
        _int(ns["n_features"], width, "n_features", mistakes=[(64, "A cosine and a sine half.")]),
        _int(
            ns["n_freqs"], f.shape[0], "n_freqs", mistakes=[(32, "One per feature, not per pair.")]
        ),
        grade_value(ns["slowest"], f[-1], rtol=1e-9, what="the slowest frequency"),
    )


@_add(
    "ex-pope-shift",
    """
s1 = ...  # score of the page's q at 100 and k at 40 (apply_pope)
s2 = ...  # the same vectors at 1100 and 1040
""",
    "Both are recomputed with the page's apply_pope, q and k; they must be equal.",
    "Only m - n enters the score.",
)
def _pope_shift(ns):
    ap, q, k = ns["apply_pope"], ns["q"], ns["k"]
    s1 = ap(q, [100]) @ ap(k, [40]).T
    s2 = ap(q, [1100]) @ ap(k, [1040]).T
    return _all(
        grade_value(ns["s1"], s1, rtol=1e-9, atol=1e-9, what="s1"),
        grade_value(ns["s2"], s2, rtol=1e-9, atol=1e-9, what="s2"),
    )


@_add(
    "ex-conformance-cp-shard",
    "held = ...  # positions held by rank 1 of 4 for 16 tokens (eq:rope-cp-shard), as a list",
    "Compared with refimpl.positions.context_parallel_indices(16, 1, 4).",
    "Each rank holds chunk r and chunk 2R - 1 - r of 2R chunks of 16 / (2R) tokens.",
)
def _cp_shard(ns):
    from refimpl.positions import context_parallel_indices

    want = context_parallel_indices(16, 1, 4)
    return grade_value(
        np.asarray(ns["held"]).ravel(),
        want,
        rtol=1e-12,
        what="the positions of rank 1",
        mistakes=[(np.arange(4, 8), "That is a contiguous split; CP balances with two chunks.")],
    )


# ------------------------------------------------------------------------------------------
# Checks kept in files of their own (same shape as the entries above). Imported here, they join
# CHECKS; the workbook's single workbook_checks.py is this file followed by their text, with
# their imports of this module removed (tools/workbook/build.py, ``checks_source``).
EXTRA_CHECK_MODULES = ("checks_toy", "checks_beyond")
if __package__:  # imported as tools.workbook.checks; in the workbook the text follows instead
    from . import checks_beyond, checks_toy  # noqa: F401
