"""Quantised tables never clip silently (issue #25): :mod:`posenc_cli.saturation` and the makers that use it.

A value a fixed-point or int8 type cannot hold is refused (exit 2, one line) with how many values would clip,
unless ``--saturate`` asks for it; CMSIS's +1.0 (q15's 32767) stands. Every count is checked against a count made
here with numpy from the formulas themselves (the sinusoid, HF's YaRN, the ALiBi slopes); every saturated table
against numpy's own rounding and clipping of the float64 table.
"""

from __future__ import annotations

import math
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import posenc_cli
from posenc_cli import saturation
from posenc_cli.cli import cli
from posenc_cli.dtypes import ElementType
from posenc_cli.errors import PosencWarning, SpecError
from posenc_cli.table import RowSource

QWEN = Path(__file__).resolve().parent / "goldens" / "rope_config" / "configs" / "qwen2.5-7b-yarn" / "config.json"


def run(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_line_error(result, code: int, *fragments: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def half_away(x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, np.floor(np.abs(x) + 0.5), -np.floor(np.abs(x) + 0.5))


def codes(values: np.ndarray, name: str, scale: float | None = None, zero_point: int = 0) -> np.ndarray:
    """The unsaturated code of each float64 value, computed here: ``round(v * 2**F)`` for a fixed-point type,
    ``round(v / scale) + zero_point`` for int8 (halves away from zero)."""
    if scale is not None:
        return half_away(values / scale) + zero_point
    frac = {"q7": 7, "q15": 15, "q31": 31}.get(name) or int(name.split(".")[1])
    return half_away(values * 2.0**frac)


def top_code(name: str) -> int:
    total = {"q7": 8, "q15": 16, "q31": 32, "int8": 8}.get(name) or int(name[len("fixed") :].split(".")[0])
    return 2 ** (total - 1)


def clipped(values: np.ndarray, name: str, scale: float | None = None, zero_point: int = 0) -> int:
    """How many values the type saturates beyond CMSIS's +1.0 (the code one past the largest)."""
    c, top = codes(values, name, scale, zero_point), top_code(name)
    return int(np.count_nonzero((c > top) | (c < -top)))


def saturated(values: np.ndarray, name: str, scale: float | None = None, zero_point: int = 0) -> np.ndarray:
    top = top_code(name)
    return np.clip(codes(values, name, scale, zero_point), -top, top - 1).astype(np.int64)


def counted(message: str) -> int:
    """The count a refusal names: ``would clip N of ...``."""
    return int(message.split("would clip ")[1].split()[0])


# ---------------------------------------------------------------------------------------- independent tables
def paper_sinusoid(n: int, d: int, amplitude: float) -> np.ndarray:
    """The paper's table in numpy float64: sin at even columns, cos at odd, frequencies 10000**(-2k/d)."""
    k = np.arange(d) // 2
    angle = np.arange(n)[:, None] * 10000.0 ** (-2 * k / d)[None, :]
    return amplitude * np.where(np.arange(d) % 2 == 0, np.sin(angle), np.cos(angle))


def qwen_yarn() -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Qwen2.5-7B's YaRN caches (rope_theta 1e6, factor 4, original 32768, head_dim 3584/28 = 128, 32768 rows) by
    HF's formulas (modeling_rope_utils, _compute_yarn_parameters) in numpy float64: cos, sin, inv_freq, scaling."""
    dim, base, factor, original, n = 128, 1e6, 4.0, 32768, 32768
    pos_freqs = base ** (np.arange(0, dim, 2) / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)

    def correction_dim(rotations: float) -> float:
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = max(math.floor(correction_dim(32)), 0), min(math.ceil(correction_dim(1)), dim - 1)
    ramp = np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)
    inv_freq = interpolation * ramp + extrapolation * (1 - ramp)
    scaling = 0.1 * math.log(factor) + 1.0
    angle = np.arange(n)[:, None] * np.concatenate([inv_freq, inv_freq])[None, :]
    return scaling * np.cos(angle), scaling * np.sin(angle), inv_freq, scaling


# ------------------------------------------------------------------------------------------ the issue's case
def test_the_issue_qwen25_yarn_q15_is_refused_with_its_count_and_the_ways_out(tmp_path):
    out = tmp_path / "rope.npz"
    line = one_line_error(
        run("rope", "--config", QWEN, "--dtype", "q15", "-o", out),
        2,
        "dtype q15 would clip",
        "--no-attention-scaling leaves the attention scaling 1.13863 out of cos/sin",
        "fixed16.14 holds them (1 integer bit)",
        "--saturate clips them",
    )
    assert not out.exists()
    cos, sin, _, _ = qwen_yarn()
    near = sum(int(np.count_nonzero(np.abs(np.abs(v) * 32768 - 32768.5) < 1e-6)) for v in (cos, sin))
    want = clipped(cos, "q15") + clipped(sin, "q15")
    assert abs(counted(line) - want) <= near and want > 3_000_000  # near: within numpy's own error of the edge
    assert f"of the table's {2 * cos.size + 64} values" in line
    assert f"cos {clipped(cos, 'q15')}, sin {clipped(sin, 'q15')}" in line


def test_the_issue_case_with_saturate_is_numpys_clip_of_the_float64_values_rounded():
    with pytest.warns(PosencWarning, match="inv_freq: 19 of its 64 values round to 0"):
        table = posenc_cli.rope(config=QWEN, dtype="q15", saturate=True)
    exact = posenc_cli.rope(config=QWEN, dtype="float64")
    for key in ("cos", "sin", "inv_freq"):
        assert np.array_equal(table.arrays[key], saturated(np.asarray(exact.arrays[key]), "q15"))
    assert table.params["saturate"] is True and table.params["attention_scaling_folded"] is True


def test_the_issue_case_without_the_folded_scaling_stays_in_range_and_records_it(tmp_path):
    out = tmp_path / "rope.npz"
    result = run("rope", "--config", QWEN, "--dtype", "q15", "--no-attention-scaling", "-n", 4096, "-o", out)
    assert result.exit_code == 0, result.stderr
    table = posenc_cli.load(out)
    exact = posenc_cli.rope(config=QWEN, dtype="float64", attention_scaling=False, seq_len=4096)
    for key in ("cos", "sin"):
        want = codes(np.asarray(exact.arrays[key]), "q15")
        assert clipped(np.asarray(exact.arrays[key]), "q15") == 0
        assert table.arrays[key].tolist() == np.minimum(want, 32767).tolist()
    _, _, _, scaling = qwen_yarn()
    assert table.params["attention_scaling"] == pytest.approx(scaling, rel=1e-15)
    assert table.params["attention_scaling_folded"] is False and "saturate" not in table.params


def test_inv_freq_rounded_to_zero_is_a_note_not_a_refusal(tmp_path):
    """Rounding to 0 is not clipping (each entry is as near its value as q15 allows): the table is written, and
    the user hears how many frequencies a kernel computing angles from inv_freq would lose."""
    _, _, inv_freq, _ = qwen_yarn()
    lost = int(np.count_nonzero(inv_freq * 32768 < 0.5))
    assert lost == 19  # the issue's count
    with pytest.warns(PosencWarning, match=rf"inv_freq: {lost} of its 64 values round to 0 in q15.*q31 keeps them"):
        table = posenc_cli.rope(config=QWEN, dtype="q15", attention_scaling=False, seq_len=4)
    assert int(np.count_nonzero(table.arrays["inv_freq"] == 0)) == lost
    out = tmp_path / "rope.npz"
    result = run("rope", "--config", QWEN, "--dtype", "q15", "--no-attention-scaling", "-n", 4, "-o", out)
    assert result.exit_code == 0 and result.stderr.startswith(f"Note: inv_freq: {lost} of its 64 values round to 0")
    quiet = run("rope", "--config", QWEN, "--dtype", "q15", "--no-attention-scaling", "-n", 4, "-q", "-o", out)
    assert quiet.exit_code == 0 and quiet.stderr == ""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # verify regenerates the table: the note was the writer's, not said again
        checked = run("verify", out)
    assert checked.exit_code == 0 and checked.stderr == "", checked.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # q31 keeps them: no note
        posenc_cli.rope(config=QWEN, dtype="q31", attention_scaling=False, seq_len=4)


# ------------------------------------------------------------------------------- a sinusoid in every type
TYPES = [  # (dtype, its options, integer bits)
    ("q15", (), 0),
    ("q7", (), 0),
    ("q31", (), 0),
    ("int8", ("--scale", "0.0078125"), 0),
    ("fixed16.14", (), 1),
    ("fixed8.6", (), 1),
]


@pytest.mark.parametrize(("dtype", "options", "whole"), TYPES)
def test_amplitude_at_the_types_end_passes_with_plus_one_as_the_largest_code(tmp_path, dtype, options, whole):
    amplitude = 2.0**whole
    out = tmp_path / "pe.npy"
    result = run("generate", "-n", 64, "-d", 16, "--amplitude", amplitude, "--dtype", dtype, *options, "-o", out)
    assert result.exit_code == 0, result.stderr
    stored = np.load(out)
    scale = 0.0078125 if dtype == "int8" else None
    values = paper_sinusoid(64, 16, amplitude)
    assert clipped(values, dtype, scale) == 0
    assert stored.tolist() == saturated(values, dtype, scale).tolist()
    assert int(stored[0, 1]) == top_code(dtype) - 1  # cos 0 = +amplitude: the largest code (CMSIS)


@pytest.mark.parametrize(("dtype", "options", "whole"), TYPES)
def test_amplitude_beyond_the_type_is_refused_with_numpys_count(tmp_path, dtype, options, whole):
    amplitude = 1.5 * 2.0**whole
    out = tmp_path / "pe.npy"
    out.write_bytes(b"the user's file")
    args = ("generate", "-n", 64, "-d", 16, "--amplitude", amplitude, "--dtype", dtype, *options)
    line = one_line_error(run(*args, "-o", out), 2, f"Invalid value for '--dtype': dtype {dtype}", "--saturate")
    scale = 0.0078125 if dtype == "int8" else None
    want = clipped(paper_sinusoid(64, 16, amplitude), dtype, scale)
    assert counted(line) == want > 0 and f"of the table's {64 * 16} values" in line
    assert out.read_bytes() == b"the user's file" and sorted(p.name for p in tmp_path.iterdir()) == ["pe.npy"]
    way = re.search(r"(--scale \S+|fixed\d+\.\d+) holds them", line)  # the type that holds them, named: it does
    assert way is not None, line
    named = way[1].split() if dtype == "int8" else ["--dtype", way[1]]
    held = run("generate", "-n", 64, "-d", 16, "--amplitude", amplitude, *(("--dtype", "int8") * (dtype == "int8")),
               *named, "-o", out)  # fmt: skip
    assert held.exit_code == 0, (way[1], held.stderr)
    result = run(*args, "--saturate", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert np.load(out).tolist() == saturated(paper_sinusoid(64, 16, amplitude), dtype, scale).tolist()


def test_api_and_manifest_give_the_cli_answers(tmp_path):
    shutil.copy(QWEN, tmp_path / "config.json")
    with pytest.raises(SpecError) as refused:
        posenc_cli.rope(config=QWEN, dtype="q15", seq_len=2048)
    assert refused.value.param == "dtype"
    line = one_line_error(run("rope", "--config", QWEN, "--dtype", "q15", "-n", 2048, "-o", tmp_path / "a.npz"), 2)
    assert str(refused.value) in line
    entry = '[[table]]\ncommand = "rope"\noutput = "rope.npz"\nconfig = "config.json"\ndtype = "q15"\nseq_len = 2048\n'
    (tmp_path / "posenc.toml").write_text(entry)
    built = one_line_error(run("build", tmp_path / "posenc.toml"), 2)
    assert str(refused.value) in built and not (tmp_path / "rope.npz").exists()
    (tmp_path / "posenc.toml").write_text(entry + "saturate = true\n")
    assert run("build", tmp_path / "posenc.toml").exit_code == 0
    with pytest.warns(PosencWarning, match="inv_freq: 19 of its 64 values round to 0"):
        api = posenc_cli.rope(config=QWEN, dtype="q15", saturate=True, seq_len=2048)
    from_manifest = posenc_cli.load(tmp_path / "rope.npz")
    for key in api.arrays:
        assert np.array_equal(np.asarray(api.arrays[key]), from_manifest.arrays[key])
    assert from_manifest.params["saturate"] is True


def test_saturate_is_recorded_only_when_given_and_verifies(tmp_path):
    plain = posenc_cli.generate(8, 4, dtype="q15")
    assert "saturate" not in plain.params  # the bytes of every table made before stay the same
    out = tmp_path / "pe.h"
    args = ("generate", "-n", 8, "-d", 4, "--amplitude", 1.5, "--dtype", "q15", "--saturate")
    assert run(*args, "-o", out).exit_code == 0
    assert "--saturate" in out.read_text() and "saturate: True" in out.read_text()
    assert run("verify", out).exit_code == 0
    npz = tmp_path / "pe.npz"
    assert run(*args, "-o", npz).exit_code == 0
    converted = tmp_path / "pe_f32.npz"  # the saturated q15 codes as float32: regenerated q15, saturated, converted
    assert run("convert", npz, converted, "--dtype", "float32").exit_code == 0
    assert posenc_cli.load(converted).params["saturate"] is True
    assert run("verify", converted).exit_code == 0, run("verify", converted).stderr


@pytest.mark.parametrize("surface", ["cli", "api", "manifest"])
def test_saturate_on_a_float_type_is_refused(tmp_path, surface):
    message = "saturate applies to the types that clip (q7, q15, q31, fixed<total>.<frac>, int8), not float16"
    if surface == "api":
        with pytest.raises(SpecError, match=r"saturate applies to the types that clip") as info:
            posenc_cli.generate(4, 4, dtype="float16", saturate=True)
        assert info.value.param == "saturate"
    elif surface == "cli":
        result = run("generate", "-n", 4, "-d", 4, "--dtype", "float16", "--saturate", "-o", tmp_path / "x.npy")
        one_line_error(result, 2, "'--saturate'", message)
    else:
        toml = '[[table]]\ncommand = "generate"\noutput = "x.npy"\nseq_len = 4\nd_model = 4\ndtype = "float16"\n'
        (tmp_path / "posenc.toml").write_text(toml + "saturate = true\n")
        one_line_error(run("build", tmp_path / "posenc.toml"), 2, message)
    assert not (tmp_path / "x.npy").exists()


# --------------------------------------------------------------------------------------------- other kinds
def test_alibi_bias_beyond_q15_is_refused_and_the_named_type_holds_it(tmp_path):
    line = one_line_error(run("alibi", "-H", 8, "-n", 100, "--dtype", "q15", "-o", tmp_path / "a.npz"), 2)
    slopes = 2.0 ** -np.arange(1, 9)  # 8 heads: 2**(-8(h+1)/8)
    bias = slopes[:, None] * np.arange(100)[None, :]
    assert counted(line) == clipped(bias, "q15") > 0 and "bias " in line and "fixed16.9 holds them" in line
    assert run("alibi", "-H", 8, "-n", 100, "--dtype", "fixed16.9", "-o", tmp_path / "a.npz").exit_code == 0
    table = posenc_cli.alibi(8, 100, dtype="q15", saturate=True)
    assert table.arrays["bias"].tolist() == saturated(bias, "q15").tolist()


def test_sincos2d_fits_every_fixed_type_and_an_int8_scale_too_small_is_refused():
    posenc_cli.sincos2d(4, 4, 16, dtype="q7")
    with pytest.raises(SpecError, match="would clip") as info:
        posenc_cli.sincos2d(4, 4, 16, dtype="int8", scale=1 / 100.0, zero_point=-60)
    exact = np.asarray(posenc_cli.sincos2d(4, 4, 16, dtype="float64").array)
    assert counted(str(info.value)) == clipped(exact, "int8", 1 / 100.0, -60) > 0


def test_convert_counts_exactly_and_keeps_its_nan_message(tmp_path):
    source = tmp_path / "in.npy"
    # 1 + 2**-16 is code 32768.5 exactly: a tie, rounded away from zero to 32769, beyond +1.0; 1.0000152 is not
    np.save(source, np.array([[0.5, 1.5, -2.0, 1.0], [-1.0, 0.25, 1.0000152, 1 + 2.0**-16]]))
    line = one_line_error(run("convert", source, tmp_path / "out.npy", "--dtype", "q15"), 2, "would clip 3 of")
    assert "fixed16.14 holds them" in line and not (tmp_path / "out.npy").exists()
    result = run("convert", source, tmp_path / "out.npy", "--dtype", "q15", "--saturate")
    assert result.exit_code == 0, result.stderr
    assert np.load(tmp_path / "out.npy").tolist() == [[16384, 32767, -32768, 32767], [-32768, 8192, 32767, 32767]]
    np.save(source, np.array([[0.5, np.nan]]))
    one_line_error(run("convert", source, tmp_path / "out.npy", "--dtype", "q15"), 2, "NaN or infinite")


# ---------------------------------------------------------------------------------------- the rule and work
def test_the_rule_at_the_edges_of_q15_and_int8():
    """q15: codes above 32768 or below -32768 clip, 32768 (+1.0) is written as 32767; int8 by the same rule."""
    half = 2.0**-16
    q15 = ElementType.of("q15").beyond(np.array([1.0, 1.0 + half - 2.0**-40, 1.0 + half, -1.0 - half + 2.0**-40,
                                                 -1.0 - half, np.inf, -np.inf, np.nan]))  # fmt: skip
    assert q15.tolist() == [False, False, True, False, True, True, True, False]
    int8 = ElementType.of("int8", scale=0.1, zero_point=100)  # codes hold -22.8 .. 2.8
    values = np.array([2.8, 2.85 - 1e-12, 2.85 + 1e-12, -22.85 + 1e-12, -22.85 - 1e-12])
    assert int8.beyond(values).tolist() == (np.abs(codes(values, "int8", 0.1, 100)) > 128).tolist()
    assert int8.beyond(values).tolist() == [False, False, True, False, True]


def test_a_table_that_fits_its_bound_is_never_counted(monkeypatch):
    calls = []
    real = saturation.count
    monkeypatch.setattr(saturation, "count", lambda *a, **k: calls.append(a) or real(*a, **k))
    posenc_cli.generate(64, 16, dtype="q15")
    posenc_cli.rope(64, 16, dtype="q15")
    posenc_cli.rope(64, 16, dtype="q15", scaling="yarn", factor=4.0, original_max_positions=16, saturate=True)
    posenc_cli.alibi(4, 3, dtype="q7")
    assert calls == []  # the amplitude (or the slope times the reach) fits, or saturate: nothing is read twice
    with pytest.raises(SpecError):
        posenc_cli.rope(64, 16, dtype="q15", scaling="yarn", factor=4.0, original_max_positions=16)
    assert len(calls) == 1


def test_a_refusal_stops_reading_once_enough_values_clip(monkeypatch):
    monkeypatch.setattr(saturation, "COUNT_ENTRIES", 5000)
    monkeypatch.setattr(saturation, "_BLOCK_ENTRIES", 1000)
    asked: list[int] = []

    def rows(lo: int, hi: int) -> np.ndarray:
        asked.append(hi - lo)
        return np.full((hi - lo, 100), 2.0)

    found = saturation.count(ElementType.of("q15"), {"pe": RowSource((10_000, 100), np.float64, rows)})
    assert sum(asked) * 100 == 5000 and not found.complete
    message = str(saturation.refusal(ElementType.of("q15"), found))
    assert "would clip at least 5000 of the first 5000 of the table's 1000000 values" in message
