"""ALiBi: slopes and bias against mpmath (Press et al.'s rule written out independently), in every format and in C."""

from __future__ import annotations

import math
import subprocess

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import SpecError

from .conftest import require_tool
from .test_c_compile import WARNINGS
from .test_encodings import rounded

mpmath.mp.dps = 60


def reference_slopes(heads: int) -> list[mpmath.mpf]:
    """Press et al.'s get_slopes in exact arithmetic: 2^(-8/n) to the powers 1..n, recursion for other counts."""

    def power_of_two(n: int) -> list[mpmath.mpf]:
        start = mpmath.mpf(2) ** (-mpmath.mpf(8) / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(heads).is_integer():
        return power_of_two(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_two(closest) + reference_slopes(2 * closest)[0::2][: heads - closest]


@pytest.mark.parametrize("heads", [1, 6, 8, 12, 40])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_slopes_and_bias_are_the_exact_values_rounded_once(heads, dtype):
    table = posenc_cli.alibi(heads, 50, dtype=np.dtype(dtype).name)
    slopes = reference_slopes(heads)
    assert table.arrays["slopes"].dtype == dtype and table.arrays["bias"].shape == (heads, 50)
    for h, slope in enumerate(slopes):
        assert table.arrays["slopes"][h] == rounded(slope, dtype), (heads, h)
        for j in (0, 1, 2, 3, 7, 31, 49):
            assert table.arrays["bias"][h, j] == rounded(slope * j, dtype), (heads, h, j)


def reference_mpt_slopes(heads: int) -> list[mpmath.mpf]:
    """MPT's gen_slopes (HF build_mpt_alibi_tensor) in exact arithmetic: 1 / 2^(m * 8 / P), P the power of two at or
    above the head count, then slopes[1::2] + slopes[::2] cut to the head count."""
    top = 2 ** math.ceil(math.log2(heads))
    slopes = [1 / mpmath.mpf(2) ** (mpmath.mpf(m) * 8 / top) for m in range(1, top + 1)]
    return slopes if top == heads else (slopes[1::2] + slopes[::2])[:heads]


@pytest.mark.parametrize("heads", [1, 3, 6, 8, 12, 40])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mpt_slopes_and_bias_are_the_exact_values_rounded_once(heads, dtype):
    table = posenc_cli.alibi(heads, 50, variant="mpt", dtype=np.dtype(dtype).name)
    assert table.params["variant"] == "mpt"
    for h, slope in enumerate(reference_mpt_slopes(heads)):
        assert table.arrays["slopes"][h] == rounded(slope, dtype), (heads, h)
        for j in (0, 1, 2, 3, 7, 31, 49):
            assert table.arrays["bias"][h, j] == rounded(slope * (j - 49), dtype), (heads, h, j)


@pytest.mark.parametrize("heads", range(1, 65))
def test_mpt_rounds_up_yet_gives_bloom_s_slopes_and_only_the_positions_differ(heads):
    """MPT's construction (2P slopes, even ones first) and BLOOM's (P slopes, then every other one of 2P) give the
    same slopes in the same order; the bias differs by its positions, 1-n .. 0 against 0 .. n-1."""
    for mpt_slope, bloom_slope in zip(reference_mpt_slopes(heads), reference_slopes(heads), strict=True):
        assert mpmath.almosteq(mpt_slope, bloom_slope, rel_eps=mpmath.mpf(10) ** -50)
    mpt, bloom = posenc_cli.alibi(heads, 6, variant="mpt"), posenc_cli.alibi(heads, 6)
    assert (mpt.arrays["slopes"] == bloom.arrays["slopes"]).all()
    assert (mpt.arrays["bias"] == -bloom.arrays["bias"][:, ::-1]).all()
    assert "variant" not in bloom.params


def test_long_bias_rows_at_large_positions():
    table = posenc_cli.alibi(40, 100_000)
    slopes = reference_slopes(40)
    for h in (0, 7, 39):
        for j in (65_535, 77_777, 99_999):
            assert table.arrays["bias"][h, j] == rounded(slopes[h] * j, np.float32)


def test_slopes_only_and_parameters():
    table = posenc_cli.alibi(12)
    assert list(table.arrays) == ["slopes"] and table.kind == "alibi"
    assert dict(table.params) == {"heads": 12, "dtype": "float32"}
    assert table.axes_of("slopes") == ("heads",)


@pytest.mark.parametrize(
    ("args", "param"), [((0,), "heads"), ((True,), "heads"), ((4, 0), "seq_len"), ((4, 1.5), "seq_len")]
)
def test_bad_arguments(args, param):
    with pytest.raises(SpecError) as err:
        posenc_cli.alibi(*args)
    assert err.value.param == param


@pytest.mark.parametrize("suffix", [".npz", ".h5"])
def test_every_array_round_trips_through_multi_array_formats(tmp_path, suffix):
    table = posenc_cli.alibi(6, 16)
    posenc_cli.save(table, tmp_path / f"a{suffix}", name="alibi")
    back = posenc_cli.load(tmp_path / f"a{suffix}")
    assert back.kind == "alibi" and back.params["heads"] == 6
    for key in ("slopes", "bias"):
        assert back.arrays[key].tobytes() == table.arrays[key].tobytes()


def test_h5_groups_the_arrays_under_an_explicit_name(tmp_path):
    import h5py

    posenc_cli.save(posenc_cli.alibi(6, 4), tmp_path / "g.h5", name="bloom")
    posenc_cli.save(posenc_cli.alibi(6, 4), tmp_path / "r.h5")
    with h5py.File(tmp_path / "g.h5") as f:
        assert list(f) == ["bloom"] and sorted(f["bloom"]) == ["bias", "slopes"]
    with h5py.File(tmp_path / "r.h5") as f:
        assert sorted(f) == ["bias", "slopes"]


def test_npz_is_read_by_numpy_and_reproducible(tmp_path):
    for run in ("a", "b"):
        posenc_cli.save(posenc_cli.alibi(12, 8), tmp_path / f"{run}.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with np.load(tmp_path / "a.npz", allow_pickle=False) as data:
        assert data["bias"].shape == (12, 8) and data["slopes"].dtype == np.float32


def test_cli_part_is_required_for_single_array_formats(tmp_path):
    runner = CliRunner()
    refused = runner.invoke(cli, ["alibi", "-H", "6", "-n", "4", "-o", str(tmp_path / "a.npy")])
    assert refused.exit_code == 2 and "--part" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
    wrong = runner.invoke(cli, ["alibi", "-H", "6", "-n", "4", "--part", "cos", "-o", str(tmp_path / "a.npy")])
    assert wrong.exit_code == 2 and "slopes, bias" in wrong.stderr
    ok = runner.invoke(cli, ["alibi", "-H", "6", "-n", "4", "--part", "bias", "-o", str(tmp_path / "a.csv")])
    assert ok.exit_code == 0
    assert (tmp_path / "a.csv").read_text().splitlines()[1] == "0.0,0.25,0.5,0.75"


C_PROGRAM = r"""
#include <stdio.h>
#include "alibi.h"

int main(void)
{
    const unsigned char *p = (const unsigned char *)alibi_slopes;
    const unsigned char *q = (const unsigned char *)alibi_bias;
    unsigned long k;
    for (k = 0; k < (unsigned long)sizeof(alibi_slopes); k++) printf("%02x", p[k]);
    printf("\n");
    for (k = 0; k < (unsigned long)sizeof(alibi_bias); k++) printf("%02x", q[k]);
    printf("\n%d %d\n", ALIBI_HEADS, ALIBI_SEQ_LEN);
    return 0;
}
"""


@pytest.mark.client
@pytest.mark.parametrize(
    ("compiler", "lang", "std"), [("gcc", "c", "c89"), ("clang", "c", "c11"), ("g++", "c++", "c++11")]
)
def test_c_header_holds_both_arrays(tmp_path, compiler, lang, std):
    result = CliRunner().invoke(cli, ["alibi", "-H", "40", "-n", "9", "-o", str(tmp_path / "alibi.h")])
    assert result.exit_code == 0, result.stderr
    (tmp_path / "main.c").write_text(C_PROGRAM)
    exe = tmp_path / "prog"
    cmd = [
        require_tool(compiler),
        "-x",
        lang,
        f"-std={std}",
        *WARNINGS,
        "-I",
        str(tmp_path),
        str(tmp_path / "main.c"),
        "-o",
        str(exe),
    ]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    slopes, bias, dims = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    table = posenc_cli.alibi(40, 9)
    assert slopes == table.arrays["slopes"].astype("<f4").tobytes().hex()
    assert bias == table.arrays["bias"].astype("<f4").tobytes().hex()
    assert dims == "40 9"
