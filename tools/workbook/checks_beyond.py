"""Workbook checks for the "Beyond RoPE" pages added in this part (FoPE, the map page).

Each entry has the shape of the entries of :mod:`tools.workbook.checks` (``_add(label, stub,
how, hint)`` decorating a grader of the notebook namespace) and registers itself into the same
``CHECKS`` table. Two ways to load it, both supported:

* imported as ``tools.workbook.checks_beyond`` (e.g. from the end of ``checks.py``, after its
  helpers are defined): the helpers come from ``.checks``;
* its text appended to ``checks.py`` (the workbook ships one ``workbook_checks.py``): the
  helpers are already defined, so nothing is imported (this file has no ``__future__``
  import for that reason).
"""

import numpy as np

if __package__:  # imported as a module of tools.workbook, not appended to checks.py
    from .checks import _add, _all, _choice, _failed, _int, grade_value

# --- beyond-fope ---------------------------------------------------------------------------


@_add(
    "ex-fope-kept",
    """
n_kept = ...   # pairs FoPE keeps for d = 128, b = 500000, L = 8192
longest = ...  # the longest period (tokens) among the kept pairs
""",
    "Compared with refimpl.fourier.fope_kept and the kept frequencies' periods 2 pi / omega.",
    "A pair is kept when its period 2 pi / omega_j is at most L.",
)
def _fope_kept(ns):
    from refimpl.fourier import fope_kept
    from refimpl.rotary import inv_freq

    w = inv_freq(128, 500000.0)
    kept = fope_kept(w, 8192)
    n = int(kept.sum())
    wrong_period = int(np.sum(1.0 / w <= 8192))
    return _all(
        _int(
            ns["n_kept"],
            n,
            "n_kept",
            mistakes=[
                (64 - n, "That is the number of clipped pairs, not of kept ones."),
                (wrong_period, "The period of a pair is 2 pi / omega, not 1 / omega."),
            ],
        ),
        grade_value(
            ns["longest"],
            float((2 * np.pi / w[kept]).max()),
            rtol=1e-9,
            what="the longest kept period",
            mistakes=[(float((1.0 / w[kept]).max()), "The period is 2 pi / omega.")],
        ),
    )


@_add(
    "ex-fope-pad",
    "ratio = ...  # a clipped pair's score with cos = sin = 1, over its score at frequency zero",
    "Compared with the factor |1 + i|^2 that multiplying both sides by 1 + i gives.",
    "Both the query's and the key's pair are multiplied by 1 + i; the score takes |1 + i|^2.",
)
def _fope_pad(ns):
    got = ns["ratio"]
    try:
        value = float(got)
    except (TypeError, ValueError):
        return _failed(f"ratio should be a number, got {got!r}.")
    return grade_value(
        value,
        2.0,
        rtol=1e-9,
        what="ratio",
        mistakes=[
            (float(np.sqrt(2.0)), "sqrt 2 is the factor on one vector; a score has two."),
            (1.0, "cos = sin = 1 is not the identity: it multiplies the pair by 1 + i."),
        ],
    )


# --- beyond-map ----------------------------------------------------------------------------


@_add(
    "ex-map-self-extend",
    """
i = ...  # query position
j = ...  # key position, j <= i
p = ...  # common shift, p >= 1
""",
    "The check builds Self-Extend's map (G = 4, W = 4) and compares rel[i + p, j + p] with "
    "rel[i, j].",
    "Inside the window the distance is kept exactly; look at pairs further apart than W.",
)
def _map_self_extend(ns):
    from refimpl.remap import self_extend_relative_positions

    vals = [ns["i"], ns["j"], ns["p"]]
    if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in vals):
        return _failed(f"i, j and p should be whole numbers, got {vals!r}.")
    i, j, p = (int(v) for v in vals)
    if not 0 <= j <= i or p < 1:
        return _failed("Choose 0 <= j <= i (a causal pair) and a shift p >= 1.")
    if i + p > 100_000:
        return _failed("Keep i + p below 100000 so that the map stays small.")
    n = i + p + 1
    rel = self_extend_relative_positions(n, n, group=4, window=4)
    if rel[i + p, j + p] == rel[i, j]:
        return _failed(
            f"rel is {rel[i, j]:g} before and after the shift: this pair stays relative. "
            "Inside the window the distance is kept exactly; look at pairs further apart than W."
        )
    return _all(
        grade_value(float(rel[i + p, j + p] != rel[i, j]), 1.0, what="the change of rel"),
    )


@_add(
    "ex-map-shift-test",
    """
change_alibi = ...    # largest |B(i + p, j + p) - B(i, j)| for alibi_bias(4, n + p, causal=False)
change_learned = ...  # the same for S = W @ W.T, W = default_rng(0).standard_normal((n + p, 8))
relative = ...        # "alibi" or "learned": the one whose scores survive the shift
""",
    "Recomputed with n = 24, p = 7 from refimpl.bias.alibi_bias and the seeded table.",
    "Compare the block of scores starting at (p, p) with the one starting at (0, 0).",
)
def _map_shift_test(ns):
    from refimpl.bias import alibi_bias

    n, p = 24, 7
    b = alibi_bias(4, n + p, causal=False)
    want_alibi = float(np.abs(b[:, p : p + n, p : p + n] - b[:, :n, :n]).max())
    w = np.random.default_rng(0).standard_normal((n + p, 8))
    s = w @ w.T
    want_learned = float(np.abs(s[p : p + n, p : p + n] - s[:n, :n]).max())
    return _all(
        grade_value(ns["change_alibi"], want_alibi, rtol=1e-12, atol=1e-12, what="change_alibi"),
        grade_value(ns["change_learned"], want_learned, rtol=1e-9, what="change_learned"),
        _choice(
            ns["relative"],
            "alibi",
            "the relative one",
            {"learned": "A learned table gives each position its own row: a shift changes it."},
        ),
    )
