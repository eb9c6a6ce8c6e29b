"""Tests of posenc_cli.encodings.sinusoid, the general sinusoid table: every value is checked against mpmath (90
digits for the angle), never against posenc itself, except where a test compares two posenc paths bit for bit.

value(r, c) = scale * trig_c((start + step * r) * base**(-k_c / denom)), correctly rounded to the output type.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import posenc_cli.encodings._engine as engine
from posenc_cli.dtypes import ElementType
from posenc_cli.encodings import sinusoidal_rows
from posenc_cli.encodings.sinusoid import MAX_POSITION, Columns, check_sinusoid, sinusoid_columns, sinusoid_rows
from posenc_cli.errors import SpecError

from .test_encodings import _bits, _near_zeros, _neighbours, rounded

mpmath.mp.dps = 60


# ------------------------------------------------------------------------------------------------ the reference
@dataclass(frozen=True)
class Spec:
    denom: Fraction
    base: float = 10000.0
    start: float = 0.0
    step: float = 1.0
    scale: float = 1.0
    name: str = field(default="", compare=False)

    def kwargs(self) -> dict:
        return {"denom": self.denom, "base": self.base, "start": self.start, "step": self.step, "scale": self.scale}

    def last_row(self) -> int:
        """The last row whose position stays below 2**32 in magnitude."""
        ahead = MAX_POSITION - math.copysign(1, self.step) * Fraction(self.start)  # distance to the edge ahead
        rows = ahead / abs(Fraction(self.step)) if self.step else MAX_POSITION
        return min(2**32 - 1, math.ceil(rows) - 1)


def exact(row: int, column: tuple[int, str] | None, spec: Spec) -> mpmath.mpf:
    """The exact entry at 60 significant digits (the angle at 90: positions reach 2**32)."""
    if column is None:
        return mpmath.mpf(0)
    k, trig = column
    with mpmath.workdps(90):
        position = mpmath.mpf(spec.start) + mpmath.mpf(spec.step) * row  # exact: 53 + 32 bits
        f = mpmath.mpf(spec.base) ** (-mpmath.mpf(k * spec.denom.denominator) / spec.denom.numerator)
        value = mpmath.sin(position * f) if trig == "sin" else mpmath.cos(position * f)
        return +(mpmath.mpf(spec.scale) * value)


def assert_entries(table: np.ndarray, first: int, columns: list, spec: Spec, cols=None) -> None:
    for r in range(table.shape[0]):
        for c in range(len(columns)) if cols is None else cols:
            want = rounded(exact(first + r, columns[c], spec), table.dtype.type)
            got = table[r, c]
            where = f"row {first + r}, column {c} = {columns[c]} of {spec}"
            assert _bits(got) == _bits(want), f"{where}: {got!r} != {want!r}"


def random_columns(rng: random.Random, d: int, spec: Spec) -> list:
    kmax = int(2 * spec.denom) + 1  # frequencies down to base**-2
    return [None if rng.random() < 0.1 else (rng.randrange(kmax), rng.choice(["sin", "cos"])) for _ in range(d)]


SPECS = [
    Spec(Fraction(512), name="paper d=1024"),
    Spec(Fraction(255), start=2.0, name="fairseq h-1, rows from padding_idx + 1"),
    Spec(Fraction(160), start=0.5, step=3.25, scale=22.627416997969522, name="diffusion h, sqrt(d) amplitude"),
    Spec(Fraction(7, 3), base=2.0, start=0.1, step=0.1, scale=-2.0, name="denom 7/3, base 2"),
    Spec(Fraction(64), base=10000.5, start=3.25, step=37.0, scale=0.5, name="stride 37"),
    Spec(Fraction(100), base=5e5, start=-1000.0, step=1e-3, scale=3.7, name="crossing zero, fractional step"),
    Spec(Fraction(1), start=-0.5, step=-1.0, name="t2t guard max(h-1, 1), negative positions"),
    Spec(Fraction(33, 2), start=1 / 3, step=1 / 3, name="odd d=33, thirds"),
    Spec(Fraction(5), base=5e5, start=7.0, step=-1e-3, scale=0.125, name="downwards crossing"),
    Spec(Fraction(255), step=0.001, scale=2.0**-3, name="timesteps in thousandths"),
]
NAMED = {s.name.split(",")[0].split(" ")[0]: s for s in SPECS}  # by first word
assert len(NAMED) == len(SPECS)


# ---------------------------------------------------------------------------------------------- random entries
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_random_entries(spec: Spec) -> None:
    rng = random.Random(spec.name)
    d = rng.choice([3, 16, 64, 200])
    columns = random_columns(rng, d, spec)
    last = spec.last_row()
    for trial in range(8):
        first = [rng.randrange(300), 99_995, rng.randrange(last - 2), last - 2][trial % 4]
        for dtype in ("float32", "float64"):
            table = sinusoid_rows(first, first + 3, columns, dtype=dtype, **spec.kwargs())
            assert table.shape == (3, d) and table.dtype == dtype
            assert_entries(table, first, columns, spec, rng.sample(range(d), min(d, 10)))


def test_domain_edges() -> None:
    """Positions just inside +-2**32, and rows up to 2**32 - 1."""
    columns = [(0, "sin"), (0, "cos"), (3, "sin"), (7, "cos"), (1, "sin")]
    cases = [
        (Spec(Fraction(4)), 2**32 - 2),
        (Spec(Fraction(4), step=-1.0), 2**32 - 2),
        (Spec(Fraction(4), start=-(2.0**32) + 0.5, step=0.5), 0),
        (Spec(Fraction(4), start=-(2.0**32) + 0.5, step=0.5), 2**32 - 2),
        (Spec(Fraction(4), start=1.5, step=37.0), Spec(Fraction(4), start=1.5, step=37.0).last_row() - 1),
        (Spec(Fraction(4), start=2.0**32 - 0.25, step=-(2.0**-20)), 2**32 - 2),
    ]
    for spec, first in cases:
        assert first + 1 <= spec.last_row()
        for dtype in ("float32", "float64"):
            assert_entries(sinusoid_rows(first, first + 2, columns, dtype=dtype, **spec.kwargs()), first, columns, spec)
    with pytest.raises(SpecError) as info:
        sinusoid_rows(0, 2, columns, denom=4, start=1.5, step=2.0**32 - 1.5)
    assert info.value.param == "stop_row"


@pytest.mark.parametrize("name", ["paper", "diffusion", "denom", "crossing", "timesteps"])
def test_element_types(name: str) -> None:
    from .test_dtypes import reference  # needs ml_dtypes

    spec = NAMED[name]
    rng = random.Random(name)
    columns = random_columns(rng, 24, spec)
    elements = [
        ElementType.of("float16"),
        ElementType.of("bfloat16"),
        ElementType.of("q15"),
        ElementType.of("q7"),
        ElementType.of("int8", scale=abs(spec.scale) / 100, zero_point=-3),
    ]
    for element in elements:
        for first in (0, 1000, 99_990, rng.randrange(spec.last_row() - 4)):
            block = sinusoid_rows(
                first,
                first + 4,
                columns,
                dtype=element.name,
                quant_scale=element.scale,
                zero_point=None if element.scale is None else element.zero_point,
                **spec.kwargs(),
            )
            assert block.dtype == element.storage
            for r in range(4):
                for c in rng.sample(range(24), 8):
                    want = reference(exact(first + r, columns[c], spec), element)
                    assert block[r, c].item() == want, (element, first + r, columns[c], block[r, c], want)


# ------------------------------------------------------------------------------ the paper's table, bit for bit
def paper_columns(d_model: int) -> list:
    return [(j // 2, "sin" if j % 2 == 0 else "cos") for j in range(d_model)]


@pytest.mark.parametrize("d_model", [1, 2, 3, 7, 64, 513, 1024])
@pytest.mark.parametrize("base", [10000.0, 2.0, 500000.0])
def test_reproduces_sinusoidal_bit_for_bit(d_model: int, base: float) -> None:
    columns = paper_columns(d_model)
    dtypes = ["float32", "float64", "float16", "bfloat16", "q15", "q7", "int8"]
    for dtype in dtypes if d_model <= 64 else dtypes[:2]:
        quant = {"scale": 1 / 127} if dtype == "int8" else {}
        for first, stop in ((0, 300), (99_990, 100_010), (2**32 - 5, 2**32)):
            want = sinusoidal_rows(first, stop, d_model, base=base, dtype=dtype, **quant)
            got = sinusoid_rows(
                first,
                stop,
                columns,
                denom=Fraction(d_model, 2),
                base=base,
                dtype=dtype,
                quant_scale=quant.get("scale"),
            )
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (d_model, base, dtype, first)


def test_layouts_are_column_permutations() -> None:
    """[S|C] halves, [C|S] halves and Marian's ceil/floor split hold the paper's columns, permuted."""
    d, h = 9, 4
    paper = sinusoid_rows(0, 50, paper_columns(d), denom=Fraction(d, 2), dtype="float64")
    marian = [(k, "sin") for k in range(5)] + [(k, "cos") for k in range(4)]
    table = sinusoid_rows(0, 50, marian, denom=Fraction(d, 2), dtype="float64")
    assert table.tobytes() == np.concatenate([paper[:, 0::2], paper[:, 1::2]], axis=1).tobytes()
    halves = [(k, "sin") for k in range(h)] + [(k, "cos") for k in range(h)] + [None]
    flipped = [(k, "cos") for k in range(h)] + [(k, "sin") for k in range(h)] + [None]
    a = sinusoid_rows(0, 50, halves, denom=Fraction(h - 1), dtype="float64")
    b = sinusoid_rows(0, 50, flipped, denom=Fraction(h - 1), dtype="float64")
    assert a[:, :h].tobytes() == b[:, h : 2 * h].tobytes() and a[:, h : 2 * h].tobytes() == b[:, :h].tobytes()
    assert (a[:, -1] == 0).all() and not np.signbit(a[:, -1]).any()
    assert a[1, h - 1] == rounded(exact(1, (h - 1, "sin"), Spec(Fraction(h - 1))), np.float64)  # sin(1/10000)
    assert a[1, h - 1] == pytest.approx(math.sin(1e-4), rel=1e-15)


# --------------------------------------------------------------------------------- tiny values near zeros
@pytest.mark.parametrize(
    ("spec", "k", "offset"),
    [
        (Spec(Fraction(512), step=0.5), 37, 0),  # positions n/2: rows n
        (Spec(Fraction(512), start=0.5, step=0.5, scale=-3.7), 1, 1),  # positions (r + 1)/2: rows n - 1
        (Spec(Fraction(256), base=5e5, step=3.25, scale=22.627416997969522), 100, 0),
        (Spec(Fraction(1), step=-1.0), 0, 0),  # negative positions
        (Spec(Fraction(7, 3), base=2.0, step=0.1), 2, 0),
    ],
)
def test_tiny_values_near_zeros(spec: Spec, k: int, offset: int, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = engine.sinusoid_entries

    def spy(rows: np.ndarray, *args: object) -> np.ndarray:
        calls.append(len(rows))
        return original(rows, *args)

    monkeypatch.setattr(engine, "sinusoid_entries", spy)
    exponent = -mpmath.mpf(k * spec.denom.denominator) / spec.denom.numerator
    g = mpmath.mpf(abs(spec.step)) * mpmath.mpf(spec.base) ** exponent  # the angle's step per row
    smallest, columns = mpmath.mpf(1), [(k, "sin"), (k, "cos")]
    for n, m in _near_zeros(g, spec.last_row()):
        row = n - offset
        smallest = min(smallest, abs(exact(row, columns[m % 2], spec) / spec.scale))
        for dtype in ("float32", "float64"):
            assert_entries(sinusoid_rows(row, row + 1, columns, dtype=dtype, **spec.kwargs()), row, columns, spec)
    assert smallest < 1e-6  # the search found what it was meant to
    assert calls  # and the values were small enough to need the exact path


# ------------------------------------------------------------------------------------ near rounding boundaries
# (spec, row, k, trig) whose exact value lies within 1e-3 ulp of a midpoint between two floats of the dtype. Found
# by sampling 20,000 random entries of these specs (random.Random(2024); 60% of rows below 2**24) with mpmath at 40
# digits; the test re-measures the distance.
MID = {
    "t2t": Spec(Fraction(255), start=2.0),
    "diffusion": Spec(Fraction(160), start=0.5, step=3.25, scale=22.627416997969522),
    "odd": Spec(Fraction(7, 3), base=2.0, start=0.1, step=0.1, scale=-2.0),
    "stride": Spec(Fraction(64), base=10000.5, start=3.25, step=37.0, scale=0.5),
    "crossing": Spec(Fraction(100), base=5e5, start=-1000.0, step=1e-3, scale=3.7),
}
NEAR_MIDPOINT_F32 = [
    ("diffusion", 15683590, 293, "cos"),
    ("odd", 3944520154, 1, "cos"),
    ("odd", 1203559, 1, "sin"),
    ("diffusion", 382544001, 99, "cos"),
    ("t2t", 2875327, 315, "sin"),
    ("crossing", 14503674, 97, "sin"),
    ("crossing", 1011761504, 146, "sin"),
    ("odd", 665497278, 0, "sin"),
    ("t2t", 2727894090, 253, "cos"),
    ("stride", 4465273, 30, "sin"),
    ("crossing", 4813169, 15, "cos"),
    ("t2t", 2883803622, 464, "cos"),
    ("stride", 33687548, 62, "sin"),
    ("diffusion", 501321439, 28, "sin"),
]
NEAR_MIDPOINT_F64 = [
    ("diffusion", 2605617, 121, "cos"),
    ("stride", 103034595, 109, "cos"),
    ("odd", 480025474, 2, "sin"),
    ("odd", 2362848752, 3, "cos"),
    ("crossing", 12410707, 97, "cos"),
    ("t2t", 7658383, 33, "cos"),
    ("diffusion", 758939428, 102, "cos"),
    ("odd", 1727117715, 2, "sin"),
    ("stride", 2268988, 63, "sin"),
    ("crossing", 566177356, 39, "cos"),
    ("crossing", 43915, 114, "cos"),
    ("t2t", 6821693, 18, "sin"),
    ("crossing", 3407857474, 51, "sin"),
    ("diffusion", 506586121, 249, "cos"),
]


def _midpoint_distance(z: mpmath.mpf, dtype: type) -> mpmath.mpf:
    """Distance from ``z`` to the nearest midpoint between neighbouring floats, in units of their spacing."""
    c = np.array(float(z)).astype(dtype)[()]
    return min(
        abs(z - (mpmath.mpf(float(c)) + mpmath.mpf(float(n))) / 2) / abs(mpmath.mpf(float(n)) - float(c))
        for n in _neighbours(c)
    )


@pytest.mark.parametrize(("dtype", "cases"), [(np.float32, NEAR_MIDPOINT_F32), (np.float64, NEAR_MIDPOINT_F64)])
def test_near_midpoints(dtype: type, cases: list) -> None:
    for name, row, k, trig in cases:
        spec, columns = MID[name], [(k, trig)]
        assert _midpoint_distance(exact(row, columns[0], spec), dtype) < 1e-3
        assert_entries(sinusoid_rows(row, row + 1, columns, dtype=dtype, **spec.kwargs()), row, columns, spec)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "q15", "int8"])
def test_amplitudes_aimed_at_rounding_boundaries(dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``scale`` chosen so that ``scale * trig`` lands within a float64 rounding of a boundary of ``dtype`` (a
    midpoint, a half-integer step): far closer than any fast-path bound, so the exact path must decide."""
    from .test_dtypes import reference  # needs ml_dtypes

    calls = []
    for name in ("sinusoid_entries", "decided"):
        original = getattr(engine, name)
        monkeypatch.setattr(engine, name, lambda *a, f=original, **k: calls.append(1) or f(*a, **k))
    rng = random.Random(dtype)
    element = ElementType.of(dtype, scale=0.03125 if dtype == "int8" else None)
    base_spec = Spec(Fraction(64), start=0.5, step=3.25)
    columns = [(5, "sin"), (9, "cos"), (63, "sin"), (0, "cos")]
    for _ in range(6):
        row, c = rng.randrange(10**6), rng.randrange(len(columns))
        v = exact(row, columns[c], base_spec)
        target = v * rng.choice([3.7, -22.6, 0.9])
        if dtype in ("q15", "int8"):
            unit = mpmath.mpf(2) ** -15 if dtype == "q15" else mpmath.mpf(element.scale)
            boundary = (mpmath.floor(target / unit) + mpmath.mpf(0.5)) * unit
        else:
            c16 = np.array(float(target)).astype(np.float32 if dtype == "float32" else np.float16)[()]
            if dtype == "bfloat16":
                c16 = np.array(float(target)).astype(pytest.importorskip("ml_dtypes").bfloat16)[()]
            boundary = (mpmath.mpf(float(c16)) + mpmath.mpf(float(_neighbours(c16)[1]))) / 2
        spec = Spec(base_spec.denom, start=0.5, step=3.25, scale=float(boundary / v))
        z = exact(row, columns[c], spec)
        assert abs(z - boundary) <= abs(boundary) * 2.0**-52
        table = sinusoid_rows(row, row + 1, columns, dtype=dtype, quant_scale=element.scale, **spec.kwargs())
        assert table[0, c].item() == (reference(z, element) if dtype != "float32" else float(rounded(z, np.float32)))
    assert len(calls) >= 3  # most of them needed the exact path


# ---------------------------------------------------------------------------------------------- table structure
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "q15", "int8"])
def test_position_zero_and_zero_columns(dtype: str) -> None:
    """The row at position 0 (here row 5, mid-block) is exact: sin 0 = +0, cos 0 = scale; zero columns are +0."""
    columns = [(0, "sin"), (3, "cos"), None, (1, "sin"), (2, "cos"), None]
    quant = {"quant_scale": 0.05} if dtype == "int8" else {}
    for start, step in ((-5.0, 1.0), (-2.5, 0.5), (5.0, -1.0)):
        table = sinusoid_rows(0, 12, columns, denom=2, start=start, step=step, scale=-0.75, dtype=dtype, **quant)
        zero = sinusoid_rows(0, 1, columns, denom=2, start=0.0, step=step, scale=-0.75, dtype=dtype, **quant)
        assert table[5].tobytes() == zero[0].tobytes()
        assert (table[:, [2, 5]] == 0).all()
        if dtype in ("float32", "float64", "float16"):
            assert not np.signbit(table[:, [2, 5]]).any() and not np.signbit(table[5, [0, 3]]).any()
            assert table[5, 1] == table[5, 4] == np.array(-0.75).astype(dtype)
    f32 = sinusoid_rows(0, 3, [(0, "cos"), (0, "sin"), None], denom=1, start=-1.0, scale=np.finfo(np.float32).max)
    assert f32[1].tolist() == [float(np.finfo(np.float32).max), 0.0, 0.0]


def test_zero_step_and_zero_only_layouts() -> None:
    columns = [(0, "sin"), (1, "cos"), (2, "sin"), None]
    spec = Spec(Fraction(3), start=1.25, step=0.0, scale=3.0)
    for dtype in ("float32", "float64"):
        table = sinusoid_rows(10, 20, columns, dtype=dtype, **spec.kwargs())
        assert (table == table[0]).all()
        assert_entries(table[:1], 10, columns, spec)
        assert (sinusoid_rows(0, 4, columns, denom=3, start=0.0, step=0.0, dtype=dtype) == [0, 1, 0, 0]).all()
        assert not sinusoid_rows(0, 3, [None, None], denom=1, dtype=dtype).any()


@pytest.mark.parametrize("name", ["crossing", "t2t", "stride"])
def test_row_blocks_are_slices_of_the_table(name: str) -> None:
    """Any block of rows equals the same rows of a larger block, across the zero crossing and block boundaries."""
    spec = NAMED[name]
    spec = Spec(spec.denom, spec.base, spec.start if name != "crossing" else -0.15, spec.step, spec.scale)
    columns = random_columns(random.Random(name), 40, spec)
    cols = sinusoid_columns(columns)
    for dtype in ("float32", "float64"):
        full = sinusoid_rows(0, 400, cols, dtype=dtype, **spec.kwargs())
        cuts = [0, 1, 7, 130, 149, 150, 151, 299, 400]
        blocks = zip(cuts[:-1], cuts[1:], strict=True)
        parts = [sinusoid_rows(a, b, cols, dtype=dtype, **spec.kwargs()) for a, b in blocks]
        assert np.concatenate(parts).tobytes() == full.tobytes()
        assert_entries(full[148:152], 148, columns, spec, range(0, 40, 3))


def test_large_table_matches_reference_on_a_sample() -> None:
    """The two-thread path with a phase, a scale and a crossing: 4096 x 1024, sampled."""
    spec = Spec(Fraction(511), start=-20.5, step=0.01, scale=22.627416997969522)
    columns = [(k, "sin") for k in range(512)] + [(k, "cos") for k in range(512)]
    for dtype in ("float32", "float64"):
        table = sinusoid_rows(0, 4096, columns, dtype=dtype, **spec.kwargs())
        rng = random.Random(dtype)
        for r in [0, 2049, 2050, 2051, *rng.sample(range(4096), 4)]:
            assert_entries(table[r : r + 1], r, columns, spec, rng.sample(range(1024), 30))


@pytest.mark.parametrize(
    ("scale", "dtype"),
    [(2.0**-1000, "float64"), (1e300, "float64"), (-1e-300, "float32"), (3.0e38, "float32"), (2.0**-20, "float16")],
)
def test_extreme_amplitudes(scale: float, dtype: str) -> None:
    spec = Spec(Fraction(8), start=0.5, step=3.0, scale=scale)
    columns = [(0, "sin"), (0, "cos"), (5, "sin"), (15, "cos"), (16, "sin")]
    table = sinusoid_rows(1000, 1004, columns, dtype=dtype, **spec.kwargs())
    assert_entries(table, 1000, columns, spec)


def test_frequencies_below_float64() -> None:
    """Base 1e300, ``k / denom = 4/3``: f = 1e-400 underflows float64 (and so do the kernel's constants for
    ``k / denom = 1``); a large amplitude brings the values back into range."""
    columns = [(4, "sin"), (4, "cos"), (3, "sin"), (3, "cos"), (1, "sin")]
    for dtype, scale in (("float64", 1e300), ("float32", 3e38), ("float64", -1.0)):
        spec = Spec(Fraction(3), base=1e300, start=0.5, step=2.0**20, scale=scale)
        assert_entries(sinusoid_rows(0, 3, columns, dtype=dtype, **spec.kwargs()), 0, columns, spec)


# ------------------------------------------------------------------------------------------------- validation
GOOD = {"first_row": 0, "stop_row": 4, "columns": [(0, "sin"), (0, "cos")], "denom": 1}
ROW_3 = "positions must stay below 2**32 in magnitude: row 3 is at start + step * 3 = "


@pytest.mark.parametrize(
    ("change", "param", "message"),
    [
        ({"first_row": -1}, "first_row", "first_row must be a non-negative integer, got -1"),
        ({"stop_row": 2**32 + 1}, "stop_row", "stop_row must be at most 4294967296"),
        ({"first_row": 5}, "stop_row", "stop_row must be at least first_row (5), got 4"),
        ({"columns": []}, "columns", "columns must be a sequence of 1 .. 1048576 columns, got 0 columns"),
        ({"columns": "sin"}, "columns", "columns must be a sequence"),
        ({"columns": [(0, "tan")]}, "columns", "columns[0] must be None or a pair (k, 'sin' or 'cos')"),
        ({"columns": [None, (-1, "sin")]}, "columns", "columns[1] must be None or a pair"),
        ({"columns": [(2**32, "cos")]}, "columns", "columns[0] must be None or a pair"),
        ({"columns": [(True, "cos")]}, "columns", "columns[0] must be None or a pair"),
        ({"denom": 0}, "denom", "denom must be a positive rational number, got 0"),
        ({"denom": Fraction(-1, 2)}, "denom", "denom must be a positive rational number"),
        ({"denom": math.inf}, "denom", "denom must be a positive rational number"),
        ({"denom": "2"}, "denom", "denom must be a positive rational number"),
        ({"base": 1.0}, "base", "base must be a finite number greater than 1, got 1.0"),
        ({"start": math.nan}, "start", "start must be a finite number, got nan"),
        ({"start": Fraction(1, 3)}, "start", "start must be exactly a float64 value, got 1/3"),
        ({"start": 2.0**32}, "start", "start must be below 2**32 in magnitude"),
        ({"step": 2.0**31}, "stop_row", "positions must stay below 2**32 in magnitude: row 3 is at"),
        ({"start": -(2.0**32) + 1, "step": -1.0}, "stop_row", "positions must stay below 2**32 in magnitude: row 3"),
        ({"step": 1e300}, "stop_row", ROW_3 + "3e+300"),
        ({"step": 1e308}, "stop_row", ROW_3 + "beyond 1e308"),  # was an OverflowError formatting float(position)
        ({"stop_row": 10**5000}, "stop_row", "stop_row must be at most 4294967296, got an integer of 5001 digits"),
        ({"mults": [Fraction(1, 10**300)]}, "mults", "mults[0] must be a number in [2**-64, 2**32], got 1e-300"),
        ({"scale": 0.0}, "scale", "scale must be nonzero, got 0.0"),
        ({"scale": math.inf}, "scale", "scale must be a finite number, got inf"),
        ({"scale": 1e39}, "scale", "scale must be nonzero and at most 3.4028235e+38 in magnitude for float32"),
        ({"scale": 7e4, "dtype": "float16"}, "scale", "scale must be nonzero and at most 65504 in magnitude"),
        ({"dtype": "float8"}, "dtype", "dtype must be one of"),
        ({"dtype": "int8"}, "quant_scale", "dtype int8 needs a quant_scale"),
        ({"dtype": "int8", "quant_scale": -1.0}, "quant_scale", "quant_scale must be a finite number greater than 0"),
        ({"quant_scale": 0.5}, "quant_scale", "quant_scale applies to dtype int8 only, not float32"),
        ({"dtype": "int8", "quant_scale": 0.1, "zero_point": 300}, "zero_point", "zero_point must be an integer in"),
    ],
)
def test_bad_parameters(change: dict, param: str, message: str) -> None:
    kwargs = {**GOOD, **change}
    with pytest.raises(SpecError) as info:
        sinusoid_rows(kwargs.pop("first_row"), kwargs.pop("stop_row"), kwargs.pop("columns"), **kwargs)
    assert str(info.value).startswith(message) and info.value.param == param


def test_check_sinusoid_normalises() -> None:
    first, stop, cols, spec, element = check_sinusoid(
        np.int64(2), 9, [(1, "sin"), None], denom=2.5, base=np.float64(500), start=Fraction(1, 4), step=np.int32(3)
    )
    assert (first, stop, len(cols), element.name) == (2, 9, 2, "float32") and isinstance(cols, Columns)
    assert (spec.denom, spec.base, spec.start, spec.step, spec.scale) == (Fraction(5, 2), 500.0, 0.25, 3.0, 1.0)
    assert sinusoid_columns(cols) is cols


# ------------------------------------------------------------------------------------------- exhaustive sweeps
@pytest.mark.slow
@pytest.mark.parametrize("name", ["diffusion", "denom", "crossing", "stride", "timesteps"])
def test_sweep(name: str) -> None:
    """Whole rows (every column, both dtypes) at random rows over the whole domain: about 60k entries."""
    spec = NAMED[name]
    rng = random.Random(name)
    columns = random_columns(rng, 512, spec)
    for _ in range(12):
        first = rng.randrange(0, spec.last_row() - 2) if rng.random() < 0.7 else rng.randrange(0, 10**5)
        for dtype in ("float32", "float64"):
            assert_entries(sinusoid_rows(first, first + 2, columns, dtype=dtype, **spec.kwargs()), first, columns, spec)


# ------------------------------------------------------------------------------------- frequency multipliers
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_frequency_multipliers_are_exact(dtype):
    """``mults[k]`` multiplies frequency ``k`` exactly (RoPE scaling, tensor2tensor's min_timescale): rationals that
    are not float64s, multipliers above 1 (positions then stay below 2**32 / max m), rows near that edge."""
    mults = [Fraction(1, 3), Fraction(2), 0.125, Fraction(10**30 + 7, 7 * 10**30), Fraction(1, 1000), 1.0]
    cols = [(k, t) for k in range(len(mults)) for t in ("sin", "cos")]
    denom, top = Fraction(6), 2**31 - 1  # 2**32 / 2: the largest multiplier halves the position range
    for first, stop, start, step in [(0, 40, 0.0, 1.0), (top - 30, top, 0.0, 1.0), (0, 20, -7.25, 0.75)]:
        table = sinusoid_rows(first, stop, cols, denom=denom, start=start, step=step, dtype=dtype, mults=mults)
        for r in range(first, stop, 3):
            for c, (k, trig) in enumerate(cols):
                with mpmath.workdps(90):
                    position = mpmath.mpf(start) + mpmath.mpf(step) * r
                    m = Fraction(mults[k])
                    f = mpmath.mpf(m.numerator) / m.denominator * mpmath.mpf(10000) ** (-mpmath.mpf(k) / 6)
                    value = (mpmath.sin if trig == "sin" else mpmath.cos)(position * f)
                want = rounded(+value, dtype)
                assert _bits(table[r - first, c]) == _bits(want), (r, k, trig)
    with pytest.raises(SpecError) as err:
        sinusoid_rows(0, 2**31 + 1, cols, denom=denom, dtype=dtype, mults=mults)
    assert err.value.param == "stop_row" and "2**32 / 2" in str(err.value)
    for bad in ([1.0] * 5, [0.0] * 6, [float("nan")] * 6, [2.0**33] * 6, "abcdef"):
        with pytest.raises(SpecError) as err:
            sinusoid_rows(0, 1, cols, denom=denom, mults=bad)
        assert err.value.param == "mults"
