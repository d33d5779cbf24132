"""The model-coverage table (``model_coverage.json``, written by ``make model-coverage``) still
holds, without transformers.

Each model type of transformers 5.24's ``CONFIG_MAPPING_NAMES`` is ``matched`` (refimpl's
schedule equals the rotary module transformers builds) or ``refused`` (refimpl raises, and
transformers does something a schedule does not express). This test re-runs refimpl on every
config the table judged (the class-default configs stored in ``model_coverage_configs.json`` and
the files of ``configs/``) and checks that each matched type still gives the same schedule (its
fingerprint) and each refused type still refuses; that the table is current (the input hash of
the tool, the stored configs and refimpl's family readers, and transformers' version where it is
installed); and that no type is left wrongly refused, silent or failed.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import warnings

import pytest

import refimpl

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TABLE = json.loads((HERE / "model_coverage.json").read_text())
CLASS_CONFIGS = json.loads((HERE / "model_coverage_configs.json").read_text())


def _tool():
    spec = importlib.util.spec_from_file_location(
        "model_coverage", ROOT / "tools" / "model_coverage.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


def _config(model_type: str, source: str) -> dict:
    if source == "class defaults":
        return json.loads(json.dumps(CLASS_CONFIGS[model_type]))
    return json.loads((HERE / "configs" / source).read_text())


def _reading(cfg: dict):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return refimpl.rope_schedule(cfg)
    except (ValueError, TypeError) as exc:
        return exc


def test_table_is_for_the_pinned_transformers():
    assert TABLE["transformers"] == TOOL.TRANSFORMERS_VERSION
    try:
        import transformers
    except ImportError:
        return
    assert transformers.__version__ == TABLE["transformers"], (
        f"transformers {transformers.__version__} is installed but the table was made with "
        f"{TABLE['transformers']}: run make model-coverage"
    )


def test_table_is_current():
    assert TOOL.input_hash() == TABLE["input_hash"], (
        "the tool, a stored config or refimpl's family readers changed since the table was "
        "written: run make model-coverage"
    )


#: Types refimpl refuses although transformers does something a schedule could express: open
#: work, listed here with why so that the list can only change knowingly. It is empty: every
#: type is matched or truly refused. The test fails when a type opens that is not listed, when a
#: listed type is closed (remove it here), and when any open type is silent or failed.
KNOWN_OPEN: dict[str, str] = {}


def test_every_type_is_matched_or_truly_refused():
    open_types = {k: (v["status"], v.get("why", "")) for k, v in TABLE.get("open", {}).items()}
    worse = {k: s for k, (s, _) in open_types.items() if s != "wrongly_refused"}
    assert not worse, f"silent or failed types (a wrong answer or an unjudged type): {worse}"
    new = sorted(set(open_types) - set(KNOWN_OPEN))
    assert not new, f"{len(new)} types neither matched nor truly refused: " + "; ".join(
        f"{k} ({open_types[k][0]}: {open_types[k][1][:120]})" for k in new
    )
    closed = sorted(set(KNOWN_OPEN) - set(open_types))
    assert not closed, f"closed since the list was written, remove them from KNOWN_OPEN: {closed}"


def test_final_statuses_only():
    assert {v["status"] for v in TABLE["types"].values()} <= set(TOOL.FINAL)
    counts = {}
    for section in ("types", "open"):
        for entry in TABLE.get(section, {}).values():
            counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    assert counts == TABLE["counts"]


def test_statuses_still_hold():
    """Matched: the same schedule fingerprint per judged config; refused: still refused."""
    changed = []
    for model_type, entry in TABLE["types"].items():
        for source, check in entry["checks"].items():
            got = _reading(_config(model_type, source))
            if check == "refused":
                if not isinstance(got, Exception):
                    changed.append(f"{model_type} ({source}): no longer refused")
            elif isinstance(got, Exception):
                changed.append(f"{model_type} ({source}): now refused: {got}")
            elif TOOL.fingerprint(got) != check:
                changed.append(f"{model_type} ({source}): schedule changed ({TOOL.summary(got)})")
    assert not changed, f"{len(changed)} statuses changed: " + "; ".join(changed[:20])


def test_refusal_reasons_still_hold():
    """A refused type's recorded reason is still what refimpl says for one of its configs."""
    stale = []
    for model_type, entry in TABLE["types"].items():
        if entry["status"] != "refused":
            continue
        messages = {
            str(_reading(_config(model_type, source)))
            for source, check in entry["checks"].items()
            if check == "refused"
        }
        if entry["reason"] not in messages:
            stale.append(model_type)
    assert not stale, f"refusal messages changed for {stale[:20]}: run make model-coverage"


def test_fingerprint_sees_a_change():
    """The check can fail: a matched type's schedule with another base has another
    fingerprint, and a summary names its layers."""
    model_type = next(
        k
        for k, v in TABLE["types"].items()
        if v["status"] == "matched" and "class defaults" in v["checks"] and k == "llama"
    )
    cfg = _config(model_type, "class defaults")
    before = TOOL.fingerprint(refimpl.rope_schedule(cfg))
    assert before == TABLE["types"][model_type]["checks"]["class defaults"]
    cfg["rope_parameters"] = dict(cfg["rope_parameters"], rope_theta=20000.0)
    after = refimpl.rope_schedule(cfg)
    assert TOOL.fingerprint(after) != before
    assert TOOL.summary(after).startswith(f"{len(after)} layers: ")


@pytest.mark.parametrize("status", ["matched", "refused"])
def test_each_status_is_present(status):
    assert any(v["status"] == status for v in TABLE["types"].values())


def test_fingerprint_sees_m_rope_sections_and_the_indexer():
    """The table pins an M-RoPE layout and an indexer's rotation: another section layout or an
    indexer with another pairing, slice or width has another fingerprint."""
    cfg = _config("hy_v4_vl_text", "class defaults")
    before = TOOL.fingerprint(refimpl.rope_schedule(cfg))
    assert before == TABLE["types"]["hy_v4_vl_text"]["checks"]["class defaults"]
    other = dict(cfg, rope_parameters=dict(cfg["rope_parameters"], mrope_section=[10, 11, 11]))
    assert TOOL.fingerprint(refimpl.rope_schedule(other)) != before
    fewer = dict(cfg, index_head_dim=96)  # the indexer's trailing slice moves
    assert TOOL.fingerprint(refimpl.rope_schedule(fewer)) != before
    shared = dict(
        cfg, indexer_types=["shared" if t == "full" else "full" for t in cfg["indexer_types"]]
    )
    assert TOOL.fingerprint(refimpl.rope_schedule(shared)) != before


def test_qwen4_exp_is_refused_because_its_attention_cannot_be_built():
    entry = TABLE["types"]["qwen4_exp_text"]
    assert entry["status"] == "refused"
    assert "cannot be built on this config" in entry["reason"]
    assert entry["transformers"].startswith("its model cannot be built on this config")
    # the hand-made config with the indexer's keys set is matched
    assert entry["checks"]["qwen4-exp-text.handmade.json"] != "refused"
