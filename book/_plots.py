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


# --------------------------------------------------------------------------- Extending the context
# Helpers for the pages of the part "Extending the context" (book/extension_*.md).

import numpy as np  # noqa: E402


def plot_pair_ratios(ratios: dict, *, title: str = "", ax=None):
    """One curve per method: h(theta_i) / theta_i against the pair index i."""
    if ax is None:
        fig, ax = plt.subplots()
    else:
        fig = ax.figure
    for name, r in ratios.items():
        ax.plot(np.arange(len(r)), r, marker=".", label=name)
    ax.set_yscale("log")
    ax.set_xlabel("pair index i (0 = highest frequency)")
    ax.set_ylabel(r"$h(\theta_i)/\theta_i$ (scale kept, log)")
    if title:
        ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def plot_angle_coverage(train_angle, extended: dict, *, title: str = ""):
    """Largest angle L*theta_i seen in training against L'*theta'_i at the extended length."""
    fig, ax = plt.subplots()
    i = np.arange(len(train_angle))
    ax.plot(i, train_angle, "k-", lw=2.5, label=r"training: $L\,\theta_i$")
    for name, a in extended.items():
        ax.plot(i, a, marker=".", lw=1, label=f"{name}: " + r"$L'\,\theta'_i$")
    ax.axhline(2 * np.pi, color="grey", ls=":", label=r"one full turn ($2\pi$)")
    ax.set_yscale("log")
    ax.set_xlabel("pair index i")
    ax.set_ylabel("largest rotation angle (rad, log)")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_curves(x, curves: dict, *, xlabel: str, ylabel: str, title: str = "", logx=False,
                logy=False, styles=None):
    """Several labelled curves on one axis (generic helper of the extension pages)."""
    fig, ax = plt.subplots()
    for name, y in curves.items():
        ax.plot(x, y, (styles or {}).get(name, "-"), marker=".", label=name)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig
