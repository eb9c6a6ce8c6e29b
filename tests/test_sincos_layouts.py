"""2-D and 3-D sincos layouts (``posenc sincos2d --layout``): against the libraries' goldens and mpmath.

The goldens (``tests/goldens/sincos_layouts``) are the tables timm, vit-pytorch and diffusers make themselves. The
diffusers layouts compute float64 after float32 positions and round once to float32, so posenc's framework tables
must be bit-identical to them; timm and vit-pytorch compute in float32 with torch's own ``pow``, ``sin`` and ``cos``
(within an ulp or two, not correctly rounded), so posenc's framework tables (each function correctly rounded) agree
on most entries and within 2 ulps on the rest. The exact tables lie within the float32 rounding of the goldens'
positions and frequencies, and are checked entry by entry against mpmath at the exact rational positions.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import SpecError
from posenc_cli.kinds.sincos2d import KIND

from .test_encodings import rounded

GOLDENS = Path(__file__).resolve().parent / "goldens" / "sincos_layouts"
MANIFEST = json.loads((GOLDENS / "manifest.json").read_text())["goldens"]
#: Measured with torch 2.13.0 (CPU): the share of float32 entries posenc's framework table gives bit for bit, and
#: the most ulps between the others (torch's float32 pow, sin and cos are not correctly rounded).
FLOAT32_AGREEMENT = {"timm": (0.92, 2), "simple-vit": (0.95, 2)}


def _golden(name: str) -> tuple[dict, np.ndarray, np.ndarray | None]:
    entry = MANIFEST[name]
    with np.load(GOLDENS / entry["file"], allow_pickle=False) as data:
        pe = data["pe_t"].T
        pe64 = data["pe64_t"].T if "pe64_t" in data.files else None
    assert list(pe.shape) == entry["shape"]
    return dict(entry["params"]), pe, pe64


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def _largest_position(params: dict) -> Fraction:
    """The largest position any axis of the golden reaches (its angles are at most this)."""
    h, w = params["grid"]
    scale = Fraction(params.get("interpolation_scale", 1.0))
    if params["layout"] == "cogvideox":
        t_scale = Fraction(params.get("temporal_interpolation_scale", 1.0))
        return max(Fraction(max(h, w) - 1) / scale, Fraction(params.get("frames", 1) - 1) / t_scale)
    if params["layout"] == "dit":
        return Fraction(params["base_size"]) / scale
    if params["layout"] == "sd3":
        return Fraction(params["base_size"]) / scale
    return Fraction(max(h, w) - 1)


@pytest.mark.parametrize("name", list(MANIFEST))
def test_framework_arithmetic_against_the_libraries(name):
    params, want, _ = _golden(name)
    got = posenc_cli.sincos2d(**params, arithmetic="framework").array
    assert got.shape == want.shape and got.dtype == np.float32
    if params["layout"] in FLOAT32_AGREEMENT:
        share, most = FLOAT32_AGREEMENT[params["layout"]]
        ulps = _ulps(got, want)
        assert np.mean(ulps == 0) >= share and ulps.max() <= most, (np.mean(ulps == 0), ulps.max())
    else:
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("name", list(MANIFEST))
def test_exact_within_the_float32_rounding_of_the_goldens(name):
    """Each golden rounds its positions and frequencies to float32 (a relative 2**-22 of the angle at most, with
    every rounding of the float32 code) and its sine and cosine by an ulp or two."""
    params, want, want64 = _golden(name)
    got = posenc_cli.sincos2d(**params).array
    bound = float(_largest_position(params)) * 2.0**-21 + 2 * np.spacing(np.abs(want))
    assert np.all(np.abs(got.astype(np.float64) - want) <= bound)
    if want64 is not None:
        got64 = posenc_cli.sincos2d(**params, dtype="float64").array
        assert np.all(np.abs(got64 - want64) <= float(_largest_position(params)) * 2.0**-22 + np.spacing(1.0))


@pytest.mark.parametrize("name", ["dit_xl2_256_16x16_d1152", "pixart_alpha_512_32x32_d1152"])
def test_integer_positions_are_the_libraries_float32_tables_bit_for_bit(name):
    """DiT and PixArt at their own resolution: integer positions, float64 code rounded once to float32, so the
    correctly rounded table is theirs but where an exact value lies within 1e-15 of a float32 boundary."""
    params, want, _ = _golden(name)
    assert posenc_cli.sincos2d(**params).array.tobytes() == want.tobytes()


# ----------------------------------------------------------------------------------------------------- mpmath
def _expected(params: dict, row: int, col: int) -> mpmath.mpf:
    """The entry by the formula of docs/tables.md, written out here with mpmath: rows and columns decoded, the
    exact rational position, the frequency ``base**(-k/denominator)``."""
    layout, d = params["layout"], params["d_model"]
    h, w = params["grid"]
    base = mpmath.mpf(params.get("base", 10000.0))
    row -= params.get("extra_tokens", 0)
    if layout == "cogvideox":
        t, rest = divmod(row, h * w)
        y, x = divmod(rest, w)
        qt, qs = d // 8, 3 * d // 16
        if col < 2 * qt:
            axis, fn, k, denom = "t", col // qt, col % qt, qt
        else:
            c = col - 2 * qt
            axis, fn, k, denom = ("x", "x", "y", "y")[c // qs], (0, 1, 0, 1)[c // qs], c % qs, qs
        s = Fraction(params.get("interpolation_scale", 1.0))
        pos = {"t": Fraction(t) / Fraction(params.get("temporal_interpolation_scale", 1.0)), "x": x / s, "y": y / s}
    else:
        q = d // 4
        block, k = divmod(col, q)
        if layout == "timm":
            first, second = ("x", "y") if params.get("reverse_coord") else ("y", "x")
            if params.get("reverse_coord"):
                x, y = divmod(row, h)
            else:
                y, x = divmod(row, w)
            order = (first, first, second, second) if params.get("interleave_sin_cos") else (first, second) * 2
            fns = (0, 1, 0, 1) if params.get("interleave_sin_cos") else (0, 0, 1, 1)
            axis, fn = order[block], fns[block]
        else:
            y, x = divmod(row, w)
            axis, fn = ("x", "x", "y", "y")[block], (0, 1, 0, 1)[block]
        denom = q - 1 if layout == "simple-vit" else q
        pos = {"x": Fraction(x), "y": Fraction(y)}
        if layout in ("dit", "sd3"):
            interpolation = Fraction(params.get("interpolation_scale", 1.0))
            if layout == "dit":
                pos = {"x": x * Fraction(params["base_size"], w), "y": y * Fraction(params["base_size"], h)}
            else:
                most = params["pos_embed_max_size"]
                scale = Fraction(params["base_size"], most)
                pos = {"x": (x + (most - w) // 2) * scale, "y": (y + (most - h) // 2) * scale}
            pos = {a: p / interpolation for a, p in pos.items()}
    p = pos[axis]
    angle = mpmath.mpf(p.numerator) / p.denominator * base ** (-mpmath.mpf(k) / denom)
    return mpmath.sin(angle) if fn == 0 else mpmath.cos(angle)


MPMATH_CASES = [
    {"layout": "timm", "grid": [3, 5], "d_model": 16},
    {"layout": "timm", "grid": [3, 5], "d_model": 16, "reverse_coord": True},
    {"layout": "timm", "grid": [4, 3], "d_model": 24, "interleave_sin_cos": True, "base": 100.0},
    {"layout": "timm", "grid": [4, 3], "d_model": 24, "interleave_sin_cos": True, "reverse_coord": True},
    {"layout": "simple-vit", "grid": [5, 7], "d_model": 32},
    {"layout": "dit", "grid": [6, 10], "d_model": 16, "base_size": 4, "interpolation_scale": 0.75},
    {"layout": "dit", "grid": [5, 7], "d_model": 32, "base_size": 6, "interpolation_scale": 0.3, "extra_tokens": 2},
    {"layout": "sd3", "grid": [3, 5], "d_model": 16, "base_size": 64, "pos_embed_max_size": 192},
    {
        "layout": "sd3",
        "grid": [4, 2],
        "d_model": 16,
        "base_size": 3,
        "pos_embed_max_size": 7,
        "interpolation_scale": 1.5,
    },
    {"layout": "cogvideox", "grid": [3, 5], "frames": 3, "d_model": 32, "interpolation_scale": 1.875},
    {"layout": "cogvideox", "grid": [2, 3], "frames": 4, "d_model": 64, "temporal_interpolation_scale": 0.3},
]


@pytest.mark.parametrize("params", MPMATH_CASES, ids=lambda p: "-".join(map(str, p.values())))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_entries_against_mpmath(params, dtype):
    mpmath.mp.dps = 60
    table = posenc_cli.sincos2d(**params, dtype=np.dtype(dtype).name).array
    zero = params.get("extra_tokens", 0)
    assert not table[:zero].any()
    rows = sorted({zero, zero + 1, (zero + table.shape[0]) // 2, table.shape[0] - 1})
    for row in rows:
        for col in range(table.shape[1]):
            assert table[row, col] == rounded(_expected(params, row, col), dtype), (row, col)


# ---------------------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    ("layout", "option", "value"),
    [
        ("timm", "cls_token", True), ("mae", "reverse_coord", True), ("dit", "interleave_sin_cos", True),
        ("mae", "extra_tokens", 1), ("timm", "base_size", 16), ("simple-vit", "interpolation_scale", 2.0),
        ("dit", "pos_embed_max_size", 192), ("sd3", "frames", 4), ("dit", "temporal_interpolation_scale", 1.0),
        ("cogvideox", "cls_token", True),
    ],
)  # fmt: skip
def test_an_option_of_one_layout_is_refused_on_another(layout, option, value, tmp_path):
    with pytest.raises(SpecError) as err:
        posenc_cli.sincos2d(4, 4, 32, layout=layout, **{option: value})
    assert err.value.param == option and layout in str(err.value) and "\n" not in str(err.value)
    flag = "--" + option.replace("_", "-")
    argv = ["sincos2d", "-g", "4", "-d", "32", "--layout", layout, flag, *([] if value is True else [str(value)])]
    result = CliRunner().invoke(cli, [*argv, "-o", str(tmp_path / "t.npy")])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1 and flag in result.stderr
    assert not (tmp_path / "t.npy").exists()


@pytest.mark.parametrize(
    ("kwargs", "param", "says"),
    [
        ({"grid": (2, 4, 6), "layout": "dit"}, "grid", "only cogvideox"),
        ({"grid": (2, 4, 6), "layout": "mae"}, "grid", "only cogvideox"),
        ({"grid": (4, 6), "layout": "simple-vit", "d_model": 4}, "d_model", "at least 8"),
        ({"grid": (4, 6), "layout": "cogvideox", "d_model": 24}, "d_model", "multiple of 16"),
        ({"grid": (4, 6), "layout": "sd3", "base_size": 4}, "pos_embed_max_size", "sd3 needs"),
        ({"grid": (8, 6), "layout": "sd3", "base_size": 4, "pos_embed_max_size": 7}, "grid", "must fit"),
        ({"grid": (4, 6), "layout": "dit", "cls_token": True, "extra_tokens": 2}, "extra_tokens", "not both"),
        ({"grid": (4, 6), "layout": "vit"}, "layout", "one of mae, timm"),
    ],
)
def test_bad_layout_arguments(kwargs, param, says):
    kwargs.setdefault("d_model", 32)
    with pytest.raises(SpecError) as err:
        posenc_cli.sincos2d(**kwargs)
    assert err.value.param == param and says in str(err.value) and "\n" not in str(err.value)


def test_cogvideox_takes_three_sides_or_frames():
    three = posenc_cli.sincos2d(grid=(2, 3, 5), d_model=32, layout="cogvideox")
    frames = posenc_cli.sincos2d(grid=(3, 5), frames=2, d_model=32, layout="cogvideox")
    assert three.array.shape == (30, 32) and three.array.tobytes() == frames.array.tobytes()


@pytest.mark.parametrize("params", MPMATH_CASES[::2], ids=lambda p: p["layout"])
@pytest.mark.parametrize("arithmetic", ["exact", "framework"])
def test_a_table_is_made_again_from_its_record(params, arithmetic):
    table = posenc_cli.sincos2d(**params, arithmetic=arithmetic)
    again = posenc_cli.sincos2d(**KIND.from_record(table.params))
    assert again.params == table.params and again.array.tobytes() == table.array.tobytes()


def test_the_record_names_the_layout_and_its_columns():
    assert posenc_cli.sincos2d(3, 5, 16).params["layout"] == "[sin x | cos x | sin y | cos y], rows y * width + x"
    timm = posenc_cli.sincos2d(3, 5, 16, layout="timm", reverse_coord=True).params["layout"]
    assert timm == "timm: [sin x | sin y | cos x | cos y], rows x * height + y"


def test_cli_layout(tmp_path):
    out = tmp_path / "p.npy"
    argv = ["sincos2d", "--layout", "cogvideox", "-g", "3x5", "--frames", "2", "-d", "32"]
    result = CliRunner().invoke(cli, [*argv, "--interpolation-scale", "1.875", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    want = posenc_cli.sincos2d(grid=(2, 3, 5), d_model=32, layout="cogvideox", interpolation_scale=1.875).array
    assert np.load(out).tobytes() == want.tobytes()
