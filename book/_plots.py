"""Plotting helpers for the book's pages (not part of the package).

Every page imports what it needs from here so that code cells stay short. Figures use one
style: readable font sizes, labelled axes with units, a legend where there is more than one
curve.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

STYLE = {
    "figure.figsize": (7.0, 4.0),
    "figure.dpi": 110,
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.fontsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


def use_book_style() -> None:
    """Apply the book's matplotlib style (call once per page)."""
    plt.rcParams.update(STYLE)


# --- Check your implementation (checker, troubleshooting, common mistakes) ---------------


def plot_error_growth(implementations, reference, dim, positions):
    """Log-log plot of max |fn(x, m) - reference(x, m)| against the position m, one curve per
    implementation; x is a fixed seeded unit vector. Returns the figure."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal(dim)
    x /= np.linalg.norm(x)
    xs = np.tile(x, (len(positions), 1))
    want = reference(xs, positions)
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for name, fn in implementations.items():
        err = np.max(np.abs(fn(xs, positions) - want), axis=1)
        ax.loglog(positions[1:], np.maximum(err[1:], 1e-17), marker="o", ms=3, label=name)
    ax.set_xlabel("position m (tokens)")
    ax.set_ylabel("max |output - reference| (unit input)")
    ax.set_title("How the error grows with the position")
    ax.legend(loc="lower right", fontsize=9)
    fig.tight_layout()
    return fig


def plot_base_wavelengths(dim, bases, contexts):
    """Wavelength 2*pi*b**(2i/d) per pair for several bases, with context lengths marked."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    i = np.arange(dim // 2)
    for b in bases:
        ax.semilogy(i, 2 * np.pi * b ** (2 * i / dim), label=f"base {b:g}")
    for L in contexts:
        ax.axhline(L, color="gray", ls="--", lw=1)
        ax.text(1, L * 1.3, f"context {L}", color="gray", fontsize=9)
    ax.set_xlabel("pair index i")
    ax.set_ylabel("wavelength (tokens)")
    ax.set_title("Larger base, longer wavelengths")
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def plot_base_similarity(dim, bases, max_distance):
    """Mean cosine (2/d) sum_i cos(r theta_i) against the relative distance r (log axis)."""
    import numpy as np

    r = np.unique(np.round(np.logspace(0, np.log10(max_distance), 600)))
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    i = np.arange(dim // 2)
    for b in bases:
        theta = b ** (-2 * i / dim)
        ax.semilogx(r, np.cos(np.outer(r, theta)).mean(axis=1), label=f"base {b:g}")
    ax.axhline(0.0, color="gray", lw=1)
    ax.set_xlabel("relative distance r (tokens)")
    ax.set_ylabel("mean cos(r theta_i) (unitless)")
    ax.set_title("Self-similarity against distance")
    ax.legend(loc="lower left")
    fig.tight_layout()
    return fig
