"""``posenc identify`` names a vLLM ``cos_sin_cache`` as ``posenc rope --runtime vllm`` with its scaling
(:mod:`posenc_cli.identification._rt_vllm`): vLLM's own caches (the goldens whose every row is kept, made by vLLM
0.34.0's classes, tests/goldens/runtimes/vllm/README.md), and posenc's of every class vLLM has, in both arithmetics;
and on hostile arrays built to look like one, the reader's work stays bounded (counted, never timed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.identification import WORK_PER_ENTRY, _rt_vllm, identify, identify_array

from .test_identify_hostile import counted  # noqa: F401  (the fixture that counts the search's work)

HERE = Path(__file__).parent / "goldens" / "runtimes" / "vllm"
CASES = json.loads((HERE / "manifest.json").read_text())["cases"]
#: The goldens holding every row of vLLM's cache.
WHOLE = [name for name, case in CASES.items() if len(np.load(HERE / case["file"])["rows"]) == case["shape"][0]]


def vllm_cache(name: str) -> np.ndarray:
    with np.load(HERE / CASES[name]["file"]) as z:
        values = z["values"]
    if CASES[name]["get_rope"]["dtype"] == "bfloat16":
        return (values.astype(np.uint32) << 16).view(np.float32)  # bfloat16 values held as float32
    return values


def matched(values: np.ndarray) -> dict:
    result = identify_array(values)
    assert result.match is not None, [c.command for c in result.nearest]
    return result.match.hypothesis.values


def test_the_whole_goldens_are_those_of_plain_linear_and_dynamic_caches():
    assert {CASES[n]["class"] for n in WHOLE} == {
        "RotaryEmbedding", "LinearScalingRotaryEmbedding", "DynamicNTKScalingRotaryEmbedding"}  # fmt: skip


@pytest.mark.parametrize("name", WHOLE)
def test_vllms_own_caches_are_named_with_their_scaling(name):
    """vLLM's dynamic cache is its default one (max_trained_positions = max_position): named as ``none``."""
    values = matched(vllm_cache(name))
    p = CASES[name]["get_rope"]["rope_parameters"]
    assert values["runtime"] == "vllm" and values["seq_len"] == CASES[name]["shape"][0]
    assert values.get("scaling", "none") == ("linear" if p["rope_type"] == "linear" else "none")
    if p["rope_type"] == "linear":
        assert values["factor"] == p["factor"]
    assert values["head_dim"] == CASES[name]["shape"][1]


KINDS = {
    "none": dict(head_dim=64, max_positions=100, theta=500000.0),
    "linear": dict(head_dim=32, max_positions=40, scaling="linear", factor=4.0),
    "yarn": dict(seq_len=300, head_dim=64, theta=1e6, scaling="yarn", factor=4.0, original_max_positions=32768),
    "deepseek-v3": dict(seq_len=300, head_dim=64, scaling="yarn", factor=40.0, original_max_positions=4096,
                        mscale=1.0, mscale_all_dim=1.0),  # fmt: skip
    "deepseek-lone-mscale": dict(seq_len=300, head_dim=64, scaling="yarn", factor=40.0, original_max_positions=4096,
                                 mscale=0.707),  # fmt: skip
    "llama3": dict(seq_len=256, head_dim=64, theta=500000.0, scaling="llama3", factor=8.0,
                   original_max_positions=8192),  # fmt: skip
    "longrope": dict(head_dim=16, scaling="longrope", original_max_positions=256, max_positions=1024,
                     short_factor=[1.0, 1.0, 1.25, 1.5, 2, 3, 4, 5], long_factor=[1, 1, 2, 4, 8, 10, 12, 16]),
    "longrope-short-rows": dict(seq_len=200, head_dim=16, scaling="longrope", original_max_positions=256,
                                max_positions=1024, short_factor=[1.0, 1.0, 1.25, 1.5, 2, 3, 4, 5],
                                long_factor=[1, 1, 2, 4, 8, 10, 12, 16]),
}  # fmt: skip


@pytest.mark.parametrize("arithmetic", ["exact", "framework"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_class_is_named_and_its_command_makes_the_table_again(kind, arithmetic):
    table = api.rope(runtime="vllm", arithmetic=arithmetic, **KINDS[kind])
    ((name, array),) = table.arrays.items()
    result = identify_array(np.asarray(array))
    assert result.match is not None, [c.command for c in result.nearest]
    values = result.match.hypothesis.values
    assert values["runtime"] == "vllm" and result.match.hypothesis.array == name
    assert values.get("arithmetic", "exact") == arithmetic
    assert values.get("scaling", "none") == KINDS[kind].get("scaling", "none")
    again = api.rope(**values)
    assert np.array_equal(np.asarray(again.arrays[name]), array)
    assert "--runtime vllm" in result.match.command


def test_a_long_float32_cache_is_read_on_its_first_rows():
    """Past 8192 rows a float32 cache's angles drift from the exact ones by more than the RoPE reader allows for
    one frequency per column (2**-24 of the angle, 1e-3 at 16k positions): the reading takes the first rows, the
    comparison every row."""
    config = Path(__file__).parent / "goldens" / "rope_config" / "configs" / "qwen2.5-7b-yarn"
    table = api.rope(16384, runtime="vllm", arithmetic="framework", config=config)
    values = matched(np.asarray(table.arrays["cos_sin_cache"]))
    assert values["seq_len"] == 16384 and values["factor"] == 4.0 and values["original_max_positions"] == 32768
    assert values["theta"] == 1e6 and values["arithmetic"] == "framework"


def test_a_cache_file_is_identified_from_the_command_line(tmp_path):
    table = api.rope(runtime="vllm", head_dim=32, max_positions=64, scaling="linear", factor=2.0)
    path = tmp_path / "rotary.safetensors"
    api.save(table, path)
    found = identify(path)
    (tensor,) = found.tensors
    assert tensor.key == "cos_sin_cache" and tensor.match is not None
    assert "--runtime vllm" in tensor.match.command and "--factor 2.0" in tensor.match.command
    out = subprocess.run([sys.executable, "-m", "posenc_cli", "identify", str(path)], capture_output=True, text=True)
    assert out.returncode == 0 and "--runtime vllm" in out.stdout


# ------------------------------------------------------------------------------------------------ hostile
def _looks_like_one(n: int, d: int, seed: int = 0) -> np.ndarray:
    """Row 0 of a vLLM cache (ones, then zeros), random rows after it."""
    table = np.random.default_rng(seed).uniform(-1, 1, (n, d)).astype(np.float32)
    table[0, : d // 2], table[0, d // 2 :] = 1, 0
    return table


def _many_zero_rows(n: int, d: int) -> np.ndarray:
    """A real cache whose sin half is zeroed on every tenth row: as many "position 0" rows as that."""
    table = np.asarray(api.rope(n, runtime="vllm", head_dim=d).arrays["cos_sin_cache"]).copy()
    table[::10, d // 2 :] = 0
    return table


def _long_short_garbage(n: int, d: int) -> np.ndarray:
    """Two "position 0" rows (LongRoPE's shape), random values between and after."""
    table = _looks_like_one(n, d, 1)
    table[n // 3] = table[0]
    return table


@pytest.mark.parametrize(
    "table",
    [
        pytest.param(_looks_like_one(4096, 128), id="row-0-of-a-cache-then-noise"),
        pytest.param(_many_zero_rows(2048, 64), id="a-zero-sin-half-every-tenth-row"),
        pytest.param(_long_short_garbage(3000, 64), id="two-position-0-rows-and-noise"),
    ],
)
def test_a_table_dressed_as_a_cache_costs_a_small_multiple_of_itself(table, counted):  # noqa: F811
    result = identify_array(table)
    assert result.match is None or "--runtime vllm" not in result.match.command
    assert counted.made + counted.compared <= 8 * table.size < WORK_PER_ENTRY * table.size


@pytest.mark.parametrize(
    "values",
    [
        np.zeros((5, 8)),
        np.full((5, 8), np.nan),
        np.concatenate([np.full((1, 4), 1e30), np.zeros((1, 4))], axis=1).repeat(4, axis=0),
        np.array([[1.0, 1.0, 0.0, 0.0]] * 2),  # fewer than 3 rows
        np.ones((6, 5)),  # odd width
        np.ones(12),  # one axis
    ],
)
def test_the_reader_gives_nothing_for_what_is_no_cache(values):
    assert list(_rt_vllm.hypotheses(np.asarray(values, np.float64))) == []


def test_the_reader_takes_no_amplitude_beyond_the_rope_readers():
    cache = np.asarray(api.rope(32, runtime="vllm", head_dim=16).arrays["cos_sin_cache"], np.float64)
    assert list(_rt_vllm.hypotheses(cache))
    assert list(_rt_vllm.hypotheses(3 * cache)) == []
