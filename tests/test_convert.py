"""posenc convert / posenc_cli.convert: any table posenc reads, re-encoded and written in any format.

The values are checked against independent references: numpy/ml_dtypes for the float conversions (IEEE rounding of
the stored value), exact rational arithmetic (fractions) for the quantised types, and the real safetensors library
for files that come from a checkpoint.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import save_file

import posenc_cli
from posenc_cli.cli import cli
from posenc_cli.errors import SpecError


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def _half_away(q: Fraction) -> int:
    n = math.floor(abs(q) + Fraction(1, 2))
    return n if q >= 0 else -n


@pytest.fixture
def checkpoint(tmp_path):
    """A learned position table as a training run saves it, with another tensor beside it."""
    rng = np.random.default_rng(7)
    weight = (rng.standard_normal((24, 10)) * 0.05).astype(np.float32)
    weight[0, :4] = [0.5 / 32768, 1.5 / 32768, -2.5 / 32768, 1.0]  # ties for q15, and 1.0 (saturates)
    path = tmp_path / "model.safetensors"
    save_file({"embed_positions.weight": weight, "lm_head.bias": np.zeros(5, np.float32)}, str(path))
    return path, weight


def test_learned_table_from_a_checkpoint_reaches_every_format(tmp_path, checkpoint):
    path, weight = checkpoint
    for suffix in (".npy", ".h5", ".csv", ".npz", ".safetensors"):
        out = tmp_path / f"pos{suffix}"
        result = run("convert", str(path), str(out), "--key", "embed_positions.weight")
        assert result.exit_code == 0, result.output
        back = posenc_cli.load(out)  # CSV reads back as float64 holding the float32 values exactly
        assert back.array.astype(np.float32).tobytes() == weight.tobytes() and back.kind == "array"
    header = tmp_path / "pos.h"
    assert run("convert", str(path), "--key", "embed_positions.weight", "-o", str(header)).exit_code == 0
    text = header.read_text()
    assert "static const float pos[POS_SEQ_LEN][POS_D_MODEL]" in text
    assert "posenc convert model.safetensors --key embed_positions.weight" in text  # files by name only


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_float_conversions_round_once_as_ieee(checkpoint, dtype):
    path, weight = checkpoint
    table = posenc_cli.convert(posenc_cli.load(path), dtype=dtype, key="embed_positions.weight")
    want = weight.astype(np.float16 if dtype == "float16" else ml_dtypes.bfloat16).view(np.uint16)
    got = np.asarray(table.array).view(np.uint16)
    assert got.tobytes() == want.tobytes()
    assert table.params["dtype"] == dtype and table.params["converted_from"] == "float32"


def test_quantised_conversions_are_exact(checkpoint):
    path, weight = checkpoint
    q15 = np.asarray(posenc_cli.convert(posenc_cli.load(path), dtype="q15", key="embed_positions.weight").array)
    want = [max(-32768, min(32767, _half_away(Fraction(float(v)) * 32768))) for v in weight.ravel()]
    assert q15.ravel().tolist() == want
    assert q15[0, :4].tolist() == [1, 2, -3, 32767]  # ties away from zero; 1.0 saturates
    int8 = posenc_cli.convert(  # 1.0 is code 328: clipped, as asked
        posenc_cli.load(path), dtype="int8", scale=0.003, zero_point=-5, key="embed_positions.weight", saturate=True
    )
    scale = Fraction(0.003)
    want = [max(-128, min(127, _half_away(Fraction(float(v)) / scale) - 5)) for v in weight.ravel()]
    assert np.asarray(int8.array).ravel().tolist() == want
    assert int8.params["scale"] == 0.003 and int8.params["zero_point"] == -5 and int8.params["saturate"] is True


def test_quantised_input_is_decoded_first(tmp_path):
    q15 = tmp_path / "pe_q15.npy"
    assert run("generate", "-n", "16", "-d", "8", "--dtype", "q15", "-o", str(q15)).exit_code == 0
    out = tmp_path / "pe.npy"
    result = run("convert", str(q15), str(out), "--dtype", "float64")
    assert result.exit_code == 0, result.output
    codes = posenc_cli.load(q15).array
    assert np.load(out).tolist() == (codes.astype(np.float64) / 32768).tolist()


def test_convert_errors(tmp_path, checkpoint):
    path, _ = checkpoint
    out = str(tmp_path / "x.npy")
    bad = run("convert", str(path), out)  # two arrays, .npy holds one
    assert bad.exit_code == 2 and "pick one with --key" in bad.stderr and not (tmp_path / "x.npy").exists()
    for args, option in [
        ([str(path), out, "--key", "nope"], "--key"),
        ([str(path), out, "-o", out], "output"),
        ([str(path)], "output"),
        ([str(tmp_path / "missing.npy"), out], "missing.npy"),
    ]:
        result = run("convert", *args)
        assert result.exit_code in (1, 2) and option in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.npy").exists()
    big = tmp_path / "big.npy"
    np.save(big, np.array([[1e5, 1.0]], np.float32))
    result = run("convert", str(big), out, "--dtype", "float16")
    assert result.exit_code == 2 and "float16" in result.stderr and not (tmp_path / "x.npy").exists()
    nan = tmp_path / "nan.npy"
    np.save(nan, np.array([[np.nan, 1.0]], np.float32))
    result = run("convert", str(nan), out, "--dtype", "q15")
    assert result.exit_code == 2 and "NaN" in result.stderr and not (tmp_path / "x.npy").exists()
    with pytest.raises(SpecError):
        posenc_cli.convert(posenc_cli.load(big), scale=0.5)


def test_rope_part_to_csv(tmp_path):
    rope = tmp_path / "rope.npz"
    assert run("rope", "-n", "6", "--head-dim", "4", "-o", str(rope)).exit_code == 0
    out = tmp_path / "cos.csv"
    assert run("convert", str(rope), "--key", "cos", "-o", str(out)).exit_code == 0
    back = posenc_cli.load(out).array.astype(np.float32)
    assert back.tobytes() == posenc_cli.rope(6, 4).arrays["cos"].tobytes()


@pytest.mark.parametrize("literal", ["decimal", "hex", "bits"])
def test_infinite_values_never_reach_c_text(tmp_path, literal):
    source = tmp_path / "inf.npy"
    np.save(source, np.array([[np.inf, 1.0]], np.float32))
    result = run("convert", str(source), str(tmp_path / "inf.h"), "--float-literal", literal)
    if literal == "bits":  # bit patterns hold any float exactly
        assert result.exit_code == 0 and "0x7F800000" in (tmp_path / "inf.h").read_text()
        return
    assert result.exit_code == 1 and "NaN or infinite" in result.stderr
    assert not (tmp_path / "inf.h").exists()
