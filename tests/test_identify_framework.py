"""``posenc identify`` names the arithmetic (posenc_cli/identification/_arithmetic.py): a table the framework made
is named with ``--arithmetic framework`` (or ``ggml``), a table rounded once from the exact values is not.

The inputs are the frameworks' own tables, written to ``.npy`` files that identify reads: transformers' RoPE
caches from published configs (tests/goldens/rope_config, rows 0-63), ggml's own rope output
(tests/goldens/ggml, positions 0-63), and the sinusoid and ALiBi goldens torch, TensorFlow, transformers and
diffusers made (tests/goldens/). The regenerated command is then run, and its table checked against the
framework's table itself: nearly it, as docs/identify.md defines (70 % bit-identical, every entry within 4 ulps).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import api
from posenc_cli.cli import cli
from posenc_cli.identification import Identifier, _search, identify

GOLDENS = Path(__file__).parent / "goldens"


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in float32 steps (monotone integer order of the bit patterns)."""

    def order(x: np.ndarray) -> np.ndarray:
        b = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(b < 0, -(b & 0x7FFFFFFF), b)

    return np.abs(order(got) - order(want))


def npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def identified(tmp_path: Path, table: np.ndarray) -> dict:
    """``posenc identify --json`` of ``table`` written as a .npy file: its match."""
    path = tmp_path / "table.npy"
    np.save(path, table)
    result = CliRunner().invoke(cli, ["identify", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["match"]


def regenerated(tmp_path: Path, command: str) -> np.ndarray:
    words = shlex.split(command)
    assert words[0] == "posenc" and words[-2] == "-o"
    out = tmp_path / "ours.npy"
    result = CliRunner().invoke(cli, [*words[1:-2], "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    return np.load(out)


def assert_nearly(ours: np.ndarray, golden: np.ndarray) -> None:
    off = ulps(ours.reshape(golden.shape), golden)
    assert off.max() <= 4 and np.mean(off == 0) >= 0.7, (int(off.max()), float(np.mean(off == 0)))


# ------------------------------------------------------------------------------------------- transformers' RoPE
ROPE_MODELS = [
    "llama-3.1-8b", "llama-3.2-1b", "mistral-7b-v0.1", "phi-2", "pythia-160m", "gemma-3-4b-it_full_attention",
    "qwen2.5-7b-yarn", "qwen3-8b-yarn", "deepseek-v3", "deepseek-v2-lite", "qwen2-vl-2b_text",
]  # fmt: skip


@pytest.mark.parametrize("part", ["cos", "sin", "inv_freq"])
@pytest.mark.parametrize("model", ROPE_MODELS)
def test_transformers_rope_caches_are_named_framework(tmp_path, model, part):
    golden = npz(GOLDENS / "rope_config" / f"{model}_pos0-63.npz")[part]
    match = identified(tmp_path, golden)
    assert match["kind"] == "rope" and "--arithmetic framework" in match["command"], match["command"]
    assert match["agreement"].startswith("framework: bit-identical")
    share = match["arithmetics"]["framework"]["bit_identical_share"]
    assert share >= 0.7 and share > match["arithmetics"]["exact"]["bit_identical_share"]
    assert_nearly(regenerated(tmp_path, match["command"]), golden)


# --------------------------------------------------------------------------------------------------- ggml's RoPE
@pytest.mark.parametrize("part", ["cos", "sin"])
@pytest.mark.parametrize("name", ["plain_base1e4_neox", "linear_scale0.5_normal", "yarn_scale0.25_ctx32768_neox"])
def test_ggml_rope_caches_are_named_ggml(tmp_path, name, part):
    """ggml's running product bends the frequencies (theta reads as 9999.97): the round theta is named."""
    data = npz(GOLDENS / "ggml" / f"{name}.npz")
    assert list(data["positions"][:64]) == list(range(64))
    golden = data[part][:64]
    match = identified(tmp_path, golden)
    assert "--arithmetic ggml" in match["command"] and "--layout half-width" in match["command"]
    assert match["params"].get("theta", 10000.0) in (10000.0, 1e6)
    assert match["arithmetics"]["ggml"]["bit_identical_share"] >= 0.98
    assert_nearly(regenerated(tmp_path, match["command"]), golden)


def test_ggml_llama3_with_rope_freqs_stays_exact(tmp_path):
    """posenc's ggml arithmetic refuses llama3 (it needs the GGUF's rope_freqs): the exact reading is named."""
    golden = npz(GOLDENS / "ggml" / "llama3_base5e5_freqfactors_neox.npz")["cos"][:64]
    match = identified(tmp_path, golden)
    assert "--arithmetic" not in match["command"] and set(match["arithmetics"]) == {"exact", "framework"}


# ------------------------------------------------------------------------------------------ sinusoids and ALiBi
SINUSOIDS = {
    "ddpm_diffusers_d16": "ddpm", "ddpm_diffusers_d16_strided": "ddpm", "openai_diffusion_diffusers_d33":
    "openai-diffusion", "musicgen_d16": "musicgen", "tensor2tensor_d16": "tensor2tensor", "tensor2tensor_d20":
    "tensor2tensor", "whisper_d16": "whisper", "fairseq_m2m100_d16_pad1": "fairseq",
}  # fmt: skip


@pytest.mark.parametrize("name", list(SINUSOIDS))
def test_framework_sinusoids_are_named_framework(tmp_path, name):
    """ddpm, whisper and tensor2tensor share one exact table; their framework tables tell ddpm apart."""
    data = npz(GOLDENS / f"{name}.npz")
    golden = data.get("pe", data.get("table"))
    match = identified(tmp_path, golden)
    assert "--arithmetic framework" in match["command"], match["command"]
    assert SINUSOIDS[name] in (match["preset"], *match["equivalent_presets"])
    assert_nearly(regenerated(tmp_path, match["command"]), golden)


@pytest.mark.parametrize("heads", [12, 16, 40])
@pytest.mark.parametrize("part", ["slopes", "bias"])
def test_bloom_alibi_is_named_framework(tmp_path, heads, part):
    golden = npz(GOLDENS / f"alibi_bloom_h{heads}_n16.npz")[part]
    match = identified(tmp_path, golden)
    assert "--arithmetic framework" in match["command"]
    assert_nearly(regenerated(tmp_path, match["command"]), golden)


# ----------------------------------------------------------------------------------------- no false "framework"
@pytest.mark.parametrize(
    "table",
    [
        api.rope(seq_len=256, head_dim=128, theta=500000.0).arrays["cos"],
        api.rope(seq_len=64, head_dim=64, scaling="yarn", factor=4.0, original_max_positions=4096).arrays["sin"],
        api.generate(seq_len=128, d_model=64, preset="whisper").arrays["pe"],
        api.alibi(heads=40).arrays["slopes"],
    ],
    ids=["rope-llama3-theta", "rope-yarn", "whisper", "alibi40"],
)
def test_an_exact_table_is_named_exact(tmp_path, table):
    match = identified(tmp_path, np.asarray(table, np.float32))
    assert "--arithmetic" not in match["command"] and match["agreement"] == "bit-identical"


@pytest.mark.parametrize("name", ["vaswani_distilbert_d16", "marian_d33"])
def test_a_table_rounded_once_from_float64_is_named_exact(tmp_path, name):
    """DistilBERT and Marian compute in float64 and round once: the exact table, not PyTorch's float32 one."""
    match = identified(tmp_path, npz(GOLDENS / f"{name}.npz")["pe"])
    assert "--arithmetic" not in match["command"]


def test_framework_tables_are_paid_from_the_budget(tmp_path, monkeypatch):
    """Each framework table tried costs MADE_COST entries per entry made and one per entry compared; a budget
    that cannot pay them leaves the match exact."""
    golden = npz(GOLDENS / "rope_config" / "llama-3.1-8b_pos0-63.npz")["cos"]
    made: list[str] = []
    make = _search._make

    def counting(hypothesis, dtype, lazy):  # type: ignore[no-untyped-def]
        made.append(str(hypothesis.values.get("arithmetic", "exact")))
        return make(hypothesis, dtype, lazy)

    monkeypatch.setattr(_search, "_make", counting)
    identifier = Identifier()
    assert "--arithmetic framework" in identifier.identify(golden).match.command
    tried = made.count("framework")
    assert tried >= 1 and identifier.work.spent >= tried * (_search.MADE_COST + 1) * golden.size
    path = tmp_path / "cos.npy"
    np.save(path, golden)
    monkeypatch.setattr(_search, "MADE_COST", 1 << 40)  # no framework table is affordable
    match = identify(path).match
    assert match is not None and "--arithmetic" not in match.command and match.arithmetics == {}
