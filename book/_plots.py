"""Plotting helpers for the book's pages (not part of the package).

Every page imports what it needs from here so that code cells stay short. Figures use one
style: readable font sizes, labelled axes with units, a legend where there is more than one
curve.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

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
    """Apply the book's matplotlib style and 2x (retina) figure output; call once per page."""
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    plt.rcParams.update(STYLE)
    set_matplotlib_formats("retina")


def glue_figure(name: str, fig) -> None:
    """Glue ``fig`` under ``name`` for a ``{glue:figure}`` directive and close it.

    Closing matters: a glued figure that stays open is drawn a second time, uncaptioned, by
    the inline backend at the end of the cell.
    """
    from myst_nb import glue

    glue(name, fig, display=False)
    plt.close(fig)


def glue_value(name: str, value) -> None:
    """Glue a number (NumPy scalars become Python numbers) for ``{glue:text}`` in the prose."""
    from myst_nb import glue

    glue(name, value.item() if isinstance(value, np.generic) else value, display=False)


# ---------------------------------------------------------------------------------------------
# Part 1: foundations (why positions, naive and sinusoidal encodings, RoPE, pairings)
# ---------------------------------------------------------------------------------------------


def plot_permuted_attention(weights, weights_perm, perm):
    """Attention weights of a sequence and of its permutation, the latter put back in order."""
    inv = np.argsort(perm)
    fig, axes = plt.subplots(1, 3, figsize=(10.0, 3.4), constrained_layout=True)
    panels = [
        (weights, "original order"),
        (weights_perm, "permuted tokens"),
        (weights_perm[np.ix_(inv, inv)], "permuted, then un-permuted"),
    ]
    for ax, (w, title) in zip(axes, panels, strict=True):
        im = ax.imshow(w, cmap="viridis", vmin=0, vmax=float(weights.max()))
        ax.set_title(title)
        ax.set_xlabel("key index j")
        ax.grid(False)
    axes[0].set_ylabel("query index i")
    fig.colorbar(im, ax=axes, shrink=0.8, label="attention weight")
    return fig


def plot_naive_encodings(lengths, integer_max, normalized_step, pos10):
    """Magnitude of the integer encoding and resolution of the normalized one vs length."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(10.0, 3.8), constrained_layout=True)
    a.loglog(lengths, integer_max, "o-", label="integer: largest entry, N - 1")
    a.axhline(1.0, color="gray", ls="--", label="scale of a unit-norm embedding")
    a.set_xlabel("sequence length N (tokens)")
    a.set_ylabel("magnitude (dimensionless)")
    a.set_title("integer encoding: magnitude grows with N")
    a.legend()
    b.loglog(lengths, normalized_step, "o-", label="normalized: step between neighbours")
    b.loglog(lengths, pos10, "s--", label="normalized: value given to position 10")
    b.set_xlabel("sequence length N (tokens)")
    b.set_ylabel("encoded value (dimensionless)")
    b.set_title("normalized encoding: resolution shrinks with N")
    b.legend()
    return fig


def plot_binary_vs_sinusoid(n_positions: int, n_bits: int):
    """Bits of 0..n_positions-1 beside cosines with the same geometric speeds (pi 2^-i)."""
    p = np.arange(n_positions)
    bits = (p[None, :] >> np.arange(n_bits)[:, None]) & 1  # (bits, positions)
    waves = np.cos(p[None, :] * np.pi * 2.0 ** -np.arange(n_bits)[:, None])
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.0), sharey=True, constrained_layout=True)
    for ax, table, title, cmap, vmin in (
        (axes[0], bits, "binary: bit j of p", "Greys", 0),
        (axes[1], waves, r"sinusoid: $\cos(p\,\pi\,2^{-i})$", "RdBu_r", -1),
    ):
        ax.imshow(table, aspect="auto", cmap=cmap, vmin=vmin, vmax=1, interpolation="nearest")
        ax.set_title(title)
        ax.set_xlabel("position p (tokens)")
        ax.grid(False)
    axes[0].set_ylabel("row (bit j, pair i)")
    return fig


def plot_sinusoidal_table(pe):
    """Heat map of a sinusoidal table (positions x features)."""
    fig, ax = plt.subplots(figsize=(8.0, 4.0), constrained_layout=True)
    im = ax.imshow(pe, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    ax.set_xlabel("feature j (even: sin, odd: cos)")
    ax.set_ylabel("position p (tokens)")
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="PE[p, j]")
    return fig


def plot_wavelengths(dims_bases, n_train=None):
    """Wavelength 2 pi / theta_i (tokens) of every pair i, for several (d, base)."""
    fig, ax = plt.subplots(figsize=(7.0, 4.0), constrained_layout=True)
    for k, (d, base) in enumerate(dims_bases):
        i = np.arange(d // 2)
        lam = 2 * np.pi * base ** (2 * i / d)
        # curves that coincide (same base, other d) stay visible: wide pale line under thin ones
        ax.semilogy(
            i / (d // 2),
            lam,
            lw=5 if k == 0 else 1.8,
            alpha=0.45 if k == 0 else 1.0,
            label=f"d = {d}, base = {base:g}",
        )
    if n_train is not None:
        ax.axhline(n_train, color="gray", ls="--", label=f"{n_train} tokens")
    ax.set_xlabel("pair index i / (d/2)")
    ax.set_ylabel(r"wavelength $2\pi/\theta_i$ (tokens)")
    ax.legend()
    return fig


def plot_dot_vs_offset(offsets, curves):
    """PE(p) . PE(p + k) against k; ``curves`` maps a label to values."""
    return plot_curves(offsets, curves, xlabel="offset k (tokens)", ylabel="PE(p) · PE(p + k)")


def plot_pair_trajectories(points, freqs):
    """Each pair of a rotated vector traces a circle at its own speed.

    ``points`` has shape (n_positions, n_pairs, 2).
    """
    n_pairs = points.shape[1]
    fig, axes = plt.subplots(1, n_pairs, figsize=(3.2 * n_pairs, 3.4), constrained_layout=True)
    for i, ax in enumerate(np.atleast_1d(axes)):
        xy = points[:, i]
        ax.plot(xy[:, 0], xy[:, 1], "-", color="0.7", lw=1)
        sc = ax.scatter(xy[:, 0], xy[:, 1], c=np.arange(len(xy)), cmap="viridis", s=18, zorder=3)
        ax.set_aspect("equal")
        ax.set_title(f"pair {i}: θ = {freqs[i]:.3g} rad/token")
        ax.set_xlabel("first feature of the pair")
        ax.set_ylabel("second feature")
    fig.colorbar(sc, ax=axes, shrink=0.8, label="position m (tokens)")
    return fig


def plot_rotating_pair(q, k, *, theta, positions):
    """q rotated by m theta and k by n theta, one panel per (m, n); the angle between them drawn.

    ``q`` and ``k`` are 2-vectors (one pair); ``positions`` a list of (m, n).
    """
    fig, axes = plt.subplots(
        1, len(positions), figsize=(3.4 * len(positions), 3.4), constrained_layout=True
    )
    for ax, (m, n) in zip(np.atleast_1d(axes), positions, strict=True):
        qm = _rotate(q, m * theta)
        kn = _rotate(k, n * theta)
        for v, name, color in ((qm, f"q at m={m}", "tab:blue"), (kn, f"k at n={n}", "tab:red")):
            ax.annotate("", xy=v, xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": color})
            ax.text(*(1.08 * v), name, color=color, ha="center", va="center")
        a0, a1 = np.arctan2(qm[1], qm[0]), np.arctan2(kn[1], kn[0])
        arc = a0 + np.linspace(0.0, (a1 - a0) % (2 * np.pi), 30)  # counter-clockwise, q to k
        ax.plot(0.35 * np.cos(arc), 0.35 * np.sin(arc), color="0.3", lw=1)
        ax.set_title(f"n - m = {n - m}")
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.3, 1.3)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
    return fig


def _rotate(v, angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])


def plot_decay(distances, curves):
    """Long-term decay: Su's bound against actual scores; ``curves`` maps label -> values."""
    fig, ax = plt.subplots(figsize=(7.5, 4.0), constrained_layout=True)
    for label, (vals, style) in curves.items():
        ax.semilogx(distances, vals, style, label=label, lw=1.2)
    ax.set_xlabel("relative distance n - m (tokens)")
    ax.set_ylabel("value (dimensionless)")
    ax.legend(fontsize=9)
    return fig


def plot_pairings(dim):
    """Which features form a pair in each layout: colour = pair index."""
    fig, axes = plt.subplots(2, 1, figsize=(8.0, 2.6), constrained_layout=True)
    h = dim // 2
    half = np.concatenate([np.arange(h), np.arange(h)])
    inter = np.repeat(np.arange(h), 2)
    for ax, row, title in zip(
        axes,
        (half, inter),
        (
            'pairing="half" (transformers, GPT-NeoX)',
            'pairing="interleaved" (RoFormer, Meta Llama, GPT-J)',
        ),
        strict=True,
    ):
        ax.imshow(row[None, :], cmap="tab10" if h <= 10 else "tab20", aspect="auto")
        for j, v in enumerate(row):
            ax.text(j, 0, f"{v}", ha="center", va="center", color="white", fontsize=10)
        ax.set_yticks([])
        ax.set_xticks(range(dim))
        ax.set_title(title, fontsize=10)
        ax.grid(False)
    axes[1].set_xlabel("feature index j (the number in a cell is its pair i)")
    return fig


def plot_wrong_pairing(positions, errors):
    """Score error against distance when q/k were trained for one pairing and rotated with the
    other; ``errors`` maps a label to values."""
    return plot_curves(
        positions,
        errors,
        xlabel="relative distance n - m (tokens)",
        ylabel="|score error| / |score scale|",
    )


# --- Part "What the encodings do" (trained toy models; reads experiments/results/*.json) ---


_EXP_MARKERS = "osD^v<>Px*"
_EXP_STYLES = ("-", "--", "-.", ":")


def _exp_style(i: int) -> dict:
    """Marker and line style of the i-th curve (distinct even where colours repeat)."""
    return {"marker": _EXP_MARKERS[i % len(_EXP_MARKERS)], "ls": _EXP_STYLES[(i // 3) % 4]}


def beyond(ev: dict) -> float:
    """Accuracy on the positions never seen in training (all positions at the training length)."""
    return ev["acc"] if ev["acc_beyond"] is None else ev["acc_beyond"]


def plot_length_generalisation(doc: dict):
    """One panel per task: accuracy against evaluation length, one line per encoding."""
    import numpy as np

    tasks = sorted({r["task"] for r in doc["results"]}, key=["fetch", "induction", "index"].index)
    fig, axes = plt.subplots(
        1, len(tasks), figsize=(4.0 * len(tasks), 3.6), sharey=True, constrained_layout=True
    )
    axes = np.atleast_1d(axes)
    train_len = doc["training"]["seq_len"]
    for ax, task in zip(axes, tasks, strict=True):
        sel = [r for r in doc["results"] if r["task"] == task]
        for i, r in enumerate(sel):
            lengths = [e["length"] for e in r["eval"]]
            ax.plot(lengths, [beyond(e) for e in r["eval"]], label=r["encoding"], **_exp_style(i))
        ax.axvline(train_len, color="grey", lw=1, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_title(f"task: {task}")
        ax.set_xlabel("evaluation length (tokens)")
    axes[0].set_ylabel(f"accuracy beyond {train_len} tokens (fraction)")
    axes[-1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def plot_method_curves(rows: list, key: str, title: str, train_len: int):
    """Accuracy against evaluation length, one line per value of ``row[key]``."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8), constrained_layout=True)
    for i, r in enumerate(rows):
        ax.plot(
            [e["length"] for e in r["eval"]],
            [beyond(e) for e in r["eval"]],
            label=str(r[key]),
            **_exp_style(i),
        )
    ax.axvline(train_len, color="grey", lw=1, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("evaluation length (tokens)")
    ax.set_ylabel(f"accuracy beyond {train_len} tokens (fraction)")
    ax.set_title(title)
    ax.legend(title=key, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


def plot_attention_maps(maps: list):
    """Attention weights of one sequence, one panel per (length, layer, head)."""
    fig, axes = plt.subplots(
        1, len(maps), figsize=(3.0 * len(maps), 3.4), sharey=True, constrained_layout=True
    )
    for ax, m in zip(axes, maps, strict=True):
        im = ax.imshow(m["weights"], cmap="viridis", vmin=0, vmax=1)
        ax.set_title(f"L={m['length']}, layer {m['layer']}, head {m['head']}", fontsize=9)
        ax.grid(False)
    axes[0].set_ylabel("query position (token index)")
    fig.supxlabel("key position (token index)", fontsize=11)
    fig.colorbar(im, ax=axes.tolist(), shrink=0.8, label="attention weight")
    return fig


def plot_entropy(doc: dict):
    """Mean attention entropy (nats) against length, one panel per layer/head."""
    rows = doc["results"]
    heads = sorted({(r["layer"], r["head"]) for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, axes = plt.subplots(
        1, len(heads), figsize=(3.4 * len(heads), 3.4), sharey=True, constrained_layout=True
    )
    for ax, (layer, head) in zip(axes, heads, strict=True):
        for i, method in enumerate(methods):
            sel = [
                r
                for r in rows
                if r["method"] == method and (r["layer"], r["head"]) == (layer, head)
            ]
            ax.plot(
                [r["length"] for r in sel],
                [r["entropy"] for r in sel],
                label=method,
                **_exp_style(i),
            )
        uni = [
            r
            for r in rows
            if r["method"] == methods[0] and (r["layer"], r["head"]) == (layer, head)
        ]
        ax.plot(
            [r["length"] for r in uni],
            [r["uniform_entropy"] for r in uni],
            "k--",
            lw=1,
            label="uniform",
        )
        ax.set_xscale("log", base=2)
        ax.set_title(f"layer {layer}, head {head}")
        ax.set_xlabel("evaluation length (tokens)")
    axes[0].set_ylabel("attention entropy (nats)")
    axes[-1].legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


# --------------------------------------------------------------------------- Extending the context
# Helpers for the pages of the part "Extending the context" (book/extension_*.md).


def plot_pair_ratios(ratios: dict, *, title: str = "", ax=None, legend_loc="best"):
    """One curve per method: h(theta_i) / theta_i against the pair index i."""
    if ax is None:
        fig, ax = plt.subplots(constrained_layout=True)
    else:
        fig = ax.figure
    for name, r in ratios.items():
        ax.plot(np.arange(len(r)), r, marker=".", label=name)
    ax.set_yscale("log")
    ax.set_xlabel("pair index i (0 = highest frequency)")
    ax.set_ylabel(r"$h(\theta_i)/\theta_i$ (scale kept, log)")
    if title:
        ax.set_title(title)
    if legend_loc == "below":  # under the axes, clear of every curve
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    else:
        ax.legend(loc=legend_loc)
    return fig


def plot_angle_coverage(train_angle, extended: dict, *, title: str = ""):
    """Largest angle L*theta_i seen in training against L'*theta'_i at the extended length."""
    fig, ax = plt.subplots(constrained_layout=True)
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
    return fig


def plot_curves(
    x,
    curves: dict,
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
    logx=False,
    logy=False,
    step=False,
    styles=None,
    legend_loc="best",
):
    """The book's one generic plotter: several labelled curves y(x) on one axis.

    ``curves`` maps a label to y values; ``styles`` maps a label to a matplotlib format
    string. Points are marked only when there are few of them (dense markers hide the
    curves); ``step`` draws piecewise-constant curves (bucket indices); ``logx`` uses a
    symmetric log axis when x reaches zero or below.
    """
    fig, ax = plt.subplots(constrained_layout=True)
    marker = "." if len(x) <= 80 and not step else None
    for name, y in curves.items():
        fmt = (styles or {}).get(name, "-")
        if step:
            ax.step(x, y, where="mid", label=name)
        else:
            ax.plot(x, y, fmt, marker=marker, label=name)
    if logx:
        ax.set_xscale("symlog" if np.min(x) <= 0 else "log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(loc=legend_loc)
    return fig


# --- Variants (ALiBi, T5, xPos, learnable/mixed, 2-D and multimodal RoPE) ---------------------


def plot_head_maps(
    maps, titles, *, xlabel, ylabel, suptitle, cmap="viridis", ncols=4, shared_scale=False
):
    """Heatmaps of several (rows, cols) arrays side by side.

    ``-inf`` entries (masked keys) are drawn in white. With ``shared_scale`` every panel uses
    one colour scale and one colour bar, so that panels can be compared by colour; otherwise
    each panel has its own.
    """
    n = len(maps)
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    arrays = [np.ma.masked_invalid(np.where(np.isinf(m), np.nan, m)) for m in maps]
    scale = {}
    if shared_scale:
        scale = {"vmin": min(a.min() for a in arrays), "vmax": max(a.max() for a in arrays)}
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(3.1 * ncols, 2.9 * nrows), squeeze=False, constrained_layout=True
    )
    for ax, arr, t in zip(axes.flat, arrays, titles, strict=False):
        im = ax.imshow(arr, cmap=cmap, origin="upper", **scale)
        ax.set_title(t, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(False)
        if not shared_scale:
            fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if shared_scale:
        fig.colorbar(im, ax=axes, shrink=0.8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(suptitle)
    return fig


# --- Real models, layer by layer (MLA) ----------------------------------------------------------

_MLA_ROPE = {"facecolor": "tab:orange", "alpha": 0.85}
_MLA_SHARED_ROPE = {"facecolor": "#d95f02", "alpha": 0.85}
_MLA_NOPE = {"facecolor": "0.85"}
_MLA_VALUE = {"facecolor": "#c6dbef"}
_MLA_FONT = 10


def plot_mla_head_split(
    *, nope: int, rope: int, value: int, kv_rank: int, n_heads: int, pairs, order
):
    """One MLA attention head drawn to scale (features along x): the query, the keys of all
    heads and the value, each split into the part without position and the rotated rope part.

    Parameters
    ----------
    nope, rope, value : int
        ``qk_nope_head_dim``, ``qk_rope_head_dim`` and ``v_head_dim`` of the config.
    kv_rank : int
        ``kv_lora_rank``: the width of the compressed latent that the keys' nope parts and the
        values are projected from.
    n_heads : int
        ``num_attention_heads``: how many heads share the key's rope part.
    pairs, order : str
        Which features the rotation pairs and in which order it writes them back (one line
        each), noted beside the query's rope part.
    """
    fig, ax = plt.subplots(figsize=(7.0, 4.0), constrained_layout=True)
    ax.set_axis_off()
    width = nope + rope
    gap = 0.06 * width  # between the boxes and the notes, and the labels and the boxes
    notes_x = width + gap
    row_h, key_h = 0.62, 0.5

    def box(x0, x1, y, text, style, height=row_h):
        ax.add_patch(
            plt.Rectangle((x0, y - height / 2), x1 - x0, height, edgecolor="black", lw=1.0, **style)
        )
        if text:
            ax.text((x0 + x1) / 2, y, text, ha="center", va="center", fontsize=_MLA_FONT)

    def text(x, y, words, **kw):
        ax.text(x, y, words, **{"va": "center", "fontsize": _MLA_FONT, **kw})

    # the widths, from the config
    y_dim = 6.1
    for x0, x1, words in ((0, nope, f"qk_nope_head_dim = {nope}"),
                          (nope, width, f"qk_rope_head_dim\n= {rope}")):  # fmt: skip
        ax.annotate(
            "", xy=(x0, y_dim), xytext=(x1, y_dim), arrowprops={"arrowstyle": "<->", "lw": 0.8}
        )
        text((x0 + x1) / 2, y_dim + 0.12, words, ha="center", va="bottom")
    # query of head h: own nope part, own rope part
    y_q = 5.2
    text(-gap, y_q, "query, head h", ha="right")
    box(0, nope, y_q, "no position", _MLA_NOPE)
    box(nope, width, y_q, "rotated", _MLA_ROPE)
    text(notes_x, y_q, f"rotated: {pairs}\n{order}", ha="left")
    # keys of heads 0, 1, ..., H-1: own nope parts, one rope part (k_pe) for all of them
    key_rows = (3.95, 3.25, 2.05)
    names = ("key, head 0", "key, head 1", f"key, head {n_heads - 1}")
    for y, name in zip(key_rows, names, strict=True):
        text(-gap, y, name, ha="right")
        box(0, nope, y, "own per head, no position", _MLA_NOPE, height=key_h)
    text(-gap, 2.65, "...", ha="right")
    text(nope / 2, 2.65, "...", ha="center")
    top, bottom = key_rows[0] + key_h / 2, key_rows[-1] - key_h / 2
    box(nope, width, (top + bottom) / 2, "k_pe\nshared,\nrotated", _MLA_SHARED_ROPE,
        height=top - bottom)  # fmt: skip
    text(
        notes_x,
        (top + bottom) / 2,
        f"one rope key k_pe for all {n_heads}\nheads, split off the compressed\nkv projection "
        "beside the latent",
        ha="left",
    )
    # value of head h
    y_v = 0.75
    text(-gap, y_v, "value, head h", ha="right")
    box(0, value, y_v, f"v_head_dim = {value}", _MLA_VALUE)
    text(
        notes_x,
        y_v + 0.1,
        f"keys' nope parts and values:\nup-projected from the latent\n(kv_lora_rank = {kv_rank})",
        ha="left",
    )
    text(
        0.82 * width,
        -0.25,
        r"score of head h $= q_{\mathrm{nope}} \cdot k_{\mathrm{nope}} + (R_m\, q_{\mathrm{rope}})"
        r" \cdot (R_n\, k_{\mathrm{pe}})$: only the rope term sees $n - m$",
        ha="center",
    )
    ax.set_xlim(-0.36 * width, 2.0 * width)
    ax.set_ylim(-0.6, 6.9)
    return fig


# --------------------------------------------------------------------------- numerics part
NUMERICS_COLORS = {
    "accurate": "black",
    "float64-tables": "tab:gray",
    "float32-angles": "tab:brown",
    "float32-pow": "tab:blue",
    "float32-ggml-product": "tab:pink",
    "bfloat16-tables": "tab:orange",
    "float16-tables": "tab:olive",
    "bfloat16-angles": "tab:red",
    "bfloat16-frequencies": "tab:purple",
    "float32-recurrence": "tab:green",
    "float64-recurrence": "tab:cyan",
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
    fig, ax = plt.subplots(figsize=(8.0, 5.0), constrained_layout=True)
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


def plot_storage_vs_angles(m, table_values, angle_values, *, mark: float):
    """cos(m) at integer positions from a rounded table and from a rounded angle, with the
    exact cosine drawn as the continuous curve cos(t) (joining integer samples would alias)."""
    fig, ax = plt.subplots(figsize=(7.0, 4.2), constrained_layout=True)
    t = np.linspace(m[0], m[-1], 40 * len(m))
    ax.plot(t, np.cos(t), "-", color="0.6", lw=1, label=r"exact $\cos t$ (continuous)")
    ax.plot(m, table_values, "o", ms=4, color="tab:orange", label="float32 angle, bf16 table")
    ax.plot(m, angle_values, "x", ms=5, color="tab:red", label="bf16 angle")
    ax.axvline(mark, color="gray", ls=":", lw=0.8)
    ax.set_xlabel("position m (tokens)")
    ax.set_ylabel(r"$\cos(m\theta_0)$, $\theta_0 = 1$ rad/token")
    fig.legend(loc="outside lower center", ncols=3, fontsize=9)
    return fig


def plot_drift(curves: dict, *, title: str, ylabel: str):
    """Log-log drift of the relative property against the query position."""
    fig, ax = plt.subplots(figsize=(8.0, 4.5), constrained_layout=True)
    for name, (x, y) in curves.items():
        ax.loglog(x, y, "-", color=NUMERICS_COLORS.get(name), label=name)
    ax.set_xlabel("query position m (tokens)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def plot_ulp_histograms(ulps: dict, *, title: str):
    """Histograms of ulp errors (log-spaced bins), one per method."""
    import numpy as np

    fig, ax = plt.subplots(constrained_layout=True)
    bins = np.concatenate([[0, 0.5, 1.0, 1.5], np.logspace(0.5, 14, 50)])
    for name, u in ulps.items():
        ax.hist(
            np.maximum(u, 1e-3),
            bins=bins,
            histtype="step",
            lw=1.5,
            label=name,
            color=NUMERICS_COLORS.get(name),
        )
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("error (ulp of the correctly rounded value)")
    ax.set_ylabel("number of entries")
    ax.set_title(title)
    ax.legend()
    return fig


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
    fig, ax = plt.subplots(figsize=(7.0, 4.2), constrained_layout=True)
    for name, fn in implementations.items():
        err = np.max(np.abs(fn(xs, positions) - want), axis=1)
        ax.loglog(positions[1:], np.maximum(err[1:], 1e-17), marker="o", ms=3, label=name)
    ax.set_xlabel("position m (tokens)")
    ax.set_ylabel("max |output - reference| (unit input)")
    ax.set_title("How the error grows with the position")
    ax.legend(loc="lower right", fontsize=9)
    return fig


def plot_base_wavelengths(dim, bases, contexts):
    """Wavelength 2*pi*b**(2i/d) per pair for several bases, with context lengths marked."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(7.0, 4.2), constrained_layout=True)
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
    return fig


def plot_base_similarity(dim, bases, max_distance):
    """Mean cosine (2/d) sum_i cos(r theta_i) against the relative distance r (log axis)."""
    import numpy as np

    r = np.unique(np.round(np.logspace(0, np.log10(max_distance), 600)))
    fig, ax = plt.subplots(figsize=(7.0, 4.2), constrained_layout=True)
    i = np.arange(dim // 2)
    for b in bases:
        theta = b ** (-2 * i / dim)
        ax.semilogx(r, np.cos(np.outer(r, theta)).mean(axis=1), label=f"base {b:g}")
    ax.axhline(0.0, color="gray", lw=1)
    ax.set_xlabel("relative distance r (tokens)")
    ax.set_ylabel("mean cos(r theta_i) (unitless)")
    ax.set_title("Self-similarity against distance")
    ax.legend(loc="lower left")
    return fig
