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


# --- Part "What the encodings do" (trained toy models; reads experiments/results/*.json) ---


def beyond(ev: dict) -> float:
    """Accuracy on the positions never seen in training (all positions at the training length)."""
    return ev["acc"] if ev["acc_beyond"] is None else ev["acc_beyond"]


def plot_length_generalisation(doc: dict):
    """One panel per task: accuracy against evaluation length, one line per encoding."""
    import numpy as np

    tasks = sorted({r["task"] for r in doc["results"]}, key=["fetch", "induction", "index"].index)
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.0 * len(tasks), 3.6), sharey=True)
    axes = np.atleast_1d(axes)
    train_len = doc["training"]["seq_len"]
    for ax, task in zip(axes, tasks, strict=True):
        for r in doc["results"]:
            if r["task"] != task:
                continue
            lengths = [e["length"] for e in r["eval"]]
            ax.plot(lengths, [beyond(e) for e in r["eval"]], marker="o", label=r["encoding"])
        ax.axvline(train_len, color="grey", lw=1, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_title(f"task: {task}")
        ax.set_xlabel("evaluation length (tokens)")
    axes[0].set_ylabel("accuracy beyond training length")
    axes[-1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def plot_method_curves(rows: list, key: str, title: str, train_len: int):
    """Accuracy against evaluation length, one line per value of ``row[key]``."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for r in rows:
        ax.plot([e["length"] for e in r["eval"]], [beyond(e) for e in r["eval"]], marker="o",
                label=str(r[key]))
    ax.axvline(train_len, color="grey", lw=1, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("evaluation length (tokens)")
    ax.set_ylabel("accuracy beyond training length")
    ax.set_title(title)
    ax.legend(title=key, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def plot_attention_maps(maps: list):
    """Attention weights of one sequence, one panel per (length, layer, head)."""
    fig, axes = plt.subplots(1, len(maps), figsize=(3.0 * len(maps), 3.2))
    for ax, m in zip(axes, maps, strict=True):
        im = ax.imshow(m["weights"], cmap="viridis", vmin=0, vmax=1)
        ax.set_title(f"L={m['length']} layer {m['layer']} head {m['head']}", fontsize=9)
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
    fig.colorbar(im, ax=axes.tolist(), shrink=0.8, label="attention weight")
    return fig


def plot_entropy(doc: dict):
    """Mean attention entropy (nats) against length, one panel per layer/head."""
    rows = doc["results"]
    heads = sorted({(r["layer"], r["head"]) for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, axes = plt.subplots(1, len(heads), figsize=(3.4 * len(heads), 3.4), sharey=True)
    for ax, (layer, head) in zip(axes, heads, strict=True):
        for method in methods:
            sel = [r for r in rows if r["method"] == method and (r["layer"], r["head"]) == (layer, head)]
            ax.plot([r["length"] for r in sel], [r["entropy"] for r in sel], marker="o", label=method)
        uni = [r for r in rows if r["method"] == methods[0] and (r["layer"], r["head"]) == (layer, head)]
        ax.plot([r["length"] for r in uni], [r["uniform_entropy"] for r in uni], "k--", lw=1,
                label="uniform")
        ax.set_xscale("log", base=2)
        ax.set_title(f"layer {layer}, head {head}")
        ax.set_xlabel("evaluation length (tokens)")
    axes[0].set_ylabel("attention entropy (nats)")
    axes[-1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig
