"""Figures of the page on NoPE, hybrids and partial rotation (book/experiments/nope-partial.md).

Each function takes a result document of ``experiments/results/`` and returns a figure; the
style is the book's (``_plots.use_book_style`` is called by the page).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from _plots import _exp_style


def plot_attention_profiles(doc: dict, task: str, length: int):
    """Mean attention weight against relative distance, one panel per encoding and layer.

    Both heads of a layer are drawn; the dashed line is uniform causal attention.
    """
    rows = [r for r in doc["results"] if r["task"] == task]
    n_layers = doc["model"]["n_layers"]
    fig, axes = plt.subplots(
        n_layers,
        len(rows),
        figsize=(2.6 * len(rows), 2.3 * n_layers),
        sharex=True,
        sharey=True,
        constrained_layout=True,
    )
    for col, r in enumerate(rows):
        for a in r["attention"]:
            if a["length"] != length:
                continue
            ax = axes[a["layer"], col]
            dist = np.arange(len(a["profile"]))
            ax.plot(dist, a["profile"], label=f"head {a['head']}", **_exp_style(a["head"]))
            ax.axhline(a["uniform"], color="k", ls="--", lw=1)
            ax.set_title(f"{r['encoding']}, layer {a['layer']} ({r['layers'][a['layer']]})")
    for ax in axes[-1]:
        ax.set_xlabel("distance i - j (tokens)")
    for ax in axes[:, 0]:
        ax.set_ylabel("mean attention weight")
    axes[0, -1].legend(loc="upper right")
    return fig


def plot_probes(doc: dict):
    """R^2 of the position probes after each layer, one panel per task, one line per model."""
    tasks = list(dict.fromkeys(r["task"] for r in doc["results"]))
    fig, axes = plt.subplots(
        1, len(tasks), figsize=(3.6 * len(tasks), 3.2), sharey=True, constrained_layout=True
    )
    for ax, task in zip(axes, tasks, strict=True):
        for i, r in enumerate(x for x in doc["results"] if x["task"] == task):
            for kind, ls in (("linear", ":"), ("quadratic", "-")):
                sel = [p for p in r["probe"] if p["features"] == kind]
                ax.plot(
                    [p["layer"] for p in sel],
                    [p["r2"] for p in sel],
                    color=f"C{i}",
                    ls=ls,
                    marker=_exp_style(i)["marker"],
                    label=f"{r['encoding']} ({kind})",
                )
        ax.axhline(0.0, color="grey", lw=1)
        ax.set_title(f"task: {task}")
        ax.set_xticks(range(doc["model"]["n_layers"] + 1))
        ax.set_xlabel("after layer (0: embedding)")
    axes[0].set_ylabel("probe R² for the position t")
    axes[-1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    return fig


def plot_decay_variants(doc: dict, key: str, ylabel: str):
    """``key`` of the exact decay (``"bound"`` or ``"ones_score"``) against distance, one panel
    per head width, one line per encoding."""
    dims = list(dict.fromkeys(r["head_dim"] for r in doc["decay"]))
    fig, axes = plt.subplots(
        1, len(dims), figsize=(4.6 * len(dims), 3.4), sharey=True, constrained_layout=True
    )
    for ax, dim in zip(axes, dims, strict=True):
        sel = [r for r in doc["decay"] if r["head_dim"] == dim]
        for i, r in enumerate(sel):
            ax.plot(
                r["distance"], r[key], label=r["encoding"], color=f"C{i}", ls=_exp_style(i)["ls"]
            )
        ax.set_xscale("log")
        ax.set_title(f"head width d = {dim}")
        ax.set_xlabel("relative distance r (tokens)")
    axes[0].set_ylabel(ylabel)
    axes[-1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig
