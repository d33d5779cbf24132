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


# --- Variants (ALiBi, T5, xPos, learnable/mixed, 2-D and multimodal RoPE) ---------------------

import numpy as np  # noqa: E402


def plot_head_maps(maps, titles, *, xlabel, ylabel, suptitle, cmap="viridis", ncols=4):
    """Heatmaps of several (rows, cols) arrays side by side, one colour bar each.

    ``-inf`` entries (masked keys) are drawn in white.
    """
    n = len(maps)
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 2.9 * nrows), squeeze=False)
    for ax, m, t in zip(axes.flat, maps, titles, strict=False):
        arr = np.ma.masked_invalid(np.where(np.isinf(m), np.nan, m))
        im = ax.imshow(arr, cmap=cmap, origin="upper")
        ax.set_title(t, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(False)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def plot_curves(x, curves, *, xlabel, ylabel, title, logx=False, logy=False, step=False):
    """Several labelled curves y(x) on one axis; ``curves`` maps a label to y values."""
    fig, ax = plt.subplots()
    for label, y in curves.items():
        if step:
            ax.step(x, y, where="mid", label=label)
        else:
            ax.plot(x, y, label=label)
    if logx:
        ax.set_xscale("symlog" if np.min(x) <= 0 else "log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig
