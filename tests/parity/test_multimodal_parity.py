"""Parity of the multimodal position ids and vision 2-D tables with transformers 5.24.0, run
here: ``get_rope_index`` of Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4.1V / GLM-4.5V (``glm4v``,
``glm4v_moe``) and Ernie 4.5 VL on synthetic token sequences (token ids from each model's
config class built without weights), the Ernie 4.5 VL text rotary module, Pixtral's and
Llama 4's vision rotary modules and Whisper's sinusoids; padded batches (left and right
padding, an attention mask) against ``get_rope_index`` and ``compute_3d_position_ids``. timm's
RoPE is in tests/parity/test_timm_parity.py.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from refimpl.multiaxis import (
    apply_rope_tables,
    hunyuanvl_position_ids,
    llama4_vision_angles,
    mrope_batch_decode_position_ids,
    mrope_batch_position_ids,
    mrope_cos_sin,
    mrope_decode_position_ids,
    mrope_position_ids,
    mrope_token_types,
    pixtral_angles,
    timestamped_video_segments,
)

torch = pytest.importorskip("torch", reason="parity tests need torch (make venv-torch)")
transformers = pytest.importorskip(
    "transformers", reason="parity tests need transformers (make venv-torch)"
)

pytestmark = pytest.mark.parity

MODELS = {  # name: (modeling module, model class, config class)
    "qwen2_vl": ("qwen2_vl", "Qwen2VLModel", "Qwen2VLConfig"),
    "qwen2_5_vl": ("qwen2_5_vl", "Qwen2_5_VLModel", "Qwen2_5_VLConfig"),
    "qwen3_vl": ("qwen3_vl", "Qwen3VLModel", "Qwen3VLConfig"),
    "glm4v": ("glm4v", "Glm4vModel", "Glm4vConfig"),
    "glm4v_moe": ("glm4v_moe", "Glm4vMoeModel", "Glm4vMoeConfig"),
    "ernie4_5_vl_moe": ("ernie4_5_vl_moe", "Ernie4_5_VLMoeModel", "Ernie4_5_VLMoeConfig"),
}
FRAME_SPLIT = {"qwen3_vl", "glm4v", "glm4v_moe"}  # video grids split into (1, H, W) frames


def _peer(name):
    import importlib

    mod, model_cls, config_cls = MODELS[name]
    modeling = importlib.import_module(f"transformers.models.{mod}.modeling_{mod}")
    config = getattr(transformers, config_cls)()  # defaults of the released model, no weights
    model = getattr(modeling, model_cls)
    fake = SimpleNamespace(config=config)
    fake.get_vision_position_ids = lambda *a, **k: model.get_vision_position_ids(fake, *a, **k)
    return model, fake, config


def _tokens(segments, config, merge, tmerge):
    """Token ids and mm_token_type_ids of a segment list (text tokens: id 1)."""
    ids, types = [], []
    image_id = config.image_token_id
    video_id = getattr(config, "video_token_id", image_id)
    for seg in segments:
        if seg[0] == "text":
            ids += [1] * seg[1]
            types += [0] * seg[1]
        else:
            t, h, w = seg[1]
            n = (t // (tmerge if seg[0] == "video" else 1)) * (h // merge) * (w // merge)
            ids += [image_id if seg[0] == "image" else video_id] * n
            types += [1 if seg[0] == "image" else 2] * n
    return torch.tensor([ids]), torch.tensor([types], dtype=torch.int32)


def _mixed(name, rng):
    """A multi-turn sequence: text, two images, a video, text; random grid sizes."""

    def grid(t):
        return (t, 2 * int(rng.integers(1, 7)), 2 * int(rng.integers(1, 7)))

    tv = 2 * int(rng.integers(1, 4))
    video = grid(tv)
    segs = [
        ("text", int(rng.integers(1, 9))),
        ("image", grid(1)),
        ("text", int(rng.integers(1, 6))),
    ]
    segs += [("image", grid(1)), ("text", 3)]
    if name in FRAME_SPLIT:
        segs += timestamped_video_segments(video, [int(rng.integers(2, 6)) for _ in range(tv)])
    else:
        segs += [("video", video)]
    segs += [("text", int(rng.integers(1, 12)))]
    return segs, video


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("seed", range(6))
def test_position_ids_match_get_rope_index(name, seed):
    model, fake, config = _peer(name)
    rng = np.random.default_rng(seed)
    segs, video = _mixed(name, rng)
    vc = config.vision_config
    merge = vc.spatial_merge_size
    tmerge = getattr(vc, "temporal_merge_size", 1) if name == "ernie4_5_vl_moe" else 1
    input_ids, types = _tokens(segs, config, merge, tmerge)
    images = [s[1] for s in segs if s[0] == "image"]
    kwargs = {}
    if name == "qwen2_5_vl":
        second = float(rng.choice([0.5, 1.0, 2.0, 1 / 3]))
        kwargs["second_per_grid_ts"] = torch.tensor([second])
        interval = vc.tokens_per_second * second
        segs = [(*s, interval) if s[0] == "video" else s for s in segs]
    peer_ids, peer_delta = model.get_rope_index(
        fake,
        input_ids,
        mm_token_type_ids=types,
        image_grid_thw=torch.tensor(images),
        video_grid_thw=torch.tensor([video]),
        **kwargs,
    )
    # transformers 5.x resumes text at start + max(H, W) // merge ("spatial")
    ours = mrope_position_ids(
        segs,
        spatial_merge_size=merge,
        temporal_merge_size=tmerge,
        resume="spatial",
        time_precision="float32",
    )
    np.testing.assert_array_equal(ours.position_ids, peer_ids[:, 0].numpy())
    assert ours.rope_delta == int(peer_delta[0, 0])
    # images only: the "max" rule (Qwen2-VL paper, transformers 4.x) gives the same ids
    img_only = [s for s in segs if s[0] != "video"]
    a = mrope_position_ids(img_only, spatial_merge_size=merge, resume="max")
    b = mrope_position_ids(img_only, spatial_merge_size=merge, resume="spatial")
    np.testing.assert_array_equal(a.position_ids, b.position_ids)


@pytest.mark.parametrize("name", ["qwen2_vl", "qwen2_5_vl"])
def test_decode_positions_match_compute_3d_position_ids(name):
    model, fake, config = _peer(name)
    segs = [("text", 4), ("image", (1, 8, 12)), ("text", 5)]
    merge = config.vision_config.spatial_merge_size
    input_ids, types = _tokens(segs, config, merge, 1)
    _, delta = model.get_rope_index(
        fake, input_ids, mm_token_type_ids=types, image_grid_thw=torch.tensor([segs[1][1]])
    )
    fake.rope_deltas = delta
    cache = SimpleNamespace(get_seq_length=lambda: input_ids.shape[1])
    step = model.compute_3d_position_ids(
        fake,
        input_ids=None,
        inputs_embeds=torch.zeros(1, 3, 8),
        image_grid_thw=None,
        video_grid_thw=None,
        attention_mask=None,
        cache=cache,
    )
    ours = mrope_position_ids(segs, spatial_merge_size=merge)
    new = mrope_decode_position_ids(ours.rope_delta, np.arange(3) + input_ids.shape[1])
    np.testing.assert_array_equal(new, step[:, 0].numpy())


def test_ernie_text_rotary_tables_match_alternating_layout():
    from transformers.models.ernie4_5_vl_moe import modeling_ernie4_5_vl_moe as m

    config = transformers.Ernie4_5_VLMoeConfig().text_config
    rotary = m.Ernie4_5_VLMoeTextRotaryEmbedding(config)
    section = config.rope_parameters.get("mrope_section", [22, 22, 20])
    d = 2 * sum(section)
    segs = [("text", 3), ("image", (1, 6, 4)), ("text", 2)]
    ids = mrope_position_ids(segs).position_ids
    cos_t, sin_t = rotary(torch.zeros(1, dtype=torch.float32), torch.tensor(ids)[:, None, :])
    base = config.rope_parameters["rope_theta"]
    f = 1.0 / base ** (np.arange(0, d, 2) / d)
    c, s = mrope_cos_sin(ids, f, section, layout="alternating")
    # transformers repeats each pair's value twice (interleaved pairing), float32 angles
    np.testing.assert_allclose(cos_t[0, :, 0::2].double().numpy(), c, atol=3e-5)
    np.testing.assert_allclose(sin_t[0, :, 1::2].double().numpy(), s, atol=3e-5)


def test_pixtral_tables_match_transformers():
    from transformers.models.pixtral import modeling_pixtral as m

    config = transformers.PixtralVisionConfig()
    rotary = m.PixtralVisionRotaryEmbedding(config)
    h, w = 5, 7
    hh, ww = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    pos = torch.tensor(np.stack([hh.ravel(), ww.ravel()], axis=-1))
    cos_t, sin_t = rotary(torch.zeros(1, dtype=torch.float32), pos)
    d = config.head_dim
    ang = pixtral_angles(hh.ravel(), ww.ravel(), dim=d, base=config.rope_parameters["rope_theta"])
    half = d // 2
    np.testing.assert_allclose(cos_t[:, :half].double().numpy(), np.cos(ang), atol=2e-6)
    np.testing.assert_allclose(sin_t[:, half:].double().numpy(), np.sin(ang), atol=2e-6)
    # and the rotation: transformers' apply_rotary_pos_emb (half pairing)
    x = torch.randn(1, 1, h * w, d, generator=torch.Generator().manual_seed(0))
    q, _ = m.apply_rotary_pos_emb(x, x, cos_t, sin_t, unsqueeze_dim=0)
    ours = apply_rope_tables(x[0, 0].double().numpy(), np.cos(ang), np.sin(ang), pairing="half")
    np.testing.assert_allclose(q[0, 0].double().numpy(), ours, atol=2e-5)


def test_llama4_vision_freqs_match_transformers():
    from transformers.models.llama4 import modeling_llama4 as m

    config = transformers.Llama4VisionConfig(image_size=112, patch_size=14)
    freqs = m.Llama4VisionRotaryEmbedding._compute_freqs_ci(config)  # complex (side²+1, 1, D/2)
    side = config.image_size // config.patch_size
    d = config.hidden_size // config.num_attention_heads
    ang = llama4_vision_angles(side, dim=d, base=config.rope_parameters["rope_theta"])
    peer = freqs[:, 0].numpy()
    assert peer.shape == ang.shape
    np.testing.assert_allclose(peer.real, np.cos(ang), atol=3e-6)
    np.testing.assert_allclose(peer.imag, np.sin(ang), atol=3e-6)
    x = torch.randn(1, side * side + 1, 1, d, generator=torch.Generator().manual_seed(1))
    q, _ = m.vision_apply_rotary_emb(x, x, freqs)
    ours = apply_rope_tables(
        x[0, :, 0].double().numpy(), np.cos(ang), np.sin(ang), pairing="interleaved"
    )
    np.testing.assert_allclose(q[0, :, 0].double().numpy(), ours, atol=2e-5)


@pytest.mark.parametrize(("length", "channels"), [(1500, 384), (1500, 1280), (50, 4)])
def test_whisper_sinusoids_match_transformers(length, channels):
    from transformers.models.whisper.modeling_whisper import sinusoids

    from refimpl.audio import whisper_sinusoids

    peer = sinusoids(length, channels).double().numpy()  # float32 angles
    ours = whisper_sinusoids(length, channels)
    # float32 angles up to 1499 rad carry ~1e-4 absolute error (half an ulp of 1499 is 6e-5)
    np.testing.assert_allclose(peer, ours, atol=2e-4, rtol=0)
    np.testing.assert_allclose(peer[:10], ours[:10], atol=1e-6, rtol=0)


def _tmerge(name, config):
    vc = config.vision_config
    return getattr(vc, "temporal_merge_size", 1) if name == "ernie4_5_vl_moe" else 1


def _batch(name, config, rng, padding):
    """A padded batch of three mixed sequences (pad slots: token id 0, type 0, mask 0)."""
    vc = config.vision_config
    merge = vc.spatial_merge_size
    rows, images, videos, seconds = [], [], [], []
    for _ in range(3):
        segs, video = _mixed(name, rng)
        if name == "qwen2_5_vl":
            second = float(rng.choice([0.5, 1.0, 2.0, 1 / 3]))
            seconds.append(second)
            segs = [(*s, vc.tokens_per_second * second) if s[0] == "video" else s for s in segs]
        ids, types = _tokens(segs, config, merge, _tmerge(name, config))
        rows.append((ids[0], types[0], segs))
        images += [s[1] for s in segs if s[0] == "image"]
        videos.append(video)
    width = max(len(r[0]) for r in rows) + int(rng.integers(0, 4))
    input_ids = torch.zeros(3, width, dtype=torch.long)
    types = torch.zeros(3, width, dtype=torch.int32)
    mask = torch.zeros(3, width, dtype=torch.long)
    for b, (ids, tt, _) in enumerate(rows):
        n = len(ids)
        sl = slice(width - n, width) if padding == "left" else slice(0, n)
        input_ids[b, sl], types[b, sl], mask[b, sl] = ids, tt, 1
    return input_ids, types, mask, images, videos, seconds, [r[2] for r in rows]


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("padding", ["left", "right"])
@pytest.mark.parametrize("seed", range(3))
def test_padded_batch_matches_get_rope_index(name, padding, seed):
    model, fake, config = _peer(name)
    rng = np.random.default_rng(100 + seed)
    input_ids, types, mask, images, videos, seconds, segs = _batch(name, config, rng, padding)
    kwargs = {"second_per_grid_ts": torch.tensor(seconds)} if seconds else {}
    peer_ids, peer_deltas = model.get_rope_index(
        fake,
        input_ids,
        mm_token_type_ids=types,
        image_grid_thw=torch.tensor(images),
        video_grid_thw=torch.tensor(videos),
        attention_mask=mask,
        **kwargs,
    )
    video_id = getattr(config, "video_token_id", None)
    ours_types = mrope_token_types(
        input_ids.numpy(), image_token_id=config.image_token_id, video_token_id=video_id
    )
    np.testing.assert_array_equal(ours_types * mask.numpy(), types.numpy())
    vc = config.vision_config
    ours = mrope_batch_position_ids(
        ours_types,
        attention_mask=mask.numpy(),
        image_grid_thw=images,
        video_grid_thw=videos,
        video_time_intervals=[vc.tokens_per_second * s for s in seconds] if seconds else None,
        split_video_frames=name in FRAME_SPLIT,
        spatial_merge_size=vc.spatial_merge_size,
        temporal_merge_size=_tmerge(name, config),
        resume="spatial",
        time_precision="float32",
    )
    np.testing.assert_array_equal(ours.position_ids, peer_ids.numpy())
    np.testing.assert_array_equal(ours.rope_deltas, peer_deltas[:, 0].numpy())
    # each row's real slots carry the unbatched ids of its own segments
    for b, row in enumerate(segs):
        one = mrope_position_ids(
            row,
            spatial_merge_size=vc.spatial_merge_size,
            temporal_merge_size=_tmerge(name, config),
            resume="spatial",
            time_precision="float32",
        )
        np.testing.assert_array_equal(
            ours.position_ids[:, b, mask[b].bool().numpy()], one.position_ids
        )


@pytest.mark.parametrize("padding", ["left", "right"])
def test_padded_decode_matches_compute_3d_position_ids(padding):
    model, fake, _ = _peer("qwen2_vl")
    fake.rope_deltas = torch.tensor([[-7], [0], [12]])
    mask = torch.ones(3, 9, dtype=torch.long)
    for b, n in enumerate([0, 3, 5]):  # padding slots per row
        if n:
            mask[b, :n] = 0 if padding == "left" else 1
            mask[b, 9 - n :] = 1 if padding == "left" else 0
    cache = SimpleNamespace(get_seq_length=lambda: 6)
    kwargs = {"image_grid_thw": None, "video_grid_thw": None, "cache": cache}
    step = model.compute_3d_position_ids(
        fake, input_ids=None, inputs_embeds=torch.zeros(3, 9, 8), attention_mask=mask, **kwargs
    )
    ours = mrope_batch_decode_position_ids(
        fake.rope_deltas[:, 0].numpy(), attention_mask=mask.numpy()
    )
    np.testing.assert_array_equal(ours, step.numpy())
    step = model.compute_3d_position_ids(
        fake, input_ids=None, inputs_embeds=torch.zeros(3, 2, 8), attention_mask=None, **kwargs
    )
    ours = mrope_batch_decode_position_ids(
        fake.rope_deltas[:, 0].numpy(), cache_position=np.arange(6, 8)
    )
    np.testing.assert_array_equal(ours, step.numpy())


def test_qwen3_vl_rotary_is_interleaved_and_differs_from_ggml_imrope():
    """transformers' Qwen3-VL text rotary (its default sections [24, 20, 20], head_dim 128)
    is refimpl's "interleaved" layout; ggml's IMROPE with llama.cpp's e = 0 row differs from
    it on exactly the pairs the "imrope" layout gives to e."""
    from transformers.models.qwen3_vl import modeling_qwen3_vl as m

    config = transformers.Qwen3VLConfig().text_config
    rotary = m.Qwen3VLTextRotaryEmbedding(config)
    section = rotary.mrope_section
    d = config.head_dim
    ids = mrope_position_ids([("text", 3), ("image", (1, 8, 6)), ("text", 4)]).position_ids
    ids = ids + 700  # positions large enough for the slow pairs to turn measurably
    cos_t, sin_t = rotary(torch.zeros(1, dtype=torch.float32), torch.tensor(ids)[:, None, :])
    f = 1.0 / config.rope_parameters["rope_theta"] ** (np.arange(0, d, 2) / d)
    c, s = mrope_cos_sin(ids, f, section, layout="interleaved")
    # float32 angles near 720 rad: half an ulp is 3e-5, and transformers rounds twice
    np.testing.assert_allclose(cos_t[0, :, : d // 2].double().numpy(), c, atol=2e-4)
    np.testing.assert_allclose(sin_t[0, :, : d // 2].double().numpy(), s, atol=2e-4)
    ids4 = np.vstack([ids, np.zeros_like(ids[:1])])
    _, s_ggml = mrope_cos_sin(ids4, f, [*section, 0], layout="imrope")
    peer = sin_t[0, :, : d // 2].double().numpy()
    gap = np.abs(s_ggml - peer).max(axis=0)
    # pairs 61, 62 turn by p * theta_i ~ 2e-3 rad in transformers and not at all in ggml
    assert np.flatnonzero(gap > 1e-3).tolist() == [61, 62]


def _hunyuan_peer(section):
    from transformers.models.hunyuan_vl import modeling_hunyuan_vl as m

    text = {"head_dim": 2 * sum(section), "hidden_size": 64, "num_attention_heads": 4}
    text["rope_parameters"] = {"rope_theta": 1e4, "rope_type": "default", "xdrope_section": section}
    config = transformers.HunYuanVLConfig(text_config=text)  # hand-made sizes, no weights
    fake = SimpleNamespace(config=config)
    fake.get_vision_position_ids = lambda *a, **k: m.HunYuanVLModel.get_vision_position_ids(
        fake, *a, **k
    )
    return m, fake, config


@pytest.mark.parametrize("padding", ["left", "right"])
@pytest.mark.parametrize("seed", range(4))
def test_hunyuanvl_ids_match_get_rope_index(padding, seed):
    m, fake, config = _hunyuan_peer([4, 4, 4, 4])
    merge = config.vision_config.spatial_merge_size
    rng = np.random.default_rng(200 + seed)
    rows, grids = [], []
    for _ in range(3):
        types = []
        for _ in range(int(rng.integers(1, 4))):
            h, w = (merge * int(rng.integers(1, 5)) for _ in range(2))
            n = (h // merge) * (w // merge + 1) + (2 if rng.integers(0, 2) else 0)
            types += [0] * int(rng.integers(1, 6)) + [1] * n
            grids.append((1, h, w))
        rows.append(types + [0] * int(rng.integers(0, 4)))
    width = max(map(len, rows)) + int(rng.integers(0, 3))
    types = torch.zeros(3, width, dtype=torch.int32)
    mask = torch.zeros(3, width, dtype=torch.long)
    for b, r in enumerate(rows):
        sl = slice(width - len(r), width) if padding == "left" else slice(0, len(r))
        types[b, sl], mask[b, sl] = torch.tensor(r, dtype=torch.int32), 1
    input_ids = torch.where(types == 1, config.image_token_id, 5)
    peer_ids, peer_deltas = m.HunYuanVLModel.get_rope_index(
        fake, input_ids, types, image_grid_thw=torch.tensor(grids), attention_mask=mask
    )
    ours = hunyuanvl_position_ids(
        types.numpy(), image_grid_thw=grids, attention_mask=mask.numpy(), spatial_merge_size=merge
    )
    np.testing.assert_array_equal(ours.position_ids, peer_ids.numpy())
    np.testing.assert_array_equal(ours.rope_deltas, peer_deltas[:, 0].numpy())


def test_hunyuanvl_rotary_halves_differ_from_xdrope_on_image_tokens():
    """transformers 5.24's HunYuanVLRotaryEmbedding splits the doubled table into chunks of
    2 s_a, so the two halves of a pair read different axes (not a rotation) once the rows
    differ; Tencent's apply_rotary_pos_emb_xdrope and vLLM's xdrope.py repeat the sections
    over both halves, which is refimpl's 4-section blocked layout. On text tokens (equal rows)
    all agree."""
    m, _, config = _hunyuan_peer([4, 4, 4, 4])
    rotary = m.HunYuanVLRotaryEmbedding(config.text_config)
    d = config.text_config.head_dim
    f = 1.0 / 1e4 ** (np.arange(0, d, 2) / d)
    text = np.tile(np.arange(9), (4, 1))
    image = np.array([[3, 4, 5], [0, 1, 2], [1, 1, 0], [0, 0, 1]])  # (p, w, h, image index)
    for ids, agree in ((text, True), (image, False)):
        cos_t, _ = rotary(torch.zeros(1), torch.tensor(ids)[:, None, :])
        cos_t = cos_t[0].double().numpy()
        c, _ = mrope_cos_sin(ids, f, [4, 4, 4, 4])
        assert np.allclose(cos_t[:, : d // 2], c, atol=1e-6) == agree
        assert np.allclose(cos_t[:, d // 2 :], cos_t[:, : d // 2], atol=1e-6) == agree


OMNI = {  # model: (modeling module, class holding get_rope_index, thinker config class)
    "qwen2.5-omni": (
        "qwen2_5_omni",
        "Qwen2_5OmniPreTrainedModelForConditionalGeneration",
        "Qwen2_5OmniThinkerConfig",
    ),
    "qwen3-omni": (
        "qwen3_omni_moe",
        "Qwen3OmniMoePreTrainedModelForConditionalGeneration",
        "Qwen3OmniMoeThinkerConfig",
    ),
}
# Qwen2.5-Omni's tokenizer ids; the config classes leave these None or unset
VISION_START, VISION_END, AUDIO_END = 151652, 151653, 151648


def _omni_peer(model):
    import importlib

    mod, cls_name, config_cls = OMNI[model]
    cls = getattr(importlib.import_module(f"transformers.models.{mod}.modeling_{mod}"), cls_name)
    config = getattr(transformers, config_cls)()
    config.vision_start_token_id = VISION_START
    fake = SimpleNamespace(
        config=config, spatial_merge_size=config.vision_config.spatial_merge_size
    )
    fake.get_llm_pos_ids_for_vision = lambda *a: cls.get_llm_pos_ids_for_vision(fake, *a)
    fake.get_chunked_index = lambda *a: cls.get_chunked_index(fake, *a)
    return cls, fake, config


def _omni_tokens(segs, config, merge):
    """Token ids of Omni segments; media segments carry their start and end tokens."""
    c = config
    ids = []
    for seg in segs:
        kind = seg[0]
        if kind == "text":
            ids += [1] * seg[1]
        elif kind == "audio":
            ids += [c.audio_start_token_id, *[c.audio_token_id] * seg[1], AUDIO_END]
        else:
            t, h, w = seg[1]
            n = t * (h // merge) * (w // merge)
            pad = c.image_token_id if kind == "image" else c.video_token_id
            if kind == "video_audio":
                body = [pad] * n + [c.audio_token_id] * seg[3]
                ids += [VISION_START, c.audio_start_token_id, *body]
                ids += [AUDIO_END, VISION_END]
            else:
                ids += [VISION_START, *[pad] * n, VISION_END]
    return torch.tensor([ids])


@pytest.mark.parametrize("model", list(OMNI))
@pytest.mark.parametrize("audio_in_video", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_omni_ids_match_get_rope_index(model, audio_in_video, seed):
    from refimpl.multiaxis import omni_audio_tokens, omni_position_ids

    cls, fake, config = _omni_peer(model)
    merge = config.vision_config.spatial_merge_size
    rng = np.random.default_rng(300 + seed)
    mel = [int(rng.integers(40, 900)) for _ in range(2)]
    n_win = getattr(config.audio_config, "n_window", 50)
    n_audio = [omni_audio_tokens(f, model=model, n_window=n_win) for f in mel]
    grid_i = (1, 2 * int(rng.integers(1, 6)), 2 * int(rng.integers(1, 6)))
    grid_v = (int(rng.integers(1, 6)), 2 * int(rng.integers(1, 4)), 2 * int(rng.integers(1, 4)))
    second = float(rng.choice([0.5, 1.0, 2.0, 1 / 3, 0.7]))
    segs = [("text", int(rng.integers(1, 6))), ("image", grid_i), ("text", 2)]
    segs += [("audio", n_audio[0]), ("text", int(rng.integers(1, 4)))]
    if audio_in_video:
        segs += [("video_audio", grid_v, second, n_audio[1])]
    else:
        segs += [("video", grid_v, second), ("audio", n_audio[1])]
    segs += [("text", int(rng.integers(1, 5)))]
    input_ids = _omni_tokens(segs, config, merge)
    peer_ids, peer_delta = cls.get_rope_index(
        fake,
        input_ids,
        image_grid_thw=torch.tensor([grid_i]),
        video_grid_thw=torch.tensor([grid_v]),
        attention_mask=torch.ones_like(input_ids),
        use_audio_in_video=audio_in_video,
        audio_seqlens=torch.tensor(mel),
        second_per_grids=torch.tensor([second]),
    )
    ours = omni_position_ids(
        segs,
        model=model,
        spatial_merge_size=merge,
        position_id_per_seconds=config.position_id_per_seconds,
        seconds_per_chunk=getattr(config, "seconds_per_chunk", None) or 2.0,
    )
    np.testing.assert_array_equal(ours.position_ids, peer_ids[:, 0].double().numpy())
    assert ours.rope_delta == float(peer_delta[0, 0])


@pytest.mark.parametrize("model", list(OMNI))
def test_omni_audio_tokens_match_feat_extract_lengths(model):
    from refimpl.multiaxis import omni_audio_tokens

    frames = np.arange(1, 3001)
    if model == "qwen3-omni":
        from transformers.models.qwen3_omni_moe import modeling_qwen3_omni_moe as m

        peer = m._get_feat_extract_output_lengths(torch.tensor(frames), 50).numpy()
    else:
        from transformers.models.qwen2_5_omni import modeling_qwen2_5_omni as m

        encoder = SimpleNamespace()
        lengths = m.Qwen2_5OmniAudioEncoder._get_feat_extract_output_lengths
        peer = lengths(encoder, torch.tensor(frames))[1].numpy()
    ours = [omni_audio_tokens(int(n), model=model) for n in frames]
    np.testing.assert_array_equal(ours, peer)


@pytest.mark.parametrize("model", list(OMNI))
@pytest.mark.parametrize("padding", ["left", "right"])
def test_omni_padded_batch_matches_get_rope_index(model, padding):
    from refimpl.multiaxis import omni_audio_tokens, omni_batch_position_ids

    cls, fake, config = _omni_peer(model)
    merge = config.vision_config.spatial_merge_size
    rng = np.random.default_rng(400)
    n_win = getattr(config.audio_config, "n_window", 50)
    rows, grids_i, grids_v, seconds, mels = [], [], [], [], []
    for _ in range(3):
        mel = int(rng.integers(40, 600))
        gi = (1, 2 * int(rng.integers(1, 4)), 2 * int(rng.integers(1, 4)))
        gv = (int(rng.integers(1, 4)), 2, 2 * int(rng.integers(1, 3)))
        sec = float(rng.choice([0.5, 0.7, 2.0]))
        n_audio = omni_audio_tokens(mel, model=model, n_window=n_win)
        rows.append(
            [
                ("text", int(rng.integers(1, 6))),
                ("image", gi),
                ("text", 1),
                ("video_audio", gv, sec, n_audio),
                ("text", int(rng.integers(1, 4))),
            ]
        )
        grids_i.append(gi), grids_v.append(gv), seconds.append(sec), mels.append(mel)
    tokens = [_omni_tokens(r, config, merge)[0] for r in rows]
    width = max(len(t) for t in tokens) + 2
    input_ids = torch.zeros(3, width, dtype=torch.long)
    mask = torch.zeros(3, width, dtype=torch.long)
    for b, t in enumerate(tokens):
        sl = slice(width - len(t), width) if padding == "left" else slice(0, len(t))
        input_ids[b, sl], mask[b, sl] = t, 1
    peer_ids, peer_deltas = cls.get_rope_index(
        fake,
        input_ids,
        image_grid_thw=torch.tensor(grids_i),
        video_grid_thw=torch.tensor(grids_v),
        attention_mask=mask,
        use_audio_in_video=True,
        audio_seqlens=torch.tensor(mels),
        second_per_grids=torch.tensor(seconds),
    )
    ours = omni_batch_position_ids(
        rows,
        mask.numpy(),
        model=model,
        spatial_merge_size=merge,
        position_id_per_seconds=config.position_id_per_seconds,
    )
    np.testing.assert_array_equal(ours.position_ids, peer_ids.double().numpy())
    np.testing.assert_array_equal(ours.rope_deltas, peer_deltas[:, 0].double().numpy())
