"""RoPE as the model configured it (issue #15): --config, --rotary-dim, --position-ids, M-RoPE, --layout half-width,
--longrope-pair. The caches against HF's own rotary classes are in test_rope_config_goldens.py; here each form is
checked against its definition written out independently, and the config reader against configs as published."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli import api
from posenc_cli.cli import cli
from posenc_cli.errors import FormatError, SpecError
from posenc_cli.kinds import KINDS
from posenc_cli.kinds.rope_config import rope_settings as read_settings
from tests.test_kinds import one_line


def rope_settings(path, layer_type=None):
    """The config reader, given the rope kind's parameter types as ``posenc rope`` gives them."""
    return read_settings(path, typed_as={p.name: p.type for p in KINDS["rope"].params}, layer_type=layer_type)


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def write(tmp_path, name: str, doc: dict) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(doc))
    return str(folder)


# --------------------------------------------------------------------------------------------- the forms
def test_rotary_dim_is_the_cache_of_the_first_dimensions():
    part = api.rope(16, 128, rotary_dim=32)
    whole = api.rope(16, 32)
    assert part.arrays["cos"].shape == (16, 32) and (part.arrays["cos"] == whole.arrays["cos"]).all()
    assert (part.params["head_dim"], part.params["rotary_dim"]) == (128, 32)
    for bad in (0, 3, 130, True):
        with pytest.raises(SpecError) as info:
            api.rope(4, 128, rotary_dim=bad)
        assert info.value.param == "rotary_dim"


def test_half_width_holds_each_frequency_once():
    half = api.rope(12, 64, scaling="linear", factor=2.0)
    width = api.rope(12, 64, scaling="linear", factor=2.0, layout="half-width")
    assert width.arrays["cos"].shape == (12, 32)
    assert (width.arrays["cos"] == half.arrays["cos"][:, :32]).all()
    assert (width.arrays["sin"] == half.arrays["sin"][:, 32:]).all()


def test_position_ids_are_the_rows_at_those_positions():
    ids = np.array([3, 4, 5, 0, 1, 2, 9, 9, 200])
    table = api.rope(head_dim=16, position_ids=ids)
    full = api.rope(201, 16)
    for part in ("cos", "sin"):
        assert (table.arrays[part] == full.arrays[part][ids]).all()
    assert table.params["seq_len"] == 9 and "position_ids_sha256" in table.params


def test_dynamic_scaling_at_position_ids_is_evaluated_at_the_largest_plus_one():
    """HF's dynamic_rope_update computes the base at max(position_ids) + 1."""
    ids = np.array([0, 5000, 10])
    table = api.rope(head_dim=32, position_ids=ids, scaling="dynamic", factor=2.0, max_positions=2048)
    full = api.rope(5001, 32, scaling="dynamic", factor=2.0, max_positions=2048)
    assert (table.arrays["cos"] == full.arrays["cos"][ids]).all()


def mrope_reference(caches: list[np.ndarray], section: list[int]) -> np.ndarray:
    """HF apply_multimodal_rotary_pos_emb: split the last axis by section * 2, chunk i from row i % 3."""
    bounds = np.cumsum(section * 2)[:-1]
    chunks = [np.split(c, bounds, axis=-1) for c in caches]
    return np.concatenate([chunks[i % 3][i] for i in range(len(section) * 2)], axis=-1)


def interleaved_reference(caches: list[np.ndarray], section: list[int]) -> np.ndarray:
    """HF (Qwen3-VL) apply_interleaved_mrope on the frequencies, then cat(freqs, freqs): t, h, w interleaved."""
    half = caches[0].shape[-1] // 2
    out = caches[0][:, :half].copy()
    for axis, offset in ((1, 1), (2, 2)):
        index = slice(offset, section[axis] * 3, 3)
        out[:, index] = caches[axis][:, :half][:, index]
    return np.concatenate([out, out], axis=-1)


@pytest.mark.parametrize(("section", "interleaved"), [([2, 3, 3], False), ([4, 2, 2], True), ([0, 4, 4], False)])
def test_mrope_recomposes_the_three_caches_as_hf_does(section, interleaved):
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 50, size=(3, 20))
    table = api.rope(head_dim=16, position_ids=ids, mrope_section=section, mrope_interleaved=interleaved)
    full = api.rope(50, 16)
    for part in ("cos", "sin"):
        caches = [full.arrays[part][ids[a]] for a in range(3)]
        want = interleaved_reference(caches, section) if interleaved else mrope_reference(caches, section)
        assert (table.arrays[part] == want).all(), part


def test_mrope_refusals():
    with pytest.raises(SpecError, match="add up"):
        api.rope(head_dim=16, position_ids=np.zeros((3, 4), int), mrope_section=[2, 2, 2])
    with pytest.raises(SpecError, match=r"\(3, seq\)"):
        api.rope(head_dim=16, position_ids=np.zeros((2, 4), int), mrope_section=[2, 3, 3])
    text = api.rope(head_dim=16, position_ids=np.arange(5), mrope_section=[2, 3, 3])  # (seq,): every axis alike
    assert (text.arrays["cos"] == api.rope(5, 16).arrays["cos"]).all()
    with pytest.raises(SpecError, match="integers"):
        api.rope(head_dim=16, position_ids=np.zeros(4))
    with pytest.raises(SpecError, match="0 to"):
        api.rope(head_dim=16, position_ids=np.array([-1, 0]))


def test_longrope_pair_is_both_caches():
    h = 8
    kw = dict(scaling="longrope", original_max_positions=64, max_positions=256,
              short_factor=[1.0 + k / 10 for k in range(h)], long_factor=[2.0 + k for k in range(h)])  # fmt: skip
    pair = api.rope(16, 2 * h, longrope_pair=True, **kw)
    short, long = api.rope(16, 2 * h, **kw), api.rope(100, 2 * h, **kw)
    assert {"cos_short", "sin_short", "inv_freq_short", "cos_long", "sin_long", "inv_freq_long"} == set(pair.arrays)
    assert (pair.arrays["cos_short"] == short.arrays["cos"]).all()
    assert (pair.arrays["cos_long"] == long.arrays["cos"][:16]).all()
    assert (pair.arrays["inv_freq_long"] == long.arrays["inv_freq"]).all()
    with pytest.raises(SpecError) as info:
        api.rope(16, 8, longrope_pair=True)
    assert info.value.param == "longrope_pair"


@pytest.mark.parametrize(("rotary_dim", "factor"), [(16, None), (32, 8.0), (None, 2.0)])
def test_proportional_rotates_the_first_frequencies_over_head_dim_and_leaves_the_rest(rotary_dim, factor):
    """HF's _compute_proportional_rope_parameters: theta**(-2k/head_dim)/factor for k < rotary_dim/2, then 0."""
    table = api.rope(10, 64, scaling="proportional", rotary_dim=rotary_dim, factor=factor)
    angles = (rotary_dim or 64) // 2
    linear = api.rope(10, 64, scaling="linear", factor=factor or 1.0)
    cos, sin = table.arrays["cos"], table.arrays["sin"]
    assert cos.shape == (10, 64)
    for half in (0, 32):
        rotated = slice(half, half + angles)
        assert (cos[:, rotated] == linear.arrays["cos"][:, rotated]).all()
        assert (sin[:, rotated] == linear.arrays["sin"][:, rotated]).all()
        assert (cos[:, half + angles : half + 32] == 1).all() and (sin[:, half + angles : half + 32] == 0).all()
    assert (table.arrays["inv_freq"][angles:] == 0).all()
    assert (table.arrays["inv_freq"][:angles] == linear.arrays["inv_freq"][:angles]).all()


def test_proportional_from_a_config(tmp_path):
    rope = {"rope_type": "proportional", "rope_theta": 1e6, "partial_rotary_factor": 0.25}
    doc = {"model_type": "gemma4_text", "head_dim": 64, "max_position_embeddings": 8, "rope_parameters": rope}
    table = api.rope(config=write(tmp_path, "g4", doc))
    assert table.params["scaling"] == "proportional" and table.params["rotary_dim"] == 16
    assert table.arrays["cos"].shape == (8, 64)


# --------------------------------------------------------------------------------------------- config.json
LLAMA31 = {
    "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "layer_type", "want"),
    [
        (LLAMA31, None, {"head_dim": 128, "theta": 500000.0, "scaling": "llama3", "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_positions": 8192}),
        ({"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 32768,
          "rope_theta": 1000000.0, "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768,
                                                    "type": "yarn"}},
         None, {"head_dim": 128, "scaling": "yarn", "factor": 4.0, "original_max_positions": 32768}),
        ({"model_type": "gpt_neox", "hidden_size": 768, "num_attention_heads": 12, "rotary_pct": 0.25,
          "rotary_emb_base": 10000, "max_position_embeddings": 2048},
         None, {"head_dim": 64, "rotary_dim": 16, "theta": 10000.0, "scaling": "none"}),
        ({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4,
          "rope_theta": 10000.0, "max_position_embeddings": 2048},
         None, {"head_dim": 80, "rotary_dim": 32}),
        ({"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
          "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
          "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 48, "long_factor": [2.0] * 48}},
         None, {"scaling": "longrope", "original_max_positions": 4096, "max_positions": 131072}),
        ({"model_type": "gemma3_text", "head_dim": 256, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
          "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "max_position_embeddings": 131072},
         "full_attention", {"head_dim": 256, "theta": 1000000.0, "scaling": "linear", "factor": 8.0}),
        ({"model_type": "gemma3_text", "head_dim": 256, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
          "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "max_position_embeddings": 131072},
         "sliding_attention", {"theta": 10000.0, "scaling": "none"}),
        ({"model_type": "gemma3_text", "head_dim": 256, "max_position_embeddings": 32768,
          "layer_types": ["sliding_attention", "full_attention"],
          "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                              "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}},
         "full_attention", {"theta": 1e6, "scaling": "linear", "factor": 8.0}),
        ({"model_type": "deepseek_v2", "hidden_size": 2048, "num_attention_heads": 16, "qk_rope_head_dim": 64,
          "max_position_embeddings": 163840, "rope_theta": 10000,
          "rope_scaling": {"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1, "mscale": 0.707,
                           "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096}},
         None, {"head_dim": 64, "scaling": "yarn", "factor": 40, "mscale": 0.707, "original_max_positions": 4096}),
        ({"model_type": "qwen2_vl", "hidden_size": 1536, "num_attention_heads": 12, "rope_theta": 1000000.0,
          "max_position_embeddings": 32768, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
         None, {"head_dim": 128, "scaling": "none", "mrope_section": (16, 24, 24)}),
        ({"model_type": "qwen3_vl", "text_config": {"head_dim": 128, "rope_theta": 5000000,
          "max_position_embeddings": 262144, "rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20],
                                                              "mrope_interleaved": True}}},
         None, {"head_dim": 128, "mrope_section": (24, 20, 20), "mrope_interleaved": True}),
    ],
)  # fmt: skip
def test_configs_as_published_give_hfs_settings(tmp_path, doc, layer_type, want):
    got = rope_settings(write(tmp_path, "m", doc), layer_type=layer_type)
    for key, value in want.items():
        assert got.settings.get(key) == value, (key, got.settings)
    assert got.seq_len == (doc.get("text_config") or doc)["max_position_embeddings"]
    assert all(isinstance(f, str) for f in got.fields) and got.fields


@pytest.mark.parametrize(
    ("doc", "layer_type", "fragment"),
    [
        ({"model_type": "bert", "hidden_size": 768}, None, "no RoPE fields"),
        ({"rope_theta": 1e4, "head_dim": 64, "rope_scaling": {"rope_type": "axial"}}, None, "'axial'"),
        ({"rope_theta": 1e4, "head_dim": 64, "rope_local_base_freq": 1e4}, None, "--layer-type"),
        ({"rope_theta": 1e4, "head_dim": 64}, "full_attention", "one"),
        ({"rope_theta": 1e4, "head_dim": 64, "rope_local_base_freq": 1e4}, "global", "one of"),
        ({"rope_theta": "big", "head_dim": 64}, None, "rope_theta"),
        ({"rope_theta": 1e4, "hidden_size": 64}, None, "head_dim"),
    ],
)
def test_configs_posenc_cannot_read_are_one_line(tmp_path, doc, layer_type, fragment):
    with pytest.raises(SpecError, match=fragment):
        rope_settings(write(tmp_path, "m", doc), layer_type=layer_type)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (b'{"rope_theta": NaN, "head_dim": 64}', "NaN"),
        (b'{"rope_theta": 1e4, "rope_theta": 2e4, "head_dim": 64}', "twice"),
        (b"[1, 2]", "JSON object"),
        (b"\xff\xfe", "valid"),
        (b"[" * 100 + b"]" * 100, "nest"),
        (b'{"a": "' + b"x" * (1 << 20) + b'"}', "larger"),
    ],
)
def test_a_hostile_config_is_refused(tmp_path, text, fragment):
    """Whatever is wrong with the file posenc was pointed at is a bad --config: exit 2, as any bad value (#25)."""
    (tmp_path / "config.json").write_bytes(text)
    with pytest.raises(SpecError, match=fragment) as info:
        rope_settings(tmp_path)
    assert info.value.param == "config"
    one_line(run("rope", "--config", tmp_path, "-o", tmp_path / "x.npz"), 2, "--config", fragment)
    assert not (tmp_path / "x.npz").exists()


def test_a_fifo_config_is_refused(tmp_path):
    os.mkfifo(tmp_path / "config.json")
    with pytest.raises(SpecError, match="regular file"):
        rope_settings(tmp_path)


def test_a_config_that_cannot_be_read_is_a_failure_not_a_bad_option(tmp_path, monkeypatch):
    """An I/O error reading the config is no mistake in the command: exit 1, and still one line."""
    path = write(tmp_path, "m", LLAMA31)

    def failing(*args, **kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("posenc_cli.kinds.rope_config.open_regular", failing)
    with pytest.raises(FormatError, match="Input/output error"):
        rope_settings(path)
    one_line(run("rope", "--config", path, "-o", tmp_path / "x.npz"), 1, "Input/output error")


def test_cli_config_flags_override_and_the_table_records_the_fields(tmp_path):
    folder = write(tmp_path, "llama", LLAMA31)
    out = tmp_path / "r.npz"
    assert run("rope", "--config", folder, "-n", 32, "-o", out).exit_code == 0
    table = api.load(out)
    assert table.params["scaling"] == "llama3" and table.params["theta"] == 500000.0
    assert "rope_scaling.low_freq_factor" in str(table.params["config_fields"])
    direct = api.rope(32, 128, theta=500000.0, scaling="llama3", factor=8.0, original_max_positions=8192,
                      low_freq_factor=1.0, high_freq_factor=4.0)  # fmt: skip
    assert (table.arrays["cos"] == direct.arrays["cos"]).all()
    assert run("verify", out).exit_code == 0  # every value recorded: regenerated without the config
    over = tmp_path / "o.npz"
    assert run("rope", "--config", folder, "-n", 8, "--scaling", "none", "--theta", 10000, "-o", over).exit_code == 0
    assert (api.load(over).arrays["cos"] == api.rope(8, 128).arrays["cos"]).all()
    one_line(run("rope", "--config", tmp_path, "-n", 4, "-o", tmp_path / "x.h"), 2, "config.json", "does not exist")


def rope_definition(n: int, dim: int, theta: float, layout: str) -> np.ndarray:
    """cos of RoPE's angles ``p * theta ** (-2k / dim)`` in float64, column ``j`` taking frequency ``k``:
    ``j % (dim/2)`` (half), ``j // 2`` (interleaved) or ``j`` (half-width, one column per frequency)."""
    inv = theta ** (-np.arange(0, dim, 2) / dim)
    k = {"half": np.arange(dim) % (dim // 2), "interleaved": np.arange(dim) // 2, "half-width": np.arange(dim // 2)}
    return np.cos(np.arange(n)[:, None] * inv[k[layout]][None, :])


COHERE = {"model_type": "cohere", "hidden_size": 8192, "num_attention_heads": 64, "rope_theta": 8000000.0,
          "max_position_embeddings": 8192}  # fmt: skip


@pytest.mark.parametrize(
    ("model_type", "layout"),
    [("cohere", "interleaved"), ("cohere2", "interleaved"), ("glm", "interleaved"), ("glm4", "interleaved"),
     ("gpt_oss", "half-width"), ("llama4_text", "half-width"), ("deepseek_v2", "half-width"),
     ("glm4_moe", None), ("deepseek_v3", None), ("llama", None)],
)  # fmt: skip
def test_the_layout_follows_the_model_type_as_its_modeling_file_builds_the_cache(tmp_path, model_type, layout):
    """Cohere's rotary class repeat_interleaves; GLM/GLM-4's apply_rotary_pos_emb interleaves the first half of
    its cache (GLM-4.5's glm4_moe does not); gpt-oss returns (seq, dim/2); Llama 4 and DeepSeek-V2 return complex
    freqs_cis, one value per frequency; every other type is rotate_half's half layout (no setting)."""
    doc = {**COHERE, "model_type": model_type}
    got = rope_settings(write(tmp_path, "m", doc))
    assert got.settings.get("layout") == layout
    assert ("model_type" in got.fields) == (layout is not None)
    nested = rope_settings(write(tmp_path, "v", {"model_type": "llama4", "text_config": doc}))
    assert nested.settings.get("layout") == layout  # a multimodal config's text_config names its own type


def test_a_layout_given_overrides_the_model_types(tmp_path):
    folder = write(tmp_path, "cohere", COHERE)
    theirs, ours = tmp_path / "c.npz", tmp_path / "h.npz"
    assert run("rope", "--config", folder, "-n", 16, "-o", theirs).exit_code == 0
    assert run("rope", "--config", folder, "-n", 16, "--layout", "half", "-o", ours).exit_code == 0
    for out, layout in ((theirs, "interleaved"), (ours, "half")):
        table = api.load(out)
        assert table.params["layout"] == layout
        assert np.abs(table.arrays["cos"] - rope_definition(16, 128, 8e6, layout)).max() < 1e-7
        assert run("verify", out).exit_code == 0  # the layout is recorded: regenerated without the config
    assert api.rope(4, config=folder, layout="half-width").arrays["cos"].shape == (4, 64)


#: Falcon-7b's config.json as published: no RoPE field at all.
FALCON = {"model_type": "falcon", "alibi": False, "hidden_size": 4544, "num_attention_heads": 71,
          "multi_query": True, "new_decoder_architecture": False, "parallel_attn": True}  # fmt: skip


def test_a_config_without_rope_fields_takes_its_model_classs_defaults(tmp_path):
    """FalconConfig: rope_theta 10000 (transformers' RoPE default), max_position_embeddings 2048, head_dim
    hidden_size // num_attention_heads."""
    folder = write(tmp_path, "falcon", FALCON)
    got = rope_settings(folder)
    assert (got.settings["theta"], got.settings["head_dim"], got.seq_len) == (10000.0, 64, 2048)
    assert "falcon default rope_theta" in got.fields and "falcon default max_position_embeddings" in got.fields
    table = api.rope(config=folder)
    assert table.arrays["cos"].shape == (2048, 64)
    assert np.abs(table.arrays["cos"] - rope_definition(2048, 64, 1e4, "half")).max() < 1e-7


@pytest.mark.parametrize(("alibi", "fragment"), [(True, "alibi is true"), ("yes", "alibi must be")])
def test_a_falcon_config_with_alibi_has_no_rope_and_is_refused(tmp_path, alibi, fragment):
    folder = write(tmp_path, "falcon", {**FALCON, "alibi": alibi})
    with pytest.raises(SpecError, match=fragment) as info:
        rope_settings(folder)
    assert info.value.param == "config"
    one_line(run("rope", "--config", folder, "-n", 4, "-o", tmp_path / "x.npz"), 2, "--config", "alibi")
    assert not (tmp_path / "x.npz").exists()


def test_the_default_length_is_the_configs_max_position_embeddings(tmp_path):
    doc = {"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 4, "rotary_pct": 0.5,
           "rotary_emb_base": 10000, "max_position_embeddings": 40}  # fmt: skip
    table = api.rope(config=write(tmp_path, "neox", doc))
    assert table.arrays["cos"].shape == (40, 8)


def test_a_manifest_takes_config_beside_it_and_its_depfile_lists_it(tmp_path):
    write(tmp_path, "llama", LLAMA31)
    manifest = tmp_path / "posenc.toml"
    manifest.write_text('[[table]]\ncommand = "rope"\noutput = "r.h"\nconfig = "llama/config.json"\nseq_len = 8\n')
    depfile = tmp_path / "posenc.d"
    result = run("build", manifest, "--depfile", depfile)
    assert result.exit_code == 0, result.output
    assert "llama/config.json" in depfile.read_text()
    assert api.load(tmp_path / "r.h").params["scaling"] == "llama3"


def test_a_bad_value_in_the_config_names_the_config(tmp_path):
    doc = {"rope_theta": 1e4, "head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": "abc"}}
    folder = write(tmp_path, "bad", doc)
    line = one_line(run("rope", "--config", folder, "-n", 4, "-o", tmp_path / "x.npz"), 2, "--config", "factor")
    assert "the config's rope_scaling.factor must be a number with 1e-6 <= x <= 1e6, got 'abc'" in line
    with pytest.raises(SpecError) as info:
        api.rope(4, "x")  # type: ignore[arg-type]
    assert info.value.param == "head_dim"


@pytest.mark.parametrize(
    ("make", "code", "fragment"),
    [
        (lambda d: np.save(d / "ids.npy", np.array([0.5, 1.0])), 2, "integers"),
        (lambda d: np.savez(d / "ids.npz", a=np.arange(3), b=np.arange(3)), 2, "holds 2 arrays"),
        (lambda d: (d / "ids.npy").write_bytes(b"\x93NUMPY junk"), 1, "ids.npy"),
        (lambda d: os.mkfifo(d / "ids.npy"), 1, "regular file"),
        (lambda d: None, 2, "does not exist"),
    ],
)
def test_a_hostile_position_ids_file_is_refused_in_one_line(tmp_path, make, code, fragment):
    make(tmp_path)
    name = "ids.npz" if (tmp_path / "ids.npz").exists() else "ids.npy"
    out = tmp_path / "r.npz"
    one_line(run("rope", "--head-dim", 8, "--position-ids", tmp_path / name, "-o", out), code, fragment)
    assert not out.exists()


def test_a_manifest_config_outside_its_folder_is_refused(tmp_path):
    write(tmp_path, "llama", LLAMA31)
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "posenc.toml").write_text(
        '[[table]]\ncommand = "rope"\noutput = "r.h"\nconfig = "../llama"\nseq_len = 4\n'
    )
    one_line(run("build", inner / "posenc.toml"), 2, "config", "outside")
    assert not (inner / "r.h").exists()


def test_a_manifest_entry_whose_config_is_not_json_exits_2_and_writes_nothing(tmp_path):
    (tmp_path / "bad.json").write_text("{bad")
    (tmp_path / "posenc.toml").write_text(
        '[[table]]\ncommand = "generate"\noutput = "g.npy"\nseq_len = 4\nd_model = 4\n'
        '[[table]]\ncommand = "rope"\noutput = "r.npz"\nconfig = "bad.json"\nseq_len = 4\n'
    )
    line = one_line(run("build", tmp_path / "posenc.toml"), 2, "table #2", "bad.json", "is not valid UTF-8 JSON")
    assert "Traceback" not in line and not (tmp_path / "g.npy").exists() and not (tmp_path / "r.npz").exists()


def test_an_error_is_blamed_on_the_config_only_for_what_the_config_gave(tmp_path):
    """YaRN's factor derived from the config's lengths is the config's fault (the option was never given); a
    missing length that the config could have given but did not is the command's (--seq-len)."""
    short = write(
        tmp_path,
        "short",
        {
            "rope_theta": 1e4,
            "head_dim": 64,
            "max_position_embeddings": 8,
            "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 4096},
        },
    )
    one_line(run("rope", "--config", short, "-o", tmp_path / "x.npz"), 2, "'--config'", "factor must be at least 1")
    bare = write(tmp_path, "bare", {"rope_theta": 1e4, "head_dim": 64})
    line = one_line(run("rope", "--config", bare, "-o", tmp_path / "x.npz"), 2, "--seq-len", "rope needs seq_len")
    assert "from the config" not in line
    odd = write(
        tmp_path,
        "odd",
        {"rope_theta": 1e4, "head_dim": 64, "max_position_embeddings": 8, "partial_rotary_factor": 0.25 + 1 / 64},
    )  # int(64 * p) = 17: not a pair
    one_line(run("rope", "--config", odd, "-o", tmp_path / "x.npz"), 2, "'--config'", "rotary_dim must be even")
