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
