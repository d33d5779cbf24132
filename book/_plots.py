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


# --------------------------------------------------------------------------- numerics part
NUMERICS_COLORS = {
    "accurate": "black",
    "float64": "tab:gray",
    "transformers-float32": "tab:blue",
    "float32-table-bf16": "tab:orange",
    "float32-table-fp16": "tab:olive",
    "bf16-angles": "tab:red",
    "bf16-inv-freq": "tab:purple",
    "recurrence-float32": "tab:green",
    "recurrence-float64": "tab:cyan",
}


def windowed_max(values, window: int):
    """Maximum of consecutive windows of ``window`` entries (for noisy per-position curves)."""
    import numpy as np

    v = np.asarray(values)
    n = v.shape[0] // window
    return v[: n * window].reshape(n, window, *v.shape[1:]).max(axis=1)


def plot_error_vs_position(curves: dict, bounds: dict, *, title: str):
    """Log-log error against position: measured (solid) and predicted bound (dashed).

    ``curves`` and ``bounds`` map a pipeline name to ``(positions, values)``.
    """
    fig, ax = plt.subplots(figsize=(8.0, 5.0))
    for name, (x, y) in curves.items():
        col = NUMERICS_COLORS.get(name)
        ax.loglog(x, y, "-", color=col, lw=1.4, label=name)
        if name in bounds:
            bx, by = bounds[name]
            ax.loglog(bx, by, "--", color=col, lw=1.0, alpha=0.8)
    ax.set_xlabel("position m (tokens)")
    ax.set_ylabel("max |error| of cos, sin over pairs")
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2, loc="center left")
    return fig


def plot_drift(curves: dict, *, title: str, ylabel: str):
    """Log-log drift of the relative property against the query position."""
    fig, ax = plt.subplots(figsize=(8.0, 4.5))
    for name, (x, y) in curves.items():
        ax.loglog(x, y, "-", color=NUMERICS_COLORS.get(name), label=name)
    ax.set_xlabel("query position m (tokens)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2)
    return fig


def plot_ulp_histograms(ulps: dict, *, title: str):
    """Histograms of ulp errors (log-spaced bins), one per method."""
    import numpy as np

    fig, ax = plt.subplots()
    bins = np.concatenate([[0, 0.5, 1.0, 1.5], np.logspace(0.5, 14, 50)])
    for name, u in ulps.items():
        ax.hist(np.maximum(u, 1e-3), bins=bins, histtype="step", lw=1.5, label=name,
                color=NUMERICS_COLORS.get(name))
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("error (ulp of the correctly rounded value)")
    ax.set_ylabel("number of entries")
    ax.set_title(title)
    ax.legend()
    return fig
