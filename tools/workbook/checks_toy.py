"""Workbook checks of the exercises on book/experiments/nope-partial.md (part "toy").

Same shape as the entries of :mod:`tools.workbook.checks`: each ``_add(label, stub, how,
hint)`` registers a grader of the notebook namespace in the shared ``CHECKS`` table.
"""

from __future__ import annotations

import numpy as np

from refimpl.exercises import grade_value
from refimpl.rotary import inv_freq
from refimpl.scaling import proportional_frequencies

from .checks import _add, _all, _choice, _failed


@_add(
    "ex-toy-partial-pairs",
    """
theta_partial = ...    # (64,) partial rotary, r = 32: b**(-2i/32) for i < 16, then zeros
theta_p = ...          # (64,) p-RoPE, p = 1/4: b**(-2i/128) for i < 16, then zeros
slowest_partial = ...  # 2 pi / (slowest rotating frequency) of partial rotary, tokens
slowest_p = ...        # the same for p-RoPE
resolves = ...         # "partial" or "p-rope": which tells distances of 1e4 tokens apart
""",
    "Compared with inv_freq(32, 1e4) padded with zeros and with the proportional record.",
    "Partial rotary's exponent is over the rotated width r, p-RoPE's over the whole head d.",
)
def _toy_partial_pairs(ns):
    want_partial = np.concatenate([inv_freq(32, 1e4), np.zeros(48)])
    want_p = proportional_frequencies(dim=128, base=1e4, partial_rotary_factor=0.25).inv_freq
    swapped = "Partial rotary uses b**(-2i/r) with r = 32; p-RoPE b**(-2i/d) with d = 128."
    return _all(
        grade_value(
            ns["theta_partial"],
            want_partial,
            rtol=1e-9,
            atol=1e-15,
            what="theta_partial",
            mistakes=[(want_p, swapped)],
        ),
        grade_value(
            ns["theta_p"],
            want_p,
            rtol=1e-9,
            atol=1e-15,
            what="theta_p",
            mistakes=[(want_partial, swapped)],
        ),
        grade_value(ns["slowest_partial"], 2 * np.pi / want_partial[15], what="slowest_partial"),
        grade_value(ns["slowest_p"], 2 * np.pi / want_p[15], what="slowest_p"),
        _choice(
            ns["resolves"],
            "partial",
            "resolves",
            {"p-rope": "Its slowest wavelength is under a hundred tokens: longer distances alias."},
        ),
    )


@_add(
    "ex-toy-hybrid",
    """
hybrid = ...       # Hybrid([RoPE(cfg2.head_dim), NoPE()]) for cfg2 = ModelConfig()
same_layer0 = ...  # True or False: layer-0 attention equals a RoPE model's (same params)?
same_layer1 = ...  # True or False: and layer 1?
""",
    "Your hybrid is run on fresh parameters against RoPE; your answers are compared with it.",
    "The model asks encoding.layer(l) for each layer's rotation.",
)
def _toy_hybrid(ns):
    from refimpl.experiments import ModelConfig, forward, init_params
    from refimpl.experiments.encodings import Hybrid, NoPE, RoPE

    hybrid = ns["hybrid"]
    if not isinstance(hybrid, Hybrid) or hybrid.n_layers != 2:
        return _failed("hybrid should be a Hybrid of two layer encodings.")
    if not (type(hybrid.layer(0)) is RoPE and isinstance(hybrid.layer(1), NoPE)):
        return _failed("Layer 0 should be RoPE(cfg2.head_dim) and layer 1 NoPE().")
    cfg = ModelConfig()
    rng = np.random.default_rng(1)
    params = init_params(cfg, hybrid, rng)
    tokens = rng.integers(0, cfg.vocab, size=(2, 12))
    a_h = forward(params, tokens, cfg, hybrid)[1]["attn"]
    a_r = forward(params, tokens, cfg, RoPE(cfg.head_dim))[1]["attn"]
    return _all(
        _choice(ns["same_layer0"], bool(np.array_equal(a_h[0], a_r[0])), "same_layer0"),
        _choice(ns["same_layer1"], bool(np.allclose(a_h[1], a_r[1])), "same_layer1"),
    )
