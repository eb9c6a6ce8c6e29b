"""Property-based tests (hypothesis) of every table kind: shapes, bounds, closed forms, mpmath entries, files.

Over small valid parameters of the 1-D sinusoid (every preset, layout, odd rule, start, step, padding row and
amplitude), RoPE (every scaling mode), ALiBi and 2-D sincos, for every element type:

- the shape and storage dtype promised, and the parameters recorded;
- float outputs finite and within the amplitude (``|amplitude|`` rounded to the output type: rounding is monotone,
  so that is the tightest bound a correctly rounded table can promise);
- closed forms: row 0 at position 0 (sines 0, cosines the amplitude, zero columns 0), RoPE's row 0 (cos the
  attention scaling, sin 0) and ``inv_freq[0]`` (the multiplier of frequency 0), the padding row, the class-token row;
- a few entries drawn at random against an independent mpmath reference written from the module docstrings, rounded
  with ``rounded`` of :mod:`tests.test_encodings` (exact values are rounded exactly, with fractions);
- every registered format that posenc reads back returns the table bit for bit (tables of several arrays into the
  formats that hold several, part by part into the others), and two runs write identical bytes in every format.

Hypothesis is derandomised (a seed per test, no example database) so CI sees the same examples on every run.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from posenc_cli import api
from posenc_cli.dtypes import DTYPES as NAMED_DTYPES
from posenc_cli.dtypes import FLOATS
from posenc_cli.encodings import presets
from posenc_cli.errors import SpecError
from posenc_cli.formats import FORMATS
from posenc_cli.table import Table

from .test_encodings import _bits, _neighbours, rounded

mpmath.mp.dps = 60

PROPERTIES = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
FILES = settings(PROPERTIES, max_examples=40)

#: What each element type is stored as, and the numpy type that holds its values (bfloat16: ml_dtypes').
STORAGE = {
    "float32": "<f4",
    "float64": "<f8",
    "float16": "<f2",
    "bfloat16": "<u2",
    "q31": "<i4",
    "q15": "<i2",
    "q7": "i1",
    "int8": "i1",
    "fixed18.16": "<i4",
    "fixed12.9": "<i2",
    "fixed5.4": "i1",
    "fixed48.40": "<i8",
}
#: The named types and general fixed-point ones of several widths and storages.
DTYPES = (*NAMED_DTYPES, "fixed18.16", "fixed12.9", "fixed5.4", "fixed48.40")
#: (total, fractional) bits of each fixed-point type, spelled out here rather than parsed by the code under test.
FIXED = {"q31": (32, 31), "q15": (16, 15), "q7": (8, 7), "fixed18.16": (18, 16), "fixed12.9": (12, 9)}
FIXED.update({"fixed5.4": (5, 4), "fixed48.40": (48, 40)})
VALUE_TYPE = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

#: The presets as presets.py documents them (its docstring and the framework each reproduces), written out again
#: here so that the reference does not read the code under test.
PRESET_DEFS: dict[str, dict[str, object]] = {
    "vaswani": {"layout": "interleaved", "freq": "paper", "odd": "natural"},
    "tensor2tensor": {"layout": "sin-cos", "freq": "timescales", "min_timescale": 1.0, "odd": "zero"},
    "fairseq": {"layout": "sin-cos", "freq": "shift", "freq_shift": 1.0, "odd": "zero", "padding_idx": 1},
    "marian": {"layout": "sin-cos", "freq": "paper", "odd": "natural"},
    "whisper": {"layout": "sin-cos", "freq": "shift", "freq_shift": 1.0, "odd": "error"},
    "ddpm": {"layout": "sin-cos", "freq": "shift", "freq_shift": 1.0, "odd": "zero"},
    "openai-diffusion": {"layout": "cos-sin", "freq": "shift", "freq_shift": 0.0, "odd": "zero"},
    "musicgen": {"layout": "cos-sin", "freq": "shift", "freq_shift": 1.0, "odd": "zero"},
    "transformer-xl": {"layout": "sin-cos", "freq": "paper", "odd": "error"},  # and rows seq_len-1 .. 0, below
}
DEFAULTS: dict[str, object] = {"start": 0.0, "step": 1.0, "amplitude": 1.0, "padding_idx": None}

Exact = Fraction | mpmath.mpf  # a Fraction is the exact value; an mpf a 60-digit approximation of a transcendental one


# ------------------------------------------------------------------------------------------------ rounding
def round_exact(q: Fraction, value_type: type) -> np.generic:
    """The rational ``q`` rounded half-even to a float type, deciding by exact distances (ties included)."""
    if q == 0:
        return value_type(0.0)
    c = np.array(float(q)).astype(value_type)[()]
    cands = [x for x in [c, *_neighbours(c)] if math.isfinite(float(x))]
    best = min(cands, key=lambda x: (abs(Fraction(float(x)) - q), _bits(x) & 1))
    if float(best) == 0.0:
        best = np.array(math.copysign(0.0, q)).astype(value_type)[()]
    return best


def _round_half_away(x: Exact) -> int:
    if isinstance(x, Fraction):
        n = math.floor(abs(x) + Fraction(1, 2))
    else:
        frac = abs(x) - mpmath.floor(abs(x))
        assert abs(frac - mpmath.mpf(0.5)) > mpmath.mpf(10) ** -40, "unresolvable case"
        n = int(mpmath.floor(abs(x) + mpmath.mpf(0.5)))
    return n if x >= 0 else -n


def stored(z: Exact, dtype: str, scale: float | None = None, zero_point: int = 0) -> int:
    """The stored bit pattern (float types) or integer (quantised types) of the exact value ``z``."""
    if dtype in VALUE_TYPE:
        value_type = VALUE_TYPE[dtype]
        return _bits(round_exact(z, value_type) if isinstance(z, Fraction) else rounded(z, value_type))
    if dtype in FIXED:
        total, frac = FIXED[dtype]
        n, top = _round_half_away(z * 2**frac), 2 ** (total - 1)
    else:
        assert scale is not None
        quotient = z / Fraction(scale) if isinstance(z, Fraction) else z / mpmath.mpf(scale)
        n, top = _round_half_away(quotient) + zero_point, 128
    return max(-top, min(top - 1, n))


def stored_of(array: np.ndarray, dtype: str) -> list[int]:
    """The entries of ``array`` the way :func:`stored` spells them."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if dtype in VALUE_TYPE:
        return [int(b) for b in flat.view(f"<u{flat.dtype.itemsize}")]
    return [int(v) for v in flat]


def as_floats(array: np.ndarray, dtype: str) -> np.ndarray:
    """The float64 values of a float table (bfloat16 from its bit patterns)."""
    if dtype == "bfloat16":
        return (np.asarray(array).astype("<u4") << 16).view("<f4").astype(np.float64)
    return np.asarray(array).astype(np.float64)


def bound(amplitude: float, dtype: str) -> float:
    """``|amplitude|`` rounded to ``dtype``: no correctly rounded ``amplitude * trig`` can exceed it."""
    return float(round_exact(Fraction(abs(amplitude)), VALUE_TYPE[dtype]))


def element_kwargs(draw: st.DrawFn, dtype: str) -> dict[str, object]:
    """The element type's keywords; the integer types ``saturate``, as :func:`stored` does (without it, a table
    that would clip is refused: tests/test_saturation.py)."""
    if dtype in VALUE_TYPE:
        return {"dtype": dtype}
    if dtype != "int8":
        return {"dtype": dtype, "saturate": True}
    scale = draw(st.sampled_from([1 / 127, 1 / 128, 0.01, 0.5, 3.0]))
    zero_point = draw(st.one_of(st.none(), st.integers(-128, 127)))
    return {"dtype": dtype, "scale": scale, "zero_point": zero_point, "saturate": True}


def check_entries(table: np.ndarray, dtype: str, kw: dict, cells: list[tuple[int, ...]], exact) -> None:
    """``table[cell]`` is ``exact(*cell)`` rounded, for every cell."""
    scale, zero_point = kw.get("scale"), kw.get("zero_point") or 0
    for cell in cells:
        want = stored(exact(*cell), dtype, scale, zero_point)
        got = stored_of(np.asarray(table[cell]), dtype)[0]
        assert got == want, f"entry {cell}: stored {got:#x}, the reference rounds to {want:#x} ({dtype}, {kw})"


def same_value(got: np.ndarray, want: np.ndarray, dtype: str) -> bool:
    """Equal as values (a zero of either sign matches the reference's zero); bit patterns otherwise."""
    if dtype in VALUE_TYPE:
        return bool(np.array_equal(as_floats(got, dtype), as_floats(want, dtype)))
    return bool(np.array_equal(got, want))


# ------------------------------------------------------------------------------------------------ files
READABLE = [f for f in FORMATS.values() if f.load is not None]
#: Scratch space for the file tests: a RAM disk where there is one (every posenc write is fsynced: on a disk that
#: alone would cost most of the runtime), the default temporary directory otherwise.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK) else None


def _csv_values_match(loaded: np.ndarray, original: np.ndarray, dtype: str) -> bool:
    """CSV reads back float64 text: it must round to exactly the written values of the table's own type."""
    if dtype in ("float32", "float64", "float16"):
        return loaded.astype(original.dtype).tobytes() == original.tobytes()
    if dtype == "bfloat16":
        return loaded.astype(ml_dtypes.bfloat16).view("<u2").tobytes() == original.astype("<u2").tobytes()
    return bool(np.array_equal(loaded, original.astype(np.float64)))


def assert_round_trips(table: Table, directory: Path) -> None:
    """Every readable format gives back what was written: bits, dtypes, shapes (kind and parameters too where the
    format keeps them)."""
    arrays = {key: np.asarray(value) for key, value in table.arrays.items()}
    dtype = str(table.params["dtype"])
    for fmt in READABLE:
        parts: list[str | None] = list(arrays) if fmt.single and len(arrays) > 1 else [None]
        for part in parts:
            expected = table.part(part) if part is not None else table  # its parameters record the part
            written = {part: arrays[part]} if part is not None else arrays
            if fmt.name == "csv" and any(a.ndim != 2 for a in written.values()):
                continue  # documented: CSV holds 2-D tables
            path = directory / f"rt_{fmt.name}_{part or 'all'}{fmt.suffixes[0]}"
            api.save(table, path, part=part)
            back = api.load(path)
            label = f"{fmt.name} part={part} {table.kind} {dict(table.params)}"
            assert len(back.arrays) == len(written), label
            if fmt.name == "csv":
                (original,) = written.values()
                (loaded,) = back.arrays.values()
                assert loaded.shape == original.shape, label
                assert _csv_values_match(np.asarray(loaded), original, dtype), label
                continue
            if len(written) > 1:
                pairs = [(np.asarray(back.arrays[key]), written[key]) for key in written]
            else:
                pairs = [(np.asarray(next(iter(back.arrays.values()))), next(iter(written.values())))]
            for loaded, original in pairs:
                assert loaded.dtype == original.dtype and loaded.shape == original.shape, label
                assert loaded.tobytes() == original.tobytes(), label
            if fmt.name in ("npz", "safetensors", "h5", "h", "c", "bin") or (
                fmt.name == "npy" and dtype not in ("float32", "float64", "float16")
            ):
                assert back.kind == expected.kind, label
                assert dict(back.params) == dict(expected.params), label


def assert_deterministic(make, directory: Path) -> None:
    """Two tables made from the same parameters are the same bytes in memory and in every registered format."""
    first, second = make(), make()
    for key in first.arrays:
        a, b = np.asarray(first.arrays[key]), np.asarray(second.arrays[key])
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), key
    for fmt in FORMATS.values():
        fits = [key for key, value in first.arrays.items() if fmt.name != "csv" or value.ndim == 2]
        if not fits or fmt.name == "csv" and len(fits) < len(first.arrays) == 1:
            continue  # documented: CSV holds 2-D tables
        part = fits[0] if fmt.single and len(first.arrays) > 1 else None
        written = []
        for run, table in (("a", first), ("b", second)):
            (directory / run).mkdir(exist_ok=True)
            paths = api.save(table, directory / run / f"det{fmt.suffixes[0]}", part=part)
            written.append({p.name: p.read_bytes() for p in paths})
        assert written[0] == written[1], f"{fmt.name}: two runs wrote different bytes"


# ------------------------------------------------------------------------------------------------ 1-D sinusoid
@st.composite
def sinusoid_kwargs(draw: st.DrawFn) -> dict[str, object]:
    preset = draw(st.sampled_from([None, *PRESET_DEFS]))
    defs = PRESET_DEFS[preset or "vaswani"]
    form = draw(st.sampled_from(["preset", "shift", "timescales"]))
    kw: dict[str, object] = {}
    if preset is not None:
        kw["preset"] = preset
    base = draw(st.one_of(st.none(), st.sampled_from([2.0, 3.5, 10000.0, 500000.0, 1e12]), st.floats(1.01, 1e6)))
    if base is not None:
        kw["base"] = base
    shift = defs.get("freq_shift") if form == "preset" and defs["freq"] == "shift" else None
    d_model = draw(st.integers(2 * int(shift) + 2 if shift is not None else 1, 16))
    if form == "shift":
        kw["freq_shift"] = draw(
            st.one_of(st.sampled_from([0.0, 1.0, 0.5, -1.0]), st.floats(-4.0, d_model // 2, exclude_max=True))
        )
        assume(d_model // 2 - kw["freq_shift"] > 0)  # type: ignore[operator]
    elif form == "timescales":
        kw["min_timescale"] = draw(st.one_of(st.sampled_from([1.0, 0.5, 2.0, 1e-3]), st.floats(2.0**-64, 100.0)))
        assume((base or 10000.0) / kw["min_timescale"] > 1)  # type: ignore[operator]
    for key, choices in (("layout", ("interleaved", "sin-cos", "cos-sin")), ("odd", ("natural", "zero", "error"))):
        value = draw(st.one_of(st.none(), st.sampled_from(choices)))
        if value is not None:
            kw[key] = value
    if d_model % 2 and kw.get("odd", defs["odd"]) == "error":
        kw["odd"] = draw(st.sampled_from(["natural", "zero"]))
    start = draw(st.one_of(st.none(), st.sampled_from([0.0, 1.0, -3.0, 0.5]), st.floats(-1000.0, 1000.0)))
    step = draw(  # never 0: every row at one position is refused (#25)
        st.one_of(st.none(), st.sampled_from([1.0, 0.5, -1.0, 1e-3, 2.0]), st.floats(-100.0, 100.0).filter(bool))
    )
    amplitude = draw(
        st.one_of(
            st.none(),
            st.sampled_from([1.0, -1.0, 0.5, -2.5, 1000.0, 0.1, 1e-3]),
            st.floats(-1000.0, 1000.0).filter(lambda a: abs(a) >= 1e-3),
        )
    )
    seq_len = draw(st.integers(1, 12))
    padding = draw(st.one_of(st.none(), st.just("none"), st.integers(0, seq_len - 1)))  # past the end: refused
    for key, value in (("start", start), ("step", step), ("amplitude", amplitude)):
        if value is not None:
            kw[key] = value
    if padding == "none":
        kw["no_padding"] = True
    elif padding is not None:
        kw["padding_idx"] = padding
    kw.update(element_kwargs(draw, draw(st.sampled_from(DTYPES))))
    return {"seq_len": seq_len, "d_model": d_model, **kw}


def sinusoid_reference(kw: dict) -> tuple[dict[str, object], Callable[[int], tuple[int, str] | None], Callable]:
    """The documented definition (presets.py) resolved from the arguments, ``column(c)`` and ``exact(r, c)``."""
    spec = {**DEFAULTS, **PRESET_DEFS[str(kw.get("preset") or "vaswani")]}
    if "freq_shift" in kw:
        spec.update(freq="shift", freq_shift=kw["freq_shift"])
    if "min_timescale" in kw:
        spec.update(freq="timescales", min_timescale=kw["min_timescale"])
    if kw.get("preset") == "transformer-xl" and "start" not in kw and "step" not in kw:  # Transformer-XL's klen-1 .. 0
        spec.update(start=float(kw["seq_len"]) - 1, step=-1.0)
    for key in ("layout", "odd", "start", "step", "amplitude", "padding_idx"):
        if key in kw:
            spec[key] = kw[key]
    if kw.get("no_padding"):
        spec["padding_idx"] = None
    d, base = int(kw["d_model"]), float(kw.get("base", 10000.0))
    zero = d % 2 == 1 and spec["odd"] == "zero"
    n = d - 1 if zero else d
    h = d // 2

    def column(c: int) -> tuple[int, str] | None:
        if zero and c == d - 1:
            return None
        if spec["layout"] == "interleaved":
            return c // 2, "sin" if c % 2 == 0 else "cos"
        first, second = ("sin", "cos") if spec["layout"] == "sin-cos" else ("cos", "sin")
        lead = (n + 1) // 2
        return (c, first) if c < lead else (c - lead, second)

    def frequency(k: int) -> mpmath.mpf:
        if spec["freq"] == "paper":
            return mpmath.mpf(base) ** (-mpmath.mpf(2 * k) / n)
        if spec["freq"] == "shift":
            return mpmath.mpf(base) ** (-mpmath.mpf(k) / (h - mpmath.mpf(spec["freq_shift"])))
        m = float(spec["min_timescale"])
        return mpmath.mpf(m) * mpmath.mpf(base / m) ** (-mpmath.mpf(k) / max(h - 1, 1))

    def exact(r: int, c: int) -> Exact:
        col = column(c)
        if col is None or spec["padding_idx"] == r:
            return Fraction(0)
        k, trig = col
        amplitude = float(spec["amplitude"])
        position = Fraction(float(spec["start"])) + Fraction(float(spec["step"])) * r
        if position == 0:
            return Fraction(0) if trig == "sin" else Fraction(amplitude)
        angle = mpmath.mpf(position.numerator) / position.denominator * frequency(k)
        return mpmath.mpf(amplitude) * (mpmath.sin(angle) if trig == "sin" else mpmath.cos(angle))

    return spec, column, exact


@PROPERTIES
@given(kw=sinusoid_kwargs(), data=st.data())
def test_sinusoidal_tables(kw, data):
    table = api.generate(**kw)
    dtype = str(kw["dtype"])
    n, d = int(kw["seq_len"]), int(kw["d_model"])
    spec, column, exact = sinusoid_reference(kw)
    pe = np.asarray(table.array)
    assert table.kind == "sinusoidal" and list(table.arrays) == ["pe"]
    assert pe.shape == (n, d) and pe.dtype == np.dtype(STORAGE[dtype])
    assert table.params["seq_len"] == n and table.params["d_model"] == d and table.params["dtype"] == dtype
    assert table.params["layout"] == spec["layout"]
    if dtype in FLOATS:
        values = as_floats(pe, dtype)
        assert np.isfinite(values).all()
        assert (np.abs(values) <= bound(float(spec["amplitude"]), dtype)).all()
    # Closed forms: the row at position 0, the padding row.
    start, step = Fraction(float(spec["start"])), Fraction(float(spec["step"]))
    zero_row = next((r for r in range(n) if start + step * r == 0), None)
    rows_to_check = {r for r in (zero_row, spec["padding_idx"]) if r is not None and r < n}
    for r in sorted(rows_to_check):
        want = [stored(exact(r, c), dtype, kw.get("scale"), kw.get("zero_point") or 0) for c in range(d)]
        got = stored_of(pe[r], dtype)
        if dtype in VALUE_TYPE:
            assert same_value(pe[r], np.array(want, f"<u{pe.dtype.itemsize}").view(pe.dtype), dtype), (r, got, want)
        else:
            assert got == want, (r, got, want)
    if float(spec["start"]) == 0 and spec["padding_idx"] != 0 and dtype in VALUE_TYPE:
        row0 = as_floats(pe[0], dtype).tolist()
        amplitude = float(round_exact(Fraction(float(spec["amplitude"])), VALUE_TYPE[dtype]))
        want = [amplitude if col is not None and col[1] == "cos" else 0.0 for col in map(column, range(d))]
        assert row0 == want, (row0, want)
    # A few entries against mpmath.
    cells = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, d - 1)), min_size=1, max_size=4))
    check_entries(pe, dtype, kw, cells, exact)
    # The streamed table is the same table.
    lazy = api.generate(**kw, lazy=True).array
    cut = data.draw(st.integers(0, n))
    assert np.concatenate([lazy[:cut], lazy[cut:]]).tobytes() == pe.tobytes()


@FILES
@given(kw=sinusoid_kwargs())
def test_sinusoidal_files(kw):
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        assert_round_trips(api.generate(**kw), Path(tmp))
        assert_deterministic(lambda: api.generate(**kw), Path(tmp))


# ------------------------------------------------------------------------------------------------ RoPE
SCALINGS = ("none", "linear", "dynamic", "yarn", "llama3", "longrope")


@st.composite
def rope_kwargs(draw: st.DrawFn) -> dict[str, object]:
    scaling = draw(st.sampled_from(SCALINGS))
    head_dim = 2 * draw(st.integers(2 if scaling == "dynamic" else 1, 8))
    h = head_dim // 2
    seq_len = draw(st.integers(1, 12))
    kw: dict[str, object] = {"seq_len": seq_len, "head_dim": head_dim, "scaling": scaling}
    theta = draw(st.one_of(st.none(), st.sampled_from([10000.0, 500000.0, 2.0, 1e6]), st.floats(1.5, 1e7)))
    if theta is not None:
        kw["theta"] = theta
    kw["layout"] = draw(st.sampled_from(["half", "interleaved"]))
    kw["attention_scaling"] = draw(st.booleans())
    factor = st.one_of(st.sampled_from([1.0, 2.0, 4.0, 8.0, 32.0]), st.floats(1.0, 64.0))
    positions = st.integers(1, 8192)
    maybe = st.booleans()
    if scaling in ("linear", "dynamic", "llama3"):
        kw["factor"] = draw(factor)
    if scaling == "dynamic":
        kw["max_positions"] = draw(st.integers(1, 32))
    if scaling == "llama3":
        kw["original_max_positions"] = draw(positions)
        if draw(maybe):
            low = draw(st.floats(0.25, 8.0))
            kw["low_freq_factor"], kw["high_freq_factor"] = low, low + draw(st.floats(0.25, 8.0))
    if scaling == "yarn":
        kw["original_max_positions"] = original = draw(positions)
        if draw(maybe):
            kw["factor"] = draw(factor)
        else:
            kw["max_positions"] = original * draw(st.integers(1, 8))
        for key, values in (("beta_fast", st.floats(2.0, 64.0)), ("beta_slow", st.floats(0.25, 2.0))):
            if draw(maybe):
                kw[key] = draw(values)
        if draw(maybe):
            kw["truncate"] = draw(st.booleans())
        extra = draw(st.sampled_from(["none", "mscale", "attention_factor"]))
        if extra == "mscale":
            kw["mscale"], kw["mscale_all_dim"] = draw(st.floats(0.1, 2.0)), draw(st.floats(0.1, 2.0))
        elif extra == "attention_factor":
            kw["attention_factor"] = draw(st.floats(0.25, 4.0))
    if scaling == "longrope":
        kw["original_max_positions"] = original = draw(st.integers(2, 64))
        ext = st.lists(st.one_of(st.sampled_from([1.0, 0.5, 2.0]), st.floats(0.5, 64.0)), min_size=h, max_size=h)
        kw["short_factor"], kw["long_factor"] = draw(ext), draw(ext)
        how = draw(st.sampled_from(["factor", "max_positions", "attention_factor"]))
        if how == "factor":
            kw["factor"] = draw(st.floats(0.5, 64.0))
        elif how == "max_positions":
            kw["max_positions"] = draw(st.integers(1, 4096))
        else:
            kw["attention_factor"] = draw(st.floats(0.25, 4.0))
    kw.update(element_kwargs(draw, draw(st.sampled_from(DTYPES))))
    return kw


def _ln(x: float) -> float:
    """``math.log`` as posenc promises to evaluate it: correctly rounded."""
    return float(mpmath.log(mpmath.mpf(x)))


def rope_reference(kw: dict) -> tuple[float, list[Exact], float]:
    """``(base, multipliers m_k, attention_scaling)`` from rope.py's docstring, independently of the code."""
    scaling, dim = kw["scaling"], int(kw["head_dim"])
    theta, h, seq_len = float(kw.get("theta", 10000.0)), dim // 2, int(kw["seq_len"])
    ones: list[Exact] = [Fraction(1)] * h
    if scaling == "none":
        return theta, ones, 1.0
    if scaling == "linear":
        return theta, [1 / Fraction(kw["factor"])] * h, 1.0
    if scaling == "dynamic":
        factor, top = float(kw["factor"]), int(kw["max_positions"])
        ratio = (factor * max(seq_len, top) / top) - (factor - 1)
        return theta * float(mpmath.mpf(ratio) ** mpmath.mpf(dim / (dim - 2))), ones, 1.0
    original = float(kw["original_max_positions"])
    if scaling == "llama3":
        factor = Fraction(kw["factor"])
        low, high = mpmath.mpf(kw.get("low_freq_factor", 1.0)), mpmath.mpf(kw.get("high_freq_factor", 4.0))
        mults: list[Exact] = []
        for k in range(h):
            cycles = mpmath.mpf(original) * mpmath.mpf(theta) ** (-mpmath.mpf(2 * k) / dim) / (2 * mpmath.pi)
            if cycles > high:
                mults.append(Fraction(1))
            elif cycles < low:
                mults.append(1 / factor)
            else:
                s = (cycles - low) / (high - low)
                mults.append((1 - s) / _as_mpf(factor) + s)
        return theta, mults, 1.0
    factor = kw.get("factor")
    if factor is None and "max_positions" in kw:
        factor = kw["max_positions"] / original
    if scaling == "longrope":
        ext = kw["long_factor"] if seq_len > original else kw["short_factor"]
        attention = kw.get("attention_factor")
        if attention is None:
            attention = 1.0 if factor <= 1 else math.sqrt(1 + _ln(factor) / _ln(original))
        return theta, [1 / Fraction(e) for e in ext], float(attention)
    assert scaling == "yarn"

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * _ln(scale) + 1.0

    attention = kw.get("attention_factor")
    if attention is None:
        if kw.get("mscale") and kw.get("mscale_all_dim"):
            attention = mscale(factor, kw["mscale"]) / mscale(factor, kw["mscale_all_dim"])
        else:
            attention = mscale(factor)

    def correction_dim(rotations: float) -> float:
        return (dim * _ln(original / (rotations * 2 * math.pi))) / (2 * _ln(theta))

    low, high = correction_dim(kw.get("beta_fast", 32.0)), correction_dim(kw.get("beta_slow", 1.0))
    if kw.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    mults = []
    for k in range(h):
        ramp = min(max((k - Fraction(low)) / (Fraction(high) - Fraction(low)), Fraction(0)), Fraction(1))
        mults.append(ramp / Fraction(factor) + (1 - ramp))
    return theta, mults, float(attention)


def _as_mpf(x: Exact) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else x


@PROPERTIES
@given(kw=rope_kwargs(), data=st.data())
def test_rope_tables(kw, data):
    table = api.rope(**kw)
    dtype = str(kw["dtype"])
    n, dim = int(kw["seq_len"]), int(kw["head_dim"])
    h = dim // 2
    base, mults, attention = rope_reference(kw)
    assert table.kind == "rope" and list(table.arrays) == ["cos", "sin", "inv_freq"]
    cos, sin, inv = (np.asarray(table.arrays[key]) for key in ("cos", "sin", "inv_freq"))
    storage = np.dtype(STORAGE[dtype])
    assert cos.shape == sin.shape == (n, dim) and inv.shape == (h,)
    assert cos.dtype == sin.dtype == inv.dtype == storage
    recorded = float(table.params["attention_scaling"])
    assert math.isclose(recorded, attention, rel_tol=1e-15), (recorded, attention)
    assert table.params["attention_scaling_folded"] is bool(kw["attention_scaling"])
    amplitude = recorded if kw["attention_scaling"] else 1.0
    if dtype in FLOATS:
        for part in (cos, sin):
            values = as_floats(part, dtype)
            assert np.isfinite(values).all()
            assert (np.abs(values) <= bound(amplitude, dtype)).all()
        assert np.isfinite(as_floats(inv, dtype)).all() and (as_floats(inv, dtype) > 0).all()
    scale, zero_point = kw.get("scale"), kw.get("zero_point") or 0
    # Row 0: cos is the attention scaling, sin is 0; inv_freq[0] is frequency 0's multiplier.
    assert stored_of(cos[0], dtype) == [stored(Fraction(amplitude), dtype, scale, zero_point)] * dim
    assert stored_of(sin[0], dtype) == [stored(Fraction(0), dtype, scale, zero_point)] * dim
    assert stored_of(inv[:1], dtype) == [stored(mults[0], dtype, scale, zero_point)]

    def freq(k: int) -> mpmath.mpf:
        return _as_mpf(mults[k]) * mpmath.mpf(base) ** (-mpmath.mpf(2 * k) / dim)

    def k_of(j: int) -> int:
        return j % h if kw["layout"] == "half" else j // 2

    def entry(trig):
        def exact(p: int, j: int) -> Exact:
            if p == 0:
                return Fraction(amplitude) if trig is mpmath.cos else Fraction(0)
            return mpmath.mpf(amplitude) * trig(p * freq(k_of(j)))

        return exact

    cells = st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, dim - 1)), min_size=1, max_size=3)
    check_entries(cos, dtype, kw, data.draw(cells), entry(mpmath.cos))
    check_entries(sin, dtype, kw, data.draw(cells), entry(mpmath.sin))
    ks = data.draw(st.lists(st.integers(1, h - 1), max_size=2)) if h > 1 else []
    check_entries(inv, dtype, kw, [(k,) for k in ks], freq)
    lazy = api.rope(**kw, lazy=True)
    for key in ("cos", "sin"):
        assert np.asarray(lazy.arrays[key]).tobytes() == np.asarray(table.arrays[key]).tobytes()


@FILES
@given(kw=rope_kwargs())
def test_rope_files(kw):
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        assert_round_trips(api.rope(**kw), Path(tmp))
        assert_deterministic(lambda: api.rope(**kw), Path(tmp))


# ------------------------------------------------------------------------------------------------ ALiBi
@st.composite
def alibi_kwargs(draw: st.DrawFn) -> dict[str, object]:
    kw: dict[str, object] = {
        "heads": draw(st.integers(1, 64)),
        "seq_len": draw(st.one_of(st.none(), st.integers(1, 32))),
    }
    kw.update(element_kwargs(draw, draw(st.sampled_from(DTYPES))))
    return kw


def slope_exponent(h: int, heads: int) -> Fraction:
    """alibi.py's docstring: ``-8(h+1)/p`` for the first ``p`` heads, then ``-4(2(h-p)+1)/p``."""
    p = 1 << (heads.bit_length() - 1)
    return Fraction(-8 * (h + 1), p) if h < p else Fraction(-4 * (2 * (h - p) + 1), p)


def power_of_two(e: Fraction) -> Exact:
    return Fraction(2) ** int(e) if e.denominator == 1 else mpmath.mpf(2) ** (mpmath.mpf(e.numerator) / e.denominator)


@PROPERTIES
@given(kw=alibi_kwargs(), data=st.data())
def test_alibi_tables(kw, data):
    table = api.alibi(**kw)
    dtype, heads, n = str(kw["dtype"]), int(kw["heads"]), kw["seq_len"]
    storage = np.dtype(STORAGE[dtype])
    assert table.kind == "alibi" and list(table.arrays) == (["slopes"] if n is None else ["slopes", "bias"])
    slopes = np.asarray(table.arrays["slopes"])
    assert slopes.shape == (heads,) and slopes.dtype == storage
    check_entries(slopes, dtype, kw, [(h,) for h in range(heads)], lambda h: power_of_two(slope_exponent(h, heads)))
    if dtype in FLOATS:
        values = as_floats(slopes, dtype)
        assert np.isfinite(values).all() and (values > 0).all() and (values < 1).all()
    if n is None:
        return
    bias = np.asarray(table.arrays["bias"])
    assert bias.shape == (heads, n) and bias.dtype == storage
    if dtype in FLOATS:
        values = as_floats(bias, dtype)
        assert np.isfinite(values).all() and (values >= 0).all()
        assert (values <= n - 1).all() and (np.diff(values, axis=1) >= 0).all()  # rounding is monotone
        assert (values[:, 0] == 0).all()
        if n > 1:
            assert values[:, 1].tolist() == as_floats(slopes, dtype).tolist()  # j = 1: the slope itself

    def exact(h: int, j: int) -> Exact:
        return power_of_two(slope_exponent(h, heads)) * j if j else Fraction(0)

    cells = data.draw(st.lists(st.tuples(st.integers(0, heads - 1), st.integers(0, n - 1)), min_size=1, max_size=6))
    check_entries(bias, dtype, kw, cells, exact)


@FILES
@given(kw=alibi_kwargs())
def test_alibi_files(kw):
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        assert_round_trips(api.alibi(**kw), Path(tmp))
        assert_deterministic(lambda: api.alibi(**kw), Path(tmp))


# ------------------------------------------------------------------------------------------------ 2-D sincos
@st.composite
def sincos2d_kwargs(draw: st.DrawFn) -> dict[str, object]:
    kw: dict[str, object] = {
        "height": draw(st.integers(1, 6)),
        "width": draw(st.integers(1, 6)),
        "d_model": 4 * draw(st.integers(1, 4)),
        "cls_token": draw(st.booleans()),
    }
    base = draw(st.one_of(st.none(), st.sampled_from([10000.0, 2.0, 1e6]), st.floats(1.01, 1e6)))
    if base is not None:
        kw["base"] = base
    kw.update(element_kwargs(draw, draw(st.sampled_from(DTYPES))))
    return kw


@PROPERTIES
@given(kw=sincos2d_kwargs(), data=st.data())
def test_sincos2d_tables(kw, data):
    table = api.sincos2d(**kw)
    dtype = str(kw["dtype"])
    hgt, wid, d, cls = int(kw["height"]), int(kw["width"]), int(kw["d_model"]), bool(kw["cls_token"])
    q, base = d // 4, float(kw.get("base", 10000.0))
    pe = np.asarray(table.array)
    assert table.kind == "sincos2d" and pe.shape == (cls + hgt * wid, d) and pe.dtype == np.dtype(STORAGE[dtype])
    if dtype in FLOATS:
        values = as_floats(pe, dtype)
        assert np.isfinite(values).all() and (np.abs(values) <= 1).all()

    def exact(r: int, c: int) -> Exact:
        if cls and r == 0:
            return Fraction(0)
        y, x = divmod(r - cls, wid)
        position, trig = (x, "sin cos".split()[c // q % 2]) if c < 2 * q else (y, "sin cos".split()[c // q % 2])
        if position == 0:
            return Fraction(0) if trig == "sin" else Fraction(1)
        angle = position * mpmath.mpf(base) ** (-mpmath.mpf(c % q) / q)
        return mpmath.sin(angle) if trig == "sin" else mpmath.cos(angle)

    # Closed forms: the class-token row is 0, the patch (0, 0) is [0 | 1 | 0 | 1].
    check_entries(pe, dtype, kw, [(r, c) for r in range(cls + 1) for c in range(d)], exact)
    cells = data.draw(st.lists(st.tuples(st.integers(0, len(pe) - 1), st.integers(0, d - 1)), min_size=1, max_size=4))
    check_entries(pe, dtype, kw, cells, exact)


@FILES
@given(kw=sincos2d_kwargs())
def test_sincos2d_files(kw):
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        assert_round_trips(api.sincos2d(**kw), Path(tmp))
        assert_deterministic(lambda: api.sincos2d(**kw), Path(tmp))


@pytest.mark.parametrize(
    "kw",
    [
        {"preset": "tensor2tensor"},
        {"odd": "zero"},
        {"odd": "zero", "min_timescale": 2.0},
        {"odd": "zero", "freq_shift": -1.0},
        {"odd": "zero", "layout": "cos-sin", "freq_shift": -0.5},
    ],
    ids=str,
)
def test_one_column_zero_odd_tables(kw):
    """d_model 1 with the zero rule: a table of no columns and the zero column (tensor2tensor's and diffusers' own
    functions give zeros there), whatever the frequencies."""
    table = api.generate(3, 1, **kw)
    assert np.asarray(table.array).tolist() == [[0.0]] * 3


def test_longrope_attention_scaling_needs_a_context_above_one():
    """sqrt(1 + ln(factor) / ln(original_max_positions)) divides by ln 1 = 0: a bad parameter, not a crash."""
    longrope = {"scaling": "longrope", "short_factor": [1.0], "long_factor": [1.0], "factor": 2.0}
    with pytest.raises(SpecError) as info:
        api.rope(4, 2, original_max_positions=1, **longrope)
    assert info.value.param == "original_max_positions"
    assert api.rope(4, 2, original_max_positions=1, attention_factor=1.0, **longrope).params["attention_scaling"] == 1


def test_alibi_exact_slopes_on_rounding_ties():
    """One head: slope 2**-8, so q7 entries j/2 are ties (half away from zero), and int8 with scale 2**-9 is exact."""
    table = api.alibi(1, 4, dtype="q7")
    assert table.arrays["slopes"].tolist() == [1] and table.arrays["bias"].tolist() == [[0, 1, 1, 2]]
    table = api.alibi(1, 4, dtype="int8", scale=2.0**-9, zero_point=3)
    assert table.arrays["slopes"].tolist() == [5] and table.arrays["bias"].tolist() == [[3, 5, 7, 9]]


def test_every_preset_is_in_the_reference():
    """A new preset must be written into PRESET_DEFS (from its documentation) to be covered here."""
    assert set(PRESET_DEFS) == set(presets.PRESETS)


def test_every_readable_format_is_exercised():
    """The round trips above cover the registry as it is, not a list that could drift from it."""
    assert {f.name for f in READABLE} >= {"npy", "npz", "h5", "csv"}
    assert all(f.suffixes for f in FORMATS.values())
