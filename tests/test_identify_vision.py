"""``posenc identify`` on the vision tables (posenc_cli/identification/_vision.py, _axial.py): 2-D sincos, DETR's sine
embedding, and the axial RoPE caches of Pixtral, Qwen2-VL, Qwen2.5-VL and FLUX.

The honest tests are the frameworks' own outputs: transformers' and diffusers' axial RoPE caches
(tests/goldens/axial_rope/, with the parameters its manifest records), transformers' DETR embeddings
(tests/goldens/detr/, the parameters of make_detr_goldens.py's CASES) and MAE's/diffusers' 2-D sincos
(tests/goldens/sincos2d_*.npz, in test_identify.py). Each is identified with the parameters the framework was
called with, and the command identify gives, run through the CLI, makes the framework's table again: bit-identical,
or nearly (docs/identify.md: 70 % bit-identical, every entry within 4 ulps).

Where the claim is identify's own (a table posenc wrote, stored as a checkpoint stores it, is named by the command
that writes it again bit-identically), the tables are made with posenc's API. A table "computed on a GPU" is
simulated from posenc's framework table: a GPU's float32 ``sinf``/``cosf`` is a function (the same argument gives
the same value, so a table's repeated values stay equal) about an ulp from correctly rounded, so a random 10-30 % of
each column's distinct values are moved by one ulp, every value of the same argument alike; ``sin 0 = 0`` and
``cos 0 = 1`` are exact on every platform and stay. The hostile tables (random, constant, NaN, and ones built to
pass a reading's structure checks) give no match, and their work is counted, never timed.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import h5py
import numpy as np
import pytest
import safetensors.numpy
from click.testing import CliRunner

from posenc_cli.cli import cli
from posenc_cli.identification import WORK_FLOOR, WORK_PER_ENTRY, Identifier, identify, identify_array
from posenc_cli.identification._vision import SINCOS2D_LAYOUTS, Columns, Layout, sincos2d_hypotheses
from posenc_cli.kinds import KINDS

GOLDENS = Path(__file__).parent / "goldens"
AXIAL = GOLDENS / "axial_rope"


def npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in float32 steps (monotone integer order of the bit patterns)."""

    def order(x: np.ndarray) -> np.ndarray:
        b = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(b < 0, -(b & 0x7FFFFFFF), b)

    return np.abs(order(got) - order(want))


def regenerated(tmp_path: Path, command: str) -> np.ndarray:
    """The table the reported command writes, run through the CLI."""
    words = shlex.split(command)
    assert words[0] == "posenc" and words[-2] == "-o"
    out = tmp_path / "regenerated.npy"
    result = CliRunner().invoke(cli, [*words[1:-2], "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    return np.load(out)


def assert_nearly(ours: np.ndarray, golden: np.ndarray) -> None:
    off = ulps(ours.reshape(golden.shape), golden)
    assert off.max() <= 4 and np.mean(off == 0) >= 0.7, (int(off.max()), float(np.mean(off == 0)))


def on_a_gpu(table: np.ndarray, share: float, seed: int) -> np.ndarray:
    """``table`` with a random ``share`` of each column's distinct values (but exact 0 and 1) one ulp off; equal
    columns (RoPE's ``cat((freqs, freqs))``: one argument) alike."""
    rng = np.random.default_rng(seed)
    sources, column_of = np.unique(table.T, axis=0, return_inverse=True)
    moved_sources = np.empty_like(sources)
    for c, source in enumerate(sources):
        values, where = np.unique(source, return_inverse=True)
        step = np.where(rng.random(len(values)) < share, rng.choice([-1.0, 1.0], len(values)), 0.0)
        step[(values == 0) | (values == 1)] = 0
        toward = np.where(step > 0, np.inf, -np.inf).astype(table.dtype)
        moved = np.where(step == 0, values, np.nextafter(values, toward))
        moved_sources[c] = moved[where.reshape(-1)]
    return np.ascontiguousarray(moved_sources[column_of.reshape(-1)].T)


# ------------------------------------------------------------------------------------- axial RoPE goldens
AXIAL_MANIFEST = json.loads((AXIAL / "manifest.json").read_text())["goldens"]
DEFAULTS = {"theta": 10000.0, "frames": 1, "spatial_merge_size": 2, "text_tokens": 512, "axes_dim": [16, 56, 56]}
STYLE_OPTIONS = {
    "pixtral": (),
    "qwen2-vl": ("frames", "spatial_merge_size"),
    "qwen2.5-vl": ("frames", "spatial_merge_size", "window_size"),
    "flux": ("axes_dim", "text_tokens"),
}


@pytest.mark.parametrize("part", ["cos", "sin"])
@pytest.mark.parametrize("name", sorted(n for n, e in AXIAL_MANIFEST.items() if e["params"]["model"] in STYLE_OPTIONS))
def test_axial_rope_goldens_are_named_with_the_frameworks_parameters(tmp_path, name, part):
    entry = AXIAL_MANIFEST[name]
    golden = npz(AXIAL / entry["file"])[part]
    result = identify_array(golden, key=part)
    assert result.match is not None, [c.to_json() for c in result.nearest]
    values = result.match.hypothesis.values
    want = entry["params"]
    assert (result.match.hypothesis.command, result.match.hypothesis.array) == ("axial", part)
    assert values["model"] == want["model"]
    assert tuple(values["grid"]) == tuple(want["grid"]) and values["head_dim"] == want["head_dim"]
    assert values.get("theta", 10000.0) == want["theta"]
    for option in STYLE_OPTIONS[want["model"]]:
        got = values.get(option, DEFAULTS.get(option))
        assert (list(got) if option == "axes_dim" else got) == want.get(option, DEFAULTS.get(option)), option
    ours = regenerated(tmp_path, result.match.command)
    if want["model"] == "flux":  # diffusers computes in float64 and rounds once: posenc's exact table
        assert np.array_equal(ours, golden) and "--arithmetic" not in result.match.command
    else:  # transformers' float32 pipeline
        assert "--arithmetic framework" in result.match.command, result.match.command
        assert_nearly(ours, golden)


# ------------------------------------------------------------------------------------------- DETR goldens
DETR_CASES = {  # make_detr_goldens.py's CASES without a mask: (grid, d_model, the options posenc names)
    "detr_5x7_d16": ((5, 7), 16, {}),
    "detr_5x7_d16_raw": ((5, 7), 16, {"normalize": False}),
    "detr_5x7_d16_scale1": ((5, 7), 16, {"norm_scale": 1.0}),
    "detr_r50_25x34_d256": ((25, 34), 256, {}),
    "detr_r50_25x34_d256_raw": ((25, 34), 256, {"normalize": False}),
    "deformable_25x34_d256": ((25, 34), 256, {"variant": "deformable"}),
}


def detr_rows(pos: np.ndarray) -> np.ndarray:
    """transformers' ``(d, H, W)`` embedding as the ``(H * W, d)`` sequence the encoder adds."""
    return np.ascontiguousarray(pos.reshape(pos.shape[0], -1).T)


@pytest.mark.parametrize("name", sorted(DETR_CASES))
def test_detr_goldens_are_named_with_the_frameworks_parameters(tmp_path, name):
    grid, d_model, options = DETR_CASES[name]
    golden = detr_rows(npz(GOLDENS / "detr" / f"{name}.npz")["pos"])
    result = identify_array(golden)
    assert result.match is not None, [c.to_json() for c in result.nearest]
    values = result.match.hypothesis.values
    assert result.match.hypothesis.command == "detr"
    named = {k: v for k, v in values.items() if k not in ("grid", "d_model", "arithmetic")}
    assert (tuple(values["grid"]), values["d_model"], named) == (grid, d_model, options)
    assert "--arithmetic framework" in result.match.command
    assert_nearly(regenerated(tmp_path, result.match.command), golden)


@pytest.mark.parametrize("name", ["detr_5x7_d16_mask", "detr_r50_25x34_d256_mask", "deformable_5x7_d16_mask"])
def test_a_padded_detr_embedding_is_not_taken_for_another_table(name):
    """A mask's padding makes each image's own positions (docs/identify.md: not covered): no match, not a wrong one."""
    result = identify_array(detr_rows(npz(GOLDENS / "detr" / f"{name}.npz")["pos"]))
    assert result.match is None


@pytest.mark.parametrize("name", ["sincos2d_hf_3x5_d16", "sincos2d_hf_4x4_d16_cls"])
def test_a_layout_posenc_cannot_write_is_not_taken_for_maes(name):
    """transformers' builder's own ``[sin y | cos y | sin x | cos x]`` is never named as MAE's: without a class
    token it is timm's ``interleave_sin_cos`` table (named so), with one a table posenc cannot write (no match)."""
    assert "mae" in SINCOS2D_LAYOUTS
    match = identify_array(npz(GOLDENS / f"{name}.npz")["builder_raw"]).match
    if name.endswith("_cls"):
        assert match is None
    else:
        assert match is not None and match.hypothesis.values == {
            "grid": (3, 5), "d_model": 16, "layout": "timm", "interleave_sin_cos": True
        }  # fmt: skip


def test_a_layout_is_one_entry(monkeypatch):
    """One entry more in SINCOS2D_LAYOUTS (transformers' builder's ``[sin y | cos y | sin x | cos x]``, with a
    keyword posenc does not have yet) and the reading finds that layout's grid in the builder's own output."""

    def y_first(grid: tuple[int, int], d: int) -> Columns:
        q = d // 4
        return Columns(
            np.repeat([0, 0, 1, 1], q), np.tile(np.repeat([False, True], q), 2), np.tile(np.arange(q) / q, 4)
        )

    monkeypatch.delitem(SINCOS2D_LAYOUTS, "timm-interleaved")  # the same columns, by now posenc's own
    zero_rows = SINCOS2D_LAYOUTS["mae"].zero_rows  # a class token, as MAE's
    monkeypatch.setitem(SINCOS2D_LAYOUTS, "y-first", Layout({"layout": "y-first"}, y_first, zero_rows))
    for name, grid, cls in (("sincos2d_hf_3x5_d16", (3, 5), False), ("sincos2d_hf_4x4_d16_cls", (4, 4), True)):
        table = npz(GOLDENS / f"{name}.npz")["builder_raw"].astype(np.float64)
        found = [h.values for h in sincos2d_hypotheses(table)]
        assert found[0] == {"grid": grid, "d_model": 16, "layout": "y-first", **({"cls_token": True} if cls else {})}


# --------------------------------------------------------------- round trips: posenc's tables as checkpoints
def _safetensors(path: Path, arrays: dict[str, np.ndarray]) -> None:
    safetensors.numpy.save_file(arrays, str(path))


def _npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    np.savez(path, **arrays)


def _h5(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with h5py.File(path, "w") as f:
        for key, array in arrays.items():
            f.create_dataset(key, data=array)


ROUND_TRIPS = {  # name: (command, keywords, array, the checkpoint's key and shape, writer)
    "vit_b16_mae": ("sincos2d", {"grid": (14, 14), "d_model": 768, "cls_token": True}, "pe",
                    ("pos_embed", (1, 197, 768)), _safetensors),
    "vit_b16_no_cls": ("sincos2d", {"grid": (14, 14), "d_model": 768}, "pe", ("pos_embed", (1, 196, 768)), _npz),
    "sincos2d_16x24_base100": ("sincos2d", {"grid": (16, 24), "d_model": 256, "base": 100.0}, "pe",
                               ("decoder_pos_embed", (1, 384, 256)), _h5),
    "pixtral_framework_cos": ("axial", {"model": "pixtral", "grid": (32, 24), "head_dim": 64,
                                        "arithmetic": "framework"}, "cos",
                              ("vision_tower.rotary_emb.cos", (768, 64)), _safetensors),
    "qwen2_vl_sin": ("axial", {"model": "qwen2-vl", "grid": (16, 20), "head_dim": 80, "frames": 2}, "sin",
                     ("visual.rotary.sin", (640, 80)), _npz),
    "qwen2_5_vl_window_cos": ("axial", {"model": "qwen2.5-vl", "grid": (24, 32), "head_dim": 80,
                                        "window_size": 112, "arithmetic": "framework"}, "cos",
                              ("visual.rotary.cos", (768, 80)), _safetensors),
    "flux_sin": ("axial", {"model": "flux", "grid": (32, 48), "head_dim": 128, "text_tokens": 64}, "sin",
                 ("pos_embed.sin", (448, 128)), _h5),
    "detr_framework": ("detr", {"grid": (20, 30), "d_model": 256, "arithmetic": "framework"}, "pe",
                       ("pos", (600, 256)), _safetensors),
    "conditional_detr_t20_raw": ("detr", {"grid": (12, 16), "d_model": 256, "normalize": False,
                                          "temperature": 20.0}, "pe", ("pos", (1, 192, 256)), _npz),
    "deformable_t20": ("detr", {"grid": (16, 12), "d_model": 128, "variant": "deformable", "temperature": 20.0},
                       "pe", ("pos", (192, 128)), _h5),
}  # fmt: skip
SUFFIX = {_safetensors: ".safetensors", _npz: ".npz", _h5: ".h5"}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_a_table_posenc_wrote_is_named_by_the_command_that_writes_it_again(tmp_path, name):
    command, keywords, array, (key, shape), write = ROUND_TRIPS[name]
    table = KINDS[command].make(**keywords).arrays[array]
    path = tmp_path / f"checkpoint{SUFFIX[write]}"
    write(path, {"unrelated.weight": np.arange(12, dtype=np.float32).reshape(3, 4), key: table.reshape(shape)})
    found = {t.key: t for t in identify(path).tensors}
    match = found[key].match
    assert match is not None, [c.to_json() for c in found[key].nearest]
    assert (match.hypothesis.command, match.hypothesis.array) == (command, array)
    assert ("--arithmetic framework" in match.command) == (keywords.get("arithmetic") == "framework")
    ours = regenerated(tmp_path, match.command)
    assert ours.dtype == table.dtype and np.array_equal(ours.reshape(table.shape), table), name


# ------------------------------------------------------------------------------ a float32 table from a GPU
GPU_TABLES = {
    "vit_b16_mae": ("sincos2d", {"grid": (14, 14), "d_model": 768, "cls_token": True}, "pe"),
    "pixtral_cos": ("axial", {"model": "pixtral", "grid": (16, 24), "head_dim": 64}, "cos"),
    "qwen2_vl_sin": ("axial", {"model": "qwen2-vl", "grid": (16, 16), "head_dim": 80}, "sin"),
    "detr": ("detr", {"grid": (25, 34), "d_model": 256}, "pe"),
}


@pytest.mark.parametrize(("share", "seed"), [(0.1, 1), (0.2, 2), (0.28, 3)])
@pytest.mark.parametrize("name", sorted(GPU_TABLES))
def test_a_table_computed_in_float32_on_a_gpu_is_named_with_its_arithmetic(tmp_path, name, share, seed):
    command, keywords, array = GPU_TABLES[name]
    framework = KINDS[command].make(**keywords, arithmetic="framework").arrays[array]
    stored = on_a_gpu(framework, share, seed)
    assert 0.05 <= np.mean(stored != framework) <= 0.3 and ulps(stored, framework).max() == 1
    match = identify_array(stored[None]).match
    assert match is not None and match.hypothesis.command == command
    assert "--arithmetic framework" in match.command and match.comparison.agreement.startswith("framework:")
    assert np.array_equal(regenerated(tmp_path, match.command).reshape(framework.shape), framework)


# -------------------------------------------------------------------------------------------- hostile tables
def _axial_looking(rng: np.random.Generator) -> np.ndarray:
    """A cos cache's first row (all 1) and [A | A] repeat, random values below it."""
    half = rng.standard_normal((1024, 64)).astype(np.float32)
    half[0] = 1.0
    return np.concatenate([half, half], axis=1)


def _grid_looking(rng: np.random.Generator) -> np.ndarray:
    """DETR's and 2-D sincos's structure (one half constant along each run of 64 rows, the other repeating every 64
    rows, interleaved pairs of amplitude 1, the first patch's sines 0 and cosines 1) with random angles."""
    height, width, d = 64, 64, 256
    angles_y = rng.uniform(-np.pi, np.pi, (height, d // 4))
    angles_x = rng.uniform(-np.pi, np.pi, (width, d // 4))
    angles_y[0] = angles_x[0] = 0.0
    y = np.stack([np.sin(angles_y), np.cos(angles_y)], axis=-1).reshape(height, d // 2)
    x = np.stack([np.sin(angles_x), np.cos(angles_x)], axis=-1).reshape(width, d // 2)
    table = np.concatenate([np.repeat(y, width, axis=0), np.tile(x, (height, 1))], axis=1)
    return table.astype(np.float32)


def _mae_looking(rng: np.random.Generator) -> np.ndarray:
    """The same in MAE's column order ``[sin x | cos x | sin y | cos y]``: it passes the structure checks, and the
    reading's hypothesis (the default base) is compared on its sample only."""
    table = _grid_looking(rng)
    q = table.shape[1] // 4
    y, x = table[:, : 2 * q], table[:, 2 * q :]
    return np.concatenate([x[:, 0::2], x[:, 1::2], y[:, 0::2], y[:, 1::2]], axis=1)


HOSTILE = {
    "random": lambda rng: rng.standard_normal((197, 768)).astype(np.float32),
    "constant": lambda rng: np.full((1, 197, 768), 0.5, np.float32),
    "nan": lambda rng: np.full((4096, 128), np.nan, np.float32),
    "axial_looking": _axial_looking,
    "grid_looking": _grid_looking,
    "mae_looking": _mae_looking,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_table_is_no_match_within_a_few_passes(name):
    table = HOSTILE[name](np.random.default_rng(7))
    identifier = Identifier()
    result = identifier.identify(table)
    assert result.match is None
    # the readings are a few passes; the hypotheses they make fail on their sample, far within the budget
    assert identifier.work.spent <= 2 * table.size + 8 * (1 << 18), identifier.work.spent
    assert identifier.work.spent <= WORK_PER_ENTRY * table.size + WORK_FLOOR
    if name == "mae_looking":  # the reading made its hypotheses, and the sample rejected them: never made whole
        # MAE's and SimpleViT's columns are the same but for their frequencies: one hypothesis each
        assert [c.hypothesis.values.get("layout", "mae") for c in result.nearest] == ["mae", "simple-vit"]
        assert all(c.comparison.compared < table.size for c in result.nearest)


# ------------------------------------------------------------ 2-D sincos layouts: the libraries' own tables
LAYOUTS = GOLDENS / "sincos_layouts"
LAYOUT_MANIFEST = json.loads((LAYOUTS / "manifest.json").read_text())["goldens"]
#: The goldens of tests/goldens/sincos_layouts/ identify names, each with the keywords of the command it reports:
#: the manifest's, but where a simpler command writes the same table (timm's reverse_coord of an H x W grid is
#: timm's W x H grid, DiT's and PixArt's table at its base size is MAE's). The others' positions are fractional
#: (DiT at another grid) or offset (SD3's crop), or they have three axes (CogVideoX): tests/test_identify_scaled.py.
NAMED_LAYOUT_GOLDENS = {
    "timm_3x5_d16": {"grid": (3, 5), "d_model": 16, "layout": "timm"},
    "timm_vitb16_14x14_d768": {"grid": (14, 14), "d_model": 768, "layout": "timm"},
    "timm_3x5_d16_interleave": {"grid": (3, 5), "d_model": 16, "layout": "timm", "interleave_sin_cos": True},
    "timm_3x5_d16_reverse": {"grid": (5, 3), "d_model": 16, "layout": "timm"},
    "timm_3x5_d16_reverse_interleave_t100": {"grid": (5, 3), "d_model": 16, "layout": "timm",
                                             "interleave_sin_cos": True, "base": 100.0},
    "simple_vit_3x5_d32": {"grid": (3, 5), "d_model": 32, "layout": "simple-vit"},
    "simple_vit_b16_14x14_d768": {"grid": (14, 14), "d_model": 768, "layout": "simple-vit"},
    "dit_xl2_256_16x16_d1152": {"grid": (16, 16), "d_model": 1152},
    "pixart_alpha_512_32x32_d1152": {"grid": (32, 32), "d_model": 1152},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NAMED_LAYOUT_GOLDENS))
def test_sincos_layout_goldens_are_named_by_a_command_that_writes_them(tmp_path, name):
    entry = LAYOUT_MANIFEST[name]
    golden = np.ascontiguousarray(npz(LAYOUTS / entry["file"])["pe_t"].T)
    assert golden.dtype == np.float32 and list(golden.shape) == entry["shape"]
    match = identify_array(golden[None], key="pos_embed").match
    assert match is not None and match.hypothesis.command == "sincos2d"
    values = dict(match.hypothesis.values)
    framework = values.pop("arithmetic", None) == "framework"
    assert values == NAMED_LAYOUT_GOLDENS[name]
    ours = regenerated(tmp_path, match.command).reshape(golden.shape)
    off = ulps(ours, golden)
    if entry["params"]["layout"] in ("timm", "simple-vit"):
        # torch float32 throughout: each of its operations rounds, so the golden is within 2 ulps of posenc's
        # model of that arithmetic (each function correctly rounded in float32), most entries bit-identical
        assert framework and off.max() <= 2 and np.mean(off == 0) >= 0.9, (int(off.max()), float(np.mean(off == 0)))
    else:  # diffusers computes in float64 and rounds once: the exact table
        assert not framework and off.max() == 0
    # the manifest's own command (reverse_coord, dit) writes the table the reported one does
    params = {**entry["params"], "grid": tuple(entry["params"]["grid"])}
    theirs = KINDS["sincos2d"].make(**params, **({"arithmetic": "framework"} if framework else {})).array
    assert np.array_equal(theirs, ours)


@pytest.mark.parametrize("name", sorted(NAMED_LAYOUT_GOLDENS))
def test_a_float16_copy_of_a_layout_golden_is_named_with_its_parameters(name):
    """The library's float32 table saved with ``.half()``: the same command with ``--dtype float16`` (compared as
    float16 values under the narrow rule: in float16's own rule the few double-rounded entries were departures, and
    a neighbouring base was named, SimpleViT's as MAE's at base 10500); one entry two units off is no match."""
    entry = LAYOUT_MANIFEST[name]
    half = np.ascontiguousarray(npz(LAYOUTS / entry["file"])["pe_t"].T).astype(np.float16)
    match = identify_array(half).match
    assert match is not None and match.hypothesis.values == {**NAMED_LAYOUT_GOLDENS[name], "dtype": "float16"}
    row, column = half.shape[0] // 2 + 1, half.shape[1] // 3
    half[row, column] = np.nextafter(np.nextafter(half[row, column], np.float16(2)), np.float16(2))
    assert identify_array(half).match is None


LAYOUT_ROUND_TRIPS = {  # name: (keywords, writer)
    "timm_vitb16": ({"grid": (14, 14), "d_model": 768, "layout": "timm"}, _safetensors),
    "timm_interleave_base100": ({"grid": (6, 9), "d_model": 64, "layout": "timm", "interleave_sin_cos": True,
                                 "base": 100.0}, _npz),
    "timm_framework": ({"grid": (12, 20), "d_model": 256, "layout": "timm", "arithmetic": "framework"},
                       _safetensors),
    "simple_vit": ({"grid": (16, 16), "d_model": 384, "layout": "simple-vit"}, _npz),
    "simple_vit_framework": ({"grid": (7, 10), "d_model": 128, "layout": "simple-vit", "arithmetic": "framework"},
                             _safetensors),
    "dit_extra_tokens": ({"grid": (8, 8), "d_model": 64, "layout": "dit", "extra_tokens": 4}, _npz),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LAYOUT_ROUND_TRIPS))
def test_a_sincos_layout_posenc_wrote_is_named_by_the_command_that_writes_it_again(tmp_path, name):
    keywords, write = LAYOUT_ROUND_TRIPS[name]
    table = KINDS["sincos2d"].make(**keywords).array
    path = tmp_path / f"checkpoint{SUFFIX[write]}"
    write(path, {"unrelated.weight": np.arange(12, dtype=np.float32).reshape(3, 4), "pos_embed": table[None]})
    match = {t.key: t for t in identify(path).tensors}["pos_embed"].match
    assert match is not None and match.hypothesis.values == keywords
    ours = regenerated(tmp_path, match.command)
    assert ours.dtype == table.dtype and np.array_equal(ours.reshape(table.shape), table)


#: One table of each layout identify reads (DiT's: extra tokens, a square grid).
ONE_OF_EACH = {
    "mae": {"grid": (5, 8), "d_model": 32},
    "mae_cls": {"grid": (5, 8), "d_model": 32, "cls_token": True},
    "timm": {"grid": (5, 8), "d_model": 32, "layout": "timm"},
    "timm_interleaved": {"grid": (5, 8), "d_model": 32, "layout": "timm", "interleave_sin_cos": True},
    "simple_vit": {"grid": (5, 8), "d_model": 32, "layout": "simple-vit"},
    "dit_extra_tokens": {"grid": (6, 6), "d_model": 32, "layout": "dit", "extra_tokens": 2},
}


@pytest.mark.parametrize("name", sorted(ONE_OF_EACH))
def test_a_sincos_layout_is_not_named_as_another(name):
    """Every hypothesis the reading makes of one layout's table but its own is another table (MAE's and SimpleViT's
    share their columns, timm's interleaved ones MAE's first row), and identify names its own."""
    keywords = ONE_OF_EACH[name]
    table = KINDS["sincos2d"].make(**keywords).array
    hypotheses = [h.values for h in sincos2d_hypotheses(table.astype(np.float64))]
    assert keywords in hypotheses
    for values in hypotheses:
        assert np.array_equal(KINDS["sincos2d"].make(**values).array, table) == (values == keywords), values
    match = identify_array(table).match
    assert match is not None and match.hypothesis.values == keywords


# ------------------------------------------- axial RoPE of Llama 4, EVA-02 and the video styles (issue #28)
#: The styles identify names besides the four above, with the options each takes and its theta without one given.
MORE_STYLES = {"llama4": (), "eva02": (), "wan": (), "hunyuan-video": ("axes_dim",)}
STYLE_THETA = {"hunyuan-video": 256.0}
MORE_GOLDENS = sorted(name for name, entry in AXIAL_MANIFEST.items() if entry["params"]["model"] in MORE_STYLES)


def test_the_new_styles_goldens_are_all_read():
    """Every Llama 4, EVA-02, Wan and HunyuanVideo golden."""
    assert len(MORE_GOLDENS) == 9 and {AXIAL_MANIFEST[n]["params"]["model"] for n in MORE_GOLDENS} == set(MORE_STYLES)


@pytest.mark.parametrize("part", ["cos", "sin"])
@pytest.mark.parametrize("name", MORE_GOLDENS)
def test_llama4_eva02_and_video_goldens_are_named_with_the_frameworks_parameters(tmp_path, name, part):
    entry = AXIAL_MANIFEST[name]
    golden = npz(AXIAL / entry["file"])[part]
    result = identify_array(golden, key=part)
    assert result.match is not None, [c.to_json() for c in result.nearest]
    hypothesis = result.match.hypothesis
    want = entry["params"]
    assert (hypothesis.command, hypothesis.array, hypothesis.values["model"]) == ("axial", part, want["model"])
    assert tuple(hypothesis.values["grid"]) == tuple(want["grid"]) and hypothesis.values["head_dim"] == want["head_dim"]
    assert hypothesis.values.get("theta", STYLE_THETA.get(want["model"], 10000.0)) == want["theta"]
    for option in MORE_STYLES[want["model"]]:
        got = hypothesis.values.get(option, DEFAULTS.get(option))
        assert list(got) == want[option], option
    # timm's ref_feat_shape equal to the grid scales every position by 1: the same table as without it
    want_ref = None if want.get("ref_grid") == want["grid"] else want.get("ref_grid")
    assert hypothesis.values.get("ref_grid") == (None if want_ref is None else tuple(want_ref))
    ours = regenerated(tmp_path, result.match.command)
    if want["model"] == "wan":  # diffusers computes in float64 and rounds once: posenc's exact table
        assert np.array_equal(ours, golden) and "--arithmetic" not in result.match.command
    else:  # transformers', diffusers' HunyuanVideo and timm's float32 pipelines
        assert "--arithmetic framework" in result.match.command, result.match.command
        assert_nearly(ours, golden)
        assert ulps(ours, golden).max() <= 1


def test_a_one_frame_video_is_named_by_the_style_whose_defaults_it_is():
    """A one-frame HunyuanVideo or Wan table is also FLUX's without text tokens (the same exact table): the style
    that makes it without overrides is named, and a FLUX table stays FLUX's."""
    for model, keywords in (("hunyuan-video", {}), ("wan", {}), ("flux", {"text_tokens": 0})):
        grid = (8, 12) if model == "flux" else (1, 8, 12)
        table = KINDS["axial"].make(model=model, grid=grid, head_dim=128, **keywords).arrays["sin"]
        match = identify_array(table).match
        assert match is not None and match.hypothesis.values["model"] == model, model


MORE_ROUND_TRIPS = {  # name: (keywords, array, the checkpoint's key and shape, writer)
    "llama4_scout_sin": ({"model": "llama4", "grid": (24, 24), "head_dim": 88}, "sin",
                         ("vision_model.rotary_embedding.sin", (1, 577, 88)), _safetensors),
    "llama4_framework_cos": ({"model": "llama4", "grid": (16, 16), "head_dim": 64, "theta": 500.0,
                              "arithmetic": "framework"}, "cos", ("rope.cos", (257, 64)), _npz),
    "eva02_framework_cos": ({"model": "eva02", "grid": (16, 16), "head_dim": 64, "arithmetic": "framework"}, "cos",
                            ("rope.cos", (256, 64)), _safetensors),
    "eva02_12x20_sin": ({"model": "eva02", "grid": (12, 20), "head_dim": 64}, "sin", ("rope.sin", (240, 64)), _npz),
    "eva02_ref_sin": ({"model": "eva02", "grid": (12, 20), "head_dim": 64, "ref_grid": (16, 16)}, "sin",
                      ("rope.sin", (240, 64)), _safetensors),
    "eva02_ref_framework_cos": ({"model": "eva02", "grid": (24, 24), "head_dim": 64, "ref_grid": (16, 16),
                                 "arithmetic": "framework"}, "cos", ("rope.cos", (576, 64)), _npz),
    "wan_cos": ({"model": "wan", "grid": (5, 16, 20), "head_dim": 128}, "cos",
                ("rope.freqs_cos", (1, 400, 1, 128)), _safetensors),
    # Wan's framework table is its exact one (float64 rounded once): named exact
    "wan_sin": ({"model": "wan", "grid": (2, 12, 8), "head_dim": 96}, "sin", ("rope.freqs_sin", (48, 96)), _npz),
    "hunyuan_framework_sin": ({"model": "hunyuan-video", "grid": (3, 16, 24), "head_dim": 128,
                               "arithmetic": "framework"}, "sin", ("rope.sin", (288, 128)), _safetensors),
    "hunyuan_axes_theta": ({"model": "hunyuan-video", "grid": (4, 10, 14), "head_dim": 96, "axes_dim": (16, 40, 40),
                            "theta": 10000.0}, "cos", ("rope.cos", (140, 96)), _npz),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MORE_ROUND_TRIPS))
def test_a_llama4_eva02_or_video_table_posenc_wrote_is_named_by_the_command_that_writes_it_again(tmp_path, name):
    keywords, array, (key, shape), write = MORE_ROUND_TRIPS[name]
    table = KINDS["axial"].make(**keywords).arrays[array]
    path = tmp_path / f"checkpoint{SUFFIX[write]}"
    write(path, {"unrelated.weight": np.arange(12, dtype=np.float32).reshape(3, 4), key: table.reshape(shape)})
    match = {t.key: t for t in identify(path).tensors}[key].match
    assert match is not None
    assert (match.hypothesis.command, match.hypothesis.array) == ("axial", array)
    assert match.hypothesis.values["model"] == keywords["model"]
    assert match.hypothesis.values.get("ref_grid") == keywords.get("ref_grid")
    assert ("--arithmetic framework" in match.command) == (keywords.get("arithmetic") == "framework")
    ours = regenerated(tmp_path, match.command)
    assert ours.dtype == table.dtype and np.array_equal(ours.reshape(table.shape), table), name


def _pairs_looking(rng: np.random.Generator, rows: int, d: int, origin: int) -> np.ndarray:
    """Random values in columns equal in pairs (the new styles' ``repeat_interleave``), one row all 1 (a cos
    cache's angle 0: the first row, or Llama 4's class token last)."""
    half = rng.standard_normal((rows, d // 2)).astype(np.float32)
    half[origin] = 1.0
    return np.repeat(half, 2, axis=1)


MORE_HOSTILE = {  # shaped as each new style's table: Llama 4 Scout's, EVA-02's, Wan's and HunyuanVideo's
    "random_llama4": lambda rng: rng.standard_normal((577, 88)).astype(np.float32),
    "constant_eva02": lambda rng: np.full((256, 64), 1.0, np.float32),
    "random_wan": lambda rng: rng.uniform(-1, 1, (1, 3 * 8 * 12, 1, 128)).astype(np.float32),
    "constant_hunyuan": lambda rng: np.zeros((512, 128), np.float32),
    "pairs_first_row": lambda rng: _pairs_looking(rng, 3 * 8 * 12, 128, 0),
    "pairs_last_row": lambda rng: _pairs_looking(rng, 577, 88, -1),
}


@pytest.mark.parametrize("name", sorted(MORE_HOSTILE))
def test_a_random_or_constant_table_shaped_as_a_new_style_costs_no_work(name):
    """The new readings check their structure exactly before they make a hypothesis: none is made, none paid."""
    table = MORE_HOSTILE[name](np.random.default_rng(11))
    identifier = Identifier()
    result = identifier.identify(table)
    assert result.match is None and not result.nearest
    assert identifier.work.spent == 0


MORE_GPU_TABLES = {
    "llama4_cos": ({"model": "llama4", "grid": (24, 24), "head_dim": 88}, "cos"),
    "eva02_sin": ({"model": "eva02", "grid": (16, 16), "head_dim": 64}, "sin"),
    "eva02_ref_cos": ({"model": "eva02", "grid": (12, 20), "head_dim": 64, "ref_grid": (16, 16)}, "cos"),
    "hunyuan_cos": ({"model": "hunyuan-video", "grid": (3, 16, 24), "head_dim": 128}, "cos"),
}


@pytest.mark.parametrize(("share", "seed"), [(0.1, 1), (0.28, 3)])
@pytest.mark.parametrize("name", sorted(MORE_GPU_TABLES))
def test_a_new_style_table_computed_in_float32_on_a_gpu_is_named_with_its_arithmetic(tmp_path, name, share, seed):
    keywords, array = MORE_GPU_TABLES[name]
    framework = KINDS["axial"].make(**keywords, arithmetic="framework").arrays[array]
    stored = on_a_gpu(framework, share, seed)
    assert 0.05 <= np.mean(stored != framework) <= 0.3 and ulps(stored, framework).max() == 1
    match = identify_array(stored).match
    assert match is not None and match.hypothesis.values["model"] == keywords["model"]
    assert "--arithmetic framework" in match.command and match.comparison.agreement.startswith("framework:")
    assert np.array_equal(regenerated(tmp_path, match.command), framework)


# -------------------------------------------------------- timm's pixel-band RotaryEmbedding (issue #28)
PIXEL_GOLDENS = sorted(name for name, entry in AXIAL_MANIFEST.items() if entry["params"]["model"] == "timm-pixel")


@pytest.mark.parametrize("part", ["cos", "sin"])
@pytest.mark.parametrize("name", PIXEL_GOLDENS)
def test_timm_pixel_goldens_are_named_with_timms_parameters(tmp_path, name, part):
    """timm's own get_embed is named timm-pixel with its grid, head_dim and band spacing, ``--arithmetic framework``
    where posenc's framework table is nearly timm's; at 32 log bands torch's vectorised pow is an ulp off at one band
    (tests/test_axial_pixel.py), so that table is named exact, within float32 rounding."""
    entry = AXIAL_MANIFEST[name]
    golden = npz(AXIAL / entry["file"])[part]
    result = identify_array(golden, key=part)
    assert result.match is not None, [c.to_json() for c in result.nearest]
    values, want = result.match.hypothesis.values, entry["params"]
    assert (result.match.hypothesis.command, result.match.hypothesis.array, values["model"]) == (
        "axial",
        part,
        "timm-pixel",
    )
    assert tuple(values["grid"]) == tuple(want["grid"]) and values["head_dim"] == want["head_dim"]
    assert values.get("linear_bands", False) == want["linear_bands"] and "max_res" not in values
    ours = regenerated(tmp_path, result.match.command)
    if want["head_dim"] == 128:
        assert "--arithmetic" not in result.match.command
        assert result.match.comparison.agreement == "within float32 rounding"
    else:
        assert "--arithmetic framework" in result.match.command, result.match.command
        assert ulps(ours, golden).max() <= 1


@pytest.mark.parametrize("arithmetic", ["exact", "framework"])
@pytest.mark.parametrize(
    "keywords", [{"grid": (7, 9), "head_dim": 64}, {"grid": (5, 12), "head_dim": 16, "linear_bands": True}]
)
def test_a_timm_pixel_table_posenc_wrote_is_named_by_the_command_that_writes_it_again(tmp_path, keywords, arithmetic):
    for part in ("cos", "sin"):
        table = KINDS["axial"].make(model="timm-pixel", **keywords, arithmetic=arithmetic).arrays[part]
        path = tmp_path / "checkpoint.safetensors"
        _safetensors(path, {"rope.weight": np.ones((2, 2), np.float32), f"rope.{part}": table})
        match = {t.key: t for t in identify(path).tensors}[f"rope.{part}"].match
        assert match is not None and match.hypothesis.values["model"] == "timm-pixel"
        assert ("--arithmetic framework" in match.command) == (arithmetic == "framework"), match.command
        assert np.array_equal(regenerated(tmp_path, match.command), table), (part, match.command)


def test_a_table_built_to_look_like_timm_pixel_costs_no_work():
    """Pairs equal, the last row the first negated (a sine's symmetry), random otherwise: no hypothesis, none paid."""
    rng = np.random.default_rng(5)
    half = rng.standard_normal((63, 32)).astype(np.float32)
    half[-1] = -half[0]
    identifier = Identifier()
    result = identifier.identify(np.repeat(half, 2, axis=1))
    assert result.match is None and not result.nearest and identifier.work.spent == 0
