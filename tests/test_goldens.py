"""posenc against tables made by the real frameworks (tests/goldens/, made by tests/goldens/make_goldens.py).

Agreement (tests/goldens/README.md): bit-identical where the framework computes in float64 and rounds once
(DistilBERT/XLM); ALiBi within BLOOM's own float32 error, relative 2**-20 (BLOOM raises a float32-rounded base to
integer powers, which drifts a few ulps from the exact slopes posenc writes).
The preset goldens are checked in test_presets.py, RoPE in test_rope.py and 2-D sincos in test_sincos2d.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import posenc_cli

GOLDENS = Path(__file__).resolve().parent / "goldens"
MANIFEST = json.loads((GOLDENS / "manifest.json").read_text())["goldens"]


def golden(name: str) -> dict[str, np.ndarray]:
    with np.load(GOLDENS / MANIFEST[name]["file"], allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("name", [n for n in MANIFEST if n.startswith("vaswani_distilbert")])
def test_distilbert_tables_are_bit_identical(name):
    entry = MANIFEST[name]
    assert entry["agreement"] == "bit-identical"
    want = golden(name)["pe"]
    got = posenc_cli.sinusoidal(entry["params"]["n_pos"], entry["params"]["dim"])
    assert got.tobytes() == want.astype(np.float32).tobytes()


@pytest.mark.parametrize("name", [n for n in MANIFEST if n.startswith("alibi_bloom")])
def test_alibi_matches_bloom_within_its_float32_drift(name):
    data = golden(name)
    heads, seq_len = data["bias"].shape
    table = posenc_cli.alibi(heads, seq_len)
    for key in ("slopes", "bias"):
        want, got = data[key].astype(np.float64), table.arrays[key].astype(np.float64)
        assert np.all(np.abs(got - want) <= 2.0**-20 * np.abs(want)), key
