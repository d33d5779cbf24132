"""Instructor-only code appended to a chapter's solution in the instructor notebook (and in the
tests that inject the solutions): it binds the names a workbook answer cell defines when the
chapter's solution computes them without naming them. Never copied into the student workbook.
"""

BINDINGS: dict[str, str] = {
    "ex-alibi-six": "answer = 2.0 ** -np.array([2, 4, 6, 8, 1, 3])\nunused = [2.0**-5, 2.0**-7]",
    "ex-alibi-cache": "shift = (alibi_shifted_bias(4, 1, 10) - alibi_bias(4, 1, 10))[:, 0, 0]",
    "ex-base-backwards": 'which_is_reversed = "labels"\nfastest_turn = 2 * np.pi / theta[0]',
    "ex-check-precision-class": (
        "predicted_class = rep16.precision\n"
        "float32_tables_pass = check_rope(rope_with_tables('float32'), dim=64, base=10000.0,"
        " pairing='half').ok"
    ),
    "ex-complexity-nonzeros": (
        "nonzeros_128 = int(np.count_nonzero(refimpl.rotation_matrix(3.0, refimpl.inv_freq(128))))"
    ),
    "ex-dynamic-history": "calls = (10, 500, 70)",
    "ex-longrope-phi3": "logit_factor = af**2",
    "ex-longrope-switch": 'set_4095, set_4096 = "short", "long"',
    "ex-yarn-mscale": (
        "cos_sin_factor = yarn_attention_scaling(factor=40.0, mscale=1.0, mscale_all_dim=1.0)"
    ),
    "ex-mrope-width": "blocked, interleaved = np.arange(40, 64), np.arange(2, 64, 3)",
    "ex-naive-length": (
        "code_len4 = refimpl.normalized_encoding(4, 1)[3, 0]\n"
        "code_len7 = refimpl.normalized_encoding(7, 1)[3, 0]\nN_same = 10"
    ),
    "ex-notation-config": 'n_heads_k = cfg["num_key_value_heads"]',
    "ex-numerics-exponent": "bound = 2.0**-24 * e * np.log(500000.0)",
    "ex-quick-interleaved": "converter = refimpl.interleaved_to_half_weights",
    "ex-quick-partial": 'table_shape, rotary_width = z["cos"].shape, meta_p["rotary_dim"]',
    "ex-rope-zero-pair": "fixed_every_m = False",
    "ex-t5-cache": "buckets = row[[0, 173, 200, 299, 300]]",
    "ex-trouble-yarn": "applied = rep.attention_scaling_applied",
    "ex-exp-temperature": "restored = h128_t <= h16",
    "ex-exp-pi-offset": "offset_presented, angle_change = 3 / 8, 3 * theta0 - 3 * theta0 / 8",
    "ex-exp-dynamic-static": "def equivalent_factor(l):\n    return l / 16",
    "ex-exp-nope": 'prediction = {"nope": False, "rope": True}',
    "ex-exp-learned-table": "changes = False",
}
BINDINGS.update(
    {
        "ex-models-hybrid-tau": "first_pos, tau = 8191, t[1]",
        "ex-models-mla-v3": (
            "softmax_factor = v3[0].query_scaling.softmax_scale\n"
            'naive_width = v3cfg["hidden_size"] // v3cfg["num_attention_heads"]'
        ),
        "ex-models-proportional-features": "shared = len(prop_features & partial_features)",
    }
)
BINDINGS["ex-models-mrope-axis"] = 'axis_17_qwen25, axis_17_qwen3, axis_61_qwen3 = "h", "w", "t"'
BINDINGS.update(
    {
        "ex-cope-words": "p_last_first = cope_positions(lg)[-1, 0]",
        "ex-cope-interpolation": "term = got",
        "ex-nope-decode": "decoded = np.rint(1.0 / o - 1.0).astype(int)",
    }
)
BINDINGS["ex-configs-nope"] = "n_specs = len(sch.groups())"
BINDINGS.update(
    {
        "ex-resonance-change": "rounded = 2 * np.pi / th0 < 8192",
        "ex-engines-yarn-magnitude": "magnitude = float(c[0, 0])",
        "ex-mrope-timestamps": "gap = int(t1 - t0)",
    }
)
BINDINGS["ex-pixtral-axial"] = "same = bool(np.allclose(P[0] @ P[1].T, A[0] @ A[1].T))"
BINDINGS.update(
    {
        "ex-whisper-vs-sinusoidal": "equal_after = bool(np.allclose(s_tab[:, perm], pe))",
        "ex-framework-mixed-text": "freq = F[0, 0] + F[1, 0]",
        "ex-graph-path": (
            "graph_buckets = graph_distance_buckets(shortest_path_distances(Pth), num_buckets=8,"
            " max_distance=16)"
        ),
    }
)
BINDINGS["ex-pope-width"] = (
    "n_features = apply_pope(np.zeros((1, 64)), [3.0]).shape[-1]\n"
    "n_freqs, slowest = f.shape[0], f[-1]"
)
