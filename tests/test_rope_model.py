"""posenc_cli.kinds._rope_model (what a model class adds beside its RoPE cache) and float32's log/log1p: values
against transformers' own (tests/goldens/rope_model/, made by its config classes and a real Llama4TextAttention)
and against mpmath, hostile config fields refused, hand values over the config's, the record read back by verify."""

from __future__ import annotations

import json
from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import api, verify
from posenc_cli.cli import cli
from posenc_cli.encodings import float32
from posenc_cli.errors import SpecError

GOLDENS = Path(__file__).resolve().parent / "goldens" / "rope_model"
ROPE_CONFIGS = GOLDENS.parent / "rope_config" / "configs"
MANIFEST = json.loads((GOLDENS / "manifest.json").read_text())
ARRAYS = np.load(GOLDENS / "rope_model_goldens.npz")
SCOUT = ROPE_CONFIGS / "llama-4-scout"


def nearest_float32(value: mpmath.mpf) -> float:
    """mpmath's value rounded once to float32 (24 bits, nearest-even)."""
    with mpmath.workprec(24):
        return float(+value)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.astype(np.float32).view(np.int32).astype(np.int64) - b.astype(np.float32).view(np.int32))


# ------------------------------------------------------------------------------------------- float32 log, log1p
@pytest.mark.parametrize("which", ["log", "log1p"])
def test_log_is_correctly_rounded(which):
    rng = np.random.default_rng(27)
    x = np.concatenate([
        np.arange(1, 3000, dtype=np.float32), rng.uniform(0.5, 2.0, 2000).astype(np.float32),
        np.float32([2**-149, 1e-30, 0.999999, 1.0000001, 3e38, 1.0, 2.0**24 + 2]),
    ])  # fmt: skip
    got = (float32.log if which == "log" else float32.log1p)(x)
    mpmath.mp.prec = 200
    want = [nearest_float32((mpmath.log if which == "log" else mpmath.log1p)(mpmath.mpf(float(v)))) for v in x]
    assert got.dtype == np.float32 and got.tolist() == want


def test_log_refuses_what_is_outside_its_domain():
    with pytest.raises(ValueError):
        float32.log(np.float32([0.0]))
    with pytest.raises(ValueError):
        float32.log1p(np.float32([-1.0]))
    with pytest.raises(ValueError):
        float32.log(np.float32([np.inf]))
    assert float32.log(np.float32([1.0])).tolist() == [0.0] and float32.log1p(np.float32([0.0])).tolist() == [0.0]


# --------------------------------------------------------------------------------- values against transformers
@pytest.mark.parametrize("name", sorted(MANIFEST["no_rope_layers"]))
def test_no_rope_layers_are_the_config_classes(name):
    folder = GOLDENS.parent / MANIFEST["no_rope_layers"][name]["config"]
    table = api.rope(8, config=folder)
    want = ARRAYS[f"no_rope_layers__{name}"]
    assert table.arrays["no_rope_layers"].dtype == np.int8
    assert table.arrays["no_rope_layers"].tolist() == want.tolist()


@pytest.mark.parametrize("name", sorted(MANIFEST["attn_scales"]))
def test_attn_scales_are_llama4_attentions(name):
    """framework: within an ulp of torch's float32 (its log1p is not always correctly rounded: at 428 and 1217 it
    is an ulp off), nearly all bit-identical; exact: the real formula correctly rounded, from mpmath."""
    info = MANIFEST["attn_scales"][name]
    golden = ARRAYS[f"attn_scales__{name}"]
    ids = np.arange(info["first_position"], info["first_position"] + golden.size)
    given = {"floor_scale": info["floor_scale"], "attn_scale": info["attn_scale"]} if "floor3" in name else {}
    framework = api.rope(config=SCOUT, position_ids=ids, arithmetic="framework", **given).arrays["attn_scales"]
    assert framework.dtype == np.float32 and framework.shape == golden.shape
    assert ulps(framework, golden).max() <= 1 and (framework == golden).mean() >= 0.99
    exact = api.rope(config=SCOUT, position_ids=ids, **given).arrays["attn_scales"]
    assert ulps(exact, golden).max() <= 1
    mpmath.mp.prec = 120
    floor_scale, attn_scale = info["floor_scale"], mpmath.mpf(info["attn_scale"])
    for at in np.linspace(0, golden.size - 1, 97).astype(int).tolist():
        step = (int(ids[at]) + 1) // floor_scale
        assert exact[at] == nearest_float32(mpmath.log(step + 1) * attn_scale + 1), (at, ids[at])


@pytest.mark.parametrize("name", sorted(MANIFEST["softmax_scale"]))
def test_softmax_scale_is_deepseeks_attention_scaling(name):
    want = MANIFEST["softmax_scale"][name]["scaling"]
    table = api.rope(8, config=ROPE_CONFIGS / name, arithmetic="framework")
    assert table.params["softmax_scale"] == want and table.params["qk_head_dim"] == 192
    exact = api.rope(8, config=ROPE_CONFIGS / name).params["softmax_scale"]
    assert abs(exact - want) <= 2 * np.spacing(want)
    doc = json.loads((ROPE_CONFIGS / name / "config.json").read_text())
    rope = doc.get("rope_scaling") or doc["rope_parameters"]
    mpmath.mp.prec = 200
    m = mpmath.mpf(1) / 10 * mpmath.mpf(rope["mscale_all_dim"]) * mpmath.log(rope["factor"]) + 1
    assert exact == float(mpmath.mpf(192) ** -0.5 * m * m)


def test_a_model_without_extras_gains_nothing():
    table = api.rope(8, config=ROPE_CONFIGS / "llama-3.1-8b")
    assert set(table.arrays) == {"cos", "sin", "inv_freq"} and "softmax_scale" not in table.params


# ------------------------------------------------------------------------------------------- hand values win
def test_hand_values_override_the_configs():
    table = api.rope(16, config=SCOUT, no_rope_layers=[1, 0, 1], attn_scale=0.5, floor_scale=4)
    assert table.arrays["no_rope_layers"].tolist() == [1, 0, 1]
    mpmath.mp.prec = 100
    want = [nearest_float32(mpmath.log((p + 1) // 4 + 1) * mpmath.mpf(0.5) + 1) for p in range(16)]
    assert table.arrays["attn_scales"].tolist() == want
    assert table.params["floor_scale"] == 4 and table.params["attn_scale"] == 0.5
    deepseek = api.rope(8, config=ROPE_CONFIGS / "deepseek-v3", qk_head_dim=64, factor=1.0, arithmetic="framework")
    assert deepseek.params["softmax_scale"] == 64**-0.5  # factor 1: no mscale


def test_the_record_names_the_config_fields_it_took_and_not_those_a_hand_value_replaced():
    fields = api.rope(8, config=SCOUT).params["config_fields"].split(",")
    assert {"text_config.num_hidden_layers", "llama4_text default no_rope_layer_interval",
            "text_config.floor_scale", "text_config.attn_scale"} <= set(fields)  # fmt: skip
    fields = api.rope(8, config=SCOUT, no_rope_layers=[1], attn_scale=0.2).params["config_fields"].split(",")
    assert "text_config.attn_scale" not in fields and "text_config.num_hidden_layers" not in fields
    assert "text_config.floor_scale" in fields
    fields = api.rope(8, config=ROPE_CONFIGS / "deepseek-v3", qk_head_dim=64).params["config_fields"].split(",")
    assert "qk_nope_head_dim" not in fields


def test_without_a_config_the_options_alone_make_them():
    table = api.rope(4, 8, no_rope_layers=[0, 1], attn_scale=0.1)
    assert table.arrays["no_rope_layers"].tolist() == [0, 1] and table.params["floor_scale"] == 8192
    assert table.arrays["attn_scales"].tolist() == [1.0] * 4
    with pytest.raises(SpecError, match="attn_scale"):
        api.rope(4, 8, floor_scale=3)


# ------------------------------------------------------------------------------------------- hostile configs
def write(tmp_path, doc) -> Path:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return folder


LLAMA4 = {"model_type": "llama4_text", "head_dim": 8, "rope_theta": 500000.0, "num_hidden_layers": 4}


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"no_rope_layers": [1, 2, 1, 0]}, "no_rope_layers"),
        ({"no_rope_layers": [1, True, 1, 0]}, "no_rope_layers"),
        ({"no_rope_layers": [1, 1, 0]}, "no_rope_layers"),
        ({"no_rope_layers": "1,1,1,0"}, "no_rope_layers"),
        ({"no_rope_layers": [1] * 70000}, "no_rope_layers"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"num_hidden_layers": 1e9}, "num_hidden_layers"),
        ({"no_rope_layer_interval": 0}, "no_rope_layer_interval"),
        ({"floor_scale": 0}, "floor_scale"),
        ({"floor_scale": 8192.5}, "floor_scale"),
        ({"attn_scale": -0.1}, "attn_scale"),
        ({"attn_scale": 1e300}, "attn_scale"),
        ({"attn_scale": "0.1"}, "attn_scale"),
        ({"attn_temperature_tuning": 1}, "attn_temperature_tuning"),
    ],
)
def test_hostile_fields_are_refused_naming_them(tmp_path, fields, named):
    folder = write(tmp_path, {**LLAMA4, **fields})
    with pytest.raises(SpecError, match=named) as caught:
        api.rope(4, config=folder)
    assert caught.value.param == "config" and "\n" not in str(caught.value)


@pytest.mark.parametrize("fields", [{"qk_nope_head_dim": -1}, {"qk_rope_head_dim": 1.5}, {"qk_nope_head_dim": 2**40}])
def test_hostile_deepseek_fields_are_refused(tmp_path, fields):
    doc = {"model_type": "deepseek_v3", "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "rope_theta": 10000.0,
           **fields}  # fmt: skip
    with pytest.raises(SpecError) as caught:
        api.rope(4, config=write(tmp_path, doc))
    assert caught.value.param == "config" and next(iter(fields)) in str(caught.value)


def test_a_longer_schedule_is_cut_to_the_layers(tmp_path):
    table = api.rope(4, config=write(tmp_path, {**LLAMA4, "no_rope_layers": [0, 1, 0, 1, 1, 1]}))
    assert table.arrays["no_rope_layers"].tolist() == [0, 1, 0, 1]


def test_the_command_line_refuses_a_hostile_field_in_one_line(tmp_path):
    folder = write(tmp_path, {**LLAMA4, "floor_scale": -3})
    result = CliRunner().invoke(cli, ["rope", "-n", "4", "--config", str(folder), "-o", str(tmp_path / "r.npz")])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "floor_scale" in lines[0], result.stderr


# ------------------------------------------------------------------------------------------- the record
@pytest.mark.parametrize("config", ["llama-4-scout", "deepseek-v3", "../../rope_model/configs/smollm3-3b"])
@pytest.mark.parametrize("arithmetic", ["exact", "framework"])
def test_verify_regenerates_the_extras_from_the_record(tmp_path, config, arithmetic):
    out = tmp_path / "rope.npz"
    args = ["rope", "-n", "64", "--config", str(ROPE_CONFIGS / config), "--arithmetic", arithmetic, "-o", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.stderr
    loaded = api.load(out)
    extra = {"llama-4-scout": "attn_scales", "deepseek-v3": "cos"}.get(config, "no_rope_layers")
    assert extra in loaded.arrays
    if config == "deepseek-v3":
        assert loaded.params["softmax_scale"] == MANIFEST["softmax_scale"]["deepseek-v3"]["scaling"]
    again = verify.regenerate(loaded.kind, loaded.params)
    assert set(again.arrays) == set(loaded.arrays)
    assert verify.verify(loaded, again).ok
    checked = CliRunner().invoke(cli, ["verify", str(out)])
    assert checked.exit_code == 0, checked.stderr + checked.stdout
