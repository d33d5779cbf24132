"""The expected configuration, read from the caller's declarations."""

from __future__ import annotations

import dataclasses

import numpy as np

from .._checks import (
    check_base,
    check_dim,
    check_int,
    check_pairing,
    check_positive,
    check_real,
)
from ._base import MAX_PROBE_POSITION

# --------------------------------------------------------------------------------------------
# expected configuration


@dataclasses.dataclass
class _Expected:
    inv_freq: np.ndarray | None
    base: float | None
    pairing: str | None
    rotary_dim: int | None
    attention_scaling: float | None
    rope_type: str | None
    params: dict
    output_order: str | None
    rotary_offset: int = 0
    offset: float | None = None  # declared position offset: position m is rotated as m + offset
    spec: object = None  # the expected spec itself (for the variants a composite finding tries)

    @property
    def blind(self) -> bool:
        """Nothing expected (a declared rotary width alone keeps the check blind): the report
        states what was measured, and only what no RoPE does fails."""
        return (
            self.inv_freq is None
            and self.base is None
            and self.pairing is None
            and self.attention_scaling is None
            and self.output_order is None
            and self.offset is None
        )

    @property
    def scale(self) -> float | None:
        """The factor on the rotated features the verdict requires: the declared one, else 1
        when anything else is expected (an undeclared factor is a departure), else None."""
        if self.attention_scaling is not None:
            return self.attention_scaling
        return None if self.blind else 1.0


_OUTPUT_ORDERS = ("same", "half")


def _read_expected(
    expected,
    dim,
    base,
    pairing,
    rotary_dim,
    attention_scaling,
    seq_len,
    output_order=None,
    offsets=None,
):
    """The declarations of a check as one :class:`_Expected` (arguments validated by name)."""
    inv, rtype, params, order, offset, spec = None, None, {}, None, 0, None
    is_config = isinstance(expected, (dict, str)) or hasattr(expected, "__fspath__")
    if seq_len is not None:
        seq_len = check_int(seq_len, "seq_len", minimum=1, maximum=MAX_PROBE_POSITION)
        if not is_config:
            raise ValueError(
                "seq_len is used only when expected is a model config (dict or path) that "
                "rope_from_config reads; pass the spec built with that seq_len instead"
            )
    if expected is not None:
        if is_config:
            from ..config import rope_from_config

            kw = {} if seq_len is None else {"seq_len": seq_len}
            expected = rope_from_config(expected, **kw)
        for attr in ("inv_freq", "pairing", "rotary_dim"):
            if not hasattr(expected, attr):
                raise TypeError(
                    "expected must be a RopeSpec (from refimpl.rope_from_config), a config dict "
                    f"or a config path; the object given has no attribute {attr!r}"
                )
        spec = expected
        inv = np.asarray(expected.inv_freq, dtype=np.float64)
        pairing = pairing if pairing is not None else expected.pairing
        rotary_dim = rotary_dim if rotary_dim is not None else int(expected.rotary_dim)
        if attention_scaling is None:
            attention_scaling = float(getattr(expected, "attention_scaling", 1.0))
        if base is None and getattr(expected, "base", None) is not None:
            base = float(expected.base)
        rtype = getattr(expected, "rope_type", None)
        params = {
            k: v
            for k, v in dict(getattr(expected, "params", None) or {}).items()
            if k not in ("dim", "base", "seq_len")
        }
        order = getattr(expected, "output_order", None)
        offset = int(getattr(expected, "rotary_offset", 0) or 0)
        spec_dim = getattr(expected, "dim", None)
        if spec_dim is not None and int(spec_dim) != dim:
            raise ValueError(f"dim={dim} differs from the expected spec's dim={int(spec_dim)}")
    if base is not None:
        base = check_base(base)
    if pairing is not None:
        check_pairing(pairing)
    if rotary_dim is not None:
        rotary_dim = check_dim(rotary_dim, "rotary_dim")
        if rotary_dim > dim:
            raise ValueError(f"rotary_dim={rotary_dim} exceeds dim={dim}")
    if attention_scaling is not None:
        attention_scaling = check_positive(attention_scaling, "attention_scaling")
    if output_order is not None:
        if output_order not in _OUTPUT_ORDERS:
            raise ValueError(f"output_order must be one of {_OUTPUT_ORDERS}, got {output_order!r}")
        order = output_order
    if offsets is not None:
        offsets = check_real(offsets, "offsets")
    return _Expected(
        inv, base, pairing, rotary_dim, attention_scaling, rtype, params, order, offset,
        offsets, spec,
    )  # fmt: skip
