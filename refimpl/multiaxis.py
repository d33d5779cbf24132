"""RoPE over several position axes: axial 2-D RoPE for image patches, the 2-D variants of
vision towers (Pixtral, Llama 4, timm, RoPE-Mixed) and multimodal M-RoPE (temporal, height and
width sections over the pairs) with the position ids of mixed text / image / video sequences.

Both assign each rotation pair to one axis; pair ``i`` of a token is rotated by the angle
``p_a(i) * theta_i`` where ``p_a(i)`` is the token's coordinate on the pair's axis. Scores
then depend only on the coordinate differences (key minus query) on every axis.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import (
    EXACT_INTEGER,
    MAX_POSITION,
    as_exact_integers,
    as_float_array,
    as_inv_freq,
    as_positions,
    as_real_array,
    check_base,
    check_choice,
    check_count,
    check_dim,
    check_exact_range,
    check_flag,
    check_int,
    check_keywords,
    check_nonnegative,
    check_pairing,
    check_positive,
    check_positive_int,
    check_table_size,
)
from .rotary import apply_rope_tables
from .rotary import inv_freq as _inv_freq

__all__ = [
    "LLAMA4_CLS_ID",
    "MROPE_LAYOUTS",
    "MROPE_TOKEN_TYPES",
    "OMNI_MODELS",
    "MRopeBatchPositions",
    "MRopePositions",
    "apply_rope_2d",
    "axial_2d_angles",
    "axial_2d_angles_split",
    "hunyuanvl_position_ids",
    "llama4_vision_angles",
    "mrope_axis_of_pair",
    "mrope_batch_decode_position_ids",
    "mrope_batch_position_ids",
    "mrope_cos_sin",
    "mrope_decode_position_ids",
    "mrope_position_ids",
    "mrope_token_types",
    "mrope_vision_position_ids",
    "omni_audio_tokens",
    "omni_batch_position_ids",
    "omni_position_ids",
    "pixtral_angles",
    "pixtral_flat_ids",
    "rope_mixed_angles",
    "rope_mixed_fit",
    "rope_mixed_frequencies",
    "rope_mixed_frequency_grad",
    "rope_mixed_scores",
    "timestamped_video_segments",
    "timm_pixel_bands",
    "timm_rope_angles",
    "videorope_position_ids",
]

MROPE_LAYOUTS = ("blocked", "interleaved", "alternating", "imrope")

# Number of position axes (rows of ``position_ids``) a layout reads, by section count.
_LAYOUT_SECTION_COUNTS = {
    "blocked": (3, 4),
    "interleaved": (3,),
    "alternating": (3,),
    "imrope": (3, 4),
}
# Rows of position_ids each layout reads (blocked: one per section).
_LAYOUT_AXES = {"interleaved": 3, "alternating": 3, "imrope": 4}

# Text resumes after a vision block at its largest position + 1 ("max", the Qwen2-VL paper,
# transformers 4.x) or at start + max(H, W) // merge ("spatial", transformers 5.x).
MROPE_RESUME_RULES = ("max", "spatial")

# How the temporal index a * time_interval is rounded before truncation: transformers multiplies
# a float32 interval tensor (Qwen2.5-VL's tokens_per_second * second_per_grid_t) in float32.
MROPE_TIME_PRECISIONS = ("float64", "float32")


def mrope_axis_of_pair(mrope_section, layout: str = "blocked") -> np.ndarray:
    r"""Which position axis drives each rotation pair of an M-RoPE head.

    Parameters
    ----------
    mrope_section : sequence of int
        Pairs per axis, in the order the layout's models store them in their config:
        ``(s_t, s_h, s_w)`` or ``(s_t, s_h, s_w, s_e)`` for ``"blocked"`` (4 sections:
        XD-RoPE's P/W/H/T rows, ggml's t|h|w|e), ``(s_t, s_h, s_w)`` for ``"interleaved"``
        (Qwen3-VL) and ``(s_h, s_w, s_t)`` for ``"alternating"`` (Ernie 4.5 VL, which needs
        ``s_h == s_w``), ``(s_t, s_h, s_w[, s_e])`` for ``"imrope"``.
    layout : {"blocked", "interleaved", "alternating", "imrope"}, default "blocked"
        ``"blocked"``: consecutive chunks, chunk ``a`` from row ``a`` (:eq:`eq:mrope-sections`).
        ``"interleaved"``: pair ``j`` follows ``h`` if ``j % 3 == 1`` and ``j < 3 s_h``, ``w`` if
        ``j % 3 == 2`` and ``j < 3 s_w``, ``t`` otherwise (:eq:`eq:mrope-interleaved`).
        ``"alternating"``: the first ``s_h + s_w`` pairs alternate ``h`` (even ``j``) and ``w``
        (odd ``j``), the last ``s_t`` follow ``t`` (:eq:`eq:mrope-alternating`).
        ``"imrope"``: ggml's ``GGML_ROPE_TYPE_IMROPE`` (llama.cpp's Qwen3-VL): ``t`` only if
        ``j % 3 == 0`` and ``j < 3 s_t``, ``h``/``w`` as in ``"interleaved"``, and every other
        pair follows the fourth row ``e`` (:eq:`eq:mrope-imrope`), which llama.cpp fills
        with 0 for text and image tokens. It differs from ``"interleaved"`` exactly on the
        pairs ``j >= 3 s_a`` with ``j % 3 == a`` (Qwen3-VL's ``[24, 20, 20]``: pairs 61 and
        62 of 64), which interleaving gives to ``t``.

    Returns
    -------
    numpy.ndarray of int64, shape (sum(mrope_section),)
        Row of ``position_ids`` (0 = t, 1 = h, 2 = w, 3 = the fourth row: blocked's fourth
        section, imrope's ``e``) per pair.

    Examples
    --------
    >>> mrope_axis_of_pair([2, 3, 3]).tolist()
    [0, 0, 1, 1, 1, 2, 2, 2]
    >>> mrope_axis_of_pair([2, 2, 2], "alternating").tolist()
    [1, 2, 1, 2, 0, 0]
    >>> mrope_axis_of_pair([3, 2, 2], "imrope").tolist()
    [0, 1, 2, 0, 1, 2, 0]
    >>> mrope_axis_of_pair([4, 2, 2], "imrope").tolist()
    [0, 1, 2, 0, 1, 2, 0, 3]
    """
    check_choice(layout, "layout", MROPE_LAYOUTS)
    sec = _mrope_section(mrope_section, layout)
    half = sum(sec)
    j = np.arange(half)
    if layout == "blocked":
        return np.repeat(np.arange(len(sec)), sec)  # [eq:mrope-sections]
    if layout == "alternating":
        s_h, s_w, _ = sec
        axis = np.zeros(half, dtype=np.int64)  # the tail follows t
        hw = j < s_h + s_w
        axis[hw & (j % 2 == 0)] = 1  # [eq:mrope-alternating]
        axis[hw & (j % 2 == 1)] = 2
        return axis
    if layout == "imrope":  # ggml's sector rule: t, h, w by j % 3 within 3 s_a, else e
        axis = np.full(half, 3, dtype=np.int64)
        for a in range(3):
            axis[(j % 3 == a) & (j < 3 * sec[a])] = a  # [eq:mrope-imrope]
        return axis
    axis = np.zeros(half, dtype=np.int64)
    axis[(j % 3 == 1) & (j < 3 * sec[1])] = 1  # [eq:mrope-interleaved]
    axis[(j % 3 == 2) & (j < 3 * sec[2])] = 2
    return axis


def _mrope_section(mrope_section, layout: str) -> tuple[int, ...]:
    counts = _LAYOUT_SECTION_COUNTS[layout]
    raw = np.asarray(mrope_section, dtype=object).reshape(-1)
    rule = " or ".join(str(c) for c in counts)
    if len(raw) not in counts or any(
        isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 for v in raw
    ):
        raise ValueError(
            f"mrope_section must be {rule} non-negative integers for layout {layout!r}, "
            f"got {mrope_section!r}"
        )
    sec = tuple(int(v) for v in raw)
    if layout == "alternating" and sec[0] != sec[1]:
        raise ValueError(
            f"mrope_section (s_h, s_w, s_t) must have s_h == s_w for the alternating layout "
            f"(h and w take turns), got {sec}"
        )
    return sec


def axial_2d_angles(rows, cols, inv_freq) -> np.ndarray:
    r"""Angles of axial 2-D RoPE: the first half of the pairs follow the row, the rest the
    column.

    Parameters
    ----------
    rows, cols : array_like, shape (seq,)
        Row and column index of every token (patch).
    inv_freq : array_like, shape (d/4,)
        Frequencies of one axis (the same set is used for both).

    Returns
    -------
    numpy.ndarray, shape (seq, d/2), float64
        ``[rows * inv_freq, cols * inv_freq]`` concatenated along the pair axis.

    Notes
    -----
    Book equation ``eq:rope2d-angles``.

    Examples
    --------
    >>> axial_2d_angles([1, 2], [3, 4], [1.0, 0.5])
    array([[1. , 0.5, 3. , 1.5],
           [2. , 1. , 4. , 2. ]])
    """
    r = as_positions(rows, "rows")
    c = as_positions(cols, "cols")
    if r.shape != c.shape:
        raise ValueError(f"rows and cols must have the same length, got {r.shape} and {c.shape}")
    f = as_inv_freq(inv_freq)
    return np.concatenate(
        [np.multiply.outer(r, f), np.multiply.outer(c, f)], axis=1
    )  # [eq:rope2d-angles]


def apply_rope_2d(
    x, rows, cols, *, base: float = 10000.0, inv_freq=None, pairing: str = "half"
) -> np.ndarray:
    r"""Axial 2-D RoPE for image patches.

    Parameters
    ----------
    x : array_like, shape (..., seq, dim)
        Queries or keys of ``seq`` patches; ``dim`` divisible by 4.
    rows, cols : array_like, shape (seq,)
        Patch coordinates.
    base : float, default 10000.0
        Base of the per-axis frequencies :math:`\theta_i = b^{-2i/(d/2)} = b^{-4i/d}`,
        :math:`i = 0, \dots, d/4 - 1` (each axis gets the full geometric range over half the
        pairs, as in Qwen2-VL's vision tower and EVA-02).
    inv_freq : array_like, shape (dim/4,), optional
        Explicit per-axis frequencies (overrides ``base``).
    pairing : {"half", "interleaved"}, default "half"
        Pairs ``0 .. d/4 - 1`` follow the row and ``d/4 .. d/2 - 1`` the column, in either
        pairing.

    Returns
    -------
    numpy.ndarray, shape (..., seq, dim)
        Same floating dtype as ``x``.

    Notes
    -----
    Book equations ``eq:rope2d-angles`` and ``eq:rope2d-score``: the score of two patches is a
    function of :math:`(\Delta\text{row}, \Delta\text{col})` only. Frequencies that are shared
    by the two axes cannot see a diagonal offset as anything but the sum of two axial ones.

    Examples
    --------
    >>> x = np.ones((2, 4))
    >>> y = apply_rope_2d(x, [0, 0], [0, 1], inv_freq=[1.0])
    >>> bool(np.allclose(y[0], x[0])), bool(np.allclose(y[1, [0, 2]], x[1, [0, 2]]))
    (True, True)
    """
    check_pairing(pairing)
    xa = as_float_array(x, "x", min_ndim=2)
    d = xa.shape[-1]
    if d % 4:
        raise ValueError(f"x's last dimension must be divisible by 4 for 2-D RoPE, got {d}")
    if inv_freq is None:
        f = _inv_freq(d // 2, check_base(base))
    else:
        f = as_inv_freq(inv_freq)
        if f.shape[0] != d // 4:
            raise ValueError(f"inv_freq must have dim // 4 = {d // 4} entries, got {f.shape[0]}")
    ang = axial_2d_angles(rows, cols, f)
    if ang.shape[0] != xa.shape[-2]:
        raise ValueError(
            f"rows and cols have {ang.shape[0]} entries but x has seq = {xa.shape[-2]}"
        )
    return apply_rope_tables(xa, np.cos(ang), np.sin(ang), pairing=pairing)


def mrope_cos_sin(
    position_ids,
    inv_freq,
    mrope_section,
    *,
    layout: str = "blocked",
    attention_scaling: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Multimodal RoPE tables (Qwen2-VL and its relatives): each pair follows one position axis
    of the token.

    Parameters
    ----------
    position_ids : array_like of int, shape (A, seq)
        One row per axis: ``t``, ``h``, ``w`` (``A = 3``; text tokens have ``t = h = w``), or
        four rows for a 4-section blocked layout (XD-RoPE's P/W/H/T) and for ``"imrope"``
        (``t, h, w, e``; llama.cpp passes ``e = 0``).
        :func:`mrope_position_ids` builds them.
    inv_freq : array_like, shape (d/2,)
        Frequencies of the whole head, :math:`\theta_i = b^{-2i/d}` (not per axis).
    mrope_section : sequence of 3 or 4 ints
        Pairs per axis, summing to ``d/2`` (Qwen2-VL-7B: ``[16, 24, 24]`` for ``d = 128``), in
        the layout's config order (see :func:`mrope_axis_of_pair`).
    layout : {"blocked", "interleaved", "alternating", "imrope"}, default "blocked"
        ``"blocked"`` (Qwen2-VL, Qwen2.5-VL, GLM-4.xV, XD-RoPE): consecutive sections.
        ``"interleaved"`` (Qwen3-VL): pair ``j`` follows ``h`` if ``j % 3 == 1`` and
        ``j < 3 s_h``, ``w`` if ``j % 3 == 2`` and ``j < 3 s_w``, ``t`` otherwise.
        ``"alternating"`` (Ernie 4.5 VL, section order ``(s_h, s_w, s_t)``): h and w take turns
        over the first ``s_h + s_w`` pairs, t has the last ``s_t``. ``"imrope"`` (ggml's
        IMROPE, llama.cpp's Qwen3-VL): see :func:`mrope_axis_of_pair`.
    attention_scaling : float, default 1.0
        Multiplies both tables.

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, d/2), float64
        Half-width tables like :func:`refimpl.rotary.cos_sin`; apply them with
        :func:`refimpl.rotary.apply_rope_tables` in the model's pairing (half for Qwen,
        interleaved for GLM-4.xV and Ernie 4.5 VL).

    Notes
    -----
    Book equations ``eq:mrope-sections`` and ``eq:mrope-angle``. For a text token with equal
    rows ``p`` every pair sees ``p``, so the tables equal ``cos_sin([p], inv_freq)``.

    References
    ----------
    Wang et al., "Qwen2-VL: enhancing vision-language model's perception of the world at any
    resolution", 2024 (arXiv:2409.12191).

    Examples
    --------
    >>> c, s = mrope_cos_sin([[0, 1], [0, 5], [0, 9]], [1.0, 0.5, 0.25], [1, 1, 1])
    >>> np.arccos(c[1]).round(6)  # pair 0 sees t = 1, pair 1 h = 5, pair 2 w = 9
    array([1.  , 2.5 , 2.25])
    """
    check_choice(layout, "layout", MROPE_LAYOUTS)
    ids = np.asarray(position_ids)
    if ids.dtype == object or ids.dtype.kind not in "iuf":
        raise TypeError(f"position_ids must be a numeric array, got dtype {ids.dtype}")
    f = as_inv_freq(inv_freq)
    half = f.shape[0]
    sec = _mrope_section(mrope_section, layout)
    n_axes = len(sec) if layout == "blocked" else _LAYOUT_AXES[layout]
    if ids.ndim != 2 or ids.shape[0] != n_axes:
        raise ValueError(
            f"position_ids must have shape ({n_axes}, seq) (one row per axis), got {ids.shape}"
        )
    ids = _exact_ids(ids, "position_ids")
    if sum(sec) != half:
        raise ValueError(
            f"mrope_section must sum to len(inv_freq) = d/2 = {half} pairs, got {sum(sec)}"
        )
    scale = check_positive(attention_scaling, "attention_scaling")
    axis = mrope_axis_of_pair(sec, layout)  # (d/2,)
    pos = ids[axis, :].T  # (seq, d/2): position seen by each pair
    ang = pos * f[None, :]  # [eq:mrope-angle]
    return np.cos(ang) * scale, np.sin(ang) * scale


def _exact_ids(ids: np.ndarray, name: str) -> np.ndarray:
    """Position ids as float64, exact: integers of any dtype or finite reals, within
    +-2**53 (``_checks.EXACT_INTEGER``), where float64 still holds every integer."""
    if ids.dtype.kind in "iu":
        return as_exact_integers(ids, name).astype(np.float64)
    out = ids.astype(np.float64)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    if out.size:
        check_exact_range(float(out.min()), float(out.max()), name)
    return out


class MRopePositions(NamedTuple):
    """Position ids of one multimodal sequence and the offset decoding continues from:
    ``position_ids`` (int64, shape (3, seq), rows ``t``, ``h``, ``w`` of every token) and
    ``rope_delta`` (``max(position_ids) + 1 - seq``: the token generated at cache position
    ``c`` gets position ``c + rope_delta`` on every axis, :eq:`eq:mrope-decode`)."""

    position_ids: np.ndarray
    rope_delta: int


def _segment(item, index: int):
    """Normalise one segment to (kind, grid or length, time_interval)."""
    where = f"segments[{index}]"
    if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
        raise TypeError(
            f"{where} must be ('text', n), ('image', (T, H, W)) or ('video', (T, H, W)[, "
            f"time_interval]), got {item!r}"
        )
    kind = check_choice(item[0], f"{where}[0]", ("text", "image", "video"))
    if kind == "text":
        if len(item) != 2:
            raise ValueError(f"{where}: a text segment is ('text', n), got {item!r}")
        return kind, check_count(item[1], f"{where} length"), 1.0
    grid = tuple(item[1]) if isinstance(item[1], (tuple, list, np.ndarray)) else ()
    if len(grid) != 3:
        raise ValueError(f"{where}: the grid must be (T, H, W), got {item[1]!r}")
    grid = tuple(check_positive_int(g, f"{where} grid[{a}]") for a, g in enumerate(grid))
    if kind == "image" and len(item) == 3:
        raise ValueError(f"{where}: an image has no time_interval (images are one frame)")
    interval = 1.0 if len(item) == 2 else check_nonnegative(item[2], f"{where} time_interval")
    return kind, grid, interval


def mrope_vision_position_ids(
    start: int,
    grid_thw,
    *,
    spatial_merge_size: int = 2,
    temporal_merge_size: int = 1,
    time_interval: float = 1.0,
    time_precision: str = "float64",
) -> np.ndarray:
    r"""Position ids ``(t, h, w)`` of one image or video block starting at position ``start``.

    Parameters
    ----------
    start : int
        Running text position where the block begins.
    grid_thw : sequence of 3 int
        Patch grid ``(T, H, W)`` of the vision encoder (before merging).
    spatial_merge_size, temporal_merge_size : int
        The encoder merges ``m × m`` patches (Qwen2-VL: 2) and ``tm`` frames into one token;
        ``H`` and ``W`` must be divisible by ``m`` and ``T`` by ``tm``.
    time_interval : float, default 1.0
        Temporal step per merged frame, :math:`\tau` (Qwen2.5-VL video:
        ``tokens_per_second * second_per_grid_t``).
    time_precision : {"float64", "float32"}, default "float64"
        ``"float32"`` rounds :math:`\tau` and :math:`a\tau` to float32 before truncating, as
        transformers does with a float32 ``second_per_grid_ts`` tensor.

    Returns
    -------
    numpy.ndarray of int64, shape (3, T/tm · H/m · W/m)
        Tokens enumerated frame-major, then row, then column:
        ``(start + ⌊a τ⌋, start + b, start + c)`` (:eq:`eq:mrope-grid`).

    Examples
    --------
    >>> mrope_vision_position_ids(5, (1, 4, 6)).tolist()
    [[5, 5, 5, 5, 5, 5], [5, 5, 5, 6, 6, 6], [5, 6, 7, 5, 6, 7]]
    """
    s = check_count(start, "start", maximum=MAX_POSITION)
    m = check_positive_int(spatial_merge_size, "spatial_merge_size")
    tm = check_positive_int(temporal_merge_size, "temporal_merge_size")
    check_choice(time_precision, "time_precision", MROPE_TIME_PRECISIONS)
    tau = check_nonnegative(time_interval, "time_interval")
    t, h, w = (check_positive_int(g, f"grid_thw[{a}]") for a, g in enumerate(grid_thw))
    if h % m or w % m:
        raise ValueError(
            f"grid_thw H and W must be divisible by spatial_merge_size {m}, got {h}, {w}"
        )
    if t % tm:
        raise ValueError(f"grid_thw T must be divisible by temporal_merge_size {tm}, got {t}")
    check_table_size(3, (t // tm) * (h // m) * (w // m), "the block's position ids (3, tokens)")
    a = np.arange(t // tm)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        if time_precision == "float32":
            scaled = a.astype(np.float32) * np.float32(tau)
        else:
            scaled = np.floor(a * tau)  # [eq:mrope-grid]
    last = float(scaled[-1])  # the largest temporal offset (a and tau are non-negative)
    if not np.isfinite(last) or s + int(last) > EXACT_INTEGER:
        raise ValueError(
            f"time_interval {tau!r} puts frame {a[-1]} at temporal position {s} + {last:g}; "
            "positions must stay within 2**53 (exact integers)"
        )
    frames = scaled.astype(np.int64)
    tt, hh, ww = np.meshgrid(frames, np.arange(h // m), np.arange(w // m), indexing="ij")
    return np.stack([tt, hh, ww]).reshape(3, -1).astype(np.int64) + s


def mrope_position_ids(
    segments,
    *,
    spatial_merge_size: int = 2,
    temporal_merge_size: int = 1,
    resume: str = "max",
    time_precision: str = "float64",
) -> MRopePositions:
    r"""M-RoPE position ids of a mixed text / image / video sequence (Qwen2-VL family).

    Parameters
    ----------
    segments : sequence
        The sequence in order: ``("text", n)`` for ``n`` text tokens (special tokens such as
        ``<|vision_start|>`` included), ``("image", (T, H, W))`` and ``("video", (T, H, W))``
        or ``("video", (T, H, W), time_interval)`` for the encoder's patch grid. Qwen2-VL:
        interval 1; Qwen2.5-VL: ``tokens_per_second * second_per_grid_t``; Qwen3-VL and
        GLM-4.xV: each frame its own ``(1, H, W)`` video segment between timestamp text
        (:func:`timestamped_video_segments`).
    spatial_merge_size, temporal_merge_size : int
        As in :func:`mrope_vision_position_ids` (``temporal_merge_size`` applies to videos;
        Ernie 4.5 VL merges frames, the Qwen models do not).
    resume : {"max", "spatial"}, default "max"
        Where text resumes after a vision block starting at ``s``: ``"max"`` at the block's
        largest position + 1 (the Qwen2-VL paper and transformers 4.x); ``"spatial"`` at
        ``s + max(H, W) // m`` (transformers 5.x, which ignores the temporal extent; the two
        agree unless a video's temporal positions outrun its spatial ones).
    time_precision : {"float64", "float32"}, default "float64"
        See :func:`mrope_vision_position_ids`.

    Returns
    -------
    MRopePositions
        ``position_ids`` (3, seq) int64 and ``rope_delta`` (:eq:`eq:mrope-decode`).

    Notes
    -----
    Text tokens get ``(p, p, p)`` with ``p`` consecutive (:eq:`eq:mrope-text-ids`); vision
    blocks follow :eq:`eq:mrope-grid`. Feed the rows to :func:`mrope_cos_sin`.

    Examples
    --------
    >>> ids, delta = mrope_position_ids([("text", 2), ("image", (1, 4, 4)), ("text", 2)])
    >>> ids.tolist()
    [[0, 1, 2, 2, 2, 2, 4, 5], [0, 1, 2, 2, 3, 3, 4, 5], [0, 1, 2, 3, 2, 3, 4, 5]]
    >>> delta
    -2
    """
    check_choice(resume, "resume", MROPE_RESUME_RULES)
    m = check_positive_int(spatial_merge_size, "spatial_merge_size")
    if isinstance(segments, (str, bytes)) or not hasattr(segments, "__iter__"):
        raise TypeError(f"segments must be a sequence of segments, got {segments!r}")
    pos, blocks, total = 0, [], 0
    for index, item in enumerate(segments):
        kind, size, interval = _segment(item, index)
        if kind == "text":
            total += size
            check_table_size(3, total, "segments' position ids (3, tokens)")
            check_exact_range(pos, pos + size, f"segments[{index}]'s text positions")
            blocks.append(np.tile(np.arange(size, dtype=np.int64) + pos, (3, 1)))
            pos += size  # [eq:mrope-text-ids]
            continue
        block = mrope_vision_position_ids(
            pos,
            size,
            spatial_merge_size=m,
            temporal_merge_size=temporal_merge_size if kind == "video" else 1,
            time_interval=interval,
            time_precision=time_precision,
        )
        blocks.append(block)
        total += block.shape[1]
        check_table_size(3, total, "segments' position ids (3, tokens)")
        pos = int(block.max()) + 1 if resume == "max" else pos + max(size[1], size[2]) // m
    ids = np.concatenate(blocks, axis=1) if blocks else np.zeros((3, 0), dtype=np.int64)
    if ids.shape[1] == 0:
        raise ValueError("segments must contain at least one token")
    return MRopePositions(ids, int(ids.max()) + 1 - ids.shape[1])  # [eq:mrope-decode]


class MRopeBatchPositions(NamedTuple):
    """Position ids of a padded batch: ``position_ids`` (int64, shape (3, B, S); padding
    slots hold 0) and ``rope_deltas`` (int64, shape (B,): ``max + 1 - n_b`` of each row's
    ``n_b`` unmasked tokens, :eq:`eq:mrope-decode`)."""

    position_ids: np.ndarray
    rope_deltas: np.ndarray


# Token types of the batched form (transformers 5.x ``mm_token_type_ids``).
MROPE_TOKEN_TYPES = {"text": 0, "image": 1, "video": 2}


def mrope_token_types(input_ids, *, image_token_id: int, video_token_id=None) -> np.ndarray:
    """Token types (0 text, 1 image, 2 video) of token ids ``(B, S)``: what transformers 5.x's
    processors return as ``mm_token_type_ids``.

    Parameters
    ----------
    input_ids : array_like of int, shape (B, S)
    image_token_id : int
        The image placeholder id (``config.image_token_id``).
    video_token_id : int, optional
        The video placeholder id; ``None`` when the model has none.

    Returns
    -------
    numpy.ndarray of int64, shape (B, S)

    Examples
    --------
    >>> mrope_token_types([[5, 9, 9, 7, 5]], image_token_id=9, video_token_id=7).tolist()
    [[0, 1, 1, 2, 0]]
    """
    ids = _int_matrix(input_ids, "input_ids")
    image = check_int(image_token_id, "image_token_id")
    out = np.where(ids == image, MROPE_TOKEN_TYPES["image"], MROPE_TOKEN_TYPES["text"])
    if video_token_id is not None:
        video = check_int(video_token_id, "video_token_id")
        if video == image:
            raise ValueError(f"video_token_id must differ from image_token_id, both {image}")
        out[ids == video] = MROPE_TOKEN_TYPES["video"]
    return out.astype(np.int64)


def _int_matrix(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == object or a.dtype.kind not in "iub":
        raise TypeError(f"{name} must be an integer array of shape (B, S), got dtype {a.dtype}")
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"{name} must have shape (B, S) with S >= 1, got {a.shape}")
    if a.dtype.kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{name} must fit in int64, got {int(a.max())}")
    return a.astype(np.int64)


def _grid_queue(grids, name: str, split_frames: bool) -> list:
    if grids is None:
        return []
    g = np.asarray(grids)
    if g.dtype == object or g.dtype.kind not in "iu" or g.ndim != 2 or g.shape[1] != 3:
        raise ValueError(f"{name} must be an integer array of shape (n, 3) rows (T, H, W)")
    rows = [tuple(check_positive_int(v, f"{name}[{i}]") for v in r) for i, r in enumerate(g)]
    if split_frames:  # Qwen3-VL, GLM-4.xV: each temporal patch is its own (1, H, W) grid
        return [(1, h, w) for t, h, w in rows for _ in range(t)]
    return rows


def _row_segments(types, queues, intervals, m: int, tm: int, row: int) -> list:
    """Segments of one unpadded row; vision runs take the next grid of their kind in order."""
    edges = np.flatnonzero(np.diff(types)) + 1
    starts, ends = np.r_[0, edges], np.r_[edges, types.size]
    segs = []
    for a, b in zip(starts, ends, strict=True):
        kind = ("text", "image", "video")[types[a]]
        if kind == "text":
            segs.append(("text", int(b - a)))
            continue
        if not queues[kind]:
            raise ValueError(f"row {row}: more {kind} runs than {kind}_grid_thw rows")
        t, h, w = queues[kind].pop(0)
        n = (t // (tm if kind == "video" else 1)) * (h // m) * (w // m)
        if n != b - a:
            raise ValueError(
                f"row {row}: the {kind} run at unpadded index {a} has {b - a} tokens but its "
                f"grid {(t, h, w)} gives {n} (each grid must fill exactly one run; separate "
                f"adjacent {kind}s by text such as <|vision_end|><|vision_start|>)"
            )
        segs.append((kind, (t, h, w), intervals.pop(0)) if kind == "video" else (kind, (t, h, w)))
    return segs


def mrope_batch_position_ids(
    token_types,
    *,
    attention_mask=None,
    image_grid_thw=None,
    video_grid_thw=None,
    video_time_intervals=None,
    split_video_frames: bool = False,
    spatial_merge_size: int = 2,
    temporal_merge_size: int = 1,
    resume: str = "spatial",
    time_precision: str = "float64",
) -> MRopeBatchPositions:
    r"""M-RoPE position ids of a padded batch, in the form of transformers' ``get_rope_index``.

    Parameters
    ----------
    token_types : array_like of int, shape (B, S)
        0 text, 1 image, 2 video per slot (:func:`mrope_token_types` from token ids).
    attention_mask : array_like of 0/1, shape (B, S), optional
        1 for real tokens, 0 for padding (left, right or anywhere); each row is numbered over
        its unmasked tokens only. ``None``: no padding.
    image_grid_thw, video_grid_thw : array_like of int, shape (n, 3), optional
        Patch grids ``(T, H, W)`` of all images / videos of the batch, row after row in order;
        each run of image (video) slots takes the next image (video) grid.
    video_time_intervals : sequence of float, optional
        Temporal step per video, in the order of ``video_grid_thw`` (Qwen2.5-VL:
        ``tokens_per_second * second_per_grid_t``); default 1 for every video.
    split_video_frames : bool, default False
        True for Qwen3-VL and GLM-4.xV: each video becomes ``T`` grids ``(1, H, W)``, one per
        run of video slots (the frames sit between timestamp text).
    spatial_merge_size, temporal_merge_size, resume, time_precision
        As in :func:`mrope_position_ids` (``resume="spatial"`` is transformers 5.x).

    Returns
    -------
    MRopeBatchPositions
        ``position_ids`` (3, B, S) with 0 in padding slots, ``rope_deltas`` (B,).

    Notes
    -----
    Row ``b``'s unmasked slots get exactly :func:`mrope_position_ids` of their segments, so
    padding changes no real token's ids (:eq:`eq:mrope-text-ids`, :eq:`eq:mrope-grid`).

    Examples
    --------
    >>> out = mrope_batch_position_ids(
    ...     [[0, 0, 0, 1, 1, 0], [0, 0, 1, 1, 0, 0]], attention_mask=[[0, 1, 1, 1, 1, 1],
    ...     [1, 1, 1, 1, 1, 1]], image_grid_thw=[[1, 2, 4], [1, 2, 4]])
    >>> out.position_ids[0].tolist()
    [[0, 0, 1, 2, 2, 4], [0, 1, 2, 2, 4, 5]]
    >>> out.rope_deltas.tolist()
    [0, 0]
    """
    types, mask = _types_and_mask(token_types, attention_mask, ("text", "image", "video"))
    split = check_flag(split_video_frames, "split_video_frames")
    queues = {
        "image": _grid_queue(image_grid_thw, "image_grid_thw", False),
        "video": _grid_queue(video_grid_thw, "video_grid_thw", split),
    }
    intervals = _video_intervals(video_time_intervals, video_grid_thw, queues["video"], split)
    m = check_positive_int(spatial_merge_size, "spatial_merge_size")
    tm = check_positive_int(temporal_merge_size, "temporal_merge_size")
    ids = np.zeros((3, *types.shape), dtype=np.int64)
    deltas = np.zeros(types.shape[0], dtype=np.int64)
    for b in range(types.shape[0]):
        if not mask[b].any():
            raise ValueError(f"attention_mask row {b} has no unmasked token")
        segs = _row_segments(types[b][mask[b]], queues, intervals, m, tm, b)
        row = mrope_position_ids(
            segs,
            spatial_merge_size=m,
            temporal_merge_size=tm,
            resume=resume,
            time_precision=time_precision,
        )
        ids[:, b, mask[b]] = row.position_ids
        deltas[b] = row.rope_delta
    left = [k for k, q in queues.items() if q]
    if left:
        raise ValueError(f"{left[0]}_grid_thw has more rows than the batch has {left[0]} runs")
    return MRopeBatchPositions(ids, deltas)


def _types_and_mask(
    token_types, attention_mask, kinds: tuple, model: str = ""
) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(B, S)`` token types (``k`` stands for ``kinds[k]``) and the boolean
    attention mask of the same shape (all ones when None)."""
    types = _int_matrix(token_types, "token_types")
    if types.size and (types.min() < 0 or types.max() >= len(kinds)):
        named = [f"{k} ({kind})" for k, kind in enumerate(kinds)]
        allowed = ", ".join(named[:-1]) + " or " + named[-1]
        raise ValueError(f"token_types must hold {allowed}{model}")
    mask = np.ones_like(types, dtype=bool) if attention_mask is None else _mask(attention_mask)
    if mask.shape != types.shape:
        raise ValueError(f"attention_mask shape {mask.shape} != token_types shape {types.shape}")
    return types, mask


def _mask(attention_mask) -> np.ndarray:
    a = _int_matrix(attention_mask, "attention_mask")
    if np.any((a != 0) & (a != 1)):
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (token)")
    return a.astype(bool)


def _video_intervals(intervals, grids, queue: list, split: bool) -> list:
    n_videos = 0 if grids is None else len(np.asarray(grids))
    if intervals is None:
        return [1.0] * len(queue)
    if split:
        raise ValueError("video_time_intervals does not apply with split_video_frames=True")
    vals = [check_nonnegative(v, f"video_time_intervals[{i}]") for i, v in enumerate(intervals)]
    if len(vals) != n_videos:
        raise ValueError(
            f"video_time_intervals must have one entry per video ({n_videos}), got {len(vals)}"
        )
    return vals


def mrope_batch_decode_position_ids(
    rope_deltas, *, attention_mask=None, cache_position=None
) -> np.ndarray:
    r"""Position ids of a batch's generated tokens from its ``rope_deltas`` (transformers'
    ``compute_3d_position_ids`` once the prompt is cached).

    Parameters
    ----------
    rope_deltas : array_like of int, shape (B,)
        From :func:`mrope_batch_position_ids`.
    attention_mask : array_like of 0/1, shape (B, L), optional
        The mask over prompt and generated slots: slot ``k`` gets
        ``(number of unmasked slots before it) + rope_delta``; masked slots get
        ``rope_delta`` (transformers fills them with 0 before adding it; they are never
        attended).
    cache_position : array_like of int, shape (n,), optional
        Without a mask: KV-cache indices of the new tokens, ``c + rope_delta`` for every row.

    Returns
    -------
    numpy.ndarray of int64, shape (3, B, L) or (3, B, n)

    Examples
    --------
    >>> mrope_batch_decode_position_ids([-2, 1], attention_mask=[[0, 1, 1], [1, 1, 1]])[0]
    array([[-2, -2, -1],
           [ 1,  2,  3]])
    """
    d = as_exact_integers(rope_deltas, "rope_deltas", ndim=(1,))
    if (attention_mask is None) == (cache_position is None):
        raise ValueError("give exactly one of attention_mask and cache_position")
    if attention_mask is not None:
        mask = _mask(attention_mask)
        if mask.shape[0] != d.shape[0]:
            raise ValueError(f"attention_mask has {mask.shape[0]} rows, rope_deltas {d.size}")
        pos = np.where(mask, np.cumsum(mask, axis=1) - 1, 0)  # [eq:mrope-decode]
    else:
        pos = np.tile(mrope_decode_position_ids(0, cache_position, n_axes=1), (d.size, 1))
    if d.size and pos.size:  # exact extremes first: int64 sums would wrap silently
        low, high = int(pos.min()) + int(d.min()), int(pos.max()) + int(d.max())
        check_exact_range(low, high, "rope_deltas plus cache positions")
    return np.tile(pos + d[:, None], (3, 1, 1))


def hunyuanvl_position_ids(
    token_types,
    *,
    image_grid_thw=None,
    attention_mask=None,
    spatial_merge_size: int = 2,
    n_axes: int = 4,
) -> MRopeBatchPositions:
    r"""Position ids of HunYuanVL (XD-RoPE) for a padded batch, as transformers 5.24 builds them.

    Parameters
    ----------
    token_types : array_like of int, shape (B, S)
        0 text, 1 image (``mm_token_type_ids``; HunYuanVL has no video type).
    image_grid_thw : array_like of int, shape (n, 3), optional
        Patch grids of all images of the batch in order; ``T`` is ignored.
    attention_mask : array_like of 0/1, shape (B, S), optional
    spatial_merge_size : int, default 2
    n_axes : int, default 4
        Rows ``A`` (``len(xdrope_section)``, at least 3).

    Returns
    -------
    MRopeBatchPositions
        ``position_ids`` (A, B, S): every unmasked token keeps its 1-D index ``p`` on all rows
        except inside an image grid, whose last three rows are ``(w, h, image index)``
        (:eq:`eq:xdrope-ids`): ``w`` runs over ``W/m + 1`` columns (the merger appends one
        row-break token per row), ``h`` over ``H/m`` rows, and the image index counts the
        images of the whole batch from 0. A run of image slots ``2`` longer than the grid keeps
        its first and last slot (the image's start and end tokens) at their 1-D index.
        Padding slots hold 0. ``rope_deltas`` (B,) ``= max + 1 - n_b``.

    Notes
    -----
    Written from ``HunYuanVLModel.get_rope_index`` (``models/hunyuan_vl``). The ids are
    absolute inside the image (they do not start at the image's offset). Feed them to
    :func:`mrope_cos_sin` with the ``"blocked"`` layout and the model's 4-section
    ``xdrope_section``, which is the layout of Tencent's ``apply_rotary_pos_emb_xdrope``
    (sections repeated over both halves) and vLLM's ``xdrope.py``.

    Examples
    --------
    >>> out = hunyuanvl_position_ids([[0, 1, 1, 1, 1, 1, 1, 1, 1, 0]],
    ...                              image_grid_thw=[[1, 4, 4]])
    >>> out.position_ids[:, 0].tolist()
    [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [0, 1, 0, 1, 2, 0, 1, 2, 8, 9], [0, 1, 0, 0, 0, 1, 1, 1, 8, 9], [0, 1, 0, 0, 0, 0, 0, 0, 8, 9]]
    """  # noqa: E501
    types, mask = _types_and_mask(token_types, attention_mask, ("text", "image"), " for HunYuanVL")
    a = check_positive_int(n_axes, "n_axes")
    if a < 3:
        raise ValueError(f"n_axes must be at least 3 (w, h, image index), got {a}")
    m = check_positive_int(spatial_merge_size, "spatial_merge_size")
    queue = _grid_queue(image_grid_thw, "image_grid_thw", False)
    ids = np.zeros((a, *types.shape), dtype=np.int64)
    deltas = np.zeros(types.shape[0], dtype=np.int64)
    image = 0
    for b in range(types.shape[0]):
        row_types = types[b][mask[b]]
        row = np.tile(np.arange(row_types.size, dtype=np.int64), (a, 1))
        edges = np.flatnonzero(np.diff(row_types)) + 1
        for lo, hi in zip(np.r_[0, edges], np.r_[edges, row_types.size], strict=True):
            if row_types.size == 0 or row_types[lo] != 1:
                continue
            if not queue:
                raise ValueError(f"row {b}: more image runs than image_grid_thw rows")
            _, h, w = queue.pop(0)
            n = (h // m) * (w // m + 1)  # checked against the run before anything is built
            if hi - lo not in (n, n + 2):
                raise ValueError(
                    f"row {b}: the image run at unpadded index {lo} has {hi - lo} slots; its grid "
                    f"{(h, w)} gives {n} tokens (or {n + 2} with start and end tokens)"
                )
            g = lo + (hi - lo - n) // 2
            hh, ww = np.meshgrid(np.arange(h // m), np.arange(w // m + 1), indexing="ij")
            row[a - 3 :, g : g + n] = np.stack([ww.ravel(), hh.ravel(), np.full(n, image)])
            image += 1  # [eq:xdrope-ids]
        if row_types.size == 0:
            raise ValueError(f"attention_mask row {b} has no unmasked token")
        ids[:, b, mask[b]] = row
        deltas[b] = int(row.max()) + 1 - row_types.size
    if queue:
        raise ValueError("image_grid_thw has more rows than the batch has image runs")
    return MRopeBatchPositions(ids, deltas)


def videorope_position_ids(
    segments, *, spatial_merge_size: int = 2, temporal_spacing: float = 1.0
) -> MRopePositions:
    r"""VideoRoPE's position ids: the diagonal layout, with adjustable temporal spacing.

    Parameters
    ----------
    segments : sequence
        As in :func:`mrope_position_ids` (``("text", n)``, ``("image", (T, H, W))``,
        ``("video", (T, H, W))``; a third video entry is refused, the spacing is global).
    spatial_merge_size : int, default 2
    temporal_spacing : float, default 1.0
        :math:`\delta`, VideoRoPE's ``scale_factor`` (its adjustable temporal spacing).

    Returns
    -------
    MRopePositions
        ``position_ids`` (3, seq) float64 (fractional when :math:`\delta` is) and
        ``rope_delta`` ``= max(t) + 1 - seq``.

    Notes
    -----
    A block starting at ``s`` gives token ``(a, b, c)`` of a ``(T, H', W')`` grid
    :math:`t = s + a\delta`, :math:`h = t + b - \lfloor (H'-1)/2 \rfloor`,
    :math:`w = t + c - \lfloor (W'-1)/2 \rfloor` (book equation ``eq:videorope-ids``): the
    spatial ids are centred on the frame's time, so frames move along the diagonal
    ``t = h = w`` that text tokens occupy. Text resumes at the largest *temporal* id + 1.
    Written from ``get_rope_index`` in Wiselnn570/VideoRoPE
    ``videorope-transformer/modeling_videorope.py`` (@309f5c8). Its frequency allocation is
    the ``"alternating"`` layout of :func:`mrope_axis_of_pair` with sections
    ``(s_h + s_w) / 2, (s_h + s_w) / 2, s_t``.

    Examples
    --------
    >>> videorope_position_ids([("text", 2), ("image", (1, 6, 2))]).position_ids.tolist()
    [[0.0, 1.0, 2.0, 2.0, 2.0], [0.0, 1.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 2.0, 2.0]]
    """
    m = check_positive_int(spatial_merge_size, "spatial_merge_size")
    delta = check_nonnegative(temporal_spacing, "temporal_spacing")
    if isinstance(segments, (str, bytes)) or not hasattr(segments, "__iter__"):
        raise TypeError(f"segments must be a sequence of segments, got {segments!r}")
    pos, blocks = 0.0, []
    for index, item in enumerate(segments):
        kind, size, _ = _segment(item, index)
        if kind == "video" and len(item) == 3:
            raise ValueError(f"segments[{index}]: VideoRoPE's spacing is temporal_spacing")
        if kind == "text":
            blocks.append(np.tile(np.arange(size, dtype=np.float64) + pos, (3, 1)))
            pos += size
            continue
        t, h, w = size
        if h % m or w % m:
            raise ValueError(f"grid H and W must be divisible by spatial_merge_size {m}")
        hh, ww = h // m, w // m
        a, b, c = np.meshgrid(np.arange(t), np.arange(hh), np.arange(ww), indexing="ij")
        tt = pos + a.ravel() * delta  # [eq:videorope-ids]
        blocks.append(
            np.stack([tt, tt + b.ravel() - (hh - 1) // 2, tt + c.ravel() - (ww - 1) // 2])
        )
        pos = float(tt.max()) + 1
    ids = np.concatenate(blocks, axis=1) if blocks else np.zeros((3, 0))
    if ids.shape[1] == 0:
        raise ValueError("segments must contain at least one token")
    _exact_ids(ids, "VideoRoPE position ids (temporal_spacing times the frames)")
    return MRopePositions(ids, float(ids[0].max()) + 1 - ids.shape[1])


def mrope_decode_position_ids(rope_delta: int, cache_position, *, n_axes: int = 3) -> np.ndarray:
    r"""Position ids of generated tokens: ``cache_position + rope_delta`` on every axis.

    Parameters
    ----------
    rope_delta : int
        From :func:`mrope_position_ids` (``max + 1 - prompt length``).
    cache_position : int or array_like of int, shape (n,)
        Index of each new token in the KV cache (the prompt occupies ``0 .. seq - 1``).
    n_axes : int, default 3
        Rows of the result (4 for XD-RoPE).

    Returns
    -------
    numpy.ndarray of int64, shape (n_axes, n)

    Examples
    --------
    >>> mrope_decode_position_ids(-1, [8, 9]).tolist()
    [[7, 8], [7, 8], [7, 8]]
    """
    delta = check_int(rope_delta, "rope_delta", minimum=-EXACT_INTEGER, maximum=EXACT_INTEGER)
    a = check_positive_int(n_axes, "n_axes")
    c = np.atleast_1d(np.asarray(cache_position))
    if c.ndim != 1 or c.dtype == object or c.dtype.kind not in "iu":
        raise TypeError(f"cache_position must be an integer or a 1-D integer array, got {c!r}")
    c = as_exact_integers(c, "cache_position")
    if c.size and c.min() < 0:
        raise ValueError(f"cache_position must be non-negative, got {c.min()}")
    if c.size:
        check_exact_range(int(c.min()) + delta, int(c.max()) + delta, "cache_position + rope_delta")
    check_table_size(a, c.size, "position ids (n_axes, n)")
    return np.tile(c + delta, (a, 1))  # [eq:mrope-decode]


def timestamped_video_segments(grid_thw, text_before, *, text_after: int = 1) -> list:
    """Segments of a video laid out frame by frame between timestamp text (Qwen3-VL, GLM-4.xV).

    Parameters
    ----------
    grid_thw : sequence of 3 int
        The video's patch grid ``(T, H, W)``; each of the ``T`` temporal patches becomes a
        ``(1, H, W)`` video segment.
    text_before : sequence of int, length T
        Text tokens before each frame (the timestamp ``<t seconds>`` and ``<|vision_start|>``).
    text_after : int, default 1
        Text tokens after each frame (``<|vision_end|>``).

    Returns
    -------
    list
        Segments for :func:`mrope_position_ids`.

    Examples
    --------
    >>> timestamped_video_segments((2, 4, 4), [3, 3])
    [('text', 3), ('video', (1, 4, 4)), ('text', 1), ('text', 3), ('video', (1, 4, 4)), ('text', 1)]
    """
    t, h, w = (check_positive_int(g, f"grid_thw[{a}]") for a, g in enumerate(grid_thw))
    before = [check_count(n, f"text_before[{i}]") for i, n in enumerate(text_before)]
    if len(before) != t:
        raise ValueError(
            f"text_before must have T = {t} entries (one per frame), got {len(before)}"
        )
    after = check_count(text_after, "text_after")
    out: list = []
    for n in before:
        out += [("text", n), ("video", (1, h, w)), ("text", after)]
    return [s for s in out if s[0] != "text" or s[1] > 0]


def pixtral_angles(rows, cols, *, dim: int, base: float = 10000.0) -> np.ndarray:
    r"""Angles of Pixtral's 2-D RoPE: height on the even, width on the odd frequencies of one
    full-head list.

    Parameters
    ----------
    rows, cols : array_like, shape (seq,)
        Patch row and column (transformers 5 passes them as ``(h, w)`` pairs; older code a flat
        id ``h · max_width + w``, see :func:`pixtral_flat_ids`).
    dim : int
        Head dimension ``D`` (divisible by 4).
    base : float, default 10000.0
        :math:`\theta_j = b^{-2j/D}`, ``j < D/2`` (Pixtral-12B: ``rope_theta`` 10000).

    Returns
    -------
    numpy.ndarray, shape (seq, D/2), float64
        ``[h θ_0, h θ_2, …, w θ_1, w θ_3, …]`` (:eq:`eq:pixtral-angles`); apply with
        :func:`refimpl.rotary.apply_rope_tables`, half pairing.

    Examples
    --------
    >>> pixtral_angles([1], [2], dim=8, base=16.0).round(4).tolist()
    [[1.0, 0.25, 1.0, 0.25]]
    """
    d = check_dim(dim)
    if d % 4:
        raise ValueError(f"dim must be divisible by 4 for 2-D RoPE, got {d}")
    f = _inv_freq(d, check_base(base))
    return axial_2d_angles_split(rows, cols, f[0::2], f[1::2])  # [eq:pixtral-angles]


def axial_2d_angles_split(rows, cols, freq_rows, freq_cols) -> np.ndarray:
    """``[rows ⊗ freq_rows, cols ⊗ freq_cols]``: 2-D angles with a frequency set per axis.

    Parameters
    ----------
    rows, cols : array_like, shape (seq,)
    freq_rows, freq_cols : array_like, shape (k,) and (l,)

    Returns
    -------
    numpy.ndarray, shape (seq, k + l), float64

    Examples
    --------
    >>> axial_2d_angles_split([2], [3], [1.0], [0.5, 0.25]).tolist()
    [[2.0, 1.5, 0.75]]
    """
    r = as_positions(rows, "rows")
    c = as_positions(cols, "cols")
    if r.shape != c.shape:
        raise ValueError(f"rows and cols must have the same length, got {r.shape} and {c.shape}")
    fr = as_inv_freq(freq_rows, "freq_rows")
    fc = as_inv_freq(freq_cols, "freq_cols")
    return np.concatenate([np.multiply.outer(r, fr), np.multiply.outer(c, fc)], axis=1)


def pixtral_flat_ids(rows, cols, max_width: int) -> np.ndarray:
    """Flat patch ids ``h · max_width + w`` (Pixtral before transformers 5, vLLM).

    Parameters
    ----------
    rows, cols : array_like of int, shape (seq,)
    max_width : int
        Patches per row of the largest image (``image_size // patch_size``); ``cols`` must be
        below it.

    Returns
    -------
    numpy.ndarray of int64, shape (seq,)

    Examples
    --------
    >>> pixtral_flat_ids([0, 1], [3, 0], 4).tolist()
    [3, 4]
    """
    r = np.asarray(rows)
    c = np.asarray(cols)
    mw = check_positive_int(max_width, "max_width")
    if r.dtype.kind not in "iu" or c.dtype.kind not in "iu" or r.shape != c.shape:
        raise TypeError("rows and cols must be integer arrays of the same shape")
    if (c < 0).any() or (c >= mw).any() or (r < 0).any():
        raise ValueError(f"cols must lie in [0, max_width = {mw}) and rows be non-negative")
    if r.size:
        check_exact_range(0, int(r.max()) * mw + mw - 1, "rows * max_width + cols")
    return r.astype(np.int64) * mw + c.astype(np.int64)  # [eq:pixtral-angles]


# Llama 4's vision tower marks its class token with the id -2; its rotation angle is 0.
LLAMA4_CLS_ID = -2


def llama4_vision_angles(side: int, *, dim: int, base: float = 10000.0) -> np.ndarray:
    r"""Angles of Llama 4's vision RoPE for a ``side × side`` patch grid plus the class token.

    Parameters
    ----------
    side : int
        Patches per side (``image_size // patch_size``; Llama 4 Scout: 336 // 14 = 24).
    dim : int
        Head dimension ``D`` (divisible by 4); ``F = D/2`` and :math:`\theta_j = b^{-2j/F}`,
        ``j < D/4``.
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray, shape (side² + 1, D/2), float64
        Patch ``p`` (row-major) at ``x = p mod side``, ``y = p div side`` gets
        ``[(x+1) θ, (y+1) θ]``; the last row (class token) is 0 (:eq:`eq:llama4-vision`).
        Apply with interleaved pairing (complex form, :func:`refimpl.rotary.apply_rope_tables`).

    Examples
    --------
    >>> llama4_vision_angles(2, dim=4).tolist()
    [[1.0, 1.0], [2.0, 1.0], [1.0, 2.0], [2.0, 2.0], [0.0, 0.0]]
    """
    n = check_positive_int(side, "side")
    d = check_dim(dim)
    if d % 4:
        raise ValueError(f"dim must be divisible by 4 for 2-D RoPE, got {d}")
    f = _inv_freq(d // 2, check_base(base))
    p = np.arange(n * n)
    ang = axial_2d_angles_split(p % n + 1, p // n + 1, f, f)  # [eq:llama4-vision]
    return np.concatenate([ang, np.zeros((1, d // 2))], axis=0)


def timm_pixel_bands(num_bands: int, *, max_res: float = 224.0, linear: bool = False) -> np.ndarray:
    r"""timm's pixel frequency bands: :math:`\pi\,\mathrm{linspace}(1, R/2, n)` (linear) or
    :math:`\pi\,2^{\mathrm{linspace}(0, \log_2 R - 1, n)}` (log), in radians per unit of the
    normalised coordinate.

    Parameters
    ----------
    num_bands : int
        ``n`` (timm uses ``dim // 4`` for 2-D RoPE).
    max_res : float, default 224.0
        ``R``, the resolution in pixels the highest band resolves.
    linear : bool, default False

    Returns
    -------
    numpy.ndarray, shape (num_bands,), float64

    Examples
    --------
    >>> (timm_pixel_bands(3, max_res=8.0) / np.pi).tolist()
    [1.0, 2.0, 4.0]
    """
    n = check_positive_int(num_bands, "num_bands")
    r = check_positive(max_res, "max_res")
    if r < 2:
        raise ValueError(f"max_res must be at least 2 (the top band is max_res / 2), got {r}")
    if check_flag(linear, "linear"):
        return np.linspace(1.0, r / 2, n) * np.pi  # [eq:timm-bands]
    return 2.0 ** np.linspace(0.0, np.log2(r) - 1, n) * np.pi


def timm_rope_angles(
    feat_shape, *, dim: int, max_res: float = 224.0, linear: bool = False, ref_feat_shape=None
) -> np.ndarray:
    r"""Angles of timm's ViT RoPE (``build_rotary_pos_embed`` with pixel bands) on an
    ``H × W`` feature map.

    Parameters
    ----------
    feat_shape : (H, W)
        Patch grid; coordinates are ``linspace(-1, 1, H)`` and ``linspace(-1, 1, W)``.
    dim : int
        Head dimension (divisible by 4): ``dim // 4`` bands per axis.
    max_res, linear
        As in :func:`timm_pixel_bands`.
    ref_feat_shape : (H0, W0), optional
        Pretraining grid: coordinates are rescaled by ``H0 / H`` and ``W0 / W`` (EVA's scheme
        for fine-tuning at another resolution, :eq:`eq:timm-ref`).

    Returns
    -------
    numpy.ndarray, shape (H·W, dim/2), float64
        Row-major patches; pairs ``0 .. dim/4 - 1`` follow the row coordinate, the rest the
        column (interleaved pairing, as timm's ``rot``).

    Examples
    --------
    >>> timm_rope_angles((2, 1), dim=4, max_res=4.0)[:, 0] / np.pi
    array([-1.,  1.])
    """
    shape = tuple(check_positive_int(s, f"feat_shape[{i}]") for i, s in enumerate(feat_shape))
    if len(shape) != 2:
        raise ValueError(f"feat_shape must be (H, W), got {feat_shape!r}")
    d = check_dim(dim)
    if d % 4:
        raise ValueError(f"dim must be divisible by 4 for 2-D RoPE, got {d}")
    bands = timm_pixel_bands(d // 4, max_res=max_res, linear=linear)
    coords = [np.linspace(-1.0, 1.0, s) for s in shape]
    if ref_feat_shape is not None:
        ref = tuple(check_positive(r, f"ref_feat_shape[{i}]") for i, r in enumerate(ref_feat_shape))
        if len(ref) != 2:
            raise ValueError(f"ref_feat_shape must be (H0, W0), got {ref_feat_shape!r}")
        coords = [t / s * r for t, s, r in zip(coords, shape, ref, strict=True)]  # [eq:timm-ref]
    y, x = np.meshgrid(coords[0], coords[1], indexing="ij")
    return axial_2d_angles_split(y.ravel(), x.ravel(), bands, bands)  # [eq:timm-bands]


def rope_mixed_frequencies(dim: int, n_heads: int, *, base: float = 10.0, seed=0) -> np.ndarray:
    r"""RoPE-Mixed's initial frequencies: per head, ``dim/2`` frequency vectors
    :math:`(f_x, f_y)` of magnitude :math:`m_j = b^{-4j/D}` pointing in directions
    :math:`\alpha` and :math:`\alpha + \pi/2` (:math:`\alpha` uniform per head).

    Parameters
    ----------
    dim : int
        Head dimension ``D`` (divisible by 4).
    n_heads : int
    base : float, default 10.0
        RoPE-Mixed's ``rope_theta`` (10, against 100 for its axial variant).
    seed : int or numpy.random.Generator, default 0
        Draws :math:`\alpha`; the frequencies are learned from there in training.

    Returns
    -------
    numpy.ndarray, shape (2, n_heads, D/2), float64
        ``[f_x, f_y]``; pair ``j`` of head ``h`` turns by ``x f_x[h, j] + y f_y[h, j]``
        (:eq:`eq:rope-mixed`, use :func:`rope_mixed_angles`).

    Examples
    --------
    >>> f = rope_mixed_frequencies(8, 1)
    >>> bool(np.allclose(np.hypot(f[0], f[1]), [1.0, 10**-0.5, 1.0, 10**-0.5]))
    True
    """
    d = check_dim(dim)
    if d % 4:
        raise ValueError(f"dim must be divisible by 4 for 2-D RoPE, got {d}")
    h = check_positive_int(n_heads, "n_heads")
    mag = _inv_freq(d // 2, check_base(base))  # b^(-4j/D), j < D/4
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    alpha = rng.uniform(0.0, 2 * np.pi, size=(h, 1))
    fx = np.concatenate([mag * np.cos(alpha), mag * np.cos(alpha + np.pi / 2)], axis=1)
    fy = np.concatenate([mag * np.sin(alpha), mag * np.sin(alpha + np.pi / 2)], axis=1)
    return np.stack([fx, fy])


def rope_mixed_angles(xs, ys, freqs) -> np.ndarray:
    r"""Angles of RoPE-Mixed: :math:`\phi_{h,j} = x\,f_x[h, j] + y\,f_y[h, j]`.

    Parameters
    ----------
    xs, ys : array_like, shape (seq,)
        Patch coordinates (column, row).
    freqs : array_like, shape (2, n_heads, k)
        ``[f_x, f_y]`` (:func:`rope_mixed_frequencies` or learned values).

    Returns
    -------
    numpy.ndarray, shape (n_heads, seq, k), float64

    Examples
    --------
    >>> rope_mixed_angles([1, 0], [0, 2], [[[1.0]], [[0.5]]]).tolist()
    [[[1.0], [1.0]]]
    """
    x = as_positions(xs, "xs")
    y = as_positions(ys, "ys")
    if x.shape != y.shape:
        raise ValueError(f"xs and ys must have the same length, got {x.shape} and {y.shape}")
    f = as_real_array(freqs, "freqs")
    if f.ndim != 3 or f.shape[0] != 2:
        raise ValueError(f"freqs must have shape (2, n_heads, k), got {f.shape}")
    return (
        x[None, :, None] * f[0][:, None, :] + y[None, :, None] * f[1][:, None, :]
    )  # [eq:rope-mixed]


# Adam's moment decay rates and denominator guard (Kingma & Ba's defaults).
_ADAM_BETAS = (0.9, 0.999)
_ADAM_EPS = 1e-8


def _mixed_inputs(q, k, q_pos, k_pos, freqs, pairing):
    check_pairing(pairing)
    f = as_float_array(freqs, "freqs", ndim=3).astype(np.float64)
    if f.shape[0] != 2:
        raise ValueError(f"freqs must have shape (2, n_heads, D/2), got {f.shape}")
    h, half = f.shape[1], f.shape[2]
    qa = as_float_array(q, "q", ndim=3).astype(np.float64)
    ka = as_float_array(k, "k", ndim=3).astype(np.float64)
    for name, a in (("q", qa), ("k", ka)):
        if a.shape[0] != h or a.shape[2] != 2 * half:
            raise ValueError(f"{name} must have shape ({h}, n, {2 * half}), got {a.shape}")
    zq = as_float_array(q_pos, "q_pos", ndim=2).astype(np.float64)
    zk = as_float_array(k_pos, "k_pos", ndim=2).astype(np.float64)
    for name, z, a in (("q_pos", zq, qa), ("k_pos", zk, ka)):
        if z.shape != (a.shape[1], 2):
            raise ValueError(f"{name} must have shape ({a.shape[1]}, 2) (x, y), got {z.shape}")

    def split(a):  # the two components of every pair, (H, n, D/2) each
        if pairing == "interleaved":
            return a[..., 0::2], a[..., 1::2]
        return a[..., :half], a[..., half:]

    qa1, qa2 = split(qa)
    kb1, kb2 = split(ka)
    # the pair's cos and sin coefficients of q^T R(Delta) k, (H, n, m, D/2)
    even = qa1[:, :, None] * kb1[:, None] + qa2[:, :, None] * kb2[:, None]
    odd = qa2[:, :, None] * kb1[:, None] - qa1[:, :, None] * kb2[:, None]
    offset = zk[None, :, :] - zq[:, None, :]  # (n, m, 2): key minus query
    delta = np.einsum("nmc,chj->hnmj", offset, f)  # [eq:rope-mixed]
    return even, odd, offset, delta


def rope_mixed_scores(q, k, q_pos, k_pos, freqs, *, pairing: str = "interleaved") -> np.ndarray:
    r"""Attention scores of RoPE-Mixed: :math:`s_{h,n,m} = \langle R(\phi(z_n)) q_n,
    R(\phi(z_m)) k_m \rangle` with :math:`\phi_j(z) = x f_{x,j} + y f_{y,j}`.

    Parameters
    ----------
    q : array_like, shape (H, n, D)
    k : array_like, shape (H, m, D)
    q_pos, k_pos : array_like, shape (n, 2) and (m, 2)
        Patch coordinates ``(x, y)``.
    freqs : array_like, shape (2, H, D/2)
        ``[f_x, f_y]`` (:func:`rope_mixed_frequencies` or learned values).
    pairing : {"interleaved", "half"}, default "interleaved"
        Pair layout of the features (RoPE-Mixed and timm rotate adjacent features).

    Returns
    -------
    numpy.ndarray, shape (H, n, m), float64
        :math:`\sum_j (a_j c_j + b_j d_j)\cos\Delta_j + (b_j c_j - a_j d_j)\sin\Delta_j` with
        :math:`(a_j, b_j)` the query's and :math:`(c_j, d_j)` the key's pair ``j`` and
        :math:`\Delta_j = f_j^\top (z_m - z_n)` (:eq:`eq:rope-mixed-score`).

    Examples
    --------
    >>> f = np.array([[[0.5]], [[0.25]]])
    >>> rope_mixed_scores([[[1.0, 0.0]]], [[[1.0, 0.0]]], [[0, 0]], [[2, 4]], f).round(6)
    array([[[-0.416147]]])
    """
    even, odd, _, delta = _mixed_inputs(q, k, q_pos, k_pos, freqs, pairing)
    return np.sum(even * np.cos(delta) + odd * np.sin(delta), axis=-1)  # [eq:rope-mixed-score]


def rope_mixed_frequency_grad(
    q, k, q_pos, k_pos, freqs, upstream, *, pairing: str = "interleaved"
) -> np.ndarray:
    r"""Gradient of :math:`L = \sum_{h,n,m} G_{h,n,m}\, s_{h,n,m}` with respect to RoPE-Mixed's
    frequencies (the backward pass of :func:`rope_mixed_scores`).

    Parameters
    ----------
    q, k, q_pos, k_pos, freqs, pairing
        As in :func:`rope_mixed_scores`.
    upstream : array_like, shape (H, n, m)
        :math:`G = \partial L / \partial s` (the loss's gradient with respect to the scores).

    Returns
    -------
    numpy.ndarray, shape (2, H, D/2), float64
        :math:`\partial L / \partial f_{c,h,j} = \sum_{n,m} G_{h,n,m}\,\big((b_j c_j -
        a_j d_j)\cos\Delta_j - (a_j c_j + b_j d_j)\sin\Delta_j\big)\,(z_m - z_n)_c`
        (:eq:`eq:rope-mixed-grad`), ``c`` = x, y.

    Examples
    --------
    >>> f = np.array([[[0.5]], [[0.25]]])
    >>> g = rope_mixed_frequency_grad([[[1.0, 0.0]]], [[[1.0, 0.0]]], [[0, 0]], [[2, 4]], f,
    ...                               [[[1.0]]])
    >>> g[:, 0, 0].round(6)  # -sin(2) * (2, 4)
    array([-1.818595, -3.63719 ])
    """
    even, odd, offset, delta = _mixed_inputs(q, k, q_pos, k_pos, freqs, pairing)
    g = as_float_array(upstream, "upstream", ndim=3).astype(np.float64)
    if g.shape != delta.shape[:3]:
        raise ValueError(f"upstream must have the scores' shape {delta.shape[:3]}, got {g.shape}")
    d_delta = g[..., None] * (odd * np.cos(delta) - even * np.sin(delta))  # (H, n, m, D/2)
    return np.einsum("hnmj,nmc->chj", d_delta, offset)  # [eq:rope-mixed-grad]


def rope_mixed_fit(
    q,
    k,
    pos,
    target,
    freqs,
    *,
    steps: int = 300,
    lr: float = 0.02,
    pairing: str = "interleaved",
) -> tuple[np.ndarray, np.ndarray]:
    r"""Learn RoPE-Mixed frequencies by Adam on the mean squared error of the scores.

    Parameters
    ----------
    q, k : array_like, shape (H, n, D)
        Fixed queries and keys at the patch coordinates ``pos``.
    pos : array_like, shape (n, 2)
    target : array_like, shape (H, n, n)
        Scores to reproduce (for example :func:`rope_mixed_scores` of a teacher).
    freqs : array_like, shape (2, H, D/2)
        Starting frequencies (:func:`rope_mixed_frequencies`).
    steps : int, default 300
    lr : float, default 0.02
        Adam's step size.
    pairing : {"interleaved", "half"}

    Returns
    -------
    freqs : numpy.ndarray, shape (2, H, D/2)
        The learned frequencies.
    losses : numpy.ndarray, shape (steps + 1,)
        :math:`\operatorname{mean}(s - s^*)^2` before each step and after the last.

    Notes
    -----
    Deterministic: no randomness inside; the gradient is :func:`rope_mixed_frequency_grad`
    with upstream :math:`2 (s - s^*) / N`.
    """
    n_steps = check_positive_int(steps, "steps")
    rate = check_positive(lr, "lr")
    f = as_float_array(freqs, "freqs", ndim=3).astype(np.float64).copy()
    want = as_float_array(target, "target", ndim=3).astype(np.float64)
    m1, m2 = np.zeros_like(f), np.zeros_like(f)
    b1, b2 = _ADAM_BETAS
    losses = np.empty(n_steps + 1)
    for t in range(n_steps + 1):
        err = rope_mixed_scores(q, k, pos, pos, f, pairing=pairing) - want
        losses[t] = np.mean(err**2)
        if t == n_steps:
            break
        g = rope_mixed_frequency_grad(q, k, pos, pos, f, 2 * err / err.size, pairing=pairing)
        m1 = b1 * m1 + (1 - b1) * g
        m2 = b2 * m2 + (1 - b2) * g**2
        step = (m1 / (1 - b1 ** (t + 1))) / (np.sqrt(m2 / (1 - b2 ** (t + 1))) + _ADAM_EPS)
        f -= rate * step
    return f, losses


OMNI_MODELS = ("qwen2.5-omni", "qwen3-omni")


def omni_audio_tokens(mel_frames: int, *, model: str = "qwen2.5-omni", n_window: int = 50) -> int:
    """Audio tokens the Omni audio encoder makes from ``mel_frames`` log-mel frames.

    Parameters
    ----------
    mel_frames : int
        Frames of the log-mel input (``audio_seqlens`` / ``feature_attention_mask.sum()``).
    model : {"qwen2.5-omni", "qwen3-omni"}
    n_window : int, default 50
        Qwen3-Omni's ``audio_config.n_window`` (chunks of ``2 n_window`` frames).

    Returns
    -------
    int
        Qwen2.5-Omni: ``((L - 1) // 2 + 1 - 2) // 2 + 1`` (two stride-2 stages, 25 tokens per
        second of 100 Hz frames); Qwen3-Omni: the same per chunk of ``2 n_window`` frames, 13
        per full chunk (``_get_feat_extract_output_lengths`` of each model).

    Examples
    --------
    >>> omni_audio_tokens(100), omni_audio_tokens(100, model="qwen3-omni")
    (25, 13)
    """
    check_choice(model, "model", OMNI_MODELS)
    n = check_positive_int(mel_frames, "mel_frames")
    if model == "qwen2.5-omni":
        return ((n - 1) // 2 + 1 - 2) // 2 + 1
    chunk = 2 * check_positive_int(n_window, "n_window")
    rest = (n % chunk - 1) // 2 + 1
    return ((rest - 1) // 2 + 1 - 1) // 2 + 1 + (n // chunk) * 13


def _omni_segment(item, index: int):
    where = f"segments[{index}]"
    kinds = ("text", "image", "video", "audio", "video_audio")
    if not isinstance(item, (tuple, list)) or not item:
        raise TypeError(f"{where} must be a tuple whose first entry is one of {kinds}")
    kind = check_choice(item[0], f"{where}[0]", kinds)
    arity = {"text": 2, "image": 2, "video": 3, "audio": 2, "video_audio": 4}[kind]
    if len(item) != arity:
        raise ValueError(f"{where}: a {kind} segment has {arity} entries, got {item!r}")
    if kind in ("text", "audio"):
        return kind, check_count(item[1], f"{where} length"), 0.0, 0
    grid = tuple(check_positive_int(g, f"{where} grid") for g in item[1])
    if len(grid) != 3:
        raise ValueError(f"{where}: the grid must be (T, H, W), got {item[1]!r}")
    second = 0.0 if kind == "image" else check_nonnegative(item[2], f"{where} second_per_grid")
    n_audio = check_count(item[3], f"{where} audio tokens") if kind == "video_audio" else 0
    return kind, grid, second, n_audio


def _omni_grid(start, grid, interval, m: int, qwen3: bool) -> np.ndarray:
    """(3, T·H/m·W/m) ids of a grid from ``start``; float32 time as each model computes it."""
    t, h, w = grid
    if h % m or w % m:
        raise ValueError(f"grid H and W must be divisible by spatial_merge_size {m}, got {grid}")
    check_table_size(3, t * (h // m) * (w // m), "a grid's position ids (3, tokens)")
    with np.errstate(over="ignore"):
        a = np.arange(t, dtype=np.float32) * np.float32(interval[0]) * np.float32(interval[1])
    if not np.isfinite(a[-1]) or float(a[-1]) + float(start) > EXACT_INTEGER:
        raise ValueError(
            f"second_per_grid * position_id_per_seconds puts frame {t - 1} at {float(a[-1]):g} "
            "after its start; positions must stay within 2**53 (exact integers)"
        )
    frames = a if qwen3 else a.astype(np.int64).astype(np.float32)
    tt, hh, ww = np.meshgrid(frames, np.arange(h // m), np.arange(w // m), indexing="ij")
    ids = np.stack([tt, hh, ww]).reshape(3, -1).astype(np.float32) + np.float32(start)
    return ids if qwen3 else ids.astype(np.float64)


def _omni_interleave(video, audio, start, qwen3: bool, chunk_tokens: int) -> list:
    """Order of the video and audio ids of one video with its audio track."""
    if qwen3:  # merge by temporal id, video first on ties
        out, i, j = [], 0, 0
        while i < video.shape[1] and j < audio.shape[1]:
            take_video = video[0, i] <= audio[0, j]
            out.append(video[:, i : i + 1] if take_video else audio[:, j : j + 1])
            i, j = (i + 1, j) if take_video else (i, j + 1)
        return out + [x for x in (video[:, i:], audio[:, j:]) if x.shape[1]]

    def chunks(ids):  # a cut at a token whose temporal id passes start + k * chunk_tokens
        cut = [0]  # one cut per token at most, as get_chunked_index steps k
        for n, v in enumerate(ids[0]):
            if v - start >= len(cut) * chunk_tokens:
                cut.append(n)
        return [ids[:, a:b] for a, b in zip(cut, [*cut[1:], ids.shape[1]], strict=True)]

    vc, ac = chunks(video), chunks(audio)
    out = []
    for k in range(max(len(vc), len(ac))):
        out += [c[k] for c in (vc, ac) if k < len(c) and c[k].shape[1]]
    return out


def omni_position_ids(
    segments,
    *,
    model: str = "qwen2.5-omni",
    spatial_merge_size: int = 2,
    position_id_per_seconds: float = 25.0,
    seconds_per_chunk: float = 2.0,
) -> MRopePositions:
    r"""M-RoPE position ids of a Qwen2.5-Omni or Qwen3-Omni sequence: text, images, video,
    audio, and video with its audio track interleaved in time.

    Parameters
    ----------
    segments : sequence
        ``("text", n)``; ``("image", (T, H, W))``; ``("video", (T, H, W), second_per_grid)``;
        ``("audio", n_audio)`` (audio tokens, :func:`omni_audio_tokens`); and
        ``("video_audio", (T, H, W), second_per_grid, n_audio)``. Each media segment includes
        its start and end tokens: one each (``<|vision_start|>`` / ``<|audio_start|>`` and
        the matching end), two each for ``video_audio``.
    model : {"qwen2.5-omni", "qwen3-omni"}
    spatial_merge_size : int, default 2
    position_id_per_seconds : float, default 25
        Temporal ids per second: frame ``a`` of a video sits at
        ``a · second_per_grid · position_id_per_seconds`` after its start (float32;
        Qwen2.5-Omni truncates it, Qwen3-Omni keeps the fraction).
    seconds_per_chunk : float, default 2
        Qwen2.5-Omni's interleaving chunk (``video_audio``).

    Returns
    -------
    MRopePositions
        ``position_ids`` (3, seq), float64 (integers for Qwen2.5-Omni), and ``rope_delta``.

    Notes
    -----
    Text, start and end tokens and audio tokens are 1-D (equal rows, consecutive); a grid
    starts one past the previous token's largest id (:eq:`eq:mrope-grid`), and the token after
    a block one past its largest id. In ``video_audio`` the audio tokens count from the block
    start like the frames, so a frame and the audio of the same second share temporal ids
    (:eq:`eq:omni-interleave`); Qwen2.5-Omni orders them in alternating chunks of
    ``seconds_per_chunk`` (its two start tokens share one id, as do its two end tokens, and the
    end tokens follow the last chunk written), Qwen3-Omni merges them token by token in
    temporal order (video first on ties, start and end tokens consecutive). Written from
    ``get_rope_index`` of ``models/qwen2_5_omni`` and ``models/qwen3_omni_moe``
    (transformers 5.24).

    Examples
    --------
    >>> omni_position_ids([("text", 2), ("audio", 3), ("text", 1)]).position_ids[0].tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    """
    qwen3 = check_choice(model, "model", OMNI_MODELS) == "qwen3-omni"
    m = check_positive_int(spatial_merge_size, "spatial_merge_size")
    pps = check_positive(position_id_per_seconds, "position_id_per_seconds")
    chunk = pps * check_positive(seconds_per_chunk, "seconds_per_chunk")
    if chunk > EXACT_INTEGER:
        raise ValueError(
            f"position_id_per_seconds * seconds_per_chunk must be at most 2**53, got {chunk:g}"
        )
    chunk = int(chunk)
    if isinstance(segments, (str, bytes)) or not hasattr(segments, "__iter__"):
        raise TypeError(f"segments must be a sequence of segments, got {segments!r}")
    parts: list = []
    count = [0]  # tokens so far, bounded before each block is built
    real = np.float32 if qwen3 else np.float64  # Qwen3-Omni's ids are float32 tensors

    def line(n, at=None):  # n 1-D ids from one past the last part's largest id
        count[0] += n
        check_table_size(3, count[0], "segments' position ids (3, tokens)")
        s = (parts[-1].max() + real(1) if parts else real(0)) if at is None else at
        parts.append(np.tile(np.arange(n, dtype=real) + s, (3, 1)))

    for index, item in enumerate(segments):
        kind, size, second, n_audio = _omni_segment(item, index)
        if kind == "text":
            if size:
                line(size)
            continue
        pair = kind == "video_audio"
        if pair and not qwen3:  # two start tokens on one id
            line(1)
            line(1, at=parts[-1][0, 0])
        else:
            line(2 if pair else 1)
        start = parts[-1].max() + 1
        if kind == "audio":
            line(size)
        else:
            interval = (1.0, pps) if kind == "image" else (second, pps)
            grid = _omni_grid(start, size, interval, m, qwen3)  # [eq:omni-interleave]
            count[0] += grid.shape[1] + n_audio
            check_table_size(3, count[0], "segments' position ids (3, tokens)")
            if pair:
                audio = np.tile(np.arange(n_audio, dtype=real) + start, (3, 1))
                parts += _omni_interleave(grid, audio, start, qwen3, chunk)
            else:
                parts.append(grid)
        if pair and not qwen3:  # two end tokens on one id
            line(1)
            line(1, at=parts[-1][0, 0])
        else:
            line(2 if pair else 1)
    ids = np.concatenate(parts, axis=1).astype(np.float64) if parts else np.zeros((3, 0))
    if ids.shape[1] == 0:
        raise ValueError("segments must contain at least one token")
    _exact_ids(ids, "Omni position ids (position_id_per_seconds times the frame times)")
    return MRopePositions(ids, float(real(ids.max()) + real(1) - real(ids.shape[1])))


# The keywords omni_batch_position_ids passes on to omni_position_ids.
_OMNI_KEYWORDS = ("spatial_merge_size", "position_id_per_seconds", "seconds_per_chunk")
# Value transformers leaves in an Omni batch's padding slots (torch.ones vs torch.zeros).
_OMNI_PAD = {"qwen2.5-omni": 1.0, "qwen3-omni": 0.0}


def omni_batch_position_ids(rows, attention_mask, *, model: str = "qwen2.5-omni", **kwargs):
    r"""Omni position ids of a padded batch: :func:`omni_position_ids` of each row's segments,
    written into the row's unmasked slots.

    Parameters
    ----------
    rows : sequence of segment lists
        One list per batch row, as :func:`omni_position_ids` takes it.
    attention_mask : array_like of 0/1, shape (B, S)
        Row ``b`` must have as many unmasked slots as its segments have tokens.
    model : {"qwen2.5-omni", "qwen3-omni"}
    **kwargs
        ``spatial_merge_size``, ``position_id_per_seconds``, ``seconds_per_chunk``.

    Returns
    -------
    MRopeBatchPositions
        ``position_ids`` (3, B, S) float64 and ``rope_deltas`` (B,) float64. Padding slots
        hold 1 for Qwen2.5-Omni and 0 for Qwen3-Omni, as transformers 5.24 leaves them.

    Examples
    --------
    >>> out = omni_batch_position_ids([[("text", 2)], [("text", 3)]], [[0, 1, 1], [1, 1, 1]])
    >>> out.position_ids[0].tolist(), out.rope_deltas.tolist()
    ([[1.0, 0.0, 1.0], [0.0, 1.0, 2.0]], [0.0, 0.0])
    """
    check_choice(model, "model", OMNI_MODELS)
    check_keywords(
        "omni_batch_position_ids",
        kwargs,
        ["rows", "attention_mask", "model", *_OMNI_KEYWORDS],
    )
    mask = _mask(attention_mask)
    if isinstance(rows, (str, bytes)) or len(rows) != mask.shape[0]:
        raise ValueError(f"rows must hold one segment list per mask row ({mask.shape[0]})")
    ids = np.full((3, *mask.shape), _OMNI_PAD[model])
    deltas = np.zeros(mask.shape[0])
    for b, segments in enumerate(rows):
        one = omni_position_ids(segments, model=model, **kwargs)
        if one.position_ids.shape[1] != mask[b].sum():
            raise ValueError(
                f"row {b}: its segments have {one.position_ids.shape[1]} tokens but the mask "
                f"has {int(mask[b].sum())} unmasked slots"
            )
        ids[:, b, mask[b]] = one.position_ids
        deltas[b] = one.rope_delta
    return MRopeBatchPositions(ids, deltas)


def __getattr__(name):
    """``apply_cos_sin`` (removed: use :func:`refimpl.rotary.apply_rope_tables`) with a
    DeprecationWarning; any other missing name is an AttributeError."""
    from ._deprecated import deprecated_attribute

    return deprecated_attribute(__name__, name)
