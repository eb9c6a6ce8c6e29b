"""``posenc identify`` on the sincos tables whose positions are not the patch indices
(posenc_cli/identification/_scaled.py): DiT/PixArt at a grid other than their base size, SD3's crop of a larger
grid's table, CogVideoX's 3-D table (issue #28).

The honest tests are diffusers' own tables (tests/goldens/sincos_layouts/, made by make_sincos_layouts_goldens.py
with the parameters its manifest records): each is identified with the parameters diffusers was called with, and
the command identify prints, run through the CLI, makes diffusers' table again (bit for bit where it names the
framework arithmetic). The table shows only the ratio ``base_size / interpolation_scale`` of DiT and SD3
(docs/identify.md): where diffusers' ratio is not its ``base_size``, identify names the same ratio as an integer
``base_size``, and the exact tables of both are checked to be one.

The negative tables are built here with numpy from the layouts' formulas, each one parameter away from what
diffusers makes (a crop off centre, two axes at different ratios, t's frequencies of the spatial axes): identify
names none of them. The hostile tables (random angles in each structure) cost a few passes and no match.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy

from posenc_cli.identification import Identifier, identify, identify_array
from posenc_cli.identification._search import STEP
from posenc_cli.identification._vision import sincos2d_hypotheses
from posenc_cli.kinds import KINDS

from .test_identify_vision import assert_nearly, npz, regenerated

LAYOUTS = Path(__file__).parent / "goldens" / "sincos_layouts"
MANIFEST = json.loads((LAYOUTS / "manifest.json").read_text())["goldens"]

#: The diffusers goldens at positions other than the patch indices, with the keywords identify names (the
#: manifest's, but the ratio base_size / interpolation_scale as an integer base_size where the two differ) and
#: whether it names the framework arithmetic (diffusers' float32 positions, float64 sin/cos, one rounding).
SCALED_GOLDENS = {
    "pixart_alpha_512_bin384x640_24x40_d1152": ({"grid": (24, 40), "d_model": 1152, "layout": "dit",
                                                 "base_size": 32}, True),
    "dit_6x10_d16_base4_interp2": ({"grid": (6, 10), "d_model": 16, "layout": "dit", "base_size": 2}, True),
    # 6 / 0.75: float32(5/6) / float32(0.75) is not float32(5/8); posenc's exact table is the nearer
    "dit_5x7_d32_base6_interp0.75_extra2": ({"grid": (5, 7), "d_model": 32, "layout": "dit", "base_size": 8,
                                             "extra_tokens": 2}, False),
    "sd3_medium_latent64_32x32_d1536": ({"grid": (32, 32), "d_model": 1536, "layout": "sd3", "base_size": 64,
                                         "pos_embed_max_size": 192}, True),
    "sd3_latent6x10_3x5_d16_max9": ({"grid": (3, 5), "d_model": 16, "layout": "sd3", "base_size": 4,
                                     "pos_embed_max_size": 9}, True),
    "sd3_latent8x4_4x2_d16_max7_interp1.5": ({"grid": (4, 2), "d_model": 16, "layout": "sd3", "base_size": 2,
                                              "pos_embed_max_size": 7}, True),
    "cogvideox_2b_4x6x8_d1920": ({"grid": (4, 6, 8), "d_model": 1920, "layout": "cogvideox",
                                  "interpolation_scale": 1.875}, True),
    "cogvideox_2x3x5_d32_s1.5_t0.75": ({"grid": (2, 3, 5), "d_model": 32, "layout": "cogvideox",
                                        "interpolation_scale": 1.5, "temporal_interpolation_scale": 0.75}, True),
}  # fmt: skip


def golden(name: str) -> np.ndarray:
    return np.ascontiguousarray(npz(LAYOUTS / MANIFEST[name]["file"])["pe_t"].T)


def manifest_keywords(name: str) -> dict:
    params = dict(MANIFEST[name]["params"])
    params["grid"] = tuple(params["grid"])
    return params


def test_every_scaled_golden_is_read():
    """Every dit golden off its base size, every sd3 and every cogvideox golden of the manifest."""
    scaled = {
        name for name, entry in MANIFEST.items()
        if entry["params"]["layout"] in ("sd3", "cogvideox")
        or entry["params"]["layout"] == "dit" and entry["params"]["base_size"] != entry["params"]["grid"][0]
    }  # fmt: skip
    assert scaled == set(SCALED_GOLDENS)


@pytest.mark.parametrize("name", sorted(SCALED_GOLDENS))
def test_diffusers_scaled_goldens_are_named_with_their_parameters(tmp_path, name):
    want, framework = SCALED_GOLDENS[name]
    table = golden(name)
    result = identify_array(table[None], key="pos_embed")
    assert result.match is not None, [c.to_json() for c in result.nearest]
    values = dict(result.match.hypothesis.values)
    assert (values.pop("arithmetic", "exact") == "framework") == framework
    assert values == want
    # what the table shows is diffusers': the grid (and frames), the crop's size, base_size / interpolation_scale
    theirs = manifest_keywords(name)
    grid = values["grid"] if len(values["grid"]) == 2 else values["grid"][1:]
    assert grid == theirs["grid"] and values["grid"][:-2] == ((theirs["frames"],) if len(values["grid"]) == 3 else ())
    assert values.get("pos_embed_max_size") == theirs.get("pos_embed_max_size")
    for key in ("interpolation_scale", "temporal_interpolation_scale"):
        if theirs["layout"] == "cogvideox":
            assert values.get(key, 1.0) == theirs.get(key, 1.0)
    if "base_size" in theirs:
        ratio = Fraction(values["base_size"]) / Fraction(values.get("interpolation_scale", 1.0))
        assert ratio == Fraction(theirs["base_size"]) / Fraction(theirs.get("interpolation_scale", 1.0))
    # the command makes diffusers' table again, and its exact table is the one of diffusers' parameters
    ours = regenerated(tmp_path, result.match.command).reshape(table.shape)
    if framework:
        assert "--arithmetic framework" in result.match.command
        if values == {**theirs, "grid": values["grid"]}:
            assert np.array_equal(ours, table)
        else:
            assert_nearly(ours, table)
    else:  # within the float32 rounding of diffusers' positions (at most the ratio) and of its sines
        assert np.abs(ours.astype(np.float64) - table).max() <= 2.0**-21 * (1 + values["base_size"])
    exact = {**values, "grid": grid, **({"frames": values["grid"][0]} if len(values["grid"]) == 3 else {})}
    assert np.array_equal(KINDS["sincos2d"].make(**exact).array, KINDS["sincos2d"].make(**theirs).array)


@pytest.mark.parametrize("narrow", ["bfloat16", "float16"])
@pytest.mark.parametrize(
    "name", ["pixart_alpha_512_bin384x640_24x40_d1152", "sd3_medium_latent64_32x32_d1536", "cogvideox_2b_4x6x8_d1920"]
)
def test_a_checkpoints_half_precision_copy_is_named_with_its_type(tmp_path, name, narrow):
    """diffusers' float32 table saved as a half-precision checkpoint (``.to(torch.bfloat16)`` read as its float32
    values, ``.half()`` stored as float16): the same parameters, ``--dtype``, and the command's table within a unit
    of that type of diffusers' own rounded to it (or within the float32 positions' error of diffusers' own)."""
    import ml_dtypes

    want, _ = SCALED_GOLDENS[name]
    table = golden(name)
    rounded = table.astype(ml_dtypes.bfloat16 if narrow == "bfloat16" else np.float16)
    stored = rounded.astype(np.float32) if narrow == "bfloat16" else rounded
    path = tmp_path / "model.safetensors"
    safetensors.numpy.save_file({"transformer.pos_embed.pos_embed": stored[None]}, str(path))
    match = identify(path).match
    assert match is not None
    assert match.hypothesis.values == {**want, "dtype": narrow}
    ours = regenerated(tmp_path, match.command).reshape(table.shape)  # the 16-bit patterns, as posenc stores them

    def order(x: np.ndarray) -> np.ndarray:
        b = x.view(np.int16).astype(np.int64)
        return np.where(b < 0, -(b & 0x7FFF), b)

    off = np.abs(order(ours) - order(rounded))
    # near a zero of a sine a narrow value's unit is finer than the float32 positions' own error (2**-20 at most)
    near = np.abs(ours.view(rounded.dtype).astype(np.float64) - table) <= 2.0**-20
    assert np.all((off <= 1) | near) and np.mean(off == 0) >= 0.99, (int(off.max()), float(np.mean(off == 0)))


# --------------------------------------------------------------- round trips: posenc's tables as checkpoints
ROUND_TRIPS = {
    # SD3's stored pos_embed is the uncropped M x M table: DiT's at base_size 64 (positions i / 3), here smaller
    "sd3_uncropped_like": {"grid": (48, 48), "d_model": 256, "layout": "dit", "base_size": 16},
    "pixart_1024_bin_framework": {"grid": (48, 80), "d_model": 128, "layout": "dit", "base_size": 32,
                                  "arithmetic": "framework"},
    "dit_cls_base100": {"grid": (8, 12), "d_model": 64, "layout": "dit", "base_size": 6, "cls_token": True,
                        "base": 100.0},
    "sd3_crop_wide": {"grid": (20, 36), "d_model": 128, "layout": "sd3", "base_size": 32, "pos_embed_max_size": 96},
    "sd3_crop_framework": {"grid": (16, 16), "d_model": 96, "layout": "sd3", "base_size": 64,
                           "pos_embed_max_size": 192, "arithmetic": "framework"},
    "sd3_odd_crop_interp": {"grid": (7, 4), "d_model": 32, "layout": "sd3", "base_size": 15,
                            "pos_embed_max_size": 12, "interpolation_scale": 2.0},
    "cogvideox_one_frame": {"grid": (6, 8), "d_model": 64, "layout": "cogvideox", "interpolation_scale": 1.875},
    # positions t / 0.5 are exact in float32: diffusers' table is the exact one, named without --arithmetic
    "cogvideox_temporal": {"grid": (5, 4, 6), "d_model": 128, "layout": "cogvideox",
                           "temporal_interpolation_scale": 0.5},
    "cogvideox_framework": {"grid": (3, 6, 8), "d_model": 96, "layout": "cogvideox", "interpolation_scale": 1.875,
                            "temporal_interpolation_scale": 0.75, "arithmetic": "framework"},
    "cogvideox_base": {"grid": (3, 10, 12), "d_model": 160, "layout": "cogvideox", "interpolation_scale": 2.0,
                       "base": 1000.0},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_a_scaled_table_posenc_wrote_is_named_by_the_command_that_writes_it_again(tmp_path, name):
    keywords = ROUND_TRIPS[name]
    table = KINDS["sincos2d"].make(**keywords).array
    path = tmp_path / "checkpoint.safetensors"
    unrelated = np.arange(12, dtype=np.float32).reshape(3, 4)
    safetensors.numpy.save_file({"unrelated.weight": unrelated, "pos_embed": table[None]}, str(path))
    match = {t.key: t for t in identify(path).tensors}["pos_embed"].match
    assert match is not None and match.hypothesis.values == keywords
    ours = regenerated(tmp_path, match.command)
    assert ours.dtype == table.dtype and np.array_equal(ours.reshape(table.shape), table)


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_a_scaled_layout_is_not_named_as_another(name):
    """Every hypothesis the readings make of the table but its own is another table."""
    keywords = {k: v for k, v in ROUND_TRIPS[name].items() if k != "arithmetic"}
    table = KINDS["sincos2d"].make(**keywords).array
    hypotheses = [h.values for h in sincos2d_hypotheses(table.astype(np.float64))]
    assert keywords in hypotheses
    for values in hypotheses:
        assert np.array_equal(KINDS["sincos2d"].make(**values).array, table) == (values == keywords), values


# --------------------------------------------------------------------------- tables one parameter away
def mae_columns(px: np.ndarray, py: np.ndarray, d: int, base: float = 10000.0) -> np.ndarray:
    """MAE's ``[sin x | cos x | sin y | cos y]`` at positions ``px`` (width) and ``py`` (height), rows ``y * W + x``,
    written out here with numpy (float64, then float32)."""
    q = d // 4
    w = base ** -(np.arange(q) / q)
    x, y = px[:, None] * w, py[:, None] * w
    xs = np.concatenate([np.sin(x), np.cos(x)], axis=1)
    ys = np.concatenate([np.sin(y), np.cos(y)], axis=1)
    rows = np.concatenate([np.tile(xs, (len(py), 1)), np.repeat(ys, len(px), axis=0)], axis=1)
    return rows.astype(np.float32)


def cogvideox_columns(t: np.ndarray, py: np.ndarray, px: np.ndarray, d: int, t_denominator: int) -> np.ndarray:
    """CogVideoX's ``[sin t | cos t | sin x | cos x | sin y | cos y]``, rows ``t * H * W + y * W + x``, t's
    frequencies ``10000**(-k / t_denominator)`` (CogVideoX's: ``d / 8``)."""
    qt, qs = d // 8, 3 * d // 16
    ft, fs = 10000.0 ** -(np.arange(qt) / t_denominator), 10000.0 ** -(np.arange(qs) / qs)

    def sc(a: np.ndarray) -> np.ndarray:
        return np.concatenate([np.sin(a), np.cos(a)], axis=-1)

    T, H, W = len(t), len(py), len(px)  # noqa: N806
    parts = [
        np.broadcast_to(sc(t[:, None] * ft)[:, None, None], (T, H, W, 2 * qt)),
        np.broadcast_to(sc(px[:, None] * fs)[None, None], (T, H, W, 2 * qs)),
        np.broadcast_to(sc(py[:, None] * fs)[None, :, None], (T, H, W, 2 * qs)),
    ]
    return np.concatenate(parts, axis=-1).reshape(T * H * W, d).astype(np.float32)


def _sd3_off_centre() -> np.ndarray:
    """SD3 medium's 32x32 crop of the 192x192 table one row below the centre (top 81, left 80)."""
    return mae_columns((80 + np.arange(32)) / 3, (81 + np.arange(32)) / 3, 256)


def _sd3_centred() -> np.ndarray:
    return mae_columns((80 + np.arange(32)) / 3, (80 + np.arange(32)) / 3, 256)


def _dit_two_ratios() -> np.ndarray:
    """PixArt-512's 24x40 bin with its y positions at ratio 32 and its x positions at ratio 30."""
    return mae_columns(np.arange(40) * 30 / 40, np.arange(24) * 32 / 24, 128)


def _dit_one_ratio() -> np.ndarray:
    return mae_columns(np.arange(40) * 32 / 40, np.arange(24) * 32 / 24, 128)


def _cogvideox_spatial_t() -> np.ndarray:
    """CogVideoX-2b's 4x6x8 grid at d 128, t's frequencies those of the spatial axes (denominator 3d/16)."""
    return cogvideox_columns(np.arange(4.0), np.arange(6) / 1.875, np.arange(8) / 1.875, 128, 24)


def _cogvideox() -> np.ndarray:
    return cogvideox_columns(np.arange(4.0), np.arange(6) / 1.875, np.arange(8) / 1.875, 128, 16)


#: name: (the table one parameter away, the same built right, what identify names the latter)
ONE_AWAY = {
    "sd3_off_centre": (_sd3_off_centre, _sd3_centred,
                       {"grid": (32, 32), "d_model": 256, "layout": "sd3", "base_size": 64, "pos_embed_max_size": 192}),
    "dit_two_ratios": (_dit_two_ratios, _dit_one_ratio,
                       {"grid": (24, 40), "d_model": 128, "layout": "dit", "base_size": 32}),
    "cogvideox_spatial_t": (_cogvideox_spatial_t, _cogvideox,
                            {"grid": (4, 6, 8), "d_model": 128, "layout": "cogvideox", "interpolation_scale": 1.875}),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ONE_AWAY))
def test_a_table_one_parameter_away_is_not_named(name):
    """The numpy tables built right are named (so the builder is the layout's), the ones a parameter away are not."""
    away, right, keywords = ONE_AWAY[name]
    match = identify_array(right()).match
    assert match is not None
    assert {k: v for k, v in match.hypothesis.values.items() if k != "arithmetic"} == keywords
    assert identify_array(away()).match is None


def shifted(table: np.ndarray, columns: slice, frequencies: np.ndarray, by: float) -> np.ndarray:
    """``table`` with the ``[sin | cos]`` block ``columns`` (frequencies ``frequencies``) at its positions plus
    ``by``: the grid structure stays, the positions move."""
    out = table.astype(np.float64)
    q = len(frequencies)
    block = out[:, columns]
    angle = np.arctan2(block[:, :q], block[:, q:]) + by * frequencies
    out[:, columns] = np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    return out.astype(np.float32)


PERTURBED = ["sd3_medium_latent64_32x32_d1536", "pixart_alpha_512_bin384x640_24x40_d1152", "cogvideox_2b_4x6x8_d1920",
             "dit_6x10_d16_base4_interp2", "cogvideox_2x3x5_d32_s1.5_t0.75", "sd3_latent6x10_3x5_d16_max9"]  # fmt: skip


@pytest.mark.parametrize("name", PERTURBED)
@pytest.mark.parametrize("how", ["entry", "shift"])
def test_a_perturbed_golden_is_not_named(name, how):
    """diffusers' table with one entry moved by 1e-4 (far beyond float32 rounding), or with one axis's positions
    all moved by a quarter (x for dit and sd3, t for cogvideox: the grid structure stays): no match."""
    table = golden(name)
    d = table.shape[1]
    if how == "entry":
        table = table.copy()
        table[table.shape[0] // 2 + 1, d // 3] += np.float32(1e-4)
    elif MANIFEST[name]["params"]["layout"] == "cogvideox":
        qt = d // 8
        table = shifted(table, slice(0, 2 * qt), 10000.0 ** -(np.arange(qt) / qt), 0.25)
    else:
        q = d // 4
        table = shifted(table, slice(0, 2 * q), 10000.0 ** -(np.arange(q) / q), 0.25)
    assert identify_array(table).match is None


# -------------------------------------------------------------------------------------------- hostile tables
def _sd3_looking(rng: np.random.Generator) -> np.ndarray:
    """MAE's structure (the y half constant along each run of 32 rows, the x half repeating), pairs of amplitude 1,
    random angles, the first row not all 0 and 1."""
    return mae_columns(rng.uniform(0, 50, 32), rng.uniform(0, 50, 32), 256)


def _sd3_looking_law(rng: np.random.Generator) -> np.ndarray:
    """The same at positions in arithmetic progression, but a crop no centre allows (top 3, left 40 of a 32x32)."""
    return mae_columns((40 + np.arange(32)) / 3, (3 + np.arange(32)) / 3, 256)


def _cogvideox_looking(rng: np.random.Generator) -> np.ndarray:
    """CogVideoX's structure with random positions on each axis (each starting at 0)."""
    t, y, x = (np.concatenate([[0.0], np.sort(rng.uniform(0, 20, n - 1))]) for n in (4, 6, 8))
    return cogvideox_columns(t, y, x, 128, 16)


HOSTILE = {"sd3_looking": _sd3_looking, "sd3_looking_law": _sd3_looking_law, "cogvideox_looking": _cogvideox_looking}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_table_built_to_pass_the_structure_checks_is_no_match_within_a_few_steps(name):
    table = HOSTILE[name](np.random.default_rng(5))
    identifier = Identifier()
    result = identifier.identify(table)
    assert result.match is None
    assert identifier.work.spent <= 2 * table.size + 8 * STEP, identifier.work.spent
