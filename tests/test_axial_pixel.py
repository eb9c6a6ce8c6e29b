"""posenc axial -m timm-pixel (:mod:`posenc_cli.encodings.axial_pixel`): timm's pixel-band ``RotaryEmbedding``.

Exact values against mpmath from timm's formula written out here (positions ``linspace(-1, 1)``, bands
``linspace(1, max_res/2)`` or ``2**linspace(0, log2(max_res) - 1)``, times pi); framework values against goldens
timm made itself (tests/goldens/axial_rope: ``RotaryEmbedding.get_embed`` and, for its parts, ``torch.linspace`` and
``pixel_freq_bands``); the command line."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli
from posenc_cli.encodings import axial_pixel
from posenc_cli.errors import SpecError
from posenc_cli.kinds.axial import axial

GOLDENS = Path(__file__).parent / "goldens" / "axial_rope"
_MANIFEST = json.loads((GOLDENS / "manifest.json").read_text())
PIXEL = sorted(name for name, entry in _MANIFEST["goldens"].items() if entry["params"]["model"] == "timm-pixel")
PARTS = _MANIFEST["parts"]["timm_pixel_parts"]


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32))


def mp_table(grid: tuple[int, int], head_dim: int, max_res: int, linear: bool, part: str) -> np.ndarray:
    """The real table in mpmath (float64 of each value): row (r, c) row-major, half columns the height axis's bands
    then the width axis's, each twice side by side. ``c = p * b`` is an exact Fraction where ``b`` is rational
    (linear bands; log bands ``(M/2)**(k/(n-1))`` at an integer exponent, and at ``M = 16`` where ``8**(k/3)`` is
    ``2**k``), so that ``sinpi``/``cospi`` see integers and half-integers exactly."""
    mpmath.mp.prec = 200
    n = head_dim // 4

    def positions(s: int) -> list[Fraction]:
        return [Fraction(-1)] if s == 1 else [Fraction(-1) + Fraction(2 * i, s - 1) for i in range(s)]

    def band(k: int) -> Fraction | mpmath.mpf:
        if n == 1:
            return Fraction(1)
        if linear:
            return 1 + (Fraction(max_res, 2) - 1) * Fraction(k, n - 1)
        e = Fraction(k, n - 1)
        if e.denominator == 1:
            return Fraction(max_res, 2) ** e.numerator
        if max_res == 16 and n == 4:
            return Fraction(2) ** k
        return mpmath.mpf(2) ** ((mpmath.log(max_res, 2) - 1) * k / (n - 1))

    fn = mpmath.sinpi if part == "sin" else mpmath.cospi

    def value(p: Fraction, b: Fraction | mpmath.mpf) -> float:
        if isinstance(b, Fraction):
            c = p * b
            return float(fn(mpmath.mpf(c.numerator) / c.denominator))
        return float(fn(mpmath.mpf(p.numerator) / p.denominator * b))

    bands = [band(k) for k in range(n)]
    h = [[value(p, b) for b in bands] for p in positions(grid[0])]
    w = [[value(p, b) for b in bands] for p in positions(grid[1])]
    rows = [h[r] + w[c] for r in range(grid[0]) for c in range(grid[1])]
    return np.repeat(np.array(rows, np.float64), 2, axis=1)


@pytest.mark.parametrize(
    "grid, head_dim, max_res, linear",
    [
        ((7, 9), 64, 224, True),
        ((7, 9), 64, 224, False),
        ((1, 3), 8, 100, False),  # one position: -1
        ((4, 1), 4, 224, True),  # one band: pi
        ((5, 7), 16, 16, False),  # rational log bands 2**k: Niven's exact +-1/2 at p = +-1/3, +-2/3
        ((3, 6), 12, 225, True),  # an odd max_res: bands 1 + 111.5 k / 2
        ((2, 2), 24, 1000, False),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "q15"])
def test_exact_is_the_correctly_rounded_formula(grid, head_dim, max_res, linear, dtype):
    table = axial("timm-pixel", grid, head_dim, max_res=max_res, linear_bands=linear, dtype=dtype)
    for part in ("cos", "sin"):
        real = mp_table(grid, head_dim, max_res, linear, part)
        if dtype == "q15":  # round(v * 2**15), halves away from 0, 1.0 saturating to 32767
            want = np.clip(np.sign(real) * np.floor(np.abs(real) * 2**15 + 0.5), -(2**15), 2**15 - 1).astype(np.int16)
        else:
            want = real.astype(dtype)
        got = table.arrays[part]
        assert got.shape == want.shape == (grid[0] * grid[1], head_dim)
        assert np.array_equal(got, want), (part, np.argwhere(got != want)[:4])
        assert not np.signbit(got[want == 0]).any(), part  # exact zeros are written +0.0


def test_exact_zeros_and_niven_values():
    """sin(pi * p * b) at integer p * b is exactly 0 and cos exactly +-1; at p * b = +-1/6 the sine is exactly +-1/2."""
    table = axial("timm-pixel", (7, 1), 4, max_res=224, linear_bands=True, dtype="float64")
    sin, cos = table.arrays["sin"][:, 0], table.arrays["cos"][:, 0]  # one band, b = 1: p = -1, -2/3, ..., 1
    assert sin[[0, 3, 6]].tolist() == [0.0, 0.0, 0.0] and cos[[0, 3, 6]].tolist() == [-1.0, 1.0, -1.0]
    assert cos[[1, 2, 4, 5]].tolist() == [-0.5, 0.5, 0.5, -0.5]  # cos(pi/3) = 1/2
    sixth = axial("timm-pixel", (13, 1), 4, linear_bands=True, dtype="float64").arrays["sin"][:, 0]  # p = -1 + i/6
    assert sixth[[1, 5, 7, 11]].tolist() == [-0.5, -0.5, 0.5, 0.5] and sixth[[0, 6, 12]].tolist() == [0.0] * 3


@pytest.mark.parametrize("name", PIXEL)
def test_framework_is_timms_own(name):
    """timm's float32 pipeline: bands and angles bit for bit, sin/cos within an ulp (torch's vectorised sin/cos; posenc
    rounds correctly) in at least 93% of the entries identical. At 32 log bands (head_dim 128) torch's vectorised
    ``pow`` (AVX-512 blocks of 32) is an ulp off at band 24 of max_res 224: that band's columns then differ by up to
    that band's ulp in the angle (``|p| <= 1``), and every other column stays within an ulp."""
    entry = _MANIFEST["goldens"][name]
    params = {**entry["params"], "grid": tuple(entry["params"]["grid"])}
    golden = np.load(GOLDENS / entry["file"])
    table = axial(**params, arithmetic="framework")
    spec = axial_pixel.resolve(params["grid"], params["head_dim"], max_res=224, linear=params["linear_bands"])
    bands = axial_pixel.framework_bands(spec)
    n = spec.bands
    pow_off = [24] if params["head_dim"] == 128 else []
    cols = np.array([c for k in pow_off for c in (2 * k, 2 * k + 1, 2 * (n + k), 2 * (n + k) + 1)], np.int64)
    others = np.setdiff1d(np.arange(params["head_dim"]), cols)
    for part in ("cos", "sin"):
        ours, theirs = table.arrays[part], golden[part]
        assert ours.shape == theirs.shape == tuple(entry["shape"])
        assert ulps(ours[:, others], theirs[:, others]).max() <= 1, part
        assert (ours[:, others] == theirs[:, others]).mean() >= 0.93, part
        for k in pow_off:
            off = np.abs(ours[:, [2 * k, 2 * (n + k)]].astype(np.float64) - theirs[:, [2 * k, 2 * (n + k)]])
            assert 0 < off.max() <= np.spacing(bands[k]) + 2.0**-24, (part, off.max())


def test_framework_parts_are_torchs_bit_for_bit():
    """torch.linspace(-1, 1, s) for every side to 70 (its FMA-fused scalar loop, and AVX-512's vectorised one from 32
    sides) and pixel_freq_bands at every (max_res, n) of the golden, linear and log."""
    golden = np.load(GOLDENS / PARTS["file"])
    positions = np.concatenate([axial_pixel.linspace32(-1.0, 1.0, s) for s in PARTS["sides"]])
    assert np.array_equal(positions, golden["positions"])
    for kind in ("linear", "log"):
        specs = [axial_pixel.PixelSpec(1, 1, 4 * n, res, kind == "linear") for res, n in PARTS["bands"]]
        ours = np.concatenate([axial_pixel.framework_bands(spec) for spec in specs])
        assert np.array_equal(ours, golden[f"bands_{kind}"]), kind


def test_torchs_linspace_centre_is_not_zero():
    """1 - float32(1/3) * 3 rounded once (fused) is -2**-25, not 0: timm's centre position of 7 (of 9: 0)."""
    golden = np.load(GOLDENS / "timm_pixel_7x9_hd64_max224_log.npz")
    assert axial_pixel.linspace32(-1.0, 1.0, 7)[3] == np.float32(-(2.0**-25))
    centre = golden["sin"][3 * 9 + 4]  # row 3, column 4: both axes at the centre
    assert (centre[:32] < 0).all() and np.abs(centre[:32]).max() < 1e-4  # height: 7 positions, the centre -2**-25
    assert (centre[32:] == 0).all()  # width: 9 positions, step 0.25 exact, the centre 0
    table = axial("timm-pixel", (7, 9), 64, arithmetic="framework")
    assert np.array_equal(table.arrays["sin"][3 * 9 + 4], centre)


@pytest.mark.parametrize("name", PIXEL)
def test_exact_is_within_the_frameworks_float32_error(name):
    entry = _MANIFEST["goldens"][name]
    params = {**entry["params"], "grid": tuple(entry["params"]["grid"])}
    golden = np.load(GOLDENS / entry["file"])
    table = axial(**params, dtype="float64")
    reach = math.pi * params["max_res"] / 2 + 1  # the largest angle: |p| <= 1, the top band pi * max_res / 2
    for part in ("cos", "sin"):
        err = np.abs(table.arrays[part] - golden[part].astype(np.float64))
        assert err.max() <= 2.0**-21 * reach, (part, err.max())


def test_log2_of_max_res_is_pythons():
    """``math.log(max_res, 2) - 1`` (timm's) and posenc's correctly rounded logarithms give the same float32 linspace
    end at every max_res (glibc's float64 log is an ulp off at 9170, which float32 does not see)."""
    for res in [*range(1, 4097), 9170, 65535, 65536]:
        ours = np.float32(axial_pixel.log_bands_end(res))
        assert ours == np.float32(math.log(float(res), 2) - 1), res


def test_cli_write_verify_inspect(tmp_path):
    runner = CliRunner()
    out = tmp_path / "p.npz"
    args = ["axial", "-m", "timm-pixel", "-g", "7x9", "--head-dim", "64", "--linear-bands"]
    result = runner.invoke(cli, [*args, "--arithmetic", "framework", "-o", str(out)])
    assert result.exit_code == 0, result.output
    with np.load(out) as data, np.load(GOLDENS / "timm_pixel_7x9_hd64_max224_linear.npz") as gold:
        assert data["cos"].shape == gold["cos"].shape == (63, 64)
        assert ulps(data["sin"], gold["sin"]).max() <= 1
    assert runner.invoke(cli, ["verify", str(out)]).exit_code == 0
    result = runner.invoke(cli, ["inspect", str(out)])
    assert result.exit_code == 0 and "linear_bands=True" in result.output and "max_res=224" in result.output
    assert "theta" not in result.output
    header = tmp_path / "p.h"
    args = ["axial", "-m", "timm-pixel", "-g", "3", "--head-dim", "8", "--max-res", "100", "--no-linear-bands"]
    result = runner.invoke(cli, [*args, "-o", str(header)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(cli, ["verify", str(header)]).exit_code == 0


def test_the_defaults_are_timms():
    """max_res 224 and log bands, as ``RotaryEmbedding(dim)`` builds them."""
    table = axial("timm-pixel", (7, 9), 64, arithmetic="framework")
    assert table.params["max_res"] == 224 and table.params["linear_bands"] is False and "theta" not in table.params
    golden = np.load(GOLDENS / "timm_pixel_7x9_hd64_max224_log.npz")
    assert ulps(table.arrays["cos"], golden["cos"]).max() <= 1


@pytest.mark.parametrize(
    "args, said",
    [
        (["-g", "7x9", "--head-dim", "64", "--theta", "100"], "theta is not timm-pixel's"),
        (["-g", "7x9", "--head-dim", "62"], "head_dim must be a multiple of 4"),
        (["-g", "7x9", "--head-dim", "64", "--max-res", "0"], "--max-res"),
        (["-g", "3x7x9", "--head-dim", "64"], "timm-pixel takes a grid HxW"),
        (["-g", "7x9", "--head-dim", "64", "--ref-grid", "16"], "timm-pixel does not take it"),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(tmp_path, args, said):
    out = tmp_path / "t.npz"
    result = CliRunner().invoke(cli, ["axial", "-m", "timm-pixel", *args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert said in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not out.exists()


@pytest.mark.parametrize("model", ["eva02", "pixtral"])
@pytest.mark.parametrize("option", [["--max-res", "224"], ["--linear-bands"], ["--no-linear-bands"]])
def test_other_styles_refuse_the_pixel_options(tmp_path, model, option):
    out = tmp_path / "t.npz"
    result = CliRunner().invoke(cli, ["axial", "-m", model, "-g", "4", "--head-dim", "16", *option, "-o", str(out)])
    assert result.exit_code == 2 and f"{model} does not take it" in result.output, result.output
    assert not out.exists()


def test_the_api_refuses_with_the_parameter_named():
    for call, param in (
        (lambda: axial("timm-pixel", (4, 4), 16, theta=100.0), "theta"),
        (lambda: axial("timm-pixel", (4, 4), 16, max_res=0), "max_res"),
        (lambda: axial("timm-pixel", (4, 4), 16, linear_bands=1), "linear_bands"),  # type: ignore[arg-type]
        (lambda: axial("eva02", (4, 4), 16, max_res=224), "max_res"),
        (lambda: axial_pixel.resolve((4, 4), 16, linear=1), "linear_bands"),  # type: ignore[arg-type]
    ):
        with pytest.raises(SpecError) as caught:
            call()
        assert caught.value.param == param
