"""2-D sincos (MAE): against the framework goldens and mpmath.

The frameworks compute in float64 and round once to float32, so float32 tables must be bit-identical; their float64
tables carry their libm's error (up to an ulp), so posenc's correctly rounded float64 must lie within one ulp.
"""

from __future__ import annotations

import json
from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import SpecError

from .test_encodings import rounded

GOLDENS = Path(__file__).resolve().parent / "goldens"
MANIFEST = json.loads((GOLDENS / "manifest.json").read_text())["goldens"]
SINCOS2D = [name for name in MANIFEST if name.startswith("sincos2d")]


@pytest.mark.parametrize("name", SINCOS2D)
def test_bit_identical_to_the_frameworks(name):
    entry = MANIFEST[name]
    assert entry["agreement"] == "bit-identical"
    params = entry["params"]
    height = params.get("grid_height", params.get("grid_size"))
    width = params.get("grid_width", params.get("grid_size"))
    cls_token = bool(params.get("cls_token")) and params.get("extra_tokens", 1) > 0
    with np.load(GOLDENS / entry["file"], allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    for key, want in arrays.items():
        if key == "builder_raw":  # transformers' own y-first layout, before ViTMAE swaps it to MAE's
            continue
        dtype = "float64" if key.endswith("f64") else "float32"
        got = posenc_cli.sincos2d(height, width, params["embed_dim"], cls_token=cls_token, dtype=dtype).array
        assert got.shape == want.shape, (key, got.shape, want.shape)
        if dtype == "float32":
            assert got.tobytes() == want.astype(dtype).tobytes(), key
        else:
            assert np.all(np.abs(got - want) <= np.spacing(np.abs(want))), key


def test_entries_against_mpmath():
    mpmath.mp.dps = 60
    table = posenc_cli.sincos2d(7, 9, 32, cls_token=True).array
    q = 8
    for row in (1, 17, 63):
        y, x = divmod(row - 1, 9)
        for col in range(32):
            coordinate = x if col < 2 * q else y
            k = col % q
            angle = coordinate * mpmath.mpf(10000) ** (-mpmath.mpf(k) / q)
            value = mpmath.sin(angle) if (col // q) % 2 == 0 else mpmath.cos(angle)
            assert table[row, col] == rounded(value, np.float32), (row, col)
    assert not table[0].any()


def test_cls_row_of_an_int8_table_is_the_zero_point():
    table = posenc_cli.sincos2d(2, 2, 8, cls_token=True, dtype="int8", scale=1 / 64, zero_point=-5).array
    assert table[0].tolist() == [-5] * 8


@pytest.mark.parametrize(("args", "param"), [((0, 2, 8), "grid"), ((2, 2, 10), "d_model"), ((2, 2, 0), "d_model")])
def test_bad_arguments(args, param):
    with pytest.raises(SpecError) as err:
        posenc_cli.sincos2d(*args)
    assert err.value.param == param


def test_cli(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(cli, ["sincos2d", "-g", "3x5", "-d", "16", "--cls-token", "-o", str(tmp_path / "p.npy")])
    assert ok.exit_code == 0, ok.stderr
    assert np.load(tmp_path / "p.npy").tobytes() == posenc_cli.sincos2d(3, 5, 16, cls_token=True).array.tobytes()
    bad = runner.invoke(cli, ["sincos2d", "-g", "3by5", "-d", "16", "-o", str(tmp_path / "q.npy")])
    assert bad.exit_code == 2 and "HxW" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "q.npy").exists()
