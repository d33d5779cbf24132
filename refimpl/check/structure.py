"""Stage 3: structure -- pairs, pass-through features, output permutation."""

from __future__ import annotations

import dataclasses

import numpy as np

from ._base import _COUPLING_TOL

# --------------------------------------------------------------------------------------------
# stage 3: structure -- pairs, pass-through features, output permutation


@dataclasses.dataclass
class _Structure:
    """Pairs of input features (a, b), pass-through features, features mixed with several
    others, the output permutation (or None) and the matrices with it undone."""

    pairs: list
    passthrough: list
    odd: list
    permutation: np.ndarray | None
    R: np.ndarray


def _support(R: np.ndarray, floor: float) -> np.ndarray:
    """Boolean (d_out, d_in): input j reaches output o at some probed position."""
    A = np.abs(R).sum(axis=0)  # (d_out, d_in)
    total = A.sum(axis=0, keepdims=True) + 1e-300
    return A > floor * total


def _block_residual(R, oa, ob, a, b) -> float:
    """Residual of rows (oa, ob) on inputs (a, b) from s [[c, -s], [s, c]]."""
    raa, rab, rba, rbb = R[:, oa, a], R[:, oa, b], R[:, ob, a], R[:, ob, b]
    return float(np.max(np.abs(raa - rbb)) + np.max(np.abs(rab + rba)))


def _output_order(R: np.ndarray, support: np.ndarray):
    """``out_of[j]``: the input-frame feature that output j holds, or None when the supports do
    not form pairs and singletons (then the pairs are read without a permutation)."""
    d = R.shape[-1]
    groups: dict = {}
    for o in range(d):
        key = tuple(np.flatnonzero(support[o]))
        if not 1 <= len(key) <= 2:
            return None
        groups.setdefault(key, []).append(o)
    out_of = np.full(d, -1)
    for key, rows in groups.items():
        if len(rows) != len(key):
            return None
        if len(key) == 1:
            out_of[rows[0]] = key[0]
            continue
        (a, b), (o1, o2) = key, rows
        keep = _block_residual(R, o1, o2, a, b)
        swap = _block_residual(R, o2, o1, a, b)
        # rows that are the pair's own features keep their order: a swap there is a
        # reflection, reported as such; rows elsewhere take the order that rotates
        if (o1, o2) != (a, b) and swap < keep:
            o1, o2 = o2, o1
        out_of[o1], out_of[o2] = a, b
    if sorted(out_of) != list(range(d)):
        return None
    return out_of


def _find_pairs(R: np.ndarray, floor: float):
    """Partner of every feature from the coupling summed over positions (no permutation)."""
    dim = R.shape[-1]
    A = np.abs(R).sum(axis=0)  # (d, d)
    off = A.copy()
    np.fill_diagonal(off, 0.0)
    total = A.sum(axis=0) + 1e-300
    partner = np.argmax(off, axis=0)  # strongest coupling of input feature j
    coupled = off[partner, np.arange(dim)] > floor * total
    pairs, passthrough, odd = [], [], []
    for j in range(dim):
        if not coupled[j]:
            passthrough.append(j)
        elif partner[partner[j]] == j and coupled[partner[j]]:
            if j < partner[j]:
                pairs.append((j, int(partner[j])))
        else:
            odd.append(j)
    return pairs, passthrough, odd


def _read_structure(R: np.ndarray, floor: float = _COUPLING_TOL) -> _Structure:
    """Pairs and pass-through features, undoing a fixed output permutation when there is one."""
    out_of = _output_order(R, _support(R, floor))
    perm = None
    if out_of is not None and not np.array_equal(out_of, np.arange(R.shape[-1])):
        perm = out_of
        unpermuted = np.empty_like(R)
        unpermuted[:, out_of, :] = R  # output j holds the reference's feature out_of[j]
        R = unpermuted
    pairs, passthrough, odd = _find_pairs(R, floor)
    return _Structure(pairs, passthrough, odd, perm, R)


def _classify_pairing(pairs, dim):
    """``(pairing, note, proportional)``: the layout of the rotated pairs."""
    if not pairs:
        return "none", "", False
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    h = len(pairs)
    feats = np.sort(np.concatenate([a, b]))
    contiguous = np.array_equal(feats, np.arange(feats[0], feats[0] + len(feats)))
    if contiguous and np.all(b - a == h) and np.array_equal(a, np.arange(a[0], a[0] + h)):
        return "half", "", False
    if contiguous and np.all(b - a == 1) and np.array_equal(a, np.arange(a[0], a[0] + 2 * h, 2)):
        return "interleaved", "", False
    if np.all(b - a == dim // 2) and np.array_equal(a, np.arange(h)):
        return "half", "", True  # rotate_half across the head, trailing pairs at frequency 0
    shown = ", ".join(f"({p}, {q})" for p, q in pairs[:4])
    return "neither", f"pairs {shown}{', ...' if len(pairs) > 4 else ''}", False


def _frame(pairs, pairing: str, proportional: bool, dim: int, expected_zeros: bool):
    """The pairs of the rotation frame: the rotated pairs, plus the frequency-0 pairs of a
    proportional layout (half-split over the head, or interleaved when the expected spec has
    trailing zero frequencies)."""
    if proportional:
        return [(i, i + dim // 2) for i in range(dim // 2)]
    if expected_zeros and pairing == "interleaved" and pairs[0][0] == 0:
        return [(2 * i, 2 * i + 1) for i in range(dim // 2)]
    return list(pairs)
