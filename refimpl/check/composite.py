"""Composite mistakes: causes that combine a correct part with a wrong one, named by the
arithmetic that reproduces the measurement.

* frequencies exactly ``k`` times the expected ones (the rotation applied ``k`` times, or an
  interpolation factor applied twice);
* the expected scaling method with one parameter changed: another base (YaRN on a
  hard-coded base 10000), ``truncate`` ignored, another original context, swapped ``beta``'s,
  the config's other LongRoPE factor set;
* positions that are not used as given: angles that stop growing (clamped positions), a
  constant phase per pair that no offset explains;
* attention factors applied twice, or applied where they should cancel.

Each helper returns the words of a finding, or None when its cause is not there, so that no
finding names a cause the measurement does not show.
"""

from __future__ import annotations

import math

import numpy as np

from ._base import _COMMON_BASES, _SCALE_CLOSE, _SCALING_FACTORS

# Frequencies that are a constant multiple of the expected ones agree with it to this
# relative spread (float32 frequencies carry 1e-7; a different base changes the ratio by a
# factor b'/b per pair, a scaling method by its factor on some pairs only).
_RATIO_SPREAD = 1e-4
# A changed parameter explains the measurement when every frequency agrees to this (float32
# frequencies carry 1e-7; one ramp pair of another original context moves by 1e-2 or more).
_VARIANT_TOL = 1e-4
# Original contexts tried for a scaling method's variants (the values released configs use).
_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _SCALE_CLOSE * max(abs(b), 1.0)


def constant_ratio(theta: np.ndarray, ref: np.ndarray, params: dict) -> str | None:
    """Words for frequencies that are exactly ``k`` times the expected ones, ``k != 1``."""
    live = (ref > 0) & (theta > 0)
    if np.sum(live) < 2 or np.any((ref > 0) != (theta > 0)):
        return None
    ratio = theta[live] / ref[live]  # [eq:check-composite]: k theta_i, or theta_i / s^2
    k = float(np.exp(np.mean(np.log(ratio))))
    if np.max(np.abs(ratio / k - 1.0)) > _RATIO_SPREAD or abs(k - 1.0) < _RATIO_SPREAD:
        return None
    n = round(k)
    if n >= 2 and abs(k - n) < _RATIO_SPREAD * n:
        return (
            f"every frequency is exactly {n} times the expected one: the rotation is applied "
            f"{n} times (angles {n} m theta_i), e.g. RoPE applied in the model and again in the "
            "attention kernel, or to a tensor that was already rotated. Rotate q and k once"
        )
    factor = params.get("factor")
    if factor and abs(k * factor - 1.0) < _RATIO_SPREAD:
        return (
            f"every frequency is exactly 1/{factor:g} of the expected one, which already "
            f"includes the scaling factor {factor:g}: the factor is applied twice "
            f"(theta / {factor:g}^2). Divide the frequencies (or positions) by it once"
        )
    return None


def _method(rope_type):
    from ..scaling import ROPE_SCALINGS

    return ROPE_SCALINGS.get(rope_type) if rope_type else None


def _variants(spec, rope_type: str, params: dict, base: float, r: int, fitted_base):
    """``(words, inv_freq)`` for the expected method with one parameter changed."""
    method = _method(rope_type)
    if method is None:
        return
    accepted = set(method.parameters)
    kw = {k: v for k, v in params.items() if k in accepted}
    seq = getattr(spec, "seq_len", None)
    if "seq_len" in accepted and seq is not None:
        kw["seq_len"] = seq
    bases = [b for b in (fitted_base, *_COMMON_BASES) if b and abs(b / base - 1.0) > 1e-6]
    for b in dict.fromkeys(bases):
        yield (
            f"the {rope_type} scaling computed on base {b:g} instead of the expected "
            f"{base:g} (a hard-coded default base, or another layer's rope_theta)",
            dict(kw, base=b),
        )
    if "truncate" in accepted:
        now = bool(kw.get("truncate", True))
        yield (
            f"YaRN with truncate={not now} (correction range "
            + ("rounded to integers" if not now else "not rounded")
            + f"), but the expected configuration has truncate={now}"
            + (
                ": truncate: false is ignored (llama.cpp and mlx-lm always round it)"
                if not now
                else ""
            ),
            dict(kw, base=base, truncate=not now),
        )
    if "beta_fast" in accepted and "beta_slow" in accepted:
        bf, bs = kw.get("beta_fast", 32.0), kw.get("beta_slow", 1.0)
        yield (
            f"beta_fast and beta_slow swapped ({bs:g} and {bf:g})",
            dict(kw, base=base, beta_fast=bs, beta_slow=bf),
        )
    if "original_max_position" in accepted and rope_type != "longrope":
        for c in _CONTEXTS:
            if c != kw.get("original_max_position"):
                yield (
                    f"the {rope_type} scaling with original_max_position_embeddings {c} "
                    f"instead of {kw.get('original_max_position')}",
                    dict(kw, base=base, original_max_position=c),
                )
    if "factor" in accepted and rope_type not in ("longrope",):
        for f in _SCALING_FACTORS:
            if f != kw.get("factor"):
                yield (
                    f"the {rope_type} scaling with factor {f:g} instead of {kw.get('factor')}",
                    dict(kw, base=base, factor=f),
                )


def changed_parameter(theta, exp, r: int, fitted_base) -> str | None:
    """Words for the expected scaling method with one parameter changed that reproduces the
    measured frequencies (YaRN on base 10000, truncate ignored, another original context or
    factor, swapped betas), or None."""
    spec, rope_type = exp.spec, exp.rope_type
    if spec is None or rope_type in (None, "default") or exp.base is None:
        return None
    if rope_type == "longrope":
        return _other_longrope_set(theta, exp, r)
    method = _method(rope_type)
    if method is None:
        return None
    for words, kw in _variants(spec, rope_type, dict(exp.params), exp.base, r, fitted_base):
        try:
            inv = np.asarray(method(dim=r, **kw).inv_freq, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if inv.shape == theta.shape and np.all(inv > 0) and _agrees(theta, inv):
            return "the frequencies are " + words
    return None


def _agrees(theta, inv) -> bool:
    return bool(np.max(np.abs(theta / inv - 1.0)) <= _VARIANT_TOL)


def _other_longrope_set(theta, exp, r: int) -> str | None:
    params = exp.params
    short, long = params.get("short_factor"), params.get("long_factor")
    if short is None or long is None:
        return None
    geo = exp.base ** (-np.arange(0, r, 2) / r)
    sets = {
        "short_factor": geo / np.asarray(short, float),
        "long_factor": geo / np.asarray(long, float),
    }
    used = next((k for k, v in sets.items() if _agrees(exp.inv_freq, v)), None)
    other = {"short_factor": "long_factor", "long_factor": "short_factor"}.get(used)
    if other is None or not _agrees(theta, sets[other]):
        return None
    seq = getattr(exp.spec, "seq_len", None)
    orig = params.get("original_max_position")
    when = f" (seq_len {seq}, original_max_position_embeddings {orig})" if seq else ""
    return (
        f"the frequencies are the config's other LongRoPE set, {other}, where this length"
        f"{when} takes {used}: the switch between the sets is decided on another length "
        "(vLLM decides it on max_model_len, llama.cpp on the allocated context; transformers "
        "on the sequence length)"
    )


def yarn_default(factor) -> float | None:
    """YaRN's default attention factor ``0.1 ln s + 1`` (None for no factor above 1)."""
    if not factor or factor <= 1.0:
        return None
    return 0.1 * math.log(float(factor)) + 1.0


def attention_composite(scale: float, ref: float, factor) -> str | None:
    """Words for a measured factor that combines the expected one wrongly, or None."""
    default = yarn_default(factor)
    if default is not None and _close(ref, 1.0) and _close(scale, default):
        return (
            f"fn multiplies cos/sin by YaRN's default 0.1 ln(s) + 1 = {default:.6g} for factor "
            f"{float(factor):g}, but for this configuration the factors cancel to 1 "
            "(mscale == mscale_all_dim, or attention_factor 1: the temperature belongs to the "
            "softmax scale). Leave the tables unscaled"
        )
    if default is not None and not _close(ref, default) and _close(scale, ref * default):
        return (
            f"fn multiplies cos/sin by {scale:.6g} = {ref:.6g} x {default:.6g}: the config's "
            "attention factor and the engine's own 0.1 ln(s) + 1 are both applied. The "
            "config's attention_factor is the final factor; apply it alone"
        )
    if default is not None and not _close(ref, default) and _close(scale, default):
        return (
            f"fn multiplies cos/sin by YaRN's default 0.1 ln(s) + 1 = {default:.6g} for factor "
            f"{float(factor):g} where the configuration states {ref:.6g}: the config's "
            "attention_factor (or its mscale ratio) is ignored. Use the stated factor"
        )
    if not _close(ref, 1.0) and _close(scale, 1.0 / ref):
        return (
            f"fn divides by the attention scaling {ref:.6g} instead of multiplying (measured "
            f"{scale:.6g} = 1/{ref:.6g})"
        )
    return None
