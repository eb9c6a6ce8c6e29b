"""Every golden of ``tests/goldens/relative/`` (made by transformers and timm themselves; see its README and
``manifest.json``) against what posenc makes: integers exactly, float32 values within the framework's own rounding.

The bias goldens were computed by the frameworks from checkpoints written by the real safetensors library (beside
the goldens); posenc reads the same files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.encodings import relative as rel

HERE = Path(__file__).parent / "goldens" / "relative"
MANIFEST = json.loads((HERE / "manifest.json").read_text())
GOLDENS = MANIFEST["goldens"]


def group(*names: str) -> list[dict]:
    entries = [g for g in GOLDENS.values() if g["group"] in names]
    assert entries, names
    return entries


def arrays(entry: dict) -> dict[str, np.ndarray]:
    with np.load(HERE / entry["file"], allow_pickle=False) as z:
        return {key: z[key] for key in z.files}


def ids(entries: list[dict]) -> list[str]:
    return [e["name"] for e in entries]


def test_every_golden_is_tested():
    tested = {"t5", "t5_sweep", "t5_bias", "deberta", "deberta_sweep", "swin", "swin_bias", "beit", "beit_bias",
              "swinv2", "transformer_xl", "mpt_alibi"}  # fmt: skip
    assert {g["group"] for g in GOLDENS.values()} == tested


@pytest.mark.parametrize("entry", group("t5", "deberta"), ids=ids(group("t5", "deberta")))
def test_index_matrices_equal_the_frameworks(entry):
    p = entry["params"]
    table = api.relative(p["scheme"], p["query_length"], p["key_length"], offset=p["offset"],
                         buckets=p.get("buckets"), max_distance=p.get("max_distance"),
                         causal=p.get("causal", False))  # fmt: skip
    want = arrays(entry)["index"]
    got = table.arrays["index"]
    assert got.shape == want.shape
    assert (got.astype(np.int64) == want).all()


@pytest.mark.parametrize("entry", group("t5_sweep"), ids=ids(group("t5_sweep")))
def test_t5_bucket_sweeps_equal_the_frameworks(entry):
    """Every relative position from -4 to 4 max distances: exact arithmetic and HF's float32 agree everywhere."""
    p = entry["params"]
    r = np.arange(p["r_start"], p["r_stop"] + 1)
    n = p["buckets"] if p["causal"] else p["buckets"] // 2
    if p["causal"]:
        got = rel.t5_buckets(np.maximum(-r, 0), n, p["max_distance"])
    else:
        got = (r > 0) * n + rel.t5_buckets(np.abs(r), n, p["max_distance"])
    assert (got == arrays(entry)["bucket"]).all()


@pytest.mark.parametrize("entry", group("deberta_sweep"), ids=ids(group("deberta_sweep")))
def test_deberta_bucket_sweeps_equal_the_frameworks(entry):
    p = entry["params"]
    r = np.arange(p["r_start"], p["r_stop"] + 1)
    want = arrays(entry)["bucket"]  # make_log_bucket_position returns float32
    assert (want == np.round(want)).all()
    assert (rel.deberta_buckets(r, p["buckets"], p["max_distance"]) == want.astype(np.int64)).all()


@pytest.mark.parametrize("entry", group("t5_bias"), ids=ids(group("t5_bias")))
def test_t5_bias_gathered_from_the_checkpoint_equals_compute_bias(entry):
    p, checkpoint = entry["params"], entry["checkpoint"]
    table = api.relative("t5", p["query_length"], p["key_length"], offset=p["offset"], buckets=p["buckets"],
                         max_distance=p["max_distance"], causal=p["causal"], bias=HERE / checkpoint["file"],
                         key=checkpoint["key"])  # fmt: skip
    want = arrays(entry)["bias"]
    assert table.arrays["bias"].dtype == np.float32 and table.arrays["bias"].shape == want.shape
    assert (table.arrays["bias"] == want).all()  # a gather: bit for bit, bf16 widened exactly


@pytest.mark.parametrize("entry", group("swin", "beit", "swinv2"), ids=ids(group("swin", "beit", "swinv2")))
def test_window_index_equals_timms(entry):
    p = entry["params"]
    pretrained = tuple(p["pretrained_window"]) if p.get("pretrained_window") else None
    table = api.window(p["scheme"], tuple(p["window"]), pretrained_window=pretrained)
    want = arrays(entry)
    assert (table.arrays["index"].astype(np.int64) == want["index"]).all()
    if p["scheme"] == "swinv2":
        got = table.arrays["coords"]
        assert got.shape == want["coords"].shape and got.dtype == np.float32
        # timm rounds each of its float32 steps; posenc rounds the exact value once: at most one ulp apart
        ulp = np.spacing(np.maximum(np.abs(got), np.abs(want["coords"])))
        assert (np.abs(got.astype(np.float64) - want["coords"]) <= ulp).all()


@pytest.mark.parametrize("entry", group("swin_bias", "beit_bias"), ids=ids(group("swin_bias", "beit_bias")))
def test_window_bias_gathered_from_the_checkpoint_equals_timms(entry):
    p, checkpoint = entry["params"], entry["checkpoint"]
    table = api.window(p["scheme"], tuple(p["window"]), bias=HERE / checkpoint["file"], key=checkpoint["key"])
    want = arrays(entry)["bias"]
    assert table.arrays["bias"].shape == want.shape and (table.arrays["bias"] == want).all()


@pytest.mark.parametrize("entry", group("transformer_xl"), ids=ids(group("transformer_xl")))
def test_transformer_xl_preset_is_xlnets_table_within_its_float32_rounding(entry):
    p = entry["params"]
    want = arrays(entry)
    table = api.generate(p["klen"], p["d_model"], preset="transformer-xl")
    got = np.asarray(table.array, np.float64)
    positions = want["positions"]
    assert (positions == np.arange(p["klen"] - 1, -1, -1)).all()
    inv = 10000.0 ** (-np.arange(0, p["d_model"], 2) / p["d_model"])
    angle = np.abs(np.concatenate([np.outer(positions, inv)] * 2, axis=1))
    assert (np.abs(got - want["pos_emb"]) <= 2.0**-22 * (1 + angle)).all()
    # XLNet's bidirectional table runs from klen down to -qlen + 1: the same preset with --start klen
    rows = p["klen"] + p["qlen"]
    xlnet = api.generate(rows, p["d_model"], preset="transformer-xl", start=float(p["klen"]), step=-1.0)
    angle = np.abs(np.concatenate([np.outer(want["positions_xlnet"], inv)] * 2, axis=1))
    assert (np.abs(np.asarray(xlnet.array, np.float64) - want["pos_emb_xlnet"]) <= 2.0**-22 * (1 + angle)).all()


@pytest.mark.parametrize("entry", group("mpt_alibi"), ids=ids(group("mpt_alibi")))
def test_mpt_alibi_is_hf_mpts_within_its_float32_rounding(entry):
    p = entry["params"]
    want = arrays(entry)
    table = api.alibi(p["heads"], p["seq_len"], variant="mpt")
    assert (table.arrays["slopes"] == want["slopes"]).all()  # powers of two or correctly rounded alike
    got = table.arrays["bias"].astype(np.float64)
    assert (np.abs(got - want["bias"]) <= np.spacing(np.abs(want["bias"]).astype(np.float32))).all()
