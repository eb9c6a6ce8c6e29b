"""posenc axial (:mod:`posenc_cli.kinds.axial`, :mod:`posenc_cli.encodings.axial_rope`): exact values against
mpmath from each style's formula written out here, framework values against the frameworks' own goldens
(tests/goldens/axial_rope: transformers' vision towers, diffusers' FluxPosEmbed), the command line."""

from __future__ import annotations

import json
from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from posenc_cli.cli import cli
from posenc_cli.errors import SpecError
from posenc_cli.kinds.axial import axial

GOLDENS = Path(__file__).parent / "goldens" / "axial_rope"
#: The goldens of the styles this file tests (timm-pixel's: tests/test_axial_pixel.py).
MANIFEST = {
    name: entry
    for name, entry in json.loads((GOLDENS / "manifest.json").read_text())["goldens"].items()
    if entry["params"]["model"] != "timm-pixel"
}


def arguments(params: dict) -> dict:
    args = dict(params)
    args["grid"] = tuple(args["grid"])
    if "axes_dim" in args:
        args["axes_dim"] = tuple(args["axes_dim"])
    if "ref_grid" in args:
        args["ref_grid"] = tuple(args["ref_grid"])
    return args


def mp_rows(model: str, height: int, width: int, head_dim: int, theta: float, **kw: object) -> tuple[list, list]:
    """The positions and per-column angles' frequencies of each style, from the frameworks' formulas, in mpmath."""
    mpmath.mp.prec = 120
    t = mpmath.mpf(theta)
    if model == "flux":
        text = int(kw.get("text_tokens", 0))
        axes = list(kw.get("axes_dim", (16, 56, 56)))
        ids = [(0, 0, 0)] * text + [(0, r, c) for r in range(height // 2) for c in range(width // 2)]
        cols = []
        for axis, dim in enumerate(axes):
            for k in range(dim // 2):
                cols += [(axis, t ** (-mpmath.mpf(2 * k) / dim))] * 2
        return ids, cols
    quarter = head_dim // 4
    if model == "pixtral":
        ids = [(r, c) for r in range(height) for c in range(width)]
        freqs = [t ** (-mpmath.mpf(2 * k) / head_dim) for k in range(head_dim // 2)]
        half = [(0, freqs[2 * j]) for j in range(quarter)] + [(1, freqs[2 * j + 1]) for j in range(quarter)]
    else:
        m = int(kw.get("spatial_merge_size", 2))
        ids = [
            (by * m + y, bx * m + x)
            for by in range(height // m) for bx in range(width // m) for y in range(m) for x in range(m)
        ]  # fmt: skip
        freqs = [t ** (-mpmath.mpf(2 * j) / (head_dim // 2)) for j in range(quarter)]
        half = [(0, f) for f in freqs] + [(1, f) for f in freqs]
    return ids, half + half


@pytest.mark.parametrize(
    "model, grid, head_dim, theta, kw",
    [
        ("pixtral", (3, 5), 16, 10000.0, {}),
        ("pixtral", (4, 2), 8, 100.0, {}),
        ("qwen2-vl", (4, 6), 16, 10000.0, {"spatial_merge_size": 2}),
        ("qwen2-vl", (3, 3), 8, 50.0, {"spatial_merge_size": 1}),
        ("flux", (4, 6), 12, 10000.0, {"axes_dim": (4, 4, 4), "text_tokens": 2}),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exact_is_the_correctly_rounded_formula(model, grid, head_dim, theta, kw, dtype):
    table = axial(model, grid, head_dim, theta=theta, dtype=dtype, **kw)
    ids, cols = mp_rows(model, *grid, head_dim, theta, **kw)
    assert table.arrays["cos"].shape == (len(ids), head_dim)
    for part, fn in (("cos", mpmath.cos), ("sin", mpmath.sin)):
        want = np.array([[float(fn(pos[a] * f)) for a, f in cols] for pos in ids]).astype(dtype)
        assert np.array_equal(table.arrays[part], want), part


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_framework_is_within_an_ulp_of_the_framework(name):
    golden = np.load(GOLDENS / MANIFEST[name]["file"])
    table = axial(**arguments(MANIFEST[name]["params"]), arithmetic="framework")
    for part in ("cos", "sin"):
        ours, theirs = table.arrays[part], golden[part]
        assert ours.shape == theirs.shape
        ulps = np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32))
        assert ulps.max() <= 1, (part, ulps.max())
        # torch's vectorised float32 cos/sin is within an ulp; posenc rounds correctly. diffusers' FLUX (float64)
        # matches bit for bit; transformers' towers in at least 85% of the entries (93% at Pixtral-12B's grid).
        share = (ours == theirs).mean()
        assert share == 1.0 if MANIFEST[name]["params"]["model"] == "flux" else share >= 0.85, (part, share)


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_exact_is_within_the_frameworks_float32_error(name):
    params = arguments(MANIFEST[name]["params"])
    golden = np.load(GOLDENS / MANIFEST[name]["file"])
    table = axial(**params, dtype="float64")
    reach = max(params["grid"]) + 1  # the largest angle is below the largest position (frequency <= 1)
    for part in ("cos", "sin"):
        err = np.abs(table.arrays[part] - golden[part].astype(np.float64))
        assert err.max() <= 2.0**-22 * (1 + reach), (part, err.max())


def test_the_recorded_layout_and_window_order():
    table = axial("qwen2.5-vl", (8, 12), 8, window_size=112, patch_size=14, arithmetic="framework")
    assert table.params["layout"] == "[h | w | h | w], rows in spatial-merge blocks, in window order"
    plain = axial("qwen2-vl", (8, 12), 8)
    assert sorted(map(tuple, table.arrays["cos"].tolist())) == sorted(map(tuple, plain.arrays["cos"].tolist()))


def test_cli_write_verify_inspect(tmp_path):
    runner = CliRunner()
    out = tmp_path / "q.npz"
    args = ["axial", "-m", "qwen2.5-vl", "-g", "8x12", "--head-dim", "80", "--window-size", "112"]
    result = runner.invoke(cli, [*args, "--arithmetic", "framework", "-o", str(out)])
    assert result.exit_code == 0, result.output
    with np.load(out) as data:
        gold = np.load(GOLDENS / "qwen2_5_vl_8x12_hd80_window112.npz")
        assert data["cos"].shape == gold["cos"].shape == (96, 80)
    result = runner.invoke(cli, ["verify", str(out)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["inspect", str(out)])
    assert result.exit_code == 0 and "axial_rope" in result.output and "window order" in result.output
    flux = tmp_path / "f.safetensors"
    result = runner.invoke(cli, ["axial", "-m", "flux", "-g", "4x6", "--head-dim", "128", "-o", str(flux)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(cli, ["verify", str(flux)]).exit_code == 0


@pytest.mark.parametrize(
    "args, said",
    [
        (["-m", "pixtral", "-g", "4x4", "--head-dim", "66"], "head_dim must be a multiple of 4"),
        (["-m", "pixtral", "-g", "4x4", "--head-dim", "64", "--window-size", "112"], "pixtral does not take it"),
        (["-m", "qwen2-vl", "-g", "7x12", "--head-dim", "80"], "multiples of spatial_merge_size"),
        (["-m", "qwen2-vl", "-g", "8x12", "--head-dim", "80", "--window-size", "112"], "qwen2-vl does not take"),
        (["-m", "qwen2.5-vl", "-g", "8x12", "--head-dim", "80", "--patch-size", "14"], "give --window-size"),
        (["-m", "flux", "-g", "5x6", "--head-dim", "128"], "sides must be even"),
        (["-m", "flux", "-g", "4x6", "--head-dim", "128", "--axes-dim", "16,56"], "three widths"),
        (["-m", "flux", "-g", "4x6", "--head-dim", "64"], "add up to head_dim"),
        (["-m", "sd3", "-g", "4x6", "--head-dim", "64"], "sd3"),
        (["-m", "llama4", "-g", "24x16", "--head-dim", "88"], "over a square grid"),
        (["-m", "llama4", "-g", "24", "--head-dim", "90"], "head_dim must be a multiple of 4"),
        (["-m", "llama4", "-g", "24", "--head-dim", "88", "--ref-grid", "16"], "llama4 does not take it"),
        (["-m", "pixtral", "-g", "4x4", "--head-dim", "64", "--ref-grid", "16"], "pixtral does not take it"),
        (["-m", "eva02", "-g", "16", "--head-dim", "64", "--text-tokens", "4"], "eva02 does not take it"),
        (["-m", "eva02", "-g", "16", "--head-dim", "62"], "head_dim must be a multiple of 4"),
        (["-m", "eva02", "-g", "16", "--head-dim", "64", "--ref-grid", "0x16"], "ref-grid"),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(tmp_path, args, said):
    out = tmp_path / "t.npz"
    result = CliRunner().invoke(cli, ["axial", *args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert said in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not out.exists()


def test_the_api_refuses_with_the_parameter_named():
    with pytest.raises(SpecError) as caught:
        axial("flux", (4, 6), 128, frames=2)
    assert caught.value.param == "frames"


# ------------------------------------------------------------------------------------ video styles (issue #28)
def mp_video(model: str, grid: tuple, head_dim: int, theta: float, axes_dim=(16, 56, 56), patch=(1, 2)) -> tuple:
    """The rows' (t, h, w) and the columns' (axis, frequency) of HunyuanVideo's and Wan's tables, from diffusers'
    formulas written out here in mpmath: tokens the latent's sides over the patch, row-major; each axis's
    frequencies theta**(-2k/D) twice side by side (Wan's D: head_dim - 4 * (head_dim // 6), then 2 * (head_dim // 6)
    for h and w)."""
    mpmath.mp.prec = 120
    t = mpmath.mpf(theta)
    dims = list(axes_dim) if model == "hunyuan-video" else [head_dim - 4 * (head_dim // 6)] + [2 * (head_dim // 6)] * 2
    sizes = (grid[0] // patch[0], grid[1] // patch[1], grid[2] // patch[1])
    ids = [(f, r, c) for f in range(sizes[0]) for r in range(sizes[1]) for c in range(sizes[2])]
    cols = []
    for axis, dim in enumerate(dims):
        for k in range(dim // 2):
            cols += [(axis, t ** (-mpmath.mpf(2 * k) / dim))] * 2
    return ids, cols


@pytest.mark.parametrize(
    "model, grid, head_dim, kw, patch",
    [
        ("hunyuan-video", (3, 4, 6), 128, {}, (1, 2)),
        ("hunyuan-video", (4, 3, 6), 12, {"axes_dim": (4, 4, 4), "theta": 100.0, "patch_size": 3}, (1, 3)),
        ("wan", (3, 4, 6), 128, {}, (1, 2)),
        ("wan", (4, 2, 4), 20, {"patch_size_t": 2, "theta": 50.0}, (2, 2)),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_video_exact_is_the_correctly_rounded_formula(model, grid, head_dim, kw, patch, dtype):
    table = axial(model, grid, head_dim, dtype=dtype, **kw)
    theta = kw.get("theta", 256.0 if model == "hunyuan-video" else 10000.0)
    ids, cols = mp_video(model, grid, head_dim, theta, kw.get("axes_dim", (16, 56, 56)), patch)
    assert table.arrays["cos"].shape == (len(ids), head_dim) and table.params["theta"] == theta
    for part, fn in (("cos", mpmath.cos), ("sin", mpmath.sin)):
        want = np.array([[float(fn(pos[a] * f)) for a, f in cols] for pos in ids]).astype(dtype)
        assert np.array_equal(table.arrays[part], want), part


@pytest.mark.parametrize("name", ["hunyuan_video_latent1x2x1024", "wan_latent1x2x1024_hd128"])
def test_video_exact_at_the_far_positions_is_mpmath(name):
    """The widest golden's last rows (position 511 on the w axis), every column, against mpmath."""
    params = arguments(MANIFEST[name]["params"])
    table = axial(**params, dtype="float64")
    ids, cols = mp_video(params["model"], params["grid"], params["head_dim"], params["theta"])
    for row in (len(ids) - 1, len(ids) // 2 + 3):
        for part, fn in (("cos", mpmath.cos), ("sin", mpmath.sin)):
            want = [float(fn(ids[row][a] * f)) for a, f in cols]
            assert table.arrays[part][row].tolist() == want, (row, part)


#: The share of entries bit-identical to diffusers' own (the rest one ulp away): Wan's float64 path matches bit for
#: bit; HunyuanVideo's float32 cos/sin (torch's vectorised, within an ulp) in 94.7% to 98.7% of them.
VIDEO_SHARE = {"hunyuan-video": 0.94, "wan": 1.0}


@pytest.mark.parametrize("name", sorted(n for n in MANIFEST if MANIFEST[n]["params"]["model"] in VIDEO_SHARE))
def test_video_framework_is_diffusers_own(name):
    golden = np.load(GOLDENS / MANIFEST[name]["file"])
    params = MANIFEST[name]["params"]
    table = axial(**arguments(params), arithmetic="framework")
    assert table.params["layout"] == "[t | h | w], each frequency twice side by side, rows (t, h, w) row-major"
    for part in ("cos", "sin"):
        ours, theirs = table.arrays[part], golden[part]
        assert ours.shape == theirs.shape == tuple(MANIFEST[name]["shape"])
        ulps = np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32))
        assert ulps.max() <= 1, (part, ulps.max())
        assert (ours == theirs).mean() >= VIDEO_SHARE[params["model"]], part


def test_video_cli_write_verify_inspect(tmp_path):
    runner = CliRunner()
    out = tmp_path / "h.npz"
    args = ["axial", "-m", "hunyuan-video", "-g", "4x12x16", "--head-dim", "128", "--arithmetic", "framework"]
    result = runner.invoke(cli, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    with np.load(out) as data, np.load(GOLDENS / "hunyuan_video_latent4x12x16.npz") as gold:
        assert data["cos"].shape == gold["cos"].shape == (192, 128)
    assert runner.invoke(cli, ["verify", str(out)]).exit_code == 0
    result = runner.invoke(cli, ["inspect", str(out)])
    assert result.exit_code == 0 and "grid_frames=4" in result.output and "theta=256.0" in result.output
    wan = tmp_path / "w.safetensors"
    args = ["axial", "-m", "wan", "-g", "4x4x8", "--head-dim", "24", "--patch-size-t", "2", "--patch-size", "4"]
    result = runner.invoke(cli, [*args, "-o", str(wan)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(cli, ["verify", str(wan)]).exit_code == 0


@pytest.mark.parametrize(
    "args, said",
    [
        (["-m", "wan", "-g", "8x12", "--head-dim", "128"], "wan takes a video latent's grid TxHxW"),
        (["-m", "pixtral", "-g", "3x8x12", "--head-dim", "64"], "pixtral takes a grid HxW; a TxHxW grid is"),
        (["-m", "flux", "-g", "3x8x12", "--head-dim", "128"], "flux takes a grid HxW"),
        (["-m", "hunyuan-video", "-g", "3x7x12", "--head-dim", "128"], "its sides must be multiples, got 3x7x12"),
        (["-m", "wan", "-g", "4x8x12", "--head-dim", "128", "--patch-size-t", "3"], "patches the latent 3x2x2"),
        (["-m", "wan", "-g", "1x2x2050", "--head-dim", "128"], "wan precomputes 1024 positions per axis"),
        (["-m", "wan", "-g", "1x2x4", "--head-dim", "23"], "wan's head_dim must be even and at least 6"),
        (["-m", "wan", "-g", "1x2x4", "--head-dim", "4"], "wan's head_dim must be even and at least 6"),
        (["-m", "hunyuan-video", "-g", "1x2x4", "--head-dim", "64"], "add up to head_dim = 64"),
        (["-m", "hunyuan-video", "-g", "1x2x4", "--head-dim", "32", "--axes-dim", "16,16"], "three positive even"),
        (["-m", "wan", "-g", "1x2x4", "--head-dim", "128", "--axes-dim", "16,56,56"], "wan does not take it"),
        (["-m", "wan", "-g", "1x2x4", "--head-dim", "128", "--text-tokens", "4"], "wan does not take it"),
        (["-m", "hunyuan-video", "-g", "1x2x4", "--head-dim", "128", "--frames", "2"], "hunyuan-video does not"),
        (["-m", "flux", "-g", "4x6", "--head-dim", "128", "--patch-size-t", "1"], "flux does not take it"),
        (["-m", "qwen2-vl", "-g", "8x12", "--head-dim", "80", "--patch-size", "2"], "qwen2-vl does not take it"),
        (["-m", "wan", "-g", "1x2x4x4", "--head-dim", "128"], "--grid"),
    ],
)
def test_video_bad_options_are_one_line_and_write_nothing(tmp_path, args, said):
    out = tmp_path / "t.npz"
    result = CliRunner().invoke(cli, ["axial", *args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert said in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not out.exists()


@pytest.mark.parametrize("command", [["sincos2d", "--d-model", "8"], ["detr", "--d-model", "8"]])
def test_the_2d_kinds_refuse_a_video_grid(tmp_path, command):
    out = tmp_path / "t.npz"
    result = CliRunner().invoke(cli, [command[0], "-g", "3x8x12", *command[1:], "-o", str(out)])
    assert result.exit_code == 2 and "grid must be (height, width)" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and not out.exists()


def test_the_video_api_refuses_with_the_parameter_named():
    for call, param in (
        (lambda: axial("wan", (3, 8, 12), 128, patch_size_t=0), "patch_size_t"),
        (lambda: axial("hunyuan-video", (3, 8), 128), "grid"),
        (lambda: axial("qwen2-vl", (2, 8, 12), 80), "grid"),
        (lambda: axial("pixtral", (8, 12), 64, patch_size_t=1), "patch_size_t"),
    ):
        with pytest.raises(SpecError) as caught:
            call()
        assert caught.value.param == param


def test_a_manifest_takes_a_video_grid_as_text_or_array(tmp_path):
    """``posenc build``: a video latent's grid as ``"TxHxW"`` or ``[T, H, W]`` gives the table the API gives."""
    (tmp_path / "m.toml").write_text(
        '[[table]]\ncommand = "axial"\nmodel = "wan"\ngrid = "3x8x12"\nhead_dim = 128\noutput = "w.npz"\n\n'
        '[[table]]\ncommand = "axial"\nmodel = "hunyuan-video"\ngrid = [3, 8, 12]\nhead_dim = 128\n'
        'arithmetic = "framework"\noutput = "h.npz"\n'
    )
    result = CliRunner().invoke(cli, ["build", str(tmp_path / "m.toml")])
    assert result.exit_code == 0, result.output
    for name, table in (
        ("w.npz", axial("wan", (3, 8, 12), 128)),
        ("h.npz", axial("hunyuan-video", (3, 8, 12), 128, arithmetic="framework")),
    ):
        with np.load(tmp_path / name) as data:
            assert all(np.array_equal(data[part], table.arrays[part]) for part in ("cos", "sin")), name


def mp_llama4_eva02(model: str, height: int, width: int, head_dim: int, theta: float, ref: tuple | None) -> list:
    """Per row, per output column, the angle as an mpmath number, from the frameworks' code read as real numbers:
    Llama 4's ``(img_idx % idx + 1, img_idx // idx + 1) * rope_freq``, the class token (``img_idx = -2``) masked to
    0, ``view_as_complex`` pairs; timm's ``grid * bands`` with ``t / side * ref`` and ``_rope_layout``."""
    mpmath.mp.prec = 120
    t = mpmath.mpf(theta)
    freqs = [t ** (-mpmath.mpf(k) / (head_dim // 4)) for k in range(head_dim // 4)]
    rows = []
    if model == "llama4":
        for idx in [*range(height * width), -2]:
            x, y = idx % width + 1, idx // width + 1
            half = [0 if idx < 0 else x * f for f in freqs] + [0 if idx < 0 else y * f for f in freqs]
            rows.append([a for a in half for _ in (0, 1)])
        return rows
    for r in range(height):
        for c in range(width):
            pos = (r, c) if ref is None else (mpmath.mpf(r) / height * ref[0], mpmath.mpf(c) / width * ref[1])
            half = [pos[0] * f for f in freqs] + [pos[1] * f for f in freqs]
            rows.append([a for a in half for _ in (0, 1)])
    return rows


@pytest.mark.parametrize(
    "model, grid, head_dim, theta, ref",
    [
        ("llama4", (3, 3), 8, 10000.0, None),
        ("llama4", (4, 4), 16, 100.0, None),
        ("eva02", (3, 5), 8, 10000.0, (4, 4)),
        ("eva02", (5, 3), 12, 10000.0, (16, 16)),
        ("eva02", (4, 4), 16, 50.0, None),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_llama4_eva02_exact_is_the_correctly_rounded_formula(model, grid, head_dim, theta, ref, dtype):
    table = axial(model, grid, head_dim, theta=theta, dtype=dtype, ref_grid=ref)
    angles = mp_llama4_eva02(model, *grid, head_dim, theta, ref)
    assert table.arrays["cos"].shape == (len(angles), head_dim)
    for part, fn in (("cos", mpmath.cos), ("sin", mpmath.sin)):
        want = np.array([[float(fn(a)) for a in row] for row in angles]).astype(dtype)
        assert np.array_equal(table.arrays[part], want), part


@pytest.mark.parametrize("name", ["eva02_b14_12x20_ref16x16", "llama4_scout_24x24_hd88"])
def test_golden_sized_tables_against_mpmath_at_some_entries(name):
    params = arguments(MANIFEST[name]["params"])
    table = axial(**params, dtype="float64")
    angles = mp_llama4_eva02(params["model"], *params["grid"], params["head_dim"], 10000.0, params.get("ref_grid"))
    for row, col in [(0, 0), (1, 5), (37, 2), (119, 31), (239, 63), (-1, 0), (-1, 1)]:
        for part, fn in (("cos", mpmath.cos), ("sin", mpmath.sin)):
            assert table.arrays[part][row, col] == float(fn(angles[row][col])), (part, row, col)


def test_eva02_ref_grid_is_recorded_and_regenerated(tmp_path):
    runner = CliRunner()
    out = tmp_path / "eva.npz"
    args = ["axial", "-m", "eva02", "-g", "12x20", "--head-dim", "64", "--ref-grid", "16x16"]
    result = runner.invoke(cli, [*args, "--arithmetic", "framework", "-o", str(out)])
    assert result.exit_code == 0, result.output
    gold = np.load(GOLDENS / "eva02_b14_12x20_ref16x16.npz")
    with np.load(out) as data:
        assert data["cos"].shape == gold["cos"].shape == (240, 64)
        ulps = np.abs(data["sin"].view(np.int32).astype(np.int64) - gold["sin"].view(np.int32))
        assert ulps.max() <= 1
    assert runner.invoke(cli, ["verify", str(out)]).exit_code == 0
    result = runner.invoke(cli, ["inspect", str(out)])
    assert result.exit_code == 0 and "ref_grid" in result.output, result.output


def test_llama4_class_token_is_last_at_angle_zero():
    table = axial("llama4", 24, 88)
    assert table.arrays["cos"].shape == (577, 88)
    assert (table.arrays["cos"][-1] == 1).all() and (table.arrays["sin"][-1] == 0).all()
    gold = np.load(GOLDENS / "llama4_scout_24x24_hd88.npz")
    assert (gold["cos"][-1] == 1).all() and (gold["sin"][-1] == 0).all()
