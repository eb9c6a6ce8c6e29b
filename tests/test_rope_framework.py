"""``arithmetic="framework"`` for RoPE against the caches HF transformers' own rotary classes made from published
config files (``tests/goldens/rope_config/``: transformers on CPU, float32; see its README and manifest).

The issue's bar, held for every golden: ``inv_freq`` bit-identical; every cos/sin entry within 2 float32 ulps of
transformers'; at least 70% of them bit-identical. What is left is torch's own float32 ``pow``/``cos``/``sin``
(within about an ulp), where posenc's are correctly rounded. Exact mode, beside it, is held to the bound the float32
angle's rounding implies, ``2**-21 * (1 + |angle|)`` (tests/test_rope_config_goldens.py), which framework mode beats
by orders of magnitude at far positions (checked here too).
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath
import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.errors import SpecError

HERE = Path(__file__).parent / "goldens" / "rope_config"
#: The goldens of configs posenc reads (the others name why not: ``posenc_reads_reason``).
GOLDENS = {
    name: entry
    for name, entry in json.loads((HERE / "manifest.json").read_text())["goldens"].items()
    if entry.get("posenc_reads", True)
}
#: DeepSeek-V2's rotary class returns complex freqs_cis, one value per frequency: posenc's half-width caches.
LAYOUT = {"deepseek-v2-lite": "half-width"}


def arrays(entry: dict) -> dict[str, np.ndarray]:
    with np.load(HERE / entry["file"], allow_pickle=False) as z:
        return {key: z[key] for key in z.files}


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in float32 steps (monotone integer order of the bit patterns)."""

    def order(x: np.ndarray) -> np.ndarray:
        b = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(b < 0, -(b & 0x7FFFFFFF), b)

    return np.abs(order(got) - order(want))


def framework(entry: dict, **extra) -> object:
    want = arrays(entry)
    return api.rope(
        config=HERE / "configs" / entry["config"], layer_type=entry["layer_type"], position_ids=want["position_ids"],
        layout=LAYOUT.get(entry["config"], "half"), arithmetic="framework", **extra,
    )  # fmt: skip


#: The most ``inv_freq`` entries torch's float32 ``pow`` misrounds in one table here (base 1e6: one exponent of 64).
MISROUNDED = 1


@pytest.mark.parametrize("entry", list(GOLDENS.values()), ids=list(GOLDENS))
def test_framework_arithmetic_gives_transformers_own_caches(entry):
    """``inv_freq`` bit-identical but where torch's own ``pow`` is not correctly rounded (checked with mpmath in
    :func:`test_where_inv_freq_differs_torchs_pow_misrounded`); on the frequencies whose ``inv_freq`` agrees,
    every cos/sin entry within 2 ulps and at least 70% bit-identical."""
    want = arrays(entry)
    table = framework(entry)
    assert table.params["arithmetic"] == "framework"
    inv = table.arrays["inv_freq"]
    assert inv.dtype == np.float32 and inv.shape == want["inv_freq"].shape
    apart = ulps(inv, want["inv_freq"])
    assert apart.max() <= 1 and (apart > 0).sum() <= MISROUNDED, apart
    same = np.flatnonzero(apart == 0)
    h = len(inv)
    for part in ("cos", "sin"):
        got = np.asarray(table.arrays[part])
        assert got.shape == want[part].shape, part
        columns = [j for j in range(got.shape[1]) if j % h in same]
        off = ulps(got[:, columns], want[part][:, columns])
        assert off.max() <= 2, (part, int(off.max()))
        assert (off == 0).mean() >= 0.70, (part, float((off == 0).mean()))


@pytest.mark.parametrize(
    "name", [n for n, e in GOLDENS.items() if e["config"] in ("gemma-3-1b-it", "qwen2-vl-2b", "mistral-7b-v0.1")]
)
def test_where_inv_freq_differs_torchs_pow_misrounded(name):
    """For the models whose ``inv_freq`` is ``1 / theta ** (2k / dim)`` alone: posenc's entries are
    ``fl32(1 / pow)`` with the power correctly rounded (mpmath at 200 bits), and an entry of transformers' that
    differs is where its CPU ``pow`` (SLEEF's, 1 ulp) is not: the difference is the platform's, not posenc's."""
    entry = GOLDENS[name]
    table = framework(entry)
    inv, theta = table.arrays["inv_freq"], float(np.float32(table.params["theta"]))
    dim = 2 * len(inv)
    with mpmath.workprec(200):
        for k in range(len(inv)):
            e = float(np.float32(np.float32(2 * k) / np.float32(dim)))
            power = np.float32(float(mpmath.power(mpmath.mpf(theta), mpmath.mpf(e))))  # two roundings: checked below
            assert abs(mpmath.mpf(float(power)) - mpmath.power(theta, e)) <= mpmath.mpf(float(np.spacing(power))) / 2
            assert inv[k] == np.float32(1) / power, k


@pytest.mark.parametrize(
    "name", [n for n, e in GOLDENS.items() if int(np.max(arrays(e)["position_ids"])) >= 4000], ids=str
)
def test_at_far_positions_framework_is_nearer_transformers_than_exact(name):
    entry, want = GOLDENS[name], arrays(GOLDENS[name])
    exact = api.rope(
        config=HERE / "configs" / entry["config"], layer_type=entry["layer_type"], position_ids=want["position_ids"],
        layout=LAYOUT.get(entry["config"], "half"),
    )  # fmt: skip
    near = np.abs(np.asarray(framework(entry).arrays["cos"], np.float64) - want["cos"]).max()
    far = np.abs(np.asarray(exact.arrays["cos"], np.float64) - want["cos"]).max()
    assert near < far / 4, (near, far)


# --------------------------------------------------------------------------------- --arithmetic ggml (llama.cpp)
GGML = Path(__file__).parent / "goldens" / "ggml"
GGML_GOLDENS = json.loads((GGML / "manifest.json").read_text())["goldens"]
GGML_GOLDENS = GGML_GOLDENS if isinstance(GGML_GOLDENS, list) else list(GGML_GOLDENS.values())


def ggml_keywords(params: dict) -> dict:
    """posenc's rope keywords for ggml's rope parameters as llama.cpp passes them (none, linear, yarn)."""
    out: dict = {"head_dim": params["n_dims"], "theta": params["freq_base"]}
    if params["ext_factor"]:
        out.update(scaling="yarn", factor=1 / params["freq_scale"], original_max_positions=params["n_ctx_orig"],
                   beta_fast=params["beta_fast"], beta_slow=params["beta_slow"])  # fmt: skip
    elif params["freq_scale"] != 1:
        out.update(scaling="linear", factor=1 / params["freq_scale"])
    return out


@pytest.mark.parametrize("entry", [e for e in GGML_GOLDENS if e["freq_factors"] is None], ids=lambda e: e["file"])
def test_arithmetic_ggml_gives_ggmls_own_caches(entry, tmp_path):
    """``posenc rope --arithmetic ggml`` against ggml's own rope run on the CPU (tests/goldens/ggml): every entry
    within 2 ulps, at least 98% bit-identical (glibc's sinf/cosf, within an ulp, are the rest); NORMAL mode is the
    interleaved layout, NEOX the half one."""
    with np.load(GGML / entry["file"], allow_pickle=False) as z:
        want = {key: z[key] for key in z.files}
    positions = want["positions"].astype(np.int64)
    np.save(tmp_path / "ids.npy", positions)
    layout = "interleaved" if entry["mode"] == "normal" else "half"
    table = api.rope(position_ids=tmp_path / "ids.npy", layout=layout, arithmetic="ggml",
                     **ggml_keywords(entry["params"]))  # fmt: skip
    assert table.params["arithmetic"] == "ggml"
    h = entry["params"]["n_dims"] // 2
    for part in ("cos", "sin"):
        got = np.asarray(table.arrays[part])
        pairs = got[:, 0::2] if layout == "interleaved" else got[:, :h]  # one column per pair
        apart = ulps(pairs, want[part])
        assert apart.max() <= 2, (part, int(apart.max()))
        assert (apart == 0).mean() >= 0.98, (part, float((apart == 0).mean()))


@pytest.mark.parametrize(
    ("kw", "param"),
    [
        ({"scaling": "llama3", "factor": 8.0, "original_max_positions": 64}, "arithmetic"),
        ({"scaling": "yarn", "factor": 4.0, "original_max_positions": 64, "mscale": 1.0}, "mscale"),
        ({"scaling": "yarn", "factor": 4.0, "original_max_positions": 64, "attention_scaling": False},
         "attention_scaling"),
    ],
)  # fmt: skip
def test_arithmetic_ggml_refuses_what_it_does_not_make(kw, param):
    with pytest.raises(SpecError) as info:
        api.rope(8, 16, arithmetic="ggml", **kw)
    assert info.value.param == param


@pytest.mark.parametrize("value", ["bogus", "", None, 1])
def test_an_arithmetic_no_mode_names_is_refused_not_recorded(value):
    """From the API or a hostile record (verify passes a file's parameters to the maker): one line naming it."""
    with pytest.raises(SpecError) as info:
        api.rope(8, 8, arithmetic=value)
    assert info.value.param == "arithmetic"
