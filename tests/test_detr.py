"""DETR's sine position embedding: exact mode against mpmath, framework mode and exact mode against transformers'
own goldens (tests/goldens/detr), the CLI round trip, and hostile mask files.

transformers computes in float32 with its library's sin/cos (within an ulp, not correctly rounded), so
``--arithmetic framework`` (the same operations with correctly rounded sin/cos/pow) is within 1 ulp of every golden
entry, and identical in most; the exact table is within the framework's own float32 error of the angle.
"""

from __future__ import annotations

from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import SpecError
from posenc_cli.kinds.detr import detr

from .test_hostile_files import npy_bytes, npy_dict

GOLDENS = Path(__file__).resolve().parent / "goldens" / "detr"
NAMES = sorted(path.stem for path in GOLDENS.glob("*.npz"))


def golden(name: str) -> tuple[np.ndarray, dict[str, object]]:
    """The golden as posenc's layout ``(H * W, C)`` and the keywords that make it."""
    with np.load(GOLDENS / f"{name}.npz", allow_pickle=False) as data:
        pos, mask = data["pos"], (data["mask"] if "mask" in data else None)
    channels, height, width = pos.shape
    kwargs: dict[str, object] = {"grid": (height, width), "d_model": channels, "mask": mask}
    kwargs["normalize"] = "_raw" not in name
    kwargs["norm_scale"] = 1.0 if "scale1" in name else None
    kwargs["variant"] = "deformable" if name.startswith("deformable") else "detr"
    return pos.reshape(channels, height * width).T, kwargs


def mp_table(height, width, d_model, mask=None, normalize=True, norm_scale=None, variant="detr"):
    """The formula in mpmath at 60 digits (eps the decimal 1e-6, scale the real 2*pi)."""
    mpmath.mp.dps = 60
    m = np.ones((height, width), int) if mask is None else np.asarray(mask, int)
    y, x = np.cumsum(m, axis=0), np.cumsum(m, axis=1)
    n = d_model // 2
    scale = 2 * mpmath.pi if norm_scale is None else mpmath.mpf(norm_scale)
    offset = mpmath.mpf(1) / 2 if variant == "deformable" else 0
    eps = mpmath.mpf(1) / 10**6
    out = np.empty((height * width, d_model))
    for i in range(height):
        for j in range(width):
            coords = [mpmath.mpf(int(y[i, j])), mpmath.mpf(int(x[i, j]))]
            if normalize:
                coords = [
                    (coords[0] - offset) / (int(y[-1, j]) + eps) * scale,
                    (coords[1] - offset) / (int(x[i, -1]) + eps) * scale,
                ]
            for half, value in enumerate(coords):
                for c in range(n):
                    angle = value / mpmath.mpf(10000) ** (mpmath.mpf(2 * (c // 2)) / n)
                    entry = mpmath.sin(angle) if c % 2 == 0 else mpmath.cos(angle)
                    # sin(-10**6 * pi) = 0 exactly (a padded column of Deformable DETR); mpmath leaves 1e-54
                    out[i * width + j, half * n + c] = 0.0 if abs(entry) < 1e-40 else float(entry)
    return out


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"normalize": False},
        {"norm_scale": 1.0},
        {"variant": "deformable"},
        {"mask": np.array([[1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], np.uint8)},
        {"mask": np.array([[1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], bool), "variant": "deformable"},
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exact_is_the_correctly_rounded_formula(kwargs, dtype):
    want = mp_table(3, 4, 8, **kwargs).astype(dtype)  # float64 of the 60-digit value, then float32: one rounding
    got = detr((3, 4), 8, dtype=dtype, **kwargs).array  # unless the float64 lies on a float32 midpoint (never here)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("name", NAMES)
def test_framework_is_within_an_ulp_of_transformers(name):
    want, kwargs = golden(name)
    got = detr(arithmetic="framework", **kwargs).array
    ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 1
    assert (ulps == 0).mean() > 0.93  # 93.6 to 99.3 % identical: the rest is torch's sin/cos, not correctly rounded


@pytest.mark.parametrize("name", NAMES)
def test_exact_is_within_the_frameworks_float32_error(name):
    """transformers' entries carry the float32 error of their angle (a few 2**-24 of it) and of sin/cos; near a zero
    of sin(2*pi*y) that is large relative to the value, so the bound is absolute."""
    want, kwargs = golden(name)
    got = detr(**kwargs).array
    mp_scale = 2 * np.pi if kwargs["norm_scale"] is None else 1.0
    angle_bound = mp_scale if kwargs["normalize"] else max(want.shape)  # |angle| <= scale, or the largest sum
    if kwargs["variant"] == "deformable" and kwargs["mask"] is not None:
        angle_bound = 0.5 / 1e-6 * mp_scale  # a padded row's (0 - 0.5) / (0 + eps)
    assert np.abs(got.astype(np.float64) - want).max() <= 8 * 2.0**-24 * (angle_bound + 1)


def test_exact_agrees_with_the_framework_away_from_cancellation():
    want, kwargs = golden("detr_r50_25x34_d256")
    got = detr(**kwargs).array
    assert (got == want).mean() > 0.6  # 65.9 % identical


def test_cli_write_verify_inspect(tmp_path):
    runner = CliRunner()
    out = tmp_path / "detr.npz"
    ok = runner.invoke(cli, ["detr", "-g", "25x34", "-d", "256", "-o", str(out)])
    assert ok.exit_code == 0, ok.stderr
    want, _ = golden("detr_r50_25x34_d256")
    assert np.abs(np.load(out)["pe"].astype(np.float64) - want).max() < 1e-5
    assert runner.invoke(cli, ["verify", str(out)]).exit_code == 0
    shown = runner.invoke(cli, ["inspect", str(out)])
    assert shown.exit_code == 0 and "detr_sine" in shown.output and "850 x 256" in shown.output
    fw = tmp_path / "fw.safetensors"
    args = ["detr", "-g", "5x7", "-d", "16", "--variant", "deformable", "--arithmetic", "framework", "-o", str(fw)]
    assert runner.invoke(cli, args).exit_code == 0
    assert runner.invoke(cli, ["verify", str(fw)]).exit_code == 0
    assert posenc_cli.load(fw).params["arithmetic"] == "framework"


def test_a_table_made_from_a_mask_cannot_be_regenerated(tmp_path):
    mask = tmp_path / "mask.npy"
    np.save(mask, np.array([[1, 1, 0], [1, 1, 0]], np.uint8))
    runner = CliRunner()
    assert runner.invoke(cli, ["detr", "--mask", str(mask), "-d", "8", "-o", str(tmp_path / "t.npz")]).exit_code == 0
    table = posenc_cli.load(tmp_path / "t.npz")
    assert table.params["grid_height"] == 2 and "mask_sha256" in table.params
    refused = runner.invoke(cli, ["verify", str(tmp_path / "t.npz")])
    assert refused.exit_code == 2 and "--mask" in refused.stderr


def hostile(path: Path, case: str) -> None:
    if case == "float":
        np.save(path, np.ones((3, 4), np.float32))
    elif case == "3d":
        np.save(path, np.ones((1, 3, 4), bool))
    elif case == "two":
        np.save(path, np.full((3, 4), 2, np.uint8))
    elif case == "int64":
        np.save(path, np.ones((3, 4), np.int64))
    elif case == "object":
        path.write_bytes(npy_bytes(npy_dict("'|O'", shape="(3, 4)"), b"\0" * 96))
    elif case == "huge":
        path.write_bytes(npy_bytes(npy_dict("'|u1'", shape="(100000, 100000)"), b"\1" * 64))
    elif case == "side":
        np.save(path, np.ones((1, 5000), bool))
    elif case == "truncated":
        path.write_bytes(npy_bytes(npy_dict("'|b1'", shape="(3, 4)"), b"\1" * 5))
    elif case == "header":
        path.write_bytes(npy_bytes("{'descr': '|b1', 'shape': (3, 4)}"))
    elif case == "empty":
        np.save(path, np.ones((0, 4), bool))


CASES = {
    "float": (2, "bool or uint8"),
    "3d": (2, "2-D"),
    "two": (2, "0 and 1"),
    "int64": (2, "bool or uint8"),
    "object": (1, ""),
    "huge": (1, ""),
    "side": (2, "4096"),
    "truncated": (1, "truncated"),
    "header": (1, ""),
    "empty": (2, "2-D"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_mask_files_are_refused_in_one_line(tmp_path, case):
    mask, out = tmp_path / "mask.npy", tmp_path / "out.npy"
    hostile(mask, case)
    result = CliRunner().invoke(cli, ["detr", "--mask", str(mask), "-d", "8", "-o", str(out)])
    code, words = CASES[case]
    assert result.exit_code == code, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and words in result.stderr
    assert "Traceback" not in result.output and not out.exists()


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"grid": (0, 3), "d_model": 8}, "grid"),
        ({"grid": (3, 3), "d_model": 10}, "d_model"),
        ({"grid": (3, 3), "d_model": 8, "normalize": False, "norm_scale": 1.0}, "norm_scale"),
        ({"grid": (3, 3), "d_model": 8, "variant": "rt-detr"}, "variant"),
        ({"grid": (3, 4), "d_model": 8, "mask": np.ones((4, 3), bool)}, "mask"),
        ({"d_model": 8}, "grid"),
    ],
)
def test_bad_arguments(kwargs, param):
    with pytest.raises(SpecError) as err:
        detr(**kwargs)
    assert err.value.param == param
