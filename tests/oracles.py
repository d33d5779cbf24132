"""Slow, loop-based oracles written from the formulas with plain Python floats and
``math.cos``/``math.sin``. They share no code with ``refimpl`` and are compared with the
vectorised functions in the tests.

Conventions are the book's: 0-based pair index ``i``, ``theta_i = base ** (-2 i / d)``, a pair
``(x1, x2)`` at position ``m`` becomes ``(x1 cos - x2 sin, x1 sin + x2 cos)`` of ``m theta_i``.
"""

from __future__ import annotations

import math


def inv_freq(dim: int, base: float) -> list[float]:
    """theta_i = base ** (-2 i / dim), i = 0 .. dim/2 - 1."""
    return [base ** (-2.0 * i / dim) for i in range(dim // 2)]


def pairs(dim: int, pairing: str) -> list[tuple[int, int]]:
    """Feature indices (a, b) of every pair, in pair order."""
    h = dim // 2
    if pairing == "half":
        return [(i, i + h) for i in range(h)]
    if pairing == "interleaved":
        return [(2 * i, 2 * i + 1) for i in range(h)]
    raise ValueError(pairing)


def rope_vector(
    v, position, freqs, pairing="half", attention_scaling=1.0, rotary_dim=None
) -> list[float]:
    """Rotate one feature vector ``v`` (a list) at ``position``."""
    r = 2 * len(freqs) if rotary_dim is None else rotary_dim
    out = [float(t) for t in v]
    for i, (a, b) in enumerate(pairs(r, pairing)):
        ang = position * freqs[i]
        c, s = math.cos(ang) * attention_scaling, math.sin(ang) * attention_scaling
        x1, x2 = float(v[a]), float(v[b])
        out[a] = x1 * c - x2 * s
        out[b] = x1 * s + x2 * c
    return out


def rope(x, positions, freqs, pairing="half", attention_scaling=1.0, rotary_dim=None):
    """``x`` is a (seq, dim) nested list; returns the rotated nested list."""
    return [
        rope_vector(row, positions[t], freqs, pairing, attention_scaling, rotary_dim)
        for t, row in enumerate(x)
    ]


def rope_complex(x, positions, freqs):
    """Complex form with interleaved pairs: (x[2i] + j x[2i+1]) * exp(j m theta_i)."""
    out = []
    for t, row in enumerate(x):
        new = []
        for i, th in enumerate(freqs):
            z = complex(row[2 * i], row[2 * i + 1]) * complex(
                math.cos(positions[t] * th), math.sin(positions[t] * th)
            )
            new += [z.real, z.imag]
        out.append(new)
    return out


def rotation_matrix(position, freqs, pairing="half") -> list[list[float]]:
    """Dense d x d matrix, built entry by entry."""
    d = 2 * len(freqs)
    R = [[0.0] * d for _ in range(d)]
    for i, (a, b) in enumerate(pairs(d, pairing)):
        c, s = math.cos(position * freqs[i]), math.sin(position * freqs[i])
        R[a][a], R[a][b], R[b][a], R[b][b] = c, -s, s, c
    return R


def sinusoidal(positions, dim, base) -> list[list[float]]:
    """PE[p, 2i] = sin(p w_i), PE[p, 2i+1] = cos(p w_i)."""
    w = inv_freq(dim, base)
    table = []
    for p in positions:
        row = []
        for wi in w:
            row += [math.sin(p * wi), math.cos(p * wi)]
        table.append(row)
    return table


def interleaved_to_half_rows(n_rows: int, n_heads: int) -> list[int]:
    """Source row of every destination row, as transformers' conversion describes it: view the
    rows as (n_heads, head_dim/2, 2) and exchange the last two axes."""
    hd = n_rows // n_heads
    src = []
    for h in range(n_heads):
        for a in range(2):
            for i in range(hd // 2):
                src.append(h * hd + 2 * i + a)
    return src


def softmax(row) -> list[float]:
    finite = [v for v in row if v != -math.inf]
    mx = max(finite)
    e = [0.0 if v == -math.inf else math.exp(v - mx) for v in row]
    tot = math.fsum(e)
    return [v / tot for v in e]


def attention(q, k, v, *, scale=None, causal=False, bias=None):
    """Single head: q (q_len, d), k (k_len, d), v (k_len, dv), bias (q_len, k_len) or None."""
    d = len(q[0])
    sc = 1.0 / math.sqrt(d) if scale is None else scale
    q_len, k_len = len(q), len(k)
    out, weights = [], []
    for i in range(q_len):
        row = []
        for j in range(k_len):
            s = math.fsum(q[i][t] * k[j][t] for t in range(d)) * sc
            if bias is not None:
                s += bias[i][j]
            if causal and j > i + (k_len - q_len):
                s = -math.inf
            row.append(s)
        w = softmax(row)
        weights.append(w)
        out.append([math.fsum(w[j] * v[j][c] for j in range(k_len)) for c in range(len(v[0]))])
    return out, weights


def entropy(p) -> float:
    return -math.fsum(x * math.log(x) for x in p if x > 0)
