"""``--runtime onnxruntime-genai`` through the files and the op that read its caches: ``.npz``, ``.safetensors`` and
``.onnx`` hold the builder's names and shapes; the ``.onnx`` merged into a graph of ONNX Runtime's com.microsoft
``RotaryEmbedding`` (``onnx.checker`` passing) rotates a random query as a numpy rotation written out here does (the
half and the interleaved pairing, a partial rotary head, LongRoPE's small cache); ``identify`` names the builder's
own cache (a golden) and posenc's; what the builder does not make is refused, naming the option.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import onnxruntime as ort  # the test extra declares it: never skipped
import pytest
from click.testing import CliRunner

from posenc_cli import api
from posenc_cli.cli import cli
from posenc_cli.errors import SpecError
from posenc_cli.identification import identify_array

onnx = pytest.importorskip("onnx")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

GOLDENS = Path(__file__).parent / "goldens" / "runtimes" / "onnxruntime_genai"
CONFIGS = Path(__file__).parent / "goldens" / "rope_config" / "configs"
RUNTIME = ["--runtime", "onnxruntime-genai"]


def run(*args: str) -> None:
    result = CliRunner().invoke(cli, [*args, "-q"])
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------------------------------------------- files
@pytest.mark.parametrize("suffix", [".npz", ".safetensors", ".onnx"])
def test_files_hold_the_builders_arrays(tmp_path, suffix):
    out = tmp_path / f"caches{suffix}"
    run("rope", "--config", str(CONFIGS / "phi-3-mini-128k"), "-n", "8192", "--max-positions", "8192", *RUNTIME,
        "--dtype", "float16", "-o", str(out))  # fmt: skip
    want = {"cos_cache_small": (4096, 48), "sin_cache_small": (4096, 48), "cos_cache_large": (8192, 48),
            "sin_cache_large": (8192, 48)}  # fmt: skip
    if suffix == ".npz":
        with np.load(out) as z:
            arrays = {k: z[k] for k in z.files}
    elif suffix == ".safetensors":
        arrays = safetensors_numpy.load_file(out)
    else:
        model = onnx.load(out)
        onnx.checker.check_model(model, full_check=True)
        assert [o.name for o in model.graph.output] == [i.name for i in model.graph.initializer]
        arrays = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
        assert {i.name: i.data_type for i in model.graph.initializer} == dict.fromkeys(want, onnx.TensorProto.FLOAT16)
    assert {k: v.shape for k, v in arrays.items()} == want
    assert all(v.dtype == np.float16 for v in arrays.values())
    table = api.rope(config=CONFIGS / "phi-3-mini-128k", seq_len=8192, max_positions=8192, runtime="onnxruntime-genai",
                     dtype="float16")  # fmt: skip
    assert all(np.array_equal(arrays[k], np.asarray(table.arrays[k])) for k in want)


# ----------------------------------------------------------------------------------- ONNX Runtime's own op
def nearest32(x: Fraction) -> np.float32:
    """``x`` rounded to float32, ties to even (the reference's one rounding of an exact value)."""
    guess = np.float32(float(x))
    near = (guess, np.nextafter(guess, np.float32(-np.inf)), np.nextafter(guess, np.float32(np.inf)))
    return min(near, key=lambda v: (abs(Fraction(float(v)) - x), int(np.array(v).view(np.uint32)) & 1))


def rotated(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary: int, interleaved: bool, fused: bool) -> np.ndarray:
    """The RoPE rotation of each head of ``x`` (batch, seq, heads, head) by ``cos``/``sin`` (batch, seq, rotary/2):
    pairs ``(x[i], x[i + r/2])`` (half) or ``(x[2i], x[2i + 1])`` (interleaved), ``a cos - b sin`` and ``b cos + a
    sin`` in float32; ``fused``: each first product exact (one fused multiply-add, MLAS's AVX2 kernel)."""
    out = x.copy()
    first = np.s_[..., 0:rotary:2] if interleaved else np.s_[..., : rotary // 2]
    second = np.s_[..., 1:rotary:2] if interleaved else np.s_[..., rotary // 2 : rotary]
    a, b, c, s = x[first], x[second], cos[:, :, None, :], sin[:, :, None, :]
    if not fused:
        out[first], out[second] = a * c - b * s, b * c + a * s
        return out
    bs, bc = (b * s).ravel(), (b * c).ravel()
    ac, as_ = np.broadcast_arrays(a, c)[0].ravel(), np.broadcast_arrays(a, s)[0].ravel()
    cc, ss = np.broadcast_to(c, a.shape).ravel(), np.broadcast_to(s, a.shape).ravel()
    out[first] = np.array([nearest32(Fraction(float(p)) * Fraction(float(q)) - Fraction(float(r)))
                           for p, q, r in zip(ac, cc, bs, strict=True)], np.float32).reshape(a.shape)  # fmt: skip
    out[second] = np.array([nearest32(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)))
                            for p, q, r in zip(as_, ss, bc, strict=True)], np.float32).reshape(a.shape)  # fmt: skip
    return out


ROTATIONS = {
    "llama-like": (["-n", "64", "--head-dim", "64", "--theta", "500000"], "", 64, 64),
    "phi-2-partial": (["--config", str(CONFIGS / "phi-2"), "-n", "64"], "", 80, 32),
    "phi-3-small-cache": (
        ["--config", str(CONFIGS / "phi-3-mini-128k"), "-n", "8192", "--max-positions", "8192"],
        "_small",
        96,
        96,
    ),  # fmt: skip
}


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("name", list(ROTATIONS))
def test_rotary_embedding_op_rotates_with_the_caches(tmp_path, name, interleaved):
    options, suffix, head, rotary = ROTATIONS[name]
    path = tmp_path / "caches.onnx"
    run("rope", *options, *RUNTIME, "-o", str(path))
    caches = onnx.load(path)
    shapes = {i.name: list(i.dims) for i in caches.graph.initializer}
    cos_name, sin_name = "cos_cache" + suffix, "sin_cache" + suffix
    rows = shapes[cos_name][0]
    batch, seq, heads = 2, 5, 3
    h = onnx.helper
    value = h.make_tensor_value_info
    partial = rotary if rotary < head else 0  # the builder's rotary_embedding_dim: 0 for a whole head
    node = h.make_node("RotaryEmbedding", ["x", "position_ids", "cos", "sin"], ["y"], domain="com.microsoft",
                       interleaved=interleaved, num_heads=heads, rotary_embedding_dim=partial)  # fmt: skip
    graph = h.make_graph(
        [node], "rotate",
        [value("x", onnx.TensorProto.FLOAT, [batch, seq, heads * head]),
         value("position_ids", onnx.TensorProto.INT64, [batch, seq]),
         value("cos", onnx.TensorProto.FLOAT, shapes[cos_name]),
         value("sin", onnx.TensorProto.FLOAT, shapes[sin_name])],
        [value("y", onnx.TensorProto.FLOAT, [batch, seq, heads * head])],
    )  # fmt: skip
    opsets = [h.make_opsetid("", caches.opset_import[0].version), h.make_opsetid("com.microsoft", 1)]
    rotate = h.make_model(graph, opset_imports=opsets, ir_version=caches.ir_version)
    merged = onnx.compose.merge_models(caches, rotate, io_map=[(cos_name, "cos"), (sin_name, "sin")])
    onnx.checker.check_model(merged, full_check=True)
    session = ort.InferenceSession(merged.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(29)
    x = rng.standard_normal((batch, seq, heads * head)).astype(np.float32)
    ids = rng.integers(0, rows, (batch, seq)).astype(np.int64)
    (y,) = session.run(["y"], {"x": x, "position_ids": ids})
    tables = {i.name: onnx.numpy_helper.to_array(i) for i in caches.graph.initializer}
    cos, sin = tables[cos_name][ids], tables[sin_name][ids]
    heads_x = x.reshape(batch, seq, heads, head)
    made = {fused: rotated(heads_x, cos, sin, rotary, bool(interleaved), fused).reshape(x.shape) for fused in (1, 0)}
    assert np.array_equal(y, made[1]) or np.array_equal(y, made[0])  # with or without a fused multiply-add
    assert not np.array_equal(y, x)


# ------------------------------------------------------------------------------------------------- identify
def test_identify_names_the_builders_own_cache(tmp_path):
    """Phi-2's whole float32 cos and sin caches as the builder made them (a golden): the runtime's names, with
    the builder's float32 arithmetic."""
    with np.load(GOLDENS / "phi-2_float32.npz") as z:
        assert np.array_equal(z["cos_cache_rows"], np.arange(2048))
        stored = {part: z[part] for part in ("cos_cache", "sin_cache")}
    for part, values in stored.items():
        match = identify_array(values, key=part).match
        assert match is not None
        assert "--runtime onnxruntime-genai" in match.command and "--arithmetic framework" in match.command
        assert f"--part {part}" in match.command and "--seq-len 2048" in match.command
        assert match.comparison.agreement.startswith("framework")
        params = {k: v for k, v in match.hypothesis.values.items() if k != "arithmetic"}
        again = np.asarray(api.rope(**params, arithmetic="framework").arrays[part])
        off = np.abs(again.astype(np.float64) - values)
        assert off.max() <= 2 * 2.0**-24 and (again == values).mean() >= 0.7


@pytest.mark.parametrize(
    "settings, names",
    [
        (dict(seq_len=4096, head_dim=64, scaling="linear", factor=2.5, theta=1e6), ("cos_cache", "sin_cache")),
        (
            dict(
                seq_len=16384,
                head_dim=64,
                theta=150000.0,
                scaling="yarn",
                factor=4.0,
                original_max_positions=4096,
                beta_fast=32.0,
                beta_slow=1.0,
            ),
            ("cos_cache",),
        ),  # fmt: skip
        (dict(config=CONFIGS / "phi-3-mini-128k", seq_len=16384, max_positions=16384), ("cos_cache_small",)),
    ],
)
def test_identify_names_posencs_runtime_caches(settings, names):
    table = api.rope(**settings, runtime="onnxruntime-genai")
    for name in names:
        values = np.asarray(table.arrays[name])
        match = identify_array(values, key=name).match
        assert match is not None and "--runtime onnxruntime-genai" in match.command, name
        again = np.asarray(api.rope(**match.hypothesis.values).arrays[name])
        # LongRoPE's factors are read back as the simplest numbers their columns allow: a few entries a unit off
        assert (again == values).mean() >= 0.99 and np.abs(again - values).max() <= 2.0**-20, name


def test_a_short_half_width_table_keeps_posencs_own_name():
    values = np.asarray(api.rope(64, 64, layout="half-width").arrays["cos"])
    match = identify_array(values).match
    assert match is not None and "--layout half-width" in match.command and "--runtime" not in match.command


@pytest.mark.parametrize(
    "garbage",
    [
        np.full((4096, 32), np.nan, np.float32),
        np.zeros((2048, 1), np.float32),
        np.random.default_rng(1).standard_normal((1024, 16)).astype(np.float32),
    ],
)
def test_identify_reads_nothing_into_hostile_arrays(garbage):
    result = identify_array(garbage)
    assert result.match is None


# -------------------------------------------------------------------------------------------------- refused
#: A YaRN cache the builder makes (every field it needs given); each refusal below changes one thing.
_YARN = dict(
    seq_len=16384, head_dim=64, scaling="yarn", factor=4.0, original_max_positions=4096, beta_fast=32.0, beta_slow=1.0
)
REFUSED = [
    (dict(seq_len=4096, head_dim=64, scaling="dynamic", factor=2.0, max_positions=2048), "scaling"),
    (dict(seq_len=4096, head_dim=64, scaling="proportional", rotary_dim=32), "scaling"),
    (dict(seq_len=16384, head_dim=64, scaling="yarn", factor=4.0, original_max_positions=4096), "beta_fast"),
    ({**{k: v for k, v in _YARN.items() if k != "factor"}, "max_positions": 16384}, "factor"),
    ({**_YARN, "attention_factor": 1.2}, "attention_factor"),
    ({**_YARN, "truncate": True}, "truncate"),
    ({**_YARN, "rotary_dim": 32}, "rotary_dim"),
    ({**_YARN, "beta_fast": 1000.0}, "beta_fast"),
    ({**_YARN, "attention_scaling": False}, "attention_scaling"),
    (dict(config=CONFIGS / "phi-3-mini-128k", factor=32.0), "factor"),
    (dict(config=CONFIGS / "phi-3-mini-128k", seq_len=4096, max_positions=4096), "seq_len"),
    (dict(config=CONFIGS / "phi-3-mini-128k", seq_len=8192), "seq_len"),
    (dict(config=CONFIGS / "gemma-3-1b-it", layer_type="full_attention"), "layer_type"),
    (dict(seq_len=1, head_dim=64), "seq_len"),
    (dict(head_dim=64), "seq_len"),
    (dict(seq_len=64, head_dim=64, arithmetic="ggml"), "arithmetic"),
    (dict(head_dim=64, position_ids=[0, 1, 2]), "position_ids"),
    (dict(seq_len=64, head_dim=64, xpos_scale_base=512), "xpos_scale_base"),
]


@pytest.mark.parametrize("settings, param", REFUSED)
def test_what_the_builder_does_not_make_is_refused(settings, param):
    with pytest.raises(SpecError) as raised:
        api.rope(**settings, runtime="onnxruntime-genai")
    assert raised.value.param == param, str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_refusal_on_the_command_line_is_a_usage_error(tmp_path):
    out = tmp_path / "x.npz"
    result = CliRunner().invoke(cli, ["rope", "-n", "64", "--head-dim", "64", "--scaling", "dynamic", "--factor", "2",
                                      "--max-positions", "32", *RUNTIME, "-o", str(out)])  # fmt: skip
    assert result.exit_code == 2 and "onnxruntime-genai" in result.output and not out.exists()


def test_the_record_regenerates_the_caches(tmp_path):
    """The parameters written beside the arrays make them again (mscale alone recorded as mscale)."""
    config = tmp_path / "config.json"
    goldens = json.loads((GOLDENS / "manifest.json").read_text())["goldens"]
    config.write_text(json.dumps(next(g["config"] for g in goldens if g["file"] == "yarn-mscale-only_float32.npz")))
    for source in (dict(config=config, seq_len=8192), dict(config=CONFIGS / "phi-4-mini", seq_len=8192,
                                                            max_positions=8192)):  # fmt: skip
        table = api.rope(**source, runtime="onnxruntime-genai", arithmetic="framework")
        params = {k: v for k, v in table.params.items() if k not in ("config_fields",)}
        out = tmp_path / "t.npz"
        run("rope", "--config", str(source["config"]), *[f"--{k.replace('_', '-')}={v}" for k, v in source.items()
                                                          if k != "config"], *RUNTIME, "--arithmetic", "framework",
            "-o", str(out))  # fmt: skip
        result = CliRunner().invoke(cli, ["verify", str(out)])
        assert result.exit_code == 0, result.output
        assert params["runtime"] == "onnxruntime-genai" and params["layout"] == "half-width"
