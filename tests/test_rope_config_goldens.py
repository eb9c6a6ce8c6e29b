"""``posenc rope --config`` against the caches HF transformers' own rotary classes made from the same published
config files (``tests/goldens/rope_config/``: configs, script, versions and notes in its README and manifest).

HF computes in float32 and posenc correctly rounds the exact values, so they agree within HF's float32 error:
``|posenc - HF| <= 2**-21 * (1 + |angle|) * max(1, attention_scaling)`` elementwise (the issue's bound; the
goldens' measured error is at most half the 2**-22 one).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from posenc_cli import api

HERE = Path(__file__).parent / "goldens" / "rope_config"
GOLDENS = json.loads((HERE / "manifest.json").read_text())["goldens"]


def arrays(entry: dict) -> dict[str, np.ndarray]:
    with np.load(HERE / entry["file"], allow_pickle=False) as z:
        return {key: z[key] for key in z.files}


def posenc(entry: dict, **extra) -> tuple[dict, dict[str, np.ndarray]]:
    """posenc's parameters and caches for a golden, from its config alone (the layout included): at the golden's
    position ids, or, for rows kept of one call over ``0 .. count - 1`` (dynamic NTK, evaluated at the call's
    length), those rows of posenc's table of ``count`` rows."""
    config, ids = HERE / "configs" / entry["config"], arrays(entry)["position_ids"]
    positions = entry["params"].get("positions", {})
    if positions.get("kind") != "rows of one call":
        table = api.rope(config=config, layer_type=entry["layer_type"], position_ids=ids, **extra)
        return table.params, {key: np.asarray(value) for key, value in table.arrays.items()}
    assert positions["evaluated"]["start"] == 0
    table = api.rope(positions["evaluated"]["count"], config=config, layer_type=entry["layer_type"], **extra)
    return table.params, {k: np.asarray(v) if k == "inv_freq" else np.asarray(v)[ids] for k, v in table.arrays.items()}


def column_frequency(want: dict[str, np.ndarray]) -> np.ndarray:
    """The ``inv_freq`` index of each column of a golden's cache, read off the golden: one column per frequency
    (half-width), each frequency twice side by side (interleaved), or the frequencies repeated (half)."""
    h, width = len(want["inv_freq"]), want["cos"].shape[1]
    if width == h:
        return np.arange(h)
    if np.array_equal(want["cos"][:, 0::2], want["cos"][:, 1::2]):
        return np.arange(width) // 2
    return np.arange(width) % h


def test_every_model_the_issue_names_has_goldens():
    configs = {e["config"] for e in GOLDENS.values()}
    assert {"llama-3.1-8b", "qwen2.5-7b-yarn", "mistral-7b-v0.1", "phi-3-mini-128k", "phi-2", "pythia-160m",
            "gemma-3-4b-it", "deepseek-v2-lite", "qwen2-vl-2b"} <= configs  # fmt: skip
    assert {e["layer_type"] for e in GOLDENS.values() if e["config"] == "gemma-3-4b-it"} == {
        "full_attention", "sliding_attention"}  # fmt: skip
    assert any(arrays(e)["position_ids"].ndim == 2 and "image" in e["name"] for e in GOLDENS.values())


#: Goldens posenc cannot yet reproduce from the config alone: the manifest says why ("posenc_reads_reason").
READ = {name: e for name, e in GOLDENS.items() if e.get("posenc_reads", True)}


@pytest.mark.parametrize("entry", list(READ.values()), ids=list(READ))
def test_the_config_gives_hfs_caches(entry):
    want = arrays(entry)
    ids = want["position_ids"]
    params, got_arrays = posenc(entry)
    scaling = float(want["attention_scaling"].reshape(-1)[0])
    assert params["attention_scaling"] == pytest.approx(scaling, rel=1e-6)
    inv = got_arrays["inv_freq"].astype(np.float64)
    assert inv.shape == want["inv_freq"].shape
    assert np.allclose(inv, want["inv_freq"], rtol=2.0**-21, atol=0)
    rows = ids if ids.ndim == 2 else np.broadcast_to(ids, (3, len(ids)))
    top = np.abs(rows).max(axis=0).astype(np.float64)  # the largest position any axis of a row reads
    angle = top[:, None] * want["inv_freq"].astype(np.float64)[column_frequency(want)][None, :]
    bound = 2.0**-21 * (1 + np.abs(angle)) * max(1.0, scaling)
    for part in ("cos", "sin"):
        got = got_arrays[part].astype(np.float64)
        assert got.shape == want[part].shape, part
        assert (np.abs(got - want[part]) <= bound).all(), (part, float(np.abs(got - want[part]).max()))


def test_phi3_longrope_pair_holds_both_of_hfs_caches():
    short = arrays(GOLDENS["phi-3-mini-128k_pos4064-4095"])
    long = arrays(GOLDENS["phi-3-mini-128k_pos131040-131071"])
    pair = api.rope(4096, config=HERE / "configs" / "phi-3-mini-128k", longrope_pair=True)
    assert np.allclose(pair.arrays["inv_freq_short"], short["inv_freq"], rtol=2.0**-21, atol=0)
    assert np.allclose(pair.arrays["inv_freq_long"], long["inv_freq"], rtol=2.0**-21, atol=0)
    rows = short["position_ids"]
    assert np.allclose(pair.arrays["cos_short"][rows], short["cos"], rtol=0, atol=2.0**-21 * 4096 * 1.2)
