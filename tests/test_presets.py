"""Framework presets of the 1-D sinusoid (posenc_cli.encodings.presets): each preset against its framework's golden
tables (tests/goldens/) and, entry by entry, against the framework's formula written out here in mpmath.

Agreement with goldens (tests/goldens/README.md): bit-identical where the framework computes in float64 and rounds
once (DistilBERT/XLM, Marian/Pegasus); else within the framework's own float32 error, 2**-22 * (1 + |angle|)
(2**-21 for diffusers, whose float32 exponent carries |exponent| * 2**-24: measured up to 1.27x the 2**-22 rule).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import mpmath
import numpy as np
import pytest

import posenc_cli
from posenc_cli.encodings.presets import PRESETS, preset_rows, resolve
from posenc_cli.errors import SpecError

from .test_encodings import _bits, rounded

GOLDENS = Path(__file__).resolve().parent / "goldens"
MANIFEST = json.loads((GOLDENS / "manifest.json").read_text())
SINUSOID = {name: g for name, g in MANIFEST["goldens"].items() if g["group"] == "sinusoid"}
mpmath.mp.dps = 60


def golden(name: str) -> dict[str, np.ndarray]:
    with np.load(GOLDENS / SINUSOID[name]["file"], allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


# ------------------------------------------------------------------------ the frameworks' formulas, in mpmath
def reference_row(preset: str, d: int, position, *, base=10000.0, min_timescale=1.0) -> list:
    """One row as each framework's source writes it (framework-conventions.md), exact: sines/cosines, frequencies
    and the odd-width rule spelled out per framework, independently of posenc's column lists."""
    p, b, h = mpmath.mpf(position), mpmath.mpf(base), d // 2
    if preset == "transformer-xl":  # inv_freq = 1 / base**(arange(0, d, 2) / d); cat([sin, cos])
        freqs = [1 / b ** (mpmath.mpf(k) / d) for k in range(0, d, 2)]
        return [mpmath.sin(p * f) for f in freqs] + [mpmath.cos(p * f) for f in freqs]
    if preset in ("vaswani", "marian"):  # position / base**(2*(j//2)/d) for every column j
        angle = [p / b ** (mpmath.mpf(2 * (j // 2)) / d) for j in range(d)]
        if preset == "vaswani":
            return [mpmath.sin(a) if j % 2 == 0 else mpmath.cos(a) for j, a in enumerate(angle)]
        return [mpmath.sin(a) for a in angle[0::2]] + [mpmath.cos(a) for a in angle[1::2]]
    if preset == "tensor2tensor":
        inc = mpmath.log(mpmath.mpf(base / min_timescale)) / max(h - 1, 1)
        freqs = [mpmath.mpf(min_timescale) * mpmath.exp(-k * inc) for k in range(h)]
    else:
        shift = {"fairseq": 1, "whisper": 1, "ddpm": 1, "musicgen": 1, "openai-diffusion": 0}[preset]
        freqs = [mpmath.exp(-k * mpmath.log(b) / (h - shift)) for k in range(h)]
    sin, cos = [mpmath.sin(p * f) for f in freqs], [mpmath.cos(p * f) for f in freqs]
    row = cos + sin if preset in ("musicgen", "openai-diffusion") else sin + cos
    return row + [mpmath.mpf(0)] * (d % 2)


def assert_reference(table: np.ndarray, preset: str, d: int, positions, **kw) -> None:
    for r, position in enumerate(positions):
        want = reference_row(preset, d, position, **kw)
        for c, value in enumerate(want):
            expected = rounded(value, table.dtype.type)
            assert _bits(table[r, c]) == _bits(expected), f"{preset} d={d} position {position} column {c}"


@pytest.mark.parametrize(
    ("preset", "d"),
    [(p, d) for p in PRESETS for d in (8, 9, 20, 33) if not (p in ("whisper", "transformer-xl") and d % 2)],
)  # whisper and transformer-xl refuse odd widths (tested below)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_preset_is_its_frameworks_formula_correctly_rounded(preset, d, dtype):
    rng = random.Random(f"{preset}{d}{dtype}")
    rows = [0, 1, 2, 7, rng.randrange(10**3), rng.randrange(10**6), rng.randrange(2**32)]
    spec = resolve(preset, d_model=d, no_padding=True)
    table = np.vstack([preset_rows(spec, r, r + 1, dtype) for r in rows])
    assert_reference(table, preset, d, rows)


def test_tensor2tensor_min_timescale_multiplies_and_start_index_offsets():
    spec = resolve("tensor2tensor", d_model=16, min_timescale=2.0, start=5.0)
    assert_reference(preset_rows(spec, 0, 6, "float64"), "tensor2tensor", 16, range(5, 11), min_timescale=2.0)
    spec = resolve("tensor2tensor", d_model=10, min_timescale=3.0, base=1000.0)  # base / m not a float64 exactly:
    table = preset_rows(spec, 0, 4, "float64")  # t2t's own float64 quotient 1000/3 is the exact input
    assert_reference(table, "tensor2tensor", 10, range(4), base=1000.0, min_timescale=3.0)


def test_tensor2tensor_guards_widths_two_and_three():
    table = preset_rows(resolve("tensor2tensor", d_model=3), 0, 4, "float64")
    assert table[:, 2].tolist() == [0.0] * 4
    assert table[:, 0].tolist() == [float(mpmath.sin(t)) for t in range(4)]


def test_fractional_strided_positions_padding_and_amplitude():
    spec = resolve("openai-diffusion", d_model=9, start=0.5, step=0.25, amplitude=-3.0)
    table = preset_rows(spec, 0, 5, "float64")
    for r in range(5):
        want = [-3 * v for v in reference_row("openai-diffusion", 9, 0.5 + 0.25 * r)]
        assert [_bits(x) for x in table[r]] == [_bits(rounded(w, np.float64)) for w in want]
    pad = resolve("fairseq", d_model=8)
    table = preset_rows(pad, 0, 4, "float32")
    assert table[1].tolist() == [0.0] * 8 and table[2, 0] == np.float32(float(mpmath.sin(2)))
    assert not table[1].any() and table[0, 4] == 1.0  # row 0 is position 0 (cos 0 = 1); only row 1 is zeroed
    assert preset_rows(pad, 2, 4, "float32").tobytes() == table[2:].tobytes()  # blocks: the same bits
    q = preset_rows(resolve("fairseq", d_model=4, padding_idx=2), 0, 4, "int8", quant_scale=1 / 64, zero_point=-3)
    assert q[2].tolist() == [-3] * 4  # the zero row is the zero point's code


@pytest.mark.parametrize(
    ("preset", "d", "param"),
    [("fairseq", 2, "d_model"), ("fairseq", 3, "d_model"), ("musicgen", 3, "d_model"), ("ddpm", 3, "d_model"),
     ("whisper", 2, "d_model"), ("whisper", 33, "d_model")],
)  # fmt: skip
def test_widths_the_frameworks_refuse_are_refused(preset, d, param):
    """Recorded under `raises` in the manifest (ZeroDivisionError, Whisper's ValueError); diffusers' ddpm d=3
    silently returns NaN (golden ddpm_diffusers_d3): posenc refuses rather than write NaN."""
    with pytest.raises(SpecError) as err:
        resolve(preset, d_model=d)
    assert err.value.param == param
    if preset == "ddpm":
        assert np.isnan(golden("ddpm_diffusers_d3")["pe"][1:, :2]).all()


def test_bad_values_name_their_parameter():
    for kwargs, param in [
        ({"preset": "bert"}, "preset"),
        ({"layout": "sin|cos"}, "layout"),
        ({"odd": "pad"}, "odd"),
        ({"freq_shift": 1.0, "min_timescale": 1.0}, "freq_shift"),
        ({"freq_shift": float("nan")}, "freq_shift"),
        ({"freq_shift": 4.0}, "freq_shift"),
        ({"min_timescale": 0.0}, "min_timescale"),
        ({"min_timescale": 2e4}, "min_timescale"),
        ({"padding_idx": -1}, "padding_idx"),
        ({"amplitude": 0.0}, "amplitude"),
        ({"start": float("inf")}, "start"),
    ]:
        preset = kwargs.pop("preset", None)
        with pytest.raises(SpecError) as err:
            resolve(preset, d_model=8, **kwargs)
        assert err.value.param == param, kwargs


# ---------------------------------------------------------------------------------------------------- goldens
def _positions(entry: dict) -> list[float]:
    pos = entry["positions"]
    if pos["kind"] == "list":
        return [float(v) for v in pos["values"]]
    return [pos["start"] + pos["step"] * i for i in range(pos["count"])]


def _spec_for(name: str, entry: dict):
    """The posenc parameters that reproduce golden ``name`` (one table row per position)."""
    p, preset = entry["params"], entry["preset"]
    d = p.get("embedding_dim", p.get("dim", p.get("channels")))
    kw: dict = {}
    if preset == "tensor2tensor":
        kw = {"base": p["max_timescale"], "min_timescale": p["min_timescale"]}
    elif preset == "whisper":
        kw = {"base": p["max_timescale"]}
    elif preset in ("ddpm", "openai-diffusion"):
        kw = {"base": float(p["max_period"])}
    if preset == "fairseq" and p.get("padding_idx") is None:
        kw["no_padding"] = True
    return resolve(preset, d_model=d, **kw), p.get("scale", 1.0)


@pytest.mark.parametrize("name", [n for n in SINUSOID if n != "ddpm_diffusers_d3"])
def test_presets_match_the_framework_goldens(name):
    entry = SINUSOID[name]
    data = golden(name)
    want = data["table" if "table" in data else "pe"].astype(np.float64)
    spec, scale = _spec_for(name, entry)
    positions = _positions(entry)
    if entry["positions"]["kind"] == "arange" and scale == 1.0:  # tensor2tensor's start_index: the start
        got = preset_rows(resolve(None, **_kw(spec), start=positions[0]), 0, len(positions), "float32")
    else:  # arbitrary timestep lists: one row each, the timestep (times diffusers' scale) as the start
        rows = [preset_rows(resolve(None, **{**_kw(spec), "start": t * scale}), 0, 1, "float32") for t in positions]
        got = np.vstack(rows)
    got = got.astype(np.float64)
    assert got.shape == want.shape
    if entry["compute"] == "float64-then-round":
        assert got.tobytes() == want.tobytes()
        return
    angle = np.abs(np.outer(np.asarray(positions) * scale, _freqs(spec)))
    angle = _columns_of(angle, spec)
    rule = 2.0**-21 if "diffusers" in name else 2.0**-22
    excess = np.abs(got - want) / (rule * (1 + angle))
    assert np.nanmax(excess) <= 1, f"{name}: {np.nanmax(excess):.3f} x the agreement bound"
    if "forward" in data:  # the module's forward: rows of the table picked by fairseq's make_positions
        ids = np.asarray(entry["params"]["forward_positions"])
        assert np.all(np.abs(got[ids] - data["forward"]) <= 2.0**-22 * (1 + angle[ids]))


def _kw(spec) -> dict:
    kw = {
        "d_model": spec.d_model, "base": spec.base, "layout": spec.layout, "odd": spec.odd, "step": spec.step,
        "amplitude": spec.amplitude,
    }  # fmt: skip
    if spec.freq == "shift":
        kw["freq_shift"] = spec.freq_shift
    if spec.freq == "timescales":
        kw["min_timescale"] = spec.min_timescale
    if spec.padding_idx is None:
        kw["no_padding"] = True
    else:
        kw["padding_idx"] = spec.padding_idx
    return kw


def _freqs(spec) -> np.ndarray:
    """Float64 frequencies, only to size the agreement bound."""
    h = spec.d_model // 2 + spec.d_model % 2
    k = np.arange(h, dtype=np.float64)
    if spec.freq == "paper":
        return spec.base ** (-2 * k / spec.d_model)
    if spec.freq == "timescales":
        return spec.min_timescale * (spec.base / spec.min_timescale) ** (-k / max(spec.d_model // 2 - 1, 1))
    return spec.base ** (-k / (spec.d_model // 2 - spec.freq_shift))


def _columns_of(angle: np.ndarray, spec) -> np.ndarray:
    from posenc_cli.encodings.presets import columns

    return np.stack([angle[:, c[0]] if c else np.zeros(len(angle)) for c in columns(spec)], axis=1)


def test_every_preset_has_a_golden():
    """transformer-xl's golden is XLNet's table, with the relative family's (tests/test_relative_goldens.py)."""
    relative = json.loads((GOLDENS / "relative" / "manifest.json").read_text())["goldens"]
    assert any(g["group"] == "transformer_xl" for g in relative.values())
    assert {g["preset"] for g in SINUSOID.values()} | {"transformer-xl"} == set(PRESETS)


def test_transformer_xl_rows_run_from_the_last_position_down_and_odd_widths_are_refused():
    table = posenc_cli.generate(5, 8, preset="transformer-xl", dtype="float64")
    assert (table.params["start"], table.params["step"]) == (4.0, -1.0)
    assert_reference(np.asarray(table.array), "transformer-xl", 8, [4, 3, 2, 1, 0])
    with pytest.raises(SpecError, match="even"):
        posenc_cli.generate(5, 9, preset="transformer-xl")


def test_generate_api_with_a_preset_records_its_parameters():
    t = posenc_cli.generate(6, 9, preset="fairseq")
    assert t.params["preset"] == "fairseq" and t.params["padding_idx"] == 1 and t.params["freq_shift"] == 1.0
    assert t.array.tobytes() == preset_rows(resolve("fairseq", d_model=9), 0, 6, "float32").tobytes()
    plain = posenc_cli.generate(6, 9)
    assert "preset" not in plain.params and plain.array.tobytes() == posenc_cli.sinusoidal(6, 9).tobytes()


# --------------------------------------------------------------------------------------------------------- CLI
def _run(args):
    from click.testing import CliRunner

    from posenc_cli.cli import cli

    return CliRunner().invoke(cli, args)


def test_cli_preset_and_overrides(tmp_path):
    out = tmp_path / "pe.npy"
    result = _run(["generate", "-n", "5", "-d", "9", "--preset", "fairseq", "--padding-idx", "none", "-o", str(out)])
    assert result.exit_code == 0, result.output
    want = preset_rows(resolve("fairseq", d_model=9, no_padding=True), 0, 5, "float32")
    assert np.load(out).tobytes() == want.tobytes()
    assert_reference(np.load(out), "fairseq", 9, range(5))
    args = ["generate", "-n", "4", "-d", "8", "-p", "ddpm", "--layout", "cos-sin", "--start", "0.5", "--step", "2"]
    result = _run([*args, "--amplitude", "-1", "--dtype", "float64", "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = np.load(out)
    for r in range(4):  # cos-sin: the DDPM (musicgen) frequencies in musicgen's order, negated
        want = [-v for v in reference_row("musicgen", 8, 0.5 + 2 * r)]
        assert [_bits(x) for x in table[r]] == [_bits(rounded(w, np.float64)) for w in want]
    loaded = posenc_cli.load(tmp_path / "pe.npy")
    assert loaded.array.shape == (4, 8)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["-p", "bert"], "--preset"),
        (["-p", "whisper", "-d", "7"], "--d-model"),
        (["--layout", "halves"], "--layout"),
        (["--odd", "pad"], "--odd"),
        (["--freq-shift", "9"], "--freq-shift"),
        (["--freq-shift", "1", "--min-timescale", "2"], "--freq-shift"),
        (["--padding-idx", "-1"], "--padding-idx"),
        (["--amplitude", "0"], "--amplitude"),
        (["--start", "nan"], "--start"),
        (["--start", "5e9"], "--start"),
    ],
)
def test_cli_bad_preset_values_exit_2_with_one_line(tmp_path, args, option):
    out = tmp_path / "pe.npy"
    base = ["generate", "-n", "4", "-d", "8"]
    result = _run([*base, *args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and option in lines[0], result.output
    assert not out.exists()


def test_cli_presets_lists_every_preset():
    result = _run(["presets", "--json"])
    assert result.exit_code == 0
    listed = json.loads(result.output)
    assert [p["name"] for p in listed] == list(PRESETS)
    fairseq = next(p for p in listed if p["name"] == "fairseq")
    assert fairseq["params"]["padding_idx"] == 1 and "M2M100" in fairseq["reproduces"]
    human = _run(["presets"])
    assert human.exit_code == 0 and all(name in human.output for name in PRESETS)
