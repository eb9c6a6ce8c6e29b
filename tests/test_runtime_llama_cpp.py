"""``posenc rope --runtime llama.cpp`` (posenc_cli/kinds/runtimes/llama_cpp.py, formats/gguf_llama.py) against
llama.cpp's own converter.

References, none of them posenc:

- ``tests/goldens/runtimes/llama_cpp/``: the keys and tensors llama.cpp's ``convert_hf_to_gguf.py`` (commit
  0c1e57098bba, vendored in the llama-cpp-python 0.3.36 sdist; ``LlamaModel``, ``Qwen2Model``, ``Qwen3Model``,
  ``Phi3MiniModel`` and ``TextModel.set_gguf_parameters``, ``generate_extra_tensors``) wrote for published
  configs, read back by gguf-py's ``GGUFReader`` (README.md there). posenc's file is read by the ``gguf`` package's
  ``GGUFReader``; key names are checked against gguf's ``Keys`` constants and value types against what gguf's own
  ``GGUFWriter.add_*`` methods write.
- ``tests/goldens/ggml/``: ggml's CPU ``ggml_rope_ext`` caches (the ``none``/``linear``/``yarn`` tables hold what
  ggml computes from the keys).
- mpmath: the real ``rope_freqs`` of ``--arithmetic exact``.

Measured: ``--arithmetic framework`` (the converter's torch float32 operations) equals the converter's
``rope_freqs`` bit for bit; ``exact`` differs from it in 4 of Llama 3.1's 64 values and 2 of Llama 3.2's 32 (the
band), by at most 3 ulps: the converter's float32 rounding, each step. LongRoPE's lists are the config's numbers
rounded to float32 in every arithmetic.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import gguf
import mpmath
import numpy as np
import pytest
import safetensors.numpy
from click.testing import CliRunner
from gguf import GGUFReader, GGUFValueType

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError, SpecError
from posenc_cli.formats import WriteOptions, gguf_llama
from posenc_cli.formats import gguf as gguf_format
from posenc_cli.identification import identify_array
from posenc_cli.identification._rt_llama_cpp import hypotheses
from posenc_cli.read import load
from posenc_cli.table import Table

ROOT = Path(__file__).resolve().parents[1]
GOLDENS = ROOT / "tests" / "goldens" / "runtimes" / "llama_cpp"
DATA = json.loads((GOLDENS / "goldens.json").read_text())
CASES = sorted(DATA["cases"])
GGML = ROOT / "tests" / "goldens" / "ggml"
CONFIGS = ROOT / "tests" / "goldens" / "rope_config" / "configs"


def config_of(case: str, tmp_path: Path) -> Path:
    entry = DATA["cases"][case]
    if entry["inline_config"] is None:
        return ROOT / entry["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(entry["inline_config"]))
    return path


def run(*args: str) -> object:
    result = CliRunner().invoke(cli, ["rope", *args])
    return result


def written(tmp_path: Path, *args: str, name: str = "rope.gguf") -> Path:
    out = tmp_path / name
    result = CliRunner().invoke(cli, ["rope", *args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def field_value(field) -> object:
    kind = GGUFValueType(field.types[0])
    if kind == GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode()
    return field.parts[field.data[0]].tolist()[0]


def ordered(a: np.ndarray) -> np.ndarray:
    bits = np.asarray(a, np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.abs(ordered(a) - ordered(b)))


def golden_tensors(case: str) -> dict[str, np.ndarray]:
    with np.load(GOLDENS / DATA["cases"][case]["npz"], allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def llama_keys(arch: str) -> set[str]:
    """Every key gguf's constants name for ``arch``'s RoPE, and its context length."""
    rope = {v.format(arch=arch) for k, v in vars(gguf.Keys.Rope).items() if k.isupper() and isinstance(v, str)}
    return rope | {gguf.Keys.LLM.CONTEXT_LENGTH.format(arch=arch)}


# ------------------------------------------------------------------------------------- the converter's goldens
def test_goldens_are_what_the_manifest_says():
    import hashlib

    for case in CASES:
        entry = DATA["cases"][case]
        assert hashlib.sha256((GOLDENS / entry["npz"]).read_bytes()).hexdigest() == entry["sha256"]


@pytest.mark.parametrize("case", CASES)
def test_keys_and_tensors_are_the_converters(case, tmp_path):
    """Every llama.cpp key the converter wrote, with its type and value, and no other; its tensors bit for bit."""
    entry = DATA["cases"][case]
    out = written(tmp_path, "--config", str(config_of(case, tmp_path)), "--runtime", "llama.cpp",
                  "--arithmetic", "framework", "-n", "4")  # fmt: skip
    reader = GGUFReader(out)
    arch = field_value(reader.fields["general.architecture"])
    assert arch == entry["keys"]["general.architecture"]["value"]
    ours = {name: field for name, field in reader.fields.items() if name.startswith(f"{arch}.")}
    theirs = {name: key for name, key in entry["keys"].items() if name != "general.architecture"}
    assert set(ours) == set(theirs)
    assert set(ours) <= llama_keys(arch)
    for name, key in theirs.items():
        assert GGUFValueType(ours[name].types[0]).name == key["type"], name
        assert field_value(ours[name]) == key["value"], name
    tensors = {t.name: t for t in reader.tensors if t.name.startswith("rope_")}
    assert set(tensors) == set(entry["tensors"])
    reference = golden_tensors(case)
    for name, info in entry["tensors"].items():
        tensor = tensors[name]
        assert tensor.tensor_type.name == info["ggml_type"] and [int(n) for n in tensor.shape] == info["ne"]
        assert np.array_equal(np.asarray(tensor.data).view(np.uint32), reference[name].view(np.uint32)), name


def test_value_types_are_the_ones_gguf_writes():
    """The mapping's types against gguf's own GGUFWriter.add_* methods, key by key."""
    methods = {
        "gguf_context_length": ("add_context_length", 4096),
        "gguf_rope_dimension_count": ("add_rope_dimension_count", 128),
        "gguf_rope_freq_base": ("add_rope_freq_base", 1e4),
        "gguf_rope_scaling_type": ("add_rope_scaling_type", gguf.RopeScalingType.YARN),
        "gguf_rope_scaling_factor": ("add_rope_scaling_factor", 4.0),
        "gguf_rope_scaling_original_context_length": ("add_rope_scaling_orig_ctx_len", 4096),
        "gguf_rope_scaling_attn_factor": ("add_rope_scaling_attn_factors", 1.1),
        "gguf_rope_scaling_yarn_beta_fast": ("add_rope_scaling_yarn_beta_fast", 32.0),
        "gguf_rope_scaling_yarn_beta_slow": ("add_rope_scaling_yarn_beta_slow", 1.0),
    }
    assert set(methods) == set(gguf_llama.KEYS)
    names = {"uint32": GGUFValueType.UINT32, "float32": GGUFValueType.FLOAT32, "string": GGUFValueType.STRING}
    for param, (method, value) in methods.items():
        writer = gguf.GGUFWriter(None, "llama")
        before = set(writer.kv_data[0])
        getattr(writer, method)(value)
        ((key, stored),) = [(k, v) for k, v in writer.kv_data[0].items() if k not in before]
        suffix, kind = gguf_llama.KEYS[param]
        assert key == f"llama.{suffix}" and stored.type == names[kind], param
    assert gguf_llama.SCALING_TYPES == tuple(t.value for t in gguf.RopeScalingType)
    tensor = gguf.MODEL_TENSOR
    assert set(gguf_llama.TENSORS.values()) == {
        f"{gguf.TENSOR_NAMES[t]}.weight"
        for t in (tensor.ROPE_FREQS, tensor.ROPE_FACTORS_LONG, tensor.ROPE_FACTORS_SHORT)
    }
    assert set(gguf_llama.ARCHITECTURES) <= set(gguf.MODEL_ARCH_NAMES.values())


@pytest.mark.parametrize("case", ["llama-3.1-8b", "llama-3.2-1b"])
def test_exact_rope_freqs_are_the_real_values(case):
    """exact: each divisor correctly rounded (mpmath at 60 digits); within 3 ulps of the converter's float32."""
    config = json.loads((CONFIGS / case / "config.json").read_text())
    table = posenc_cli.rope(config=CONFIGS / case / "config.json", runtime="llama.cpp")
    got = table.arrays["rope_freqs"]
    rope = config["rope_scaling"]
    theta, factor = mpmath.mpf(config["rope_theta"]), mpmath.mpf(rope["factor"])
    low, high, original = rope["low_freq_factor"], rope["high_freq_factor"], rope["original_max_position_embeddings"]
    dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    for k, value in enumerate(got):
        wavelen = 2 * mpmath.pi * theta ** (mpmath.mpf(2 * k) / dim)
        if wavelen < mpmath.mpf(original) / high:
            real = mpmath.mpf(1)
        elif wavelen > mpmath.mpf(original) / low:
            real = factor
        else:
            s = (original / wavelen - low) / (high - low)
            real = 1 / ((1 - s) / factor + s)
        near = np.float32(float(real))
        candidates = [np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf))]
        best = min(candidates, key=lambda c: abs(mpmath.mpf(float(c)) - real))
        assert value == best, k
    converter = golden_tensors(case)["rope_freqs.weight"]
    apart = ulps(got, converter)
    assert apart.max() <= 3 and 0.9 <= float(np.mean(apart == 0)) < 1


def test_longrope_lists_are_the_configs_in_float32():
    config = json.loads((CONFIGS / "phi-3-mini-128k" / "config.json").read_text())
    for arithmetic in ("exact", "framework"):
        table = posenc_cli.rope(config=CONFIGS / "phi-3-mini-128k", runtime="llama.cpp", arithmetic=arithmetic)
        for which in ("long", "short"):
            listed = np.array(config["rope_scaling"][f"{which}_factor"], np.float64).astype(np.float32)
            assert np.array_equal(table.arrays[f"rope_factors_{which}"], listed)
    wide = posenc_cli.rope(config=CONFIGS / "phi-3-mini-128k", runtime="llama.cpp", dtype="float64")
    assert wide.arrays["rope_factors_long"].tolist() == config["rope_scaling"]["long_factor"]


# ---------------------------------------------------------------------------- the caches ggml computes (no tensor)
def ggml_golden(name: str) -> dict[str, np.ndarray]:
    with np.load(GGML / f"{name}_normal.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize(
    ("golden", "args"),
    [
        ("yarn_scale0.25_ctx32768", ["--config", str(CONFIGS / "qwen2.5-7b-yarn" / "config.json")]),
        ("plain_base1e4", ["--config", str(CONFIGS / "mistral-7b-v0.1" / "config.json")]),
        ("linear_scale0.5", ["--head-dim", "128", "--scaling", "linear", "--factor", "2"]),
    ],
)
def test_caches_are_what_ggmls_rope_computes(golden, args, tmp_path):
    """none/linear/yarn: one column per pair, ggml's CPU rope (its goldens' first 64 positions); the ulps are
    glibc's cosf/sinf against correctly rounded ones (tests/test_ggml_rope.py)."""
    out = written(tmp_path, *args, "--runtime", "llama.cpp", "--arithmetic", "ggml", "-n", "64", name="c.npz")
    reference = ggml_golden(golden)
    assert np.array_equal(reference["positions"][:64], np.arange(64))
    with np.load(out, allow_pickle=False) as z:
        for part in ("cos", "sin"):
            ours, theirs = z[part], reference[part][:64]
            assert ours.shape == theirs.shape == (64, 64)
            apart = ulps(ours, theirs)
            assert apart.max() <= 2 and float(np.mean(apart == 0)) >= 0.98


def test_exact_caches_are_ropes_half_width_ones():
    config = CONFIGS / "qwen2.5-7b-yarn" / "config.json"
    ours = posenc_cli.rope(16, config=config, runtime="llama.cpp")
    plain = posenc_cli.rope(16, config=config, layout="half-width")
    assert set(ours.arrays) == {"cos", "sin"}
    for part in ("cos", "sin"):
        assert np.array_equal(ours.arrays[part], plain.arrays[part])
    assert ours.params["gguf_arch"] == "qwen2" and ours.params["runtime"] == "llama.cpp"


# ---------------------------------------------------------------------------------------- formats and records
def test_other_formats_hold_the_arrays(tmp_path):
    args = ["--config", str(CONFIGS / "phi-3-mini-128k"), "--runtime", "llama.cpp"]
    reader = GGUFReader(written(tmp_path, *args))
    tensors = {t.name: np.asarray(t.data) for t in reader.tensors}
    with np.load(written(tmp_path, *args, name="r.npz"), allow_pickle=False) as z:
        for key in ("rope_factors_long", "rope_factors_short"):
            assert np.array_equal(z[key], tensors[f"{key}.weight"])
    held = safetensors.numpy.load_file(written(tmp_path, *args, name="r.safetensors"))
    c_table = load(written(tmp_path, *args, name="r.h"))
    for key in ("rope_factors_long", "rope_factors_short"):
        assert np.array_equal(held[key], tensors[f"{key}.weight"])
        assert np.array_equal(np.asarray(c_table.arrays[key]), tensors[f"{key}.weight"])
    assert c_table.params["gguf_arch"] == "phi3"


@pytest.mark.parametrize(
    "args",
    [
        ["--config", str(CONFIGS / "llama-3.1-8b"), "--arithmetic", "framework"],
        ["--config", str(CONFIGS / "phi-4-mini")],
        ["--config", str(CONFIGS / "qwen3-8b-yarn"), "-n", "32", "--arithmetic", "ggml"],
        ["--head-dim", "64", "--scaling", "linear", "--factor", "4", "-n", "16", "--gguf-arch", "qwen3"],
    ],
)
def test_verify_regenerates_from_the_record(args, tmp_path):
    out = written(tmp_path, *args, "--runtime", "llama.cpp", name="t.npz")
    result = CliRunner().invoke(cli, ["verify", str(out)])
    assert result.exit_code == 0, result.output


def test_without_a_config_the_architecture_is_llama(tmp_path):
    table = posenc_cli.rope(8, 64, scaling="yarn", factor=4.0, original_max_positions=4096, runtime="llama.cpp")
    assert table.params["gguf_arch"] == "llama"
    assert table.params["gguf_rope_scaling_type"] == "yarn" and table.params["gguf_rope_dimension_count"] == 64
    assert "gguf_context_length" not in table.params  # no config, no max_positions: the converter's has none either


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--head-dim", "64", "--scaling", "dynamic", "--factor", "2", "--max-positions", "8", "-n", "8"], "dynamic"),
        (["--config", str(CONFIGS / "llama-3.1-8b"), "--gguf-arch", "qwen2"], "rope_freqs"),
        (["--config", str(CONFIGS / "mistral-7b-v0.1"), "--gguf-arch", "phi3"], "Phi3MiniModel"),
        (["--config", str(CONFIGS / "gemma-3-1b-it"), "--layer-type", "full_attention"], "model_type"),
        (["--config", str(CONFIGS / "llama-3.1-8b"), "--dtype", "q15"], "F32"),
        (["--config", str(CONFIGS / "deepseek-v3"), "--gguf-arch", "llama", "-n", "4"], "mscale"),
        (["--config", str(CONFIGS / "qwen2.5-7b-yarn"), "--no-attention-scaling", "-n", "4"], "attention"),
        (["--head-dim", "64", "--rotary-dim", "32", "-n", "4"], "rotary_dim"),
        (["--head-dim", "64", "-n", "4", "--position-ids", "x.npy"], "position_ids"),
    ],
)
def test_refusals_name_what_llama_cpp_cannot_say(args, words, tmp_path):
    out = tmp_path / "never.gguf"
    result = run(*args, "--runtime", "llama.cpp", "-o", str(out))
    assert result.exit_code == 2, result.output
    assert words in result.output
    assert not out.exists()


def test_gguf_arch_needs_the_runtime():
    with pytest.raises(SpecError, match="gguf_arch applies to --runtime llama.cpp"):
        posenc_cli.rope(4, 8, gguf_arch="llama")
    with pytest.raises(SpecError, match="gguf_arch must be one of"):
        posenc_cli.rope(4, 8, runtime="llama.cpp", gguf_arch="llama.general")


# --------------------------------------------------------------------------------------------------- attacks
def runtime_table(**params: object) -> Table:
    base = {"runtime": "llama.cpp", "gguf_arch": "llama", "dtype": "float32"}
    return Table("rope", {"rope_freqs": np.ones(4, np.float32)}, {**base, **params})


@pytest.mark.parametrize(
    "params",
    [
        {"gguf_arch": "llama.general"},
        {"gguf_arch": "posenc"},
        {"gguf_arch": 7},
        {"gguf_context_length": 1 << 32},
        {"gguf_context_length": -1},
        {"gguf_context_length": True},
        {"gguf_context_length": 4096.0},
        {"gguf_rope_freq_base": math.inf},
        {"gguf_rope_freq_base": math.nan},
        {"gguf_rope_freq_base": 1e39},
        {"gguf_rope_freq_base": "1e4"},
        {"gguf_rope_scaling_type": "llama3"},
        {"gguf_rope_scaling_type": "yarn\0"},
    ],
)
def test_a_hostile_key_value_is_refused(params):
    with pytest.raises(FormatError):
        gguf_format.header(runtime_table(**params), WriteOptions())


def test_keys_come_only_from_the_fixed_mapping(tmp_path):
    table = runtime_table(gguf_rope_freq_base=1e4, gguf_general_name="evil", gguf_tokenizer=1)
    meta = gguf_format.metadata(table, WriteOptions(name="t"))
    llama = {k for k in meta if k.startswith("llama.")}
    assert llama == {"llama.rope.freq_base"}
    assert meta["general.name"] == "t" and meta["posenc.params.gguf_general_name"] == "evil"
    other = Table("rope", {"rope_freqs": np.ones(4, np.float32)}, {"runtime": "vllm", "gguf_rope_freq_base": 1.0})
    assert not any(k.startswith("llama.") for k in gguf_format.metadata(other, WriteOptions()))
    assert gguf_format.tensor_names(other) == ["rope_freqs"]
    assert gguf_format.tensor_names(Table("rope", {"rope_freqs": np.ones((2, 2))}, {"runtime": "llama.cpp"})) == [
        "rope_freqs"
    ]  # a 2-D array is no llama.cpp tensor
    clash = Table("rope", {"rope_freqs": np.ones(2), "rope_freqs.weight": np.ones(2)}, {"runtime": "llama.cpp"})
    with pytest.raises(FormatError, match="both"):
        gguf_format.tensor_names(clash)


def test_the_loader_would_not_take_the_file_for_a_model(tmp_path):
    reader = GGUFReader(written(tmp_path, "--config", str(CONFIGS / "llama-3.1-8b"), "--runtime", "llama.cpp"))
    for key in (gguf.Keys.LLM.EMBEDDING_LENGTH, gguf.Keys.LLM.BLOCK_COUNT):
        assert key.format(arch="llama") not in reader.fields
    assert "token_embd.weight" not in {t.name for t in reader.tensors}


# -------------------------------------------------------------------------------------------------- identify
@pytest.mark.parametrize(("case", "factor"), [("llama-3.1-8b", 8.0), ("llama-3.2-1b", 32.0)])
def test_identify_names_the_converters_rope_freqs(case, factor):
    values = golden_tensors(case)["rope_freqs.weight"]
    result = identify_array(values, key="rope_freqs.weight")
    assert result.match is not None, [c.to_json() for c in result.nearest]
    command = result.match.command
    assert "--runtime llama.cpp" in command and "--scaling llama3" in command and "--arithmetic framework" in command
    assert f"--factor {factor}" in command and "--theta 500000.0" in command
    assert "--original-max-positions 8192" in command


def test_identify_names_exact_rope_freqs():
    values = posenc_cli.rope(config=CONFIGS / "llama-3.1-8b", runtime="llama.cpp").arrays["rope_freqs"]
    result = identify_array(values)
    assert result.match is not None and "--runtime llama.cpp" in result.match.command
    assert "--arithmetic" not in result.match.command


@pytest.mark.parametrize(
    "values",
    [
        np.array([1.0, np.nan, 8.0]),
        np.array([8.0, 4.0, 1.0]),
        np.array([1.0, 1.0]),
        np.array([1.0, 2.0, 1.5, 8.0]),
        np.array([1.0, 1e300]),
        np.array([1.0, -1.0]),
        np.ones((3, 4)),
        np.linspace(1, 8, 1 << 16),
    ],
)
def test_identify_reads_nothing_from_a_hostile_array(values):
    assert list(hypotheses(values)) == []
    with np.errstate(over="ignore"):
        identify_array(values.astype(np.float32))  # and the whole search stays bounded, without an error
