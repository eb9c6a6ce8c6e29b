"""``posenc rope --runtime vllm``: vLLM's ``cos_sin_cache`` against the caches vLLM's own rotary classes built.

The goldens (``tests/goldens/runtimes/vllm/``, README.md there): vLLM 0.34.0's ``get_rope`` and its classes, run
unchanged on CPU in float32 (bfloat16 for one), rows of each cache saved with its shape and the ``inv_freq`` of the
class's own ``_compute_inv_freq``. Held here:

- the length vLLM makes by default, from the config or the flags (``RotaryEmbedding``: ``max_position``; linear:
  ``ceil(max_position * factor)``; YaRN and DeepSeek's: ``ceil(original * factor)``; Phi-3's LongRoPE:
  ``original + max_position``);
- ``--arithmetic framework``: ``inv_freq`` bit-identical but where torch's own float32 ``pow`` is not correctly
  rounded (at most 2 entries, each 1 ulp; proven with mpmath for the default ones); on the other frequencies every
  entry within 2 float32 ulps of vLLM's and at least 70 % bit-identical (torch's SLEEF ``cos``/``sin`` are within an
  ulp, posenc's correctly rounded); bfloat16 bit-identical (rounded once from the float32 values, as ``.to(dtype)``);
- ``--arithmetic exact`` within the float32 angle's error of vLLM's, ``2**-21 * (1 + |angle|) * max(1, mscale)``,
  and bit-identical to the real formula of each class correctly rounded, computed here with mpmath from vLLM's source
  as written (``base.py`` ``_compute_inv_freq``/``_compute_cos_sin_cache``, ``linear_scaling_rope.py``,
  ``yarn_scaling_rope.py`` with ``common.py``'s ``yarn_find_correction_range``/``yarn_linear_ramp_mask``/
  ``yarn_get_mscale``, ``deepseek_scaling_rope.py``, ``llama3_rope.py``, ``phi3_long_rope_scaled_rope.py``).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.errors import SpecError
from posenc_cli.verify import regenerate

HERE = Path(__file__).parent / "goldens" / "runtimes" / "vllm"
CONFIGS = Path(__file__).parent / "goldens" / "rope_config" / "configs"
MANIFEST = json.loads((HERE / "manifest.json").read_text())
CASES = MANIFEST["cases"]
FLOAT32 = [name for name, case in CASES.items() if case["get_rope"]["dtype"] == "float32"]
#: posenc's name of each vLLM rope_type.
SCALING = {"default": "none", "deepseek_yarn": "yarn", "deepseek_llama_scaling": "yarn"}
#: The most inv_freq entries torch's float32 pow misrounds in one golden (bases 1e6 and 1e4 over 48 frequencies).
MISROUNDED = 2


def golden(name: str) -> dict[str, np.ndarray]:
    with np.load(HERE / CASES[name]["file"], allow_pickle=False) as z:
        return {key: z[key] for key in z.files}


def flags(name: str) -> dict:
    """posenc's keywords for a golden: its config alone, or the flags of what ``get_rope`` was given."""
    case = CASES[name]
    if case["config"] is not None:
        return {"config": CONFIGS / case["config"]}
    g = case["get_rope"]
    p = g["rope_parameters"]
    out = {"head_dim": g["head_size"], "theta": p["rope_theta"], "max_positions": g["max_position"],
           "scaling": SCALING.get(p["rope_type"], p["rope_type"])}  # fmt: skip
    for key, name_ in (("factor", "factor"), ("original_max_position_embeddings", "original_max_positions"),
                       ("mscale", "mscale"), ("mscale_all_dim", "mscale_all_dim")):  # fmt: skip
        if key in p:
            out[name_] = p[key]
    return out


def made(name: str, arithmetic: str, **extra) -> tuple[dict, np.ndarray, np.ndarray]:
    """posenc's parameters, whole shape and the golden's rows of its cache."""
    case = CASES[name]
    dtype = case["get_rope"]["dtype"]
    table = api.rope(runtime="vllm", arithmetic=arithmetic, dtype=dtype, lazy=True, **flags(name), **extra)
    assert list(table.arrays) == [case["array"]]
    array = table.arrays[case["array"]]
    rows = golden(name)["rows"]
    return table.params, np.asarray(array.shape), np.concatenate([array[r : r + 1] for r in rows])


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in float32 steps (monotone integer order of the bit patterns)."""

    def order(x: np.ndarray) -> np.ndarray:
        b = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(b < 0, -(b & 0x7FFFFFFF), b)

    return np.abs(order(got) - order(want))


def posenc_inv_freq(name: str) -> dict[str, np.ndarray]:
    """posenc's float32 ``inv_freq`` (transformers' operations, which vLLM's ``_compute_inv_freq`` repeats): the
    unscaled one for vLLM's linear class (it divides the positions), both of LongRoPE's."""
    if "inv_freq" not in golden(name) and "inv_freq_short" not in golden(name):
        return {}  # dynamic NTK computes its inv_freq inside _compute_cos_sin_cache
    kw = {k: v for k, v in flags(name).items() if k != "max_positions" or "config" in flags(name)}
    if kw.get("scaling") == "linear":
        kw = {"head_dim": kw["head_dim"], "theta": kw["theta"]}
    if kw.get("mscale") is not None and kw.get("mscale_all_dim") is None:
        kw.pop("mscale")  # inv_freq does not depend on it; transformers reads mscale only beside mscale_all_dim
    long = CASES[name]["array"] == "long_short_cos_sin_cache"
    table = api.rope(1, layout="half-width", arithmetic="framework", longrope_pair=long, **kw)
    return {key: np.asarray(value) for key, value in table.arrays.items() if key.startswith("inv_freq")}


# ------------------------------------------------------------------------------------------- length and layout
def test_the_goldens_are_the_files_the_manifest_names():
    import hashlib

    for case in CASES.values():
        assert hashlib.sha256((HERE / case["file"]).read_bytes()).hexdigest() == case["sha256"], case["file"]
    assert MANIFEST["vllm"].startswith("0.34.0") and MANIFEST["device"] == "cpu"
    assert {case["class"] for case in CASES.values()} == {
        "RotaryEmbedding", "LinearScalingRotaryEmbedding", "DynamicNTKScalingRotaryEmbedding",
        "Llama3RotaryEmbedding", "YaRNScalingRotaryEmbedding", "DeepseekScalingRotaryEmbedding",
        "Phi3LongRoPEScaledRotaryEmbedding"}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_the_cache_is_as_long_and_wide_as_vllms_and_named_as_it(name):
    params, shape, _ = made(name, "exact")
    assert list(shape) == CASES[name]["shape"]
    assert params["runtime"] == "vllm" and params["seq_len"] == shape[0]


def test_the_lengths_follow_vllms_rules():
    """The goldens' lengths, as vLLM's classes compute them, each from what the manifest says ``get_rope`` got."""
    for name, case in CASES.items():
        g, p = case["get_rope"], case["get_rope"]["rope_parameters"]
        rope_type, m = p["rope_type"], g["max_position"]
        if rope_type in ("yarn", "deepseek_yarn"):
            want = math.ceil(p["original_max_position_embeddings"] * p["factor"])
        elif rope_type == "linear":
            want = math.ceil(m * p["factor"])
        elif rope_type == "longrope":
            want = p["original_max_position_embeddings"] + m
        else:
            want = m
        assert case["shape"][0] == want, name
    assert CASES["linear_f2.5_d64_m25"]["shape"] == [63, 64]  # torch.arange(62.5): 63 rows


def test_rows_are_cos_then_sin_of_the_same_frequencies():
    cache = np.asarray(api.rope(runtime="vllm", head_dim=16, max_positions=40).arrays["cos_sin_cache"])
    plain = api.rope(40, 16, layout="half-width")
    assert np.array_equal(cache[:, :8], plain.arrays["cos"]) and np.array_equal(cache[:, 8:], plain.arrays["sin"])
    assert np.all(cache[0, :8] == 1) and not cache[0, 8:].any()


def test_n_writes_the_first_rows_and_goes_on_past_the_end():
    whole = np.asarray(api.rope(runtime="vllm", head_dim=16, max_positions=30, scaling="linear", factor=2.0)
                       .arrays["cos_sin_cache"])  # fmt: skip
    assert whole.shape == (60, 16)
    for n in (7, 60, 75):
        some = np.asarray(api.rope(n, runtime="vllm", head_dim=16, max_positions=30, scaling="linear", factor=2.0)
                          .arrays["cos_sin_cache"])  # fmt: skip
        assert some.shape == (n, 16) and np.array_equal(some[: min(n, 60)], whole[:n])


def test_n_given_is_the_rows_even_when_it_equals_the_configs_length(tmp_path):
    """A linear config of max_position_embeddings 30 and factor 2: vLLM's cache has 60 rows, written without -n;
    -n 30 typed is 30 rows (not the config's value taken for the whole cache)."""
    config = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 30,
              "rope_theta": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    whole = np.asarray(api.rope(runtime="vllm", config=tmp_path).arrays["cos_sin_cache"])
    typed = np.asarray(api.rope(30, runtime="vllm", config=tmp_path).arrays["cos_sin_cache"])
    assert whole.shape == (60, 16) and typed.shape == (30, 16)
    assert np.array_equal(typed, whole[:30])


def test_longrope_rows_past_original_are_the_long_cache_from_position_0():
    kw = dict(head_dim=8, scaling="longrope", original_max_positions=16, max_positions=64,
              short_factor=[1.0, 1.5, 2.0, 4.0], long_factor=[1.0, 3.0, 6.0, 9.0])  # fmt: skip
    table = api.rope(runtime="vllm", **kw)
    cache = np.asarray(table.arrays["long_short_cos_sin_cache"])
    pair = api.rope(64, layout="half-width", longrope_pair=True, **kw)
    assert cache.shape == (80, 8)
    assert np.array_equal(cache[:16, :4], pair.arrays["cos_short"][:16])
    assert np.array_equal(cache[16:, 4:], pair.arrays["sin_long"])
    assert table.params["attention_scaling"] == math.sqrt(1 + math.log(4) / math.log(16))


def test_without_a_length_it_says_what_to_give():
    with pytest.raises(SpecError, match="-n") as caught:
        api.rope(runtime="vllm", head_dim=16)
    assert caught.value.param == "seq_len"


# ------------------------------------------------------------------------------------------------ framework
@pytest.mark.parametrize("name", FLOAT32)
def test_framework_arithmetic_gives_vllms_own_cache(name):
    want = golden(name)
    params, _, got = made(name, "framework")
    assert params["arithmetic"] == "framework"
    h = got.shape[1] // 2
    agree = np.ones(h, bool)
    for key, ours in posenc_inv_freq(name).items():
        apart = ulps(ours, want[key])
        assert apart.max() <= 1 and (apart > 0).sum() <= MISROUNDED, (key, apart)
        agree &= apart == 0
    columns = np.concatenate([np.flatnonzero(agree), h + np.flatnonzero(agree)])
    off = ulps(got[:, columns], want["values"][:, columns])
    assert off.max() <= 2, int(off.max())
    assert (off == 0).mean() >= 0.70, float((off == 0).mean())


#: The goldens whose inv_freq is the default one at theta 10000.
DEFAULT_INV_FREQ = [n for n in FLOAT32 if CASES[n]["get_rope"]["rope_parameters"]["rope_theta"] == 1e4
                    and CASES[n]["class"] in ("RotaryEmbedding", "LinearScalingRotaryEmbedding")]  # fmt: skip


@pytest.mark.parametrize("name", DEFAULT_INV_FREQ)
def test_where_inv_freq_differs_torchs_pow_misrounded(name):
    """vLLM's default ``inv_freq`` is ``fl32(1 / fl32(10000 ** fl32(2k / d)))``: with the power correctly rounded
    (mpmath), posenc's every entry; an entry of vLLM's that differs is where torch's CPU pow is not."""
    want = golden(name)["inv_freq"]
    ours = posenc_inv_freq(name)["inv_freq"]
    dim = 2 * len(want)
    with mpmath.workprec(200):
        for k in range(len(want)):
            e = float(np.float32(np.float32(2 * k) / np.float32(dim)))
            power = correctly_rounded(mpmath.power(10000, e))
            assert ours[k] == np.float32(1) / power, k


def test_bfloat16_is_vllms_float32_cache_rounded_once():
    want = golden("default_d128_n64_bf16")["values"]
    _, _, got = made("default_d128_n64_bf16", "framework")
    assert np.array_equal(got.view(np.uint16), want)


def test_linear_divides_the_positions_in_float32():
    """Factor 3: vLLM's ``fl32(fl32(p) / 3) * inv_freq`` differs from transformers' ``p * fl32(inv_freq / 3)``,
    and posenc's framework cache is vLLM's."""
    _, _, got = made("linear_f3_d64_m8192", "framework")
    want = golden("linear_f3_d64_m8192")["values"]
    rows = golden("linear_f3_d64_m8192")["rows"]
    hf = np.asarray(api.rope(int(rows[-1]) + 1, 64, scaling="linear", factor=3.0, layout="half-width",
                             arithmetic="framework").arrays["cos"])[rows]  # fmt: skip
    assert (ulps(got, want) == 0).mean() > (ulps(hf, want[:, :32]) == 0).mean() + 0.1
    assert ulps(got, want).max() <= 2


# ---------------------------------------------------------------------------------------------------- exact
@pytest.mark.parametrize("name", FLOAT32)
def test_exact_is_within_vllms_float32_angle_error(name):
    want = golden(name)
    params, _, got = made(name, "exact")
    rows = want["rows"]
    h = got.shape[1] // 2
    long = CASES[name]["array"] == "long_short_cos_sin_cache"
    original = int(params.get("original_max_positions", 0))
    positions = np.where(rows >= original, rows - original, rows) if long else rows
    fastest = max([1.0] + [float(np.max(v)) for k, v in want.items() if k.startswith("inv_freq")])
    angle = positions[:, None].astype(np.float64) * float(fastest)
    scale = max(1.0, float(params["attention_scaling"]))
    bound = 2.0**-21 * (1 + angle) * scale
    assert np.all(np.abs(got.astype(np.float64) - want["values"]) <= bound), name
    assert got.shape[1] == 2 * h


def correctly_rounded(value: mpmath.mpf) -> np.float32:
    """``value`` rounded to the nearest float32 (the neighbours of a float64 approximation decide)."""
    guess = np.float32(float(value))
    options = [guess, np.nextafter(guess, np.float32(np.inf)), np.nextafter(guess, np.float32(-np.inf))]
    return min(options, key=lambda f: abs(mpmath.mpf(float(f)) - value))


def real_frequencies(name: str) -> tuple[list, float, list | None, float]:
    """The real ``inv_freq`` of a golden's class and its float64 ``mscale``, as vLLM's source defines them (module
    docstring); for LongRoPE the short ones, the long ones and ``original``."""
    case = CASES[name]
    g, p = case["get_rope"], dict(case["get_rope"]["rope_parameters"])
    d = g["head_size"] if "partial_rotary_factor" not in p else int(g["head_size"] * p["partial_rotary_factor"])
    theta = mpmath.mpf(p["rope_theta"])
    kind = p["rope_type"]
    plain = [theta ** (-mpmath.mpf(2 * k) / d) for k in range(d // 2)]
    if kind in ("default", "dynamic", "linear"):
        factor = p.get("factor", 1) if kind == "linear" else 1
        return [f / factor for f in plain], 1.0, None, 0.0
    if kind in ("yarn", "deepseek_yarn"):
        factor, original = p["factor"], p["original_max_position_embeddings"]

        def dim_of(rotations):  # yarn_find_correction_dim, float64
            return (d * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(p["rope_theta"]))

        low = max(math.floor(dim_of(p.get("beta_fast", 32))), 0)
        high = min(math.ceil(dim_of(p.get("beta_slow", 1))), d - 1)
        high = high + 0.001 if low == high else high
        ramp = [min(max((Fraction(k) - Fraction(low)) / (Fraction(high) - Fraction(low)), 0), 1) for k in range(d // 2)]
        inv = [f * (mpmath.mpf(r.numerator) / r.denominator / factor + 1 - mpmath.mpf(r.numerator) / r.denominator)
               for f, r in zip(plain, ramp, strict=True)]  # fmt: skip

        def get_mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        if kind == "deepseek_yarn":
            mscale = get_mscale(factor, p.get("mscale", 1)) / get_mscale(factor, p.get("mscale_all_dim", 0))
        elif p.get("mscale") and p.get("mscale_all_dim"):
            mscale = get_mscale(factor, p["mscale"]) / get_mscale(factor, p["mscale_all_dim"])
        else:
            mscale = get_mscale(factor)
        return inv, mscale, None, 0.0
    if kind == "llama3":
        factor, original = p["factor"], p["original_max_position_embeddings"]
        low, high = p["low_freq_factor"], p["high_freq_factor"]
        inv = []
        for f in plain:
            wavelen = 2 * mpmath.pi / f
            smooth = (original / wavelen - low) / (high - low)
            if wavelen < original / high:
                inv.append(f)
            elif wavelen > original / low:
                inv.append(f / factor)
            else:
                inv.append((1 - smooth) * f / factor + smooth * f)
        return inv, 1.0, None, 0.0
    assert kind == "longrope"
    original = p["original_max_position_embeddings"]
    scale = g["max_position"] / original
    mscale = 1.0 if scale <= 1 else math.sqrt(1 + math.log(scale) / math.log(original))
    short = [f / mpmath.mpf(s) for f, s in zip(plain, p["short_factor"], strict=True)]
    long = [f / mpmath.mpf(s) for f, s in zip(plain, p["long_factor"], strict=True)]
    return short, mscale, long, original


@pytest.mark.parametrize("name", FLOAT32)
def test_exact_is_each_classs_real_formula_correctly_rounded(name):
    """A sample of each golden's rows (first, middle, last), every column, against mpmath."""
    short, mscale, long, original = real_frequencies(name)
    params, _, got = made(name, "exact")
    assert params["attention_scaling"] == pytest.approx(mscale, rel=1e-15)
    rows = golden(name)["rows"]
    picks = sorted({0, 1, 2, len(rows) // 2, len(rows) - 2, len(rows) - 1})
    h = len(short)
    with mpmath.workprec(160):
        for i in picks:
            r = int(rows[i])
            inv, p = (long, r - original) if long is not None and r >= original else (short, r)
            for k in range(h):
                angle = p * inv[k]
                for column, value in ((k, mpmath.cos(angle)), (h + k, mpmath.sin(angle))):
                    assert got[i, column] == correctly_rounded(mscale * value), (name, r, column)


# ------------------------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize(
    "kw, param",
    [
        (dict(seq_len=8, arithmetic="ggml"), "arithmetic"),
        (dict(seq_len=8, attention_scaling=False), "attention_scaling"),
        (dict(seq_len=8, layout="interleaved"), "layout"),
        (dict(seq_len=8, scaling="linear", factor=2.0, beta_fast=16.0), "beta_fast"),
        (
            dict(
                seq_len=8,
                scaling="longrope",
                original_max_positions=8,
                max_positions=16,
                short_factor=[1.0] * 8,
                long_factor=[2.0] * 8,
                attention_factor=1.2,
            ),
            "attention_factor",
        ),  # fmt: skip
        (
            dict(seq_len=8, scaling="yarn", factor=4.0, original_max_positions=16, mscale=1.0, truncate=False),
            "truncate",
        ),  # fmt: skip
        (dict(seq_len=8, scaling="yarn", original_max_positions=16, max_positions=64), "factor"),
        (dict(seq_len=8, scaling="proportional", rotary_dim=8), "scaling"),
        (dict(scaling="yarn", factor=1e6, original_max_positions=2**31), "factor"),
        (dict(position_ids=[0, 1, 2]), "position_ids"),
        (dict(seq_len=8, mrope_section=[2, 3, 3]), "mrope_section"),
    ],
)
def test_what_vllm_does_not_make_is_refused_naming_the_parameter(kw, param):
    with pytest.raises(SpecError) as caught:
        api.rope(runtime="vllm", head_dim=16, **kw)
    assert caught.value.param == param


def test_longrope_needs_max_position_and_dynamic_too():
    for kw in (dict(scaling="longrope", original_max_positions=8, short_factor=[1.0] * 8, long_factor=[2.0] * 8),
               dict(scaling="dynamic", factor=2.0)):  # fmt: skip
        with pytest.raises(SpecError, match="max_positions") as caught:
            api.rope(8, 16, runtime="vllm", **kw)
        assert caught.value.param == "max_positions"


def test_an_m_rope_config_is_refused_naming_the_config():
    with pytest.raises(SpecError, match="MRotaryEmbedding") as caught:
        api.rope(runtime="vllm", config=CONFIGS / "qwen2-vl-2b")
    assert caught.value.param == "config"


def test_a_field_the_config_gives_and_vllm_ignores_is_left_out(tmp_path):
    """Phi-3's config with transformers' ``attention_factor`` (vLLM's LongRoPE class never reads it): the cache
    is the one without it, and the parameters do not record it."""
    raw = json.loads((CONFIGS / "phi-3-mini-128k" / "config.json").read_text())
    raw["rope_scaling"]["attention_factor"] = 1.5
    (tmp_path / "config.json").write_text(json.dumps(raw))
    with_field = api.rope(100, runtime="vllm", config=tmp_path)
    plain = api.rope(100, runtime="vllm", config=CONFIGS / "phi-3-mini-128k")
    assert "attention_factor" not in with_field.params
    assert np.array_equal(with_field.arrays["long_short_cos_sin_cache"], plain.arrays["long_short_cos_sin_cache"])


def test_deepseek_configs_take_deepseeks_class():
    """DeepSeek-V2-Lite: mscale = mscale_all_dim = 0.707, so its cache is not scaled (the YaRN default would
    fold 1 + 0.1 ln 40 in)."""
    table = api.rope(16, runtime="vllm", config=CONFIGS / "deepseek-v2-lite")
    assert table.params["attention_scaling"] == 1.0 and table.params["head_dim"] == 64
    lone = api.rope(16, 64, runtime="vllm", scaling="yarn", factor=40.0, original_max_positions=64, mscale=0.707)
    assert lone.params["attention_scaling"] == pytest.approx(0.1 * 0.707 * math.log(40) + 1, rel=1e-15)


# ------------------------------------------------------------------------------------- records and formats
@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen2.5-7b-yarn", "deepseek-v3", "phi-3-mini-128k",
                                  "llama-2-7b-dynamic", "linear_f2.5_d64_m25"])  # fmt: skip
def test_the_parameters_make_the_cache_again_without_the_config(name):
    table = api.rope(200, runtime="vllm", arithmetic="framework", **flags(name))
    again = regenerate("rope", table.params)
    assert list(again.arrays) == list(table.arrays)
    for key, value in table.arrays.items():
        assert np.array_equal(np.asarray(again.arrays[key]), value)
    assert "config" not in table.params and "layout" not in table.params


@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_files_hold_the_cache_under_vllms_name(tmp_path, suffix):
    table = api.rope(runtime="vllm", head_dim=64, max_positions=48, scaling="linear", factor=2.0)
    cache = np.asarray(table.arrays["cos_sin_cache"])
    path = tmp_path / f"cache{suffix}"
    api.save(table, path)
    read = api.load(path)
    assert list(read.arrays) == ["cos_sin_cache"]
    stored = np.asarray(read.arrays["cos_sin_cache"])
    assert stored.shape == (96, 64) and stored.dtype == np.float32
    assert stored.tobytes() == cache.tobytes()
    assert read.params.get("runtime") == "vllm" and read.params.get("scaling") == "linear"


#: A small LongRoPE cache: 8 short rows, 24 long ones.
LONGROPE_24 = dict(max_positions=24, scaling="longrope", original_max_positions=8, short_factor=[1.0] * 8,
                   long_factor=[2.0] * 8)  # fmt: skip


@pytest.mark.parametrize(
    "name, kw",
    [
        ("cos_sin_cache", dict(max_positions=32, scaling="llama3", factor=8.0, original_max_positions=16)),
        ("long_short_cos_sin_cache", LONGROPE_24),
    ],
)
def test_gguf_holds_the_cache_under_vllms_name(tmp_path, name, kw):
    """Read by gguf-py's ``GGUFReader`` (llama.cpp's): one tensor of vLLM's name, ggml's dimensions reversed
    (``ne = [rotary_dim, rows]``), the float32 bytes of the cache, and the runtime in the metadata."""
    from gguf import GGUFReader

    table = api.rope(runtime="vllm", head_dim=16, **kw)
    cache = np.asarray(table.arrays[name])
    path = tmp_path / "cache.gguf"
    api.save(table, path)
    reader = GGUFReader(path)
    assert [t.name for t in reader.tensors] == [name]
    tensor = reader.tensors[0]
    assert tensor.shape.tolist() == [16, 32] and cache.shape == (32, 16)
    assert np.ascontiguousarray(tensor.data).tobytes() == cache.astype("<f4").tobytes()
    field = reader.fields["posenc.params.runtime"]
    assert bytes(field.parts[field.data[0]]).decode() == "vllm"


def test_safetensors_bytes_are_the_cache_row_after_row(tmp_path):
    """Read without posenc: the header's shape and offsets, then the little-endian float32 values in C order (what
    ``safetensors.torch.load_file`` hands vLLM to copy into its buffer)."""
    table = api.rope(runtime="vllm", head_dim=16, max_positions=10)
    path = tmp_path / "cache.safetensors"
    api.save(table, path)
    data = path.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    entry = header["cos_sin_cache"]
    assert entry["dtype"] == "F32" and entry["shape"] == [10, 16]
    lo, hi = entry["data_offsets"]
    values = np.frombuffer(data[8 + size + lo : 8 + size + hi], "<f4").reshape(10, 16)
    assert np.array_equal(values, np.asarray(table.arrays["cos_sin_cache"]))
