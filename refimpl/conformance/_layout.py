r"""What a case's arrays mean: the position of every token and pair (one function per position
form), the heads of every input and output (one per layout), the expected rotation and the
tolerance model. The writer and the verifier both read a case through these functions, so
the files and the verdict cannot disagree.

Tolerance (book page "Suite format"). For output element of pair :math:`(a, b)` at
position :math:`m` with frequency :math:`\theta_i`, attention scaling :math:`s`,
:math:`|x| = |x_a| + |x_b|`, :math:`u` the unit roundoff of the dtype and :math:`e_c` the
table error bound of pipeline class :math:`c` (:data:`refimpl.pipelines.PIPELINE_CLASSES`):

.. math::

    \mathrm{allowed}_c = \kappa\, s\, |x|\,\big(e_c(m, \theta_i) + 4u\big) + \mathrm{tiny},

:math:`\kappa = 2`; copied features (outside the rotated slice, and the ``v`` heads of a
packed ``qkv``) are allowed no error. The verdict's envelope is the largest over the classes
accepted for the dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .._pipeline_classes import FORMAT_UNITS, PIPELINE_CLASSES, accepted_classes
from ..multiaxis import mrope_axis_of_pair
from ..rotary import cos_sin, pair_indices

# Safety factor over each class's bound (the bounds hold for every element; the factor
# leaves room for a kernel's rotation arithmetic beyond the 4u the model counts).
MARGIN = 2.0
# Roundings of the rotation y_a = x_a c - x_b s in the dtype: two products, a sum, the store.
ROTATION_ROUNDINGS = 4
# Smallest positive (subnormal) number of each dtype: the floor of every tolerance.
TINY = {"float32": 2.0**-149, "bfloat16": 2.0**-133, "float16": 2.0**-24}
# How the verifier computes the expected tables (the single place the method is named).
EXPECTED_METHOD = "correct"

POSITION_FORMS = ("positions", "offsets", "position_ids", "cu_seqlens", "mrope", "cache")
LAYOUTS = ("bhsd", "bshd", "thd", "t(hd)", "t(qkv)")


@dataclass
class Logical:
    """One output of a case, read in heads: ``x`` the input values (float64, ``(..., D)``),
    ``m`` the position of every pair (``(..., 1)`` or ``(..., n)``), ``rotate`` which rows are
    rotated (None: all), and how to go between the stored and the head shapes."""

    name: str
    source: str
    x: np.ndarray
    m: np.ndarray
    rotate: np.ndarray | None
    stored_shape: tuple

    def to_heads(self, stored: np.ndarray) -> np.ndarray:
        return np.asarray(stored).reshape(self.x.shape)

    def to_stored(self, heads: np.ndarray) -> np.ndarray:
        return np.asarray(heads).reshape(self.stored_shape)


def varlen_token_positions(cu_seqlens, offsets) -> np.ndarray:
    """Position of token ``t`` of a packed batch: ``t - cu[j] + offsets[j]`` for
    ``cu[j] <= t < cu[j+1]``."""
    cu = np.asarray(cu_seqlens, dtype=np.int64)
    off = np.asarray(offsets, dtype=np.int64)
    t = np.arange(int(cu[-1]), dtype=np.int64)
    j = np.searchsorted(cu, t, side="right") - 1
    return t - cu[j] + off[j]  # [eq:conformance-form-varlen]


def pair_axes(rope: Mapping) -> np.ndarray | None:
    """Row of the M-RoPE position ids that drives each pair (None without sections)."""
    if rope.get("mrope_section") is None:
        return None
    return mrope_axis_of_pair(rope["mrope_section"], rope["mrope_layout"])


def token_positions(form: str, arrays: Mapping, rope: Mapping, lead: tuple, layout: str):
    """Positions of every row of a tensor whose leading (non-feature) shape is ``lead``,
    ``(*lead, 1)``, or ``(*lead, n)`` per pair for M-RoPE position ids; a 1-D position of
    an M-RoPE spec is a text token, ``(p, p, p)`` on the rows and 0 on ggml's fourth row
    (the ``"imrope"`` layout)."""
    m = _token_positions(form, arrays, rope, lead, layout)
    axes = pair_axes(rope)
    if form == "mrope" or axes is None or not np.any(axes == 3) or rope["mrope_layout"] != "imrope":
        return m
    return np.where(axes == 3, 0, np.broadcast_to(m, (*lead, axes.size)))


def _token_positions(form: str, arrays: Mapping, rope: Mapping, lead: tuple, layout: str):
    if form in ("positions", "cache"):
        p = np.asarray(arrays["positions"], dtype=np.int64)
        axis = {"bhsd": 2, "bshd": 1}.get(layout, 0)  # [eq:conformance-form-positions]
        shape = [1] * len(lead)
        shape[axis] = p.shape[0]
        return np.broadcast_to(p.reshape(shape), lead)[..., None]
    if form == "offsets":  # (B, H, S) or (B, S, H): offsets[b] + s
        off = np.asarray(arrays["offsets"], dtype=np.int64)
        s_axis = 2 if layout == "bhsd" else 1
        s = np.arange(lead[s_axis], dtype=np.int64)
        shape = [1] * len(lead)
        shape[s_axis] = lead[s_axis]
        pos = off.reshape(-1, *([1] * (len(lead) - 1))) + s.reshape(shape)
        return np.broadcast_to(pos, lead)[..., None]  # [eq:conformance-form-offsets]
    if form == "position_ids":
        ids = np.asarray(arrays["position_ids"], dtype=np.int64)  # (B, S)
        pos = ids[:, None, :] if layout == "bhsd" else ids[:, :, None]
        return np.broadcast_to(pos, lead)[..., None]  # [eq:conformance-form-ids]
    if form == "cu_seqlens":
        tok = varlen_token_positions(arrays["cu_seqlens"], arrays["offsets"])
        return np.broadcast_to(tok.reshape(-1, *([1] * (len(lead) - 1))), lead)[..., None]
    if form == "mrope":  # position_ids (A, S): pair i of token s at position_ids[axis(i), s]
        ids = np.asarray(arrays["position_ids"], dtype=np.int64)
        per_pair = ids[pair_axes(rope)].T  # (S, n)  [eq:conformance-form-mrope]
        s_axis = {"bhsd": 2, "bshd": 1}.get(layout, 0)
        shape = [1] * len(lead)
        shape[s_axis] = per_pair.shape[0]
        return np.broadcast_to(per_pair.reshape(*shape, -1), (*lead, per_pair.shape[1]))
    raise ValueError(f"position form {form!r} is not one of {POSITION_FORMS}")


def _view(arrays: Mapping, view: Mapping) -> np.ndarray:
    """A strided view (offset and strides in elements) into a stored flat buffer."""
    buf = np.asarray(arrays[view["buffer"]], dtype=np.float64).reshape(-1)
    shape, strides, off = list(view["shape"]), list(view["strides"]), int(view["offset"])
    last = off + sum((n - 1) * st for n, st in zip(shape, strides, strict=True))
    if off < 0 or any(st < 0 for st in strides) or last >= buf.size:
        raise ValueError(f"view {dict(view)} reaches outside its buffer of {buf.size} elements")
    return np.lib.stride_tricks.as_strided(
        buf[off:], shape=shape, strides=[st * buf.itemsize for st in strides]
    ).copy()


def input_heads(entry: Mapping, arrays: Mapping, name: str) -> np.ndarray:
    """Input ``name`` as float64 in heads ``(..., H, D)``-style layout of the case."""
    views = entry.get("views") or {}
    x = _view(arrays, views[name]) if name in views else np.asarray(arrays[name], np.float64)
    d = int(entry["rope"]["dim"])
    if entry["layout"] in ("t(hd)", "t(qkv)"):
        return x.reshape(x.shape[0], -1, d)
    return x


def logical_outputs(entry: Mapping, arrays: Mapping) -> list[Logical]:
    """Every output of a case as :class:`Logical`, from the case's input arrays."""
    rope, form, layout = entry["rope"], entry["position_form"], entry["layout"]
    out = []
    for name, spec in entry["outputs"].items():
        x = input_heads(entry, arrays, spec["from"])
        m = token_positions(form, arrays, rope, x.shape[:-1], layout)
        rotate = None
        if layout == "t(qkv)":
            heads = entry["heads"]
            rotate = np.zeros(x.shape[:-1], dtype=bool)
            rotate[:, : heads["q"] + heads["k"]] = True  # the v heads are copied
        out.append(Logical(name, spec["from"], x, m, rotate, tuple(spec["shape"])))
    return out


def pair_slots(rope: Mapping) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Input pairs (first, second) and the output slots they go to, within the rotated slice."""
    r = int(rope["rotary_dim"])
    first, second = pair_indices(r, rope["pairing"])
    if rope["output_order"] == "half":
        return first, second, np.arange(r // 2), np.arange(r // 2, r)
    return first, second, first, second


def reference_tables(m: np.ndarray, inv_freq: np.ndarray):
    """cos and sin of ``m * inv_freq`` for positions ``m`` (``(..., 1)`` or ``(..., n)``),
    each ``(..., n)``, from the package's tables (:data:`EXPECTED_METHOD`); zero frequencies
    give cos 1, sin 0."""
    inv = np.asarray(inv_freq, dtype=np.float64)
    n, k = inv.shape[0], m.shape[-1]
    cols = np.asarray(m, dtype=np.float64).reshape(-1, k)
    c, s = np.ones((cols.shape[0], n)), np.zeros((cols.shape[0], n))
    if k == 1:
        groups = [(np.arange(n), cols[:, 0])]
    else:  # pairs driven by the same position row share one table
        _, first, label = np.unique(cols.T, axis=0, return_index=True, return_inverse=True)
        label = np.asarray(label).reshape(-1)
        groups = [(np.nonzero(label == g)[0], cols[:, first[g]]) for g in range(first.size)]
    for pairs, pos in groups:
        pairs = pairs[inv[pairs] > 0]
        if pairs.size == 0 or pos.size == 0:
            continue
        uniq, idx = np.unique(pos, return_inverse=True)
        cu, su = cos_sin(uniq, inv[pairs], method=EXPECTED_METHOD)
        c[:, pairs], s[:, pairs] = cu[idx.reshape(-1)], su[idx.reshape(-1)]
    return c.reshape(*m.shape[:-1], n), s.reshape(*m.shape[:-1], n)


def expected_rotation(x: np.ndarray, m: np.ndarray, inv_freq, rope: Mapping, rotate=None):
    """The expected output of rotating rows ``x`` (``(..., D)``) at positions ``m``: for each
    pair ``(a_i, b_i)`` of the slice ``[o, o + r)``, ``y[a_i] = x_a c - x_b s`` and
    ``y[b_i] = x_a s + x_b c`` with ``c, s = A cos, A sin (m theta_i)``, written to the output
    slots of ``output_order``; every other feature (and every row with ``rotate`` False)
    copied."""
    lo, r = int(rope["rotary_offset"]), int(rope["rotary_dim"])
    first, second, oa, ob = pair_slots(rope)
    c, s = reference_tables(m, inv_freq)
    scale = float(rope["attention_scaling"])
    c, s = c * scale, s * scale
    xs = x[..., lo : lo + r]
    xa, xb = xs[..., first], xs[..., second]
    y = np.array(x, dtype=np.float64)
    y[..., lo + oa] = xa * c - xb * s  # [eq:conformance-rotation]
    y[..., lo + ob] = xa * s + xb * c
    if rotate is not None:
        y[~rotate] = x[~rotate]
    return y


class Tolerance:
    """The tolerance model on one output: ``allowed(bound)`` for any class bound, with the
    magnitudes ``|x_a| + |x_b|`` and the distinct positions computed once."""

    def __init__(self, x, m, inv_freq, rope: Mapping, dtype: str, rotate=None):
        lo, r = int(rope["rotary_offset"]), int(rope["rotary_dim"])
        first, second, self.oa, self.ob = pair_slots(rope)
        xs = np.asarray(x, dtype=np.float64)[..., lo : lo + r]
        self.mag = np.abs(xs[..., first]) + np.abs(xs[..., second])  # |x_a| + |x_b|
        self.lo, self.shape, self.rotate, self.dtype = lo, np.shape(x), rotate, dtype
        self.scale = abs(float(rope["attention_scaling"]))
        self.theta = np.asarray(inv_freq, dtype=np.float64)
        rows = np.abs(np.asarray(m, dtype=np.float64)).reshape(-1, m.shape[-1])
        if rows.shape[1] == 1:  # one position per row: distinct values
            uniq, inverse = np.unique(rows[:, 0], return_inverse=True)
            self.uniq = uniq[:, None]
        else:
            self.uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
        self.inverse = np.asarray(inverse).reshape(-1)
        self.lead = m.shape[:-1]

    def allowed(self, bound) -> np.ndarray:
        """kappa s |x| (e + 4u) + tiny on the rotated pairs' slots, 0 on copied features, for
        a class bound ``bound(m, theta, dtype)``."""
        e = bound(self.uniq, self.theta, self.dtype)[self.inverse]
        e = e.reshape(*self.lead, self.theta.shape[0])
        u = FORMAT_UNITS[self.dtype]
        tol = (
            MARGIN * self.scale * self.mag * (e + ROTATION_ROUNDINGS * u)
        )  # [eq:conformance-tolerance]
        tol = tol + TINY[self.dtype]
        allowed = np.zeros(self.shape)
        allowed[..., self.lo + self.oa] = tol
        allowed[..., self.lo + self.ob] = tol
        if self.rotate is not None:
            allowed[~self.rotate] = 0.0
        return allowed


def allowed_error(x, m, inv_freq, rope: Mapping, dtype: str, bound, rotate=None) -> np.ndarray:
    """Per-element allowed ``|got - expected|`` for one class bound ``bound(m, theta, dtype)``
    (see :class:`Tolerance`)."""
    return Tolerance(x, m, inv_freq, rope, dtype, rotate).allowed(bound)


def class_bound(name: str):
    """The bound function of pipeline class ``name`` (positions, theta, dtype)."""
    return PIPELINE_CLASSES[name].bound


def envelope_bound(dtype: str):
    """The largest bound over the classes accepted for ``dtype``: the verdict's."""
    names = accepted_classes(dtype)

    def bound(m, theta, dt):
        out = PIPELINE_CLASSES[names[0]].bound(m, theta, dt)
        for n in names[1:]:
            out = np.maximum(out, PIPELINE_CLASSES[n].bound(m, theta, dt))
        return out

    return bound
