"""``posenc rope --runtime tensorrt-llm``: TensorRT-LLM's ``rotary_inv_freq`` and fused
``embed_positions_for_gpt_attention`` (posenc_cli/kinds/runtimes/tensorrt_llm.py).

The goldens (tests/goldens/runtimes/tensorrt_llm/, README.md there) are the output of TensorRT-LLM's own
``RopeEmbeddingUtils`` methods in ``tensorrt_llm/functional.py`` of NVIDIA/TensorRT-LLM at commit
2a9abd9536aa62ad3e4b9314be9286b1b1be523b, executed as written with numpy 1.26 and torch (TensorRT-LLM itself needs
CUDA to install): ``apply_llama3_scaling``, ``create_sinusoidal_positions_for_attention_plugin``,
``create_sinusoidal_positions_long_rope`` and ``create_sinusoidal_positions_yarn`` (in that order within characters
166,000-182,000 of the file as the index pages it; the index gives no line numbers), called as
``RopeParams.create_rope_const_params`` (``tensorrt_llm/_torch/attention_backend/interface.py``) calls them.

- ``--arithmetic framework`` against them: ``rotary_inv_freq`` within 2 ulps (numpy's own float32 ``pow``, Intel
  SVML on AVX-512, is up to 2 ulps from the correctly rounded one posenc uses; the float64 ``pow`` path is
  bit-identical), each table entry within ``4 u (1 + |angle|) A`` (``u = 2**-24``: numpy's float32 ``cos``/``sin``
  are within an ulp, and an ulp of ``inv_freq`` moves an angle by ``u |angle|``), and at least 85 % of the entries
  bit-identical.
- ``--arithmetic exact`` against mpmath (60 digits) applying the same real formulas: bit-identical, and within the
  framework bound of the goldens.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import SpecError
from posenc_cli.identification import identify, identify_array
from posenc_cli.identification._rt_tensorrt_llm import hypotheses
from posenc_cli.read import load
from posenc_cli.verify import regenerate

HERE = Path(__file__).resolve().parent / "goldens" / "runtimes" / "tensorrt_llm"
MANIFEST = json.loads((HERE / "manifest.json").read_text())
CASES = MANIFEST["cases"]
TABLE, INV = "embed_positions_for_gpt_attention", "rotary_inv_freq"
U = 2.0**-24
mpmath.mp.dps = 60


def golden(name: str) -> dict[str, np.ndarray]:
    with np.load(HERE / CASES[name]["file"], allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def trt(name: str, **more: object) -> dict[str, np.ndarray]:
    table = posenc_cli.rope(**CASES[name]["posenc"], runtime="tensorrt-llm", **more)
    return {key: np.asarray(value) for key, value in table.arrays.items()}


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ia, ib = (np.asarray(x, np.float32).view(np.int32).astype(np.int64) for x in (a, b))
    ia, ib = (np.where(i < 0, -(i & 0x7FFFFFFF), i) for i in (ia, ib))
    return np.abs(ia - ib)


def test_goldens_are_the_manifests():
    import hashlib

    assert MANIFEST["repository"] == "NVIDIA/TensorRT-LLM"
    assert MANIFEST["commit"] == "2a9abd9536aa62ad3e4b9314be9286b1b1be523b"
    assert MANIFEST["path"] == "tensorrt_llm/functional.py"
    assert MANIFEST["environment"]["numpy"].startswith("1.")  # TensorRT-LLM pins numpy<2: its promotion rules
    for case in CASES.values():
        assert hashlib.sha256((HERE / case["file"]).read_bytes()).hexdigest() == case["sha256"]


# --------------------------------------------------------------------------------- the real formulas (mpmath)
def _inv_freq(name: str) -> list[mpmath.mpf]:
    """TensorRT-LLM's frequencies as real numbers, from the call the golden was made with."""
    case = CASES[name]
    call, function = case["call"], case["function"]
    dim = call["dim"]
    theta = mpmath.mpf(call.get("theta", call.get("base")))
    plain = [theta ** (-mpmath.mpf(2 * k) / dim) for k in range(dim // 2)]
    if function.endswith("long_rope"):
        return [f / mpmath.mpf(e) for f, e in zip(plain, call["long_factor"], strict=True)]  # the factors given
    if function.endswith("yarn"):
        factor, original = call["scaling_factor"], call["original_max_position_embeddings"]

        def correction(rotations: float) -> float:  # TensorRT-LLM's float64 Python
            return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(float(theta)))

        low, high = max(math.floor(correction(call["beta_fast"])), 0), min(math.ceil(correction(call["beta_slow"])),
                                                                           dim - 1)  # fmt: skip
        high = high + 0.001 if low == high else high
        out = []
        for k, f in enumerate(plain):
            ramp = min(max((mpmath.mpf(k) - low) / (mpmath.mpf(high) - low), 0), 1)
            out.append(f * (ramp / factor + (1 - ramp)))
        return out
    kind = call["scale_type"]
    if kind == "linear":
        return [f / call["scale"] for f in plain]
    if kind == "llama3":
        config = call["rope_scaling_config"]
        factor, original = config["factor"], config["original_max_position_embeddings"]
        low, high = config["low_freq_factor"], config["high_freq_factor"]
        out = []
        for f in plain:
            wavelen = 2 * mpmath.pi / f
            if wavelen < mpmath.mpf(original) / high:
                out.append(f)
            elif wavelen > mpmath.mpf(original) / low:
                out.append(f / factor)
            else:
                s = (original / wavelen - low) / (high - low)
                out.append((1 - s) * f / factor + s * f)
        return out
    return plain  # none; dynamic at alpha 1


def _amplitude(name: str) -> float:
    call, function = CASES[name]["call"], CASES[name]["function"]
    if function.endswith("yarn"):

        def get(scale: float, m: float) -> float:
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        factor = call["scaling_factor"]
        return get(factor, call["mscale"]) / get(factor, call["mscale_all_dim"])
    if function.endswith("long_rope"):
        scale = call["num_pos"] / call["original_max_pos"]
        return 1.0 if scale <= 1 else math.sqrt(1.0 + math.log(scale) / math.log(call["original_max_pos"]))
    return 1.0


def _f32(value: mpmath.mpf) -> np.float32:
    """``value`` correctly rounded to float32 (the nearest of the float64 guess's neighbours)."""
    guess = np.float32(float(value))
    around = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(around, key=lambda c: abs(mpmath.mpf(float(c)) - value))


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_is_the_real_formula_correctly_rounded(name):
    arrays = trt(name)
    freqs = _inv_freq(name)
    amplitude = mpmath.mpf(_amplitude(name))
    if INV in arrays:
        assert arrays[INV].dtype == np.float32
        assert [float(v) for v in arrays[INV]] == [float(_f32(f)) for f in freqs]
    table = arrays[TABLE]
    rows = table.size // (2 * len(freqs))
    pairs = table.reshape(rows, len(freqs), 2)
    for p in sorted({0, 1, 2, rows // 3, rows - 1}):
        for k, f in enumerate(freqs):
            want = (_f32(amplitude * mpmath.cos(p * f)), _f32(amplitude * mpmath.sin(p * f)))
            assert (pairs[p, k, 0], pairs[p, k, 1]) == want, (p, k)


# ---------------------------------------------------------------------------- TensorRT-LLM's own output
def _bound(name: str, gold: np.ndarray, factor: float) -> np.ndarray:
    freqs = np.array([float(f) for f in _inv_freq(name)])
    rows = gold.size // (2 * len(freqs))
    angles = np.repeat(np.outer(np.arange(rows), freqs), 2, axis=1).reshape(1, -1)
    return factor * U * (1 + angles) * _amplitude(name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_framework_is_tensorrt_llms_table(name):
    want, got = golden(name), trt(name, arithmetic="framework")
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].shape == want[key].shape and got[key].dtype == np.float32, key
    if INV in want:
        assert int(ulps(got[INV], want[INV]).max()) <= 2
    error = np.abs(got[TABLE].astype(np.float64) - want[TABLE])
    assert np.all(error <= _bound(name, want[TABLE], 4))
    assert np.mean(got[TABLE] == want[TABLE]) >= 0.85


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_is_within_tensorrt_llms_rounding(name):
    want, got = golden(name), trt(name)
    assert np.all(np.abs(got[TABLE].astype(np.float64) - want[TABLE]) <= _bound(name, want[TABLE], 8))


def test_the_fused_layout():
    got = trt("yarn_factor4_d64_n256")
    table = got[TABLE]
    assert table.shape == (1, 256 * 64)
    pairs = table.reshape(256, 32, 2)
    amplitude = np.float32(_amplitude("yarn_factor4_d64_n256"))
    assert np.all(pairs[0, :, 0] == amplitude) and not pairs[0, :, 1].any()  # position 0: (A, 0) pairs
    made = posenc_cli.rope(256, 64, theta=1e6, scaling="yarn", factor=4.0, original_max_positions=32768)
    assert made.params["attention_scaling"] == pytest.approx(float(amplitude), rel=1e-7)
    longrope = posenc_cli.rope(**CASES["longrope_d32_n64_orig128"]["posenc"], runtime="tensorrt-llm")
    assert list(longrope.arrays) == [TABLE] and longrope.arrays[TABLE].shape == (1, 128 * 32)  # max(seq, original)
    assert longrope.params["seq_len"] == 64 and longrope.params["runtime"] == "tensorrt-llm"
    assert dict(made.axes)["inv_freq"] == ("freqs",)
    t = posenc_cli.rope(8, 16, runtime="tensorrt-llm")
    assert dict(t.axes) == {INV: ("freqs",), TABLE: ("batch", "positions_freqs_cos_sin")}
    assert t.params["runtime"] == "tensorrt-llm" and "layout" not in t.params
    # the plugin's rotations (gpt-neox, gpt-j) read the same table
    same = posenc_cli.rope(8, 16, runtime="tensorrt-llm", layout="interleaved").arrays[TABLE]
    assert same.tobytes() == t.arrays[TABLE].tobytes()


def test_dynamic_is_the_table_at_theta():
    plain = trt("none_d64_n512")
    dynamic = posenc_cli.rope(512, 64, scaling="dynamic", factor=2.0, max_positions=128, runtime="tensorrt-llm")
    assert np.asarray(dynamic.arrays[TABLE]).tobytes() == plain[TABLE].tobytes()  # the plugin rescales at run time
    assert dynamic.params["scaling"] == "dynamic" and dynamic.params["factor"] == 2.0
    assert "dynamic_base" not in dynamic.params


def test_record_makes_the_table_again(tmp_path):
    for name in ("llama3_factor8_d128_n512", "longrope_d32_n64_orig128", "yarn_deepseek_factor40_d64_n256"):
        made = posenc_cli.rope(**CASES[name]["posenc"], runtime="tensorrt-llm", arithmetic="framework")
        out = tmp_path / f"{name}.npz"
        posenc_cli.save(made, out)
        again = regenerate("rope", load(out).params)
        for key, value in made.arrays.items():
            assert np.asarray(again.arrays[key]).tobytes() == np.asarray(value).tobytes(), (name, key)


def test_config_gives_the_length(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "model_type": "llama", "hidden_size": 256, "num_attention_heads": 8, "max_position_embeddings": 96,
        "rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    }))  # fmt: skip
    table = posenc_cli.rope(config=config, runtime="tensorrt-llm")
    assert table.arrays[TABLE].shape == (1, 96 * 32) and table.arrays[INV].shape == (16,)
    assert table.params["seq_len"] == 96 and table.params["scaling"] == "llama3"


@pytest.mark.parametrize("suffix", [".npz", ".safetensors", ".h"])
def test_formats_hold_the_arrays(tmp_path, suffix):
    out = tmp_path / f"trt{suffix}"
    args = ["rope", "-n", "48", "--head-dim", "32", "--scaling", "linear", "--factor", "2", "--runtime"]
    result = CliRunner().invoke(cli, [*args, "tensorrt-llm", "-o", str(out)])
    assert result.exit_code == 0, result.output
    want = posenc_cli.rope(48, 32, scaling="linear", factor=2.0, runtime="tensorrt-llm")
    if suffix == ".npz":
        with np.load(out) as data:
            stored = {key: data[key] for key in data.files if key in want.arrays}
    elif suffix == ".safetensors":
        from safetensors.numpy import load_file

        stored = load_file(str(out))
    else:
        stored = {key: np.asarray(v) for key, v in load(out).arrays.items()}  # C symbols: the header's names
    assert set(want.arrays) <= set(stored) or len(stored) == len(want.arrays), sorted(stored)
    values = list(stored.values()) if suffix == ".h" else [stored[k] for k in want.arrays]
    shapes = sorted(np.asarray(v).shape for v in values)
    assert shapes == sorted(np.asarray(v).shape for v in want.arrays.values())  # (1, 48*32) and (16,)
    for value in values:
        twin = next(w for w in want.arrays.values() if np.asarray(w).shape == np.asarray(value).shape)
        assert np.asarray(value, np.float32).tobytes() == np.asarray(twin).tobytes()
    assert load(out).params.get("runtime") == "tensorrt-llm"


@pytest.mark.parametrize(
    ("options", "param"),
    [
        ({"scaling": "proportional", "factor": 2.0}, "scaling"),
        ({"dtype": "float16"}, "dtype"),
        ({"dtype": "q15"}, "dtype"),
        ({"arithmetic": "ggml"}, "arithmetic"),
        ({"position_ids": [0, 1, 2]}, "position_ids"),
        ({"scaling": "yarn", "factor": 4.0, "original_max_positions": 64, "truncate": False}, "truncate"),
        ({"scaling": "yarn", "factor": 4.0, "original_max_positions": 64, "attention_factor": 1.2}, "attention_factor"),
        ({"scaling": "yarn", "factor": 4.0, "original_max_positions": 64, "attention_scaling": False},
         "attention_scaling"),
        ({"scaling": "longrope", "original_max_positions": 4, "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
          "attention_factor": 1.1}, "attention_factor"),
    ],
)  # fmt: skip
def test_refusals_name_the_option(options, param):
    with pytest.raises(SpecError) as err:
        posenc_cli.rope(8, 8, runtime="tensorrt-llm", **options)
    assert err.value.param == param, str(err.value)
    with pytest.raises(SpecError) as err:
        posenc_cli.rope(head_dim=8, runtime="tensorrt-llm")
    assert err.value.param == "seq_len"


# ------------------------------------------------------------------------------------------------- identify
@pytest.mark.parametrize(
    "name", ["none_d64_n512", "llama3_factor8_d128_n512", "yarn_factor4_d64_n256", "yarn_deepseek_factor40_d64_n256"]
)
def test_identify_names_tensorrt_llms_table(name):
    result = identify_array(golden(name)[TABLE])
    assert result.match is not None, result.note
    values = result.match.hypothesis.values
    assert values["runtime"] == "tensorrt-llm" and result.match.hypothesis.array == TABLE
    assert "--runtime tensorrt-llm" in result.match.command
    table = posenc_cli.rope(**values).arrays[TABLE]
    assert np.asarray(table).shape == golden(name)[TABLE].shape


def test_identify_reads_a_file_and_longrope(tmp_path):
    made = posenc_cli.rope(512, 16, scaling="longrope", original_max_positions=256, short_factor=[1.0] * 8,
                           long_factor=[1.0, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0], runtime="tensorrt-llm",
                           arithmetic="framework")  # fmt: skip
    out = tmp_path / "trt.npz"
    np.savez(out, **{TABLE: np.asarray(made.arrays[TABLE])})
    (result,) = identify(out).tensors
    assert result.match is not None, result.note
    assert result.match.hypothesis.values["runtime"] == "tensorrt-llm"
    assert result.match.hypothesis.values["scaling"] == "longrope"


def test_identify_hostile_arrays_are_bounded():
    rng = np.random.default_rng(29)
    n = 1 << 16
    fake = rng.standard_normal(n)
    fake[0:64:2], fake[1:64:2] = 1.0, 0.0  # a row 0 of (1, 0) pairs, noise after it
    cases = [
        fake,
        np.zeros(n),
        np.tile([1.0, 0.0], n // 2),  # every sine 0: no row 1
        np.concatenate([[1.0, 0.0, 1.0, 0.0, 0.5, 0.5], rng.standard_normal(7)]),  # size not a multiple of dim
        np.full(n, np.nan),
        -golden("none_d64_n512")[TABLE].reshape(-1).astype(np.float64),  # A < 0
    ]
    for values in cases:
        assert all(h.values.get("runtime") == "tensorrt-llm" for h in hypotheses(np.asarray(values, np.float64)))
        result = identify_array(np.asarray(values, np.float32))
        assert result.match is None
